"""LeRobot's gRPC policy server as a policy backend: ``client`` (``lerobot_async?host=...``)."""
