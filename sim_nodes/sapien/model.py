"""SAPIEN 3 scene building for the bimanual PiPER workcell and a RoboFollow scene.

The same bodies as ``embodiment.mjcf`` (which the MuJoCo backend compiles), described here as
SAPIEN shapes:

* the arms from the PiPER chain in ``config/piper/kinematics.json`` (joint frames, axes,
  the tighter of the model's and the SDK's limits, link masses); SAPIEN turns a joint about
  its frame's x axis, so every joint frame is the chain's frame turned x -> z (revolute)
  or x -> +/-y (the finger slides);
* the arm links are drawn but do not collide (MuJoCo: ``contype=0``); only the finger pads
  do, as in MuJoCo;
* arm links are gravity compensated (MuJoCo ``gravcomp="1"``), the fingers are not;
* drives are PhysX's implicit PD with MuJoCo's position-actuator gains and force ranges
  (joint damping added to the drive's);
* objects, bowls (a disk and 16 wall plates, posed exactly as MuJoCo poses them), labels,
  the table and the floor with the same sizes, masses, inertias and friction coefficients.
  PhysX combines two friction coefficients by their average, MuJoCo by their maximum: the
  coefficients are the benchmark's, the pair's effective friction is each engine's own.

Physics and rendering live in two SAPIEN scenes: ``build_physics`` makes a physics-only
scene per episode (a new PhysX scene is what makes PhysX deterministic), ``RenderScene`` is
made once (a renderer's scene costs seconds before its first image) and holds visual copies
of the bodies, posed from the physics scene before each image.

Cameras come from ``embodiment.cameras.default_cameras()``; SAPIEN's camera frame is x
forward, y left, z up, and ``GL_FROM_SAPIEN`` turns it into the contract's OpenGL frame
(looks along -z, y up).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sapien

from vla_bridge import contract
from vla_bridge.embodiment.cameras import default_cameras, xyaxes_matrix
from vla_bridge.embodiment.kinematics import (TCP_DEPTH, PiperKinematics, load_piper_data,
                                              mat_to_quat)
from vla_bridge.embodiment.workcell import MOUNTS, TABLE_TOP_Z
from vla_bridge.embodiment.mjcf import (BOWL_COLOURS, BOWL_WALL_HEIGHT,
                                               BOWL_WALL_SEGMENTS, FINGER_MOUNT_Z,
                                               FINGER_TRAVEL, bowl_radius)

#: rotation taking SAPIEN's joint / capsule / cylinder axis (x) onto z
X_TO_Z = mat_to_quat(np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
#: columns: SAPIEN's camera axes (x forward, y left, z up) in the OpenGL camera frame
GL_FROM_SAPIEN = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])

LINK_RGBA = (0.75, 0.75, 0.78, 1.0)
PAD_RGBA = (0.15, 0.15, 0.15, 1.0)
PAD_HALF = (0.012, 0.005, 0.026)  # width, thickness, length along the approach (embodiment.mjcf)
PAD_FRICTION = 1.5
LINK_INERTIA = 4e-4
FINGER = {"mass": 0.03, "com_z": 0.025, "inertia": 1e-5, "kp": 400.0, "kv": 8.0,
          "force": 9.0, "damping": 2.0, "armature": 0.01}
ARM_DRIVE = {"kv": 120.0, "force": 60.0}
TABLE_HALF = (0.65, 0.42, TABLE_TOP_Z / 2)
TABLE_CENTRE = (0.0, -0.1, TABLE_TOP_Z / 2)
FLOOR_RGBA = (0.33, 0.35, 0.38, 1.0)
TABLE_RGBA = (0.62, 0.5, 0.38, 1.0)
DEFAULT_FRICTION = 1.0  # MuJoCo's default geom friction (table, floor, bowls, labels)
BOWL_MASS = 0.15
BOWL_COM = (0.0, 0.0, -0.01)
BOWL_INERTIA = (2e-4, 2e-4, 3e-4)
CAMERA_NEAR, CAMERA_FAR = 0.01, 10.0


# ------------------------------------------------------------------------------- maths
def quat_mul(a, b) -> np.ndarray:
    """Hamilton product of two (w, x, y, z) quaternions."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def axis_quat(axis: str, angle: float) -> np.ndarray:
    q = np.zeros(4)
    q[0] = np.cos(angle / 2)
    q["xyz".index(axis) + 1] = np.sin(angle / 2)
    return q


def pose_matrix(pose: sapien.Pose) -> np.ndarray:
    return np.asarray(pose.to_transformation_matrix(), dtype=float)


