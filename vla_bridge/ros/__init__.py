"""ROS 2 plumbing: everything that knows about rclpy, messages and processes.

* ``messages``: numpy <-> message conversions (no per-pixel loops), QoS profiles from the
  contract's specs, episode-control parsing, node spin helpers;
* ``launch_args``: the node graphs (robofollow_sim, robofollow_real) and their launch
  arguments, one table read by both launchers;
* ``launcher``: the package's own launcher (PyPI wheels, no ``ros2 launch``): node deaths,
  bounded restarts of the policy node; ``node_events``: its notices to the evaluator (a
  JSON-lines file named by ``$VLA_BRIDGE_NODE_EVENTS``) and a process-state check;
  ``ros_launch``: the same graphs as ROS 2 launch descriptions (``launch/*.launch.py``);
* ``dds_shm``: removes Fast DDS shared-memory files left by dead processes.

May import: ``vla_bridge.contract``, ``vla_bridge.paths``, ``embodiment``; never
``benchmarks``, ``evaluation`` or the node folders (a graph names its nodes by module string).
"""
