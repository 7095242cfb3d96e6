"""vla_bridge.ros.reach over real DDS, two nodes in this process: a writer reaches its peer
only once the peer's subscription is known and matched, and a ReadyGate holds a `ready` until
then (or sends it after its timeout, with a warning naming the topic)."""
from __future__ import annotations

import time
import uuid

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from vla_bridge import contract as C  # noqa: E402
from vla_bridge.ros import messages, reach  # noqa: E402


@pytest.fixture()
def graph():
    """(writer node, its publisher, a factory of peer nodes, spin(until, timeout))."""
    rclpy.init()
    topic = f"/vla_bridge_test/reach_{uuid.uuid4().hex[:8]}"
    executor = SingleThreadedExecutor()
    writer = Node("reach_writer")
    executor.add_node(writer)
    publisher = writer.create_publisher(String, topic, messages.qos_profile(C.QOS_EVENTS))
    peers = []

    def peer(name: str, qos=None) -> Node:
        node = Node(name)
        node.create_subscription(String, topic, lambda msg: None,
                                 qos or messages.qos_profile(C.QOS_EVENTS))
        executor.add_node(node)
        peers.append(node)
        return node

    def spin(until, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if until():
                return True
            executor.spin_once(timeout_sec=0.02)
        return until()

    try:
        yield writer, publisher, peer, spin
    finally:
        for node in [writer, *peers]:
            node.destroy_node()
        rclpy.shutdown()


def test_a_writer_reaches_a_peer_only_once_its_subscription_is_matched(graph):
    writer, publisher, peer, spin = graph
    why = reach.unreached(writer, publisher, {"/reach_policy"})
    assert why == f"{publisher.topic_name}: no subscription of /reach_policy known yet"
    peer("reach_policy")
    assert spin(lambda: reach.unreached(writer, publisher, {"/reach_policy"}) is None)
    assert publisher.get_subscription_count() == 1
    assert reach.node_names(writer.get_subscriptions_info_by_topic(publisher.topic_name)) \
        == {"/reach_policy"}


def test_a_subscription_the_writer_cannot_serve_is_not_waited_for(graph):
    writer, publisher, peer, spin = graph
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)  # volatile writer: no match
    peer("reach_viewer", qos=latched)
    assert spin(lambda: writer.count_subscribers(publisher.topic_name) == 1)
    time.sleep(0.3)
    assert publisher.get_subscription_count() == 0
    assert reach.unreached(writer, publisher, set()) is None
    assert "no subscription of /reach_policy" in reach.unreached(writer, publisher,
                                                                  {"/reach_policy"})


def test_the_gate_holds_ready_until_the_peer_is_reached(graph):
    writer, publisher, peer, spin = graph
    sent = []
    gate = reach.ReadyGate(writer, lambda: [(publisher, {"/reach_evaluator"})])
    gate.answer(lambda: sent.append("first"))
    gate.answer(lambda: sent.append("again"))  # a repeated begin: the newer answer replaces it
    assert not spin(lambda: sent, timeout=0.3) and gate.waits == 1
    peer("reach_evaluator")
    assert spin(lambda: sent)
    spin(lambda: False, timeout=0.2)
    assert sent == ["again"]
    gate.answer(lambda: sent.append("now"))  # reached: no wait
    assert sent == ["again", "now"] and gate.waits == 1


def test_the_gate_answers_after_its_timeout_with_one_warning(graph):
    writer, publisher, _, spin = graph
    sent, warnings = [], []
    gate = reach.ReadyGate(writer, lambda: [(publisher, {"/nobody"})], timeout=0.3)
    gate.node = _LoggedNode(writer, warnings)
    t0 = time.monotonic()
    gate.answer(lambda: sent.append("ready"))
    assert spin(lambda: sent, timeout=5.0) and 0.3 <= time.monotonic() - t0 < 3.0
    assert warnings == [f"answering ready after 0.3 s although discovery is not done "
                        f"({publisher.topic_name}: no subscription of /nobody known yet)"]


def test_a_cancelled_answer_is_never_sent(graph):
    writer, publisher, peer, spin = graph
    sent = []
    gate = reach.ReadyGate(writer, lambda: [(publisher, {"/reach_late"})])
    gate.answer(lambda: sent.append("ready"))
    gate.cancel()  # the episode ended first
    peer("reach_late")
    spin(lambda: reach.unreached(writer, publisher, {"/reach_late"}) is None)
    spin(lambda: False, timeout=0.2)
    assert sent == []


class _LoggedNode:
    """The writer node with its warnings kept (the gate logs through node.get_logger())."""

    def __init__(self, node, warnings: list):
        self._node, self._warnings = node, warnings

    def __getattr__(self, name):
        return getattr(self._node, name)

    def get_logger(self):
        warnings = self._warnings

        class Logger:
            def warning(self, text):
                warnings.append(text)
        return Logger()
