"""MJCF generation for the bimanual PiPER workcell and a RoboFollow scene.

The arms are built from the PiPER chain in `config/piper/kinematics.json` (the same data the
numpy kinematics uses), so joint conventions match the real arm. Geometry is primitive
(capsules and boxes); the fingers are two opposed slides with friction pads.
"""
from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.kinematics import (GRIPPER_OPENING_M, TCP_DEPTH, ArmMount,
                                              PiperKinematics, load_piper_data, mat_to_quat)
from vla_bridge.embodiment.cameras import CameraSpec, default_cameras
from vla_bridge.embodiment.workcell import MOUNTS, TABLE_TOP_Z

FINGER_MOUNT_Z = 0.135  # along link6 z, where the finger slides sit
FINGER_TRAVEL = GRIPPER_OPENING_M / 2  # each finger travels half the opening



def _v(values) -> str:
    return " ".join(f"{float(x):.6g}" for x in values)


def arm_xml(arm: str, mount: ArmMount, kin_data: dict) -> str:
    """Nested bodies base -> link1..link6 -> fingers for one arm, prefixed with the arm name."""
    kin = PiperKinematics(kin_data)
    chain = kin_data["chain"]
    yaw_quat = [np.cos(mount.yaw / 2), 0, 0, np.sin(mount.yaw / 2)]
    xml = [f'<body name="{arm}_base_link" pos="{_v(mount.pos)}" quat="{_v(yaw_quat)}">',
           '<geom class="link" type="cylinder" size="0.05 0.03" pos="0 0 0.03"/>']
    for i, link in enumerate(chain):
        lo, hi = kin.limits[i]
        xml.append(f'<body name="{arm}_{link["link"]}" pos="{_v(link["xyz"])}" '
                   f'quat="{_v(link["wxyz"])}" gravcomp="1">')
        xml.append(f'<inertial pos="0 0 0" mass="{link["mass"]}" diaginertia="4e-4 4e-4 4e-4"/>')
        xml.append(f'<joint name="{arm}_{link["joint"]}" class="arm_joint" range="{lo:.5f} {hi:.5f}"/>')
        if i + 1 < len(chain):  # capsule to the next joint origin
            nxt = chain[i + 1]["xyz"]
            if np.linalg.norm(nxt) > 1e-3:
                xml.append(f'<geom class="link" type="capsule" size="0.028" fromto="0 0 0 {_v(nxt)}"/>')
            else:
                xml.append('<geom class="link" type="sphere" size="0.035"/>')
    xml.append(gripper_xml(arm))
    xml.append("</body>" * (len(chain) + 1))
    return "\n".join(xml)


def gripper_xml(arm: str) -> str:
    """Palm, TCP site, and two fingers sliding along link6's +y / -y."""
    tcp_rot = PiperKinematics().link6_to_tcp[:3, :3]
    pad = (0.012, 0.005, 0.026)  # half sizes: width, thickness, length along approach
    parts = [
        f'<geom class="link" type="box" size="0.035 0.05 0.03" pos="0 0 {FINGER_MOUNT_Z - 0.03}"/>',
        f'<site name="{arm}_tcp" pos="0 0 {TCP_DEPTH}" quat="{_v(mat_to_quat(tcp_rot))}" size="0.005"/>',
    ]
    for side, sign in (("a", 1), ("b", -1)):
        parts.append(
            f'<body name="{arm}_finger_{side}" pos="0 0 {FINGER_MOUNT_Z}">'
            f'<inertial pos="0 0 0.025" mass="0.03" diaginertia="1e-5 1e-5 1e-5"/>'
            f'<joint name="{arm}_finger_{side}" type="slide" axis="0 {sign} 0" '
            f'range="0 {FINGER_TRAVEL}" damping="2" armature="0.01"/>'
            f'<geom class="pad" type="box" size="{_v(pad)}" pos="0 {sign * pad[1]:.4f} {TCP_DEPTH - FINGER_MOUNT_Z:.4f}"/>'
            "</body>")
    return "\n".join(parts)


