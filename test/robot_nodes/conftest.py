"""Fixtures of the robot node tests."""
from __future__ import annotations

import pytest


@pytest.fixture
def ros_context():
    """An rclpy context of the test's own (nodes built on it are isolated from other tests)."""
    import rclpy
    from rclpy.context import Context

    ctx = Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.shutdown(context=ctx)
