"""RoboFollow scene layouts as the project's own data (config/robofollow/scenes.json).

Pure logic, no rclpy. ``load_scene(name)`` gives a ``SceneSpec`` (objects, fixtures such as bowls
and labels, jitter rules, layout variants); ``sample_layout(scene, layout, seed)`` turns a layout
and an episode seed into jittered spawn positions the way the benchmark does: one
``numpy.random.RandomState(seed)``, uniform draws x then y, body by body in placement order, with
the jitter rule that belongs to the body's name (it follows the body when a layout moves it).

Scene 1 is complete and exact. Scenes 2-4 are loaded faithfully; their meshes (bowls) have no
known metric size, so bowl-dependent heights are lower bounds (see ``sample_layout``).
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vla_bridge.paths import config_path

SCENES_FILE = "robofollow/scenes.json"
SCENES = ("scene1", "scene2", "scene3", "scene4")
TABLE_Z = 0.74  # table top in the world frame (clean protocol, no table-height bias)


@dataclass(frozen=True)
class ObjectSpec:
    """A movable primitive. Sizes are HALF sizes in metres (see ``full_size``)."""
    name: str
    shape: str  # "box" | "sphere" | "cylinder" (cylinder axis vertical)
    rgb: tuple[float, float, float]
    mass: float  # kg
    friction: float  # static and dynamic coefficient
    radius: float | None = None  # sphere, cylinder
    half_height: float | None = None  # cylinder
    half_extents: tuple[float, float, float] | None = None  # box
    yaw: float = 0.0  # rad about +z at spawn
    spawn_clearance: float = 0.0  # gap above the table at spawn

    @property
    def full_size(self) -> np.ndarray:
        """Full extent (x, y, z) in metres at yaw 0, as the world-state contract uses."""
        if self.shape == "sphere":
            return np.full(3, 2.0 * self.radius)
        if self.shape == "cylinder":
            return np.array([2.0 * self.radius, 2.0 * self.radius, 2.0 * self.half_height])
        return 2.0 * np.asarray(self.half_extents, dtype=float)

    @property
    def half_z(self) -> float:
        """Half height along z: centre-to-bottom distance of a body resting on its base."""
        return float(self.full_size[2]) / 2.0

    def spawn_z(self, table_z: float = TABLE_Z) -> float:
        """Centre height when spawned standing on the table."""
        return table_z + self.half_z + self.spawn_clearance


@dataclass(frozen=True)
class FixtureSpec:
    """A bowl (mesh) or label (static thin box): never a task source."""
    name: str
    kind: str  # "bowl" | "label"
    shape: str  # "mesh" | "box"
    static: bool
    rgb: tuple[float, float, float] | None = None
    half_extents: tuple[float, float, float] | None = None  # labels
    mesh: dict = field(default_factory=dict, compare=False)  # bowls: asset, model_id, scale
    quat_wxyz: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    center_z_above_table: float | None = None  # bowls: pose origin height over the table
    spawn_clearance: float = 0.0

    @property
    def full_size(self) -> np.ndarray | None:
        """Full extent for boxes; None for meshes, whose metric size is not known."""
        return None if self.half_extents is None else 2.0 * np.asarray(self.half_extents)

    def spawn_z(self, table_z: float = TABLE_Z) -> float:
        if self.center_z_above_table is not None:
            return table_z + self.center_z_above_table
        return table_z + self.half_extents[2] + self.spawn_clearance


@dataclass(frozen=True)
class AxisJitter:
    """offset = sign * U(low, high); sign -1 subtracts a positive magnitude, as upstream does."""
    low: float
    high: float
    sign: int = 1

    def draw(self, rng: np.random.RandomState) -> float:
        return self.sign * rng.uniform(self.low, self.high)

    @property
    def bounds(self) -> tuple[float, float]:
        """Smallest and largest possible offset."""
        ends = sorted((self.sign * self.low, self.sign * self.high))
        return ends[0], ends[1]


@dataclass(frozen=True)
class JitterRule:
    x: AxisJitter
    y: AxisJitter

    def draw(self, rng: np.random.RandomState) -> np.ndarray:
        dx = self.x.draw(rng)  # x first: the draw order is part of the benchmark
        dy = self.y.draw(rng)
        return np.array([dx, dy])


@dataclass(frozen=True)
class Placement:
    """Where a layout puts one body. ``support`` / ``container`` bodies take that body's xy."""
    name: str
    xy: tuple[float, float]  # nominal (unjittered) xy
    slot: int | None = None  # Scene 4 slot number
    support: str | None = None  # stacked on this body
    container: str | None = None  # dropped into this bowl

    @property
    def on_table(self) -> bool:
        return self.support is None and self.container is None


