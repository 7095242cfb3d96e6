"""What the Part I-A options call objects: what a viewer sees, never an internal name.

``describe_objects(world, camera)`` names every object in the camera's view by its size,
colour and kind ("the large red cylinder"; from the words of its name that describe its look,
else its colour and primitive shape), leaving out the name's index and state words
("yellow_block_2", "blue_cube_right", "red_cube_in_bowl"). Objects that would get the same name
are told apart by where they appear in the image relative to each other: "on the left", "on
the right", "at the top", "at the bottom", then the corners ("at the top left"), then "second
from the left". A position word is used only when the object is farther that way than every
look-alike by ``MARGIN`` of the image width; an object that no word singles out (look-alikes
nearly on top of each other in the image) gets no description, and the questions leave it out.
Pure logic (numpy).
"""
from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from vla_bridge.benchmarks.vifo.instructions.grounding import color_name
from vla_bridge.benchmarks.vifo.instructions.parser import COLORS, NOUN_SHAPES
from vla_bridge.benchmarks.vifo.projection import project_points

__all__ = ["MARGIN", "look", "describe_objects"]

#: how much farther (fraction of the image width) an object must be than its look-alikes
MARGIN = 0.04
_SIZES = ("large", "small", "big", "tiny")
_NOUNS = (*NOUN_SHAPES, "bowl", "label", "plate", "basket", "tray", "drawer")
_SHAPE_NOUNS = {"box": "block", "sphere": "ball", "cylinder": "cylinder"}
_STOP = ("in", "on", "inside", "under", "of")  # "red_cube_in_bowl": the look ends at "in"
_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def look(name: str, obj) -> str:
    """Size, colour and kind of an object: "large red cylinder", "yellow block"."""
    words = [w for w in re.split(r"[_\-\s\d]+", name.lower()) if w]
    stop = next((i for i, w in enumerate(words) if i and w in _STOP), len(words))
    words = words[:stop]
    colour = next((w for w in words if w in COLORS), None)
    if colour is None and getattr(obj, "rgba", None) is not None:
        colour = color_name(obj.rgba)
    size = next((w for w in words if w in _SIZES), None)
    noun = next((w for w in reversed(words) if w in _NOUNS), None)
    noun = noun or _SHAPE_NOUNS.get(getattr(obj, "shape", ""), "object")
    return " ".join(w for w in (size, colour, noun) if w)


def _extreme(pts: np.ndarray, i: int, axis: np.ndarray, margin: float) -> bool:
    """Whether point i is farther along ``axis`` than every other point by ``margin``."""
    proj = pts @ axis
    others = np.delete(proj, i)
    return bool(proj[i] - margin > others.max())


_DIRECTIONS = (("on the left", (-1, 0)), ("on the right", (1, 0)), ("at the top", (0, -1)),
               ("at the bottom", (0, 1)), ("at the top left", (-1, -1)),
               ("at the top right", (1, -1)), ("at the bottom left", (-1, 1)),
               ("at the bottom right", (1, 1)))


def _ordinal(pts: np.ndarray, i: int, margin: float) -> str | None:
    """ "second from the left" when the horizontal order around point i is clear."""
    order = np.argsort(pts[:, 0])
    rank = int(np.nonzero(order == i)[0][0])
    u = pts[order, 0]
    gaps = np.diff(u)
    if len(pts) < 3 or rank >= len(_ORDINALS) or not np.all(gaps > margin):
        return None
    return f"{_ORDINALS[rank]} from the left"


def _position(pts: np.ndarray, i: int, margin: float) -> str | None:
    """The first position word that singles out point i among its look-alikes (or None)."""
    for words, d in _DIRECTIONS:
        axis = np.asarray(d, float) / np.hypot(*d)
        if _extreme(pts, i, axis, margin):
            return words
    return _ordinal(pts, i, margin)


def describe_objects(world, camera, margin: float = MARGIN,
                     looks: Mapping[str, str] | None = None) -> dict[str, str]:
    """{object name: "the <look>[ <position>]"} for every object in the camera's view whose
    description is unique; objects out of view or not singled out are left out. ``looks``
    gives an object's look where its name does not say it (LIBERO's "cream_cheese_1")."""
    looks = looks or {}
    objects: Mapping = getattr(world, "objects", world) or {}
    names = list(objects)
    if not names:
        return {}
    proj = project_points(camera, np.array([objects[n].pos for n in names], float))
    seen = [n for n, v in zip(names, proj.visible) if v]
    uv = {n: proj.uv[names.index(n)] for n in seen}
    groups: dict[str, list[str]] = {}
    for n in seen:
        groups.setdefault(looks.get(n) or look(n, objects[n]), []).append(n)
    out = {}
    for kind, members in groups.items():
        if len(members) == 1:
            out[members[0]] = f"the {kind}"
            continue
        pts = np.array([uv[n] for n in members])
        for i, n in enumerate(members):
            where = _position(pts, i, margin * camera.width)
            if where is not None:
                out[n] = f"the {kind} {where}"
    return out
