"""Session-wide environment for the ROS tests.

Other people run ROS tests on the same machine at the same time, so every pytest session
talks on its own random DDS domain, claimed with a lock file so two sessions never share one
(unless VLA_BRIDGE_KEEP_DOMAIN is set, e.g. by a caller that already picked one). Child processes (nodes, launchers) inherit it through os.environ.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

from support.domains import claim_domain

REPO = Path(__file__).resolve().parent.parent
FASTDDS_PROFILE = REPO / "config" / "fastdds_profile.xml"


_DOMAIN_LOCK = None  # held for the whole session: other sessions skip our domain


def _pick_domain_id() -> None:
    global _DOMAIN_LOCK
    if os.environ.get("VLA_BRIDGE_KEEP_DOMAIN") and os.environ.get("ROS_DOMAIN_ID"):
        return
    # 1..200 keeps clear of 0 (everyone's default) and of Fast DDS' port range limit (232).
    # A random domain alone let two concurrent sessions here collide (their graphs then
    # refuse to run, or talk across): claim one with a lock file no other session holds.
    candidates = random.SystemRandom().sample(range(1, 201), 200)
    for domain in candidates:
        fh = claim_domain(domain)
        if fh is None:
            continue
        _DOMAIN_LOCK = fh
        os.environ["ROS_DOMAIN_ID"] = str(domain)
        return
    os.environ["ROS_DOMAIN_ID"] = str(candidates[0])  # all claimed: share one


def pytest_configure(config) -> None:
    # Runs before test modules are imported, so rclpy reads these values on init. Shared test
    # helpers are the package test/support (setup.cfg's `pythonpath = test`); a test module
    # imports no other test module.
    _pick_domain_id()
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = str(FASTDDS_PROFILE)
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")


def pytest_report_header(config) -> str:
    return (f"ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID')} "
            f"FASTDDS_DEFAULT_PROFILES_FILE={os.environ.get('FASTDDS_DEFAULT_PROFILES_FILE')}")
