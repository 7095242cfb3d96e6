"""The policy node and its backends (imported as ``vla_bridge.policy_nodes``).

* ``backend``: the ``PolicyBackend`` protocol (reset / set_instruction / predict -> [H, D]);
  the ``Observation`` it gets is ``embodiment.world.Observation``;
* ``registry``: backend specs (``oracle``, ``hold``, ``openpi?...``, ``pkg.mod:Class``, ...);
* one module or folder per kind: ``oracle/`` (scripted planners per scene, and LIBERO's),
  ``hold``, ``torch_policy``, ``lerobot/`` (``backend``, ``hub``), ``openpi/`` (``wire``:
  msgpack-numpy, gripper conventions and key maps; ``client``: the backend; ``serve``: the
  openpi-protocol server);
* ``chunking``: action horizon, temporal ensembling and the async splice (pure);
* ``policy_node``: the ROS shell; ``heartbeat_node``: its sign of life, beaten by a child
  process (a predict that holds the GIL cannot silence it).

May import the foundation modules, ``embodiment``, ``ros`` and ``benchmarks``; never another
node folder, ``evaluation`` or anything above. Only ``*_node`` modules import rclpy.
"""
