"""RoboFollow Scene 4 scorer against hand-built TCP trajectories (shared/robofollow/SCORING.md §6, §7, §9)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from support import scoring_fixtures as fx  # first: puts the repo root on sys.path
from vla_bridge.benchmarks.robofollow.scoring import score_episode
from vla_bridge.benchmarks.robofollow.scoring.common import select_source
from vla_bridge.benchmarks.robofollow.scoring.scene4 import (half_height, is_conditional, slot_xy,
                                                             table_z)
from vla_bridge.benchmarks.robofollow.tasks import load_suite

SUITE = load_suite()
BASE = fx.nominal_layout("scene4", "scene4.1")
TOP, CUBE_R, YELLOW = "green_cylinder_top", "blue_cube_right", "yellow_cylinder"
IN_BOWL, BLUE_BALL, RED_BALL = "red_cube_in_bowl", "blue_sphere", "red_sphere"
PICK_TOP = SUITE.get("L0_s41_r_pick_green_cylinder_top")  # right; the cylinder sits on the blue cube
PICK_BLUE = SUITE.get("L0_s41_l_pick_blue_sphere")  # left
UNSTACK = SUITE.get("L0_s41_r_unstack_green_cylinder_to_slot6")  # right, slot 6
STACK = SUITE.get("L0_s41_r_stack_green_cylinder_on_yellow")  # right, onto the yellow cylinder
SEQ = SUITE.get("L0_s41_seq_l_bowl_then_r_green_cylinder")  # left cube in bowl, then right green cylinder
COND = SUITE.get("L0_s41_if_bowl_nonempty_then_l_pick_blue_else_r_stack")  # conditional, left picks blue sphere

SLOT6 = (0.10, -0.18, 0.74 + 0.025 + 0.001)  # nominal slot xy, table_z + h + 0.001
ON_YELLOW = (-0.02, -0.06, 0.766 + 0.025 + 0.025 + 0.002)  # yellow z + h_src + h_tgt + 0.002


def scores(s):
    return pytest.approx(s.intent_score), pytest.approx(s.exec_score)


def credits(s):
    return [(pytest.approx(st.intent), pytest.approx(st.exec)) for st in s.stages]


def pick(obj: str = TOP, arm: str = "right", **kw) -> fx.TcpPickPlace:
    return fx.TcpPickPlace(BASE, arm=arm, obj=obj, **kw)


def merged(*scripts: fx.TcpPickPlace, n: int = 150, objects=None, grip=None, ee=None):
    """One record from several scripted arms (each script owns its arm and object)."""
    parts = {"ee": {}, "grip": {}, "objects": {}}
    for sc in scripts:
        for part, tracks in sc.keys().items():
            parts[part].update(tracks)
    for part, extra in (("ee", ee), ("grip", grip), ("objects", objects)):
        for name, keys in (extra or {}).items():
            parts[part].setdefault(name, []).extend(keys)
    return fx.build_tcp_record(n, BASE, **parts)


# =========================================================================== config-derived facts

def test_static_facts_come_from_config():
    assert half_height(CUBE_R) == pytest.approx(0.024)  # cube
    assert half_height(BLUE_BALL) == pytest.approx(0.024)  # sphere
    assert half_height(TOP) == pytest.approx(0.025)  # cylinder
    assert half_height("mystery_object") == 0.025
    assert slot_xy(6).tolist() == [0.10, -0.18] and slot_xy("5").tolist() == [-0.02, -0.18]
    assert table_z() == pytest.approx(0.74)
    with pytest.raises(ValueError, match="slot"):
        slot_xy(9)


def test_conditional_detection_matches_the_suite_annotation():
    for task in SUITE.eval_tasks("scene4"):
        assert is_conditional(task) is task.target["conditional"], task.id


# =========================================================================== pickup (§6.1, §6.2, §6.5)

def test_pickup_of_a_stacked_object_needs_support_removal():
    rec = pick().record()
    plain = select_source(rec.tcp_pos["right"], rec.pos, TOP, 22,
                          candidates=[c for c in rec.pos if c != "green_bowl"])
    assert not plain.ok and plain.closest == CUBE_R  # same xy as the cube below it
    s = score_episode(PICK_TOP, rec)
    assert scores(s) == (1.0, 1.0) and s.complete and s.intent_ok
    assert s.flags["support_at_grasp"] == CUBE_R and s.flags["support_lift_penalty"] is False
    assert s.flags["pickup_completion_t"] == 24 and s.flags["tc"] == 24


def test_support_lifted_with_the_source_costs_0_3_exec():
    cube0 = BASE[CUBE_R]
    rec = pick().record(objects={CUBE_R: [(0, cube0), (22, cube0), (32, fx.add(cube0, (0, 0, 0.08)))]})
    s = score_episode(PICK_TOP, rec)  # §6.5 example
    assert credits(s) == [(0.8, 0.5), (0.2, 0.2)]
    assert scores(s) == (1.0, 0.7) and not s.complete
    assert s.flags["support_lift_penalty"] is True


@pytest.mark.parametrize("support_lift, penalty", [(0.0095, False), (0.0105, True)])
def test_support_lift_threshold(support_lift, penalty):
    cube0 = BASE[CUBE_R]
    rec = pick().record(objects={CUBE_R: [(0, cube0), (30, cube0), (40, fx.add(cube0, (0, 0, support_lift)))]})
    s = score_episode(PICK_TOP, rec)
    assert s.flags["support_lift_penalty"] is penalty
    assert scores(s) == ((1.0, 0.7) if penalty else (1.0, 1.0))


@pytest.mark.parametrize("other_close, expected", [
    (10, (0.0, 0.0)),  # other arm first: stage 1 zeroed, the gates zero the rest
    (22, (0.0, 0.0)),  # a tie counts as a wrong-arm close for pickups (cO <= cE)
    (100, (1.0, 1.0)),  # after the grasp: allowed, and Scene 4 has no -0.2 penalty
])
def test_pickup_wrong_arm_rules(other_close, expected):
    rec = pick().record(grip={"left": [(0, 1.0), (other_close, 0.0), (other_close + 2, 1.0)]})
    s = score_episode(PICK_TOP, rec)
    assert scores(s) == expected
    assert s.complete is (expected == (1.0, 1.0))


def test_pickup_lift_counts_only_from_the_grasp():
    ball0 = BASE[BLUE_BALL]
    bumped = [(0, ball0), (8, fx.add(ball0, (0, 0, 0.02))), (12, ball0)]  # bumped up before the grasp
    rec = pick(obj=BLUE_BALL, arm="left", lift_dz=0.005).record(objects={BLUE_BALL: bumped})
    s = score_episode(PICK_BLUE, rec)
    assert credits(s) == [(0.8, 0.0), (0.2, 0.0)]  # Scenes 1-3 would count the early bump (quirk 7)
    assert s.flags["pickup_completion_t"] == s.flags["cE"] == 22


def test_three_stage_finish_checks_the_other_arm_box():
    box = (0.0, 0.0, 0.9)
    visit = [(0, fx.HOME["right"]), (100, box), (110, fx.HOME["right"])]
    rec = pick(obj=BLUE_BALL, arm="left").record(ee={"right": visit})
    s = score_episode(PICK_BLUE, rec)
    assert scores(s) == (0.8, 0.8) and s.complete
    assert "operation box" in s.stage("stage3_finish").reason


# =========================================================================== unstack to slot (§6.3, §9)

def test_perfect_unstack_to_nominal_slot():
    s = score_episode(UNSTACK, pick(place=SLOT6).record())
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage2_unstack_slot", "stage3_finish"]
    assert scores(s) == (1.0, 1.0) and s.complete
    assert s.flags["slot_z"] == pytest.approx(SLOT6[2]) and s.flags["to"] == s.flags["tc"] == 64


@pytest.mark.parametrize("when", [5, 120])
def test_unstack_any_other_arm_close_zeroes_everything(when):
    rec = pick(place=SLOT6).record(grip={"left": [(0, 1.0), (when, 0.0), (when + 3, 1.0)]})
    s = score_episode(UNSTACK, rec)  # §9: earlier close; for unstack a later one counts too
    assert scores(s) == (0.0, 0.0) and not s.complete
    assert s.flags["wrong_arm_closed"] is True


@pytest.mark.parametrize("dx, expected", [
    (0.045, (1.0, 1.0)),  # within 5 cm of the nominal slot
    (0.06, (1.0, 0.4)),  # intent (<= 7 cm) but not exec; finish exec gated, CR fails
    (0.075, (0.4, 0.4)),
])
def test_unstack_slot_tolerances(dx, expected):
    s = score_episode(UNSTACK, pick(place=fx.add(SLOT6, (dx, 0, 0))).record())
    assert scores(s) == expected
    assert s.complete is (expected == (1.0, 1.0))


def test_unstack_height_tolerance():
    s = score_episode(UNSTACK, pick(place=fx.add(SLOT6, (0, 0, 0.055)), open_t=None, home_t=None).record())
    st = s.stage("stage2_unstack_slot")
    assert (st.intent, st.exec) == (0.4, 0.0)  # 5.5 cm high: within 7 cm, never released
    assert s.flags["tc"] == s.flags["stage2_intent_t"]  # no release: completion = stage 2 intent frame


# =========================================================================== stack on target (§6.3)

def test_perfect_stack_on_target():
    s = score_episode(STACK, pick(place=ON_YELLOW).record())
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage2_stack", "stage3_finish"]
    assert scores(s) == (1.0, 1.0) and s.complete
    assert s.flags["expected_z_offset"] == pytest.approx(0.052)


@pytest.mark.parametrize("offset, expected", [
    ((0.045, 0, 0), (1.0, 1.0)), ((0.055, 0, 0), (1.0, 0.4)),
    ((0, 0, 0.045), (1.0, 1.0)), ((0, 0, 0.055), (1.0, 0.4)), ((0, 0, 0.065), (0.4, 0.4)),
])
def test_stack_tolerances(offset, expected):
    s = score_episode(STACK, pick(place=fx.add(ON_YELLOW, offset)).record())
    assert scores(s) == expected
    assert s.complete is (s.stage("stage2_stack").exec > 0)


def test_stack_any_other_arm_close_zeroes_everything():
    s = score_episode(STACK, pick(place=ON_YELLOW).record(grip={"left": [(0, 1.0), (130, 0.0)]}))
    assert scores(s) == (0.0, 0.0) and not s.complete


def test_completion_frame_order():
    s = score_episode(STACK, pick(place=ON_YELLOW).record())
    assert s.flags["tc"] == s.flags["to"] == 64
    never_closed = fx.build_tcp_record(50, BASE)
    s = score_episode(STACK, never_closed)
    assert s.flags["cE"] is None and s.flags["tc"] == 49  # n - 1


# =========================================================================== sequence (§6.6, §6.8)

def seq_a(**kw) -> fx.TcpPickPlace:
    """Left arm: cube in the bowl, close 22, lifted by 32, home at 70."""
    return pick(obj=IN_BOWL, arm="left", **{"home_t": 70, **kw})


def seq_b(**kw) -> fx.TcpPickPlace:
    """Right arm: green cylinder, close 42, lifted by 52, home at 90."""
    kw = {"reach_t": 40, "close_t": 42, "lift_t": 52, "home_t": 90, **kw}
    return pick(obj=TOP, arm="right", **kw)


def test_sequence_in_order_scores_1_0():
    s = score_episode(SEQ, merged(seq_a(), seq_b()))
    assert [st.name for st in s.stages] == ["stage1_action_a", "stage2_action_b", "stage3_finish"]
    assert scores(s) == (1.0, 1.0) and s.complete
    assert (s.flags["a"], s.flags["b"], s.flags["a_completion_t"], s.flags["tc"]) == (22, 42, 24, 44)


def test_sequence_reverse_order_scores_0():
    a_late = seq_a(reach_t=40, close_t=42, lift_t=52, home_t=90)
    b_early = seq_b(reach_t=20, close_t=22, lift_t=32, home_t=70)
    s = score_episode(SEQ, merged(a_late, b_early))
    assert scores(s) == (0.0, 0.0) and not s.complete
    assert "reverse order" in s.stages[0].reason


def test_sequence_b_missing_is_0_6_and_fails():
    s = score_episode(SEQ, merged(seq_a()))
    assert credits(s) == [(0.4, 0.4), (0.0, 0.0), (0.2, 0.2)]  # finish anchored at A's completion
    assert scores(s) == (0.6, 0.6) and not s.complete


def test_sequence_finish_failure_still_completes_at_0_8():
    s = score_episode(SEQ, merged(seq_a(), seq_b(home_t=None)))
    assert credits(s) == [(0.4, 0.4), (0.4, 0.4), (0.0, 0.0)]
    assert scores(s) == (0.8, 0.8) and s.complete
    assert "right" in s.flags["finish_problems"]


def test_sequence_has_no_gates():
    s = score_episode(SEQ, merged(seq_a(lift_dz=0.005), seq_b()))  # A grasped but never lifted
    assert credits(s) == [(0.4, 0.0), (0.4, 0.4), (0.2, 0.2)]
    assert scores(s) == (1.0, 0.6) and not s.complete


def test_sequence_a_missing_scores_0():
    s = score_episode(SEQ, merged(seq_b()))
    assert scores(s) == (0.0, 0.0)
    assert "never closed on red_cube_in_bowl" in s.stages[0].reason


def test_sequence_match_takes_the_first_matching_close_event():
    # the right arm first closes on the red sphere (frame 30), then on the green cylinder (42)
    wrong = fx.add(BASE[RED_BALL], (0, 0, 0.01))
    b = seq_b()
    rec = merged(seq_a(), b, ee={"right": [(28, wrong), (31, wrong)]},
                 grip={"right": [(30, 0.0), (33, 1.0)]})
    s = score_episode(SEQ, rec)
    assert s.flags["b"] == 42 and scores(s) == (1.0, 1.0)


@pytest.mark.parametrize("dy, matched", [(0.0695, True), (0.0705, False)])
def test_sequence_match_distance_is_inclusive_7cm(dy, matched):
    s = score_episode(SEQ, merged(seq_a(grasp_offset=(0.0, dy)), seq_b()))
    assert (s.flags["a"] is not None) is matched


def test_sequence_has_no_operation_box_check():
    # both arms work inside the operation box; the three-stage finish would fail on that, this one does not
    rec = merged(seq_a(), seq_b())
    tcp = rec.tcp_pos
    assert any(-0.20 <= x <= 0.15 and -0.15 <= y <= 0.15 and 0.74 <= z <= 1.0 for x, y, z in tcp["left"][40:50])
    assert score_episode(SEQ, rec).stage("stage3_finish").intent == 0.2


# =========================================================================== conditional diagnostic (§6.7)

def test_conditional_full_success_flag():
    s = score_episode(COND, pick(obj=BLUE_BALL, arm="left").record())
    assert s.flags["conditional"] is True and s.flags["conditional_full_success"] is True
    s = score_episode(COND, pick(obj=BLUE_BALL, arm="left", home_t=None).record())
    assert scores(s) == (0.8, 0.8) and s.complete  # CR passes ...
    assert s.flags["conditional_full_success"] is False  # ... the diagnostic does not
    plain = score_episode(PICK_BLUE, pick(obj=BLUE_BALL, arm="left").record())
    assert plain.flags["conditional"] is False and plain.flags["conditional_full_success"] is None


def test_conditional_detection_rules():
    t = dataclasses.replace(PICK_BLUE, base_task="x", instruction="If it rains, pick it up.")
    assert is_conditional(t)
    assert is_conditional(dataclasses.replace(PICK_BLUE, base_task="if_x", instruction="Pick."))
    assert not is_conditional(dataclasses.replace(PICK_BLUE, base_task="gift_box", instruction="Pick, if you can."))


# =========================================================================== errors

def test_scene4_errors():
    rec = pick().record()
    with pytest.raises(ValueError, match="'stack'"):
        score_episode(dataclasses.replace(STACK, action="stack"), rec)
    with pytest.raises(ValueError, match="place_slot"):
        score_episode(dataclasses.replace(UNSTACK, target={"conditional": False}), rec)
    with pytest.raises(ValueError, match="second_arm"):
        score_episode(dataclasses.replace(SEQ, target={"conditional": False}), rec)
    empty = dataclasses.replace(rec, grip={"left": np.zeros(0), "right": np.zeros(0)})
    with pytest.raises(ValueError, match="empty"):
        score_episode(PICK_TOP, empty)
