"""Operator cards of the perturbation axes (``vla-bridge perturb card AXIS:LEVEL --seed N``): for
a real pilot trial, what the operator changes before the trial so that the real trial probes
the same thing as the sim, from the same seeded draws (``perturbations.EpisodePerturbation``:
every draw comes from the axis and the episode's seed alone).

Quantities are in the table frame (RoboFollow's world frame, ``embodiment.workcell``): +x the
robot's right, +y away from the robot, +z up.

* ``camera``: move the high camera (``cam_high``) by the drawn shift, and turn it about its
  own position by the drawn angle about the drawn axis (the sim's ``q_new = turn * q``);
* ``lighting``: set the lights to the drawn intensity (percent of the usual) and move the lamp
  by the drawn horizontal shift;
* ``texture``: cover the table (level 1), and the floor / background too (level 2), with a
  patterned cloth;
* ``initial_joints``: jog each arm to home plus the drawn offsets (``joint_offsets(12)``: left
  arm [0:6], right arm [6:12]), clipped to the joint ranges, grippers open: the sim's start
  (``perturbations.pair_start``, the one rule of both);
* ``object_jitter``: move each object of the scene's layout by its drawn x/y offset from its
  card (nominal) position;
* ``distractors``: place the drawn LIBERO objects (by their LIBERO names) at the drawn (x, y)
  on the table (the centre of each object's footprint), the scene itself as usual
  (``EpisodePerturbation.distractors``: the sim's draw; it needs LIBERO's assets installed,
  for the objects' footprints);
* ``image_noise`` / ``image_blur``: software axes the sim session applies to the camera
  images; the real graph does not apply them yet, so there is nothing for the operator to do.

Pure logic: ``card`` (a JSON-able dict), ``card_text`` (the printed card), ``axes_text``
(``vla-bridge perturb list``).
"""
from __future__ import annotations

import numpy as np

from vla_bridge import contract
from vla_bridge.benchmarks import perturbations
from vla_bridge.benchmarks.perturbations import AXES, IMAGE_AXES, EpisodePerturbation, Perturbation
from vla_bridge.embodiment.workcell import home_command

FRAME = "table frame: +x the robot's right, +y away from the robot, +z up"
SURFACE_WORDS = {"table": "the table top", "floor": "the floor and the background behind the table"}


def parse_spec(text: str) -> Perturbation:
    """``AXIS:LEVEL`` as a Perturbation, level 0 included (ValueError naming what is wrong)."""
    perturbations.parse(text)  # the axis and level checked, with its message
    axis, _, level = str(text).strip().partition(":")
    if not axis:
        raise ValueError("a card wants AXIS:LEVEL (e.g. camera:2)")
    return Perturbation(axis.strip(), int(level))


def axes_text() -> str:
    """Each axis, its levels and what a level changes (``vla-bridge perturb list``)."""
    width = max(len(a) for a in AXES)
    lines = [f"{axis:<{width}}  levels 0-{top}  "
             f"{'(software: images) ' if axis in IMAGE_AXES else ''}{description}"
             for axis, (top, description) in AXES.items()]
    return "\n".join(lines) + "\n"


def _cm(v) -> list[float]:
    return [round(100.0 * float(x), 2) for x in v]


def _deg(v) -> list[float]:
    return [round(float(np.degrees(x)), 2) for x in v]


def card(perturbation: Perturbation, seed: int, scene: str = "scene1",
         layout: str = "default") -> dict:
    """The operator's card of one axis, level and episode seed (see the module docstring):
    the axis, level, seed, the drawn quantities and the ``steps`` to take, in order."""
    p = EpisodePerturbation(perturbation, seed)
    out = {"axis": p.axis, "level": p.level, "seed": p.seed, "description": AXES[p.axis][1],
           "frame": FRAME, "software": p.axis in IMAGE_AXES}
    if p.level == 0:
        out.update(steps=["Level 0 is no change: set the trial up as usual."])
        return out
    build = {"camera": _camera, "lighting": _lighting, "texture": _texture,
             "initial_joints": _joints, "object_jitter": _objects, "distractors": _distractors,
             "image_noise": _image, "image_blur": _image}[p.axis]
    out.update(build(p, scene, layout))
    return out


