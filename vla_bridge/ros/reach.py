"""Whether a node's messages reach the nodes it works with, and a `ready` that waits for it.

DDS delivers a reliable sample to a reader only if the writer had matched that reader when it
published. Nodes that start together discover each other pair by pair, and each direction of a
pair at its own time: the evaluator may already see every node while the sim's writers do not
yet know the policy's readers (or the evaluator's). A lock-step graph that sends its first
observation, or a `ready`, over a writer that has not matched its reader loses it and waits
for ever. So the sim and policy nodes answer `ready` only once their writers reach their peers
(`ReadyGate`); the evaluator re-sends `begin` until every node answered (a lost `begin` or
`ready` costs a resend, never the run).

A writer reaches its peers when this node's graph lists a subscription of every peer node on
its topic, and the writer has matched every listed subscription whose QoS it can serve.
"""
from __future__ import annotations

import time
from typing import Callable

from rclpy.qos import QoSCompatibility, qos_check_compatible

from vla_bridge import contract as C

__all__ = ["REACH_TIMEOUT_S", "ReadyGate", "node_names", "publishing_nodes", "unreached"]

#: how long a `ready` waits for discovery before it is sent anyway (with a warning naming the
#: topic); discovery on one host takes well under a second, re-announced every 0.5 s
REACH_TIMEOUT_S = 10.0
POLL_S = 0.02


def node_names(infos) -> set[str]:
    """Fully qualified node names ("/ns/name") of graph endpoint infos."""
    return {f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in infos}


def publishing_nodes(node, topic: str) -> set[str]:
    """The nodes this node's graph lists as publishers of ``topic`` (itself left out)."""
    return node_names(node.get_publishers_info_by_topic(topic)) - {node.get_fully_qualified_name()}


def unreached(node, publisher, peers: set[str]) -> str | None:
    """Why ``publisher`` of ``node`` does not reach its readers yet (None: it does): a peer
    node with no known subscription on its topic, or known subscriptions not matched."""
    topic = publisher.topic_name
    infos = node.get_subscriptions_info_by_topic(topic)
    missing = peers - node_names(infos)
    if missing:
        return f"{topic}: no subscription of {', '.join(sorted(missing))} known yet"
    servable = [i for i in infos if _compatible(publisher.qos_profile, i.qos_profile)]
    matched = publisher.get_subscription_count()
    if matched < len(servable):
        return f"{topic}: {matched} of {len(servable)} subscriptions matched"
    return None


def _compatible(writer_qos, reader_qos) -> bool:
    try:
        return qos_check_compatible(writer_qos, reader_qos)[0] != QoSCompatibility.ERROR
    except Exception:  # noqa: BLE001 - a profile rmw cannot judge: do not wait for it
        return False


class ReadyGate:
    """Sends a node's `ready` once ``checks()`` say its writers reach their peers.

    ``checks()`` gives [(publisher, peer node names)]; it is called on every poll, so peers
    found from the graph (`publishing_nodes`) are current. A newer answer replaces one still
    waiting (a repeated `begin`). After ``timeout`` the answer is sent anyway, with one
    warning naming what was not reached: the evaluator's own timeout then tells the story."""

    def __init__(self, node, checks: Callable[[], list], timeout: float = REACH_TIMEOUT_S,
                 poll: float = POLL_S):
        self.node, self.checks, self.timeout, self.poll = node, checks, timeout, poll
        self.pending: Callable[[], None] | None = None
        self.since = 0.0
        self.timer = None
        self.waits = 0  # answers that had to wait (a figure for tests and logs)

    def why_not(self) -> str | None:
        for publisher, peers in self.checks():
            why = unreached(self.node, publisher, peers)
            if why is not None:
                return why
        return None

    def answer(self, send: Callable[[], None]) -> None:
        """Call ``send()`` now if the writers reach their peers, else once they do."""
        if self.why_not() is None:
            self.pending = None
            send()
            return
        if self.pending is None:
            self.waits += 1
            self.since = self._now()
        self.pending = send
        if self.timer is None:
            self.timer = self.node.create_timer(self.poll, self._poll)
        else:
            self.timer.reset()

    def send_ready(self, status: Callable, episode: str | None, fields: dict) -> None:
        """``answer`` with ``status(ready, episode=episode, **fields)``: the episode and fields
        as they are now (a later begin must not change what this answer says)."""
        fields = dict(fields)
        self.answer(lambda: status(C.STATUS_READY, episode=episode, **fields))

    def cancel(self) -> None:
        """Drop an answer still waiting (the episode ended or was replaced)."""
        self.pending = None
        if self.timer is not None:
            self.timer.cancel()

    def _poll(self) -> None:
        if self.pending is None:
            self.timer.cancel()
            return
        why = self.why_not()
        if why is not None and self._now() - self.since < self.timeout:
            return
        if why is not None:
            self.node.get_logger().warning(f"answering ready after {self.timeout:g} s although "
                                           f"discovery is not done ({why})")
        send, self.pending = self.pending, None
        self.timer.cancel()
        send()

    @staticmethod
    def _now() -> float:
        return time.monotonic()