def object_xml(obj, xyz) -> str:
    """A free body for one scene object (cube, sphere or cylinder)."""
    rgba = list(obj.rgb) + [1.0]
    size = np.asarray(obj.full_size, float) / 2
    if obj.shape == "sphere":
        geom = f'type="sphere" size="{size[0]:.5f}" condim="6"'
    elif obj.shape == "cylinder":
        geom = f'type="cylinder" size="{size[0]:.5f} {size[2]:.5f}" condim="4"'
    else:
        geom = f'type="box" size="{_v(size)}" condim="4"'
    friction = f"{obj.friction} 0.005 0.0001"
    return (f'<body name="{obj.name}" pos="{_v(xyz)}"><freejoint name="{obj.name}"/>'
            f'<geom name={quoteattr(obj.name)} {geom} mass="{obj.mass}" friction="{friction}" '
            f'rgba="{_v(rgba)}"/></body>')


#: Bowl geometry is not given by the benchmark (RoboTwin mesh assets); ours is a dish whose rim
#: radius scales with the asset scale so the two Scene 2 bowls (9 cm apart) do not overlap.
BOWL_RIM_RADIUS_PER_SCALE = 0.0635
BOWL_WALL_HEIGHT = 0.028
BOWL_WALL_SEGMENTS = 16
BOWL_COLOURS = {"green": (0.1, 0.65, 0.2), "yellow": (0.95, 0.8, 0.1)}


def bowl_radius(fixture) -> float:
    return BOWL_RIM_RADIUS_PER_SCALE * float(fixture.mesh.get("scale", 0.8))


def fixture_size(fixture) -> np.ndarray:
    """Full extent used in the world state (bowls: rim diameter x wall height)."""
    if fixture.kind == "bowl":
        r = bowl_radius(fixture)
        return np.array([2 * r, 2 * r, BOWL_WALL_HEIGHT])
    return np.asarray(fixture.full_size, float)


def bowl_geoms(fixture, rgba: str) -> str:
    """A dish: a thin bottom disk and a ring of outward-leaning wall plates. The body origin
    sits 2 cm above the table (RoboFollow's bowl pose height); the bottom rests on the table."""
    r_top = bowl_radius(fixture)
    r_bottom = 0.8 * r_top
    z0 = -(fixture.center_z_above_table or 0.02)  # table surface in the body frame
    geoms = [f'<geom type="cylinder" size="{r_bottom:.4f} 0.002" pos="0 0 {z0 + 0.002:.4f}" rgba="{rgba}"/>']
    lean = np.arctan2(r_top - r_bottom, BOWL_WALL_HEIGHT)
    half_width = np.pi * r_top / BOWL_WALL_SEGMENTS * 1.05
    for k in range(BOWL_WALL_SEGMENTS):
        a = 2 * np.pi * k / BOWL_WALL_SEGMENTS
        r_mid = (r_top + r_bottom) / 2
        pos = (r_mid * np.cos(a), r_mid * np.sin(a), z0 + BOWL_WALL_HEIGHT / 2)
        # plate normal points outward along a, leaning out by `lean`
        geoms.append(f'<geom type="box" size="0.002 {half_width:.4f} {BOWL_WALL_HEIGHT / 2 / np.cos(lean):.4f}" '
                     f'pos="{_v(pos)}" euler="0 {-lean:.4f} {a:.4f}" rgba="{rgba}"/>')
    return "".join(geoms)


def fixture_xml(fixture, xyz) -> str:
    """A bowl (static, or free with a small mass) or a label (static thin plate)."""
    name = fixture.name
    if fixture.kind == "bowl":
        colour = next((c for key, c in BOWL_COLOURS.items() if key in name), (0.7, 0.7, 0.7))
        rgba = _v(list(colour) + [1.0])
        joint = "" if fixture.static else f'<freejoint name="{name}"/><inertial pos="0 0 -0.01" mass="0.15" diaginertia="2e-4 2e-4 3e-4"/>'
        return f'<body name="{name}" pos="{_v(xyz)}">{joint}{bowl_geoms(fixture, rgba)}</body>'
    rgba = _v(list(fixture.rgb or (0.8, 0.8, 0.8)) + [1.0])
    half = np.asarray(fixture.half_extents, float)
    return (f'<body name="{name}" pos="{_v(xyz)}"><geom type="box" size="{_v(half)}" '
            f'rgba="{rgba}" friction="1 0.005 0.0001"/></body>')


