"""RealSense cameras: ``realsense_io`` (pipelines and recordings), ``synthetic_cameras`` (the
workcell rendered as fake cameras), ``realsense_node`` (the ROS shell).
"""
