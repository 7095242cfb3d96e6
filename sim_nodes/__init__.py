"""Simulator nodes and their backends (imported as ``vla_bridge.sim_nodes``).

* ``backend``: the ``SimBackend`` protocol every simulator implements;
* ``mujoco_model`` / ``mujoco_backend``: the PiPER workcell and RoboFollow scenes in MuJoCo;
  ``mujoco_ghosts``: F3 ghost trajectories rendered on a mirror copy of a scene;
* ``session``: one episode's lock-step loop over a backend (pure, no ROS);
* ``sim_node``: the ROS shell that publishes the contract's topics.

May import the foundation modules, ``embodiment``, ``ros``, ``benchmarks`` and the other node
folders; never ``evaluation``, ``cli`` or ``bench``. Only ``*_node`` modules import rclpy.
"""
