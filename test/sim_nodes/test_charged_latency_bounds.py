"""Charged latency is bounded (#29 point 11): ``latency_ms 10000000`` used to hold the sim
charging tick after tick (days of sim steps) while the run still ended "finished". A latency
above contract.MAX_CHARGED_LATENCY_MS is refused at start in one line, however it is given
(fixed, drawn, replayed, or in a begin message), and the sim charges one call at most the
episode's whole budget of ticks (a measured wait of a hung policy included)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import graph_runs
from support.fake_backend import FakeBackend
from vla_bridge import contract as C
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.evaluation import charged_latency as CL
from vla_bridge.sim_nodes.session import Budget, SimSession

REPO = Path(__file__).resolve().parents[2]
TASK = "L0_pickup_yellow_block_3"


def params(**changed) -> dict:
    from vla_bridge.evaluation.episodes import EngineConfig
    from vla_bridge.evaluation.robofollow_run import RoboFollowConfig
    from vla_bridge.ros.node_config import defaults
    return {**defaults(EngineConfig), **defaults(RoboFollowConfig), "latency": "charged",
            **changed}


@pytest.mark.parametrize("text", ["10000000", "60001", "uniform:0:10000000",
                                  "normal:1e7:10"])
def test_an_absurd_latency_is_refused_at_start_in_one_line(text):
    with pytest.raises(ValueError) as refused:
        CL.from_params(params(latency_ms=text))
    message = str(refused.value)
    assert message.startswith(f"latency_ms {text!r}: ") and "\n" not in message
    assert "more than the 60000 ms allowed" in message


def test_the_bound_itself_and_normal_draws_stay_within_it():
    assert CL.parse_latency_ms("60000").latencies(1, 2) == [60000.0, 60000.0]
    drawn = CL.parse_latency_ms("normal:59000:50000").latencies(3, 200)
    assert max(drawn) == C.MAX_CHARGED_LATENCY_MS and min(drawn) == 0.0


def test_a_replay_of_absurd_latencies_and_a_begin_carrying_them_are_refused(tmp_path):
    row = {"key": f"scene1/{TASK}/r1", "charged_latency_ms": [100.0] * 9 + [1e7]}
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=f"row scene1/{TASK}/r1: .*more than 60000 ms"):
        CL.from_params(params(latency_ms=f"replay:{tmp_path}"))
    begin = {"kind": "begin", "episode": "e", "charged_latency_ms": [1e7]}
    with pytest.raises(ValueError, match="holds 10000000.0 ms, more than 60000 ms per policy"):
        C.check_control(begin)
    session = SimSession(FakeBackend())
    with pytest.raises(ValueError, match="more than 60000 ms"):
        session.begin("scene1", "layout", 0, Budget(1, 10), charged=[1e7])


def chunk(n: int = 10) -> np.ndarray:
    return np.tile(home_command(), (n, 1))


def test_the_sim_charges_a_call_at_most_the_episodes_budget():
    """Budget 2 calls x 10 actions = 20 ticks of 60 ms: no call is charged more than 1.2 s."""
    session = SimSession(FakeBackend())
    session.begin("scene1", "layout", 0, Budget(2, 10), charged=[60000, 500])
    assert session.charge_cap_ms == pytest.approx(1200.0)
    first = list(session.execute_charged(chunk()))
    assert len(first) == 20  # held for the whole budget, not 1000 ticks
    second = list(session.execute_charged(chunk()))
    assert session.charged_ms == [1200.0, 500.0] and len(second) == 10  # 9 held + 1 action
    measured = SimSession(FakeBackend())
    measured.begin("scene1", "layout", 0, Budget(1, 10), charged=C.CHARGED_MEASURED)
    ticks = list(measured.execute_charged(chunk(), measured_ms=3.6e9))  # a policy hung 1 h
    assert measured.charged_ms == [600.0] and len(ticks) == 10


def test_the_evaluator_node_refuses_an_absurd_latency_with_one_line(tmp_path):
    pytest.importorskip("rclpy")
    proc = subprocess.run(
        [sys.executable, "-m", "vla_bridge.evaluation.evaluator_node", "--ros-args",
         "-p", f"output:={tmp_path / 'run'}", "-p", "latency:=charged",
         "-p", "latency_ms:='10000000'", "-p", "discovery_timeout:=0.1"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "evaluator_node: error: latency_ms '10000000': 1e+07 ms per policy call is more than "
        "the 60000 ms allowed (latency_ms is in milliseconds)"]
    assert not (tmp_path / "run" / "run.json").exists()  # no run: nothing says "finished"


@pytest.mark.graph
def test_the_launched_graph_refuses_an_absurd_latency(tmp_path):
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--output", str(tmp_path / "run"),
                             "--latency", "charged", "--latency_ms", "10000000", timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert ("evaluator_node: error: latency_ms '10000000': 1e+07 ms per policy call is more "
            "than the 60000 ms allowed") in out, out[-3000:]
    assert "Traceback" not in out
    assert not (tmp_path / "run" / "results.jsonl").exists()
