"""RoboFollow Scene 2 scorer against hand-built TCP trajectories (shared/robofollow/SCORING.md §4, §7, §9)."""
from __future__ import annotations

import dataclasses

import pytest

from support import scoring_fixtures as fx  # first: puts the repo root on sys.path
from vla_bridge.benchmarks.robofollow.scoring import score_episode
from vla_bridge.benchmarks.robofollow.scoring.scene2 import bowl_names
from vla_bridge.benchmarks.robofollow.tasks import load_suite

SUITE = load_suite()
BASE = fx.nominal_layout("scene2", "default")
LRC, LBC, SRC, SBC = "large_red_cylinder", "large_blue_cube", "small_red_cube", "small_blue_cylinder"
PICK = SUITE.get("L0_pickup_red_cylinder")  # left, large_red_cylinder
STACK = SUITE.get("L0_stack_left_cube_on_red_cylinder")  # left, large_blue_cube onto large_red_cylinder
PUSH = SUITE.get("L0_push_left_cube_to_red_cylinder")  # left, large_blue_cube towards large_red_cylinder (+y)
BOWL = SUITE.get("L0_place_right_cube_in_green_bowl")  # right, small_red_cube into green_bowl
LEFT_HOME, RIGHT_HOME = fx.HOME["left"], fx.HOME["right"]


def scores(s):
    return pytest.approx(s.intent_score), pytest.approx(s.exec_score)


def credits(s):
    return [(pytest.approx(st.intent), pytest.approx(st.exec)) for st in s.stages]


def pick(obj: str = LRC, arm: str = "left", **kw) -> fx.TcpPickPlace:
    return fx.TcpPickPlace(BASE, arm=arm, obj=obj, **kw)


def test_config_facts_and_task_encoding():
    assert bowl_names() == ("green_bowl", "yellow_bowl")
    assert (STACK.source, STACK.target["target_object"]) == (LBC, LRC)
    assert (BOWL.arm, BOWL.source, BOWL.target["target_object"]) == ("right", SRC, "green_bowl")


# =========================================================================== pickup (§4.1, §9)

def test_perfect_pickup():
    s = score_episode(PICK, pick().record())
    assert scores(s) == (1.0, 1.0)
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage3_finish"]
    assert s.complete and s.intent_ok and s.exec_ok
    assert (s.flags["cE"], s.flags["tc"]) == (22, 24)  # tc: first lift >= 0.01 from cE (§3.3)
    assert s.flags["retry_final_target_ok"] is False


@pytest.mark.parametrize("lift, expected, complete", [(0.0299, (1.0, 0.0), False), (0.0301, (1.0, 1.0), True)])
def test_pickup_exec_needs_lift_of_3cm(lift, expected, complete):
    s = score_episode(PICK, pick(lift_dz=lift).record())
    assert scores(s) == expected  # stage 1 0.8/0; finish intent 0.2, finish exec gated
    assert s.complete is complete


def test_pickup_wrong_object_grasped_scores_0():
    s = score_episode(PICK, pick(obj=SRC).record())
    assert scores(s) == (0.0, 0.0) and not s.complete
    assert s.flags["closest_at_grasp"] == SRC


def test_pickup_other_arm_closed_once_costs_0_2():
    s = score_episode(PICK, pick().record(grip={"right": [(0, 1.0), (100, 0.0), (102, 1.0)]}))
    assert scores(s) == (0.8, 0.8)  # §9: 1.0 - 0.2
    assert s.complete and not s.intent_ok
    assert s.flags["wrong_arm_participated"] and s.flags["penalty_applied"] == {"intent": True, "exec": True}


def test_pickup_without_return_home_is_0_8_and_completes():
    s = score_episode(PICK, pick(home_t=None).record())
    assert scores(s) == (0.8, 0.8) and s.complete and not s.exec_ok


@pytest.mark.parametrize("radius_offset, ok", [(0.0999, True), (0.1005, False)])
def test_finish_return_radius_is_10cm(radius_offset, ok):
    home_near = fx.add(LEFT_HOME, (radius_offset, 0.0, 0.0))
    rec = pick(home_t=None).record(ee={"left": [(90, home_near)]})
    s = score_episode(PICK, rec)
    assert scores(s) == ((1.0, 1.0) if ok else (0.8, 0.8))


# =========================================================================== stack (§4.3, §9)

ON_TOP = (-0.14, -0.04, 0.84)  # cube centre resting on the red cylinder: 0.775 + 0.035 + 0.03


