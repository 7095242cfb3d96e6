"""A refused reset leaves the running LIBERO episode as it was (issue #29, point 2).

`LiberoBackend.reset` used to swap the environment for the new task before `env.seed()`,
which raises for seeds >= 2**32: a junk `begin` sent mid-episode put the running episode in
another task's scene. Now the seed, task and initial state are checked first.
Runs with .venv-libero's interpreter (LIBERO needs mujoco 3.3.7); skips when it is absent.
"""
from __future__ import annotations


import pytest

from support.libero_venv import needs_libero_venv, run_in_libero_venv

pytestmark = [pytest.mark.graph, needs_libero_venv]

SCRIPT = """
import json
import numpy as np
from vla_bridge.sim_nodes.libero.backend import LiberoBackend

b = LiberoBackend()
b.reset("libero_spatial", "0:0", 7)
for _ in range(5):
    b.apply(np.array([0.3, 0, 0, 0, 0, 0, 1.0]))
    b.step()

def snapshot():
    w = b.world_state()
    return {"env": id(b.env), "task": b.task.name, "steps": b.steps,
            "joints": b.joint_positions().tolist(),
            "objects": {n: o.pos.tolist() for n, o in w.objects.items()}}

before = snapshot()
refusals = {}
for scene, layout, seed in [("libero_goal", "3:0", 2 ** 32), ("libero_goal", "3:0", -1),
                            ("libero_goal", "3:0", "7"), ("libero_goal", "99:0", 7),
                            ("libero_goal", "3:50", 7), ("libero_nowhere", "0:0", 7)]:
    try:
        b.reset(scene, layout, seed)
        refusals[f"{scene} {layout} {seed}"] = "accepted"
    except (ValueError, KeyError) as exc:
        refusals[f"{scene} {layout} {seed}"] = f"{type(exc).__name__}: {exc}"
after = snapshot()
b.apply(np.array([0.3, 0, 0, 0, 0, 0, 1.0]))
b.step()
print(json.dumps({"before": before, "after": after, "refusals": refusals,
                  "steps_after": b.steps}))
"""


def test_a_refused_reset_mid_episode_leaves_the_libero_episode_as_it_was():
    out = run_in_libero_venv(SCRIPT, timeout=600)
    for attempt, result in out["refusals"].items():
        assert result != "accepted", attempt
    assert "2**32" in out["refusals"]["libero_goal 3:0 4294967296"]
    assert "initial states 0..49" in out["refusals"]["libero_goal 3:50 7"] or \
        "out of range" in out["refusals"]["libero_goal 3:50 7"]
    assert out["after"] == out["before"]  # same environment object, task, step and state
    assert out["steps_after"] == out["before"]["steps"] + 1  # and the episode goes on


CLAMP_SCRIPT = """
import json
import numpy as np
from vla_bridge.sim_nodes.libero.backend import LiberoBackend
from vla_bridge.sim_nodes.session import Budget, SimSession, summarize_events

s = SimSession(LiberoBackend())
s.begin("libero_spatial", "0:0", 7, Budget(10, 5))
chunk = np.zeros((5, 7))
chunk[:, 6] = 1.0
chunk[0, 0] = 1e6
chunk[1, 6] = -3.0
list(s.execute(chunk))
events = s.drain_events()
print(json.dumps({"line": summarize_events(events), "n": len(events),
                  "again": len(s.drain_events())}))
"""


def test_libero_logs_the_actions_it_clips():
    """LIBERO clipped 1e6 to 1 silently (issue #29, point 13); the session now reports each
    clipped value, and the node logs one line per chunk as the MuJoCo sim node does."""
    out = run_in_libero_venv(CLAMP_SCRIPT, timeout=600)
    assert out["n"] == 2 and out["again"] == 0
    assert "action_range x2" in out["line"]
    assert "1e+06 -> 1" in out["line"] and "-3 -> 0" in out["line"]
