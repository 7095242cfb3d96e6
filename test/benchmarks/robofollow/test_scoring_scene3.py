"""RoboFollow Scene 3 scorer against hand-built TCP trajectories (shared/robofollow/SCORING.md §5, §7, §9)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from support import scoring_fixtures as fx  # first: puts the repo root on sys.path
from vla_bridge.benchmarks.robofollow.scoring import score_episode
from vla_bridge.benchmarks.robofollow.scoring.scene3 import (label_edge, quat_yaw, route_spec,
                                                             target_yaw, yaw_error)
from vla_bridge.benchmarks.robofollow.tasks import load_suite

SUITE = load_suite()
BASE = fx.nominal_layout("scene3", "default")
VIA = SUITE.get("L0_r_pick2_via4_to6_short_front")  # right, red -> over yellow (not blue) -> blue label, yaw 0
VIA_LONG = SUITE.get("L0_r_pick2_via4_to6_long_front")  # same route, yaw pi/2
AROUND = SUITE.get("L0_l_pick5_around3_to1_short_right")  # left, blue -> around green = over red -> green label, pi/2
REWORDED = SUITE.get("L2_l_pick5_around2_to1_long_right__rw_route0_ori0")  # "pass over green" = around red
LIFTED = 0.08


def carry(task, waypoints, final_xy=None, final_dz: float = 0.002, yaw_deg: float = 0.0, lift_dz: float = LIFTED,
          home: bool = True, open_t: int | None = 64, n: int = 150, base=BASE, extra_grip=None):
    """Grasp at 22, lift by 32, pass the xy `waypoints` [(t, (x, y)), ...] lifted, then over the label at 52,
    lowered at 62 (centre final_dz above the spawn height), open at 64, home at 90. Yaw reaches yaw_deg at 52."""
    arm, src = task.arm, task.source
    p0 = base[src]
    label = base[task.target["target_label"]]
    fx_, fy = final_xy if final_xy is not None else label[:2]
    z_up, z_down = p0[2] + lift_dz, p0[2] + final_dz
    obj = [(0, p0), (22, p0), (32, (p0[0], p0[1], z_up))]
    obj += [(t, (x, y, z_up)) for t, (x, y) in waypoints]
    obj += [(52, (fx_, fy, z_up)), (62, (fx_, fy, z_down))]
    ee = [(0, fx.HOME[arm]), (20, fx.add(p0, (0, 0, 0.01)))] + [(t, fx.add(p, (0, 0, 0.01))) for t, p in obj[1:]]
    grip = [(0, 1.0), (22, 0.0)]
    if open_t is not None:
        grip.append((open_t, 1.0))
        ee.append((open_t + 4, (fx_, fy, z_down + 0.07)))
    if home:
        ee.append((90, fx.HOME[arm]))
    grips = {arm: grip, **(extra_grip or {})}
    quats = {src: [(0, fx.yaw_quat(0.0)), (32, fx.yaw_quat(0.0)), (52, fx.yaw_quat(yaw_deg))]}
    return fx.build_tcp_record(n, base, ee={arm: ee}, grip=grips, objects={src: obj}, quats=quats)


OVER_YELLOW = [(42, BASE["yellow_bar_4"][:2])]
OVER_BLUE = [(42, BASE["blue_bar_5"][:2])]
OVER_RED = [(42, BASE["red_bar_2"][:2])]
OVER_GREEN = [(42, BASE["green_bar_3"][:2])]


def scores(s):
    return pytest.approx(s.intent_score), pytest.approx(s.exec_score)


def credits(s):
    return [(pytest.approx(st.intent), pytest.approx(st.exec)) for st in s.stages]


# =========================================================================== config-derived facts

def test_route_spec_uses_base_task_and_config_pairs():
    r = route_spec(VIA)
    assert (r.mode, r.via, r.correct, r.wrong) == ("via", "yellow_bar_4", "yellow_bar_4", "blue_bar_5")
    r = route_spec(AROUND)
    assert (r.mode, r.via, r.correct, r.wrong) == ("around", "green_bar_3", "red_bar_2", "green_bar_3")
    r = route_spec(REWORDED)  # worded "pass over the green slab"; the base task says around red
    assert REWORDED.target["wording"]["route_mode"] == "via"
    assert (r.mode, r.via, r.correct, r.wrong) == ("around", "red_bar_2", "green_bar_3", "red_bar_2")


def test_route_spec_rejects_inconsistent_targets():
    bad = dataclasses.replace(VIA, target={**VIA.target, "route_correct": "blue_bar_5"})
    with pytest.raises(ValueError, match="route_correct"):
        route_spec(bad)
    bad = dataclasses.replace(VIA, target={**VIA.target, "route_mode": "around", "route_correct": None,
                                           "route_wrong": None})
    with pytest.raises(ValueError, match="base task"):
        route_spec(bad)


def test_every_suite_task_has_a_consistent_route_and_yaw():
    for task in SUITE.eval_tasks("scene3"):
        r = route_spec(task)
        assert (r.correct, r.wrong) == (task.target["route_correct"], task.target["route_wrong"])
        assert target_yaw(task) in (0.0, math.pi / 2)


def test_label_edge_and_yaw_helpers():
    assert label_edge("blue_label_6") == pytest.approx(0.0695)
    assert math.degrees(quat_yaw(fx.yaw_quat(30.0))) == pytest.approx(30.0)
    assert math.degrees(yaw_error(math.radians(190.0), 0.0)) == pytest.approx(10.0)  # modulo pi
    assert math.degrees(yaw_error(math.radians(-95.0), math.pi / 2)) == pytest.approx(5.0)
    assert math.degrees(yaw_error(math.radians(90.0), 0.0)) == pytest.approx(90.0)


# =========================================================================== full episodes

def test_perfect_via_route():
    s = score_episode(VIA, carry(VIA, OVER_YELLOW))
    assert [st.name for st in s.stages] == ["stage1_source_select", "stage2_route", "stage3_orientation"]
    assert credits(s) == [(0.3, 0.3), (0.3, 0.3), (0.4, 0.4)]
    assert scores(s) == (1.0, 1.0) and s.complete and s.intent_ok and s.exec_ok
    assert 33 <= s.flags["stage2_intent_t"] <= 42


def test_thirty_degree_yaw_is_1_0_over_0_6_and_fails_cr():
    s = score_episode(VIA, carry(VIA, OVER_YELLOW, yaw_deg=30.0))  # §9
    assert credits(s) == [(0.3, 0.3), (0.3, 0.3), (0.4, 0.0)]
    assert scores(s) == (1.0, 0.6) and not s.complete
    assert s.flags["yaw_error_deg"] == pytest.approx(30.0)


@pytest.mark.parametrize("yaw, expected", [
    (19.9, (0.4, 0.4)), (20.1, (0.4, 0.0)), (39.9, (0.4, 0.0)), (40.1, (0.0, 0.0)),
    (180.0, (0.4, 0.4)), (-165.0, (0.4, 0.4)),  # the slab axis is symmetric under 180 deg
])
def test_orientation_thresholds_and_half_turn_symmetry(yaw, expected):
    s = score_episode(VIA, carry(VIA, OVER_YELLOW, yaw_deg=yaw))
    st = s.stage("stage3_orientation")
    assert (st.intent, st.exec) == expected
    assert s.complete is (expected[1] > 0)


@pytest.mark.parametrize("yaw, full", [(90.0, True), (-90.0, True), (0.0, False), (75.0, True)])
def test_orientation_target_pi_over_2(yaw, full):
    s = score_episode(VIA_LONG, carry(VIA_LONG, OVER_YELLOW, yaw_deg=yaw))
    assert (s.stage("stage3_orientation").exec == 0.4) is full


@pytest.mark.parametrize("dx, on_label", [(0.0694, True), (0.0696, False)])
def test_label_edge_is_strict_0_0695(dx, on_label):
    label = BASE["blue_label_6"]
    s = score_episode(VIA, carry(VIA, OVER_YELLOW, final_xy=(label[0] + dx, label[1])))
    assert s.flags["place_ok"] is on_label
    assert scores(s) == ((1.0, 1.0) if on_label else (0.6, 0.6))


def test_orientation_has_no_height_or_release_check():
    # still held 8 cm above the label with the gripper closed at the last frame: full credit
    s = score_episode(VIA, carry(VIA, OVER_YELLOW, final_dz=LIFTED, open_t=None, home=False))
    assert scores(s) == (1.0, 1.0) and s.complete


def test_no_finish_stage_arm_never_returns_home():
    s = score_episode(VIA, carry(VIA, OVER_YELLOW, home=False))
    assert scores(s) == (1.0, 1.0)


def test_wrong_route_over_the_other_slab():
    s = score_episode(VIA, carry(VIA, OVER_BLUE))
    assert credits(s) == [(0.3, 0.3), (0.0, 0.0), (0.0, 0.0)]  # stage 3 gated
    assert scores(s) == (0.3, 0.3) and not s.complete


@pytest.mark.parametrize("y, ok", [
    (-0.131, True),  # 3.9 cm from yellow, 4.1 cm from blue
    (-0.129, False),  # 4.1 cm from yellow, but only 3.9 cm from blue (needs > 0.04)
])
def test_route_keeps_clear_of_the_wrong_slab(y, ok):
    s = score_episode(VIA, carry(VIA, [(42, (0.01, y))]))
    assert (s.stage("stage2_route").intent == 0.3) is ok


@pytest.mark.parametrize("dx, ok", [(0.0095, True), (0.0105, False)])
def test_route_x_alignment_1cm(dx, ok):
    # jump from x -0.05 (frame 41) to 0.01 + dx (frame 42), so no frame lies closer in x
    s = score_episode(VIA, carry(VIA, [(41, (-0.05, -0.17)), (42, (0.01 + dx, -0.17))]))
    assert (s.stage("stage2_route").intent == 0.3) is ok


def test_route_frames_before_the_lift_latch_do_not_count():
    # slid (not lifted) over yellow, then lifted only at the label
    p0 = BASE["red_bar_2"]
    on_table = [(0, p0), (22, p0), (42, (0.01, -0.17, p0[2])), (50, (0.11, -0.13, p0[2])),
                (56, (0.11, -0.13, p0[2] + 0.02)), (62, (0.11, -0.13, p0[2] + 0.002))]
    ee = [(0, fx.HOME["right"]), (20, fx.add(p0, (0, 0, 0.01)))]
    ee += [(t, fx.add(p, (0, 0, 0.01))) for t, p in on_table[1:]]
    rec = fx.build_tcp_record(100, BASE, ee={"right": ee}, grip={"right": [(0, 1.0), (22, 0.0), (64, 1.0)]},
                              objects={"red_bar_2": on_table})
    s = score_episode(VIA, rec)
    assert s.stage("stage2_route").intent == 0.0
    assert s.stage("stage1_source_select").exec == 0.3  # lifted 2 cm at the label


def test_around_route_passes_over_the_pair_object():
    assert scores(score_episode(AROUND, carry(AROUND, OVER_RED, yaw_deg=90.0))) == (1.0, 1.0)
    s = score_episode(AROUND, carry(AROUND, OVER_GREEN, yaw_deg=90.0))  # over the named slab: wrong
    assert s.stage("stage2_route").intent == 0.0


def test_reworded_task_scores_the_base_route():
    s = score_episode(REWORDED, carry(REWORDED, OVER_GREEN))  # long_right: yaw 0
    assert scores(s) == (1.0, 1.0)
    assert score_episode(REWORDED, carry(REWORDED, OVER_RED)).stage("stage2_route").intent == 0.0


def test_swapped_layout_uses_current_positions():
    task = SUITE.get("L1_scene3_1__r_pick3_via5_to6_long_front")  # green slab now at red's place
    base = fx.nominal_layout("scene3", task.layout)
    rec = carry(task, [(42, base["blue_bar_5"][:2])], yaw_deg=-90.0, base=base)
    assert scores(score_episode(task, rec)) == (1.0, 1.0)


def test_wrong_arm_penalty_on_orientation_stage():
    s = score_episode(VIA, carry(VIA, OVER_YELLOW, extra_grip={"left": [(0, 1.0), (120, 0.0)]}))
    assert scores(s) == (0.8, 0.8) and s.complete  # CR: stage 3 exec > 0
    assert s.flags["penalty_applied"] == {"intent": True, "exec": True}


def test_no_task_arm_close_scores_0_even_when_the_slab_ends_right():
    rec = carry(VIA, OVER_YELLOW)
    rec.grip["right"][:] = 1.0
    s = score_episode(VIA, rec)
    assert scores(s) == (0.0, 0.0) and not s.complete
    assert s.stage("stage3_orientation").reason == "task-arm gripper never closed"


def test_scene3_errors():
    rec = carry(VIA, OVER_YELLOW)
    with pytest.raises(ValueError, match="'pickup'"):
        score_episode(dataclasses.replace(VIA, action="pickup"), rec)
    no_quat = dataclasses.replace(rec, quat={})
    with pytest.raises(ValueError, match="quaternion"):
        score_episode(VIA, no_quat)
    with pytest.raises(ValueError, match="target_label"):
        score_episode(dataclasses.replace(VIA, target={**VIA.target, "target_label": "red_bar_2"}), rec)
