"""Run provenance (issue #11, point 1): run.json says which policy, checkpoint, hardware, cue
protocol, seed, budget and commit produced a run directory, every row names its policy, the
report prints it, and a resume with other such settings is refused naming what differs.

The runs are the evaluator's real SuiteRun over the in-process graph of
support/in_process_graph.py."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.in_process_graph import TASK, make_run, results, run_json
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.evaluation.provenance import (checkpoint_of, describe, fingerprint, git_commit,
                                              hardware_of)
from vla_bridge.reporting import build_report, format_console, format_markdown
from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import ROBOFOLLOW_REAL, ROBOFOLLOW_SIM

REPO = Path(__file__).resolve().parents[2]
OTHER_TASK = "L0_pickup_yellow_block_2"


def head_commit() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


# ----------------------------------------------------------------------------- recorded


@pytest.mark.graph
def test_run_json_records_the_provenance_and_every_row_names_the_policy(session, tmp_path):
    run, _, _, _ = make_run(session, tmp_path, rounds=2)
    assert run.run() == 0
    provenance = run_json(tmp_path)["provenance"]
    assert provenance == {
        "policy": "oracle", "checkpoint": None, "hardware": "sim",
        "cue": {"protocol": None, "family": None, "variant": None, "placement": None},
        "base_seed": 42, "budget": {"max_policy_calls": 10, "max_actions_per_call": 50},
        "latency": None,
        "execution": {"empty_language": False, "chunk_size": 50, "action_horizon": 50,
                      "temporal_ensemble": False, "async_inference": False,
                      "image_source": "raw", "lock_step": True},
        "perturbation": None, "git_commit": head_commit()}
    assert run_json(tmp_path)["versions"]["vla_bridge"]
    assert [r["policy"] for r in results(tmp_path)] == ["oracle", "oracle"]


def test_a_cue_protocol_and_a_checkpoint_are_recorded(session, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.pt").write_bytes(b"weights")
    spec = f"replay?path={ckpt}"  # any spec: the in-process graph plays the oracle anyway
    run, _, _, _ = make_run(session, tmp_path, cues=CueRun("conflict", "F1", "", "overlay"),
                            cue_protocol="conflict", cue_family="F1", policy=spec)
    assert run.run() == 0
    provenance = run_json(tmp_path)["provenance"]
    assert provenance["policy"] == spec and results(tmp_path)[0]["policy"] == spec
    assert provenance["checkpoint"] == {"arg": "path", "path": str(ckpt), **fingerprint(ckpt)}
    assert provenance["cue"]["protocol"] == "conflict" and provenance["cue"]["family"] == "F1"
    assert provenance["cue"]["placement"] == "overlay" and provenance["cue"]["variant"]


def test_checkpoint_fingerprints(tmp_path):
    one = tmp_path / "model.safetensors"
    one.write_bytes(b"abc")
    assert fingerprint(one) == {"sha256": hashlib.sha256(b"abc").hexdigest(), "files": 1,
                                "bytes": 3}
    folder = tmp_path / "ckpt"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "sub" / "w.bin").write_bytes(b"0123")
    before = fingerprint(folder)
    assert (before["files"], before["bytes"]) == (2, 6) and fingerprint(folder) == before
    (folder / "sub" / "w.bin").write_bytes(b"0124")  # other weights, same size
    changed = fingerprint(folder)
    assert changed["sha256"] != before["sha256"]
    (folder / "sub" / "w.bin").rename(folder / "sub" / "v.bin")  # same bytes, other name
    assert fingerprint(folder)["sha256"] != changed["sha256"]

    assert checkpoint_of("oracle") is None and checkpoint_of("hold") is None
    assert checkpoint_of("openpi?host=10.0.0.5&port=8000") is None
    assert checkpoint_of(f"torch?checkpoint={folder}")["sha256"] == fingerprint(folder)["sha256"]
    hub = checkpoint_of("lerobot?checkpoint=lerobot/pi0&device=cuda")
    assert hub == {"arg": "checkpoint", "path": "lerobot/pi0", "sha256": None,
                   "note": "not a local file or directory"}


def test_git_commit_is_unknown_outside_a_checkout_or_without_git(tmp_path, monkeypatch):
    assert git_commit(REPO) == head_commit()
    assert git_commit(tmp_path) == "unknown"  # an installed package: no .git
    monkeypatch.setenv("PATH", str(tmp_path))  # no git executable at all
    assert git_commit(REPO) == "unknown"


def test_the_launch_arguments_tell_the_evaluator_the_policy_and_the_hardware():
    given = {"policy": "torch?checkpoint=ckpt/tiny", "hardware": "fake_piper"}
    sim = launcher.parameter_overrides(ROBOFOLLOW_SIM, given)
    assert sim["evaluator_node"] == {"policy": "torch?checkpoint=ckpt/tiny",
                                     "hardware": "fake_piper"}
    assert sim["policy_node"] == {"backend": "torch?checkpoint=ckpt/tiny"}
    real = launcher.parameter_overrides(ROBOFOLLOW_REAL, {"use_fake_hardware": "true"})
    assert real["evaluator_node"] == {"use_fake_hardware": True}
    assert hardware_of({"hardware": "piper", "use_fake_hardware": True}) == "fake_piper"
    assert hardware_of({"hardware": "piper", "use_fake_hardware": False}) == "piper"


# ----------------------------------------------------------------------------- resume


@pytest.mark.parametrize("changed, message", [
    ({"policy": "hold"}, "policy 'oracle' -> 'hold'"),
    ({"base_seed": 7}, "base_seed 42 -> 7"),
    ({"max_policy_calls": 5},
     "budget {'max_policy_calls': 10, 'max_actions_per_call': 50} -> "
     "{'max_policy_calls': 5, 'max_actions_per_call': 50}"),
    ({"hardware": "fake_piper"}, "hardware 'sim' -> 'fake_piper'"),
    ({"latency": "charged", "latency_ms": "100"},
     "latency None -> {'mode': 'charged', 'latency_ms': '100'}"),
    ({"perturb": "camera:2"}, "perturbation None -> 'camera:2'"),
])
def test_a_resume_with_other_settings_is_refused_naming_them(session, tmp_path, changed, message):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    before = (tmp_path / "run" / "results.jsonl").read_text(), run_json(tmp_path)
    second, graph, _, _ = make_run(session, tmp_path, rounds=2, **changed)
    with pytest.raises(ValueError) as refused:
        second.run()
    text = str(refused.value)
    assert text.startswith(f"{tmp_path / 'run'}: cannot resume, this run's settings differ")
    assert message in text and "\n" not in text
    assert graph.sent == []  # refused before the first episode: nothing run, nothing lost
    assert ((tmp_path / "run" / "results.jsonl").read_text(), run_json(tmp_path)) == before


def test_a_resume_with_another_checkpoint_is_refused(session, tmp_path):
    ckpt = tmp_path / "ckpt.npz"
    ckpt.write_bytes(b"first weights")
    first, _, _, _ = make_run(session, tmp_path, policy=f"replay?path={ckpt}")
    assert first.run() == 0
    old = fingerprint(ckpt)["sha256"][:12]
    ckpt.write_bytes(b"other weights")  # retrained in place: same spec, other weights
    second, graph, _, _ = make_run(session, tmp_path, policy=f"replay?path={ckpt}", rounds=2)
    with pytest.raises(ValueError, match=f"checkpoint '{ckpt}' \\(sha256 {old}\\) -> '{ckpt}' "
                                         f"\\(sha256 {fingerprint(ckpt)['sha256'][:12]}\\)"):
        second.run()
    assert graph.sent == []


def test_a_resume_of_another_cue_protocol_is_refused(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    second, graph, _, _ = make_run(session, tmp_path, cues=CueRun("conflict", "F1", "", "overlay"),
                                   cue_protocol="conflict", cue_family="F1")
    with pytest.raises(ValueError, match="cue protocol .* but this run is .*'conflict', 'F1'"):
        second.run()
    assert graph.sent == []


@pytest.mark.graph
def test_a_resume_with_more_tasks_or_rounds_adds_trials(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    second, _, log, _ = make_run(session, tmp_path, tasks=f"{TASK},{OTHER_TASK}", rounds=2)
    assert second.run() == 0
    assert sorted((r["task_id"], r["round"]) for r in results(tmp_path)) == [
        (OTHER_TASK, 1), (OTHER_TASK, 2), (TASK, 1), (TASK, 2)]
    assert ("info", f"4 trials, 1 already done -> {tmp_path / 'run'}") in log.lines
    info = run_json(tmp_path)
    assert info["status"] == "finished" and "provenance_note" not in info


@pytest.mark.graph
def test_an_old_directory_without_provenance_resumes_and_says_so_once(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    old = run_json(tmp_path)
    del old["provenance"]  # as written before provenance was recorded
    (tmp_path / "run" / "run.json").write_text(json.dumps(old))
    rows = results(tmp_path)
    for row in rows:
        del row["policy"]
    (tmp_path / "run" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    second, _, log, _ = make_run(session, tmp_path, rounds=2, policy="hold")
    assert second.run() == 0
    said = [text for _, text in log.lines if "provenance" in text]
    assert said == [f"{tmp_path / 'run'}: its run.json recorded no provenance (an older run); "
                    "resuming without checking policy, seed and settings"]
    info = run_json(tmp_path)
    assert info["provenance"]["policy"] == "hold"
    assert info["provenance_note"].startswith("1 episodes were run before provenance was recorded")
    assert [r.get("policy") for r in results(tmp_path)] == [None, "hold"]
    report = build_report(tmp_path / "run", n_boot=50)
    assert "(note: 1 episodes were run before provenance" in format_markdown(report)


# ----------------------------------------------------------------------------- the report


def test_the_report_prints_the_provenance(session, tmp_path):
    run, _, _, _ = make_run(session, tmp_path, policy="hold")
    assert run.run() == 0
    report = build_report(tmp_path / "run", n_boot=50)
    assert report["run"]["provenance"]["policy"] == "hold"
    line = (f"policy hold, on sim, base seed 42, budget 10 calls x 50 actions, "
            f"commit {head_commit()[:12]}")
    assert describe(report["run"]["provenance"]) == line
    assert f"- produced by: {line}" in format_markdown(report).splitlines()
    assert format_console(report).splitlines()[0] == f"run: {line}"


def test_describe_names_a_checkpoint_and_a_cue_protocol():
    provenance = {"policy": "torch?checkpoint=ckpt", "hardware": "fake_piper",
                  "checkpoint": {"arg": "checkpoint", "path": "ckpt", "sha256": "ab" * 32},
                  "cue": {"protocol": "authorized", "family": "F2", "variant": "arrow",
                          "placement": "overlay"},
                  "base_seed": 1, "budget": {}, "git_commit": "unknown"}
    assert describe(provenance) == (
        "policy torch?checkpoint=ckpt, checkpoint 'ckpt' (sha256 abababababab), on fake_piper, "
        "cue authorized/F2/arrow/overlay, base seed 1, commit unknown")
    assert describe(None).startswith("provenance not recorded")


# ----------------------------------------------------------------------------- the node


@pytest.mark.graph
def test_the_node_refuses_a_mixed_resume_with_one_line(session, tmp_path):
    """The evaluator node process itself: exit 2 and one error line, before any graph."""
    pytest.importorskip("rclpy")
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    proc = subprocess.run(
        [sys.executable, "-m", "vla_bridge.evaluation.evaluator_node", "--ros-args",
         "-p", f"output:={tmp_path / 'run'}", "-p", f"tasks:={TASK}", "-p", "policy:=hold",
         "-p", "discovery_timeout:=0.1"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"evaluator_node: error: {tmp_path / 'run'}: cannot resume, this run's settings differ "
        "from the run directory's: policy 'oracle' -> 'hold' (run directory -> this run); use "
        "the same settings or another output directory"]
    assert len(results(tmp_path)) == 1


def test_the_simulator_is_part_of_the_provenance_and_a_switch_is_refused():
    from vla_bridge.evaluation.provenance import hardware_of, resume_differences
    assert hardware_of({"hardware": "sim"}) == hardware_of({"hardware": "sim", "sim": "mujoco"}) \
        == "sim"  # directories from before --sim existed still resume
    assert hardware_of({"hardware": "sim", "sim": "sapien"}) == "sim:sapien"
    old = {"policy": "oracle", "hardware": "sim"}
    new = {"policy": "oracle", "hardware": hardware_of({"hardware": "sim", "sim": "sapien"})}
    assert resume_differences(old, new) == ["hardware 'sim' -> 'sim:sapien'"]
