"""The sim node (built in-process) against malformed episode control: each bad message is
logged once and changes nothing -- a half-valid begin neither takes the episode over nor
resets the scene; a following valid episode still works."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("rclpy")

from std_msgs.msg import String  # noqa: E402

from support.junk_messages import JUNK_CONTROL, half_valid_begins  # noqa: E402
from vla_bridge.benchmarks.robofollow.tasks import load_suite  # noqa: E402

TASK = load_suite().get("L0_pickup_yellow_block_3").to_dict()


@pytest.fixture(scope="module")
def node(sim_node_in_process):
    return sim_node_in_process


def control(kind: str, episode: str, **fields) -> String:
    return String(data=json.dumps({"kind": kind, "episode": episode, **fields}))


def begin(episode: str, **fields) -> String:
    return control("begin", episode, **{"task": TASK, "seed": 3, "max_policy_calls": 2,
                                        "max_actions_per_call": 5, **fields})


def test_junk_control_is_logged_once_each_and_changes_nothing(node):
    node.on_control(begin("e1"))
    node.on_control(control("start", "e1"))
    assert node.episode == "e1" and node.running and node.pending_stamp_ns is not None
    state = (node.pending_stamp_ns, node.clock_offset, node.session.backend.time)
    sent, errors = len(node.sent), len(node.log.lines["error"])

    junk = JUNK_CONTROL + half_valid_begins(TASK) + [
        json.dumps({"kind": "begin", "episode": "junk@2", "seed": 1, "task": t})
        for t in ({"scene": "scene1"}, {"scene": 1, "layout": "x"})]
    for data in junk:
        node.on_control(String(data=data))  # must not raise
    lines = node.log.lines["error"][errors:]
    assert len(lines) == len(junk), lines
    assert all(line.startswith("ignored a malformed episode control message") for line in lines)
    assert max(map(len, lines)) < 600
    assert node.episode == "e1" and node.running  # the running episode is untouched
    assert (node.pending_stamp_ns, node.clock_offset, node.session.backend.time) == state
    assert len(node.sent) == sent  # junk gets no status: it belongs to no episode


def test_a_begin_for_an_unknown_scene_is_reported_under_its_own_id(node):
    node.on_control(begin("e1"))
    node.on_control(begin("e9", task={**TASK, "scene": "scene99"}))
    assert node.episode == "e1"
    assert node.sent[-1]["kind"] == "error" and node.sent[-1]["episode"] == "e9"
    assert "scene99" in node.sent[-1]["message"]

    node.on_control(begin("e2"))  # the next valid episode works
    assert node.episode == "e2" and node.sent[-1]["kind"] == "ready"
    node.on_control(control("end", "e2"))
    assert node.episode is None


@pytest.mark.parametrize("edits", [
    {"replace": "chocolate_pudding"},  # not a mapping
    {"replace": {"small_red_cube": "no_such_libero_object"}},
    {"replace": {"no_such_body": "chocolate_pudding"}},
    {"add": [["chocolate_pudding", "nowhere"]]},
    {"add": "chocolate_pudding"},
])
def test_a_probe_begin_with_junk_edits_is_refused_under_its_id_and_the_node_goes_on(node, edits):
    """#25: an INT-ACT probe's begin carries the task's scene edits (TaskSpec.edits); junk
    edits from outside get an error status naming the episode, leave no half-edited scene,
    and the next probe's begin works."""
    from vla_bridge.benchmarks.intact.probes import probe
    node.on_control(begin("p1", task={**TASK, "edits": edits}))
    assert node.sent[-1]["kind"] == "error" and node.sent[-1]["episode"] == "p1", node.sent[-1]
    assert len(node.sent[-1]["message"]) < 600 and "scene edit" in node.sent[-1]["message"]
    good = probe("intact_ood_source_pudding_green").task.to_dict()
    node.on_control(begin("p2", task=good))
    assert node.sent[-1]["kind"] == "ready" and node.episode == "p2"
    assert "chocolate_pudding" in node.session.backend.world_state().objects
    node.on_control(control("end", "p2"))


