"""`vla-bridge sweep` end to end: one level unperturbed, one perturbed, each a real
robofollow_sim graph (one task, a few seconds); and its usage errors, one line each."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.cli_process import run_cli
from support.graph_runs import results

TASK = "L0_pickup_yellow_block_1_left"


def _assert_one_line_error(result, *expected: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def test_sweep_runs_each_level_through_the_graph(tmp_path):
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "vla_bridge.cli", "sweep", "robofollow_sim", "--axis",
           "image_noise", "--levels", "0,2", "--output", str(out), "--", "--scene", "scene1",
           "--levels", "L0", "--tasks", TASK, "--timeout", "150"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=200, env=dict(os.environ))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    progress = [line for line in result.stdout.splitlines() if line.startswith("[sweep] ")]
    assert progress[0].startswith(f"[sweep] image_noise level 0 (1 of 2: unperturbed) -> "
                                  f"{out / 'L0'}; elapsed 0 s; so far: none yet")
    assert progress[1].startswith(f"[sweep] image_noise level 2 (2 of 2: image_noise:2) -> "
                                  f"{out / 'L2'}; elapsed ")
    assert progress[1].endswith("so far: L0 1/1")
    assert "[evaluator_node] results: " in result.stdout  # the launch's output streams through

    summary = json.loads((out / "sweep.json").read_text())
    assert summary["axis"] == "image_noise" and summary["metric"] == "complete"
    assert [(e["level"], e["episodes"]) for e in summary["levels"]] == [(0, 1), (2, 1)]
    assert all(e["status"] == "finished" and e["wall_s"] > 0 for e in summary["levels"])
    assert (out / "sweep.png").stat().st_size > 0
    assert "| 2 | image_noise:2 | 1 | 1 | 100.0% |" in (out / "sweep.md").read_text()

    (level0,), (level2,) = results(out / "L0"), results(out / "L2")
    assert "perturbation" not in level0
    assert level2["perturbation"] == {"axis": "image_noise", "level": 2,
                                      "seed": level2["seed"], "sigma": 10.0}
    run2 = json.loads((out / "L2" / "run.json").read_text())
    assert run2["provenance"]["perturbation"] == "image_noise:2"
    assert level0["seed"] == level2["seed"]  # the same trial at both levels


@pytest.mark.parametrize("args, expected", [
    (("--axis", "camra", "--output", "OUT"),
     ("vla-bridge sweep: unknown perturbation axis 'camra'; the axes: camera (0..4)",)),
    (("--axis", "texture", "--levels", "0,3", "--output", "OUT"),
     ("vla-bridge sweep: texture has levels 0..2, --levels asks for [3]",)),
    (("--axis", "camera", "--levels", "0,two", "--output", "OUT"),
     ("vla-bridge sweep: --levels wants comma-separated integers 0..4 for camera",)),
    (("--axis", "camera", "--output", "OUT", "--", "--perturb", "camera:1"),
     ("vla-bridge sweep: the sweep sets --perturb of each level itself",)),
    (("--axis", "camera", "--output", "OUT", "--scene", "scene1"),
     ("vla-bridge sweep: unrecognized arguments: --scene scene1", "go after --")),
    (("--axis", "camera"), ("vla-bridge sweep: --output DIR is required",)),
])
def test_sweep_usage_errors_are_one_line(tmp_path, args, expected):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    result = run_cli("sweep", "robofollow_sim", *args, timeout=60)
    _assert_one_line_error(result, *expected)
    assert result.returncode == 2
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written