def test_perfect_stack():
    s = score_episode(STACK, pick(obj=LBC, place=ON_TOP).record())
    assert scores(s) == (1.0, 1.0) and s.complete
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage2_stack", "stage3_finish"]
    assert (s.flags["to"], s.flags["tc"]) == (64, 64)
    # quirk: intent only needs the source above the target's centre height with the ee at it,
    # so it is already met at the first lifted frame, long before the cube is over the target
    assert s.flags["stage2_intent_t"] == 24


def test_stack_released_off_centre_slides_off_is_1_0_over_0_4_and_fails_cr():
    off = (ON_TOP[0] + 0.025, ON_TOP[1], ON_TOP[2])  # 2.5 cm off-centre: still "stacked" at release
    fallen = (-0.09, -0.04, BASE[LBC][2])  # then it slides off onto the table
    rec = pick(obj=LBC, place=off).record(objects={LBC: [(64, off), (67, fallen)]})
    s = score_episode(STACK, rec)
    assert credits(s) == [(0.4, 0.4), (0.4, 0.0), (0.2, 0.0)]  # finish intent kept, exec gated
    assert scores(s) == (1.0, 0.4)
    assert s.flags["retry_final_target_ok"] is False and not s.complete
    assert "not stacked at the last frame" in s.stage("stage2_stack").reason


@pytest.mark.parametrize("dx, full", [(0.0295, True), (0.0305, False)])
def test_stack_xy_tolerance_3cm(dx, full):
    place = (ON_TOP[0] + dx, ON_TOP[1], ON_TOP[2])
    s = score_episode(STACK, pick(obj=LBC, place=place).record())
    assert scores(s) == ((1.0, 1.0) if full else (1.0, 0.4))
    assert s.complete is full


def test_stack_drop_between_release_and_end_fails_exec():
    # back on top at the end, but it sat at the target's height (fell through) right after release
    low = (ON_TOP[0], ON_TOP[1], BASE[LRC][2] + 0.002)
    rec = pick(obj=LBC, place=ON_TOP).record(objects={LBC: [(64, ON_TOP), (66, low), (68, ON_TOP)]})
    s = score_episode(STACK, rec)
    assert "dropped at frame 66" in s.stage("stage2_stack").reason
    s_exec = s.stage("stage2_stack")
    assert (s_exec.intent, s_exec.exec) == (0.4, 0.0)
    assert scores(s) == (1.0, 0.7)  # ES 0.4 + bonus 0.3: the bonus needs only stacked(n-1)
    assert s.complete  # and CR follows the bonus


def test_stack_bonus_when_the_other_arm_did_it():
    # the task arm never closes; the right arm stacks the cube: stages 0, bonus 0.3, no penalty
    other = pick(obj=LBC, arm="right", place=ON_TOP)
    k = other.keys()
    rec = fx.build_tcp_record(150, BASE, **k)
    s = score_episode(STACK, rec)
    assert scores(s) == (0.3, 0.3)
    assert s.flags["wrong_arm_participated"] and s.flags["penalty_applied"] == {"intent": False, "exec": False}
    assert s.complete  # CR = retry_final_target_ok


# =========================================================================== push (§4.2, §4.4, §9)

CUBE = BASE[LBC]  # (-0.14, -0.13, 0.771); the push direction is +y


def push_record(ee_back: float = 0.04, ee_z: float = 0.79, push: float = 0.03, grip_closed: float = 0.2,
                extra_ee=(), n: int = 150, front: bool = False):
    """Close at 20 behind the cube, push it `push` m towards the cylinder by frame 50, open at 55, home at 90."""
    sign = 1.0 if front else -1.0
    start = (CUBE[0], CUBE[1] + sign * ee_back, ee_z)
    cube_end = (CUBE[0], CUBE[1] + push, CUBE[2])
    end = (CUBE[0], cube_end[1] + sign * ee_back, ee_z)
    ee = [(0, LEFT_HOME), (20, start), (50, end), *extra_ee, (55, end), (90, LEFT_HOME)]
    return fx.build_tcp_record(n, BASE, ee={"left": ee}, grip={"left": [(0, 1.0), (20, grip_closed), (55, 1.0)]},
                               objects={LBC: [(0, CUBE), (20, CUBE), (50, cube_end)]})


