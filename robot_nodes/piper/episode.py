"""The real graph's episode protocol, as the evaluator hears it from a sim node; the PiPER node
owns it (robot_nodes/piper/piper_node.py: it executes the chunks), without rclpy here.

On contract.TOPIC_EPISODE_STATUS:
  ready       {"tick": 0, "stamp": s} once the arms are ready and the tracker is too (below);
              `s` is the stamp of the episode's first frame. A repeated begin (the evaluator's
              begin or this ready was lost) gets the same ready again and resets nothing.
  chunk_done  {"tick": frames - 1, "calls": n} after every executed (or cut) chunk
  done        {"ticks": frames - 1, "calls": n, "reason": ...} once the begin's
              max_policy_calls are spent
  error       {"message": ...}: at begin, when `ready_wait_s` after it the table is still not
              calibrated, the tracker node is not heard, or an object the task names
              (`task_objects`) is not tracked (with `require_task_objects`); in an episode
              with no progress (ready, chunk_done) for `stall_timeout_s`: the frames keep
              coming, so the evaluator's own progress timeout would never fire; when the
              tracker node is gone; a rejected action chunk.
On contract.TOPIC_FRAMES, from the ready to the done (batches every `flush_period_s` and at
every status): one frame per joint_commands message the node publishes: its stamp, the
executed command, both TCPs by forward kinematics of the measured joints (an arm the node does
not drive at home), and the tracked objects' newest poses (contract.TOPIC_WORLD_STATE; the
objects tracked at the ready, fixed for the episode). Frames and statuses come from this one
object, so done's `ticks` + 1 is the number of frames sent, and the ready's stamp their first.

Readiness comes from the tracker node's latched status (contract.TOPIC_TRACKER_STATUS:
calibrated, the objects tracked so far); an object counts as tracked once it is in both that
status and a world state.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from vla_bridge import contract as C
from vla_bridge.benchmarks.robofollow.scoring import needed_objects
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.ros import messages
from vla_bridge.robot_nodes.tracker.tracker import tcp_states
from vla_bridge.embodiment.world import ObjectState, WorldState

__all__ = ["TASK_OBJECT_KEYS", "TARGET_OBJECT_KEYS", "task_objects", "EpisodeProtocol"]

TASK_OBJECT_KEYS = ("source", "anchor")  # task fields that name tracked objects
TARGET_OBJECT_KEYS = ("target_object", "second_source")  # and fields of its target


def task_objects(task: dict) -> list[str]:
    """The objects a begin's task needs tracked: the ones its scorer reads
    (``scoring.needed_objects``: the source, anchor, target object, a sequence's second
    source, every bowl of a Scene 2 place_bowl), so that a trial never runs whose score would
    fail at its end. A task dict no scorer reads (a partial one: untrusted input) names the
    objects of its fields (TASK_OBJECT_KEYS, TARGET_OBJECT_KEYS)."""
    try:
        return needed_objects(TaskSpec.from_dict(task))
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
    target = task.get("target") if isinstance(task.get("target"), dict) else {}
    names = [task.get(k) for k in TASK_OBJECT_KEYS] + [target.get(k) for k in TARGET_OBJECT_KEYS]
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))
NO_COMMANDS = "no /joint_commands from the robot node yet"


class EpisodeProtocol:
    """One robot's episodes (see the module docstring). ``send_status(payload)`` publishes a
    status dict, ``send_frames(rows, fields)`` a batch of frame rows; ``log`` has ``error``.
    Thread-safe: the node calls it from its control, state and episode callbacks."""

    def __init__(self, send_status: Callable[[dict], None],
                 send_frames: Callable[[np.ndarray, list], None], *, ready_wait_s: float,
                 stall_timeout_s: float, require_task_objects: bool = True,
                 flush_period_s: float = 0.25, log=None, clock=time.monotonic):
        self._send_status, self._send_frames = send_status, send_frames
        self.ready_wait_s, self.stall_timeout_s = float(ready_wait_s), float(stall_timeout_s)
        self.require_task_objects = bool(require_task_objects)
        self.flush_period_s = float(flush_period_s)
        self.log, self.clock = log, clock
        self._lock = threading.RLock()
        self.episode: str | None = None
        self.task: dict = {}
        self.asked_at: float | None = None  # begin heard, ready not sent yet
        self.ready_fields: dict | None = None  # the episode's ready (sent again when asked)
        self.recording = False
        self.fields: list | None = None  # frame layout, fixed at the ready
        self.object_order: list[str] = []
        self.pending: list[np.ndarray] = []
        self.rows = 0
        self.last_row_stamp = -1.0
        self.progress_at = clock()
        self.flushed_at = clock()
        self.state: tuple[float, np.ndarray, np.ndarray] | None = None  # (stamp, cmd, measured)
        self.tracker: dict | None = None  # the tracker node's newest status; None: not heard
        self.objects: dict[str, ObjectState] = {}  # newest tracked pose of every object

    # ------------------------------------------------------------------ inputs
    def on_state(self, stamp: float, command: np.ndarray, measured: np.ndarray) -> None:
        """A joint_commands message the node published (14-value contract vectors)."""
        with self._lock:
            self.state = (stamp, command, measured)
            if self.recording and stamp > self.last_row_stamp:
                self._record_row()

    def on_tracker(self, status: dict | None) -> None:
        """The tracker node's status; None: it is gone (nobody publishes it)."""
        with self._lock:
            self.tracker = status

    def on_world(self, world: WorldState) -> None:
        with self._lock:
            self.objects.update(world.objects)

    # ------------------------------------------------------------------ episode control
    def begin(self, episode: str, task: dict | None) -> None:
        """A begin of a new episode: the ready goes out once the tracker is ready (poll)."""
        with self._lock:
            self.flush()
            self.episode, self.task = str(episode), dict(task or {})
            self.recording, self.fields, self.rows, self.pending = False, None, 0, []
            self.ready_fields = None
            self.asked_at = self.clock()
            self._poll_ready()

    def repeat(self) -> None:
        """The current episode's begin again: its ready once more (still waiting: later)."""
        with self._lock:
            if self.ready_fields is not None:
                self.status(C.STATUS_READY, **self.ready_fields)

    def end(self) -> None:
        with self._lock:
            self.flush()
            self.recording, self.asked_at, self.ready_fields = False, None, None
            self.episode = None

    def chunk_done(self, calls: int) -> None:
        with self._lock:
            if not self.recording:
                return
            self.flush()
            self.progress_at = self.clock()
            self.status(C.STATUS_CHUNK_DONE, tick=max(self.rows - 1, 0), calls=calls)

    def done(self, calls: int, reason: str) -> None:
        with self._lock:
            if not self.recording:
                return
            self.recording = False
            self.flush()
            self.status(C.STATUS_DONE, ticks=self.rows - 1, calls=calls, reason=reason)

    def error(self, message: str) -> None:
        with self._lock:
            if self.episode is not None:
                self.status(C.STATUS_ERROR, message=message)

    def status(self, kind: str, **fields) -> None:
        self._send_status({"kind": kind, "episode": self.episode, **fields})

    # ------------------------------------------------------------------ the node's timer
    def poll(self) -> None:
        """Retry a pending ready, fail a stalled episode or one whose tracker is gone, and
        send the frames recorded since the last batch."""
        with self._lock:
            self._poll_ready()
            idle = self.clock() - self.progress_at
            if self.recording and self.tracker is None:
                self._fail(f"the tracker node is gone (nobody publishes "
                           f"{C.TOPIC_TRACKER_STATUS}): the objects are no longer tracked")
            elif self.recording and idle > self.stall_timeout_s:
                self._fail(f"the robot reported no progress for {idle:.0f} s (no policy chunk "
                           "executed: is the policy answering the observations?)")
            if self.clock() - self.flushed_at >= self.flush_period_s:
                self.flush()

    def _fail(self, message: str) -> None:
        self.recording = False
        self.flush()
        self._log_error(f"episode {self.episode}: {message}")
        self.status(C.STATUS_ERROR, message=message)

    def _poll_ready(self) -> None:
        """Begin recording once the tracker is ready too, or fail after `ready_wait_s`."""
        if self.asked_at is None:
            return
        problem = self.readiness_problem()
        waited = self.clock() - self.asked_at
        if problem and waited < self.ready_wait_s:
            return
        self.asked_at = None
        if problem:
            self._log_error(f"episode {self.episode}: {problem} (waited {waited:.0f} s)")
            self.status(C.STATUS_ERROR, message=problem)
            return
        self._start_recording()

    def tracked(self) -> list[str]:
        """The objects tracked now, in the tracker's order (its config's)."""
        names = (self.tracker or {}).get("objects") or []
        return [n for n in names if n in self.objects]

    def readiness_problem(self) -> str:
        """Why the episode cannot start yet ("" when it can)."""
        if self.state is None:
            return NO_COMMANDS
        tracker = self.tracker
        if tracker is None:
            return (f"no status from the tracker node ({C.TOPIC_TRACKER_STATUS}): is "
                    "tracker_node running?")
        camera = tracker.get("camera", "")
        if tracker.get("calibration_required") and not tracker.get("calibrated"):
            return (f"the table is not calibrated: board markers {tracker.get('board')} "
                    f"must be visible to {camera} ({tracker.get('image_topic')})")
        if self.require_task_objects:
            wanted = task_objects(self.task)
            tracked = self.tracked()
            missing = [w for w in wanted if w not in tracked]
            if missing:
                return (f"task objects {missing} are not tracked (seen: {sorted(tracked)}); "
                        f"check their markers are visible to {camera}")
        return ""

    # ------------------------------------------------------------------ frames
    def _start_recording(self) -> None:
        self.object_order = self.tracked()
        stamp = self.state[0]
        self.fields = messages.frame_fields(len(C.ALOHA_PIPER.action_names), self._world(stamp))
        self.rows, self.pending, self.last_row_stamp = 0, [], -1.0
        self.recording = True
        self._record_row()
        self.flush()
        self.progress_at = self.clock()
        self.ready_fields = {"tick": 0, "stamp": stamp}
        self.status(C.STATUS_READY, **self.ready_fields)

    def _world(self, stamp: float) -> WorldState:
        return WorldState(stamp=stamp, objects={n: self.objects[n] for n in self.object_order},
                          tcp=tcp_states(self.state[2]))

    def _record_row(self) -> None:
        stamp, command, _ = self.state
        self.pending.append(messages.frame_row(stamp, command, self._world(stamp)))
        self.rows += 1
        self.last_row_stamp = stamp

    def flush(self) -> None:
        with self._lock:
            self.flushed_at = self.clock()
            if self.pending and self.fields is not None:
                self._send_frames(np.array(self.pending), self.fields)
            self.pending = []

    def _log_error(self, text: str) -> None:
        if self.log is not None:
            self.log.error(text)
