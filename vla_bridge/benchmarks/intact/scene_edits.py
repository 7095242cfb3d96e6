"""A probe's scene edits on a RoboFollow layout: LIBERO objects that replace a layout body
(an out-of-distribution source or target) or join the scene (distractors, look-alikes).

``TaskSpec.edits`` holds them as plain data (they travel in the begin's task):

* ``"replace": {layout body: LIBERO object}`` or ``{layout body: [LIBERO object, dx, dy]}``:
  the body leaves the scene and the LIBERO object stands where it would have stood (its
  jittered place, shifted by (dx, dy) m where a wider object needs room);
* ``"add": [[LIBERO object, x, y], ...]``: the object stands at (x, y) in the table frame.

Each LIBERO object becomes a free body named after it (``chocolate_pudding``), at LIBERO's
size (``embodiment.libero_assets``). ``resolve`` turns the edits and a layout's spawn points
into what the simulator builds; ``footprints`` gives the edited layout's footprints for the
probe suite's overlap check and the operator's card. Pure logic, no rclpy, no MuJoCo.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EditedBody:
    """One LIBERO object of a probe: its body name, the LIBERO object, its xy, and the layout
    body it replaces (None: added)."""
    name: str
    asset: str
    xy: tuple[float, float]
    replaces: str | None = None


def check(edits: dict | None, curated=None) -> dict:
    """``edits`` in their canonical form ({"replace": {...}, "add": [...]}), ValueError with
    one line on anything malformed (a begin's task is untrusted input). ``curated``: the
    LIBERO object names allowed (None: any name)."""
    if not edits:
        return {}
    if not isinstance(edits, dict) or set(edits) - {"replace", "add"}:
        raise ValueError(f"scene edits must be {{'replace': {{...}}, 'add': [...]}}, got {edits!r}")
    replace, add = {}, []
    if not isinstance(edits.get("replace") or {}, dict):
        raise ValueError("scene edits' replace must map a body to a LIBERO object "
                         f"({{'small_red_cube': 'chocolate_pudding'}}), got {edits['replace']!r}")
    if not isinstance(edits.get("add") or [], (list, tuple)):
        raise ValueError("scene edits' add must be a list of [LIBERO object, x, y], got "
                         f"{edits['add']!r}")
    for old, new in (edits.get("replace") or {}).items():
        name, dx, dy = (new, 0.0, 0.0) if isinstance(new, str) else _triple(new, "replace")
        replace[str(old)] = [name, dx, dy]
    for entry in edits.get("add") or []:
        add.append(list(_triple(entry, "add")))
    names = [n for n, *_ in replace.values()] + [n for n, *_ in add]
    if curated is not None:
        unknown = sorted(set(names) - set(curated))
        if unknown:
            raise ValueError(f"scene edits name unknown LIBERO objects {unknown}; known: "
                             + ", ".join(curated))
    if len(set(names)) != len(names):
        raise ValueError(f"scene edits use a LIBERO object twice: {names}")
    return {"replace": replace, "add": add}


def _triple(entry, what: str) -> tuple[str, float, float]:
    try:
        name, a, b = entry
        out = (str(name), float(a), float(b))
    except (TypeError, ValueError):
        raise ValueError(f"scene edit {what} entry must be [LIBERO object, x, y], got {entry!r}") from None
    if not all(np.isfinite(out[1:])) or max(abs(out[1]), abs(out[2])) > 1.0:
        raise ValueError(f"scene edit {what} entry {entry!r}: x and y must be finite metres "
                         "within 1 m of the table centre")
    return out


def resolve(edits: dict | None, spawn_xy: dict[str, np.ndarray]) -> tuple[list[EditedBody], set[str]]:
    """The LIBERO bodies of ``edits`` placed against a layout's spawn points (body -> xy or
    xyz), and the layout bodies they remove. ValueError when a replaced body is not in it."""
    edits = check(edits)
    bodies, removed = [], set()
    for old, (name, dx, dy) in (edits.get("replace") or {}).items():
        if old not in spawn_xy:
            raise ValueError(f"scene edit replaces {old!r}, which this layout does not hold "
                             f"({sorted(spawn_xy)})")
        x, y = np.asarray(spawn_xy[old], float)[:2]
        bodies.append(EditedBody(name, name, (float(x + dx), float(y + dy)), old))
        removed.add(old)
    for name, x, y in edits.get("add") or []:
        bodies.append(EditedBody(name, name, (x, y)))
    return bodies, removed


def stand(edited: list[EditedBody], spawn: dict, table_z: float) -> list[tuple[str, object]]:
    """Load each edited body's LIBERO asset (LiberoAssetsMissing without them) and stand it on
    the table in ``spawn`` (body -> xyz, updated in place): [(body name, LiberoAsset)]."""
    from vla_bridge.embodiment import libero_assets
    out = []
    for body in edited:
        asset = libero_assets.load_asset(body.asset)
        out.append((body.name, asset))
        spawn[body.name] = np.array([*body.xy, asset.rest_z(table_z)])
    return out


def footprints(scene_spec, layout: str, edits: dict | None,
               asset_halves: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """[(name, centre xy, half extents xy)] of an edited layout, wide enough for any seed:
    the layout's footprints (``perturbations.layout_footprints``: grown by each body's
    jitter) less the replaced bodies, plus the LIBERO objects (a replacement grown by the
    replaced body's jitter, whose draw it inherits). ``asset_halves``: LIBERO object -> half
    extents xy."""
    from vla_bridge.benchmarks.perturbations import layout_footprints
    edits = check(edits)
    names = [p.name for p in scene_spec.layout(layout).placements]
    layout_prints = {name: (np.asarray(c, float), np.asarray(h, float))
                     for name, (c, h) in zip(names, layout_footprints(scene_spec, layout))}
    replace = edits.get("replace") or {}
    missing = sorted(set(replace) - set(layout_prints))
    if missing:
        raise ValueError(f"scene edits replace {missing}, which the layout does not hold")
    out = [(name, c, h) for name, (c, h) in layout_prints.items() if name not in replace]
    for old, (asset, dx, dy) in replace.items():
        rule = scene_spec.jitter.get(old)
        reach = (np.array([max(abs(v) for v in rule.x.bounds), max(abs(v) for v in rule.y.bounds)])
                 if rule is not None else np.zeros(2))
        out.append((asset, layout_prints[old][0] + (dx, dy),
                    np.asarray(asset_halves[asset], float)[:2] + reach))
    for asset, x, y in edits.get("add") or []:
        out.append((asset, np.array([x, y]), np.asarray(asset_halves[asset], float)[:2]))
    return out


def overlaps(prints: list[tuple[str, np.ndarray, np.ndarray]], clearance: float,
             among=None) -> list[str]:
    """The pairs of ``footprints`` closer than ``clearance`` (axis-aligned boxes), as
    "a and b"; ``among``: only pairs with at least one of these names (None: all)."""
    bad = []
    for i, (a, ca, ha) in enumerate(prints):
        for b, cb, hb in prints[i + 1:]:
            if among is not None and a not in among and b not in among:
                continue
            if np.all(np.abs(ca - cb) < ha + hb + clearance):
                bad.append(f"{a} and {b}")
    return bad
