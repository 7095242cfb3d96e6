"""The cue vocabulary every family shares, and the one registry the families join.

Types (``AnchorRef``, ``Anchor2D``, ``GhostLayer``, ``CueSpec``, ``CueContext``, ``Family``), the
insertion modes, the registry (``register_family``, ``family``, ``list_variants``, ``draw``,
``FAMILIES``), ``region_to_pixels`` for fixed regions and ``task_text`` (the text a cue conveys).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "SCENE_ANCHORED", "FIXED_REGION", "STATE_OVERLAY", "INSERTION_MODES", "AnchorRef", "Anchor2D",
    "GhostLayer", "CueSpec", "CueContext", "Family", "FAMILIES", "register_family", "family",
    "list_variants", "draw", "region_to_pixels", "task_text",
]

SCENE_ANCHORED = "scene_anchored"
FIXED_REGION = "fixed_region"
STATE_OVERLAY = "state_overlay"
INSERTION_MODES = (SCENE_ANCHORED, FIXED_REGION, STATE_OVERLAY)


# ----------------------------------------------------------------------------- data types

@dataclass(frozen=True)
class AnchorRef:
    """A 3D anchor: a world object (by name; "tcp:left" for a tool centre point) or a point.

    ``offset`` is added in the world frame (e.g. the placement point "behind" the target).
    ``radius_m`` sets the anchor's apparent size; ``outline`` asks for the projected outline of
    the object's box (highlights, boxes), or of a box of ``box_size`` turned by ``box_quat``
    (w, x, y, z) at the anchor (an object's final pose); ``ground_radius_m`` projects a
    horizontal circle around the anchor (target regions on the table).
    """
    entity: str | None = None
    point: tuple[float, float, float] | None = None
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius_m: float | None = None
    outline: bool = False
    ground_radius_m: float | None = None
    box_size: tuple[float, float, float] | None = None
    box_quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)


@dataclass
class Anchor2D:
    """An anchor projected into one image (pixel-index coordinates)."""
    uv: np.ndarray  # (2,) float
    radius_px: float = 8.0
    depth: float = 1.0
    outline: np.ndarray | None = None  # (M, 2) convex outline of the object
    region: np.ndarray | None = None  # (M, 2) projected ground circle

    @property
    def pt(self) -> tuple[int, int]:
        return int(round(self.uv[0])), int(round(self.uv[1]))


@dataclass
class GhostLayer:
    """One future-state foreground layer G_i: an RGB image and its soft mask in [0, 1]."""
    image: np.ndarray  # (H, W, 3) uint8
    mask: np.ndarray  # (H, W) float32 in [0, 1] (bool accepted)
    alpha: float | None = None  # overrides the variant's opacity schedule


@dataclass
class CueSpec:
    """C = (e_src, e_tgt, r_task, f_cue, v_cue, m_insert, phi)  (LIBERO-VIFO eq. 2).

    ``task`` carries e_src / e_tgt / r_task (a ``GroundedTask`` or ``ParsedTask``),
    ``family`` / ``variant`` are f_cue / v_cue, ``insertion`` is m_insert (None: the family's
    default) and ``params`` is phi. ``anchors`` (role -> AnchorRef; roles "source", "target",
    "target_object", "step1", ...) are used by scene-anchored cues, ``region`` (normalised
    x/W, y/H, w/W, h/H) by fixed-region cues (None: the family's default region).
    """
    family: str
    variant: str
    params: dict = field(default_factory=dict)
    anchors: dict[str, AnchorRef] = field(default_factory=dict)
    region: tuple[float, float, float, float] | None = None
    insertion: str | None = None
    task: object = None

    @property
    def code(self) -> str:
        return family(self.family).code

    @property
    def mode(self) -> str:
        return self.insertion or family(self.family).default_insertion

    @property
    def box(self) -> tuple[float, float, float, float]:
        f = family(self.family)
        return self.region or f.default_regions.get(self.variant) or f.default_regions["*"]


@dataclass
class CueContext:
    anchors: dict[str, Anchor2D | None] = field(default_factory=dict)
    layers: list[GhostLayer] = field(default_factory=list)
    frame_index: int = 0

    def get(self, role: str) -> Anchor2D | None:
        return self.anchors.get(role)


@dataclass(frozen=True)
class Family:
    code: str  # "F1"
    name: str  # "text"
    title: str
    default_insertion: str
    variants: dict[str, str]  # variant -> one-line description
    draw: Callable[[np.ndarray, CueSpec, CueContext], None]  # draws in place on a copy
    default_regions: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)


# ----------------------------------------------------------------------------- registry

FAMILIES: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}


def register_family(fam: Family) -> Family:
    FAMILIES[fam.code] = fam
    for key in (fam.code, fam.code.lower(), fam.name, fam.title.lower()):
        _ALIASES[key] = fam.code
    return fam


def family(key: str) -> Family:
    code = _ALIASES.get(key) or _ALIASES.get(str(key).lower())
    if code is None:
        raise ValueError(f"unknown cue family {key!r}; valid: "
                         + ", ".join(f"{f.code} ({f.name})" for f in FAMILIES.values()))
    return FAMILIES[code]


def list_variants() -> dict[str, list[str]]:
    return {f"{f.code} {f.name}": list(f.variants) for f in FAMILIES.values()}


def draw(image: np.ndarray, cue: CueSpec, context: CueContext | None = None) -> np.ndarray:
    """Draw ``cue`` on a copy of ``image`` (H, W, 3 uint8 RGB) and return it."""
    fam = family(cue.family)
    if cue.variant not in fam.variants:
        raise ValueError(f"unknown variant {cue.variant!r} for {fam.code} {fam.name}; valid: "
                         + ", ".join(fam.variants))
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"image must be (H, W, 3) uint8, got {img.shape} {img.dtype}")
    out = np.ascontiguousarray(img).copy()
    fam.draw(out, cue, context or CueContext())
    return out


# ----------------------------------------------------------------------------- cue helpers

def region_to_pixels(box, width: int, height: int) -> tuple[int, int, int, int]:
    """Normalised (x/W, y/H, w/W, h/H) -> integer pixel box (x0, y0, x1, y1), x1/y1 exclusive."""
    x, y, w, h = (float(v) for v in box)
    if w <= 0 or h <= 0:
        raise ValueError(f"region {box} has no area")
    x0 = int(np.clip(round(x * width), 0, width - 1))
    y0 = int(np.clip(round(y * height), 0, height - 1))
    x1 = int(np.clip(round((x + w) * width), x0 + 1, width))
    y1 = int(np.clip(round((y + h) * height), y0 + 1, height))
    return x0, y0, x1, y1


def task_text(cue: CueSpec) -> str:
    """The text a cue conveys: ``params['text']``, else the task's instruction."""
    if "text" in cue.params:
        return str(cue.params["text"])
    task = cue.task
    parsed = getattr(task, "parsed", task)
    if parsed is not None and hasattr(parsed, "instruction"):
        return parsed.instruction.strip()
    raise ValueError("text cue needs params['text'] or a task")