def test_perfect_push():
    s = score_episode(PUSH, push_record())
    assert [st.name for st in s.stages] == ["stage1_push_setup", "stage2_push", "stage3_finish"]
    assert scores(s) == (1.0, 1.0) and s.complete
    assert s.flags["push_setup_intent_t"] == s.flags["push_setup_exec_t"]
    assert s.flags["push_near_table"] is True
    assert s.flags["stage2_intent_t"] == 50 and s.flags["tc"] == 50  # best projection frame
    assert s.flags["push_best_projection"] == pytest.approx(0.03)


@pytest.mark.parametrize("drift, expected, complete", [
    (0.006, (0.3, 0.3), True),  # §9: stage 1 fails, the bonus threshold is 0.005
    (0.004, (0.0, 0.0), False),
])
def test_push_drift_without_any_grasp_gets_only_the_bonus(drift, expected, complete):
    rec = fx.build_tcp_record(100, BASE, objects={LBC: [(0, CUBE), (30, CUBE), (40, fx.add(CUBE, (0, drift, 0)))]})
    s = score_episode(PUSH, rec)
    assert scores(s) == expected and s.complete is complete
    assert s.flags["cE"] is None and s.flags["penalty_applied"] == {"intent": False, "exec": False}


def test_push_bonus_ignores_sideways_drift():
    rec = fx.build_tcp_record(100, BASE, objects={LBC: [(0, CUBE), (40, fx.add(CUBE, (0.02, 0, 0)))]})
    s = score_episode(PUSH, rec)
    assert scores(s) == (0.0, 0.0) and not s.complete


def test_push_uses_close_threshold_0_25():
    s = score_episode(PUSH, push_record(grip_closed=0.3))  # 0.3 closes for every other action
    assert s.flags["close_threshold"] == 0.25 and s.flags["cE"] is None
    assert scores(s) == (0.3, 0.3)  # stages 0; the cube still moved 3 cm: bonus
    assert score_episode(PUSH, push_record(grip_closed=0.25)).flags["cE"] == 20


def test_push_exec_without_intent_ee_between_7_and_8_cm():
    # retreat straight back first: on a diagonal way home the ee would pass within 7 cm of the
    # displaced cube, and any frame after the close counts (§4.2)
    s = score_episode(PUSH, push_record(ee_back=0.075, extra_ee=[(60, (CUBE[0], -0.25, 0.79))]))
    st1 = s.stage("stage1_push_setup")
    assert (st1.intent, st1.exec) == (0.0, 0.4)  # stage 1 exec does not require intent
    assert credits(s)[1:] == [(0.0, 0.0), (0.0, 0.0)]  # gated downstream
    assert scores(s) == (0.3, 0.7)  # bonus on both totals (< 0.5)
    assert s.complete


def test_push_near_table_is_frozen_at_the_first_qualifying_frame():
    high = (CUBE[0], CUBE[1] - 0.04, 1.02)  # |(1.02 - 0.12) - 0.771| = 0.129 > 0.12
    rec = push_record(extra_ee=[(20, high), (28, (CUBE[0], CUBE[1] - 0.04 + 0.008, 1.02))])
    s = score_episode(PUSH, rec)
    assert s.flags["push_near_table"] is False  # lowered later, but the value is frozen
    assert credits(s) == [(0.4, 0.0), (0.4, 0.0), (0.2, 0.0)]
    assert scores(s) == (1.0, 0.3)  # ES 0 + bonus 0.3
    assert s.complete


def test_push_backside_test_rejects_pulling_from_the_front():
    # pulled 2.5 cm from the target side; the way home (y -0.10) stays on the target side of the cube (y -0.105)
    s = score_episode(PUSH, push_record(front=True, push=0.025))
    assert credits(s) == [(0.4, 0.4), (0.0, 0.0), (0.0, 0.0)]
    assert scores(s) == (0.7, 0.7)  # 0.4 + bonus 0.3 each
    assert s.complete  # CR follows the bonus signal, not stage 2


def test_push_backside_is_a_half_plane_test_at_any_distance():
    # pulled 3 cm: the cube ends at y -0.10, the left home is at y -0.10, so b = 0 on the way home counts
    s = score_episode(PUSH, push_record(front=True, push=0.03))
    assert s.stage("stage2_push").intent == 0.4
    assert s.flags["stage2_intent_t"] > 55  # a frame of the retreat, not of the pull


