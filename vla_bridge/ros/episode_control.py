"""The sim side of episode control, shared by every sim node (MuJoCo / SAPIEN, LIBERO).

``handle_control`` reads one message of ``contract.TOPIC_EPISODE_CONTROL``: a malformed one is
logged in one line and changes nothing (``messages.parse_control``); ``begin`` is taken for any
episode id, ``start`` and ``end`` only for the node's current episode (a stale or foreign one is
ignored); a request whose handler raises is logged and reported as an ``error`` status under
its episode id, so the evaluator learns why, and the node lives on.

A ``begin`` of the current episode again is the evaluator asking once more (its begin or our
``ready`` was lost, see ``vla_bridge.ros.reach``): the node answers ``ready`` again and does not
reset. ``ready`` goes out through the node's ``ReadyGate`` (``sim_ready_gate``): only once its
writers reach the evaluator, the policy and every other reader it knows of.
"""
from __future__ import annotations

from typing import Callable

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.ros.reach import ReadyGate, publishing_nodes

__all__ = ["handle_control", "control_handler", "sim_ready_gate"]


def handle_control(node, msg, *, current_episode: str | None,
                   on_begin: Callable[[dict], None], on_start: Callable[[], None],
                   on_end: Callable[[], None], report_error: Callable[[str, str], None],
                   require=(), task_keys=(), on_repeat: Callable[[], None] | None = None) -> None:
    """Dispatch one control message of ``node`` (see the module docstring);
    ``report_error(episode, message)`` publishes the error status; ``on_repeat()`` answers a
    repeated begin of the current episode (None: it resets again). Never raises."""
    ctl = messages.parse_control(msg, node.get_logger(), require=require, task_keys=task_keys)
    if ctl is None:
        return
    kind, episode = ctl["kind"], ctl["episode"]
    try:
        if kind == C.CONTROL_BEGIN and episode == current_episode and on_repeat is not None:
            on_repeat()
        elif kind == C.CONTROL_BEGIN:
            on_begin(ctl)
        elif kind == C.CONTROL_START and episode == current_episode:
            on_start()
        elif kind == C.CONTROL_END and episode == current_episode:
            on_end()
    except Exception as exc:  # noqa: BLE001 - report, never die on a bad request
        node.get_logger().error(f"episode control {kind!r} of {episode!r} failed: {exc!r}")
        report_error(episode, str(exc))


def control_handler(node, require=(), task_keys=()) -> Callable:
    """The control subscription's callback for a sim node that follows the convention:
    ``node.episode`` (current id), ``node.begin(ctl)``, ``node.start()``, ``node.end()``,
    ``node.answer_ready()`` (a repeated begin) and ``node.status(kind, **fields)``."""
    def on_control(msg) -> None:
        handle_control(node, msg, current_episode=node.episode, on_begin=node.begin,
                       on_start=node.start, on_end=node.end,
                       report_error=lambda episode, message: node.status(
                           C.STATUS_ERROR, episode=episode, message=message),
                       require=require, task_keys=task_keys, on_repeat=node.answer_ready)
    return on_control


def sim_ready_gate(node, episode_writers: Callable[[], list]) -> ReadyGate:
    """The gate of a sim node's ``ready``: ``node.pub_status`` reaches the evaluator,
    ``node.pub_joints`` the policy, and ``episode_writers()`` (the images, world state,
    frames...) every reader this node knows of."""
    def checks() -> list:
        evaluators = publishing_nodes(node, C.TOPIC_EPISODE_CONTROL)
        policies = publishing_nodes(node, C.TOPIC_ACTION_CHUNK)
        return ([(node.pub_status, evaluators), (node.pub_joints, policies)]
                + [(writer, set()) for writer in episode_writers()])
    return ReadyGate(node, checks)
