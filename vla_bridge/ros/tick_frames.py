"""The tick messages a lock-step sim did not send, rebuilt from its frames' rows (#26,
contract.FRAME_EXPANDERS): what the recorder writes into a bag in their place."""
from __future__ import annotations

import numpy as np
from std_msgs.msg import Float64MultiArray

from vla_bridge.contract import (TICK_TOPIC_BITS, TOPIC_CLOCK, TOPIC_JOINT_COMMANDS,
                                 TOPIC_JOINT_STATES, get_embodiment)
from vla_bridge.ros.messages import clock_msg, frame_table, joint_state_msg


def unpublished_ticks(msg: Float64MultiArray) -> list[tuple[str, float, object]]:
    """[(topic, stamp s, message)]: the tick messages (/clock, /joint_states, /joint_commands)
    a frames message's rows say were not published, built as the sim builds them, in tick
    order (contract: the frames' ``published`` field, FRAME_EXPANDERS). Rows without a
    ``state:<embodiment>`` field (a robot node's) give none. ValueError for a malformed
    message or an unknown embodiment."""
    rows, dims = frame_table(msg)
    columns, offset = {}, 0
    for dim in dims:
        columns[dim.label.partition(":")[0]] = (dim.label, offset, dim.size)
        offset += dim.size
    if "state" not in columns or "published" not in columns:
        return []
    if "stamp" not in columns or "command" not in columns:
        raise ValueError("frames with a state field must have stamp and command fields")
    label, state_at, state_size = columns["state"]
    embodiment = get_embodiment(label.partition(":")[2])
    _, command_at, command_size = columns["command"]
    if (state_size, command_size) != (embodiment.state_dim, embodiment.action_dim):
        raise ValueError(f"frames of {embodiment.name} carry {state_size} joints and a "
                         f"{command_size}-D command, not {embodiment.state_dim} and "
                         f"{embodiment.action_dim}")
    flags = rows[:, columns["published"][1]]
    if not np.isin(flags, np.arange(sum(TICK_TOPIC_BITS.values()) + 1)).all():
        raise ValueError(f"frames' published field holds {sorted(set(flags.tolist()))[:5]}, "
                         f"not sums of {TICK_TOPIC_BITS}")
    bits = TICK_TOPIC_BITS
    out: list[tuple[str, float, object]] = []
    for row, published in zip(rows, flags.astype(int)):
        stamp = float(row[columns["stamp"][1]])
        if not published & bits[TOPIC_CLOCK]:
            out.append((TOPIC_CLOCK, stamp, clock_msg(stamp)))
        if not published & bits[TOPIC_JOINT_STATES]:
            out.append((TOPIC_JOINT_STATES, stamp, joint_state_msg(
                embodiment.state_names, row[state_at:state_at + state_size], stamp)))
        if not published & bits[TOPIC_JOINT_COMMANDS]:
            out.append((TOPIC_JOINT_COMMANDS, stamp, joint_state_msg(
                embodiment.action_names, row[command_at:command_at + command_size], stamp)))
    return out
