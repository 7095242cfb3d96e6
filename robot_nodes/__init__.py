"""Real-hardware nodes (imported as ``vla_bridge.robot_nodes``): same topics as the sim.

* PiPER arms: ``piper_arm`` (driver over ``piper_sdk``), ``fake_piper`` (CAN-level firmware
  emulator on python-can's virtual bus), ``safety`` (the filter in front of every command),
  ``piper_node`` (ROS shell);
* RealSense cameras: ``realsense_io`` (pipelines, recordings), ``realsense_node``;
* object poses: ``tracker`` (ArUco markers in a calibrated table frame), ``tracker_node``.

May import the foundation modules, ``embodiment``, ``ros``, ``benchmarks`` and the other node
folders; never ``evaluation``, ``cli`` or ``bench``. rclpy only in ``*_node`` modules (and
``realsense_io``, for the shared-library load order).
"""
