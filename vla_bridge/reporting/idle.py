"""Where a replay video's idle tail starts, from the episode record alone.

A RoboFollow episode runs its whole budget: once the policy is done the arms rest, often for
three quarters of the episode. The videos stop a short margin after the last motion of an arm
(TCP, gripper, joint targets) or of an object; the report says how much was cut.
"""
from __future__ import annotations

import math

import numpy as np

ARM_STILL_M = 1e-4  # TCP motion per control tick (m) below this is rest: 1.7 mm/s at 0.06 s
COMMAND_STILL = 1e-4  # change of a joint target (rad) or the normalised gripper per tick
OBJECT_STILL_M = 1e-3  # objects: 1.7 cm/s; the contact jitter of resting objects stays far below
IDLE_MARGIN_S = 1.0  # shown after the last motion, so the video shows what it came to rest as


def _last_change(arrays, limit: float) -> int:
    """Index of the last frame that moved more than `limit` from the one before (0: none)."""
    last = 0
    for array in arrays:
        a = np.asarray(array, dtype=float)
        if len(a) < 2:
            continue
        step = np.abs(np.diff(a.reshape(len(a), -1), axis=0)).max(axis=1)
        moved = np.flatnonzero(step > limit)
        if len(moved):
            last = max(last, int(moved[-1]) + 1)
    return last


def last_motion(record) -> int:
    """The last frame at which an arm or an object still moved (0 when nothing ever did)."""
    commands = [] if record.commands is None else [record.commands]
    return max(_last_change(record.tcp_pos.values(), ARM_STILL_M),
               _last_change(record.grip.values(), COMMAND_STILL),
               _last_change(commands, COMMAND_STILL),
               _last_change(record.pos.values(), OBJECT_STILL_M))


def active_length(record, control_period: float, margin_s: float = IDLE_MARGIN_S) -> int:
    """How many frames (from 0) a video shows: up to the last motion plus `margin_s`, at most
    the whole record (its commands, the frames a replay has)."""
    n = len(record.commands) if record.commands is not None else record.n
    margin = int(math.ceil(margin_s / control_period))
    return min(n, last_motion(record) + margin + 1)
