"""A resume never mixes conditions (#29 point 4): every launch argument that changes what an
episode measures -- the empty-language control, chunk size, action horizon, temporal
ensembling, async inference, lock-step, the images the policy reads, the observation period,
the oracle's task under a cue protocol -- reaches the evaluator, is recorded in run.json's
provenance (``execution``) and a resume that changes it is refused naming it, before anything
runs and without rewriting run.json. RoboFollow and LIBERO; SuiteRun over the in-process graph
(support/in_process_graph.py) and one real ``vla-bridge launch``."""
from __future__ import annotations

from pathlib import Path

import pytest

from support import graph_runs
from support.in_process_graph import TASK, make_run, results, run_json
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.evaluation.episodes import EngineConfig, Subscriber, SuiteRun
from vla_bridge.evaluation.provenance import resume_differences, run_provenance
from vla_bridge.evaluation.robofollow_run import RoboFollowConfig
from vla_bridge.evaluation.run_dir import RunDirectory
from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import LIBERO_SIM, ROBOFOLLOW_REAL, ROBOFOLLOW_SIM
from vla_bridge.ros.node_config import defaults

ENGINE_DEFAULTS = defaults(EngineConfig)  # the engine's parameters and their defaults
ROBOFOLLOW_DEFAULTS = defaults(RoboFollowConfig)

REPO = Path(__file__).resolve().parents[2]

#: (evaluator parameter, another value, the refusal's words)
CHANGES = [
    ("empty_language", True, "empty_language False -> True"),
    ("chunk_size", 10, "chunk_size 50 -> 10"),
    ("action_horizon", 10, "action_horizon 50 -> 10"),
    ("temporal_ensemble", True, "temporal_ensemble False -> True"),
    ("async_inference", True, "async_inference False -> True"),
    ("image_source", "cued", "image_source 'raw' -> 'cued'"),
    ("lock_step", False, "lock_step True -> False"),
]


def directory(tmp_path) -> tuple[str, dict]:
    return (tmp_path / "run" / "results.jsonl").read_text(), run_json(tmp_path)


