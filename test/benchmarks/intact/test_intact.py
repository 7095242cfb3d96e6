"""INT-ACT episode metrics, and suite-wide scorer checks (every task of config/robofollow/tasks.json)."""
from __future__ import annotations

import pytest

from support import scoring_fixtures as fx  # first: puts the repo root on sys.path
from vla_bridge.benchmarks.robofollow.scoring import SCENE_ACTIONS, score_episode, scorer_for
from vla_bridge.benchmarks.intact.metrics import intact_metrics, summarize_intact, task_sources
from vla_bridge.benchmarks.robofollow.tasks import load_suite

SUITE = load_suite()
BASE2 = fx.nominal_layout("scene2", "default")
BASE4 = fx.nominal_layout("scene4", "scene4.1")
LRC, SRC = "large_red_cylinder", "small_red_cube"
PICK = SUITE.get("L0_pickup_red_cylinder")  # scene 2, left arm, large_red_cylinder
SEQ = SUITE.get("L0_s41_seq_l_bowl_then_r_green_cylinder")


def metrics(task, rec):
    return intact_metrics(task, rec, score_episode(task, rec).complete)


def hover(point, n: int = 60, arm: str = "left"):
    """The arm moves to `point` by frame 20, stays until 40, then goes home; gripper open."""
    return fx.build_tcp_record(n, BASE2, ee={arm: [(0, fx.HOME[arm]), (20, point), (40, point), (55, fx.HOME[arm])]})


# =========================================================================== per-episode metrics

def test_perfect_pickup_all_true():
    rec = fx.TcpPickPlace(BASE2, arm="left", obj=LRC).record()
    m = metrics(PICK, rec)
    assert (m["intention_correct"], m["grasp_success"], m["task_success"], m["wrong_object_attempt"]) == (
        True, True, True, False)
    src = m["per_source"][0]
    assert src["arm"] == "left" and src["source"] == LRC and src["intention_t"] <= 20 and src["grasp_t"] == 24


@pytest.mark.parametrize("dz, near", [(0.0495, True), (0.0505, False)])
def test_intention_radius_is_5cm_3d_and_needs_no_grasp(dz, near):
    m = metrics(PICK, hover(fx.add(BASE2[LRC], (0, 0, dz))))
    assert m["intention_correct"] is near
    assert m["grasp_success"] is False and m["task_success"] is False


def test_intention_needs_the_task_arm():
    m = metrics(PICK, hover(fx.add(BASE2[LRC], (0, 0, 0.02)), arm="right"))
    assert m["intention_correct"] is False


def test_grasp_needs_closed_gripper_lift_and_the_tcp_at_the_source():
    sc = fx.TcpPickPlace(BASE2, arm="left", obj=LRC)
    assert metrics(PICK, sc.record(grip={"left": [(22, 0.4)]}))["grasp_success"] is False  # 0.4 > 0.35: open
    assert metrics(PICK, fx.TcpPickPlace(BASE2, arm="left", obj=LRC, lift_dz=0.009).record())["grasp_success"] is False
    # the TCP leaves the lifted object (6 cm away) while still closed: no grasp at those frames,
    # but the first lifted frames (TCP at the object) already count
    assert metrics(PICK, sc.record())["grasp_success"] is True
    stays = fx.TcpPickPlace(BASE2, arm="left", obj=LRC, home_t=None)  # no way home past the object
    far = stays.record(ee={"left": [(22, fx.add(BASE2[LRC], (0.06, 0, 0.01))),
                                    (32, fx.add(BASE2[LRC], (0.06, 0, 0.09)))]})
    assert metrics(PICK, far)["grasp_success"] is False


def test_wrong_object_attempt_when_another_object_is_lifted():
    rec = fx.TcpPickPlace(BASE2, arm="left", obj=SRC).record()
    m = metrics(PICK, rec)
    assert m["wrong_object_attempt"] is True and m["wrong_object"] == SRC
    assert m["intention_correct"] is False and m["grasp_success"] is False


@pytest.mark.parametrize("push, wrong", [(0.029, False), (0.031, True)])
def test_wrong_object_needs_more_than_3cm(push, wrong):
    p0 = BASE2[SRC]
    rec = fx.build_tcp_record(40, BASE2, objects={SRC: [(0, p0), (20, fx.add(p0, (push, 0, 0)))]})
    assert metrics(PICK, rec)["wrong_object_attempt"] is wrong


def test_wrong_object_must_move_more_than_the_source():
    # carrying the source 8 cm up knocks a neighbour 4 cm: not a wrong-object attempt
    n0 = BASE2["large_blue_cube"]
    rec = fx.TcpPickPlace(BASE2, arm="left", obj=LRC).record(
        objects={"large_blue_cube": [(0, n0), (30, n0), (32, fx.add(n0, (0.04, 0, 0)))]})
    assert metrics(PICK, rec)["wrong_object_attempt"] is False