def matrix_pose(T: np.ndarray) -> sapien.Pose:
    return sapien.Pose(np.asarray(T[:3, 3], float), mat_to_quat(T[:3, :3]))


def segment_pose(start, end) -> sapien.Pose:
    """Pose whose x axis runs from `start` to `end`, centred between them (capsules)."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    x = (end - start) / np.linalg.norm(end - start)
    helper = np.array([0.0, 0.0, 1.0]) if abs(x[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    y = np.cross(helper, x)
    y /= np.linalg.norm(y)
    return sapien.Pose((start + end) / 2, mat_to_quat(np.stack([x, y, np.cross(x, y)], axis=1)))


def box_inertia(mass: float, full) -> np.ndarray:
    a, b, c = np.asarray(full, float)
    return mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


def object_inertia(obj) -> np.ndarray:
    """Diagonal inertia of a uniform solid, as MuJoCo computes it from a geom's mass."""
    size = np.asarray(obj.full_size, float)
    if obj.shape == "sphere":
        return np.full(3, 0.4 * obj.mass * (size[0] / 2) ** 2)
    if obj.shape == "cylinder":
        r, h = size[0] / 2, size[2]
        side = obj.mass * (3 * r * r + h * h) / 12.0
        return np.array([side, side, obj.mass * r * r / 2])
    return box_inertia(obj.mass, size)


# ------------------------------------------------------------------------ descriptions
@dataclass(frozen=True)
class Shape:
    """One primitive of a body. `size`: box half extents, (radius,) sphere, (radius, half
    length) capsule and cylinder (axis along the pose's x, SAPIEN's). `friction` None:
    drawn only."""
    kind: str
    pose: sapien.Pose
    size: tuple
    rgba: tuple
    friction: float | None = None


@dataclass
class BodySpec:
    """A rigid body (or an arm link): its shapes, mass and how it moves."""
    name: str
    shapes: list
    mass: float | None = None  # None: static
    com: tuple = (0.0, 0.0, 0.0)
    inertia: tuple = (0.0, 0.0, 0.0)
    # arm links: the joint to the parent link (index in the arm's list)
    parent: int | None = None
    joint: str = ""
    joint_type: str = "fixed"
    limits: tuple = (0.0, 0.0)
    pose_in_parent: sapien.Pose = field(default_factory=sapien.Pose)
    pose_in_child: sapien.Pose = field(default_factory=sapien.Pose)
    gravity: bool = True


def arm_links(arm: str, kin_data: dict) -> list[BodySpec]:
    """base_link, link1..link6, finger_a, finger_b of one arm (names prefixed with `arm`)."""
    kin = PiperKinematics(kin_data)
    chain = kin_data["chain"]
    links = [BodySpec(f"{arm}_base_link", [Shape("cylinder", sapien.Pose([0, 0, 0.03], X_TO_Z),
                                                 (0.05, 0.03), LINK_RGBA)],
                      mass=kin_data.get("base_mass", 0.1625), inertia=(LINK_INERTIA,) * 3,
                      gravity=False)]
    for i, link in enumerate(chain):
        shapes = []
        if i + 1 < len(chain):  # a capsule to the next joint origin (drawn only)
            nxt = np.asarray(chain[i + 1]["xyz"], float)
            if np.linalg.norm(nxt) > 1e-3:
                shapes.append(Shape("capsule", segment_pose([0, 0, 0], nxt),
                                    (0.028, float(np.linalg.norm(nxt)) / 2), LINK_RGBA))
            else:
                shapes.append(Shape("sphere", sapien.Pose(), (0.035,), LINK_RGBA))
        origin = sapien.Pose(link["xyz"], link["wxyz"])
        links.append(BodySpec(
            f"{arm}_{link['link']}", shapes, mass=link["mass"], inertia=(LINK_INERTIA,) * 3,
            parent=i, joint=f"{arm}_{link['joint']}", joint_type="revolute",
            limits=tuple(kin.limits[i]), pose_in_parent=origin * sapien.Pose(q=X_TO_Z),
            pose_in_child=sapien.Pose(q=X_TO_Z), gravity=False))
    links[-1].shapes.append(Shape("box", sapien.Pose([0, 0, FINGER_MOUNT_Z - 0.03]),
                                  (0.035, 0.05, 0.03), LINK_RGBA))
    link6 = len(links) - 1
    for side, sign in (("a", 1), ("b", -1)):
        slide = sapien.Pose(q=axis_quat("z", sign * np.pi / 2))  # x -> +y (a) or -y (b)
        pad = sapien.Pose([0, sign * PAD_HALF[1], TCP_DEPTH - FINGER_MOUNT_Z])
        links.append(BodySpec(
            f"{arm}_finger_{side}", [Shape("box", pad, PAD_HALF, PAD_RGBA, PAD_FRICTION)],
            mass=FINGER["mass"], com=(0.0, 0.0, FINGER["com_z"]),
            inertia=(FINGER["inertia"],) * 3, parent=link6, joint=f"{arm}_finger_{side}",
            joint_type="prismatic", limits=(0.0, FINGER_TRAVEL),
            pose_in_parent=sapien.Pose([0, 0, FINGER_MOUNT_Z]) * slide, pose_in_child=slide))
    return links


