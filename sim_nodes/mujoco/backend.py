"""MuJoCo simulator backend: the bimanual PiPER workcell with a RoboFollow scene.

Renders offscreen on the CPU (MUJOCO_GL=egl or osmesa). One model is compiled per scene and
reused across episodes; a reset only rewrites the state, so episodes are cheap and a seed
always gives the same episode.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.kinematics import GRIPPER_OPENING_M
from vla_bridge.benchmarks.robofollow.scenes import load_scene, sample_layout
from vla_bridge.embodiment.cameras import CameraModel
from vla_bridge.sim_nodes.backend import SimBackend
from vla_bridge.benchmarks.intact import scene_edits
from vla_bridge.benchmarks.perturbations import CAMERA, pair_start, quat_multiply
from vla_bridge.embodiment import libero_assets
from vla_bridge.embodiment.mjcf import FINGER_TRAVEL, PERTURB_TEXTURES, build_mjcf, fixture_size
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.embodiment.world import ObjectState, TcpState, WorldState

os.environ.setdefault("MUJOCO_GL", "egl")
import mujoco  # noqa: E402  (MUJOCO_GL must be set before the import)

ALOHA = contract.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

DISTRACTOR_RGBA = np.array([0.6, 0.6, 0.6, 1.0])  # their world-state colour: neutral, no task's

SHAPE_NAMES = {mujoco.mjtGeom.mjGEOM_BOX: "box", mujoco.mjtGeom.mjGEOM_SPHERE: "sphere",
               mujoco.mjtGeom.mjGEOM_CYLINDER: "cylinder"}


def _cue_objects_key(cue_objects) -> tuple:
    """What makes two sets of cue cards compile to the same model (the texture by content: a
    node rewrites the same PNG path every episode)."""
    return tuple((o.name, hashlib.sha1(Path(o.texture).read_bytes()).hexdigest(), tuple(o.pos),
                  tuple(o.size), tuple(o.quat), o.free, o.mass) for o in cue_objects)


class MujocoBackend(SimBackend):
    #: scene axes this backend applies at reset (benchmarks.perturbations)
    perturbation_axes = frozenset({"camera", "lighting", "texture", "initial_joints",
                                   "object_jitter", "distractors"})
    #: reset takes a probe's scene edits (LIBERO objects: benchmarks.intact.scene_edits)
    scene_edits = True

    def __init__(self, control_period: float = 0.06, width: int = ALOHA.image_size[0],
                 height: int = ALOHA.image_size[1], timestep: float = 0.004,
                 settle_seconds: float = 0.3):
        self.control_period = control_period
        self.width, self.height = width, height
        self.timestep = timestep
        self.substeps = max(1, int(round(control_period / timestep)))
        self.settle_steps = int(round(settle_seconds / timestep))
        self._model_key: tuple | None = None
        self.model = self.data = self._renderer = None
        self._t0 = 0.0
        self._start = home_command()  # the command held at the start (initial_joints moves it)

    # ------------------------------------------------------------------ model building
    def _build(self, objects, fixtures, spawn: dict[str, np.ndarray], cue_objects=(),
               distractors=()) -> None:
        """Compile the scene; ``distractors``: [(body name, LiberoAsset)] (``_distractors``)."""
        extra = [asset.mjcf(name, spawn[name]) for name, asset in distractors]
        xml = build_mjcf(objects, spawn, timestep=self.timestep, fixtures=fixtures,
                         cue_objects=cue_objects, extra_bodies=extra)
        self._distractor_specs = list(distractors)
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        self._object_specs = list(objects)
        self._fixture_specs = list(fixtures)
        self._index_model()
        m = self.model  # what a perturbation changes, as compiled (the next reset restores it)
        self._unperturbed = {"cam_pos": m.cam_pos.copy(), "cam_quat": m.cam_quat.copy(),
                             "light_pos": m.light_pos.copy(),
                             "light_diffuse": m.light_diffuse.copy(),
                             "headlight": (m.vis.headlight.ambient.copy(),
                                           m.vis.headlight.diffuse.copy()),
                             "geom_matid": m.geom_matid.copy()}
        if self._renderer is not None:
            self._renderer.close()
        self._renderer = None

    def _index_model(self) -> None:
        m = self.model
        self._arm_qadr, self._arm_act, self._finger_qadr, self._finger_act, self._tcp_site = {}, {}, {}, {}, {}
        for arm in contract.ARMS:
            self._arm_qadr[arm] = [m.jnt_qposadr[m.joint(f"{arm}_{j}").id] for j in contract.ARM_JOINTS]
            self._arm_act[arm] = [m.actuator(f"{arm}_{j}").id for j in contract.ARM_JOINTS]
            self._finger_qadr[arm] = [m.jnt_qposadr[m.joint(f"{arm}_finger_{s}").id] for s in "ab"]
            self._finger_act[arm] = [m.actuator(f"{arm}_finger_{s}").id for s in "ab"]
            self._tcp_site[arm] = m.site(f"{arm}_tcp").id
        # name -> (body id, qpos address or None when fixed, world-state size, rgba, shape)
        self._bodies = {}
        for fx in self._fixture_specs:
            joint = m.body(fx.name).jntadr[0]
            rgba = np.append(fx.rgb if fx.rgb else (0.7, 0.7, 0.7), 1.0)
            self._bodies[fx.name] = (m.body(fx.name).id, m.jnt_qposadr[joint] if joint >= 0 else None,
                                     fixture_size(fx), rgba, "cylinder" if fx.kind == "bowl" else "box")
        for obj in self._object_specs:
            self._bodies[obj.name] = (m.body(obj.name).id, m.jnt_qposadr[m.joint(obj.name).id],
                                      np.asarray(obj.full_size, float), np.append(obj.rgb, 1.0),
                                      "box" if obj.shape == "cube" else obj.shape)
        for name, asset in self._distractor_specs:
            self._bodies[name] = (m.body(name).id, m.jnt_qposadr[m.joint(name).id],
                                  asset.size.copy(), DISTRACTOR_RGBA.copy(), "box")

    # ------------------------------------------------------------------ protocol
    def reset(self, scene: str, layout: str, seed: int, cue_objects=(),
              perturbation=None, edits=None) -> None:
        """``edits``: a probe's scene edits (``TaskSpec.edits``), LIBERO objects replacing
        layout bodies or added to the table; ValueError on a malformed or unknown one."""
        spec = load_scene(scene)
        spawn = sample_layout(spec, layout, seed)
        edited, removed = scene_edits.resolve(scene_edits.check(edits, libero_assets.NAMES),
                                              spawn)
        axis = perturbation.axis if perturbation is not None else None
        if axis == "object_jitter":  # the layout's objects only (fixtures stay as laid out)
            names = [o.name for o in spec.layout_objects(layout)]
            for name, (dx, dy) in perturbation.object_offsets(names).items():
                spawn[name] = np.asarray(spawn[name], float) + (dx, dy, 0.0)
        distractors = []  # [(body name, LiberoAsset)]: the axis's distractors, the probe's objects
        if axis == "distractors":
            for name, (x, y) in perturbation.distractors(spec, layout):
                asset = libero_assets.load_asset(name)
                distractors.append((f"distractor_{name}", asset))
                spawn[f"distractor_{name}"] = np.array([x, y, asset.rest_z(spec.table_z)])
        # LiberoAssetsMissing before anything resets
        distractors += scene_edits.stand(edited, spawn, spec.table_z)
        objects = [o for o in spec.layout_objects(layout) if o.name not in removed]
        fixtures = [spec.fixtures[name] for name in spawn
                    if name in spec.fixtures and name not in removed]
        model_key = (scene, tuple(o.name for o in objects), tuple(f.name for f in fixtures),
                     _cue_objects_key(cue_objects), tuple(name for name, _ in distractors))
        if model_key != self._model_key:  # one compiled model per scene body set (+ cue cards,
            self._build(objects, fixtures, spawn, cue_objects, distractors)  # + distractors)
            self._model_key = model_key
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        for name, (body, qadr, *_rest) in self._bodies.items():
            if qadr is None:  # a fixed fixture: its pose is compiled in
                m.body_pos[body] = spawn[name]
                continue
            d.qpos[qadr:qadr + 3] = spawn[name]
            d.qpos[qadr + 3:qadr + 7] = (1.0, 0.0, 0.0, 0.0)
        self._perturb_model(perturbation)
        self._start = start = pair_start(home_command(), perturbation)
        self._set_joint_positions(start)
        self.apply(start)
        mujoco.mj_forward(m, d)
        for _ in range(self.settle_steps):  # let objects come to rest before frame 0
            mujoco.mj_step(m, d)
        self._t0 = d.time

    def start_command(self) -> np.ndarray:
        return self._start.copy()

    def _perturb_model(self, perturbation) -> None:
        """Restore what the last episode's perturbation changed, then apply this one's camera,
        lighting or texture (benchmarks.perturbations)."""
        m, base = self.model, self._unperturbed
        m.cam_pos[:], m.cam_quat[:] = base["cam_pos"], base["cam_quat"]
        m.light_pos[:], m.light_diffuse[:] = base["light_pos"], base["light_diffuse"]
        m.vis.headlight.ambient[:], m.vis.headlight.diffuse[:] = base["headlight"]
        m.geom_matid[:] = base["geom_matid"]
        axis = perturbation.axis if perturbation is not None else None
        if axis == "camera":
            cam = m.camera(CAMERA).id
            shift, turn = perturbation.camera_offset()
            m.cam_pos[cam] = base["cam_pos"][cam] + shift
            m.cam_quat[cam] = quat_multiply(turn, base["cam_quat"][cam])
        elif axis == "lighting":
            gain, shift = perturbation.light_change()
            m.light_pos[:] = base["light_pos"] + shift
            m.light_diffuse[:] = np.clip(base["light_diffuse"] * gain, 0.0, 1.0)
            ambient, diffuse = base["headlight"]
            m.vis.headlight.ambient[:] = np.clip(ambient * gain, 0.0, 1.0)
            m.vis.headlight.diffuse[:] = np.clip(diffuse * gain, 0.0, 1.0)
        elif axis == "texture":
            for surface in perturbation.texture_surfaces():
                name = PERTURB_TEXTURES[perturbation.texture_choice(surface, len(PERTURB_TEXTURES))][0]
                m.geom_matid[m.geom(surface).id] = m.material(name).id

    def pose(self, world: WorldState, joints=None) -> None:
        """Put the scene in a given state without simulating: the free objects of ``world``
        (names unknown to this model are ignored) and, when given, the arms at ``joints``
        (contract order). For rendering a copy of another process's scene (cue ghosts)."""
        m, d = self.model, self.data
        for name, obj in world.objects.items():
            body = self._bodies.get(name)
            if body is None or body[1] is None:  # unknown or a fixed fixture
                continue
            qadr = body[1]
            d.qpos[qadr:qadr + 3] = obj.pos
            d.qpos[qadr + 3:qadr + 7] = obj.quat
        if joints is not None:
            self._set_joint_positions(np.asarray(joints, float))
        mujoco.mj_forward(m, d)

    def _set_joint_positions(self, q: np.ndarray) -> None:
        for i, arm in enumerate(contract.ARMS):
            base = i * contract.JOINTS_PER_ARM
            self.data.qpos[self._arm_qadr[arm]] = q[base:base + 6]
            self.data.qpos[self._finger_qadr[arm]] = q[base + 6] * FINGER_TRAVEL

    def apply(self, target: np.ndarray) -> None:
        target = np.asarray(target, dtype=float)
        if target.shape != (ALOHA.action_dim,) or not np.all(np.isfinite(target)):
            raise ValueError(f"joint target must be finite with shape ({ALOHA.action_dim},), "
                             f"got shape {target.shape}")
        ctrl = self.data.ctrl
        for i, arm in enumerate(contract.ARMS):
            base = i * contract.JOINTS_PER_ARM
            ctrl[self._arm_act[arm]] = target[base:base + 6]
            grip = float(np.clip(target[base + 6], 0.0, 1.0))
            ctrl[self._finger_act[arm]] = grip * FINGER_TRAVEL
        # position actuators clamp to the joint range through ctrlrange-free kp control
        np.clip(ctrl, self.model.actuator_ctrlrange[:, 0], self.model.actuator_ctrlrange[:, 1],
                out=ctrl, where=self.model.actuator_ctrllimited.astype(bool))

    def step(self) -> None:
        mujoco.mj_step(self.model, self.data, nstep=self.substeps)

    @property
    def physics_dt(self) -> float:
        return self.timestep

    def step_physics(self, steps: int) -> None:
        mujoco.mj_step(self.model, self.data, nstep=steps)

    def joint_positions(self) -> np.ndarray:
        out = np.empty(ALOHA.action_dim)
        for i, arm in enumerate(contract.ARMS):
            base = i * contract.JOINTS_PER_ARM
            out[base:base + 6] = self.data.qpos[self._arm_qadr[arm]]
            out[base + 6] = self.data.qpos[self._finger_qadr[arm]].sum() / GRIPPER_OPENING_M
        return out

    def world_state(self) -> WorldState:
        d = self.data
        objects = {}
        for name, (body, _, size, rgba, shape) in self._bodies.items():
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, d.xmat[body])
            objects[name] = ObjectState(name=name, pos=d.xpos[body].copy(), quat=quat,
                                        size=size, rgba=rgba, shape=shape)
        tcp = {}
        for arm, site in self._tcp_site.items():
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, d.site_xmat[site])
            tcp[arm] = TcpState(pos=d.site_xpos[site].copy(), quat=quat)
        return WorldState(stamp=self.time, objects=objects, tcp=tcp)

    def render(self, camera: str) -> np.ndarray:
        if camera not in ALOHA.camera_names:
            raise ValueError(f"unknown camera {camera!r}; expected one of {ALOHA.camera_names}")
        if self._renderer is None:
            self._renderer = mujoco.Renderer(self.model, self.height, self.width)
        self._renderer.update_scene(self.data, camera=camera)
        return self._renderer.render()

    def camera_model(self, camera: str) -> CameraModel:
        cam = self.model.camera(camera)
        T = np.eye(4)
        T[:3, :3] = self.data.cam_xmat[cam.id].reshape(3, 3)
        T[:3, 3] = self.data.cam_xpos[cam.id]
        return CameraModel(self.width, self.height, float(self.model.cam_fovy[cam.id]), T)

    @property
    def time(self) -> float:
        return 0.0 if self.data is None else self.data.time - self._t0

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

