"""`--perturb AXIS:LEVEL` through the launched graph: the evaluator asks the sim in every
begin, the sim applies it and says so in its ready, the row records what was applied and
run.json the axis; a resume with another perturbation is refused in one line, and a sim that
cannot apply an axis fails the episode with its reason instead of running it unperturbed."""
from __future__ import annotations

import importlib.util
import json

import pytest

from support import graph_runs
from support.in_process_graph import TASK
from vla_bridge.benchmarks.perturbations import EpisodePerturbation, Perturbation

pytestmark = pytest.mark.graph


def test_a_perturbed_run_records_the_axis_and_refuses_another_on_resume(tmp_path):
    out = tmp_path / "run"
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--output", str(out),
                             "--perturb", "object_jitter:2", timeout=150)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    [row] = graph_runs.results(out)
    expected = EpisodePerturbation(Perturbation("object_jitter", 2), row["seed"]).describe()
    assert row["perturbation"] == expected and row["status"] == "ok"
    run = json.loads((out / "run.json").read_text())
    assert run["provenance"]["perturbation"] == "object_jitter:2"
    before = (out / "results.jsonl").read_text()

    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--output", str(out),
                             "--perturb", "camera:1", timeout=150)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert ("this run's settings differ from the run directory's: perturbation "
            "'object_jitter:2' -> 'camera:1'") in text, text[-3000:]
    assert "Traceback" not in text
    assert (out / "results.jsonl").read_text() == before


def test_a_malformed_perturbation_is_refused_in_one_line(tmp_path):
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--output", str(tmp_path / "run"),
                             "--perturb", "texture:3", timeout=120)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "perturbation 'texture' has levels 0..2, got 3" in text, text[-3000:]
    assert "Traceback" not in text and not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.skipif(importlib.util.find_spec("sapien") is None, reason="sapien not installed")
def test_a_sim_that_cannot_apply_the_axis_fails_the_episode_with_the_reason(tmp_path):
    out = tmp_path / "run"
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--output", str(out),
                             "--sim", "sapien", "--perturb", "lighting:1", timeout=180)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    [row] = graph_runs.results(out)
    assert row["status"] == "failed"
    assert "the SapienBackend cannot perturb 'lighting'" in row["error"]
    assert row["perturbation"] == {"axis": "lighting", "level": 1, "applied": False}