def object_spec(obj) -> BodySpec:
    """A free body for one scene object (cube, sphere or cylinder)."""
    half = np.asarray(obj.full_size, float) / 2
    rgba = (*obj.rgb, 1.0)
    if obj.shape == "sphere":
        shape = Shape("sphere", sapien.Pose(), (half[0],), rgba, obj.friction)
    elif obj.shape == "cylinder":
        shape = Shape("cylinder", sapien.Pose(q=X_TO_Z), (half[0], half[2]), rgba, obj.friction)
    else:
        shape = Shape("box", sapien.Pose(), tuple(half), rgba, obj.friction)
    return BodySpec(obj.name, [shape], mass=obj.mass, inertia=tuple(object_inertia(obj)))


def bowl_shapes(fixture, rgba) -> list[Shape]:
    """A bowl's disk and wall plates, as ``mjcf.bowl_geoms`` places them (a plate's
    MJCF euler "0 -lean a" is MuJoCo's intrinsic xyz sequence: R = Ry(-lean) Rz(a))."""
    r_top = bowl_radius(fixture)
    r_bottom = 0.8 * r_top
    z0 = -(fixture.center_z_above_table or 0.02)
    shapes = [Shape("cylinder", sapien.Pose([0, 0, z0 + 0.002], X_TO_Z), (r_bottom, 0.002),
                    rgba, DEFAULT_FRICTION)]
    lean = np.arctan2(r_top - r_bottom, BOWL_WALL_HEIGHT)
    half = (0.002, np.pi * r_top / BOWL_WALL_SEGMENTS * 1.05, BOWL_WALL_HEIGHT / 2 / np.cos(lean))
    r_mid = (r_top + r_bottom) / 2
    for k in range(BOWL_WALL_SEGMENTS):
        a = 2 * np.pi * k / BOWL_WALL_SEGMENTS
        pos = (r_mid * np.cos(a), r_mid * np.sin(a), z0 + BOWL_WALL_HEIGHT / 2)
        quat = quat_mul(axis_quat("y", -lean), axis_quat("z", a))
        shapes.append(Shape("box", sapien.Pose(pos, quat), half, rgba, DEFAULT_FRICTION))
    return shapes


def fixture_spec(fixture) -> BodySpec:
    """A bowl (static, or free with MuJoCo's mass and inertia) or a label (static plate)."""
    if fixture.kind == "bowl":
        colour = next((c for key, c in BOWL_COLOURS.items() if key in fixture.name), (0.7, 0.7, 0.7))
        shapes = bowl_shapes(fixture, (*colour, 1.0))
        if fixture.static:
            return BodySpec(fixture.name, shapes)
        return BodySpec(fixture.name, shapes, mass=BOWL_MASS, com=BOWL_COM, inertia=BOWL_INERTIA)
    half = tuple(np.asarray(fixture.half_extents, float))
    rgba = (*(fixture.rgb or (0.8, 0.8, 0.8)), 1.0)
    return BodySpec(fixture.name, [Shape("box", sapien.Pose(), half, rgba, DEFAULT_FRICTION)])


def table_spec() -> BodySpec:
    return BodySpec("table", [Shape("box", sapien.Pose(), TABLE_HALF, TABLE_RGBA, DEFAULT_FRICTION)])


# ---------------------------------------------------------------------------- builders
def add_shape(builder, what: str, s: Shape, material) -> None:
    """Add `s` to `builder` as a "collision" or a "visual" primitive (SAPIEN's
    ``add_<kind>_<what>``) with `material`; a kind other than box, sphere or cylinder is a
    capsule."""
    if s.kind == "box":
        getattr(builder, f"add_box_{what}")(s.pose, half_size=s.size, material=material)
    elif s.kind == "sphere":
        getattr(builder, f"add_sphere_{what}")(s.pose, radius=s.size[0], material=material)
    else:
        kind = "cylinder" if s.kind == "cylinder" else "capsule"
        getattr(builder, f"add_{kind}_{what}")(s.pose, radius=s.size[0], half_length=s.size[1],
                                               material=material)


