"""Part I-A on real MuJoCo renders: the oracle answers everything, the random baseline scores
chance, and cue-free detection questions show the render without the cue.

Every Scene 1 task x 7 families (default variants; F3 ghosts, which need 4 extra renders per
instance, are covered by test_cue_vqa.py) and every Scenes 2-4 L0 task x F2, through the
runner (``run_vqa``) with the simulator's world state, as ``vla-bridge vqa`` runs them.
"""
import io
import os
import re

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
pytest.importorskip("mujoco")
mujoco_backend = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend")

from vla_bridge.benchmarks.robofollow.tasks import load_suite, select_tasks  # noqa: E402
from vla_bridge.benchmarks.vifo.compatibility import missing  # noqa: E402
from vla_bridge.benchmarks.vifo.insertion import VQA_STAGES  # noqa: E402
from vla_bridge.vqa import (NO_CUE, OracleVqa, parse_cues, plan_instances,  # noqa: E402
                                       read_rows, run_vqa)

pytestmark = pytest.mark.graph  # see setup.cfg's markers

SUITE = load_suite()
SCENE1 = SUITE.eval_tasks("scene1")
CUES = parse_cues("F1,F2,F4,F5,F6,F7,F8")
OTHER = select_tasks(SUITE, "scene2,scene3,scene4", "L0")


@pytest.fixture(scope="module")
def sim():
    b = mujoco_backend.MujocoBackend()
    yield b
    b.close()


def run(backend, tasks, cues, out, sim):
    return run_vqa(backend, tasks, cues, output=out, sim=sim, stream=io.StringIO())


@pytest.fixture(scope="module")
def oracle(sim, tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle")
    return run("oracle", SCENE1, CUES, out, sim), read_rows(out)


def poisson_binomial_band(ps, level=0.99):
    """(lo, hi): the central ``level`` interval of the number of hits of independent
    questions answered right with probabilities ``ps``."""
    pmf = np.array([1.0])
    for p in ps:
        pmf = np.append(pmf * (1 - p), 0.0) + np.append(0.0, pmf * p)
    cdf = np.cumsum(pmf)
    tail = (1 - level) / 2
    return int(np.searchsorted(cdf, tail)), int(np.searchsorted(cdf, 1 - tail))


def check_texts(rows):
    """No two options share a text; no option names an object by its internal name or
    index (any digit)."""
    for r in rows:
        opts = r["options"]
        assert len(set(opts)) == len(opts) >= 3, r
        for text in [r["question"], *opts]:
            assert not re.search(r"\d", text), text
            assert "_" not in text, text


# --------------------------------------------------------------------------- oracle

def test_oracle_answers_every_stage_of_every_scene1_instance(oracle):
    metrics, rows = oracle
    assert metrics["new"] == len(SCENE1) * len(CUES) and not metrics["skipped"]
    for m in [metrics["overall"], *metrics["by_family"].values()]:
        for key in (*VQA_STAGES, "fca", "vqa", "detection_cued", "detection_cue_free"):
            assert m[key] == 100.0, (key, m)
    free = [r for r in rows if not r["cue_shown"]]
    plan = plan_instances(SCENE1, CUES)
    assert len(free) == sum(i.cue_free_detection for i in plan) == metrics["overall"]["cue_free"]
    assert 0.45 < len(free) / len(plan) < 0.55
    assert all(r["stage"] == "detection" and r["options"][r["correct_index"]] == NO_CUE
               and r["correct"] for r in free)


def test_scene1_options_are_distinct_and_name_no_internal_object(oracle):
    _metrics, rows = oracle
    check_texts(rows)
    names = {n.replace("_", " ") for n in ("yellow_block_1", "yellow_block_2", "yellow_block_3")}
    assert not any(n in o for r in rows for o in r["options"] for n in names)
    grounding = [r["options"][r["correct_index"]] for r in rows if r["stage"] == "grounding"]
    assert {"the yellow block on the left", "the yellow block on the right",
            "the yellow block at the top"} <= set(grounding)


def test_other_scenes_through_the_runner(sim, tmp_path):
    # curved_path carries Scene 3's route and orientation; only the sequences lack a variant
    cues = parse_cues("F2", "curved_path")
    compatible = [t for t in OTHER if not missing(t, "F2", "curved_path")]
    assert len(OTHER) - len(compatible) == sum(t.action == "sequence_pickups" for t in OTHER)
    metrics = run("oracle", OTHER, cues, tmp_path, sim)
    assert metrics["new"] == len(compatible) and metrics["overall"]["fca"] == 100.0
    assert {r["scene"] for r in read_rows(tmp_path)} == {"scene2", "scene3", "scene4"}
    check_texts(read_rows(tmp_path))


class Recorder(OracleVqa):
    """The oracle, keeping every image it is shown."""

    def __init__(self):
        self.seen = []

    def answer(self, image, question, options, correct=None):
        self.seen.append(image)
        return super().answer(image, question, options, correct)


def test_a_cue_free_detection_question_shows_the_scene_without_the_cue(sim, tmp_path):
    rec = Recorder()
    tasks = SCENE1[:3]
    run_vqa(rec, tasks, CUES, output=tmp_path, sim=sim, stream=io.StringIO())
    rows = read_rows(tmp_path)
    assert len(rec.seen) == len(rows)
    for r, image in zip(rows, rec.seen):
        sim.reset("scene1", SUITE.get(r["task"]).layout, r["seed"])
        raw = sim.render("cam_high")
        assert np.array_equal(image, raw) == (not r["cue_shown"]), (r["task"], r["family"])
    assert any(not r["cue_shown"] for r in rows) and all(r["correct"] for r in rows)


# --------------------------------------------------------------------------- random

def test_random_scores_chance_on_every_stage(sim, tmp_path):
    metrics = run("random?seed=11", SCENE1, CUES, tmp_path, sim)
    rows = read_rows(tmp_path)
    for stage in VQA_STAGES:
        rs = [r for r in rows if r["stage"] == stage]
        lo, hi = poisson_binomial_band([1 / len(r["options"]) for r in rs])
        hits = sum(r["correct"] for r in rs)
        assert lo <= hits <= hi, (stage, hits, lo, hi, len(rs))
        chance = 100 * np.mean([1 / len(r["options"]) for r in rs])
        assert metrics["overall"]["chance"][stage] == pytest.approx(chance, abs=0.01)
    chains = {}
    for r in rows:
        chains.setdefault(r["instance"], []).append(r)
    lo, hi = poisson_binomial_band([np.prod([1 / len(r["options"]) for r in rs])
                                    for rs in chains.values()])
    full = sum(all(r["correct"] for r in rs) for rs in chains.values())
    assert lo <= full <= hi, (full, lo, hi)
    free = [r["correct"] for r in rows if not r["cue_shown"]]
    lo, hi = poisson_binomial_band([0.25] * len(free))
    assert lo <= sum(free) <= hi  # "no cue" is one option of four, not a give-away
