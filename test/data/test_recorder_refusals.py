"""The recorder reads episode control as the sim and the policy do (issue #29 point 3): junk
gets one log line and is ignored; a bag is complete only when its episode ended normally; a
finished trial's bag is never replaced; a finished run leaves no empty bags/.partial (#27
point 3). Over real DDS, with the recorder node in this process (support.recorder_graph)."""
from __future__ import annotations

import json

import pytest

from support.junk_messages import JUNK_CONTROL, half_valid_begins
from support.recorder_graph import TASK, RecorderGraph, begin_message, images
from vla_bridge import contract as C
from vla_bridge.data import bags as B

rclpy = pytest.importorskip("rclpy")

EPISODE = "scene1/S1_L0_001/r1@1"
NAME = "scene1__S1_L0_001__r1"


def _bags(run) -> list[str]:
    root = run / B.BAGS_DIR
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


@pytest.fixture
def graph(tmp_path):
    graph = RecorderGraph(tmp_path)
    yield graph
    graph.close()


def test_junk_control_mid_episode_is_logged_once_each_and_the_bag_stays_whole(graph, tmp_path):
    """The issue's case: a begin the sim and the policy refuse (here: every malformed control
    message and begin they refuse, and a bare {"kind": "begin", "episode": "inj"}) arrives in
    the middle of an episode. Before: the in-flight bag was closed and filed complete and a
    bag "inj" opened."""
    shots = images(3)
    assert graph.open_bag(EPISODE)["kind"] == C.RECORDER_RECORDING
    graph.send_data(shots[:2], ticks=20)
    junk = (JUNK_CONTROL + half_valid_begins(TASK)
            + [json.dumps({"kind": "begin", "episode": "inj"}),
               json.dumps({"kind": "begin", "episode": "inj@2", "task": TASK, "seed": 1}),
               json.dumps(begin_message("inj@3", task={"scene": "scene1"}))])
    for text in junk:
        graph.raw(text)
    graph.spin_until(lambda: len(graph.log.lines["error"]) >= len(junk), "a log line per junk")
    graph.send_data(shots[2:], ticks=20)
    graph.sim_done(EPISODE)
    graph.control(C.CONTROL_END, EPISODE)
    answer = graph.answer(EPISODE)
    graph.spin_for(0.3)  # nothing else comes

    assert len(graph.log.lines["error"]) == len(junk)  # one line each ...
    assert all("ignored a malformed episode control message" in line
               for line in graph.log.lines["error"])
    assert [s["kind"] for s in graph.status] == [C.RECORDER_RECORDING, C.RECORDER_RECORDED]
    assert answer["kind"] == C.RECORDER_RECORDED  # ... and the bag is whole
    assert _bags(tmp_path) == [NAME]  # no bags/inj, no bags/.partial
    counts = B.read_counts(tmp_path / B.BAGS_DIR / NAME)
    assert counts == {C.TOPIC_INSTRUCTION: 1, C.TOPIC_EPISODE_CONTROL: 2,  # begin, end: no junk
                      C.TOPIC_EPISODE_STATUS: 1, C.image_topic("cam_high"): 3,
                      C.TOPIC_JOINT_STATES: 40}
    assert answer["messages"] == sum(counts.values())


def test_a_bag_is_complete_only_when_its_episode_ended_normally(graph, tmp_path):
    """An end without the sim's done (the episode failed or was stopped), and a begin that
    replaces an episode in flight, leave the bag under .partial and answer 'incomplete'; the
    next complete episode is filed as before."""
    failed, replaced, normal = "scene1/T1/r1@1", "scene1/T2/r1@2", "scene1/T3/r1@3"
    answer = graph.episode(failed, images(1), ticks=5, done=False)
    assert answer["kind"] == "incomplete" and "did not end normally" in answer["reason"]
    assert C.check_status(answer, "recorder")  # the evaluator node takes it (bag_watch)
    assert answer["bag"] == str(tmp_path / B.BAGS_DIR / B.PARTIAL_DIR / "scene1__T1__r1")
    assert B.read_counts(answer["bag"])[C.TOPIC_JOINT_STATES] == 5  # readable, kept

    assert graph.open_bag(replaced)["kind"] == C.RECORDER_RECORDING
    graph.send_data(images(1), ticks=3)
    assert graph.episode(normal, images(1), ticks=4)["kind"] == C.RECORDER_RECORDED
    cut = graph.answer(replaced)
    assert cut["kind"] == "incomplete" and f"a begin of {normal!r}" in cut["reason"]
    assert _bags(tmp_path) == [B.PARTIAL_DIR, "scene1__T3__r1"]
    assert sorted(p.name for p in (tmp_path / B.BAGS_DIR / B.PARTIAL_DIR).iterdir()) == [
        "scene1__T1__r1", "scene1__T2__r1"]
    assert [s["kind"] for s in graph.status if s["episode"] == normal] == [
        C.RECORDER_RECORDING, C.RECORDER_RECORDED]


