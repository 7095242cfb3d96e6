"""Simulator nodes and their backends (imported as ``vla_bridge.sim_nodes``).

* ``backend``: the ``SimBackend`` protocol every simulator implements; ``registry``: the
  backends the sim node drives, by the ``sim`` launch argument's name;
* ``mujoco/``: the RoboFollow scenes in MuJoCo (``backend``; ``ghosts``: F3 ghost
  trajectories rendered on a mirror copy of a scene); the workcell's MJCF is
  ``embodiment.mjcf``;
* ``sapien/``: the same workcell and scenes in SAPIEN 3 (``model``, ``backend``);
* ``libero/``: LIBERO's suites in LIBERO's own environments, from ``.venv-libero``
  (``backend``, ``frames``);
* ``session``: one episode's lock-step loop over any backend (pure, no ROS);
* ``sim_node``: the ROS shell that publishes the contract's topics, for every backend.

May import the foundation modules, ``embodiment``, ``ros`` and ``benchmarks``; never another
node folder, ``evaluation`` or anything above. Only ``*_node`` modules import rclpy.
"""