@pytest.mark.parametrize("push, expected", [
    (0.015, (1.0, 0.7)),  # intent (>= 0.01) but not exec (< 0.02): ES 0.4 + bonus 0.3
    (0.0205, (1.0, 1.0)),
    (0.0095, (0.7, 0.7)),  # neither: IS 0.4 + 0.3, ES 0.4 + 0.3
])
def test_push_projection_thresholds(push, expected):
    s = score_episode(PUSH, push_record(push=push))
    assert scores(s) == expected


def test_push_completion_frame_falls_back_to_close_frame():
    s = score_episode(PUSH, push_record(push=0.0095))
    assert s.flags["stage2_intent_t"] is None and s.flags["tc"] == s.flags["cE"] == 20


# =========================================================================== place_bowl (§4.5)

IN_GREEN = (0.07, -0.10, 0.775)


def bowl_pick(place=IN_GREEN, arm: str = "right", **kw) -> fx.TcpPickPlace:
    return pick(obj=SRC, arm=arm, place=place, **kw)


def test_perfect_place_bowl():
    s = score_episode(BOWL, bowl_pick().record())
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage2_place_bowl", "stage3_finish"]
    assert scores(s) == (1.0, 1.0) and s.complete
    assert 52 < s.flags["stage2_intent_t"] < 62  # first lowered frame with lift < 0.06
    assert s.flags["retry_final_target_ok"] is True


def test_place_in_the_other_bowl_fails():
    s = score_episode(BOWL, bowl_pick(place=(0.16, -0.10, 0.775)).record())
    assert credits(s) == [(0.4, 0.4), (0.0, 0.0), (0.0, 0.0)]
    assert scores(s) == (0.4, 0.4) and not s.complete  # no bonus: not in the green bowl


@pytest.mark.parametrize("dx, ok", [(0.0395, True), (0.0405, False)])
def test_place_bowl_xy_tolerance_4cm(dx, ok):
    s = score_episode(BOWL, bowl_pick(place=(IN_GREEN[0] - dx, IN_GREEN[1], IN_GREEN[2])).record())
    assert scores(s) == ((1.0, 1.0) if ok else (0.4, 0.4))
    assert s.complete is ok


@pytest.mark.parametrize("z, ok", [(0.815, True), (0.825, False)])
def test_place_bowl_height_limit(z, ok):
    s = score_episode(BOWL, bowl_pick(place=(IN_GREEN[0], IN_GREEN[1], z)).record())
    assert (s.stage("stage2_place_bowl").intent == 0.4) is ok


def test_place_bowl_nearest_bowl_check_follows_current_positions():
    # the green bowl is pushed next to the yellow one: the cube sits in green, but yellow is nearer
    moved_green = (0.15, -0.10, 0.76)
    cube_at = (0.157, -0.10, 0.775)
    rec = bowl_pick(place=cube_at).record(objects={"green_bowl": [(0, BASE["green_bowl"]), (40, moved_green)]})
    s = score_episode(BOWL, rec)
    assert s.stage("stage2_place_bowl").intent == 0.0  # in green (7 mm) but yellow (3 mm) is nearer
    assert s.flags["retry_final_target_ok"] is False


def test_place_bowl_wrong_arm_penalty_after_success():
    s = score_episode(BOWL, bowl_pick().record(grip={"left": [(0, 1.0), (120, 0.0)]}))
    assert scores(s) == (0.8, 0.8) and s.complete


def test_place_bowl_bonus_cap_and_order():
    # no task-arm grasp, cube ends in the green bowl (moved by the other arm): 0.3 / 0.3, no penalty
    other = bowl_pick(arm="left")
    rec = fx.build_tcp_record(150, BASE, **other.keys())
    s = score_episode(BOWL, rec)
    assert scores(s) == (0.3, 0.3) and s.complete


# =========================================================================== dispatch and errors

def test_scene2_actions_and_errors():
    rec = pick().record()
    with pytest.raises(ValueError, match="'fly'"):
        score_episode(dataclasses.replace(PICK, action="fly"), rec)
    with pytest.raises(ValueError, match="target_object"):
        score_episode(dataclasses.replace(STACK, target={}), rec)
    with pytest.raises(ValueError, match="not a Scene 2 bowl"):
        score_episode(dataclasses.replace(BOWL, target={"target_object": LRC}), rec)
    missing = dict(rec.pos)
    del missing["yellow_bowl"]
    with pytest.raises(ValueError, match="yellow_bowl"):
        score_episode(BOWL, dataclasses.replace(rec, pos=missing))