def test_fixtures_are_never_wrong_objects():
    b0 = BASE2["green_bowl"]
    rec = fx.build_tcp_record(40, BASE2, objects={"green_bowl": [(0, b0), (20, fx.add(b0, (0.05, 0, 0)))]})
    assert metrics(PICK, rec)["wrong_object_attempt"] is False


def test_sequence_needs_both_arms_at_their_sources():
    assert task_sources(SEQ) == [("left", "red_cube_in_bowl"), ("right", "green_cylinder_top")]
    a = fx.TcpPickPlace(BASE4, arm="left", obj="red_cube_in_bowl", home_t=70)
    b = fx.TcpPickPlace(BASE4, arm="right", obj="green_cylinder_top", reach_t=40, close_t=42, lift_t=52)
    only_a = fx.build_tcp_record(150, BASE4, **a.keys())
    m = metrics(SEQ, only_a)
    assert (m["intention_correct"], m["grasp_success"]) == (False, False)
    keys = {part: {**a.keys()[part], **b.keys()[part]} for part in ("ee", "grip", "objects")}
    m = metrics(SEQ, fx.build_tcp_record(150, BASE4, **keys))
    assert (m["intention_correct"], m["grasp_success"], m["task_success"]) == (True, True, True)
    assert m["wrong_object_attempt"] is False


def test_task_success_is_the_passed_cr_result():
    rec = fx.TcpPickPlace(BASE2, arm="left", obj=LRC).record()
    assert intact_metrics(PICK, rec, False)["task_success"] is False


def test_summarize_intact_rates_and_gap():
    rows = [
        {"scene": "scene2", "level": "L0", "intention_correct": True, "grasp_success": True,
         "task_success": True, "wrong_object_attempt": False},
        {"scene": "scene2", "level": "L0", "intention_correct": True, "grasp_success": False,
         "task_success": False, "wrong_object_attempt": True},
        {"scene": "scene4", "level": "L1", "intention_correct": False, "grasp_success": False,
         "task_success": False, "wrong_object_attempt": True},
    ]
    out = summarize_intact(rows)
    assert list(out) == ["scene2/L0", "scene4/L1", "all"]
    g = out["scene2/L0"]
    assert (g["n_episodes"], g["intention_correct_rate"], g["grasp_success_rate"], g["task_success_rate"],
            g["wrong_object_attempt_rate"], g["intention_action_gap"]) == (2, 1.0, 0.5, 0.5, 0.5, 0.5)
    assert out["all"]["intention_correct_rate"] == pytest.approx(2 / 3)
    assert summarize_intact([]) == {}


# =========================================================================== suite-wide

def test_every_suite_action_has_a_scorer():
    found: dict[str, set[str]] = {}
    for task in SUITE.eval_tasks():
        found.setdefault(task.scene, set()).add(task.action)
        scorer_for(task)  # raises ValueError for an unmapped action
    assert found["scene2"] == {"pickup", "stack", "push", "place_bowl"}
    assert found["scene3"] == {"place_on_label_route"}
    assert found["scene4"] == {"pickup", "stack_on_target", "unstack_to_slot", "sequence_pickups"}
    for scene, actions in found.items():
        assert actions <= set(SCENE_ACTIONS[scene])


def test_unknown_action_and_scene_name_themselves():
    import dataclasses
    rec = fx.parked_record("scene2", "default")
    with pytest.raises(ValueError, match="'teleport'"):
        score_episode(dataclasses.replace(PICK, action="teleport"), rec)
    with pytest.raises(ValueError, match="scene9"):
        score_episode(dataclasses.replace(PICK, scene="scene9"), rec)


def test_all_554_tasks_score_a_do_nothing_episode():
    """Both arms parked, grippers open, every body at its nominal spawn pose: every task scores,
    nothing completes and no INT-ACT metric fires (no retry bonus passes on a still layout)."""
    tasks = SUITE.eval_tasks()
    assert len(tasks) == 554
    completed, nonzero, fired = [], [], []
    records = {}
    for task in tasks:
        key = (task.scene, task.layout)
        if key not in records:
            records[key] = fx.parked_record(*key)
        s = score_episode(task, records[key])
        if s.complete:
            completed.append(task.id)
        if s.intent_score or s.exec_score:
            nonzero.append((task.id, s.intent_score, s.exec_score))
        m = intact_metrics(task, records[key], s.complete)
        if m["intention_correct"] or m["grasp_success"] or m["wrong_object_attempt"]:
            fired.append(task.id)
    assert completed == [] and nonzero == [] and fired == []