def add_collisions(builder, spec: BodySpec) -> None:
    for s in spec.shapes:
        if s.friction is None:
            continue
        material = sapien.physx.PhysxMaterial(s.friction, s.friction, 0.0)
        add_shape(builder, "collision", s, material)


def linear(rgba) -> list[float]:
    """An rgba as MuJoCo draws it (straight into the image) -> SAPIEN's linear base colour
    (SAPIEN writes sRGB images: without this every colour comes out paler)."""
    return [float(c) ** 2.2 for c in rgba[:3]] + [float(rgba[3]) if len(rgba) > 3 else 1.0]


def add_visuals(builder, spec: BodySpec) -> None:
    for s in spec.shapes:
        add_shape(builder, "visual", s, linear(s.rgba))


@dataclass
class ArmHandles:
    articulation: object
    arm_joints: list  # PhysxArticulationJoint, contract order
    finger_joints: list  # a, b
    links: dict  # link name -> entity
    qpos_index: list  # articulation qpos index of each arm joint, then each finger


def build_arm(scene: sapien.Scene, arm: str, kin_data: dict, collision_bit: int) -> ArmHandles:
    """One PiPER arm (collision shapes only), its base fixed at its mount. `collision_bit`:
    the arm's own bit in the pads' ignore group, so an arm's two pads never push each other
    apart."""
    act = kin_data["actuation"]
    builder = scene.create_articulation_builder()
    link_builders = []
    for spec in arm_links(arm, kin_data):
        lb = builder.create_link_builder(None if spec.parent is None else link_builders[spec.parent])
        lb.set_name(spec.name)
        if spec.parent is not None:
            lb.set_joint_name(spec.joint)
            lb.set_joint_properties(spec.joint_type, [list(spec.limits)], spec.pose_in_parent,
                                    spec.pose_in_child)
        lb.set_mass_and_inertia(spec.mass, sapien.Pose(spec.com), spec.inertia)
        lb.collision_groups = [1, 1, collision_bit, 0]
        add_collisions(lb, spec)
        link_builders.append(lb)
    mount = MOUNTS[arm]
    builder.set_initial_pose(sapien.Pose(mount.pos, axis_quat("z", mount.yaw)))
    articulation = builder.build(fix_root_link=True)

    joints = {j.name: j for j in articulation.get_active_joints()}
    arm_joints = [joints[f"{arm}_{j}"] for j in contract.ARM_JOINTS]
    finger_joints = [joints[f"{arm}_finger_{s}"] for s in "ab"]
    for j in arm_joints:
        j.set_drive_properties(act["kp"], ARM_DRIVE["kv"] + act["damping"], ARM_DRIVE["force"])
        j.set_armature([act["armature"]])
        j.set_friction(0.0)
    for j in finger_joints:
        j.set_drive_properties(FINGER["kp"], FINGER["kv"] + FINGER["damping"], FINGER["force"])
        j.set_armature([FINGER["armature"]])
        j.set_friction(0.0)
    links = {link.name: link for link in articulation.get_links()}
    for link in links.values():  # gravity compensation of the arm (not the fingers)
        link.disable_gravity = "finger" not in link.name
    order = [j.name for j in articulation.get_active_joints()]
    index = [order.index(j.name) for j in arm_joints + finger_joints]
    return ArmHandles(articulation, arm_joints, finger_joints,
                      {name: link.entity for name, link in links.items()}, index)


def build_body(scene: sapien.Scene, spec: BodySpec, xyz) -> sapien.Entity:
    builder = scene.create_actor_builder()
    add_collisions(builder, spec)
    builder.set_initial_pose(sapien.Pose(np.asarray(xyz, float)))
    if spec.mass is None:
        return builder.build_static(name=spec.name)
    builder.set_mass_and_inertia(spec.mass, sapien.Pose(spec.com), spec.inertia)
    return builder.build(name=spec.name)