def _cue_object_xml(cue) -> tuple[str, str]:
    """(asset XML, body XML) of one scene cue object (see build_mjcf)."""
    def get(key, default=None):
        return cue.get(key, default) if isinstance(cue, dict) else getattr(cue, key, default)
    name = get("name")
    half = np.asarray(get("size"), float) / 2
    asset = (f'<texture name="{name}_tex" type="2d" file={quoteattr(str(get("texture")))}/>'
             f'<material name="{name}_mat" texture="{name}_tex" specular="0.1"/>'
             f'<material name="{name}_back" rgba="0.93 0.93 0.9 1" specular="0.1"/>')
    free = bool(get("free", False))
    joint = f'<freejoint name="{name}"/>' if free else ""
    mass = float(get("mass", 0.02)) if free else None
    tent = float(get("tent_deg", 0.0) or 0.0)
    geoms = (_cue_tent_geoms(name, half, tent, mass) if tent > 0 else
             _cue_geom(name, f"{name}_mat", half, (0, 0, 0), (1, 0, 0, 0), mass))
    body = (f'<body name="{name}" pos="{_v(get("pos"))}" quat="{_v(get("quat", (1, 0, 0, 0)))}">'
            f'{joint}{geoms}</body>')
    return asset, body


def _cue_geom(name: str, material: str, half, pos, quat, mass: float | None) -> str:
    mass_attr = f' mass="{mass}"' if mass is not None else ""
    return (f'<geom name="{name}" type="box" size="{_v(half)}" pos="{_v(pos)}" quat="{_v(quat)}" '
            f'material="{material}"{mass_attr} friction="1 0.005 0.0001"/>')


def _cue_tent_geoms(name: str, half, tent_deg: float, mass: float | None) -> str:
    """A folded card standing on the table: two panels leaning `tent_deg` from vertical,
    meeting at a ridge above the body origin (which sits on the table). The front panel
    (facing the body's -y) carries the texture, top row up at the ridge; the back is plain.
    It stands by itself and falls over when an arm knocks it."""
    a = np.deg2rad(tent_deg)
    h = half[1]  # half the panel height
    tilt = np.pi / 2 - a  # rotation about x that turns a flat panel into the front one
    centre_z = h * np.cos(a)
    front_q = (np.cos(tilt / 2), np.sin(tilt / 2), 0.0, 0.0)
    back_q = (np.cos(-tilt / 2), np.sin(-tilt / 2), 0.0, 0.0)
    m = None if mass is None else mass / 2
    return (_cue_geom(name, f"{name}_mat", half, (0, -h * np.sin(a), centre_z), front_q, m)
            + _cue_geom(f"{name}_back", f"{name}_back", half, (0, h * np.sin(a), centre_z),
                        back_q, m))


#: the surface textures the texture perturbation axis picks from (benchmarks.perturbations):
#: (material name, texture attributes, texrepeat). No geom uses them unperturbed, so they
#: change no image of an unperturbed episode.
PERTURB_TEXTURES = (
    ("perturb_checker", 'builtin="checker" rgb1="0.82 0.82 0.8" rgb2="0.25 0.25 0.28"', "8 8"),
    ("perturb_grain", 'builtin="flat" mark="random" random="0.25" rgb1="0.42 0.28 0.17" '
                      'markrgb="0.66 0.5 0.34"', "2 2"),
    ("perturb_gradient", 'builtin="gradient" rgb1="0.25 0.4 0.65" rgb2="0.05 0.1 0.2"', "1 1"),
    ("perturb_speckle", 'builtin="flat" mark="random" random="0.4" rgb1="0.75 0.75 0.72" '
                        'markrgb="0.1 0.1 0.1"', "4 4"),
)


