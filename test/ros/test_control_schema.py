"""The contract's schema of episode control/status messages and messages.parse_control /
parse_status: what every node accepts, and one log line for what it ignores."""
from __future__ import annotations

import json

import pytest
from std_msgs.msg import String

from support.junk_messages import BIG, JUNK_CONTROL, RecordingLogger
from vla_bridge import contract as C
from vla_bridge.ros import messages

BEGIN = {"kind": "begin", "episode": "s/t/r1@1", "task": {"id": "t", "scene": "scene1",
                                                          "layout": "a"},
         "seed": 0, "instruction": "", "max_policy_calls": 1, "max_actions_per_call": 50,
         "cue_protocol": "vifo", "cue_task": None, "cue_family": None, "cue_variant": "v",
         "cue_placement": "scene"}


@pytest.mark.parametrize("payload", [
    BEGIN,
    {"kind": "begin", "episode": "ep1", "max_policy_calls": 1},  # the robot nodes' tests
    {"kind": "begin", "episode": "e2", "task": {}},
    {"kind": "start", "episode": "e"}, {"kind": "end", "episode": "e", "extra": [1]},
])
def test_well_formed_control_passes_unchanged(payload):
    assert C.check_control(payload) is payload


@pytest.mark.parametrize("change, reason", [
    ({"kind": "go"}, "unknown control kind 'go'"),
    ({"episode": ""}, "non-empty string 'episode'"),
    ({"seed": 1.5}, "field 'seed' must be int"),
    ({"seed": False}, "field 'seed' must be int"),
    ({"max_actions_per_call": 0}, "'max_actions_per_call' must be >= 1"),
    ({"max_steps": 0}, "'max_steps' must be >= 1"),
    ({"max_steps": "220"}, "field 'max_steps' must be int"),
    ({"task": {"scene": "scene1"}}, "lacks task.layout"),
])
def test_malformed_control_says_why(change, reason):
    with pytest.raises(ValueError, match=reason):
        C.check_control({**BEGIN, **change}, require=("task", "seed"),
                        task_keys=("scene", "layout"))


def test_a_node_requires_the_begin_fields_it_reads():
    begin = {k: v for k, v in BEGIN.items() if k != "seed"}
    assert C.check_control(begin, require=("task",)) is begin
    with pytest.raises(ValueError, match="lacks seed"):
        C.check_control(begin, require=("task", "seed"))


def test_status_kinds_and_fields_per_source():
    ready = {"kind": "ready", "episode": "e", "tick": 0, "stamp": 1}
    assert C.check_status(ready, "sim") is ready
    assert C.check_status({"kind": "ready", "episode": "e"}, "policy")
    with pytest.raises(ValueError, match="lacks stamp"):
        C.check_status({"kind": "ready", "episode": "e"}, "sim")
    with pytest.raises(ValueError, match="unknown policy status kind 'done'"):
        C.check_status({"kind": "done", "episode": "e", "ticks": 1, "calls": 1}, "policy")


def test_parse_control_logs_one_short_line_per_bad_message_and_gives_none():
    log = RecordingLogger()
    for data in JUNK_CONTROL:
        assert messages.parse_control(String(data=data), log) is None
    assert len(log.lines["error"]) == len(JUNK_CONTROL)
    big = log.lines["error"][JUNK_CONTROL.index(BIG)]
    assert big.endswith("... (1000000 characters)") and len(big) < 400
    assert messages.parse_control(messages.json_msg(BEGIN), log) == BEGIN
    assert messages.parse_status(String(data=json.dumps({"kind": "x", "episode": "e"})), "sim",
                                 log) is None
    assert "unknown sim status kind 'x'" in log.lines["error"][-1]
