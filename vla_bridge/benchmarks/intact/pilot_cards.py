"""Real-pilot cards of INT-ACT's Scene 2 probes (``vla-bridge tasks --intact ID --card``): what
the operator puts on the table, where, with which marker, so that a real trial probes what the
sim's does, and the tracker (``robot_nodes.tracker``, markers of config/real_objects.yaml)
gives the scorer the same objects.

A probe's table is Scene 2's default layout at its nominal places (``scenes.json``; the sim
jitters them by up to 1 cm, the operator's placement does the same), with the probe's scene
edits (``scene_edits``): a LIBERO object standing where the body it replaces would (shifted
where the probe says), or added at its place. Positions are the centre of each object's
footprint in the table frame; sizes are the simulator's (LIBERO's collision boxes: the real
item, or a look-alike of that size).

``table_setup`` says which table a selection of probes needs: the synthetic cameras of a
fake-hardware run show one (``realsense_node``'s ``synthetic_intact``), as an operator sets up
one table at a time. Pure logic: no rclpy, no MuJoCo.
"""
from __future__ import annotations

import json

import numpy as np

from vla_bridge.benchmarks.intact import probes as intact_probes
from vla_bridge.benchmarks.intact import scene_edits

FRAME = "table frame: +x the robot's right, +y away from the robot, origin the table's centre"
#: the roles an object plays in a probe, in the card's order
ROLES = ("source", "target", "scene", "distractor")


def _sizes_cm(name: str, scene_spec) -> list[float] | None:
    """The simulator's full extent of a body, cm (None: unknown)."""
    from vla_bridge.embodiment.mjcf import fixture_size
    for obj in scene_spec.objects.values():
        if obj.name == name:
            return [round(100.0 * float(v), 1) for v in obj.full_size]
    if name in scene_spec.fixtures:
        return [round(100.0 * float(v), 1) for v in fixture_size(scene_spec.fixtures[name])]
    try:
        from vla_bridge.embodiment.libero_assets import load_asset
        return [round(100.0 * float(v), 1) for v in load_asset(name).size]
    except ValueError:  # LiberoAssetsMissing is one: the card still prints, without the size
        return None


def table_objects(probe) -> list[dict]:
    """The probe's table: [{name, xy_m, replaces, libero}] in the layout's order, the LIBERO
    objects after the layout's bodies they leave."""
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    spec = load_scene(probe.task.scene)
    nominal = spec.layout(probe.task.layout).nominal_xy()
    edited, removed = scene_edits.resolve(probe.task.edits, nominal)
    out = [{"name": name, "xy_m": [round(float(v), 4) for v in xy], "replaces": None,
            "libero": False} for name, xy in nominal.items() if name not in removed]
    out += [{"name": b.name, "xy_m": [round(v, 4) for v in b.xy], "replaces": b.replaces,
             "libero": True} for b in edited]
    return out


def _role(probe, entry: dict) -> str:
    if entry["name"] == probe.source_object:
        return "source"
    if entry["name"] == (probe.task.target or {}).get("target_object"):
        return "target"
    return "distractor" if entry["libero"] and not entry["replaces"] else "scene"


def card(probe_id: str, markers) -> dict:
    """The operator's card of one Scene 2 probe (a JSON-able dict): the probe, its instruction,
    the object that counts, and each object on the table with its place, size, role and
    marker; ``missing_markers`` names the objects the tracker's file has no marker for (the
    trial would fail at its begin). ``markers``: the tracker's objects file as loaded
    (``robot_nodes.tracker.tracker.TrackerConfig``: its ``objects``, each with ``name``,
    ``id``, ``marker_length`` and ``center_offset``)."""
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    probe = intact_probes.probe(probe_id)
    by_name = {o.name: o for o in markers.objects.values()}
    spec = load_scene(probe.task.scene)
    objects = []
    for entry in table_objects(probe):
        tracked = by_name.get(entry["name"])
        xy = entry["xy_m"]
        objects.append({**entry, "xy_cm": [round(100.0 * v, 1) for v in xy],
                        "size_cm": _sizes_cm(entry["name"], spec),
                        "role": _role(probe, entry),
                        "marker": None if tracked is None else {
                            "id": tracked.id, "length_mm": round(1000.0 * tracked.marker_length),
                            "beside": bool(np.hypot(*tracked.center_offset[:2]) > 1e-6),
                            "offset_cm": [round(100.0 * float(v), 1)
                                          for v in tracked.center_offset]}})
    objects.sort(key=lambda o: ROLES.index(o["role"]))
    task = probe.task
    return {"probe": probe.id, "category": probe.category, "subcategory": probe.subcategory,
            "base": probe.base, "scene": task.scene, "layout": task.layout,
            "instruction": task.instruction, "arm": task.arm, "action": task.action,
            "source": probe.source_object,
            "target": (task.target or {}).get("target_object"), "note": probe.note,
            "frame": FRAME, "objects": objects,
            "missing_markers": [o["name"] for o in objects if o["marker"] is None],
            "steps": _steps(probe, objects)}


