"""The evaluator node as a shell (built in-process, no running graph): it declares the run's
parameters, lends itself to the run as its Graph and hands it parsed messages. The episode
logic itself is tested without ROS in test_episodes.py."""
from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from vla_bridge import contract as C  # noqa: E402
from vla_bridge.embodiment.world import ObjectState, TcpState, WorldState  # noqa: E402
from vla_bridge.evaluation import evaluator_node as E  # noqa: E402
from vla_bridge.evaluation.episodes import EngineConfig, Episode, LatencyCollector  # noqa: E402
from vla_bridge.evaluation.robofollow_run import RoboFollowConfig  # noqa: E402
from vla_bridge.evaluation.robofollow_run import RoboFollowRun  # noqa: E402
from vla_bridge.ros import messages  # noqa: E402
from vla_bridge.ros.node_config import defaults  # noqa: E402


@pytest.fixture
def evaluator():
    context = rclpy.Context()
    rclpy.init(context=context)
    with pytest.MonkeyPatch.context() as mp:  # the node's context: ours, not the global one
        mp.setattr(E.Node, "__init__", _in_context(E.Node.__init__, context))
        node = E.EvaluatorNode()
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def _in_context(init, context):
    def wrapped(self, *args, **kwargs):
        kwargs.setdefault("context", context)
        init(self, *args, **kwargs)
    return wrapped


def _world(x: float) -> WorldState:
    quat = np.array([1.0, 0, 0, 0])
    block = ObjectState("yellow_block_1", np.array([x, 0, 0]), quat, np.full(3, 0.04))
    tcp = {"left": TcpState(np.zeros(3), quat), "right": TcpState(np.ones(3), quat)}
    return WorldState(stamp=0.0, objects={"yellow_block_1": block}, tcp=tcp)


def test_the_node_hands_its_parameters_and_itself_to_the_run(evaluator):
    run = evaluator.suite
    assert evaluator.p == {**defaults(EngineConfig), **defaults(RoboFollowConfig)}  # run.json's
    assert run.p is evaluator.p and list(evaluator.p) == [  # engine's first, as before
        *defaults(EngineConfig), *defaults(RoboFollowConfig)]
    assert run.graph is evaluator and isinstance(run.benchmark, RoboFollowRun)
    assert run.benchmark.cues.protocol == "" and run.benchmark.p is evaluator.p
    assert [type(s) for s in run.subscribers] == [LatencyCollector, E.CueOverlayHook]
    assert evaluator.count_publishers(C.TOPIC_EPISODE_CONTROL) == 1  # its own publisher


def test_the_node_hands_parsed_statuses_and_frames_to_the_run(evaluator):
    episode = evaluator.suite.episode = Episode("scene1/t/r1@1", last_progress=0.0)
    evaluator.on_sim_status(messages.json_msg({"kind": "ready", "episode": "other@2",
                                               "stamp": 1.0}))
    assert not episode.sim_ready  # another episode's status
    evaluator.on_sim_status(messages.json_msg({"kind": "ready", "episode": episode.id,
                                               "stamp": 3.5}))
    evaluator.on_policy_status(messages.json_msg({"kind": "ready", "episode": episode.id}))
    assert episode.sim_ready and episode.start_stamp == 3.5 and episode.policy_ready

    command = np.zeros(14)
    fields = messages.frame_fields(14, _world(0.0))
    rows = [messages.frame_row(t, command, _world(t)) for t in (3.0, 3.5, 3.56)]
    evaluator.on_frame(messages.frames_msg(np.array(rows), fields))
    assert episode.frame_count == 3 and episode.last_progress > 0.0
    record = evaluator.suite.build_record(episode)  # the frame stamped before ready is dropped
    assert record.n == 2
    np.testing.assert_allclose(record.pos["yellow_block_1"][:, 0], [3.5, 3.56])


def test_nothing_is_published_once_ctrl_c_shut_the_context_down(evaluator):
    evaluator.send({"kind": C.CONTROL_END, "episode": "e"})  # published
    rclpy.shutdown(context=evaluator.context)
    evaluator.send({"kind": C.CONTROL_END, "episode": "e"})  # no error: skipped
