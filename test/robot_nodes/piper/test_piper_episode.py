"""The real graph's episode protocol (robot_nodes/piper/episode.py, owned by the PiPER node):
what the evaluator hears on the contract's status and frames topics, driven here message by
message on a fake clock (no ROS graph, no arms)."""
from __future__ import annotations

import numpy as np

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.robot_nodes.piper.episode import EpisodeProtocol
from vla_bridge.embodiment.world import ObjectState, WorldState
from vla_bridge.embodiment.workcell import home_command

TRACKER_READY = {"calibrated": True, "calibration_required": True, "objects": ["yellow_block_3"],
                 "camera": "cam_high", "image_topic": "/cam_high/color/image_raw",
                 "board": [20, 21, 22, 23]}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Log:
    def __init__(self):
        self.errors = []

    def error(self, text):
        self.errors.append(text)


def block(x: float) -> ObjectState:
    return ObjectState(name="yellow_block_3", pos=np.array([x, -0.18, 0.76]),
                       quat=np.array([1.0, 0, 0, 0]), size=np.array([0.04] * 3),
                       rgba=np.array([1.0, 1, 0, 1]), shape="box")


def make(**kwargs):
    sent, frames, clock = [], [], Clock()
    protocol = EpisodeProtocol(
        lambda payload: sent.append((payload.pop("kind"), payload)),
        lambda rows, fields: frames.append(messages.frames_msg(rows, fields)),
        **{"ready_wait_s": 5.0, "stall_timeout_s": 60.0, "log": Log(), "clock": clock,
           **kwargs})
    return protocol, sent, frames, clock


def command(protocol, t):
    protocol.on_state(t, home_command(), home_command())


def test_the_robot_episode_with_its_frames():
    """Every joint command is a frame, `done` counts the frames, a repeated begin gets the same
    ready, a robot that stops making progress fails the episode (the frames keep coming)."""
    protocol, sent, frames, clock = make(stall_timeout_s=0.2)
    protocol.on_tracker(TRACKER_READY)
    protocol.on_world(WorldState(stamp=9.0, objects={"yellow_block_3": block(0.10)}, tcp={}))
    command(protocol, 10.0)
    protocol.begin("e1", {"source": "yellow_block_3"})
    assert sent == [("ready", {"episode": "e1", "tick": 0, "stamp": 10.0})]
    # the evaluator asks again (its begin or our ready was late): the same ready once more,
    # the recording not restarted (one frame 0)
    protocol.repeat()
    assert sent == [("ready", {"episode": "e1", "tick": 0, "stamp": 10.0})] * 2
    assert len(frames) == 1
    sent.pop()
    for t in (10.02, 10.04, 10.04, 10.06):  # a repeated stamp is not a new tick
        command(protocol, t)
    protocol.on_world(WorldState(stamp=10.05, objects={"yellow_block_3": block(0.12)}, tcp={}))
    command(protocol, 10.08)
    protocol.chunk_done(calls=1)
    protocol.done(calls=1, reason="policy-call budget spent")
    command(protocol, 10.10)  # after the done: not the episode's
    protocol.poll()
    assert sent[1:] == [("chunk_done", {"episode": "e1", "tick": 4, "calls": 1}),
                        ("done", {"episode": "e1", "ticks": 4, "calls": 1,
                                  "reason": "policy-call budget spent"})]
    rows = [row for msg in frames for row in messages.parse_frames(msg)]
    assert len(rows) == sent[-1][1]["ticks"] + 1
    assert [r[0] for r in rows] == [10.0, 10.02, 10.04, 10.06, 10.08]
    assert set(rows[0][2].tcp) == {"left", "right"}
    assert [r[2].objects["yellow_block_3"].pos[0] for r in rows] == [0.10] * 4 + [0.12]
    # the same begin after the done is answered, nothing reset
    protocol.repeat()
    assert sent[-1] == ("ready", {"episode": "e1", "tick": 0, "stamp": 10.0})
    protocol.end()

    # a robot that goes quiet mid-episode: the episode fails instead of hanging
    protocol.begin("e2", {})
    assert sent[-1][0] == "ready"
    clock.t += 1.0
    command(protocol, 11.0)
    protocol.poll()
    assert sent[-1][0] == "error" and "no progress" in sent[-1][1]["message"]
    assert sent[-1][1]["episode"] == "e2" and not protocol.recording
    heard = len(frames)
    command(protocol, 11.02)
    protocol.poll()
    assert len(frames) == heard  # no frames after the failure


