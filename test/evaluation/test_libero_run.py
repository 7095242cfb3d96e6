"""LIBERO on the one engine (issue #23): SuiteRun runs the LIBERO benchmark (libero_run) as it
runs RoboFollow: begin / ready / start / done, rows from LIBERO's predicates, resume, the
embodiment check, and a node that dies. The graph is a small in-process stand-in for the
LIBERO sim and the policy node, which answer a begin and a start as their nodes do (the graph
through DDS is test/sim_nodes/libero/test_libero.py's)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from support.libero_engine import LiberoGraph, make
from vla_bridge import contract as C
from vla_bridge.evaluation.episodes import GraphBroken


def rows(tmp_path):
    return [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text()
            .splitlines()]


def test_the_engine_runs_libero_trials_and_scores_them_by_libero_predicates(tmp_path):
    run, graph, console = make(tmp_path)
    assert run.run() == 0
    got = rows(tmp_path)
    assert [r["key"] for r in got] == ["libero_goal/0/0", "libero_goal/0/1", "libero_goal/1/0",
                                       "libero_goal/1/1"]
    assert [r["success"] for r in got] == [True, False, True, False]
    first = got[0]
    assert first["status"] == "ok" and first["steps"] == 40 and first["seed"] == 7
    assert first["scores"] == {"language": {"task": "libero_goal/0", "complete": True}}
    begin = next(m for m in graph.sent if m["kind"] == C.CONTROL_BEGIN)
    assert begin["task"]["scene"] == "libero_goal" and begin["task"]["layout"] == "0:0"
    assert begin["max_actions_per_call"] == 5 and begin["instruction"] == first["instruction"]
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["status"] == "finished" and info["embodiment"] == "libero_panda"
    assert info["provenance"]["hardware"] == "sim:libero"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary and (tmp_path / "run" / "report.md").exists()
    assert any("libero_goal/1/1" in line and "failure" in line for line in console)

    again, graph2, _ = make(tmp_path)  # resume: nothing left to run
    assert again.run() == 0 and not [m for m in graph2.sent if m["kind"] == C.CONTROL_BEGIN]
    other, _, _ = make(tmp_path, seed=8)  # another base seed is refused
    with pytest.raises(ValueError, match="cannot resume.*base_seed 7 -> 8"):
        other.run()


def test_a_graph_that_disagrees_on_the_embodiment_is_refused(tmp_path):
    run, graph, _ = make(tmp_path, graph_class=lambda c: LiberoGraph(c, policy_embodiment=None))
    assert run.run() == 3
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["status"].startswith("refused: refusing to run: embodiment mismatch: "
                                     "sim_node speaks libero_panda")
    assert "policy_node speaks aloha_piper" in info["status"]
    assert not (tmp_path / "run" / "results.jsonl").exists() or not rows(tmp_path)


def test_a_node_that_dies_stops_the_libero_run_with_its_reason(tmp_path):
    events = SimpleNamespace(poll=lambda: [{"event": "died", "node": "sim_node",
                                            "how": "signal 9 (SIGKILL)"}],
                             process_state=lambda name: None)
    run, _, _ = make(tmp_path, node_events=events)
    with pytest.raises(GraphBroken, match="node sim_node died with signal 9"):
        run.run()
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["status"] == "stopped: node sim_node died with signal 9 (SIGKILL)"


def test_junk_protocol_settings_are_refused_before_anything_runs(tmp_path):
    for params, says in (({"cue_protocol": "authorized", "cue_family": "F9"}, "F9"),
                         ({"cue_protocol": "hijack", "cue_family": "F1"}, "unknown cue protocol"),
                         ({"cue_protocol": "authorized", "cue_family": ""}, "needs cue_family")):
        with pytest.raises(ValueError, match=says):
            make(tmp_path, **params)[0].benchmark.plan()
