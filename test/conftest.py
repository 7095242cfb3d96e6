"""Session-wide environment for the ROS tests.

Other people run ROS tests on the same machine at the same time, so every pytest session
talks on its own random DDS domain (unless VLA_BRIDGE_KEEP_DOMAIN is set, e.g. by a caller
that already picked one). Child processes (nodes, launchers) inherit it through os.environ.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FASTDDS_PROFILE = REPO / "config" / "fastdds_profile.xml"


def _pick_domain_id() -> None:
    if os.environ.get("VLA_BRIDGE_KEEP_DOMAIN") and os.environ.get("ROS_DOMAIN_ID"):
        return
    # 1..200 keeps clear of 0 (everyone's default) and of Fast DDS' port range limit (232).
    os.environ["ROS_DOMAIN_ID"] = str(random.SystemRandom().randint(1, 200))


def pytest_configure(config) -> None:
    # Runs before test modules are imported, so rclpy reads these values on init.
    _pick_domain_id()
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = str(FASTDDS_PROFILE)
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    config.addinivalue_line("markers", "slow: slower end-to-end checks (still run by default)")


def pytest_report_header(config) -> str:
    return (f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID')} "
            f"FASTDDS_DEFAULT_PROFILES_FILE={os.environ.get('FASTDDS_DEFAULT_PROFILES_FILE')}")