def _where(o: dict) -> str:
    x, y = o["xy_cm"]
    size = (" ({:g} x {:g} x {:g} cm)".format(*o["size_cm"]) if o["size_cm"] else "")
    return f"{o['name']}{size} at ({x:+.1f}, {y:+.1f}) cm"


def _marker_words(o: dict) -> str:
    m = o["marker"]
    if m is None:
        return f"{o['name']}: NO MARKER in the tracker's objects file: add one before the trial"
    if m["beside"]:
        dx, dy = (0.0 - v for v in m["offset_cm"][:2])  # 0.0 - : no "-0.0"
        return (f"{o['name']}: marker {m['id']} ({m['length_mm']} mm) on a card lying on the "
                f"table, taped to the bowl, its centre at ({dx:+.1f}, {dy:+.1f}) cm from the "
                "bowl's centre")
    return f"{o['name']}: marker {m['id']} ({m['length_mm']} mm) on its top face, printed side up"


def _steps(probe, objects: list[dict]) -> list[str]:
    layout = [o for o in objects if not o["libero"]]
    libero = [o for o in objects if o["libero"]]
    steps = [f"Set up {probe.task.scene}'s {probe.task.layout} layout: "
             + "; ".join(_where(o) for o in layout) + "."]
    for o in libero:
        if o["replaces"]:
            steps.append(f"Leave {o['replaces']} out; stand {_where(o)} in its place (LIBERO's "
                         "item, or a look-alike of its size).")
        else:
            steps.append(f"Add {_where(o)} (LIBERO's item, or a look-alike of its size); it "
                         "is not part of the task.")
    steps.append("Markers, top edge away from the robot: "
                 + "; ".join(_marker_words(o) for o in objects) + ".")
    steps.append("Check the tracker sees them all before the trial (the begin fails, naming "
                 "the object, when the source or target is not tracked).")
    steps.append(f"Run the trial: `vla-bridge launch robofollow_real --intact {probe.id} "
                 "--policy ...`; the policy gets the instruction, the operator says nothing.")
    return steps


def card_text(c: dict) -> str:
    """The printed card."""
    lines = [f"INT-ACT probe card: {c['probe']} ({c['category']} / {c['subcategory']}; "
             f"varies {c['base']})",
             f"  instruction: \"{c['instruction']}\"",
             f"  {c['arm']} arm, {c['action']}; the source that counts: {c['source']}"
             + (f"; target {c['target']}" if c["target"] else "")]
    if c["note"]:
        lines.append(f"  note: {c['note']}")
    lines.append(f"  ({c['frame']})")
    lines.append("Before the trial:")
    lines += [f"  {i}. {step}" for i, step in enumerate(c["steps"], 1)]
    return "\n".join(lines) + "\n"


def setup_key(probe) -> tuple:
    """What the table of a probe is: the scene, layout and scene edits."""
    return (probe.task.scene, probe.task.layout,
            json.dumps(scene_edits.check(probe.task.edits), sort_keys=True))


def table_setup(spec: str) -> tuple[str, str, dict]:
    """(scene, layout, edits) of the one table the probes of an ``--intact`` selection share;
    ValueError naming the groups when they need more than one."""
    chosen = intact_probes.select_spec(spec)
    groups: dict[tuple, list[str]] = {}
    for p in chosen:
        groups.setdefault(setup_key(p), []).append(p.id)
    if len(groups) > 1:
        first = [ids[0] for ids in groups.values()][:3]
        raise ValueError(f"--intact {spec!r} needs {len(groups)} different tables (the probes "
                         f"{', '.join(first)}{', ...' if len(groups) > 3 else ''} each need "
                         "another); "
                         "synthetic cameras show one: run one table's probes at a time "
                         "(`vla-bridge tasks --intact ... --card` shows each table)")
    scene, layout, edits = next(iter(groups))
    return scene, layout, json.loads(edits)
