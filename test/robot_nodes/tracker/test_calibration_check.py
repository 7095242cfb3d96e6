"""`vla-bridge doctor`'s table-calibration check: the file the tracker node writes, its age
(modification time) and its residual against the objects file's bound."""
from __future__ import annotations

import os
import time

import numpy as np

from vla_bridge.robot_nodes.tracker.calibration_check import check_calibration
from vla_bridge.robot_nodes.tracker.tracker import TableCalibration, TrackerConfig


def _write(path, rms: float, camera: str = "cam_high"):
    TableCalibration(np.eye(4), rms, [0, 1, 2, 3]).save(path, camera)
    return str(path)


def test_fresh_good_calibration_passes(tmp_path):
    check = check_calibration(_write(tmp_path / "c.yaml", 0.4))
    assert check.status == "PASS" and "residual 0.40 px" in check.seen and "0.0 h old" in check.seen


def test_bad_residual_old_file_other_camera_and_garbage(tmp_path):
    bound = TrackerConfig.load().max_calibration_rms_px
    bad = check_calibration(_write(tmp_path / "bad.yaml", bound + 1.0))
    assert bad.status == "FAIL" and "~/calibrate" in bad.fix
    loose = check_calibration(_write(tmp_path / "loose.yaml", 0.8 * bound))
    assert loose.status == "WARN" and "loose" in loose.fix
    old = _write(tmp_path / "old.yaml", 0.3)
    week_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (week_ago, week_ago))
    aged = check_calibration(old)
    assert aged.status == "WARN" and "192.0 h old" in aged.seen
    other = check_calibration(_write(tmp_path / "o.yaml", 0.3, camera="cam_left_wrist"))
    assert other.status == "FAIL" and "made for cam_left_wrist" in other.seen
    (tmp_path / "junk.yaml").write_text("just: [text\n")
    assert check_calibration(str(tmp_path / "junk.yaml")).status == "FAIL"


def test_no_file_configured_or_not_written_yet(tmp_path):
    assert check_calibration("").status == "PASS"
    missing = check_calibration(str(tmp_path / "later.yaml"))
    assert missing.status == "WARN" and "will calibrate at start" in missing.seen