def build_mjcf(objects, spawn: dict[str, np.ndarray], cameras: list[CameraSpec] | None = None,
               timestep: float = 0.002, fixtures=(), cue_objects=None, extra_bodies=()) -> str:
    """Full MJCF: floor, table, both arms, fixtures (bowls, labels) and the scene objects at
    `spawn`, cameras, actuators.

    `cue_objects` (optional): scene-instantiated visual cues (LIBERO-VIFO section 4.2), each
    with `name`, `texture` (PNG path), `pos`, `size` (full extents), `quat` (w, x, y, z) and
    optionally `free` / `mass` / `tent_deg` (attributes or dict keys; `vla_bridge.benchmarks.vifo.
    scene_cards.scene_cue_objects` makes them): a thin box whose faces carry the texture, its
    top row towards the box's local +y; with `tent_deg` > 0 a folded table tent instead (see
    `_cue_tent_geoms`).

    `extra_bodies`: (asset XML, body XML) pairs added as they are (the distractors' LIBERO
    objects, `embodiment.libero_assets.LiberoAsset.mjcf`)."""
    cue_assets, cue_bodies = [], []
    for cue in cue_objects or ():
        asset, body = _cue_object_xml(cue)
        cue_assets.append(asset)
        cue_bodies.append(body)
    kin_data = load_piper_data()
    cameras = cameras or default_cameras()
    act = kin_data["actuation"]
    world_cams = [c for c in cameras if c.body is None]
    body_cams = {c.body: c for c in cameras if c.body is not None}
    arms = "\n".join(arm_xml(arm, MOUNTS[arm], kin_data) for arm in contract.ARMS)
    for body, cam in body_cams.items():  # attach wrist cameras inside their link bodies
        tag = f'<body name="{body}"'
        start = arms.index(tag)
        insert_at = arms.index(">", start) + 1
        arms = (arms[:insert_at] + f'<camera name="{cam.name}" fovy="{cam.fovy_deg}" '
                f'pos="{_v(cam.pos)}" xyaxes="{_v(cam.xyaxes)}"/>' + arms[insert_at:])
    actuators = []
    for arm in contract.ARMS:
        for j in contract.ARM_JOINTS:
            actuators.append(f'<position name="{arm}_{j}" joint="{arm}_{j}" kp="{act["kp"]}" '
                             f'kv="120" forcerange="-60 60"/>')
        for side in ("a", "b"):
            actuators.append(f'<position name="{arm}_finger_{side}" joint="{arm}_finger_{side}" '
                             f'kp="400" kv="8" forcerange="-9 9" ctrlrange="0 {FINGER_TRAVEL}"/>')
    table_half = (0.65, 0.42, TABLE_TOP_Z / 2)
    return f"""<mujoco model="vla_bridge_piper_pair">
<compiler angle="radian" autolimits="true"/>
<option timestep="{timestep}" integrator="implicitfast" cone="elliptic" impratio="10"/>
<visual><global offwidth="1280" offheight="960"/><quality shadowsize="0"/>
<headlight ambient="0.45 0.45 0.45" diffuse="0.5 0.5 0.5"/></visual>
<default>
  <joint damping="{act['damping']}" armature="{act['armature']}" frictionloss="{act['frictionloss']}"/>
  <default class="arm_joint"><joint type="hinge" axis="0 0 1"/></default>
  <default class="link"><geom rgba="0.75 0.75 0.78 1" contype="0" conaffinity="0" group="1"/></default>
  <default class="pad"><geom rgba="0.15 0.15 0.15 1" friction="1.5 0.02 0.001" condim="6"
    solref="0.008 1" solimp="0.95 0.99 0.001"/></default>
</default>
<asset>
  <texture name="grid" type="2d" builtin="checker" width="256" height="256" rgb1="0.35 0.37 0.4" rgb2="0.3 0.32 0.35"/>
  <material name="floor" texture="grid" texrepeat="8 8"/>
  <material name="table" rgba="0.62 0.5 0.38 1"/>
  {"".join(f'<texture name="{n}" type="2d" width="128" height="128" {attrs}/><material name="{n}" texture="{n}" texrepeat="{rep}" texuniform="true"/>' for n, attrs, rep in PERTURB_TEXTURES)}
  {"".join(cue_assets)}
  {"".join(asset for asset, _ in extra_bodies)}
</asset>
<worldbody>
  <!-- no shadows: on a CPU renderer they cost 5x per image (26 ms vs 5 ms at 320x240) -->
  <light name="key" pos="0 -0.3 2.2" dir="0 0.1 -1" diffuse="0.6 0.6 0.6" castshadow="false"/>
  <geom name="floor" type="plane" size="3 3 0.1" material="floor"/>
  <geom name="table" type="box" size="{_v(table_half)}" pos="0 -0.1 {TABLE_TOP_Z / 2}" material="table" friction="1 0.005 0.0001"/>
  {"".join(f'<camera name="{c.name}" fovy="{c.fovy_deg}" pos="{_v(c.pos)}" xyaxes="{_v(c.xyaxes)}"/>' for c in world_cams)}
  {arms}
  {"".join(fixture_xml(f, spawn[f.name]) for f in fixtures)}
  {"".join(object_xml(o, spawn[o.name]) for o in objects)}
  {"".join(cue_bodies)}
  {"".join(body for _, body in extra_bodies)}
</worldbody>
<actuator>
  {"".join(actuators)}
</actuator>
</mujoco>"""
