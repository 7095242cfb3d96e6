"""Synthetic RealSense recordings for the tests: frames made up here, written by
librealsense's own recorder from a ``rs.software_device`` (real .db3 files a pipeline plays
back). Import after checking that pyrealsense2 is installed (ImportError otherwise)."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from vla_bridge.robot_nodes.realsense import realsense_io as rio

rs = rio.import_pyrealsense2()  # after rclpy: see realsense_io's notes

W, H = 640, 480
FX, FY, PPX, PPY = 600.0, 601.0, 319.5, 239.5


def pattern(index: int, camera_seed: int, width: int = W, height: int = H) -> np.ndarray:
    """A recognisable RGB frame: a gradient, a camera-specific colour block, a frame counter."""
    img = np.zeros((height, width, 3), np.uint8)
    img[..., 0] = np.linspace(0, 255, width, dtype=np.uint8)[None, :]
    img[..., 1] = np.linspace(0, 255, height, dtype=np.uint8)[:, None]
    img[: height // 2, : width // 2, 2] = 40 * camera_seed
    img[height // 2:, width // 2:, 2] = (index * 7) % 256
    return img


def rs_intrinsics(width=W, height=H) -> rs.intrinsics:
    intr = rs.intrinsics()
    intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy = width, height, FX, FY, PPX, PPY
    intr.model = rs.distortion.brown_conrady
    intr.coeffs = [0.05, -0.01, 0.001, 0.0, 0.002]
    return intr


def record_synthetic(path: Path, images, serial: str, depth=None, fps: int = 30,
                     intrinsics=None) -> Path:
    """Write `images` (list of (H, W, 3) uint8 RGB) and optional depth maps (uint16, mm) to a
    librealsense recording through rs.recorder wrapping a rs.software_device; the device's
    frames go to a rs.syncer, as a pipeline's would. Frames are fed at `fps` (the recording
    plays back at the pace it was recorded)."""
    height, width = images[0].shape[:2]
    dev = rs.software_device()
    dev.register_info(rs.camera_info.serial_number, serial)
    dev.register_info(rs.camera_info.name, "software RealSense")
    colour_sensor = dev.add_sensor("RGB Camera")
    vs = rs.video_stream()
    vs.type, vs.index, vs.uid = rs.stream.color, 0, 1
    vs.width, vs.height, vs.fps, vs.bpp, vs.fmt = width, height, fps, 3, rs.format.rgb8
    vs.intrinsics = intrinsics or rs_intrinsics(width, height)
    colour_profile = colour_sensor.add_video_stream(vs)
    sensors, profiles = [colour_sensor], [colour_profile]
    if depth is not None:
        depth_sensor = dev.add_sensor("Stereo Module")
        ds = rs.video_stream()
        ds.type, ds.index, ds.uid = rs.stream.depth, 0, 2
        ds.width, ds.height, ds.fps, ds.bpp, ds.fmt = width, height, fps, 2, rs.format.z16
        ds.intrinsics = rs_intrinsics(width, height)
        depth_sensor.add_read_only_option(rs.option.depth_units, 0.001)
        sensors.append(depth_sensor)
        profiles.append(depth_sensor.add_video_stream(ds))
        # colour and depth share the optical centre here: aligning is the identity
        identity = rs.extrinsics()
        identity.rotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        identity.translation = [0.0, 0.0, 0.0]
        profiles[1].register_extrinsics_to(profiles[0], identity)
    recorder = rs.recorder(str(path), dev)
    recorded_sensors = recorder.query_sensors()
    sync = rs.syncer()
    for sensor, profile in zip(recorded_sensors, profiles):
        sensor.open(profile)
        sensor.start(sync)
    t0 = time.monotonic()
    for i, img in enumerate(images):
        # the recorder's timeline is the arrival time: pace the frames like a camera would
        time.sleep(max(0.0, t0 + i / fps - time.monotonic()))
        for k, (sensor, profile) in enumerate(zip(sensors, profiles)):
            data = np.ascontiguousarray(img if k == 0 else depth[i])
            frame = rs.software_video_frame()
            frame.pixels = data
            frame.bpp = 3 if k == 0 else 2
            frame.stride = width * frame.bpp
            frame.timestamp = i * 1000.0 / fps
            frame.domain = rs.timestamp_domain.hardware_clock
            frame.frame_number = i
            frame.profile = profile.as_video_stream_profile()
            if k == 1:
                frame.depth_units = 0.001
            sensor.on_video_frame(frame)
        sync.try_wait_for_frames(100)
    for sensor in recorded_sensors:
        sensor.stop()
        sensor.close()
    del recorded_sensors, recorder  # the file is complete once the recorder is gone
    assert path.is_file() and path.stat().st_size > 0
    return path
