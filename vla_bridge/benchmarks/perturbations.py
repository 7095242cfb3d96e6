"""Perturbation axes of our own, for any benchmark (LIBERO-Plus / LIBERO-Infinity style).

An axis changes one thing about an episode, by a graded amount, and nothing else:

=================  ===========================================================  =========
axis               what a level changes                                         levels
=================  ===========================================================  =========
``camera``         the third-person camera (``cam_high``): shifted 2.5 cm and   1-4
                   turned 2.5 degrees per level, in one seeded direction
``lighting``       the scene lights: intensity x (1 +/- 0.15 per level), and     1-4
                   moved 0.25 m per level, in one seeded direction
``texture``        surfaces get another texture, picked by the seed: level 1    1-2
                   the table, level 2 the table and the floor (background)
``image_noise``    Gaussian pixel noise, sigma 5 per level (0-255 scale), drawn  1-4
                   per camera and tick from the seed
``image_blur``     Gaussian blur, sigma 0.75 px per level                       1-4
``initial_joints`` each arm joint starts (and is held until the policy acts)    1-4
                   up to 0.05 rad per level from home, in one seeded direction
``object_jitter``  each free object is moved up to 1 cm per level in x/y, past  1-4
                   the benchmark's own jitter, in one seeded direction each
``distractors``    as many objects the task does not involve as the level, from 1-3
                   LIBERO's asset library (``embodiment.libero_assets``), picked
                   by the seed (no repeats) and set on the table at seeded
                   places clear of the scene's objects and fixtures
=================  ===========================================================  =========

Seeding: the direction of every change is drawn from the axis and the episode's seed only,
and a level scales its size, so the levels of one seed lie on one line (a sweep is graded, not
a new draw per level) and a rerun with the same seed is identical. Level 0 is no change.

The evaluator sends ``{"axis", "level"}`` in each begin (``--perturb AXIS:LEVEL``); the sim
builds an :class:`EpisodePerturbation` from it and the begin's seed; the image axes are applied
by the sim session to every backend's images, the others by a backend that declares them in
``perturbation_axes`` (a begin asking a backend for one it lacks is refused, naming what it
has). The sim's ``ready`` reports what it applied (``describe()``), which the rows record.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.limits import load_sim_limits

#: axis -> (highest level, one line of what a level changes)
AXES: dict[str, tuple[int, str]] = {
    "camera": (4, "cam_high shifted 2.5 cm and turned 2.5 deg per level"),
    "lighting": (4, "light intensity x(1 +/- 0.15) and moved 0.25 m per level"),
    "texture": (2, "level 1: the table's texture; level 2: the table's and the floor's"),
    "image_noise": (4, "Gaussian pixel noise, sigma 5 (of 255) per level"),
    "image_blur": (4, "Gaussian blur, sigma 0.75 px per level"),
    "initial_joints": (4, "arm joints start up to 0.05 rad per level from home"),
    "object_jitter": (4, "objects moved up to 1 cm per level in x/y"),
    "distractors": (3, "that many LIBERO objects the task does not involve, on the table"),
}
#: the axes the sim session applies to any backend's images
IMAGE_AXES = frozenset({"image_noise", "image_blur"})

CAMERA = "cam_high"  # the camera the camera axis moves (wrist cameras ride on the arms)
CAMERA_SHIFT_M = 0.025
CAMERA_TURN_DEG = 2.5
LIGHT_GAIN = 0.15
LIGHT_SHIFT_M = 0.25
TEXTURE_SURFACES = ("table", "floor")
NOISE_SIGMA = 5.0
BLUR_SIGMA_PX = 0.75
JOINT_OFFSET_RAD = 0.05
OBJECT_SHIFT_M = 0.01
#: where distractors may stand, x and y ranges in the table frame (m): in reach of both arms,
#: ahead of their bases, on the table
DISTRACTOR_AREA = ((-0.32, 0.32), (-0.26, 0.14))
DISTRACTOR_CLEARANCE_M = 0.03  # the least gap between a distractor and anything on the table
DISTRACTOR_TRIES = 500  # rejection-sampling draws per distractor before giving up


def _axis_index(axis: str) -> int:
    return list(AXES).index(axis)


@dataclass(frozen=True)
class Perturbation:
    """One axis at one level (what ``--perturb AXIS:LEVEL`` asks for)."""
    axis: str
    level: int

    def __post_init__(self):
        if self.axis not in AXES:
            raise ValueError(f"unknown perturbation axis {self.axis!r}; the axes: "
                             + ", ".join(AXES))
        top = AXES[self.axis][0]
        if isinstance(self.level, bool) or not isinstance(self.level, int) \
                or not 0 <= self.level <= top:
            raise ValueError(f"perturbation {self.axis!r} has levels 0..{top}, "
                             f"got {self.level!r}")

    @property
    def spec(self) -> str:
        return f"{self.axis}:{self.level}"

    def to_dict(self) -> dict:
        return {"axis": self.axis, "level": self.level}

    @classmethod
    def from_dict(cls, value) -> "Perturbation":
        """From a begin's ``perturbation`` field (ValueError naming what is wrong)."""
        if not isinstance(value, dict) or set(value) != {"axis", "level"}:
            raise ValueError("a begin's perturbation must be {\"axis\": ..., \"level\": ...}, "
                             f"got {value!r}")
        return cls(str(value["axis"]), value["level"])


