"""SAPIEN 3 simulator backend: the bimanual PiPER workcell with a RoboFollow scene, in the
physics engine (PhysX) and renderer RoboFollow itself runs on (RoboTwin 2.0 is built on
SAPIEN). ``sim:=sapien`` selects it; everything else in the graph stays the same.

The same workcell as the MuJoCo backend (``sapien.model``: same chain, layouts and jitter,
sizes, masses, friction coefficients, camera mounts), at the same 250 Hz physics (15 steps
per 0.06 s control period) with the same gripper convention. Rendering runs on the CPU
through Vulkan (Mesa's lavapipe, >= 25); the first image of a process compiles SAPIEN's
shaders (a few seconds).

Determinism: PhysX promises the same result only for the same bodies added in the same
order to a new scene (its caches and handle pools remember earlier episodes), so every
``reset`` builds a new physics-only scene (a few ms); a seed then gives the same episode
whatever ran before in the process. The renderer's scene is made once (a new one costs
seconds before its first image) and holds visual copies of the bodies, posed from the
physics scene before each image (``model.RenderScene``).
"""
from __future__ import annotations

import numpy as np

from vla_bridge import contract
from vla_bridge.benchmarks.perturbations import pair_start
from vla_bridge.benchmarks.robofollow.scenes import load_scene, sample_layout
from vla_bridge.embodiment.cameras import CameraModel
from vla_bridge.embodiment.kinematics import GRIPPER_OPENING_M, PiperKinematics
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.embodiment.world import ObjectState, TcpState, WorldState
from vla_bridge.sim_nodes.backend import SimBackend
from vla_bridge.embodiment.mjcf import FINGER_TRAVEL, fixture_size

try:
    import sapien
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the SAPIEN backend needs sapien==3.0.3 (requirements-sapien.txt; "
                      "scripts/setup.sh installs it and Mesa's Vulkan driver)") from exc

from vla_bridge.sim_nodes.sapien import model as SM

ALOHA = contract.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

sapien.render.set_log_level("error")
sapien.physx.set_scene_config(cpu_workers=0)  # one thread: the same result on any machine
sapien.render.set_picture_format("Color", "r8g8b8a8unorm")  # uint8 images, no conversion
# the "minimal" shader pack: colour with direct lights, no shadows (as the MuJoCo backend);
# 10 ms of CPU per 320x240 image on lavapipe instead of the default pack's 17
sapien.render.set_camera_shader_dir("minimal")

#: renderer scenes not in use, by image size. A renderer scene is never freed: it costs
#: seconds to set up, and SAPIEN 3.0.3 crashes making one after another was freed.
_IDLE_RENDER_SCENES: dict[tuple[int, int], list] = {}


def _acquire_render_scene(width: int, height: int) -> SM.RenderScene:
    idle = _IDLE_RENDER_SCENES.get((width, height))
    return idle.pop() if idle else SM.RenderScene(width, height)


def _release_render_scene(render: SM.RenderScene) -> None:
    _IDLE_RENDER_SCENES.setdefault(render.size, []).append(render)


