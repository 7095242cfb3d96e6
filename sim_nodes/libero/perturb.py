"""The scene perturbation axes (`benchmarks.perturbations`) on a LIBERO environment.

`LiberoBackend.reset` calls these after LIBERO's (hard) reset and before it restores the
initial state, so that state's first observation already shows them:

* ``camera``: LIBERO's ``agentview`` (the contract's ``cam_high``) is moved in the model
  (``cam_pos`` by the shift, ``cam_quat`` turned: q_new = turn * q, both in the world frame;
  turned into the camera's body frame when it rides on a body: in LIBERO's scenes it is
  fixed to the world body);
* ``lighting``: every light's diffuse colour (and the headlight's ambient and diffuse) times
  the gain, clipped to [0, 1], every light moved by the shift;
* ``texture``: the surface's material shows another texture of the scene (``mat_texid``,
  MuJoCo 3's RGB role): ``SURFACES`` names each LIBERO scene's table and floor materials;
  the candidates are the scene's own textures (not the skybox, not a task object's or
  fixture's, not one that looks the same as the surface's: LIBERO's table legs use the table's
  image), sorted by name. The renderer uploaded every texture when it was made, so nothing is
  uploaded, but it keeps its own copy of the materials' texture ids, which is updated too;
* ``initial_joints``: the Panda's 7 arm joints start at the initial state's positions plus
  the offsets (clipped to the joint ranges); the OSC controller's goal becomes that start's
  end-effector pose and its null-space target moves by the offsets, so idle steps hold the
  perturbed arm (`hold_start`);
* ``object_jitter``: every task object with a free joint (``objects_dict``; fixtures such as
  cabinets, stoves and racks stay) is moved in x/y by its offset; one that would then overlap
  another object or a fixture gets 3/4, 1/2, 1/4 of it or stays (`_jitter`: LIBERO's objects
  stand a few cm apart, and an overlap makes the settle steps throw them across the table).

LIBERO's reset rebuilds the model, so a perturbation never outlives its episode; `restore`
puts back the values as the model compiled them all the same (an environment reused without a
hard reset gives the unperturbed scene again).
"""
from __future__ import annotations

import mujoco
import numpy as np

from vla_bridge.benchmarks.perturbations import quat_multiply

AXES = frozenset({"camera", "lighting", "texture", "initial_joints", "object_jitter"})
MODEL_AXES = frozenset({"camera", "lighting", "texture"})
ARM_JOINTS = 7  # the Panda's
#: object_jitter: the parts of an object's offset tried in turn, the first that overlaps
#: nothing more than OVERLAP_M deeper than before is kept (`_jitter`)
JITTER_BACKOFF = (1.0, 0.75, 0.5, 0.25, 0.0)
OVERLAP_M = 0.0002
#: LIBERO scene (the problem class) -> {surface: its material}. In the floor scene
#: (libero_object) the objects stand on the floor: its "table" is the floor and its background
#: ("floor") the walls.
SURFACES = {
    "Libero_Tabletop_Manipulation": {"table": "table_texture", "floor": "floorplane"},
    "Libero_Kitchen_Tabletop_Manipulation": {"table": "table_texture", "floor": "floorplane"},
    "Libero_Living_Room_Tabletop_Manipulation": {"table": "living_room_table",
                                                 "floor": "floorplane"},
    "Libero_Study_Tabletop_Manipulation": {"table": "desk", "floor": "floorplane"},
    "Libero_Coffee_Table_Manipulation": {"table": "short_coffee_table", "floor": "floorplane"},
    "Libero_Floor_Manipulation": {"table": "floorplane", "floor": "walls_mat"},
}
_RGB = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)
_SKYBOX = int(mujoco.mjtTexture.mjTEXTURE_SKYBOX)


def snapshot(model: mujoco.MjModel) -> dict:
    """What a perturbation changes, as the model has it now (before any perturbation)."""
    return {"cam_pos": model.cam_pos.copy(), "cam_quat": model.cam_quat.copy(),
            "light_pos": model.light_pos.copy(), "light_diffuse": model.light_diffuse.copy(),
            "headlight": (model.vis.headlight.ambient.copy(),
                          model.vis.headlight.diffuse.copy()),
            "mat_texid": model.mat_texid.copy()}


def restore(sim, base: dict) -> None:
    """Put back the values `snapshot` took, in the model and its renderer."""
    model = sim.model._model
    model.cam_pos[:], model.cam_quat[:] = base["cam_pos"], base["cam_quat"]
    model.light_pos[:], model.light_diffuse[:] = base["light_pos"], base["light_diffuse"]
    model.vis.headlight.ambient[:], model.vis.headlight.diffuse[:] = base["headlight"]
    model.mat_texid[:] = base["mat_texid"]
    _sync_renderer(sim)


