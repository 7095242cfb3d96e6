"""Charged latency through the launcher (`latency:=charged`): the robofollow_sim graph as
separate processes over DDS, with the oracle (the pure checks: test/sim_nodes/
test_charged_latency.py)."""
from __future__ import annotations

import numpy as np
import pytest

from support import graph_runs
from vla_bridge.embodiment.episode_record import load_episode

pytestmark = pytest.mark.graph  # see setup.cfg's markers

TASK = "L0_pickup_yellow_block_3"


@pytest.mark.slow
def test_graph_latency_zero_matches_lock_step_and_measured_replays(tmp_path):
    """Through the launcher: 0 ms charged == plain lock-step; a measured run (wall clock)
    replayed from its rows is the same episode; a missing replay directory is one error."""
    common = ("--tasks", TASK, "--levels", "", "--policy", "oracle")

    def run(name, *args):
        out = tmp_path / name
        proc = graph_runs.launch(*common, "--output", str(out), *args, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        (row,) = graph_runs.results(out)
        row["commands"] = load_episode(out / row["episode_file"])[0].commands
        return row

    keep = ("frames", "policy_calls", "intent_score", "exec_score", "complete", "stages")
    plain = run("plain")
    zero = run("zero", "--latency", "charged", "--latency_ms", "0")
    assert {k: zero[k] for k in keep} == {k: plain[k] for k in keep}
    assert zero["charged_latency_ms"] == [0.0] * 10 and "charged_latency_ms" not in plain
    np.testing.assert_array_equal(zero["commands"], plain["commands"])

    measured = run("measured", "--latency", "charged", "--observation_period", "20")
    replay = run("replay", "--latency", "charged", "--observation_period", "20",
                 "--latency_ms", f"replay:{tmp_path / 'measured'}")
    assert len(measured["charged_latency_ms"]) == 10
    assert all(ms > 0 for ms in measured["charged_latency_ms"])
    assert replay["charged_latency_ms"] == measured["charged_latency_ms"]
    assert {k: replay[k] for k in keep} == {k: measured[k] for k in keep}
    np.testing.assert_array_equal(replay["commands"], measured["commands"])

    proc = graph_runs.launch(*common, "--output", str(tmp_path / "bad"), "--latency",
                             "charged", "--latency_ms", f"replay:{tmp_path / 'nope'}",
                             timeout=120)
    assert proc.returncode != 0
    assert "no such run directory" in proc.stdout + proc.stderr
