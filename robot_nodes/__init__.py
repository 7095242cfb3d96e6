"""Real-hardware nodes (PiPER arms, RealSense cameras); imported as ``vla_bridge.robot_nodes``."""
