"""Malformed episode control/status messages, and an in-process node to throw them at: every
node must log each one (one line) and carry on as if it never came (issue #11, point 9)."""
from __future__ import annotations

import contextlib
import json

BIG = "x" * 1_000_000  # 1 MB of junk

#: not a JSON object at all
NOT_AN_OBJECT = ["{not json", "[1,2,3]", '"str"', "null", "", BIG, "[" * 100_000, "42", "true"]
#: JSON objects of the wrong shape, for every control topic's reader
WRONG_CONTROL = [json.dumps(p) for p in (
    {"kind": "begin"},  # no episode id
    {},
    {"kind": 5, "episode": "junk"},
    {"kind": "explode", "episode": "junk"},
    {"kind": "begin", "episode": ""},
    {"kind": "begin", "episode": 7, "task": {}, "instruction": "", "seed": 1},
    {"kind": "start"},
    {"kind": "end", "episode": None},
)]
#: what is thrown at /vla_bridge/episode/control (each of them used to kill the policy node)
JUNK_CONTROL = NOT_AN_OBJECT + WRONG_CONTROL


def half_valid_begins(task: dict) -> list[str]:
    """Begins with a good episode id but a bad field: none may take the episode over."""
    good = {"kind": "begin", "episode": "junk@1", "task": task, "seed": 3,
            "instruction": "pick it", "max_policy_calls": 2, "max_actions_per_call": 5}
    bad = [{"task": "L0_x"}, {"seed": "3"}, {"seed": True}, {"seed": -1},
           {"instruction": None}, {"max_policy_calls": 0}, {"max_actions_per_call": 2.5},
           {"cue_task": [1]}]
    return [json.dumps({**good, **b}) for b in bad] + [
        json.dumps({k: v for k, v in good.items() if k != drop}) for drop in ("task",)]


class RecordingLogger:
    """Stands in for a node's logger: keeps every line by level."""

    def __init__(self):
        self.lines: dict[str, list[str]] = {"info": [], "warning": [], "error": []}

    def _log(self, level: str, text: str, **_kwargs) -> None:
        self.lines[level].append(text)

    def info(self, text, **kw):
        self._log("info", text, **kw)

    def warning(self, text, **kw):
        self._log("warning", text, **kw)

    warn = warning

    def error(self, text, **kw):
        self._log("error", text, **kw)


@contextlib.contextmanager
def in_process(node_module, make_node, parameters: dict | None = None):
    """``make_node()`` (a Node subclass of ``node_module``) on a context of its own, with a
    RecordingLogger as ``node.log``; destroyed afterwards. ``parameters``: the node's
    parameter overrides, as a params file would give them."""
    import pytest
    import rclpy
    from rclpy.parameter import Parameter
    context = rclpy.Context()
    rclpy.init(context=context)
    init = node_module.Node.__init__
    overrides = [Parameter(k, value=v) for k, v in (parameters or {}).items()]

    def in_context(self, *args, **kwargs):
        kwargs.setdefault("context", context)
        kwargs.setdefault("parameter_overrides", overrides)
        init(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(node_module.Node, "__init__", in_context)
        try:
            node = make_node()
        except BaseException:  # a refused configuration: nothing to destroy but the context
            rclpy.try_shutdown(context=context)
            raise
    node.log = RecordingLogger()
    node.get_logger = lambda: node.log
    try:
        yield node
    finally:
        getattr(node, "close", lambda: None)()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
