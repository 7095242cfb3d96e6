"""RealSense helpers without rclpy: camera maps, intrinsics -> CameraInfo, frames -> numpy.

Used by `robot_nodes.realsense_node` (the rclpy shell) and by anything that reads a
recording offline. pyrealsense2 is imported lazily (only `pipeline_config` and
`device_serials` need it), so the pure parts work where the wheel is absent.

Conventions
-----------
* Camera names are the contract's (`cam_high`, `cam_left_wrist`, `cam_right_wrist`); the
  `serials` parameter maps them onto device serial numbers: ``"cam_high:123456789012,..."``.
* Colour is published as rgb8 (the contract's encoding); the device is asked for RGB8 so no
  conversion happens on the host. Aligned depth (optional) is 16UC1 in the device's depth
  units (1 mm on D400 cameras by default), registered to the colour image, so the colour
  CameraInfo describes it too.
* `frame_to_array` is a zero-copy view over the librealsense frame buffer (the array keeps
  the frame alive); `messages.image_to_msg` then makes the one copy into the message.
* CameraInfo: librealsense's Brown-Conrady coefficients are OpenCV's (k1, k2, p1, p2, k3), so
  they map onto ROS's ``plumb_bob``; ``none`` becomes plumb_bob with zeros; other models
  (inverse Brown-Conrady, fisheye) are passed through under their own name.
* Import pyrealsense2 through `import_pyrealsense2()`: a process that loads librealsense
  before rclpy's native libraries and then logs through rclpy crashes in its exit handlers
  (a static-destructor clash between the two libraries: glibc free() of a bad pointer after
  main returns); loading rclpy first avoids it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from vla_bridge import contract as C

ALOHA = C.ALOHA_PIPER  # the PiPER pair's names, cameras and image size


def import_pyrealsense2():
    """The pyrealsense2 module, loaded after rclpy's native libraries when rclpy is installed
    (see the module notes: the other order crashes the process at exit)."""
    try:
        import rclpy  # noqa: F401 - load order only
    except ImportError:
        pass
    import pyrealsense2

    return pyrealsense2


# ----------------------------------------------------------------------- parameter parsing


def parse_camera_map(text: str, what: str = "serials") -> dict[str, str]:
    """``"cam_high:123,cam_left_wrist:456"`` -> {camera: value}; ValueError naming the bad part.

    Camera names must be the contract's; a camera may appear once. Empty text -> {}.
    """
    out: dict[str, str] = {}
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        camera, sep, value = part.partition(":")
        camera, value = camera.strip(), value.strip()
        if not sep or not value:
            raise ValueError(f"{what}: expected CAMERA:VALUE entries separated by commas, got "
                             f"{part!r} in {text!r}")
        if camera not in ALOHA.camera_names:
            raise ValueError(f"{what}: unknown camera {camera!r}; expected one of "
                             f"{ALOHA.camera_names}")
        if camera in out:
            raise ValueError(f"{what}: camera {camera!r} given twice in {text!r}")
        out[camera] = value
    return out


def parse_cameras(text: str) -> tuple[str, ...]:
    """``"cam_high,cam_left_wrist"`` -> the cameras in contract order."""
    names = [c.strip() for c in str(text).split(",") if c.strip()]
    unknown = [c for c in names if c not in ALOHA.camera_names]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"cameras must be a comma-separated subset of {list(ALOHA.camera_names)} "
                         f"without repeats, got {text!r}")
    return tuple(c for c in ALOHA.camera_names if c in names)

# ------------------------------------------------------------------------------ intrinsics


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics with distortion, in pixels (what CameraInfo and cv2 need)."""
    width: int
    height: int
    fx: float
    fy: float
    ppx: float
    ppy: float
    model: str = "none"  # librealsense distortion name: none, brown_conrady, ...
    coeffs: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)

    @classmethod
    def from_rs(cls, intr) -> Intrinsics:
        """From a `pyrealsense2.intrinsics` (or anything with the same attributes)."""
        model = getattr(intr, "model", "none")
        model = getattr(model, "name", str(model)).rsplit(".", 1)[-1]
        return cls(int(intr.width), int(intr.height), float(intr.fx), float(intr.fy),
                   float(intr.ppx), float(intr.ppy), model,
                   tuple(float(c) for c in getattr(intr, "coeffs", (0.0,) * 5)))

    def camera_matrix(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.ppx], [0.0, self.fy, self.ppy], [0.0, 0.0, 1.0]])

    def distortion(self) -> tuple[str, np.ndarray]:
        """(ROS distortion_model, coefficients); OpenCV order for plumb_bob."""
        coeffs = np.asarray(self.coeffs, dtype=float)
        if self.model in ("none", "brown_conrady", "modified_brown_conrady"):
            d = np.zeros(5) if self.model == "none" else np.resize(coeffs, 5)
            return "plumb_bob", d
        if self.model == "kannala_brandt4":
            return "equidistant", np.resize(coeffs, 4)
        return self.model, coeffs

    def opencv_distortion(self) -> np.ndarray:
        """Coefficients for cv2 (zeros when the model is not OpenCV's plumb_bob)."""
        name, d = self.distortion()
        return d if name == "plumb_bob" else np.zeros(5)

    def scaled(self, width: int, height: int) -> Intrinsics:
        """The intrinsics of the image resized to width x height (pixel-centre convention)."""
        sx, sy = width / self.width, height / self.height
        return Intrinsics(int(width), int(height), self.fx * sx, self.fy * sy,
                          (self.ppx + 0.5) * sx - 0.5, (self.ppy + 0.5) * sy - 0.5,
                          self.model, self.coeffs)