def build_physics(timestep: float, objects, fixtures, spawn: dict):
    """A new physics-only scene for one episode: floor, table, both arms, fixtures and
    objects at `spawn`. Returns (scene, arms by name, body entities by name)."""
    scene = sapien.Scene([sapien.physx.PhysxCpuSystem()])
    scene.set_timestep(timestep)
    floor = sapien.physx.PhysxMaterial(DEFAULT_FRICTION, DEFAULT_FRICTION, 0.0)
    scene.add_ground(0.0, render=False, material=floor)
    build_body(scene, table_spec(), TABLE_CENTRE)
    kin_data = load_piper_data()
    arms = {arm: build_arm(scene, arm, kin_data, 1 << i) for i, arm in enumerate(contract.ARMS)}
    bodies = {fx.name: build_body(scene, fixture_spec(fx), spawn[fx.name]) for fx in fixtures}
    bodies.update({o.name: build_body(scene, object_spec(o), spawn[o.name]) for o in objects})
    return scene, arms, bodies


# ------------------------------------------------------------------------------ render
@dataclass
class Camera:
    """A contract camera: SAPIEN's camera component, the arm whose link6 carries it (None:
    fixed in the world) and its pose in that frame (or the world) in SAPIEN's axes."""
    component: object
    arm: str | None
    local: np.ndarray  # (4, 4)


class RenderScene:
    """The renderer's scene, made once: floor, table, lights, the cameras, visual copies of
    both arms' links, and of an episode's fixtures and objects (`set_bodies`)."""

    def __init__(self, width: int, height: int):
        self.size = (width, height)
        self.scene = sapien.Scene()
        self._floor()
        kin_data = load_piper_data()
        self.links = {spec.name: self._visual(spec) for arm in contract.ARMS
                      for spec in arm_links(arm, kin_data)}
        self.bodies: dict[str, sapien.Entity] = {}
        self.body_key: tuple = ()
        self.cameras = self._cameras(width, height)

    def _floor(self) -> None:
        scene = self.scene
        scene.add_ground(0.0, render_material=linear(FLOOR_RGBA))
        self._visual(table_spec()).set_pose(sapien.Pose(TABLE_CENTRE))
        # MuJoCo: ambient 0.45, a key light from above and a headlight, no shadows; SAPIEN
        # lights in linear space, so brighter numbers give about the same image
        scene.set_ambient_light([0.6, 0.6, 0.6])
        scene.add_directional_light([0.0, 0.1, -1.0], [0.9, 0.9, 0.9], shadow=False)
        high = next(c for c in default_cameras() if c.body is None)
        scene.add_directional_light(-xyaxes_matrix(high.xyaxes)[:, 2], [0.7, 0.7, 0.7],
                                    shadow=False)

    def _visual(self, spec: BodySpec) -> sapien.Entity:
        builder = self.scene.create_actor_builder()
        add_visuals(builder, spec)
        entity = sapien.Entity()
        entity.name = spec.name
        entity.add_component(builder.build_render_component())
        self.scene.add_entity(entity)
        return entity

    def _cameras(self, width: int, height: int) -> dict[str, Camera]:
        cameras = {}
        for spec in default_cameras():
            local = np.eye(4)
            local[:3, :3] = xyaxes_matrix(spec.xyaxes) @ GL_FROM_SAPIEN
            local[:3, 3] = spec.pos
            cam = self.scene.add_camera(spec.name, width, height, np.deg2rad(spec.fovy_deg),
                                        CAMERA_NEAR, CAMERA_FAR)
            cam.entity.set_pose(matrix_pose(local))
            arm = None if spec.body is None else spec.body.split("_", 1)[0]
            cameras[spec.name] = Camera(cam, arm, local)
        return cameras

    def set_bodies(self, specs: list[BodySpec]) -> None:
        """Visual copies of an episode's fixtures and objects (kept when they are the same)."""
        key = tuple(s.name for s in specs)
        if key == self.body_key:
            return
        for entity in self.bodies.values():
            self.scene.remove_entity(entity)
        self.bodies = {s.name: self._visual(s) for s in specs}
        self.body_key = key

    def sync(self, arms: dict[str, ArmHandles], bodies: dict[str, sapien.Entity]) -> None:
        """Pose every visual copy (and the wrist cameras) as the physics scene is now."""
        for handles in arms.values():
            for name, entity in handles.links.items():
                self.links[name].set_pose(entity.get_pose())
        for name, entity in bodies.items():
            self.bodies[name].set_pose(entity.get_pose())
        for cam in self.cameras.values():
            self.place(cam, arms)
        self.scene.update_render()

    @staticmethod
    def place(cam: Camera, arms: dict[str, ArmHandles]) -> None:
        """Move a wrist camera to its mount on the arm's link6 (as it is now)."""
        if cam.arm is not None:
            link6 = pose_matrix(arms[cam.arm].links[f"{cam.arm}_link6"].get_pose())
            cam.component.entity.set_pose(matrix_pose(link6 @ cam.local))