def test_a_repeated_begin_is_answered_again_without_a_second_reset(node, monkeypatch):
    """The evaluator sends a begin again when its answer is late (a lost begin or ready): the
    node answers the same ready and leaves the reset scene as it is."""
    resets = []
    reset = node.session.begin
    monkeypatch.setattr(node.session, "begin", lambda *a, **k: (resets.append(a), reset(*a, **k)))
    node.on_control(begin("e5"))
    ready = node.sent[-1]
    node.on_control(begin("e5"))
    assert node.sent[-2:] == [ready, ready] and ready["kind"] == "ready"
    assert ready["episode"] == "e5" and len(resets) == 1
    node.on_control(begin("e6"))  # a new episode resets
    assert len(resets) == 2 and node.sent[-1]["episode"] == "e6"
    node.on_control(control("end", "e6"))


# ------------------------------------------------------------------ one sim node, every backend
@pytest.mark.parametrize("parameters, says", [
    ({"backend": "libero", "lock_step": False}, "renders only the steps before an observation"),
    ({"backend": "libero", "image_every_tick": True},
     "renders only the steps before an observation"),
    ({"backend": "mujoco", "embodiment": "libero_panda"},
     "speaks embodiment 'aloha_piper', the graph declares 'libero_panda'"),
    ({"backend": "bullet"}, "unknown sim backend 'bullet'"),
])
def test_the_one_sim_node_refuses_what_its_backend_cannot_do(parameters, says):
    """The sim node drives every registered backend (LIBERO's is built here without LIBERO:
    the refusals come before any scene loads) and refuses, naming the reason, a mode the
    backend cannot run or an embodiment it does not speak."""
    from support.junk_messages import in_process
    from vla_bridge.sim_nodes import sim_node as S
    with pytest.raises(ValueError, match=says):
        with in_process(S, S.SimNode, parameters):
            pass


def test_every_sim_graph_runs_the_one_sim_node_and_evaluator_node():
    from vla_bridge.ros.launch_args import GRAPHS
    modules = {}
    for graph in GRAPHS.values():
        for node in graph.nodes:
            modules.setdefault(node.name, set()).add(node.module)
    assert modules["sim_node"] == {"vla_bridge.sim_nodes.sim_node"}
    assert modules["evaluator_node"] == {"vla_bridge.evaluation.evaluator_node"}
    assert all(len(m) == 1 for m in modules.values()), modules  # one module per node name


def _run_one_chunk(node, episode: str) -> None:
    """Begin and start `episode`, then answer its first observation with a hold chunk (the
    begin's budget: 5 ticks)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    node.on_control(begin(episode))
    node.on_control(control("start", episode))
    msg = JointTrajectory(joint_names=list(node.embodiment.action_names))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(node.pending_stamp_ns, 1_000_000_000)
    hold = node.session.command.tolist()
    msg.points = [JointTrajectoryPoint(positions=hold) for _ in range(5)]
    node.on_chunk(msg)


def test_frame_rows_are_built_only_while_someone_subscribes_to_the_frames(node, monkeypatch):
    """#23/#26: a benchmark that reads no frames (LIBERO's evaluator does not subscribe) costs
    the sim no world-state rows; once a subscriber is there (the RoboFollow evaluator, a bag)
    every tick has its row again."""
    counts = {}
    monkeypatch.setattr(node.pub_frames, "get_subscription_count", lambda: counts["frames"])
    rows, ticks = [], []
    def flush() -> None:  # what would be published, as the node's own flush empties the rows
        rows.append(node.frame_rows)
        node.frame_rows = []
    monkeypatch.setattr(node, "flush_frames", flush)
    publish_tick = node.publish_tick
    monkeypatch.setattr(node, "publish_tick", lambda: (ticks.append(1), publish_tick()))
    for listeners in (0, 1):
        counts["frames"] = listeners
        rows.clear(), ticks.clear()
        _run_one_chunk(node, f"frames{listeners}")
        built = sum(len(r) for r in rows) + len(node.frame_rows)
        assert len(ticks) >= 5  # the settle ticks and the chunk's 5
        assert built == (len(ticks) if listeners else 0), (listeners, built, len(ticks))
        assert node.sent[-1]["kind"] == "chunk_done", node.sent[-3:]


def _unsent(msg):
    """A frames message with every row's ``published`` field set to 0."""
    import numpy as np

    from vla_bridge.ros import messages
    fields = [(d.label, d.size) for d in msg.layout.dim[1:]]
    rows = np.frombuffer(msg.data).reshape(msg.layout.dim[0].size, -1).copy()
    rows[:, sum(size for label, size in fields[:[f[0] for f in fields].index("published")])] = 0
    return messages.frames_msg(rows, fields)