def test_a_resume_that_changes_how_episodes_run_is_refused_naming_it(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    before = directory(tmp_path)
    assert before[1]["provenance"]["execution"]["chunk_size"] == 50
    for name, value, words in CHANGES:
        second, graph, _, _ = make_run(session, tmp_path, rounds=2, **{name: value})
        with pytest.raises(ValueError) as refused:
            second.run()
        text = str(refused.value)
        assert text.startswith(f"{tmp_path / 'run'}: cannot resume, this run's settings differ")
        assert words in text and "\n" not in text, (name, text)
        assert graph.sent == []  # refused before the first episode: nothing run
        # ... and nothing rewritten: run.json keeps the run's own arguments (empty_language
        # used to be rewritten for the whole run)
        assert directory(tmp_path) == before, name
    assert run_json(tmp_path)["arguments"]["empty_language"] is False
    again, graph, _, _ = make_run(session, tmp_path, rounds=2)  # the same settings resume
    assert again.run() == 0 and len(results(tmp_path)) == 2


def test_the_observation_period_counts_where_it_acts_and_the_cue_settings_under_a_protocol():
    params = {**ENGINE_DEFAULTS, **ROBOFOLLOW_DEFAULTS}
    plain = run_provenance(params, CueRun("", "", "", "overlay"))["execution"]
    assert "observation_period" not in plain and "oracle_follow" not in plain
    real_time = run_provenance({**params, "lock_step": False, "observation_period": 5},
                               CueRun("", "", "", "overlay"))
    charged = run_provenance({**params, "latency": "charged", "observation_period": 20},
                             CueRun("", "", "", "overlay"))
    assert real_time["execution"]["observation_period"] == 5
    assert resume_differences(charged, {**charged, "execution": {
        **charged["execution"], "observation_period": 0}}) == ["observation_period 20 -> 0"]
    cued = {**params, "cue_protocol": "conflict", "cue_family": "F1", "cue_render_ghosts": True}
    conflict = run_provenance(cued, CueRun("conflict", "F1", "", "overlay"))
    follows_cue = run_provenance({**cued, "oracle_follow": "cue", "cue_render_ghosts": False},
                                 CueRun("conflict", "F1", "", "overlay"))
    assert resume_differences(conflict, follows_cue) == [
        "oracle_follow 'language' -> 'cue'", "cue_render_ghosts True -> False"]
    hardware = run_provenance({**params, "hardware": "fake_piper"}, CueRun("", "", "", "overlay"))
    assert "lock_step" not in hardware["execution"]  # the real robot runs on the wall clock


def test_a_directory_from_before_the_execution_settings_still_resumes():
    params = {**ENGINE_DEFAULTS, **ROBOFOLLOW_DEFAULTS}
    new = run_provenance(params, CueRun("", "", "", "overlay"))
    old = {k: v for k, v in new.items() if k != "execution"}
    assert resume_differences(old, {**new, "execution": {**new["execution"],
                                                        "chunk_size": 10}}) == []
    older = {**new, "execution": {"chunk_size": 50}}  # recorded fewer settings: those compare
    assert resume_differences(older, {**new, "execution": {**new["execution"],
                                                          "lock_step": False}}) == []


class RefusesAtStart(Subscriber):
    """A hook that refuses the run once the graph is up (as the cue overlay does when nobody
    reads the cued images)."""

    def on_run_start(self):
        raise ValueError("nobody subscribes to the cued images")


def test_a_run_refused_at_start_leaves_run_json_as_it_was(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    before = directory(tmp_path)
    second, graph, _, _ = make_run(session, tmp_path, rounds=2, subscribers=[RefusesAtStart()])
    with pytest.raises(ValueError, match="nobody subscribes"):
        second.run()
    assert graph.sent == [] and directory(tmp_path) == before
    fresh, _, _, _ = make_run(session, tmp_path / "fresh", subscribers=[RefusesAtStart()])
    with pytest.raises(ValueError, match="nobody subscribes"):
        fresh.run()
    assert not (tmp_path / "fresh" / "run" / "run.json").exists()  # no run.json "running"


# ----------------------------------------------------------------------------- launch arguments


def test_the_launch_arguments_tell_the_evaluator_the_nodes_settings():
    given = {"chunk_size": "10", "action_horizon": "5", "temporal_ensemble": "true",
             "async_inference": "true", "image_source": "cued", "lock_step": "false",
             "observation_period": "7", "oracle_follow": "cue", "empty_language": "true"}
    sim = launcher.parameter_overrides(ROBOFOLLOW_SIM, given)
    assert sim["evaluator_node"] == {
        "chunk_size": 10, "action_horizon": 5, "temporal_ensemble": True,
        "async_inference": True, "image_source": "cued", "lock_step": False,
        "observation_period": 7, "oracle_follow": "cue", "empty_language": True}
    assert sim["policy_node"]["chunk_size"] == 10 and sim["sim_node"]["lock_step"] is False
    real = launcher.parameter_overrides(ROBOFOLLOW_REAL, {"chunk_size": "10",
                                                          "temporal_ensemble": "true"})
    assert real["evaluator_node"] == {"chunk_size": 10, "temporal_ensemble": True}
    libero = launcher.parameter_overrides(LIBERO_SIM, {"chunk_size": "8", "image_source": "cued",
                                                       "oracle_follow": "cue"})
    assert libero["evaluator_node"] == {"chunk_size": 8, "image_source": "cued",
                                        "oracle_follow": "cue"}
    # every parameter an argument sets on the evaluator is one it declares
    from vla_bridge.evaluation.libero_run import LiberoConfig
    LIBERO_DEFAULTS = defaults(LiberoConfig)
    for graph, declared in ((ROBOFOLLOW_SIM, ROBOFOLLOW_DEFAULTS),
                            (ROBOFOLLOW_REAL, ROBOFOLLOW_DEFAULTS), (LIBERO_SIM, LIBERO_DEFAULTS)):
        for arg in graph.args:
            for target in arg.sets:
                node, param = target.split(".", 1)
                if node == "evaluator_node":
                    assert param in {**ENGINE_DEFAULTS, **declared}, (graph.name, param)


# ----------------------------------------------------------------------------- LIBERO


class _Log:
    def info(self, text):
        pass

    error = warning = info


def libero_settings(tmp_path, **changed) -> dict:
    from vla_bridge.evaluation.libero_run import LiberoConfig
    return {**ENGINE_DEFAULTS, **defaults(LiberoConfig), "benchmark": "libero",
            "policy": "libero_oracle", "suites": "libero_goal", "tasks": "0", "inits": "0",
            "output": str(tmp_path / "run"), **changed}


@pytest.mark.parametrize("changed, words", [
    ({"chunk_size": 10}, "chunk_size 5 -> 10"),
    ({"image_source": "cued"}, "image_source 'raw' -> 'cued'"),
])
def test_a_libero_resume_that_changes_the_policys_settings_is_refused(tmp_path, changed, words):
    from vla_bridge.evaluation.libero_run import LiberoRun
    settings = libero_settings(tmp_path)
    first = LiberoRun(settings, _Log())
    provenance = first.provenance()
    assert provenance["execution"] == {"chunk_size": 5, "image_source": "raw"}
    run_dir = RunDirectory(settings["output"])
    run_dir.start(dict(settings), first.plan(), resume=False, provenance=provenance)
    run_dir.append({"key": "libero_goal/0/0", "suite": "libero_goal", "task_index": 0,
                    "success": True, "policy": "libero_oracle", "status": "ok"})
    before = run_dir.run_path.read_text()
    other = libero_settings(tmp_path, **changed)
    run = SuiteRun(other, graph=None, benchmark=LiberoRun(other, _Log()), log=_Log(),
                   echo=lambda line: None)
    with pytest.raises(ValueError, match=f"cannot resume.*{words}"):
        run.run()
    assert run_dir.run_path.read_text() == before


# ----------------------------------------------------------------------------- the real graph


@pytest.mark.graph
def test_the_launched_graph_refuses_a_resume_with_another_chunk_size(session, tmp_path):
    """`vla-bridge launch robofollow_sim ... --chunk_size 10` into a directory of chunk size
    50: the launch argument reaches the evaluator, which refuses in one line; nothing runs."""
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    before = directory(tmp_path)
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--output", str(tmp_path / "run"),
                             "--chunk_size", "10", "--action_horizon", "10", timeout=150)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert ("cannot resume, this run's settings differ from the run directory's: "
            "chunk_size 50 -> 10; action_horizon 50 -> 10 (run directory -> this run)") in out, \
        out[-3000:]
    assert "Traceback" not in out
    assert directory(tmp_path) == before
