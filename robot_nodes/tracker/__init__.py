"""Object poses on the real table: ``tracker`` (ArUco markers in a calibrated table frame),
``tracker_node`` (the ROS shell).
"""