def test_lock_step_sends_tick_messages_only_to_nodes_that_read_them_from_no_frames(node, monkeypatch):
    """#26: in lock-step the policy and the evaluator read /joint_states only at observations
    (contract.OBSERVATION_READERS), and a recorder rebuilds /clock, /joint_states and
    /joint_commands from the frames' rows (contract.FRAME_EXPANDERS): with only them
    subscribed a tick publishes none of the three, and each row says so (``published`` 0);
    any other node (a viewer) gets every tick again, and the rows say they went out. Each
    observation's joint state goes out either way."""
    from types import SimpleNamespace

    from rclpy.serialization import serialize_message

    from vla_bridge import contract as C
    from vla_bridge.ros import tick_frames
    readers: list[str] = []
    observers = ["policy_node", "evaluator_node"]
    pubs = {C.TOPIC_CLOCK: node.pub_clock, C.TOPIC_JOINT_STATES: node.pub_joints,
            C.TOPIC_JOINT_COMMANDS: node.pub_cmd}
    sent = {topic: [] for topic in pubs}

    def subscribers(topic: str) -> list[str]:  # the observers read no /clock or commands
        return [n for n in readers if topic == C.TOPIC_JOINT_STATES or n not in observers]

    for topic, pub in pubs.items():
        monkeypatch.setattr(pub, "get_subscription_count", lambda t=topic: len(subscribers(t)))
        monkeypatch.setattr(pub, "publish", lambda msg, topic=topic: sent[topic].append(msg))
    monkeypatch.setattr(node.pub_frames, "get_subscription_count", lambda: 1)
    monkeypatch.setattr(node, "get_subscriptions_info_by_topic",
                        lambda topic: [SimpleNamespace(node_name=n) for n in subscribers(topic)])
    frames = []
    monkeypatch.setattr(node.pub_frames, "publish", frames.append)
    publish_tick = node.publish_tick
    ticks = []
    monkeypatch.setattr(node, "publish_tick", lambda: (ticks.append(1), publish_tick()))
    for names, per_tick in ((observers, False), (observers + ["recorder_node"], False),
                            (observers + ["recorder_node", "viewer_node"], True)):
        readers[:] = names
        ticks.clear(), frames.clear()
        for stream in sent.values():
            stream.clear()
        _run_one_chunk(node, f"ticks{len(names)}")
        observations = 2  # the episode's first observation and the one after the chunk
        assert len(sent[C.TOPIC_JOINT_STATES]) == observations + (len(ticks) if per_tick else 0)
        assert len(sent[C.TOPIC_CLOCK]) == len(sent[C.TOPIC_JOINT_COMMANDS]) \
            == (len(ticks) if per_tick else 0), names
        rebuilt = [t for msg in frames for t in tick_frames.unpublished_ticks(msg)]
        assert len(rebuilt) == (0 if per_tick else 3 * len(ticks)), names
    # what a recorder rebuilds is what the sim sends: the last run's rows marked unsent
    rebuilt = [t for msg in frames for t in tick_frames.unpublished_ticks(_unsent(msg))]
    for topic, stream in sent.items():
        mine = [serialize_message(m) for t, _, m in rebuilt if t == topic]
        theirs = [serialize_message(m) for m in stream]
        assert len(mine) == len(ticks) and all(m in theirs for m in mine), topic
        if topic != C.TOPIC_JOINT_STATES:  # /joint_states also carries the observations
            assert mine == theirs, topic
    assert C.OBSERVATION_READERS == {"policy_node", "evaluator_node"}
    assert C.FRAME_EXPANDERS == {"recorder_node"}