def parse(text: str) -> Perturbation | None:
    """``AXIS:LEVEL`` (``camera:2``); "" or a level of 0 is no perturbation (None)."""
    text = str(text or "").strip()
    if not text:
        return None
    axis, sep, level = text.partition(":")
    if not sep or not level.strip().isdigit():
        raise ValueError(f"--perturb wants AXIS:LEVEL (e.g. camera:2), got {text!r}; the axes: "
                         + ", ".join(f"{a} (1..{top})" for a, (top, _) in AXES.items()))
    p = Perturbation(axis.strip(), int(level))
    return p if p.level else None


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=n)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def axis_angle_quat(axis, angle_rad: float) -> np.ndarray:
    """Quaternion (w, x, y, z) of a turn about a unit axis."""
    axis = np.asarray(axis, float)
    return np.concatenate([[np.cos(angle_rad / 2)], np.sin(angle_rad / 2) * axis])


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a * b of (w, x, y, z) quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


class EpisodePerturbation:
    """One episode's perturbation: the axis and level with the episode's seed. Every draw
    comes from (axis, seed) alone, so it is the same for any backend, any rerun and the
    operator's card."""

    def __init__(self, perturbation: Perturbation, seed: int):
        self.axis, self.level, self.seed = perturbation.axis, perturbation.level, int(seed)
        self.perturbation = perturbation
        self.placed: list[tuple] | None = None  # the distractors drawn (``distractors``)

    @classmethod
    def from_begin(cls, ctl: dict) -> "EpisodePerturbation | None":
        """From a begin message (None without a ``perturbation`` or at level 0). Its seed is
        the perturbation's own ``seed`` when it names one (a benchmark whose episode seed is
        shared by several trials: LIBERO's per-task seed), else the begin's ``seed``."""
        value = ctl.get("perturbation")
        if value is None:
            return None
        seed = ctl["seed"]
        if isinstance(value, dict) and "seed" in value:
            value = dict(value)
            seed = value.pop("seed")
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise ValueError(f"a begin's perturbation seed must be an integer, got {seed!r}")
        p = Perturbation.from_dict(value)
        return cls(p, int(seed)) if p.level else None

    def rng(self, *stream: int) -> np.random.Generator:
        return np.random.default_rng([_axis_index(self.axis), self.seed & 0xFFFFFFFF, *stream])

    # ------------------------------------------------------------------ scene axes
    def camera_offset(self) -> tuple[np.ndarray, np.ndarray]:
        """(shift in metres, turn as a (w, x, y, z) quaternion) of ``CAMERA``, in the world
        frame: the turn applies to the camera's orientation (q_new = turn * q)."""
        rng = self.rng()
        shift = _unit(rng, 3) * CAMERA_SHIFT_M * self.level
        turn = axis_angle_quat(_unit(rng, 3), np.radians(CAMERA_TURN_DEG * self.level))
        return shift, turn

    def light_change(self) -> tuple[float, np.ndarray]:
        """(intensity factor, shift of every light in metres, horizontal)."""
        rng = self.rng()
        sign = 1.0 if rng.random() < 0.5 else -1.0
        angle = rng.uniform(0, 2 * np.pi)
        shift = np.array([np.cos(angle), np.sin(angle), 0.0]) * LIGHT_SHIFT_M * self.level
        return 1.0 + sign * LIGHT_GAIN * self.level, shift

    def texture_surfaces(self) -> tuple[str, ...]:
        """The surfaces whose texture changes at this level (``TEXTURE_SURFACES``)."""
        return TEXTURE_SURFACES[:self.level]

    def texture_choice(self, surface: str, candidates: int) -> int:
        """Which of ``candidates`` textures ``surface`` gets (seeded, per surface)."""
        if candidates < 1:
            raise ValueError(f"no texture to give the {surface}")
        return int(self.rng(TEXTURE_SURFACES.index(surface)).integers(candidates))

    def joint_offsets(self, n: int) -> np.ndarray:
        """Offsets (rad) of ``n`` arm joints from home: one seeded direction in [-1, 1]^n,
        times 0.05 rad per level."""
        return self.rng().uniform(-1.0, 1.0, size=n) * JOINT_OFFSET_RAD * self.level

    def object_offsets(self, names) -> dict[str, np.ndarray]:
        """x/y offsets (m) of the named objects: each its own seeded direction and a length
        up to 1 cm per level (by name, so adding an object changes no other's)."""
        out = {}
        for name in sorted(names):
            rng = self.rng(zlib.crc32(name.encode()))
            angle, radius = rng.uniform(0, 2 * np.pi), np.sqrt(rng.uniform(0.25, 1.0))
            out[name] = (np.array([np.cos(angle), np.sin(angle)]) * radius
                         * OBJECT_SHIFT_M * self.level)
        return out

    def distractor_names(self, candidates) -> list[str]:
        """The level's distractors: the first ``level`` of one seeded order of ``candidates``
        (no repeats; a higher level adds to a lower one's)."""
        candidates = list(candidates)
        return [candidates[i] for i in self.rng(0).permutation(len(candidates))[:self.level]]

    def distractor_places(self, candidates, footprints: dict, occupied) -> list[tuple]:
        """[(name, xy)] of the level's distractors: each centred at a seeded point of
        ``DISTRACTOR_AREA``, its footprint inside it and ``DISTRACTOR_CLEARANCE_M`` clear of
        ``occupied`` ([(centre xy, half extents xy)]: the scene's bodies) and of the
        distractors placed before it. Rejection sampling in order from one seeded stream, so
        level k's places are the first k of level k+1's. ``footprints``: name -> half extents
        (x, y) of (at least) the level's distractors. ValueError when no place is found."""
        rng, placed, out = self.rng(1), [(np.asarray(c, float), np.asarray(h, float))
                                         for c, h in occupied], []
        area = np.asarray(DISTRACTOR_AREA, float)
        for name in self.distractor_names(candidates):
            half = np.asarray(footprints[name], float)[:2]
            lo, hi = area[:, 0] + half, area[:, 1] - half
            for _ in range(DISTRACTOR_TRIES):
                xy = rng.uniform(lo, hi)
                if all(np.any(np.abs(xy - c) >= half + h + DISTRACTOR_CLEARANCE_M)
                       for c, h in placed):
                    break
            else:
                raise ValueError(f"no place on the table for distractor {name} "
                                 f"({len(out)} placed) clear of the scene by "
                                 f"{DISTRACTOR_CLEARANCE_M * 100:g} cm")
            placed.append((xy, half))
            out.append((name, xy))
        return out

    def distractors(self, scene_spec, layout: str) -> list[tuple]:
        """[(LIBERO name, xy)] of this episode's distractors in a RoboFollow scene layout
        (``distractor_places`` with LIBERO's curated objects and ``layout_footprints``);
        LiberoAssetsMissing without LIBERO's assets. Kept for ``describe()``."""
        from vla_bridge.embodiment import libero_assets
        names = self.distractor_names(libero_assets.NAMES)
        self.placed = self.distractor_places(libero_assets.NAMES,
                                             libero_assets.footprints(names),
                                             layout_footprints(scene_spec, layout))
        return self.placed

    # ------------------------------------------------------------------ image axes
    def apply_image(self, image: np.ndarray, camera_index: int, tick: int) -> np.ndarray:
        """The image axes on one rendered image (any other axis: the image unchanged). Noise
        is drawn from (seed, camera, tick), so it does not depend on how often or in which
        order images are rendered."""
        if self.axis == "image_noise":
            noise = self.rng(camera_index, tick).normal(0.0, NOISE_SIGMA * self.level,
                                                        size=image.shape)
            return np.clip(image + noise, 0, 255).astype(np.uint8)
        if self.axis == "image_blur":
            return gaussian_blur(image, BLUR_SIGMA_PX * self.level)
        return image

    # ------------------------------------------------------------------ what was applied
    def describe(self) -> dict:
        """The axis, level, seed and the drawn values, for rows and run.json."""
        out = {"axis": self.axis, "level": self.level, "seed": self.seed}
        if self.axis == "camera":
            shift, turn = self.camera_offset()
            out.update(camera=CAMERA, shift_m=_r(shift, 4),
                       turn_deg=round(float(np.degrees(2 * np.arccos(np.clip(turn[0], -1, 1)))), 3),
                       turn_axis=_r(turn[1:] / max(np.linalg.norm(turn[1:]), 1e-12), 4))
        elif self.axis == "lighting":
            gain, shift = self.light_change()
            out.update(intensity=round(gain, 4), shift_m=_r(shift, 4))
        elif self.axis == "texture":
            out.update(surfaces=list(self.texture_surfaces()))
        elif self.axis == "image_noise":
            out.update(sigma=NOISE_SIGMA * self.level)
        elif self.axis == "image_blur":
            out.update(sigma_px=BLUR_SIGMA_PX * self.level)
        elif self.axis == "initial_joints":
            out.update(max_rad=JOINT_OFFSET_RAD * self.level)
        elif self.axis == "object_jitter":
            out.update(max_m=OBJECT_SHIFT_M * self.level)
        elif self.axis == "distractors":
            from vla_bridge.embodiment.libero_assets import NAMES
            out.update(objects=self.distractor_names(NAMES))
            if getattr(self, "placed", None):
                out.update(xy_m={name: _r(xy, 4) for name, xy in self.placed})
        return out


