"""Oracle plans for RoboFollow Scene 1: pickups with either arm and relation placements."""
from __future__ import annotations

import numpy as np

from vla_bridge import contract
from vla_bridge.policy_nodes.oracle.primitives import (HOVER, ArmPlanner, grasp_yaws,
                                                       place_point)
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.embodiment.workcell import arm_slice


def plan_scene1(task: TaskSpec, world, state: np.ndarray) -> np.ndarray:
    """Whole-episode plan [T, 14] for a Scene 1 pickup or relation placement."""
    arm = task.arm
    planner = ArmPlanner(arm, state[arm_slice(arm)])
    home_q = planner.q.copy()
    src = world.objects[task.source]
    grasp_point = src.pos.copy()
    tilt, yaw = planner.choose_grasp(grasp_point, grasp_yaws(src.quat, src.shape))
    R = planner.grasp_rotation(grasp_point, tilt, yaw)

    planner.move_to_pose(grasp_point + [0, 0, HOVER], R, ticks=25)
    planner.line_to(grasp_point, R, ticks=15)
    planner.set_gripper(contract.GRIPPER_CLOSED, dwell=8)
    planner.line_to(grasp_point + [0, 0, HOVER], R, ticks=15)

    if task.anchor is not None:
        place_xy = place_point(world, task.source, task.anchor, task.relation)
        place = np.array([*place_xy, grasp_point[2] + 0.004])
        tilt_p, _ = planner.choose_grasp(place, [yaw])
        R_place = planner.grasp_rotation(place, tilt_p, yaw)
        planner.move_to_pose(place + [0, 0, HOVER], R_place, ticks=25)
        planner.line_to(place, R_place, ticks=15)
        planner.set_gripper(contract.GRIPPER_OPEN, dwell=8)
        planner.line_to(place + [0, 0, HOVER], R_place, ticks=12)

    planner.move_joints(home_q, ticks=30)
    plan = np.tile(state, (len(planner.targets), 1))
    plan[:, arm_slice(arm)] = np.array(planner.targets)
    return plan
