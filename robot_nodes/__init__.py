"""Real-hardware nodes (imported as ``vla_bridge.robot_nodes``): same topics as the sim.

* ``piper/``: PiPER arms: ``arm`` (driver over ``piper_sdk``), ``fake_piper`` (CAN-level
  firmware emulator on python-can's virtual bus), ``safety`` (the filter in front of every
  command), ``piper_node`` (ROS shell);
* ``realsense/``: RealSense cameras: ``realsense_io`` (pipelines, recordings),
  ``synthetic_cameras`` (the MuJoCo workcell rendered as fake cameras), ``realsense_node``;
* ``tracker/``: object poses: ``tracker`` (ArUco markers in a calibrated table frame),
  ``tracker_node``.

May import the foundation modules, ``embodiment``, ``ros`` and ``benchmarks``; never another
node folder, ``evaluation`` or anything above. rclpy only in ``*_node`` modules (and
``realsense_io``, for the shared-library load order).
"""
