"""Fixtures of the evaluation tests."""
from __future__ import annotations

import pytest

from vla_bridge.sim_nodes.mujoco_backend import MujocoBackend
from vla_bridge.sim_nodes.session import SimSession


@pytest.fixture(scope="module")
def session():
    """One MuJoCo sim session per test module (building the model takes a while)."""
    s = SimSession(MujocoBackend())
    yield s
    s.backend.close()