def _camera(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    shift, turn = p.camera_offset()
    angle = float(np.degrees(2 * np.arccos(np.clip(turn[0], -1.0, 1.0))))
    axis = turn[1:] / max(float(np.linalg.norm(turn[1:])), 1e-12)
    dx, dy, dz = _cm(shift)
    ax, ay, az = (round(float(a), 3) for a in axis)
    rx, ry, rz = (round(angle * float(a), 2) for a in axis)
    return {"camera": perturbations.CAMERA, "shift_cm": [dx, dy, dz], "turn_deg": round(angle, 3),
            "turn_axis": [ax, ay, az], "turn_components_deg": [rx, ry, rz], "steps": [
                f"Move the high camera ({perturbations.CAMERA}) by dx {dx:+.2f} cm, "
                f"dy {dy:+.2f} cm, dz {dz:+.2f} cm.",
                f"Turn it about its own position by {angle:.2f} deg about the axis "
                f"({ax:+.3f}, {ay:+.3f}, {az:+.3f}) (right-hand rule); as turns about the "
                f"table's axes: {rx:+.2f} deg about +x, {ry:+.2f} deg about +y, {rz:+.2f} deg "
                "about +z.",
                "Leave the calibration board where it is and recalibrate the tracker "
                "(/tracker_node/calibrate) so the scoring frame stays the table's."]}


def _lighting(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    gain, shift = p.light_change()
    percent = round(100.0 * gain, 1)
    dx, dy = (round(float(v), 3) for v in shift[:2])
    verb = "Dim" if gain < 1 else "Brighten"
    return {"intensity_percent": percent, "lamp_shift_m": [dx, dy], "steps": [
        f"{verb} the lights to {percent:.0f} % of their usual intensity.",
        f"Move the lamp by dx {dx:+.3f} m, dy {dy:+.3f} m (horizontally; the sim moves every "
        "light by this)."]}


def _texture(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    surfaces = list(p.texture_surfaces())
    return {"surfaces": surfaces, "steps": [
        f"Cover {SURFACE_WORDS[s]} with a patterned cloth (not the usual surface)."
        for s in surfaces] + ["Keep the calibration board and the object markers visible."]}


def _joints(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    n = len(contract.ARM_JOINTS)
    drawn = p.joint_offsets(len(contract.ARMS) * n)
    home = home_command()
    start = perturbations.pair_start(home, p)  # the sim's start: home + offsets, clipped
    arms, steps = {}, []
    for i, arm in enumerate(contract.ARMS):
        base = i * contract.JOINTS_PER_ARM
        target, at_home = start[base:base + n], home[base:base + n]
        clipped = [j for j, d, t, h in zip(contract.ARM_JOINTS, drawn[i * n:(i + 1) * n],
                                           target, at_home) if not np.isclose(h + d, t)]
        arms[arm] = {"joints": list(contract.ARM_JOINTS), "home_deg": _deg(at_home),
                     "offset_deg": _deg(target - at_home), "target_deg": _deg(target),
                     "clipped": clipped}
        steps.append(f"Jog the {arm} arm to " + ", ".join(
            f"{j} {t:+.2f} deg" for j, t in zip(contract.ARM_JOINTS, arms[arm]["target_deg"]))
            + " (home " + ", ".join(f"{h:+.2f}" for h in arms[arm]["home_deg"]) + ")"
            + (f"; {', '.join(clipped)} {'stops' if len(clipped) == 1 else 'stop'} at the "
               "end of its range, as in the sim" if clipped else "")
            + ", gripper open.")
    steps.append("Start the trial from there (the begin does not move the arms).")
    return {"arms": arms, "steps": steps}


def _objects(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    spec = load_scene(scene)
    names = [o.name for o in spec.layout_objects(layout)]
    nominal = spec.layout(layout).nominal_xy()
    offsets = p.object_offsets(names)
    objects, steps = {}, []
    for name in names:  # in the layout's spawn order
        off = offsets[name]
        card_xy = nominal.get(name)
        entry = {"offset_cm": _cm(off)}
        if card_xy is not None:
            entry.update(card_xy_m=[round(float(v), 4) for v in card_xy],
                         target_xy_m=[round(float(v), 4) for v in np.asarray(card_xy) + off])
        objects[name] = entry
        dx, dy = entry["offset_cm"]
        steps.append(f"Move {name} by dx {dx:+.2f} cm, dy {dy:+.2f} cm from its card position"
                     + (" ({:+.3f}, {:+.3f}) m".format(*entry["card_xy_m"]) if card_xy is not None
                        else "") + ".")
    return {"scene": scene, "layout": layout, "objects": objects, "steps": steps}


def _distractors(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    from vla_bridge.embodiment.libero_assets import load_asset
    placed = p.distractors(load_scene(scene), layout)
    objects = {name: {"xy_cm": _cm(xy), "size_cm": _cm(load_asset(name).size)}
               for name, xy in placed}
    where = ", ".join(f"{name} at ({e['xy_cm'][0]:+.1f}, {e['xy_cm'][1]:+.1f})"
                      for name, e in objects.items())
    return {"scene": scene, "layout": layout, "objects": objects, "steps": [
        f"Place these objects at (x, y) cm on the table: {where} (LIBERO's objects, or "
        "look-alikes of their size; each centred on its point, standing as in the sim).",
        "Set the scene's own objects up as usual; the distractors are not part of the task."]}


def _image(p: EpisodePerturbation, scene: str, layout: str) -> dict:
    what = p.describe()
    amount = (f"Gaussian pixel noise of sigma {what['sigma']:g} (of 255)"
              if p.axis == "image_noise" else f"a Gaussian blur of sigma {what['sigma_px']:g} px")
    return {**{k: v for k, v in what.items() if k not in ("axis", "level", "seed")}, "steps": [
        f"Nothing to change in the cell: {p.axis} is a software axis, {amount} on every camera "
        "image, which the sim session applies.",
        "The real graph does not apply it yet, so a real trial at this level is the "
        "unperturbed trial."]}


def card_text(c: dict) -> str:
    """The printed card."""
    lines = [f"Operator card: {c['axis']}:{c['level']}, seed {c['seed']}",
             f"  axis: {c['description']}"]
    if c.get("scene"):
        lines.append(f"  scene {c['scene']}, layout {c['layout']}")
    if not c["software"] and c["level"]:
        lines.append(f"  ({c['frame']})")
    lines.append("Before the trial:")
    lines += [f"  {i}. {step}" for i, step in enumerate(c["steps"], 1)]
    return "\n".join(lines) + "\n"
