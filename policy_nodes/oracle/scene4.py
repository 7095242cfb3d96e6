"""Oracle plans for RoboFollow Scene 4: pickups (also of objects stacked on another object or
lying in the bowl), stack on a target, unstack to a table slot, and two-arm pickup sequences.

Conditional tasks need no special case: the task spec already names the expected branch's
action, arm and source. Except in sequences the other arm holds at home (outside the work box,
its gripper open: a close by the other arm zeroes the scorer's stage 1).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from vla_bridge.policy_nodes.oracle.primitives import PlanningError
from vla_bridge.policy_nodes.oracle.scene2 import (HELD_SPEED, RELEASE_GAP, Arm, Clearance,
                                                   assemble, half_z, pick, place, require)
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.embodiment.workcell import TABLE_TOP_Z, arm_slice

HOME_TICKS = 30


@lru_cache(maxsize=1)
def slot_table() -> dict[int, np.ndarray]:
    """Nominal (unjittered) slot xy, the unstack goal the scorer uses."""
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    return {int(k): np.asarray(v, float) for k, v in load_scene("scene4").extras["slots"].items()}


def plan_scene4(task: TaskSpec, world, state: np.ndarray) -> np.ndarray:
    """Whole-episode plan [T, 14] for a Scene 4 task."""
    target = task.target or {}
    arm = Arm(task.arm, state[arm_slice(task.arm)])
    home_q = arm.q.copy()
    clear = Clearance(world, task.scene)
    require(world, task, task.source, target.get("target_object"), target.get("second_source"))
    if task.action == "sequence_pickups":
        second = Arm(target["second_arm"], state[arm_slice(target["second_arm"])])
        if second.arm == arm.arm:
            raise PlanningError(f"{task.id}: a sequence needs two different arms")
        second_home = second.q.copy()
        pick(arm, world, task.scene, task.source, clear)  # A picks and lifts ...
        arm.move_joints_paced(home_q, HOME_TICKS, HELD_SPEED)  # ... and carries its object home
        second.hold(len(arm.targets))  # B starts once A is out of the way
        clear.tops.pop(task.source)  # A's source is in A's hand, far away
        pick(second, world, task.scene, target["second_source"], clear)
        second.move_joints_paced(second_home, HOME_TICKS, HELD_SPEED)
        return assemble(state, [arm, second])

    grasp = pick(arm, world, task.scene, task.source, clear)
    src = world.objects[task.source]
    if task.action == "stack_on_target":
        tgt = world.objects[target["target_object"]]
        top = float(tgt.pos[2]) + half_z(tgt)
        place(arm, grasp, world, np.array([tgt.pos[0], tgt.pos[1], top + half_z(src) + RELEASE_GAP]),
              clear)
    elif task.action == "unstack_to_slot":
        xy = slot_table()[int(target["place_slot"])]
        place(arm, grasp, world, np.array([xy[0], xy[1], TABLE_TOP_Z + half_z(src) + RELEASE_GAP]),
              clear)
    elif task.action != "pickup":
        raise PlanningError(f"no Scene 4 plan for action {task.action!r}")
    # a picked-up source rides home in the hand
    arm.move_joints_paced(home_q, HOME_TICKS, HELD_SPEED if task.action == "pickup" else None)
    return assemble(state, [arm])