def test_the_rerun_of_a_failed_episode_replaces_its_partial_bag_and_empties_partial(graph,
                                                                                     tmp_path):
    """#27 point 3: once the rerun is filed, bags/.partial is empty, and is removed."""
    assert graph.episode("scene1/T1/r1@1", images(1), ticks=5, done=False)["kind"] == "incomplete"
    assert graph.episode("scene1/T1/r1@2", images(1), ticks=6)["kind"] == C.RECORDER_RECORDED
    assert _bags(tmp_path) == ["scene1__T1__r1"]
    assert B.read_counts(tmp_path / B.BAGS_DIR / "scene1__T1__r1")[C.TOPIC_JOINT_STATES] == 6


def test_a_begin_of_a_finished_trial_never_replaces_its_bag(graph, tmp_path):
    """The issue's second case: a junk begin with a finished trial's id (a bare one, and a
    well-formed one of the same trial) replaced its complete bag. Both are refused, before its
    results row is written (the recorder filed the bag itself) and after (a new recorder: the
    row in results.jsonl says the trial is finished)."""
    assert graph.episode(EPISODE, images(2), ticks=7)["kind"] == C.RECORDER_RECORDED
    mcap = tmp_path / B.BAGS_DIR / NAME / f"{NAME}.mcap"
    before = mcap.read_bytes()
    for text in (json.dumps({"kind": "begin", "episode": EPISODE}),
                 json.dumps(begin_message(EPISODE.replace("@1", "@9")))):
        graph.raw(text)
    graph.spin_until(lambda: len(graph.log.lines["error"]) == 2, "two log lines")
    graph.spin_for(0.3)
    assert "malformed" in graph.log.lines["error"][0]
    assert "is finished and its bag complete" in graph.log.lines["error"][1]
    assert [s["kind"] for s in graph.status] == [C.RECORDER_RECORDING, C.RECORDER_RECORDED]
    assert mcap.read_bytes() == before and _bags(tmp_path) == [NAME]

    # a fresh recorder on the same run directory, the trial's row written (a resumed run)
    (tmp_path / "results.jsonl").write_text(json.dumps({"key": "scene1/S1_L0_001/r1",
                                                        "status": "ok"}) + "\n")
    bags = B.EpisodeBags(tmp_path, C.recorded_topics())
    assert bags.finished("scene1/S1_L0_001/r1@10")
    with pytest.raises(B.FinishedTrial, match="never replaced"):
        bags.begin("scene1/S1_L0_001/r1@10")
    assert not bags.finished("scene1/S1_L0_002/r1@11")  # another trial: free
    assert mcap.read_bytes() == before and _bags(tmp_path) == [NAME]


def test_a_complete_bag_without_its_row_is_rerun_and_replaced(tmp_path):
    """The evaluator stopped after the bag was filed but before the row was written: a
    resume runs the trial again, and its new bag replaces the old one."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import String
    raw = serialize_message(String(data="{}"))
    topics = {C.TOPIC_EPISODE_CONTROL: "std_msgs/msg/String"}
    first = B.EpisodeBags(tmp_path, topics)
    first.begin("scene1/T/r1@1")
    first.write(C.TOPIC_EPISODE_CONTROL, 1, raw)
    first.end("scene1/T/r1@1")
    rerun = B.EpisodeBags(tmp_path, topics)  # results.jsonl holds no row of scene1/T/r1
    assert not rerun.finished("scene1/T/r1@2")
    rerun.begin("scene1/T/r1@2")
    for stamp in (2, 3):
        rerun.write(C.TOPIC_EPISODE_CONTROL, stamp, raw)
    path, count = rerun.end("scene1/T/r1@2")
    assert count == 2 and B.read_counts(path) == {C.TOPIC_EPISODE_CONTROL: 2}
    assert _bags(tmp_path) == ["scene1__T__r1"]


def test_the_recorder_requires_every_begin_field_the_sim_and_the_policy_read():
    from vla_bridge.data import recorder_node
    from vla_bridge.policy_nodes import policy_node
    from vla_bridge.sim_nodes import sim_node
    assert set(sim_node.BEGIN_NEEDS) | set(policy_node.BEGIN_NEEDS) <= set(
        recorder_node.BEGIN_NEEDS)
    assert set(recorder_node.TASK_KEYS) == {"scene", "layout"}  # the sim's task keys