def _sync_renderer(sim) -> None:
    """The render context keeps its own copy of the materials' textures (mujoco 3's
    ``mjrContext.mat_texid``, taken when it was made): give it the model's."""
    ctx = getattr(sim, "_render_context_offscreen", None)
    if ctx is not None:
        texid = sim.model._model.mat_texid.reshape(-1)
        ctx.con.mat_texid[:texid.size] = texid


def perturb_model(env, camera: str, perturbation, base: dict) -> None:
    """The camera, lighting or texture axis on `env`'s (LIBERO's problem env) model, from the
    unperturbed values `base` (the initial state's restoring forwards: the cameras' and
    lights' poses follow)."""
    sim = env.sim
    m, d = sim.model._model, sim.data._data
    axis = perturbation.axis
    if axis == "camera":
        cam = m.camera(camera).id
        shift, turn = perturbation.camera_offset()
        body_q = np.array(d.xquat[m.cam_bodyid[cam]], float)
        m.cam_pos[cam] = base["cam_pos"][cam] + _to_body(body_q, shift)
        local_turn = quat_multiply(quat_multiply(_conj(body_q), turn), body_q)
        q = quat_multiply(local_turn, base["cam_quat"][cam])
        m.cam_quat[cam] = q / np.linalg.norm(q)
    elif axis == "lighting":
        gain, shift = perturbation.light_change()
        for light in range(m.nlight):
            body_q = np.array(d.xquat[m.light_bodyid[light]], float)
            m.light_pos[light] = base["light_pos"][light] + _to_body(body_q, shift)
        m.light_diffuse[:] = np.clip(base["light_diffuse"] * gain, 0.0, 1.0)
        if m.vis.headlight.active:
            ambient, diffuse = base["headlight"]
            m.vis.headlight.ambient[:] = np.clip(ambient * gain, 0.0, 1.0)
            m.vis.headlight.diffuse[:] = np.clip(diffuse * gain, 0.0, 1.0)
    elif axis == "texture":
        for surface in perturbation.texture_surfaces():
            mat = surface_material(env, surface)
            own = int(base["mat_texid"][mat, _RGB])
            candidates = texture_candidates(env, own)
            pick = candidates[perturbation.texture_choice(surface, len(candidates))]
            m.mat_texid[mat, _RGB] = pick
        _sync_renderer(sim)


def surface_material(env, surface: str) -> int:
    """The material id of `surface` ("table" or "floor") in `env`'s LIBERO scene, else
    ValueError naming the scene."""
    scene = type(env).__name__
    m = env.sim.model._model
    name = SURFACES.get(scene, {}).get(surface)
    if name is None:
        raise ValueError(f"the texture perturbation knows no {surface} in the LIBERO scene "
                         f"{scene} (it knows {sorted(SURFACES)})")
    mat = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_MATERIAL, name)
    if mat < 0 or not np.any(m.geom_matid == mat) or m.mat_texid[mat, _RGB] < 0:
        raise ValueError(f"the LIBERO scene {scene} has no textured {surface} (material "
                         f"{name!r} is not on any geom or has no texture)")
    return mat


def texture_candidates(env, own: int) -> list[int]:
    """The textures a surface whose texture is `own` may get: the scene's (the skybox and the
    task objects' and fixtures' own left out), none looking like `own` or like an earlier
    one, sorted by name."""
    m = env.sim.model._model
    owners = tuple(f"{name}_" for name in [*env.objects_dict, *env.fixtures_dict])
    named = []
    for tex in range(m.ntex):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_TEXTURE, tex)
        if name and int(m.tex_type[tex]) != _SKYBOX and not name.startswith(owners):
            named.append((name, tex))
    out, seen = [], [_texture_key(m, own)]
    for _, tex in sorted(named):
        key = _texture_key(m, tex)
        if key not in seen:
            seen.append(key)
            out.append(tex)
    return out


def _texture_key(m, tex: int) -> tuple:
    """What a texture looks like: its type, size and pixels."""
    w, h, c = int(m.tex_width[tex]), int(m.tex_height[tex]), int(m.tex_nchannel[tex])
    adr = int(m.tex_adr[tex])
    return int(m.tex_type[tex]), w, h, c, bytes(m.tex_data[adr:adr + w * h * c])


