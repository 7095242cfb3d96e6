"""A refused reset leaves the running episode as it was, in every simulator backend (issue
#29, point 2; LIBERO's own check is in test/sim_nodes/libero/test_libero_reset.py).

A junk `begin` (an unknown scene or layout, a seed numpy refuses) must fail before anything
of the episode in flight changes: the same scene, joints and objects, and the next step goes
on from there."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge.embodiment.workcell import home_command
from vla_bridge.sim_nodes.registry import BACKENDS, make_backend

JUNK = [("scene9", "default", 1), ("scene1", "no_such_layout", 1), ("scene1", "default", -1),
        ("scene1", "default", "seven")]


# the RoboFollow workcell's backends; LIBERO's runs in its own venv (test_libero_reset.py)
@pytest.fixture(scope="module", params=sorted(set(BACKENDS) - {"libero"}))
def backend(request):
    try:
        b = make_backend(request.param)
    except ImportError as exc:  # sapien not installed (VLA_BRIDGE_SAPIEN=0)
        pytest.skip(f"{request.param}: {exc}")
    yield b
    if hasattr(b, "close"):
        b.close()


def _snapshot(b) -> dict:
    world = b.world_state()
    return {"joints": np.round(b.joint_positions(), 12).tolist(),
            "objects": {n: np.round(o.pos, 12).tolist() for n, o in world.objects.items()}}


def test_a_refused_reset_mid_episode_changes_nothing(backend):
    backend.reset("scene1", "default", 3)
    target = home_command()
    target[0] += 0.2
    for _ in range(20):
        backend.apply(target)
        backend.step()
    before = _snapshot(backend)
    for scene, layout, seed in JUNK:
        with pytest.raises((ValueError, KeyError, TypeError)):
            backend.reset(scene, layout, seed)
    assert _snapshot(backend) == before
    backend.apply(target)
    backend.step()
    assert _snapshot(backend)["joints"] != before["joints"]  # the episode goes on
