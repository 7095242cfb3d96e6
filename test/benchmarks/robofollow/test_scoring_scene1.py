"""RoboFollow Scene 1 scorer against hand-built trajectories (shared/robofollow/SCORING.md §1-3, 7-10)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from support import scoring_fixtures as fx  # first: puts the repo root on sys.path
from vla_bridge.benchmarks.robofollow.scoring import (EpisodeScore, StageScore, score_episode,
                                                      summarize)
from vla_bridge.benchmarks.robofollow.scoring.common import (ArmCloses, adjust_totals, apply_gates,
                                                             close_events, find_support,
                                                             first_close, first_open_after,
                                                             is_complete, select_source)
from vla_bridge.benchmarks.robofollow.scoring.scene1 import fingertip_track, on_table, relation_ok

SRC = "yellow_block_1"
P0 = fx.SCENE1_OBJECTS[SRC]
LIFTED_EE = fx.add(P0, (0.0, 0.0, 0.09))  # fingertip while holding the lifted source (PickPlace defaults)
AWAY_EE = (-0.02, -0.04, 0.851)  # same point, spelled out: ~0.30 m from the left home
LEFT_HOME, RIGHT_HOME = fx.HOME["left"], fx.HOME["right"]
PICK = fx.make_task("pickup")
BEHIND = fx.make_task("place_behind")
LEFT_OF = fx.make_task("place_left_of")
IN_RELATION_LEFT_OF = (0.02, -0.04, P0[2])  # source 8 cm left of red_cylinder, on the table


def scores(s: EpisodeScore) -> tuple[float, float]:
    return s.intent_score, s.exec_score


def stage_credits(s: EpisodeScore) -> list[tuple[float, float]]:
    return [(st.intent, st.exec) for st in s.stages]


def placement(action: str = "place_behind", **kw) -> fx.PickPlace:
    return fx.PickPlace(place_xy=fx.place_point("red_cylinder", action), **kw)


# =========================================================================== §2.1 gripper events

def test_first_close_takes_first_closing_edge_and_threshold_is_inclusive():
    assert first_close([1.0, 1.0, 0.2, 0.1, 1.0, 0.0]) == 2
    assert first_close([1.0, 0.35]) == 1  # g[t] <= 0.35 counts as closed
    assert first_close([1.0, 0.36, 0.36]) is None


def test_first_close_falls_back_to_first_closed_frame_when_gripper_starts_closed():
    assert first_close([0.0, 0.0, 1.0, 1.0]) == 0  # no edge: first closed frame
    assert first_close([0.35, 0.2]) == 0  # g[0] = 0.35 is not > 0.35, so no edge at t = 1
    assert first_close([0.0, 1.0, 1.0, 0.0]) == 3  # an edge anywhere wins over the fallback


def test_first_open_after_edge_fallback_and_none():
    assert first_open_after([1.0, 0.0, 0.0, 0.7, 1.0], tc=1) == 3  # 0.7 >= 0.70 opens
    assert first_open_after([0.0, 0.9, 0.9, 0.9], tc=1) == 2  # no edge at t >= 2: first open frame
    assert first_open_after([1.0, 0.0, 0.69, 0.0], tc=1) is None
    assert first_open_after([1.0, 0.0], tc=None) is None


def test_first_open_after_clamps_start_to_1_and_n_minus_1():
    g = [1.0, 0.0, 0.0, 1.0]
    assert first_open_after(g, tc=3) == 3  # s = clamp(4, 1, 3) = 3, so the last frame itself is tested
    assert first_open_after(g, tc=50) == 3
    assert first_open_after([0.0, 1.0, 1.0], tc=-5) == 1  # s clamps up to 1


def test_close_events_lists_edges_and_frame_zero():
    g = [0.2, 1.0, 0.1, 1.0, 0.3]
    assert close_events(g) == [0, 2, 4]
    assert close_events(g, start=3) == [4]
    assert close_events([1.0, 0.2, 0.9, 0.1]) == [1, 3]


@pytest.mark.parametrize("cE, cO, first, wrong", [
    (5, 5, "left", True),  # a tie goes to the task arm; the other arm still closed
    (3, None, "left", False),
    (3, 9, "left", True),
    (7, 3, "right", True),
    (None, 3, "right", True),
    (None, None, None, True),  # quirk 6: neither gripper closes also sets the flag
])
def test_first_close_arm_and_wrong_arm_flag(cE, cO, first, wrong):
    closes = ArmCloses("left", cE, cO)
    assert closes.first_close_arm == first
    assert closes.wrong_arm_participated is wrong


# =========================================================================== §2.3 source selection hook

def test_select_source_support_removal_hook():
    pos = {"base": np.array([[0.0, 0.0, 0.765]]), "top": np.array([[0.0, 0.0, 0.813]])}
    ee = np.array([[0.001, 0.0, 0.85]])
    plain = select_source(ee, pos, "top", 0)
    assert not plain.ok and plain.closest == "base"  # equal xy distance: first candidate wins
    support = find_support(pos, "top", pos, 0)
    assert support == "base"
    assert select_source(ee, pos, "top", 0, exclude=[support]).ok
    assert not select_source(ee, pos, "top", None).ok


# ====================================================================== §2.5 gates, §2.7 order, §7 CR

def _stage(name: str, w: float, i: float, e: float) -> StageScore:
    return StageScore(name, w, i, e, "raw")


def test_gates_three_stage():
    full = [_stage("s1", 0.4, 0.4, 0.4), _stage("s2", 0.4, 0.4, 0.4), _stage("s3", 0.2, 0.2, 0.2)]
    assert [(s.intent, s.exec) for s in apply_gates(full)] == [(0.4, 0.4), (0.4, 0.4), (0.2, 0.2)]
    s1_intent_missing = [_stage("s1", 0.4, 0.0, 0.4), _stage("s2", 0.4, 0.4, 0.4),
                         _stage("s3", 0.2, 0.2, 0.2)]
    # stage 1 exec is never gated (Scene 2 push can have exec without intent)
    assert [(s.intent, s.exec) for s in apply_gates(s1_intent_missing)] == [
        (0.0, 0.4), (0.0, 0.0), (0.0, 0.0)]
    s1_exec_missing = [_stage("s1", 0.4, 0.4, 0.0), _stage("s2", 0.4, 0.4, 0.4), _stage("s3", 0.2, 0.2, 0.2)]
    assert [(s.intent, s.exec) for s in apply_gates(s1_exec_missing)] == [(0.4, 0.0), (0.4, 0.0), (0.2, 0.0)]
    s2_exec_missing = [_stage("s1", 0.4, 0.4, 0.4), _stage("s2", 0.4, 0.4, 0.0), _stage("s3", 0.2, 0.2, 0.2)]
    gated = apply_gates(s2_exec_missing)
    assert [(s.intent, s.exec) for s in gated] == [(0.4, 0.4), (0.4, 0.0), (0.2, 0.0)]
    assert "exec gated" in gated[2].reason
    near_full = [_stage("s1", 0.4, 0.4 - 5e-7, 0.4), _stage("s2", 0.4, 0.4, 0.4), _stage("s3", 0.2, 0.2, 0.2)]
    assert apply_gates(near_full)[2].exec == 0.2  # full means >= weight - 1e-6


def test_gates_two_stage():
    assert [(s.intent, s.exec) for s in apply_gates(
        [_stage("s1", 0.8, 0.8, 0.0), _stage("s3", 0.2, 0.2, 0.2)])] == [(0.8, 0.0), (0.2, 0.0)]
    assert [(s.intent, s.exec) for s in apply_gates(
        [_stage("s1", 0.8, 0.0, 0.0), _stage("s3", 0.2, 0.2, 0.2)])] == [(0.0, 0.0), (0.0, 0.0)]
    assert [(s.intent, s.exec) for s in apply_gates(
        [_stage("s1", 0.8, 0.8, 0.8), _stage("s3", 0.2, 0.0, 0.2)])] == [(0.8, 0.8), (0.0, 0.0)]


def test_bonus_is_applied_before_the_wrong_arm_penalty():
    full_last = [_stage("s3", 0.2, 0.2, 0.2)]
    adj = adjust_totals(0.0, 0.6, full_last, final_target_ok=True, wrong_arm=True)
    # bonus first: 0.0 -> 0.3 -> 0.1 (penalty first would give 0.3); 0.6 gets no bonus -> 0.4 (not 0.7)
    assert (adj.intent, adj.exec) == (pytest.approx(0.1), pytest.approx(0.4))
    applied = (adj.bonus_intent, adj.bonus_exec, adj.penalty_intent, adj.penalty_exec)
    assert applied == (True, False, True, True)
    not_full_last = [_stage("s3", 0.2, 0.0, 0.0)]
    adj = adjust_totals(0.2, 0.2, not_full_last, final_target_ok=False, wrong_arm=True)
    assert (adj.intent, adj.exec, adj.penalty_intent) == (0.2, 0.2, False)


def test_is_complete_rules():
    assert is_complete("pickup", 0.8, 0.8, [])
    assert not is_complete("PickUp", 0.8, 0.79, [])
    assert is_complete("pickup_then_x", 0.8, 0.8, [], final_target_ok=False)  # pickup rule first
    assert is_complete("sequence_pickups", 1.0, 0.8, [])
    assert not is_complete("place_behind", 1.0, 1.0, [], final_target_ok=False)  # explicit False fails
    assert is_complete("place_behind", 0.0, 0.0, [], final_target_ok=True)
    stack = [_stage("stage2_stack", 0.4, 0.4, 0.4)]
    assert not is_complete("stack", 1.0, 1.0, stack, retry_final_target_ok=False)
    assert is_complete("route", 0.0, 0.0, [_stage("stage3_orientation", 0.4, 0.0, 0.4)])
    assert not is_complete("push", 1.0, 1.0, [_stage("stage2_push", 0.4, 0.4, 0.0)])
    assert not is_complete("place_behind", 1.0, 1.0, [_stage("stage2_relative_place", 0.4, 0.4, 0.4)])


# =========================================================================== §1 fingertip proxy

def test_fingertip_proxy_uses_rotation_column_0():
    rec = fx.build_record(2)
    rot = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # column 0 down, row 0 up
    rec.tcp_pos["left"][:] = (0.0, 0.0, 1.0)
    rec.tcp_rot["left"][:] = rot
    assert fingertip_track(rec, "left")[0] == pytest.approx((0.0, 0.0, 0.96))


# =========================================================================== §3 pickups

def test_perfect_pickup_scores_1_and_completes():
    s = score_episode(PICK, fx.PickPlace().record())
    assert scores(s) == (1.0, 1.0)
    assert stage_credits(s) == [(0.8, 0.8), (0.2, 0.2)]
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage3_finish"]
    assert s.intent_ok and s.exec_ok and s.complete
    assert (s.flags["cE"], s.flags["cO"], s.flags["tc"]) == (22, None, 24)  # tc: first lift >= 0.01 from cE
    assert s.flags["final_target_ok"] is None and not s.flags["wrong_arm_participated"]
    out = json.loads(json.dumps(s.to_dict()))
    assert out["stages"][0]["reason"].startswith("grasped yellow_block_1 at frame 22")


def test_pickup_wrong_source_grasped_scores_0():
    s = score_episode(PICK, fx.PickPlace(obj="red_sphere").record())
    assert scores(s) == (0.0, 0.0)
    assert "closest object at grasp was red_sphere, not yellow_block_1" in s.stages[0].reason
    assert "gated" in s.stages[1].reason  # the arm did return home, but finish is gated
    assert not s.complete


@pytest.mark.parametrize("dy, expected", [(0.0695, (1.0, 1.0)), (0.0705, (0.0, 0.0))])
def test_pickup_source_must_be_within_7cm_at_grasp(dy, expected):
    s = score_episode(PICK, fx.PickPlace(grasp_offset=(0.0, dy)).record())
    assert s.flags["closest_at_grasp"] == SRC
    assert scores(s) == expected


def test_pickup_without_lift_gets_intent_but_no_exec():
    # No lift at all: tc falls back to n-1; the arm is home there, so finish intent counts, exec is gated.
    s = score_episode(PICK, fx.PickPlace(lift_dz=0.005).record())
    assert stage_credits(s) == [(0.8, 0.0), (0.2, 0.0)]
    assert scores(s) == (1.0, 0.0)
    assert s.flags["tc"] == 149
    assert "max lift over the episode was 0.0050 m" in s.stages[0].reason
    assert not s.complete


def test_pickup_lift_before_grasp_counts_for_exec():
    # Quirk 7: the source is bumped up 15 mm before the grasp and never lifted afterwards.
    bump = [(0, P0), (9, P0), (10, fx.add(P0, (0, 0, 0.015))), (11, P0)]
    rec = fx.PickPlace(lift_dz=0.0).record(objects={SRC: bump})
    s = score_episode(PICK, rec)
    assert stage_credits(s) == [(0.8, 0.8), (0.2, 0.2)]
    assert s.flags["tc"] == 149  # no lift from cE on: n-1; home at the last frame qualifies alone
    assert scores(s) == (1.0, 1.0) and s.complete


def test_neither_gripper_closes_scores_0_without_penalty():
    rec = fx.build_record(120, ee={"left": [(0, LEFT_HOME), (30, fx.add(P0, (0, 0, 0.01))), (60, LEFT_HOME)]})
    s = score_episode(PICK, rec)
    assert scores(s) == (0.0, 0.0)
    assert s.flags["cE"] is None and s.flags["tc"] == 119
    assert s.flags["wrong_arm_participated"] is True  # quirk 6
    assert s.flags["penalty_applied"] == {"intent": False, "exec": False}
    assert "never closed" in s.stages[0].reason
    assert not s.complete


@pytest.mark.parametrize("other_grip", [
    [(0, 1.0), (10, 0.0), (15, 1.0)],  # other arm closes first (cO = 10 < cE = 22)
    [(0, 1.0), (100, 0.0), (110, 1.0)],  # other arm closes once later
])
def test_pickup_wrong_arm_penalty(other_grip):
    s = score_episode(PICK, fx.PickPlace().record(grip={"right": other_grip}))
    assert stage_credits(s) == [(0.8, 0.8), (0.2, 0.2)]  # Scene 1 still scores the task arm's grasp
    assert scores(s) == (pytest.approx(0.8), pytest.approx(0.8))
    assert s.flags["wrong_arm_participated"] and s.flags["penalty_applied"] == {"intent": True, "exec": True}
    assert s.complete and not s.intent_ok and not s.exec_ok  # §9: CR passes, full rate 0
    assert "wrong arm participated" in s.stages[0].reason


def test_pickup_wrong_arm_first_close_is_reported():
    s = score_episode(PICK, fx.PickPlace().record(grip={"right": [(0, 1.0), (10, 0.0)]}))
    assert (s.flags["cE"], s.flags["cO"], s.flags["first_close_arm"]) == (22, 10, "right")


# --------------------------------------------------------------------------- §2.4 finish failures (pickup)

def test_pickup_never_returning_home_scores_0_8_and_completes():
    s = score_episode(PICK, fx.PickPlace(home_t=None).record())
    assert scores(s) == (0.8, 0.8)
    assert "never returned home" in s.stages[1].reason
    assert s.complete and not s.intent_ok


@pytest.mark.parametrize("home_frame, expected", [(204, 1.0), (205, 0.8)])
def test_pickup_return_delay_limit_180_frames(home_frame, expected):
    # tc = 24; home reached at 204 is 180 frames later (ok), at 205 it is 181 (> 180: too late).
    rec = fx.PickPlace(n=300, home_t=None).record(
        ee={"left": [(home_frame - 1, AWAY_EE), (home_frame, LEFT_HOME)]})
    s = score_episode(PICK, rec)
    assert s.flags["home_t"] == home_frame
    assert scores(s) == (expected, expected)
    if expected < 1.0:
        assert "too late: 181 frames" in s.stages[1].reason


@pytest.mark.parametrize("excursion, expected", [(0.15, 1.0), (0.17, 0.8)])
def test_pickup_leaving_home_again_beyond_16cm(excursion, expected):
    out = fx.add(LEFT_HOME, (0.0, -excursion, 0.0))
    rec = fx.PickPlace().record(ee={"left": [(119, LEFT_HOME), (120, out), (121, LEFT_HOME)]})
    s = score_episode(PICK, rec)
    assert scores(s) == (expected, expected)


@pytest.mark.parametrize("grip_keys, expected", [
    ([(100, 1.0)], 1.0),  # opening after tc is fine
    ([(100, 1.0), (120, 0.0)], 0.8),  # a closing edge after tc is a re-grasp
])
def test_pickup_reclose_after_completion(grip_keys, expected):
    s = score_episode(PICK, fx.PickPlace().record(grip={"left": grip_keys}))
    assert scores(s) == (expected, expected)


@pytest.mark.parametrize("point, frame, expected", [
    ((0.15, -0.10, 0.95), 100, 0.8),  # x on the upper bound: inside (inclusive)
    ((0.150001, -0.10, 0.95), 100, 1.0),
    ((0.0, -0.15, 0.95), 100, 0.8),  # y on the lower bound
    ((0.0, -0.150001, 0.95), 100, 1.0),
    ((0.10, -0.10, 0.95), 5, 0.8),  # before tc still counts: the whole episode is checked
])
def test_pickup_other_arm_in_operation_box(point, frame, expected):
    other = [(0, RIGHT_HOME), (frame - 1, RIGHT_HOME), (frame, point), (frame + 1, RIGHT_HOME)]
    s = score_episode(PICK, fx.PickPlace().record(ee={"right": other}))
    assert scores(s) == (expected, expected)
    if expected < 1.0:
        assert f"other arm entered the operation box (first at frame {frame})" in s.stages[1].reason


@pytest.mark.parametrize("approach_x, expected", [(-1.0, 0.8), (1.0, 1.0)])
def test_other_arm_box_check_uses_its_fingertip_proxy(approach_x, expected):
    # Other-arm TCP at x = 0.17 (outside); its fingertip is at 0.13 (inside) or 0.21 (outside).
    rec = fx.PickPlace().record()
    rec.tcp_pos["right"][:] = (0.17, -0.10, 0.95)
    rec.tcp_rot["right"][:] = np.diag([approach_x, approach_x, 1.0])
    assert scores(score_episode(PICK, rec)) == (expected, expected)


def test_home_window_is_clipped_at_episode_end():
    last = fx.PickPlace(home_t=None).record(ee={"left": [(148, AWAY_EE), (149, LEFT_HOME)]})
    s = score_episode(PICK, last)
    assert s.flags["home_t"] == 149 and scores(s) == (1.0, 1.0)  # the last frame alone qualifies
    tail = fx.PickPlace(home_t=None).record(ee={"left": [(139, AWAY_EE), (140, LEFT_HOME)]})
    s = score_episode(PICK, tail)
    assert s.flags["home_t"] == 140 and scores(s) == (1.0, 1.0)  # 10 frames < K = 20, clipped window


def test_brief_pass_through_home_mid_episode_is_not_a_return():
    keys = [(99, AWAY_EE), (100, LEFT_HOME), (109, LEFT_HOME), (110, AWAY_EE)]
    s = score_episode(PICK, fx.PickPlace(home_t=None).record(ee={"left": keys}))
    assert s.flags["home_t"] is None and scores(s) == (0.8, 0.8)


# =========================================================================== §3 relation placements

@pytest.mark.parametrize("action", ["place_behind", "place_in_front", "place_left_of", "place_beside"])
def test_perfect_placement_every_direction(action):
    s = score_episode(fx.make_task(action), placement(action).record())
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage2_relative_place", "stage3_finish"]
    assert stage_credits(s) == [(0.4, 0.4), (0.4, 0.4), (0.2, 0.2)]
    assert scores(s) == (1.0, 1.0) and s.complete and s.intent_ok and s.exec_ok
    assert (s.flags["stage2_intent_t"], s.flags["to"], s.flags["tc"]) == (60, 64, 64)
    assert s.flags["final_target_ok"] is True and s.flags["bonus_applied"] == {"intent": False, "exec": False}


@pytest.mark.parametrize("action", ["place_behind", "place_in_front", "place_left_of", "place_beside"])
def test_placement_in_the_opposite_direction_fails(action):
    opposite = fx.place_point("red_cylinder", action, angle_deg=180.0)
    s = score_episode(fx.make_task(action), fx.PickPlace(place_xy=opposite).record())
    assert stage_credits(s) == [(0.4, 0.4), (0.0, 0.0), (0.0, 0.0)]
    assert scores(s) == (0.4, 0.4) and not s.complete


def test_relation_ok_boundaries():
    for u in fx.RELATION_UNITS.values():
        assert relation_ok(0.08 * np.array(u), u)
        assert not relation_ok(-0.08 * np.array(u), u)
    u = (1.0, 0.0)
    assert relation_ok((0.12, 0.0), u) and not relation_ok((0.1201, 0.0), u)  # d > 0.12 fails
    assert relation_ok((1e-6, 0.0), u) and not relation_ok((0.9e-6, 0.0), u)  # d < 1e-6 fails
    for deg, ok in ((44.0, True), (46.0, False)):
        a = np.deg2rad(deg)
        assert relation_ok((0.08 * np.cos(a), 0.08 * np.sin(a)), u) is ok


def test_on_table_boundary():
    assert on_table(0.02) and on_table(-0.02) and on_table(0.0199)
    assert not on_table(0.0201) and not on_table(-0.0201)


@pytest.mark.parametrize("dist, angle, expected", [
    (0.119, 0.0, (1.0, 1.0, True)),
    (0.121, 0.0, (0.4, 0.4, False)),  # d > 0.12: stage 2 fails, finish intent gated, no bonus
    (0.08, 44.0, (1.0, 1.0, True)),
    (0.08, 46.0, (0.4, 0.4, False)),  # just beyond 45 degrees
    (0.08, -46.0, (0.4, 0.4, False)),
])
def test_placement_distance_and_angle_limits(dist, angle, expected):
    xy = fx.place_point("red_cylinder", "place_behind", dist, angle)
    s = score_episode(BEHIND, fx.PickPlace(place_xy=xy).record())
    assert (s.intent_score, s.exec_score, s.complete) == expected
    assert s.flags["tc"] == 64  # the open frame exists either way


@pytest.mark.parametrize("place_dz, expected", [
    (0.019, (1.0, 1.0)),  # released 19 mm up: on the table
    (0.021, (1.0, pytest.approx(0.7))),  # released 21 mm up: exec 0 (+0.3 bonus once it drops)
])
def test_exec_needs_source_on_table_at_release(place_dz, expected):
    sc = placement(place_dz=place_dz)
    xy = fx.place_point("red_cylinder", "place_behind")
    released, on_table = (*xy, P0[2] + place_dz), (*xy, P0[2])
    rec = sc.record(objects={SRC: [(64, released), (65, on_table)]})  # it drops right after the release
    s = score_episode(BEHIND, rec)
    assert scores(s) == expected
    assert s.flags["stage2_intent_t"] == (62 if place_dz < 0.02 else 65)


def test_placement_wrong_block_grasped_first_gets_only_the_bonus():
    # §9: first close is on red_sphere (stage 1 intent 0 zeroes everything); the source is placed later.
    sphere_top = fx.add(fx.SCENE1_OBJECTS["red_sphere"], (0, 0, 0.01))
    grasp = fx.add(P0, (0, 0, 0.01))
    place = (*fx.place_point("red_cylinder", "place_behind"), P0[2])
    ee = [(0, LEFT_HOME), (20, sphere_top), (30, sphere_top), (40, grasp), (52, fx.add(grasp, (0, 0, 0.08))),
          (72, fx.add(place, (0, 0, 0.09))), (82, fx.add(place, (0, 0, 0.01))),
          (90, fx.add(place, (0, 0, 0.06))),
          (110, LEFT_HOME)]
    grip = [(0, 1.0), (22, 0.0), (30, 1.0), (42, 0.0), (84, 1.0)]
    obj = [(0, P0), (42, P0), (52, fx.add(P0, (0, 0, 0.08))), (72, fx.add(place, (0, 0, 0.08))), (82, place)]
    s = score_episode(BEHIND, fx.build_record(150, ee={"left": ee}, grip={"left": grip}, objects={SRC: obj}))
    assert stage_credits(s) == [(0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]
    assert "closest object at grasp was red_sphere, not yellow_block_1" in s.stages[0].reason
    assert scores(s) == (pytest.approx(0.3), pytest.approx(0.3))
    assert s.flags["bonus_applied"] == {"intent": True, "exec": True}
    assert s.complete and not s.intent_ok


def test_placement_without_return_home_scores_0_8_and_completes():
    s = score_episode(BEHIND, placement(home_t=None).record())
    assert stage_credits(s) == [(0.4, 0.4), (0.4, 0.4), (0.0, 0.0)]
    assert scores(s) == (pytest.approx(0.8), pytest.approx(0.8))  # >= 0.5: no bonus
    assert s.complete and s.flags["final_target_ok"]


def test_stage2_gated_when_stage1_intent_fails():
    # The grasp is 7.05 cm off the source (still the closest object), but the source is placed perfectly.
    s = score_episode(BEHIND, placement(grasp_offset=(0.0, 0.0705)).record())
    assert stage_credits(s) == [(0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]
    assert "intent gated" in s.stages[1].reason and "exec gated" in s.stages[1].reason
    assert scores(s) == (pytest.approx(0.3), pytest.approx(0.3)) and s.complete  # the final layout bonus


def test_lift_latch_requires_a_lift_after_the_grasp():
    # Source bumped 15 mm before the grasp (stage 1 exec via quirk 7), then slid into relation on the table.
    bump = [(0, P0), (9, P0), (10, fx.add(P0, (0, 0, 0.015))), (11, P0), (22, P0), (40, IN_RELATION_LEFT_OF)]
    grasp = fx.add(P0, (0, 0, 0.01))
    slid = fx.add(IN_RELATION_LEFT_OF, (0, 0, 0.01))
    ee = [(0, LEFT_HOME), (20, grasp), (22, grasp), (40, slid), (80, LEFT_HOME)]
    grip = [(0, 1.0), (22, 0.0), (45, 1.0)]
    rec = fx.build_record(150, ee={"left": ee}, grip={"left": grip}, objects={SRC: bump})
    s = score_episode(LEFT_OF, rec)
    assert stage_credits(s) == [(0.4, 0.4), (0.0, 0.0), (0.0, 0.0)]
    assert "never lifted" in s.stages[1].reason
    assert s.flags["tc"] == 45  # the open frame
    assert scores(s) == (pytest.approx(0.7), pytest.approx(0.7)) and s.complete  # 0.4 + 0.3 bonus


def test_latch_frame_is_tested_and_exec_needs_lift_between_grasp_and_release():
    # The source starts in relation. Grasp 22, release 25 without lifting; at frame 40 it pops up 15 mm
    # (latch opens, and 15 mm is still "on the table"): intent at 40, but no lift in [22, 25] -> exec 0.
    start = IN_RELATION_LEFT_OF
    obj = [(0, start), (39, start), (40, fx.add(start, (0, 0, 0.015))), (41, start)]
    grasp = fx.add(start, (0, 0, 0.01))
    ee = [(0, LEFT_HOME), (20, grasp), (25, grasp), (60, LEFT_HOME)]
    grip = [(0, 1.0), (22, 0.0), (25, 1.0)]
    rec = fx.build_record(150, ee={"left": ee}, grip={"left": grip}, objects={SRC: obj})
    s = score_episode(LEFT_OF, rec)
    assert (s.flags["cE"], s.flags["to"], s.flags["stage2_intent_t"], s.flags["tc"]) == (22, 25, 40, 25)
    assert stage_credits(s) == [(0.4, 0.4), (0.4, 0.0), (0.2, 0.0)]
    assert "not lifted >= 0.01 m between grasp (frame 22) and release (frame 25)" in s.stages[1].reason
    assert scores(s) == (1.0, pytest.approx(0.7)) and s.complete


def test_completion_frame_is_intent_frame_when_gripper_never_opens():
    s = score_episode(BEHIND, placement(open_t=None).record())
    assert (s.flags["to"], s.flags["stage2_intent_t"], s.flags["tc"]) == (None, 60, 60)
    assert stage_credits(s) == [(0.4, 0.4), (0.4, 0.0), (0.2, 0.0)]
    assert "never reopened" in s.stages[1].reason
    assert scores(s) == (1.0, pytest.approx(0.7))


def test_completion_frame_falls_back_to_first_lift_when_never_placed():
    s = score_episode(BEHIND, fx.PickPlace().record())  # lifted and held, never placed or opened
    assert (s.flags["to"], s.flags["stage2_intent_t"], s.flags["tc"]) == (None, None, 24)
    assert stage_credits(s) == [(0.4, 0.4), (0.0, 0.0), (0.0, 0.0)]
    assert "never on the table" in s.stages[1].reason
    assert scores(s) == (0.4, 0.4) and not s.complete


def test_exec_relation_is_judged_at_release():
    # Placed in relation (intent at 60), dragged 15 cm away on the table, released there at 70.
    xy = fx.place_point("red_cylinder", "place_behind")
    far = (xy[0], xy[1] + 0.15, P0[2])
    sc = placement(open_t=70, home_t=100)
    keys = sc.keys()
    keys["objects"][SRC] = [k for k in keys["objects"][SRC] if k[0] <= 62] + [(66, far)]
    keys["ee"]["left"] = [k for k in keys["ee"]["left"] if k[0] <= 62] + [
        (66, fx.add(far, (0, 0, 0.01))), (70, fx.add(far, (0, 0, 0.01))), (100, LEFT_HOME)]
    s = score_episode(BEHIND, fx.build_record(150, **keys))
    assert stage_credits(s) == [(0.4, 0.4), (0.4, 0.0), (0.2, 0.0)]
    assert "relation failed at release (frame 70)" in s.stages[1].reason
    assert scores(s) == (1.0, 0.4) and not s.complete  # final layout wrong: no bonus, CR fails
    # Later nudged back into relation: CR passes and the bonus lifts ES to 0.7.
    keys["objects"][SRC] += [(120, far), (125, (*xy, P0[2]))]
    s = score_episode(BEHIND, fx.build_record(150, **keys))
    assert scores(s) == (1.0, pytest.approx(0.7)) and s.complete


@pytest.mark.parametrize("pushed_frame, complete", [(140, False), (139, True)])
def test_placed_then_pushed_away_only_cr_depends_on_last_10_frames(pushed_frame, complete):
    xy = fx.place_point("red_cylinder", "place_behind")
    placed, away = (*xy, P0[2]), (xy[0] + 0.2, xy[1], P0[2])
    push = [(pushed_frame - 1, placed), (pushed_frame, away), (pushed_frame + 1, placed)]
    s = score_episode(BEHIND, placement().record(objects={SRC: push}))
    assert scores(s) == (1.0, 1.0)  # exec was judged at the release frame
    assert s.complete is complete and s.flags["final_target_ok"] is complete


def test_bonus_exec_only_then_wrong_arm_penalty_on_intent():
    # Released 3 cm above the table (exec 0, finish exec gated); it drops into relation. The other arm
    # closes once at home: the finish intent is full, so IS 1.0 -> 0.8; ES 0.4 + 0.3 bonus = 0.7.
    sc = placement(place_dz=0.03)
    xy = fx.place_point("red_cylinder", "place_behind")
    drop = [(64, (*xy, P0[2] + 0.03)), (65, (*xy, P0[2]))]
    rec = sc.record(objects={SRC: drop}, grip={"right": [(0, 1.0), (100, 0.0), (105, 1.0)]})
    s = score_episode(BEHIND, rec)
    assert stage_credits(s) == [(0.4, 0.4), (0.4, 0.0), (0.2, 0.0)]
    assert scores(s) == (pytest.approx(0.8), pytest.approx(0.7))
    assert s.flags["bonus_applied"] == {"intent": False, "exec": True}
    assert s.flags["penalty_applied"] == {"intent": True, "exec": False}
    assert s.complete


@pytest.mark.parametrize("n, expected", [(9, (0.0, 0.0, False)), (10, (0.3, 0.3, True))])
def test_final_layout_bonus_needs_at_least_10_frames(n, expected):
    # The source starts in relation and nobody touches it.
    rec = fx.build_record(n, objects={SRC: [(0, IN_RELATION_LEFT_OF)]})
    s = score_episode(LEFT_OF, rec)
    intent, exec_, complete = expected
    assert scores(s) == (pytest.approx(intent), pytest.approx(exec_))
    assert s.complete is complete


# =========================================================================== dispatch, JSON, §8 summary

def test_score_episode_dispatch_and_errors():
    rec = fx.PickPlace().record()
    with pytest.raises(ValueError, match="scene9"):
        score_episode(fx.make_task(scene="scene9"), rec)
    with pytest.raises(ValueError, match="unsupported"):
        score_episode(fx.make_task("stack"), rec)
    with pytest.raises(ValueError, match="'pickup'"):
        score_episode(fx.make_task(scene="scene3"), rec)  # scene 3 has no pickup


def test_to_dict_is_json_serialisable_with_stage_reasons():
    s = score_episode(BEHIND, placement(home_t=None).record(grip={"right": [(0, 1.0), (5, 0.0)]}))
    d = json.loads(json.dumps(s.to_dict()))
    names = ["stage1_source_select", "stage2_relative_place", "stage3_finish"]
    assert [st["name"] for st in d["stages"]] == names
    assert all(st["reason"] for st in d["stages"])
    assert d["flags"]["cO"] == 5 and d["flags"]["wrong_arm_participated"] is True
    assert d["max_total"] == 1.0 and d["complete"] is True


def test_summarize_macro_vs_micro_completion_on_unequal_rounds():
    def row(task_id: str, level: str, intent: float, exec_: float, complete: bool) -> dict:
        return {"task_id": task_id, "scene": "scene1", "level": level, "intent_score": intent,
                "exec_score": exec_, "complete": complete}

    rows = [row("A", "L0", 1.0, 1.0, True)] * 3 + [row("B", "L0", 0.3, 0.0, False),
                                                   row("C", "L1", 0.99, 0.98, True)]
    out = summarize(rows)
    assert list(out) == ["scene1/L0", "scene1/L1", "all"]
    l0 = out["scene1/L0"]
    assert (l0["n_episodes"], l0["n_tasks"]) == (4, 2)
    assert l0["completion_rate"] == l0["task_macro_completion_rate"] == pytest.approx(0.5)  # (1 + 0) / 2
    assert l0["episode_micro_completion_rate"] == pytest.approx(0.75)  # 3 / 4
    assert l0["mean_intent_score"] == pytest.approx(3.3 / 4) and l0["mean_exec_score"] == pytest.approx(0.75)
    assert l0["intent_full_rate"] == pytest.approx(0.75) and l0["exec_full_rate"] == pytest.approx(0.75)
    l1 = out["scene1/L1"]
    assert (l1["intent_full_rate"], l1["exec_full_rate"]) == (1.0, 0.0)  # 0.99 counts, 0.98 does not
    assert out["all"]["n_tasks"] == 3
    assert out["all"]["task_macro_completion_rate"] == pytest.approx(2 / 3)
    assert out["all"]["episode_micro_completion_rate"] == pytest.approx(0.8)


def test_summarize_accepts_episode_scores():
    s = score_episode(PICK, fx.PickPlace().record())
    out = summarize([s, score_episode(PICK, fx.PickPlace(obj="red_sphere").record())])
    assert out["scene1/L0"]["n_tasks"] == 1
    assert out["scene1/L0"]["completion_rate"] == pytest.approx(0.5)
    assert out["scene1/L0"]["mean_intent_score"] == pytest.approx(0.5)