def perturb_state(env, state: np.ndarray, perturbation) -> np.ndarray:
    """A copy of the flattened initial state (time, qpos, qvel) with the initial_joints or
    object_jitter axis applied (any other axis: `state` itself)."""
    axis = perturbation.axis
    if axis not in ("initial_joints", "object_jitter"):
        return state
    m = env.sim.model._model
    out = np.array(state, float, copy=True)
    qpos = out[1:1 + m.nq]  # a view into out
    if axis == "initial_joints":
        joints = arm_qpos_indexes(env)
        q = qpos[joints] + perturbation.joint_offsets(len(joints))
        for k, idx in enumerate(joints):
            jnt = _qpos_joint(m, idx)
            if jnt is not None and m.jnt_limited[jnt]:
                q[k] = np.clip(q[k], *m.jnt_range[jnt])
        qpos[joints] = q
    else:
        free = free_objects(env)
        _jitter(m, qpos, free, perturbation.object_offsets(list(free)))
    return out


def _jitter(m, qpos: np.ndarray, free: dict[str, int], offsets: dict) -> None:
    """Shift each object (in name order) by its offset, or by the largest of JITTER_BACKOFF
    of it that pushes it no deeper into anything (another object, a fixture) than it was:
    LIBERO's objects stand a few cm apart, and an overlap would make the settle steps throw
    them across the table."""
    scratch = mujoco.MjData(m)

    def depths(name: str) -> dict[int, float]:  # other root body -> deepest contact
        scratch.qpos[:] = qpos
        mujoco.mj_fwdPosition(m, scratch)
        root, out = m.body_rootid[m.jnt_bodyid[_free_joint(m, free[name])]], {}
        for c in scratch.contact[:scratch.ncon]:
            a, b = (int(m.body_rootid[m.geom_bodyid[g]]) for g in (c.geom1, c.geom2))
            if root in (a, b) and a != b:
                other = b if a == root else a
                out[other] = min(out.get(other, 0.0), float(c.dist))
        return out

    for name in sorted(offsets):
        adr, before = free[name], depths(name)
        x, y = qpos[adr], qpos[adr + 1]
        for scale in JITTER_BACKOFF:
            qpos[adr], qpos[adr + 1] = x + scale * offsets[name][0], y + scale * offsets[name][1]
            after = depths(name)
            if all(d >= min(before.get(o, 0.0), 0.0) - OVERLAP_M for o, d in after.items()):
                break


def hold_start(env, state: np.ndarray, perturbed: np.ndarray) -> None:
    """After an initial_joints start (restored): the OSC controller holds it. Its goal becomes
    the perturbed end-effector pose (robosuite's OSC keeps its orientation goal while the
    rotation deltas are zero, so an idle action would turn the hand back to the reset's), and
    its null-space target moves by the joints' offsets (else it pulls the elbow back)."""
    joints = arm_qpos_indexes(env)
    offsets = perturbed[1:][joints] - np.asarray(state, float)[1:][joints]
    controller = env.robots[0].controller
    controller.update(force=True)
    controller.initial_joint = np.asarray(controller.initial_joint, float) + offsets
    controller.reset_goal()
    controller.new_update = True


def arm_qpos_indexes(env) -> list[int]:
    joints = [int(i) for i in env.robots[0]._ref_joint_pos_indexes]
    if len(joints) != ARM_JOINTS:
        raise ValueError(f"initial_joints expects the Panda's {ARM_JOINTS} arm joints, the "
                         f"robot has {len(joints)}")
    return joints


def free_objects(env) -> dict[str, int]:
    """{task object name: qpos address of its free joint} (objects without one stay)."""
    m = env.sim.model._model
    out = {}
    for name in env.objects_dict:
        body = env.obj_body_id.get(name)
        if body is None or m.body_jntnum[body] < 1:
            continue
        jnt = int(m.body_jntadr[body])
        if m.jnt_type[jnt] == mujoco.mjtJoint.mjJNT_FREE:
            out[name] = int(m.jnt_qposadr[jnt])
    return out


def _free_joint(m, qpos_adr: int) -> int:
    return next(j for j in range(m.njnt) if m.jnt_qposadr[j] == qpos_adr
                and m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)


def _qpos_joint(m, idx: int):
    for jnt in range(m.njnt):
        if m.jnt_qposadr[jnt] == idx and m.jnt_type[jnt] in (mujoco.mjtJoint.mjJNT_HINGE,
                                                             mujoco.mjtJoint.mjJNT_SLIDE):
            return jnt
    return None


def _conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], float)


def _to_body(body_quat, vec) -> np.ndarray:
    """A world-frame vector in the frame of a body whose world orientation is `body_quat`."""
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, np.asarray(body_quat, float))
    return rot.reshape(3, 3).T @ np.asarray(vec, float)
