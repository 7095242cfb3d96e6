"""Tiny rclpy nodes and a driver that test_launcher.py runs as a real process graph."""