class SapienBackend(SimBackend):
    #: scene axes this backend applies at reset (benchmarks.perturbations); camera, lighting
    #: and texture would change the kept render scene, which is not done yet
    perturbation_axes = frozenset({"initial_joints", "object_jitter"})

    def __init__(self, control_period: float = 0.06, width: int = ALOHA.image_size[0],
                 height: int = ALOHA.image_size[1], timestep: float = 0.004,
                 settle_seconds: float = 0.3):
        self.control_period = control_period
        self.width, self.height = int(width), int(height)
        self.timestep = timestep
        self.substeps = max(1, int(round(control_period / timestep)))
        self.settle_steps = int(round(settle_seconds / timestep))
        self._link6_to_tcp = PiperKinematics().link6_to_tcp
        self.scene = None  # the episode's physics scene
        self._render: SM.RenderScene | None = None  # made at the first reset, then kept
        self._arms: dict = {}
        self._bodies: dict = {}  # name -> (entity, world-state size, rgba, shape)
        self._steps = 0
        self._render_stale = True
        self._start = home_command()

    # ------------------------------------------------------------------ protocol
    def reset(self, scene: str, layout: str, seed: int, cue_objects=(),
              perturbation=None) -> None:
        if cue_objects:
            raise NotImplementedError("the SAPIEN backend does not build scene cue cards "
                                      "(cue_placement:=scene); use sim:=mujoco for them")
        spec = load_scene(scene)
        spawn = sample_layout(spec, layout, seed)
        objects = spec.layout_objects(layout)
        axis = perturbation.axis if perturbation is not None else None
        if axis == "object_jitter":  # as MujocoBackend: the layout's objects, not fixtures
            for name, (dx, dy) in perturbation.object_offsets([o.name for o in objects]).items():
                spawn[name] = np.asarray(spawn[name], float) + (dx, dy, 0.0)
        fixtures = [spec.fixtures[name] for name in spawn if name in spec.fixtures]
        self.scene, self._arms, entities = SM.build_physics(self.timestep, objects, fixtures,
                                                             spawn)
        if self._render is None:
            self._render = _acquire_render_scene(self.width, self.height)
        self._render.set_bodies([SM.fixture_spec(f) for f in fixtures]
                                + [SM.object_spec(o) for o in objects])
        self._bodies = {}
        for fx in fixtures:
            rgba = np.append(fx.rgb if fx.rgb else (0.7, 0.7, 0.7), 1.0)
            self._bodies[fx.name] = (entities[fx.name], fixture_size(fx), rgba,
                                     "cylinder" if fx.kind == "bowl" else "box")
        for obj in objects:
            self._bodies[obj.name] = (entities[obj.name], np.asarray(obj.full_size, float),
                                      np.append(obj.rgb, 1.0),
                                      "box" if obj.shape == "cube" else obj.shape)
        self._start = pair_start(home_command(), perturbation)
        self._set_joint_positions(self._start)
        self.apply(self._start)
        for _ in range(self.settle_steps):  # let objects come to rest before frame 0
            self.scene.step()
        self._steps = 0
        self._render_stale = True

    def start_command(self) -> np.ndarray:
        return self._start.copy()

    def _set_joint_positions(self, q: np.ndarray) -> None:
        for i, arm in enumerate(contract.ARMS):
            handles = self._arms[arm]
            base = i * contract.JOINTS_PER_ARM
            qpos = np.zeros(len(handles.articulation.get_active_joints()), dtype=np.float32)
            values = list(q[base:base + 6]) + [q[base + 6] * FINGER_TRAVEL] * 2
            qpos[handles.qpos_index] = values
            handles.articulation.set_qpos(qpos)
            handles.articulation.set_qvel(np.zeros_like(qpos))

    def pose(self, world: WorldState, joints=None) -> None:
        """Put the scene in a given state without simulating (see MujocoBackend.pose)."""
        for name, obj in world.objects.items():
            body = self._bodies.get(name)
            if body is None or body[0].find_component_by_type(
                    sapien.physx.PhysxRigidDynamicComponent) is None:
                continue  # unknown or static
            body[0].set_pose(sapien.Pose(np.asarray(obj.pos, float), np.asarray(obj.quat, float)))
        if joints is not None:
            self._set_joint_positions(np.asarray(joints, float))
        self._render_stale = True

    def apply(self, target: np.ndarray) -> None:
        target = np.asarray(target, dtype=float)
        if target.shape != (ALOHA.action_dim,) or not np.all(np.isfinite(target)):
            raise ValueError(f"joint target must be finite with shape ({ALOHA.action_dim},), "
                             f"got shape {target.shape}")
        for i, arm in enumerate(contract.ARMS):
            base = i * contract.JOINTS_PER_ARM
            handles = self._arms[arm]
            for joint, value in zip(handles.arm_joints, target[base:base + 6]):
                joint.set_drive_target(float(value))  # PhysX clamps to the joint's limits
            grip = float(np.clip(target[base + 6], 0.0, 1.0)) * FINGER_TRAVEL
            for joint in handles.finger_joints:
                joint.set_drive_target(grip)

    def step(self) -> None:
        self.step_physics(self.substeps)

    @property
    def physics_dt(self) -> float:
        return self.timestep

    def step_physics(self, steps: int) -> None:
        for _ in range(steps):
            self.scene.step()
        self._steps += steps
        self._render_stale = True

    def joint_positions(self) -> np.ndarray:
        out = np.empty(ALOHA.action_dim)
        for i, arm in enumerate(contract.ARMS):
            handles = self._arms[arm]
            qpos = np.asarray(handles.articulation.get_qpos(), float)[handles.qpos_index]
            base = i * contract.JOINTS_PER_ARM
            out[base:base + 6] = qpos[:6]
            out[base + 6] = qpos[6:].sum() / GRIPPER_OPENING_M
        return out

    def world_state(self) -> WorldState:
        objects = {}
        for name, (entity, size, rgba, shape) in self._bodies.items():
            pose = entity.get_pose()
            quat = np.asarray(pose.q, float)
            objects[name] = ObjectState(name=name, pos=np.asarray(pose.p, float),
                                        quat=quat if quat[0] >= 0 else -quat,
                                        size=size, rgba=rgba, shape=shape)
        tcp = {}
        for arm, handles in self._arms.items():
            T = SM.pose_matrix(handles.links[f"{arm}_link6"].get_pose()) @ self._link6_to_tcp
            tcp[arm] = TcpState(pos=T[:3, 3].copy(), quat=SM.mat_to_quat(T[:3, :3]))
        return WorldState(stamp=self.time, objects=objects, tcp=tcp)

    def render(self, camera: str) -> np.ndarray:
        if camera not in ALOHA.camera_names:
            raise ValueError(f"unknown camera {camera!r}; expected one of {ALOHA.camera_names}")
        if self._render_stale:
            self._render.sync(self._arms, {n: b[0] for n, b in self._bodies.items()})
            self._render_stale = False
        component = self._render.cameras[camera].component
        component.take_picture()
        return np.ascontiguousarray(component.get_picture("Color")[..., :3])

    def camera_model(self, camera: str) -> CameraModel:
        if camera not in ALOHA.camera_names:
            raise ValueError(f"unknown camera {camera!r}; expected one of {ALOHA.camera_names}")
        cam = self._render.cameras[camera]
        self._render.place(cam, self._arms)
        T = SM.pose_matrix(cam.component.get_global_pose())
        T[:3, :3] = T[:3, :3] @ SM.GL_FROM_SAPIEN.T  # SAPIEN's camera axes -> OpenGL's
        return CameraModel(self.width, self.height, float(np.rad2deg(cam.component.fovy)), T)

    @property
    def time(self) -> float:
        return self._steps * self.timestep

    def close(self) -> None:
        """Drop the episode's physics scene and hand the renderer's scene back to the pool
        (the next backend of this process reuses it)."""
        self._arms, self._bodies = {}, {}
        self.scene = None
        if self._render is not None:
            _release_render_scene(self._render)
            self._render = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
