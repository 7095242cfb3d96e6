"""The policy node and its backends (imported as ``vla_bridge.policy_nodes``).

* ``backend``: the ``PolicyBackend`` protocol (reset / set_instruction / predict -> [H, 14]);
* ``registry``: backend specs (``oracle``, ``hold``, ``openpi?...``, ``pkg.mod:Class``, ...);
* one module per kind: ``oracle/`` (scripted planners per scene), ``hold``, ``torch_policy``,
  ``lerobot_backend``, ``openpi_backend`` (client) and ``serve`` (openpi-protocol server);
* ``chunking``: action horizon, temporal ensembling and the async splice (pure);
* ``policy_node``: the ROS shell.

May import the foundation modules, ``embodiment``, ``ros``, ``benchmarks`` and the other node
folders; never ``evaluation``, ``cli`` or ``bench``. Only ``*_node`` modules import rclpy.
"""
