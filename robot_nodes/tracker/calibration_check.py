"""Pre-flight check of the table calibration for `vla-bridge doctor`. Pure (no rclpy).

The tracker node writes its calibration to `calibration_file` (tracker_node's parameter,
`TableCalibration.save`: the camera's pose in the world, the board fit's RMS reprojection
error in pixels, the board markers used, the camera). Its age is the file's modification
time (the tracker writes it right after calibrating); its residual is the stored RMS against
the objects file's bound (``board.max_rms_px``, the bound calibrating enforces).
"""
from __future__ import annotations

import time
from pathlib import Path

import yaml

from vla_bridge.robot_nodes.piper.doctor import Check
from vla_bridge.robot_nodes.tracker.tracker import TableCalibration, TrackerConfig

NAME = "calibration"
MAX_AGE_H = 24.0 * 7  # a week: cameras get bumped, tables moved
RECALIBRATE = ("recalibrate: the board on the table, then the tracker's ~/calibrate service "
               "(or tracker_node recalibrate:=true); docs/real_hardware.md section 7")


def check_calibration(path: str, *, camera: str = "cam_high", objects_file: str = "",
                      max_age_h: float = MAX_AGE_H, now: float | None = None) -> Check:
    if not path:
        return Check("PASS", NAME, "no calibration_file: the tracker calibrates from the first "
                                   "board view at every start")
    file = Path(path)
    if not file.is_file():
        return Check("WARN", NAME, f"{path} does not exist yet: the tracker will calibrate at "
                                   "start and write it",
                     "lay the calibration board on the table before the first trial")
    try:
        calib = TableCalibration.load(file)
        saved_camera = (yaml.safe_load(file.read_text()) or {}).get("camera", "")
        bound = TrackerConfig.load(objects_file or None).max_calibration_rms_px
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as exc:
        return Check("FAIL", NAME, f"{path} cannot be read: {exc}",
                     "delete it and " + RECALIBRATE)
    age_h = ((now if now is not None else time.time()) - file.stat().st_mtime) / 3600.0
    seen = (f"{path}: {age_h:.1f} h old, residual {calib.rms_px:.2f} px (bound {bound:g} px), "
            f"{len(calib.markers)} board markers")
    if calib.rms_px > bound:
        return Check("FAIL", NAME, seen, RECALIBRATE)
    if saved_camera and saved_camera != camera:
        return Check("FAIL", NAME, f"{seen}; made for {saved_camera}, the tracker uses {camera}",
                     RECALIBRATE)
    if age_h > max_age_h:
        return Check("WARN", NAME, f"{seen}; older than {max_age_h:g} h", RECALIBRATE)
    if calib.rms_px > 0.5 * bound:
        return Check("WARN", NAME, seen, "the fit is loose: " + RECALIBRATE)
    return Check("PASS", NAME, seen)
