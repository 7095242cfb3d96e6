"""`vla-bridge doctor`'s camera checks: recordings made by librealsense's own recorder play
through the pipeline code path, checked for serial, size and rate; missing devices, missing
recordings and a plan the node would refuse are FAILs naming the camera; the synthetic
cameras of fake hardware stream at their configured size."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.cli import main as cli_main
from vla_bridge.robot_nodes.realsense import realsense_io as rio
from vla_bridge.robot_nodes.realsense.camera_check import CameraPlan, check_cameras

try:
    rs = rio.import_pyrealsense2()  # after rclpy: see realsense_io's notes
except ImportError:
    pytest.skip("pyrealsense2 is not installed", allow_module_level=True)

from support.realsense_recordings import H, W, pattern, record_synthetic  # noqa: E402

CAMS = C.ALOHA_PIPER.camera_names


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    root = tmp_path_factory.mktemp("rs_doctor")
    for seed, cam in enumerate(CAMS, 1):
        record_synthetic(root / f"{cam}.db3", [pattern(i, seed) for i in range(20)],
                         f"90000000000{seed}")
    return root


def _plan(root, **kw) -> CameraPlan:
    base = dict(cameras=CAMS, playback={c: str(root / f"{c}.db3") for c in CAMS},
                width=W, height=H, fps=30)
    return CameraPlan(**{**base, **kw})


def test_recordings_stream_at_the_configured_size_and_rate(recordings):
    checks = check_cameras(_plan(recordings, serials={"cam_high": "900000000001"}), window_s=0.6)
    assert [c.name for c in checks] == [f"camera.{c}" for c in CAMS]
    assert all(c.status == "PASS" for c in checks), [c.line() for c in checks]
    assert f"{W}x{H} at" in checks[0].seen and "serial 900000000001" in checks[0].seen


def test_wrong_size_wrong_serial_and_missing_recording(recordings):
    big = check_cameras(_plan(recordings, width=1280, height=720), window_s=0.3)
    assert {c.status for c in big} == {"WARN"} and "configured 1280x720" in big[0].seen
    wrong = check_cameras(_plan(recordings, serials={"cam_high": "123"}), window_s=0.3)
    assert wrong[0].status == "WARN" and "not the configured 123" in wrong[0].seen
    slow = check_cameras(_plan(recordings, fps=90), window_s=0.5)  # 30 fps recorded
    assert slow[0].status == "FAIL" and "at 90 fps" in slow[0].seen and "USB" in slow[0].fix
    gone = check_cameras(_plan(recordings, playback={"cam_high": str(recordings / "nope.db3"),
                                                     "cam_left_wrist": "", "cam_right_wrist": ""}
                               ), window_s=0.3)
    assert gone[0].status == "FAIL" and "nope.db3 not found" in gone[0].seen


def test_missing_devices_and_an_unworkable_plan():
    """No camera on this machine: a configured serial is not found."""
    checks = check_cameras(CameraPlan(cameras=("cam_high",), serials={"cam_high": "111"}))
    assert checks[-1].name == "camera.cam_high" and checks[-1].status == "FAIL"
    assert "serial 111 not found" in checks[-1].seen and "rs-enumerate-devices" in checks[-1].fix
    refused = check_cameras(CameraPlan(cameras=CAMS))  # real arms, neither serials nor files
    assert [(c.name, c.status) for c in refused] == [("cameras", "FAIL")]
    assert "no camera serial numbers" in refused[0].seen


def test_synthetic_cameras_of_fake_hardware():
    sizes = {"cam_high": (640, 480), "cam_left_wrist": (320, 240)}
    checks = check_cameras(CameraPlan(cameras=("cam_high", "cam_left_wrist"), fake_hardware=True,
                                      synthetic_sizes=sizes, synthetic_fps=10.0), window_s=0.8)
    assert [c.status for c in checks] == ["PASS", "PASS"], [c.line() for c in checks]
    assert "640x480" in checks[0].seen and "320x240" in checks[1].seen


def test_doctor_checks_a_playback_dir_from_the_command_line(recordings, tmp_path, capsys):
    params = tmp_path / "real.yaml"
    params.write_text(f"realsense_node:\n  ros__parameters:\n    width: {W}\n    height: {H}\n"
                      "    fps: 30\n")
    code = cli_main(["doctor", "--config", str(params), "--skip", "arms,calibration",
                     "--camera-playback-dir", str(recordings), "--rate-window", "0.4"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0, lines
    assert [line.split(":")[0] for line in lines[:-1]] == [f"PASS camera.{c}" for c in CAMS]
    np.testing.assert_equal(len(lines), len(CAMS) + 1)
