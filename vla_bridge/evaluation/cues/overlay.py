"""Visual-cue overlay inside the node graph: raw camera images in, cue-conditioned images out.

``CueOverlay(node, cameras)`` attaches to an existing rclpy node (the evaluator's). It
subscribes to every camera's raw image and ``camera_info``, the world state and the joint
states (contract topics), and republishes each image on ``contract.cued_image_topic(camera)``
with the very same header. With no cue set (``set_cue(None)``) images pass through unchanged,
so a policy reading the cued topics works with or without a cue protocol.

Per observation stamp the overlay waits until the images of every camera arrived, plus, when
the cue is scene-anchored or a ghost trajectory, the world state and joint state with that
stamp (the sim sends them with every observation). Camera models come from
``embodiment.cameras`` (cam_high fixed, wrist cameras from the joint state) or, when the sim
publishes them (LIBERO), the world state's camera poses; intrinsics from ``camera_info``. One ``CueInserter`` call conditions all cameras of the stamp (eq. 8a). The
conditioning is ``benchmarks.vifo.replay.CueConditioner``, the same pure code path that
``vla-bridge report --videos`` runs on replayed frames.

F3 ghost trajectories need future-state renders the graph does not have; the overlay builds
the ghost layers by projecting the source object's box at K poses along its path from where
it stood at the first observation to the cue's target point (``projected_ghost_layers``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from sensor_msgs.msg import CameraInfo, Image, JointState
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.ros.stamp_sync import StampSync

# the conditioning itself is pure and shared with the report's replay videos (vifo.replay)
from vla_bridge.benchmarks.vifo.families import CueSpec
from vla_bridge.benchmarks.vifo.insertion import CueInserter
from vla_bridge.benchmarks.vifo.replay import CueConditioner, ghost_path, projected_ghost_layers

ALOHA = C.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

__all__ = ["CueOverlay", "OverlayStats", "projected_ghost_layers", "ghost_path"]

KEEP_STAMPS = 16  # observation parts kept while waiting for the rest


# ----------------------------------------------------------------------------- node helper

@dataclass
class OverlayStats:
    """Per-episode bookkeeping of the overlay (reset by ``set_cue``)."""
    observations: int = 0  # stamps conditioned and republished (all cameras)
    passthrough: int = 0  # images republished unchanged (no cue)
    insert_ms: list = field(default_factory=list)  # per observation, all cameras
    changed: dict = field(default_factory=dict)  # camera -> list of changed-pixel fractions
    dropped: int = 0  # stamps evicted before they were complete

    def to_dict(self) -> dict:
        ms = self.insert_ms
        return {"observations": self.observations, "passthrough": self.passthrough,
                "dropped": self.dropped,
                "insert_ms_mean": round(float(np.mean(ms)), 3) if ms else None,
                "changed_fraction": {c: round(float(np.mean(v)), 4)
                                     for c, v in self.changed.items() if v}}


class CueOverlay:
    """Republishes raw camera images as cue-conditioned images (see the module docstring).

    ``set_cue(cue, world_state_provider=None)`` sets the episode's cue (None: pass-through).
    ``world_state_provider``, when given, is ``f(stamp_s) -> WorldState | None`` and replaces
    the world-state topic (e.g. a replay or a real-arm tracker).
    """

    def __init__(self, node, cameras=ALOHA.camera_names, joint_names=ALOHA.state_names,
                 mirrored: bool = False):
        self.node = node
        self.cameras = tuple(cameras)
        self.joint_names = tuple(joint_names)  # the embodiment's state names (/joint_states)
        self.mirrored = mirrored  # the images are mirrored views (Embodiment.mirrored_images)
        for cam in self.cameras:
            C.cued_image_topic(cam)  # validates the name
        q = messages.qos_profile
        self.pub = {c: node.create_publisher(Image, C.cued_image_topic(c), q(C.QOS_IMAGES))
                    for c in self.cameras}
        self._subs = [node.create_subscription(Image, C.image_topic(c),
                                               lambda m, c=c: self.on_image(c, m), q(C.QOS_IMAGES))
                      for c in self.cameras]
        self._subs += [node.create_subscription(CameraInfo, C.camera_info_topic(c),
                                                lambda m, c=c: self.on_info(c, m), q(C.QOS_IMAGES))
                       for c in self.cameras]
        self._subs.append(node.create_subscription(MarkerArray, C.TOPIC_WORLD_STATE,
                                                   self.on_world, q(C.QOS_STATE)))
        # every joint state (not only the newest): in real time the ticks go on while an
        # observation's images are on their way, and the wrist cameras need its joints
        self._subs.append(node.create_subscription(JointState, C.TOPIC_JOINT_STATES,
                                                   self.on_joints, q(C.QOS_STATE)))
        self.cue: CueSpec | None = None
        self.conditioner: CueConditioner | None = None
        self.world_provider: Callable | None = None
        self.focal: dict[str, tuple[int, int, float]] = {}  # camera -> (width, height, focal px)
        self.snapshot: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # first (raw, cued) per cam
        self._reset_buffers()
        self.stats = OverlayStats()

    # ------------------------------------------------------------------ episode
    def set_cue(self, cue: CueSpec | None, world_state_provider: Callable | None = None,
                ghost_renderer=None) -> None:
        """The cue of the coming episode (None: republish images unchanged). ``ghost_renderer``
        (F3): renders future states on a sim copy (sim_nodes.mujoco.ghosts), else projected boxes."""
        self.cue = cue
        self.conditioner = (CueConditioner(cue, ghost_renderer, self.mirrored)
                            if cue is not None else None)
        self.world_provider = world_state_provider
        self.stats = OverlayStats()
        self.snapshot = {}
        self._reset_buffers()

    @property
    def inserter(self) -> CueInserter | None:
        return self.conditioner.inserter if self.conditioner is not None else None

    def _reset_buffers(self) -> None:
        self._parts = StampSync(KEEP_STAMPS)  # stamp -> {"images", "world", "joints"}

    @property
    def needs_world(self) -> bool:
        return self.conditioner is not None and self.conditioner.needs_world

    # ------------------------------------------------------------------ subscriptions
    def on_info(self, camera: str, msg: CameraInfo) -> None:
        self.focal[camera] = (int(msg.width), int(msg.height), float(msg.k[4]))

    def on_world(self, msg: MarkerArray) -> None:
        if self.cue is None or not msg.markers or self.world_provider is not None:
            return
        key = messages.stamp_ns(msg.markers[0].header.stamp)
        self._parts.add(key, "world", messages.msg_to_world_state(msg))
        self._try(key)

    def on_joints(self, msg: JointState) -> None:
        if self.cue is None:
            return
        key = messages.stamp_ns(msg.header.stamp)
        self._parts.add(key, "joints", messages.joint_state_to_array(msg, self.joint_names))
        self._try(key)

    def on_image(self, camera: str, msg: Image) -> None:
        if self.cue is None:
            self.pub[camera].publish(msg)  # the same message: same header, same pixels
            self.stats.passthrough += 1
            return
        key = messages.stamp_ns(msg.header.stamp)
        self._parts.add(key, "images", msg, camera=camera)
        self.stats.dropped = self._parts.dropped
        self._try(key)

    # ------------------------------------------------------------------ conditioning
    def _world_for(self, key: int, part: dict):
        if self.world_provider is not None:
            return self.world_provider(key * 1e-9)
        return part.get("world")

    def _try(self, key: int) -> None:
        part = self._parts.get(key)
        if part is None or len(part["images"]) < len(self.cameras):
            return
        world = joints = None
        if self.needs_world:
            world = self._world_for(key, part)
            if world is None:
                return
            if self.conditioner.needs_joints(self.cameras, world):
                joints = part.get("joints")
                if joints is None:
                    return
        images = self._parts.take(key)["images"]  # and the older stamps, unused
        self.stats.dropped = self._parts.dropped
        self._publish(images, world, joints)

    def _focal(self, cam: str, msg: Image) -> float | None:
        w, h, f = self.focal.get(cam, (msg.width, msg.height, None))
        if (w, h) != (msg.width, msg.height):
            return None  # stale info from another resolution: fall back to the spec
        return f

    def _publish(self, msgs: dict[str, Image], world, joints) -> None:
        t0 = time.perf_counter()
        raw = {c: messages.msg_to_image(m) for c, m in msgs.items()}
        focal = {c: self._focal(c, m) for c, m in msgs.items()}
        cued = self.conditioner(raw, world, joints, focal)
        self.stats.insert_ms.append((time.perf_counter() - t0) * 1e3)
        self.stats.observations += 1
        for c, img in cued.items():
            src = msgs[c]
            out = messages.image_to_msg(np.ascontiguousarray(img), 0.0, src.header.frame_id,
                                      src.encoding)
            out.header = src.header
            self.pub[c].publish(out)
            changed = np.any(img != raw[c], axis=2)
            self.stats.changed.setdefault(c, []).append(float(changed.mean()))
            if c not in self.snapshot:
                self.snapshot[c] = (np.array(raw[c]), np.array(img))

    def destroy(self) -> None:
        for s in self._subs:
            self.node.destroy_subscription(s)
        for p in self.pub.values():
            self.node.destroy_publisher(p)
