"""#16 point 7: the six safety-critical scenes (LIBERO-VIFO section 4.3)."""
from __future__ import annotations

import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vla_bridge.benchmarks.robofollow.tasks import load_suite  # noqa: E402
from vla_bridge.benchmarks.vifo.instructions.grounding import layout_world  # noqa: E402
from vla_bridge.benchmarks.vifo.safety import (SAFETY_SCENES, check_suite,  # noqa: E402
                                               format_safety_table, hazard_cards,
                                               safety_metrics, safety_scene)
from vla_bridge.evaluation.cues.run import CueRun  # noqa: E402

SUITE = load_suite()


def test_six_scenes_pair_a_safe_and_a_hazardous_task_in_one_layout():
    assert len(SAFETY_SCENES) == 6 and len({s.name for s in SAFETY_SCENES}) == 6
    for s in SAFETY_SCENES:
        safe, hazard = SUITE.get(s.safe_task), SUITE.get(s.hazard_task)
        assert (safe.scene, safe.layout) == (hazard.scene, hazard.layout), s.name
        assert safe.instruction != hazard.instruction
        objects, fixtures = layout_world(hazard.scene, hazard.layout, 42)
        assert s.marked in {**objects, **fixtures}, s.name
        assert safety_scene(s.hazard_task) is s and safety_scene(s.name) is s
    with pytest.raises(KeyError, match="known"):
        safety_scene("lava")


@pytest.mark.graph
def test_the_warning_sign_stands_beside_the_marked_object_clear_of_both_tasks(tmp_path):
    for s in SAFETY_SCENES:
        hazard = SUITE.get(s.hazard_task)
        (card,) = hazard_cards(s.name, 42, tmp_path)
        assert card == hazard_cards(s.name, 42, tmp_path)[0]  # a replay rebuilds it
        objects, fixtures = layout_world(hazard.scene, hazard.layout, 42)
        bodies = {**objects, **fixtures}
        xy = np.asarray(card.pos[:2])
        assert np.hypot(*(xy - bodies[s.marked].pos[:2])) <= 0.12, s.name
        for name, body in bodies.items():  # nothing stands where the card is
            gap = np.max(np.abs(xy - body.pos[:2]) - body.size[:2] / 2) - card.size[0] / 2
            assert name == s.marked or gap > 0.0, (s.name, name)


@pytest.mark.graph
def test_the_sign_is_in_the_policys_view(tmp_path):
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    sim = MujocoBackend()
    try:
        for s in SAFETY_SCENES[:3]:
            hazard = SUITE.get(s.hazard_task)
            sim.reset(hazard.scene, hazard.layout, 42)
            bare = sim.render("cam_high")
            sim.reset(hazard.scene, hazard.layout, 42, hazard_cards(s.name, 42, tmp_path))
            assert np.any(sim.render("cam_high") != bare, axis=2).sum() > 150, s.name
    finally:
        sim.close()


def test_the_suite_selects_the_hazardous_tasks_and_plans_the_safe_one_as_the_language():
    run = CueRun("conflict", "F1", "", suite="safety")
    params = {"scene": "scene1", "levels": "L0", "tasks": ""}
    tasks = run.suite_tasks(SUITE, params)
    assert [t.id for t in tasks] == [s.hazard_task for s in SAFETY_SCENES]
    (one,) = run.suite_tasks(SUITE, {**params, "tasks": "liquid_bowl"})
    from vla_bridge.benchmarks.robofollow.tasks import plan_trials
    trial = plan_trials([one], 1, 42)[0]
    language, _cue = run.prepare(trial, one.instruction)
    assert language == SUITE.get("L0_place_right_cube_in_green_bowl").instruction
    assert run.begin_fields()["safety_scene"] == "liquid_bowl"
    with pytest.raises(ValueError, match="liquid_bowl"):
        run.suite_tasks(SUITE, {**params, "tasks": "lava"})
    with pytest.raises(ValueError, match="cue_suite"):
        check_suite("hazards", "conflict")
    with pytest.raises(ValueError, match="needs cue_protocol"):
        CueRun("", "", "", suite="safety")


def test_safety_metrics_count_the_hazardous_task_and_the_safe_one():
    def row(scene, protocol, hazard_done, safe_done=None, status="ok"):
        scores = {"cue": {"complete": hazard_done}}
        if safe_done is not None:
            scores["language"] = {"complete": safe_done}
        return {"status": status, "scores": scores,
                "cue": {"protocol": protocol, "family": "F2", "safety_scene": scene,
                        "language_task": "x" if safe_done is not None else None}}
    rows = [row("liquid_bowl", "conflict", False, True), row("liquid_bowl", "conflict", True, False),
            row("sharp_object", "authorized", True), row("sharp_object", "authorized", True,
                                                         status="failed"),
            {"status": "ok", "cue": {"protocol": "conflict"}}]  # not a safety row
    m = safety_metrics(rows)
    assert m["liquid_bowl"]["conflict/F2"] == {"episodes": 2, "hazardous_completed": 50.0,
                                               "safe_completed": 50.0}
    assert m["sharp_object"]["authorized/F2"]["hazardous_completed"] == 50.0  # failed: not done
    assert m["all"]["conflict/F2"]["episodes"] == 2
    assert "50 (50) n=2" in format_safety_table(m)


@pytest.mark.graph
@pytest.mark.slow
def test_graph_runs_the_safety_suite_and_reports_the_hazardous_task(tmp_path):
    """conflict with a language-following oracle: the safe task is done, the hazardous one
    (the cue's) never; the sim stood the warning sign up (the safety rows say which)."""
    from support import graph_runs
    out = tmp_path / "safety"
    proc = graph_runs.launch("--cue_suite", "safety", "--tasks", "liquid_bowl,fragile_ball",
                             "--cue_protocol", "conflict", "--cue_family", "F1",
                             "--image_source", "cued", "--output", str(out), timeout=150)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["cue"]["safety_scene"] for r in rows) == ["fragile_ball", "liquid_bowl"]
    table = (out / "safety_table.txt").read_text()
    assert "0 (100) n=2" in table.splitlines()[-1]  # "all": hazardous 0 %, safe 100 %
    assert "instances: F1/banner 2" in (out / "cue_table.txt").read_text()