def test_begin_waits_for_the_tracker_then_fails_with_the_reason():
    """The robot is ready before the tracker is (the cameras' first board view, a task object
    not seen yet): wait for it, up to ready_wait_s, then fail the trial saying why."""
    protocol, sent, frames, clock = make()
    protocol.begin("e3", {})
    assert sent == []  # no joint command published yet: not yet
    command(protocol, 20.0)
    protocol.poll()
    assert sent == []  # no tracker heard yet
    protocol.on_tracker({**TRACKER_READY, "calibrated": False, "objects": []})
    protocol.poll()
    assert sent == []
    protocol.on_tracker({**TRACKER_READY, "objects": []})
    protocol.poll()
    assert sent == [("ready", {"episode": "e3", "tick": 0, "stamp": 20.0})]

    protocol.begin("e4", {"source": "yellow_block_3", "anchor": None})
    clock.t += 5.0
    protocol.poll()
    assert sent[-1] == ("error", {"episode": "e4", "message":
                                  "task objects ['yellow_block_3'] are not tracked (seen: []); "
                                  "check their markers are visible to cam_high"})
    protocol.on_tracker({**TRACKER_READY, "calibrated": False})
    protocol.begin("e5", {})
    clock.t += 5.0
    protocol.poll()
    assert sent[-1] == ("error", {"episode": "e5", "message":
                                  "the table is not calibrated: board markers [20, 21, 22, 23] "
                                  "must be visible to cam_high (/cam_high/color/image_raw)"})
    # a tracker with no objects to track needs no calibration
    protocol.on_tracker({**TRACKER_READY, "calibrated": False, "calibration_required": False,
                         "objects": []})
    protocol.begin("e6", {})
    assert sent[-1][0] == "ready"
    # without the task-object check, an untracked object does not stop the trial
    lenient, sent2, _, _ = make(require_task_objects=False)
    command(lenient, 1.0)
    lenient.on_tracker({**TRACKER_READY, "objects": []})
    lenient.begin("e7", {"source": "yellow_block_3"})
    assert sent2[-1][0] == "ready"

    fresh, sent3, _, clock3 = make(ready_wait_s=0.0)
    fresh.begin("e8", {})
    assert sent3 == [("error", {"episode": "e8",
                                "message": "no /joint_commands from the robot node yet"})]
    assert fresh.log.errors and "e8" in fresh.log.errors[0]


def test_the_objects_a_task_names_include_its_target_bowl_and_second_source():
    from vla_bridge.robot_nodes.piper.episode import task_objects
    assert task_objects({"source": "small_red_cube", "anchor": None,
                         "target": {"target_object": "green_bowl"}}) == ["small_red_cube",
                                                                         "green_bowl"]
    assert task_objects({"source": "a", "target": {"second_arm": "left", "second_source": "b"}}) \
        == ["a", "b"]
    assert task_objects({"source": "a", "target": "junk"}) == ["a"]  # untrusted: no crash
    # a whole task: what its scorer reads, so a Scene 2 place_bowl needs every bowl tracked
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    place = next(t for t in load_suite().eval_tasks("scene2") if t.action == "place_bowl")
    bowls = [f.name for f in load_scene("scene2").fixtures.values() if f.kind == "bowl"]
    assert len(bowls) == 2 and place.target["target_object"] in bowls
    assert sorted(task_objects(place.to_dict())) == sorted({place.source, *bowls})
    protocol, sent, _, clock = make(ready_wait_s=1.0)
    command(protocol, 1.0)
    protocol.on_tracker({**TRACKER_READY, "objects": ["yellow_block_3"]})
    protocol.on_world(WorldState(stamp=1.0, objects={"yellow_block_3": block(0.1)}, tcp={}))
    protocol.begin("e1", {"source": "yellow_block_3", "target": {"target_object": "green_bowl"}})
    clock.t += 1.5
    protocol.poll()
    assert sent[-1] == ("error", {"episode": "e1", "message":
                                  "task objects ['green_bowl'] are not tracked (seen: "
                                  "['yellow_block_3']); check their markers are visible to "
                                  "cam_high"})


def test_an_object_counts_as_tracked_once_a_world_state_holds_it():
    protocol, sent, frames, clock = make(ready_wait_s=1.0)
    command(protocol, 1.0)
    protocol.on_tracker(TRACKER_READY)  # the status may come before the world state
    protocol.begin("e1", {"source": "yellow_block_3"})
    assert sent == []
    protocol.on_world(WorldState(stamp=1.0, objects={"yellow_block_3": block(0.1)}, tcp={}))
    protocol.poll()
    assert sent[-1][0] == "ready"
    fields = [d.label for d in frames[0].layout.dim[1:]]
    assert fields == ["stamp", "command", "tcp:left", "tcp:right", "obj:yellow_block_3"]


def test_a_tracker_that_goes_away_fails_the_episode():
    protocol, sent, frames, clock = make()
    command(protocol, 1.0)
    protocol.on_tracker({**TRACKER_READY, "objects": []})
    protocol.begin("e1", {})
    protocol.on_tracker(None)
    protocol.poll()
    assert sent[-1][0] == "error" and "tracker node is gone" in sent[-1][1]["message"]
    protocol.begin("e2", {})
    clock.t += 5.0
    protocol.poll()
    assert sent[-1] == ("error", {"episode": "e2", "message":
                                  f"no status from the tracker node ({C.TOPIC_TRACKER_STATUS}): "
                                  "is tracker_node running?"})


def test_a_rejected_chunk_is_reported_in_an_episode_only():
    protocol, sent, _, _ = make()
    protocol.error("rejected action chunk: bad")
    assert sent == []
    command(protocol, 1.0)
    protocol.on_tracker({**TRACKER_READY, "objects": []})
    protocol.begin("e1", {})
    protocol.error("rejected action chunk: bad")
    assert sent[-1] == ("error", {"episode": "e1", "message": "rejected action chunk: bad"})