def _r(v, digits: int) -> list[float]:
    return [round(float(x), digits) for x in v]


def gaussian_blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur of an (H, W, C) uint8 image, edges repeated."""
    if sigma <= 0:
        return image
    radius = max(1, int(np.ceil(3 * sigma)))
    x = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    kernel /= kernel.sum()
    out = image.astype(np.float32)
    for axis in (0, 1):
        pad = [(0, 0)] * out.ndim
        pad[axis] = (radius, radius)
        padded = np.pad(out, pad, mode="edge")
        acc = np.zeros_like(out)
        n = out.shape[axis]
        for k, w in enumerate(kernel):
            acc += w * np.take(padded, range(k, k + n), axis=axis)
        out = acc
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def layout_footprints(scene_spec, layout: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """[(centre xy, half extents xy)] of what a RoboFollow layout puts on the table, wide
    enough for any seed: each body at its nominal place, its footprint grown by its jitter's
    reach (a body in a bowl or on another: at that one's place). Seed-free, so the
    distractors' draw is the same in the sim and on the operator's card."""
    from vla_bridge.embodiment.mjcf import fixture_size
    lay = scene_spec.layout(layout)
    base = {p.name: p.container or p.support for p in lay.placements}
    out = []
    for p in lay.placements:
        root = p.name
        while base.get(root):
            root = base[root]
        body = scene_spec.body(p.name)
        size = fixture_size(body) if p.name in scene_spec.fixtures else body.full_size
        yaw = float(getattr(body, "yaw", 0.0) or 0.0)
        c, s_ = abs(np.cos(yaw)), abs(np.sin(yaw))
        half = np.array([c * size[0] + s_ * size[1], s_ * size[0] + c * size[1]]) / 2
        rule = scene_spec.jitter.get(root)
        if rule is not None:
            half = half + [max(abs(v) for v in rule.x.bounds), max(abs(v) for v in rule.y.bounds)]
        out.append((np.asarray(lay.placement(root).xy, float), half))
    return out


def pair_start(home, perturbation: EpisodePerturbation | None) -> np.ndarray:
    """The PiPER pair's start command (contract order): ``home``, plus an ``initial_joints``
    perturbation's offsets on the arm joints (left arm offsets[0:6], right arm offsets[6:12];
    grippers as home), clipped to the joint ranges the sim enforces (a joint near its limit
    at home, such as joint 5, cannot go further). Any other axis, or none: ``home``. The sim
    backends and the operator's card use this one rule."""
    start = np.array(home, float)
    if perturbation is None or perturbation.axis != "initial_joints":
        return start
    n = len(contract.ARM_JOINTS)
    offsets = perturbation.joint_offsets(len(contract.ARMS) * n)
    ranges = load_sim_limits().joint_limits
    for i in range(len(contract.ARMS)):
        base = i * contract.JOINTS_PER_ARM
        start[base:base + n] = np.clip(start[base:base + n] + offsets[i * n:(i + 1) * n],
                                       ranges[:, 0], ranges[:, 1])
    return start


def check_supported(perturbation: EpisodePerturbation | None, backend_axes, backend: str) -> None:
    """ValueError when ``backend`` cannot apply the episode's axis (the image axes: every
    backend, through the sim session)."""
    if perturbation is None or perturbation.axis in IMAGE_AXES:
        return
    if perturbation.axis not in backend_axes:
        can = sorted(set(backend_axes) | IMAGE_AXES)
        raise ValueError(f"the {backend} cannot perturb {perturbation.axis!r}; it can: "
                         + ", ".join(can))
    if perturbation.axis == "distractors":
        from vla_bridge.embodiment.libero_assets import assets_dir
        assets_dir()  # LiberoAssetsMissing (a ValueError), one line, before the reset
