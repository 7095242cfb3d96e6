"""Pre-flight checks of the cameras for `vla-bridge doctor`: each configured camera found and
streaming at the configured size and rate. No rclpy of its own (pyrealsense2 is loaded
through `realsense_io.import_pyrealsense2`, after rclpy where that is installed).

The cameras come from where the realsense node would take them (`realsense_io.plan_sources`,
the same parameters): devices by serial number, recordings (playback files, through the same
pipeline code) or, for fake hardware without either, the synthetic cameras (MuJoCo renders of
the workcell, `synthetic_cameras.SyntheticCameras`, the node's own source). One `Check` per
camera, named ``camera.<name>``; a plan the node would refuse is one FAIL named ``cameras``.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from vla_bridge.robot_nodes.piper.doctor import RATE_PASS, RATE_WARN, Check
from vla_bridge.robot_nodes.realsense import realsense_io as rio

SERIALS_HINT = "`rs-enumerate-devices -s` lists the connected serials; fix realsense_node's serials"


@dataclass(frozen=True)
class CameraPlan:
    """What the realsense node's parameters say (RealSenseConfig's names)."""
    cameras: tuple[str, ...]
    source: str = "auto"
    serials: dict | None = None
    playback: dict | None = None  # camera -> recording
    fake_hardware: bool = False
    width: int = 640
    height: int = 480
    fps: int = 30
    synthetic_fps: float = 10.0
    synthetic_sizes: dict | None = None  # camera -> (w, h)
    synthetic_scene: str = "scene1"
    synthetic_layout: str = "default"
    objects_file: str = ""


def _rate(measured: float, wanted: float) -> str:
    return "PASS" if measured >= RATE_PASS * wanted else \
        "WARN" if measured >= RATE_WARN * wanted else "FAIL"


def check_cameras(plan: CameraPlan, window_s: float = 1.0, timeout_s: float = 3.0) -> list[Check]:
    try:
        kind, playback = rio.plan_sources(plan.source, plan.cameras, plan.serials or {},
                                          plan.playback or {}, plan.fake_hardware)
    except ValueError as exc:
        return [Check("FAIL", "cameras", str(exc).split(": give")[0],
                      "give the serial numbers (camera_serials) or recordings "
                      "(camera_playback_dir); docs/real_hardware.md section 6")]
    if kind == "synthetic":
        return check_synthetic(plan, window_s, timeout_s)
    try:
        rs = rio.import_pyrealsense2()
    except ImportError as exc:
        return [Check("FAIL", "cameras", f"pyrealsense2 cannot be imported ({exc})",
                      "pip install -r requirements.txt")]
    sources = rio.camera_sources(plan.cameras, plan.serials or {}, playback, width=plan.width,
                                 height=plan.height, fps=plan.fps, repeat_playback=True,
                                 real_time=True)
    connected = None
    out = []
    for src in sources:
        if not src.is_playback and connected is None:
            try:
                connected = rio.device_serials()
            except RuntimeError as exc:
                connected = []
                out.append(Check("WARN", "cameras", f"librealsense lists no devices ({exc})",
                                 "check the USB cables and udev rules (librealsense's "
                                 "setup_udev_rules.sh)"))
        out.append(check_source(rs, src, connected or [], window_s, timeout_s))
    return out


def check_source(rs, src: rio.CameraSource, connected: list[str], window_s: float,
                 timeout_s: float) -> Check:
    """One device or recording: found, started at the asked size and rate, frames per second."""
    name = f"camera.{src.camera}"
    if src.is_playback:
        if not os.path.isfile(src.playback_file):
            return Check("FAIL", name, f"recording {src.playback_file} not found",
                         "record it (docs/real_hardware.md section 6) or fix camera_playback_dir")
    elif src.serial and src.serial not in connected:
        return Check("FAIL", name, f"serial {src.serial} not found (connected: "
                                   f"{', '.join(connected) or 'none'})", SERIALS_HINT)
    elif not connected:
        return Check("FAIL", name, "no RealSense device connected",
                     "plug the camera into a USB 3 port; " + SERIALS_HINT)
    pipeline = rs.pipeline()
    try:
        profile = pipeline.start(rio.pipeline_config(src))
    except RuntimeError as exc:
        return Check("FAIL", name, f"{src.describe()}: cannot stream {src.width}x{src.height} "
                                   f"at {src.fps} fps ({exc})",
                     "ask for a mode the camera has (`rs-enumerate-devices` lists them): "
                     "realsense_node width/height/fps")
    try:
        device = profile.get_device()
        serial = _serial(rs, device)
        if src.is_playback:
            device.as_playback().set_real_time(True)
        colour = profile.get_stream(rs.stream.color).as_video_stream_profile()
        size = (colour.width(), colour.height())
        frames, first, last = 0, None, None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ok, fs = pipeline.try_wait_for_frames(200)
            if not ok or not fs.get_color_frame():
                continue
            now = time.monotonic()
            first = first or now
            frames, last = frames + 1, now
            if now - first >= window_s:
                break
    finally:
        pipeline.stop()
    what = f"{src.describe()} (serial {serial or 'unknown'})"
    if not frames:
        return Check("FAIL", name, f"{what}: no frame in {timeout_s:.1f} s",
                     "replug the camera (USB 3), check nothing else holds it")
    fps = (frames - 1) / (last - first) if frames > 1 and last > first else 0.0
    seen = f"{what}: {size[0]}x{size[1]} at {fps:.0f} fps (configured {src.width}x{src.height} " \
           f"at {src.fps} fps)"
    if size != (src.width, src.height):
        return Check("WARN" if src.is_playback else "FAIL", name, seen,
                     "record at the configured size, or set realsense_node width/height to it")
    if src.is_playback and src.serial and serial and serial != src.serial:
        return Check("WARN", name, f"{seen}; recorded from {serial}, not the configured "
                                   f"{src.serial}", "replay the right camera's recording")
    status = _rate(fps, src.fps)
    if status != "PASS":
        return Check(status, name, seen, "a USB 2 port or a busy hub: use a USB 3 port per "
                                         "camera; lower fps")
    return Check("PASS", name, seen)


def _serial(rs, device) -> str:
    try:
        return device.get_info(rs.camera_info.serial_number)
    except RuntimeError:
        return ""


def check_synthetic(plan: CameraPlan, window_s: float, timeout_s: float = 3.0) -> list[Check]:
    """The fake graph's cameras: SyntheticCameras run, frames counted over `window_s` once
    every camera has given two (within `timeout_s`)."""
    try:
        from vla_bridge.robot_nodes.realsense.synthetic_cameras import SyntheticCameras
        from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig

        sizes = plan.synthetic_sizes or {c: (plan.width, plan.height) for c in plan.cameras}
        counts: dict[str, list] = {c: [] for c in plan.cameras}
        lock = threading.Lock()

        def on_frame(camera, rgb, depth, intr):
            with lock:
                counts[camera].append((time.monotonic(), rgb.shape[1], rgb.shape[0]))

        cams = SyntheticCameras(plan.cameras, sizes, lambda: None, on_frame, _Quiet(),
                                fps=plan.synthetic_fps, scene=plan.synthetic_scene,
                                layout=plan.synthetic_layout,
                                markers=TrackerConfig.load(plan.objects_file or None))
    except Exception as exc:  # noqa: BLE001 - MuJoCo, GL or a bad scene/markers file
        return [Check("FAIL", "cameras", f"synthetic cameras cannot start: {exc}",
                      "MUJOCO_GL=egl (or osmesa) must be able to render here")]
    cams.start()
    try:  # the first frames are late (the renderers' GL contexts): measure after them
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not all(len(v) >= 2 for v in counts.values()):
            time.sleep(0.02)
        began = time.monotonic()
        time.sleep(window_s)
        ended = time.monotonic()
    finally:
        cams.stop()
    out = []
    for cam in plan.cameras:
        got = [f for f in counts[cam] if began <= f[0] < ended]
        want = sizes[cam]
        if not counts[cam]:
            out.append(Check("FAIL", f"camera.{cam}", f"synthetic: no frame in "
                             f"{timeout_s + window_s:.1f} s ({cams.errors} render errors)",
                             "MUJOCO_GL=egl (or osmesa) must be able to render here"))
            continue
        fps = len(got) / (ended - began)
        w, h = counts[cam][-1][1:]
        seen = (f"synthetic (fake hardware: MuJoCo renders, no device) {w}x{h} at {fps:.0f} fps "
                f"(synthetic_fps {plan.synthetic_fps:g})")
        if (w, h) != tuple(want):
            out.append(Check("FAIL", f"camera.{cam}", seen, f"expected {want[0]}x{want[1]}"))
        elif (status := _rate(fps, plan.synthetic_fps)) != "PASS":
            out.append(Check(status, f"camera.{cam}", seen, "this machine renders slowly: lower "
                             "synthetic_fps or the synthetic sizes"))
        else:
            out.append(Check("PASS", f"camera.{cam}", seen))
    return out


class _Quiet:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)

    warning = error = info
