"""An INT-ACT probe as a real pilot trial on fake hardware (#25): the PiPER emulator on virtual
CAN, synthetic cameras showing the probe's table (Scene 2 with a LIBERO object in place of the
red cube), the marker tracker finding it, and the evaluator scoring INT-ACT's metrics from the
tracked frames. The oracle plans from the tracker's world state: it reaches the source (the
emulator grasps nothing), so intention is correct and grasp and success are not."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vla_bridge.embodiment import libero_assets
from vla_bridge.embodiment.episode_record import load_episode

pytestmark = [pytest.mark.graph,
              pytest.mark.skipif(not libero_assets.available(),
                                 reason="LIBERO's assets (bash scripts/setup.sh libero)")]
PROBE = "intact_ood_source_pudding_green"


def test_the_tracker_scores_a_fake_hardware_trial_of_a_probe(tmp_path):
    out = tmp_path / "real"
    proc = subprocess.run(
        [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_real",
         "--use_fake_hardware", "true", "--policy", "oracle", "--intact", PROBE,
         "--rounds", "1", "--output", str(out)],
        capture_output=True, text=True, timeout=400, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "synthetic cameras: MuJoCo renders of scene2 (default layout, edited:" in log
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [PROBE] and rows[0]["status"] == "ok"
    assert rows[0]["intact"] == {"intention_correct": True, "grasp_success": False,
                                 "task_success": False, "wrong_object_attempt": False,
                                 "wrong_object": None}
    record, _ = load_episode(next((out / "episodes").rglob(f"{PROBE}_r1.npz")))
    # the frames hold the probe's table as tracked: the pudding, not the cube it replaced
    assert "chocolate_pudding" in record.pos and "small_red_cube" not in record.pos
    assert {"green_bowl", "yellow_bowl"} <= set(record.pos)
    assert "OOD Source" in (out / "intact.md").read_text()


def test_a_fake_hardware_run_of_probes_on_different_tables_is_refused_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_real",
         "--use_fake_hardware", "true", "--intact", "ood_source", "--output",
         str(tmp_path / "real")], capture_output=True, text=True, timeout=200)
    # by the launcher, before any node starts: one line, no run directory, no node's output
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[launcher] realsense_node: "), lines
    assert "needs 5 different tables" in lines[0]
    assert not (tmp_path / "real").exists()


def test_the_launchers_check_refuses_only_what_synthetic_cameras_would_show():
    """realsense_node.preflight: several probe tables are refused only where the cameras are
    synthetic; recordings or devices show whatever table the operator set up."""
    from vla_bridge.robot_nodes.realsense.realsense_node import preflight
    with pytest.raises(ValueError, match="needs 24 different tables"):
        preflight({"use_fake_hardware": True, "synthetic_intact": "all"})
    with pytest.raises(ValueError, match="needs 24 different tables"):
        preflight({"source": "synthetic", "synthetic_intact": "all"})
    assert preflight({"use_fake_hardware": True, "synthetic_intact": "language"}) is None
    assert preflight({"use_fake_hardware": True, "synthetic_intact": "all",
                      "playback_dir": "/recordings"}) is None
    assert preflight({"use_fake_hardware": True, "synthetic_intact": "all",
                      "cam_high": {"playback_file": "/r/high.db3"}}) is None  # nested, as YAML
    assert preflight({"use_fake_hardware": False, "synthetic_intact": "all"}) is None  # devices