def camera_info_msg(intr: Intrinsics, stamp_s: float, frame_id: str):
    """sensor_msgs/CameraInfo of `intr` (K, D, R = I, P = [K | 0])."""
    from sensor_msgs.msg import CameraInfo

    from vla_bridge.ros.messages import sec_to_stamp

    model, d = intr.distortion()
    msg = CameraInfo(width=intr.width, height=intr.height, distortion_model=model)
    msg.header.stamp = sec_to_stamp(stamp_s)
    msg.header.frame_id = frame_id
    msg.d = [float(v) for v in d]
    msg.k = [intr.fx, 0.0, intr.ppx, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [intr.fx, 0.0, intr.ppx, 0.0, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def intrinsics_from_camera_info(msg) -> Intrinsics:
    """The inverse of camera_info_msg (the tracker reads K and D from the topic)."""
    k = list(msg.k)
    model = {"plumb_bob": "brown_conrady", "equidistant": "kannala_brandt4"}.get(
        msg.distortion_model, msg.distortion_model or "none")
    coeffs = tuple(float(v) for v in msg.d)
    if model == "brown_conrady" and not any(coeffs):
        model = "none"
    return Intrinsics(int(msg.width), int(msg.height), float(k[0]), float(k[4]), float(k[2]),
                      float(k[5]), model, coeffs or (0.0,) * 5)

# ---------------------------------------------------------------------------------- frames


def frame_to_array(frame) -> np.ndarray:
    """A librealsense video frame -> (H, W, C) or (H, W) array VIEWING the frame's buffer.

    Rows padded beyond width * bpp are handled with strides, still without a copy.
    """
    data = np.asanyarray(frame.get_data())  # buffer protocol: no copy
    height, width = frame.get_height(), frame.get_width()
    stride, bpp = frame.get_stride_in_bytes(), frame.get_bytes_per_pixel()
    if data.ndim >= 2 and data.shape[0] == height and data.shape[1] == width \
            and stride == width * bpp:
        return data
    flat = data.reshape(-1).view(np.uint8)
    channels = 3 if bpp == 3 else (4 if bpp == 4 else 1)
    dtype = np.dtype(np.uint16) if bpp == 2 else np.dtype(np.uint8)
    shape = (height, width) if channels == 1 else (height, width, channels)
    strides = (stride, dtype.itemsize) if channels == 1 else (stride, channels, 1)
    return np.ndarray(shape, dtype=dtype, buffer=flat, strides=strides)


def resize_image(image: np.ndarray, width: int, height: int, depth: bool = False) -> np.ndarray:
    """Resize for publishing: area averaging for colour, nearest neighbour for depth (so no
    depth value is invented between an object and the background)."""
    if image.shape[1] == width and image.shape[0] == height:
        return image
    import cv2

    interpolation = cv2.INTER_NEAREST if depth else cv2.INTER_AREA
    return cv2.resize(image, (int(width), int(height)), interpolation=interpolation)


def output_size(stream_w: int, stream_h: int, want_w: int, want_h: int) -> tuple[int, int]:
    """Published size: the requested one, or the stream's where a request is 0."""
    return (int(want_w) or int(stream_w), int(want_h) or int(stream_h))

# ---------------------------------------------------------------------- pipeline sources


@dataclass(frozen=True)
class CameraSource:
    """Where one contract camera's frames come from: a device (by serial) or a recording."""
    camera: str
    serial: str = ""  # empty with no playback file: the only connected device
    playback_file: str = ""
    width: int = 640
    height: int = 480
    fps: int = 30
    depth: bool = False
    repeat_playback: bool = True
    real_time: bool = True  # playback paced like the recording (False: as fast as read)

    @property
    def is_playback(self) -> bool:
        return bool(self.playback_file)

    def describe(self) -> str:
        if self.is_playback:
            return f"{self.camera} <- recording {self.playback_file}"
        return f"{self.camera} <- device {self.serial or '(any)'}"


#: where the realsense node's frames come from (parameter `source`)
CAMERA_SOURCES = ("auto", "devices", "playback", "synthetic")
NO_CAMERAS_HINT = ("give the serial numbers, serials:='cam_high:SERIAL,cam_left_wrist:SERIAL,"
                   "cam_right_wrist:SERIAL' (launch argument camera_serials; "
                   "`rs-enumerate-devices -s` lists them), or recordings, playback_dir:=DIR "
                   "holding DIR/<camera>.db3 (launch argument camera_playback_dir; "
                   "docs/real_hardware.md section 6 says how to record them)")


def plan_sources(source: str, cameras: Iterable[str], serials: dict[str, str],
                 playback: dict[str, str], fake_hardware: bool) -> tuple[str, dict[str, str]]:
    """("synthetic", {}) or ("pipelines", the recordings to play; the other cameras are
    devices). ValueError saying how to give serials or recordings when neither is there.

    `auto`: synthetic for fake hardware given neither serials nor recordings, else the
    recordings where given and devices for the rest. `devices` ignores recordings,
    `playback` needs one for every camera, `synthetic` renders every camera."""
    cameras = tuple(cameras)
    if source not in CAMERA_SOURCES:
        raise ValueError(f"source must be one of {list(CAMERA_SOURCES)}, got {source!r}")
    if source == "synthetic" or (source == "auto" and fake_hardware and not serials
                                 and not playback):
        return "synthetic", {}
    if source == "devices":
        playback = {}
    elif source == "playback":
        missing = [c for c in cameras if c not in playback]
        if missing:
            raise ValueError(f"source playback: no recording for {missing}; set playback_dir "
                             "(DIR/<camera>.db3) or <camera>.playback_file")
    live = [c for c in cameras if c not in playback]
    unnamed = [c for c in live if c not in serials]
    if len(live) > 1 and unnamed:
        what = "no camera serial numbers and no recordings" if len(unnamed) == len(cameras) \
            else f"cameras {unnamed} have no serial number"
        raise ValueError(f"{what} ({len(live)} devices need one serial each): {NO_CAMERAS_HINT}"
                         "; without cameras, fake hardware (use_fake_hardware) renders "
                         "synthetic ones, as does source:=synthetic (launch argument "
                         "camera_source)")
    return "pipelines", {c: f for c, f in playback.items() if c in cameras}


def camera_sources(cameras: Iterable[str], serials: dict[str, str],
                   playback: dict[str, str], **stream) -> list[CameraSource]:
    """One source per camera; a playback file wins over a serial."""
    return [CameraSource(cam, serial=serials.get(cam, ""), playback_file=playback.get(cam, ""),
                         **stream) for cam in cameras]


def pipeline_config(source: CameraSource):
    """The `rs.config` of a source: the device's colour (+ depth) streams, or the file's."""
    rs = import_pyrealsense2()

    cfg = rs.config()
    if source.is_playback:
        # every recorded stream plays; depth is used when recorded and asked for
        cfg.enable_device_from_file(source.playback_file, repeat_playback=source.repeat_playback)
        return cfg
    if source.serial:
        cfg.enable_device(source.serial)
    cfg.enable_stream(rs.stream.color, source.width, source.height, rs.format.rgb8, source.fps)
    if source.depth:
        cfg.enable_stream(rs.stream.depth, source.width, source.height, rs.format.z16, source.fps)
    return cfg


def device_serials() -> list[str]:
    """Serial numbers of the connected RealSense devices (what rs-enumerate-devices lists)."""
    rs = import_pyrealsense2()

    return [d.get_info(rs.camera_info.serial_number) for d in rs.context().query_devices()]


def colour_to_rgb(image: np.ndarray, fmt: str) -> np.ndarray:
    """A colour frame in librealsense format `fmt` (rgb8, bgr8, rgba8, bgra8, yuyv) -> RGB."""
    if fmt == "rgb8":
        return image
    import cv2

    codes = {"bgr8": cv2.COLOR_BGR2RGB, "rgba8": cv2.COLOR_RGBA2RGB, "bgra8": cv2.COLOR_BGRA2RGB,
             "yuyv": cv2.COLOR_YUV2RGB_YUYV}
    if fmt not in codes:
        raise ValueError(f"unsupported colour format {fmt!r}; expected rgb8, bgr8, rgba8, bgra8 "
                         "or yuyv")
    if fmt == "yuyv" and image.ndim == 2:  # (H, W) uint16 view -> (H, W, 2) bytes
        image = image.view(np.uint8).reshape(image.shape[0], image.shape[1], 2)
    return cv2.cvtColor(np.ascontiguousarray(image), codes[fmt])


class Backoff:
    """Retry delays: `first`, doubling up to `maximum`; reset() after a success."""

    def __init__(self, first: float = 0.5, maximum: float = 5.0):
        self.first, self.maximum = float(first), float(maximum)
        self.failures = 0

    def next(self) -> float:
        delay = min(self.maximum, self.first * (2 ** self.failures))
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0