@dataclass(frozen=True)
class LayoutSpec:
    key: str
    paper_name: str
    levels: tuple[str, ...]  # evaluation levels whose tasks use this layout
    note: str
    placements: tuple[Placement, ...]  # spawn order

    def nominal_xy(self) -> dict[str, np.ndarray]:
        return {p.name: np.asarray(p.xy, dtype=float) for p in self.placements}

    def placement(self, name: str) -> Placement:
        for p in self.placements:
            if p.name == name:
                return p
        raise KeyError(f"{name!r} is not placed in layout {self.key!r}")


@dataclass(frozen=True)
class SceneSpec:
    name: str
    objects: dict[str, ObjectSpec]  # every object any layout of the scene uses
    fixtures: dict[str, FixtureSpec]
    layouts: dict[str, LayoutSpec]
    jitter: dict[str, JitterRule]  # by body name; bodies without a rule are not jittered
    table_z: float = TABLE_Z
    aliases: dict[str, str] = field(default_factory=dict)  # e.g. "scene4_1" -> "scene4.1"
    extras: dict = field(default_factory=dict, compare=False)  # slots, spawn facts, notes, ...

    def layout(self, key: str) -> LayoutSpec:
        """Layout by key or alias; ValueError lists the valid keys."""
        resolved = self.aliases.get(key, key)
        if resolved not in self.layouts:
            valid = list(self.layouts) + list(self.aliases)
            close = difflib.get_close_matches(key, valid, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ValueError(f"unknown layout {key!r} for {self.name}{hint}; "
                             f"valid: {', '.join(valid)}")
        return self.layouts[resolved]

    def body(self, name: str) -> ObjectSpec | FixtureSpec:
        if name in self.objects:
            return self.objects[name]
        return self.fixtures[name]

    def layout_objects(self, key: str) -> list[ObjectSpec]:
        """The movable objects a layout spawns, in spawn order."""
        return [self.objects[p.name] for p in self.layout(key).placements
                if p.name in self.objects]


# ----------------------------------------------------------------------------- loading


def load_benchmark_facts(path: str | Path | None = None) -> dict:
    """Global facts: frame (table_top_z, axes), operation_box, physics and protocol."""
    data = _read(path)
    return {k: data[k] for k in ("frame", "operation_box", "physics", "protocol")}


def load_scenes(path: str | Path | None = None) -> dict[str, SceneSpec]:
    data = _read(path)
    return {name: _scene_from_dict(name, data) for name in data["scenes"]}


def load_scene(name: str, path: str | Path | None = None) -> SceneSpec:
    data = _read(path)
    if name not in data["scenes"]:
        raise ValueError(f"unknown scene {name!r}; valid: {', '.join(data['scenes'])}")
    return _scene_from_dict(name, data)


def _read(path: str | Path | None) -> dict:
    return json.loads(Path(path or config_path(SCENES_FILE)).read_text(encoding="utf-8"))


def _scene_from_dict(name: str, data: dict) -> SceneSpec:
    d = data["scenes"][name]
    clearance = d["spawn_clearance"]
    known = {"objects", "fixtures", "layouts", "jitter", "aliases", "spawn_clearance"}
    return SceneSpec(
        name=name,
        objects={o["name"]: _object(o, clearance) for o in d["objects"]},
        fixtures={f["name"]: _fixture(f, clearance) for f in d["fixtures"]},
        layouts={k: _layout(k, lay) for k, lay in d["layouts"].items()},
        jitter={n: JitterRule(_axis(r["x"]), _axis(r["y"])) for n, r in d["jitter"].items()},
        table_z=data["frame"]["table_top_z"] + data["frame"]["table_z_bias"],
        aliases=dict(d.get("aliases", {})),
        extras={k: v for k, v in d.items() if k not in known},
    )


def _object(o: dict, clearance: dict) -> ObjectSpec:
    he = o.get("half_extents")
    return ObjectSpec(
        name=o["name"], shape=o["shape"], rgb=tuple(o["rgb"]), mass=o["mass"],
        friction=o["friction"], radius=o.get("radius"), half_height=o.get("half_height"),
        half_extents=tuple(he) if he else None, yaw=o.get("yaw", 0.0),
        spawn_clearance=clearance[o["shape"]],
    )


def _fixture(f: dict, clearance: dict) -> FixtureSpec:
    he, rgb = f.get("half_extents"), f.get("rgb")
    return FixtureSpec(
        name=f["name"], kind=f["kind"], shape=f["shape"], static=f["static"],
        rgb=tuple(rgb) if rgb else None, half_extents=tuple(he) if he else None,
        mesh=dict(f.get("mesh", {})), quat_wxyz=tuple(f.get("quat_wxyz", (1.0, 0.0, 0.0, 0.0))),
        center_z_above_table=f.get("center_z_above_table"),
        spawn_clearance=clearance.get(f["kind"], 0.0),
    )


def _axis(r: dict) -> AxisJitter:
    return AxisJitter(low=r["range"][0], high=r["range"][1], sign=r["sign"])


def _layout(key: str, lay: dict) -> LayoutSpec:
    placements = tuple(
        Placement(name=p["name"], xy=tuple(p["xy"]), slot=p.get("slot"),
                  support=p.get("support"), container=p.get("container"))
        for p in lay["placements"])
    return LayoutSpec(key=key, paper_name=lay["paper_name"], levels=tuple(lay["levels"]),
                      note=lay["note"], placements=placements)


# ----------------------------------------------------------------------------- sampling


def sample_layout(scene: SceneSpec, layout: str, seed: int,
                  table_z: float | None = None) -> dict[str, np.ndarray]:
    """Jittered spawn centre (x, y, z) of every body the layout places, in placement order.

    Bodies on the table draw their jitter from one RandomState(seed) in placement order. Scene 4
    then drops in-bowl objects at the bowl's xy and stacks objects on their support's xy, as the
    benchmark does after settling; here the support's spawn pose stands in for its settled pose,
    and the bowl rim is its lower bound (table + 0.02) because the mesh size is unknown.
    """
    lay = scene.layout(layout)
    table_z = scene.table_z if table_z is None else table_z
    rng = np.random.RandomState(seed)
    positions: dict[str, np.ndarray] = {}
    for p in lay.placements:
        if p.on_table:
            positions[p.name] = _table_position(scene, p, rng, table_z)
    for p in lay.placements:
        if p.container is not None:
            positions[p.name] = _in_container_position(scene, p, positions, table_z)
    for p in _support_first(lay.placements):
        positions[p.name] = _stacked_position(scene, p, positions)
    return {p.name: positions[p.name] for p in lay.placements}


def _table_position(scene: SceneSpec, p: Placement, rng: np.random.RandomState,
                    table_z: float) -> np.ndarray:
    xy = np.asarray(p.xy, dtype=float)
    rule = scene.jitter.get(p.name)
    if rule is not None:
        xy = xy + rule.draw(rng)
    return np.array([xy[0], xy[1], scene.body(p.name).spawn_z(table_z)])


def _in_container_position(scene: SceneSpec, p: Placement, positions: dict,
                           table_z: float) -> np.ndarray:
    spawn = scene.extras["spawn"]
    rim_z = table_z + spawn["bowl_rim_z_min_above_table"]  # lower bound of the mesh rim
    z = rim_z + scene.objects[p.name].half_z + spawn["bowl_drop_margin"]
    bowl = positions[p.container]
    return np.array([bowl[0], bowl[1], z])


def _stacked_position(scene: SceneSpec, p: Placement, positions: dict) -> np.ndarray:
    base = positions[p.support]
    gap = scene.extras["spawn"]["stack_gap"]
    z = base[2] + scene.objects[p.support].half_z + scene.objects[p.name].half_z + gap
    return np.array([base[0], base[1], z])


def _support_first(placements: tuple[Placement, ...]) -> list[Placement]:
    """Stacked placements ordered so every support is placed before what sits on it."""
    stacked = [p for p in placements if p.support is not None]
    placed = {p.name for p in placements if p.support is None}
    ordered: list[Placement] = []
    while stacked:
        ready = [p for p in stacked if p.support in placed]
        if not ready:
            raise ValueError(f"unresolvable supports: {[p.name for p in stacked]}")
        ordered += ready
        placed |= {p.name for p in ready}
        stacked = [p for p in stacked if p not in ready]
    return ordered
