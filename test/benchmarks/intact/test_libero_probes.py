"""INT-ACT's probing suite on LIBERO (``benchmarks.intact.libero_probes``): every subcategory on
both benchmarks, the BDDL problems our code writes, the suite in the LIBERO catalog the
evaluator plans from, and the metrics on LIBERO-named episode records. Pure logic: LIBERO
itself loads the problems in test/sim_nodes/libero/test_libero_intact.py."""
from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from vla_bridge.benchmarks.intact import libero_probes as L
from vla_bridge.benchmarks.intact import probes as robofollow_probes
from vla_bridge.benchmarks.intact import tables
from vla_bridge.benchmarks.intact.metrics import libero_metrics
from vla_bridge.benchmarks.libero import protocol as P
from vla_bridge.embodiment.episode_record import EpisodeRecord


def test_every_subcategory_has_tasks_on_both_benchmarks():
    libero = Counter(p.subcategory for p in L.probes())
    robofollow = Counter(p.subcategory for p in robofollow_probes.probes())
    for sub in robofollow_probes.SUBCATEGORY_NAMES:
        assert libero[sub] >= 5, (sub, libero[sub])
        assert robofollow[sub] >= 5, (sub, robofollow[sub])
    assert sum(libero.values()) == 55  # 5 originals + 5 x 10 subcategories, as the paper's 50


def test_ood_objects_are_absent_from_the_training_suite():
    catalog = P.load_catalog()
    seen = {c for e in catalog[L.SCENE_SUITE] for c in e["objects"].values()}
    seen_sources = {e["goal"][0][1].rsplit("_", 1)[0] for e in catalog[L.SCENE_SUITE]}
    assert seen_sources == set(L.SEEN)
    for p in L.probes():
        if p.subcategory in ("ood_source", "ood_source_target"):
            assert p.source not in seen, p.id
        else:
            assert p.source in L.SEEN, p.id
        if p.subcategory in ("ood_target", "ood_source_target"):
            assert p.target not in seen, p.id
        elif p.subcategory == "ood_relation":
            assert p.relation and p.target in L.SEEN, p.id  # a seen item, never a target
            assert all(e["goal"][0][2] != p.target_instance for e in catalog[L.SCENE_SUITE])
        else:
            assert p.target == "basket", p.id
        if p.subcategory == "object_distractor":
            assert p.added and not set(p.added) & seen, p.id
        if p.subcategory == "commonsense_distractor":
            assert p.note, p.id  # says which object counts


def test_the_originals_are_libero_objects_own_scenes():
    """An original probe has its LIBERO-Object task's objects and goal."""
    by_source = {e["goal"][0][1]: e for e in P.load_catalog()[L.SCENE_SUITE]}
    originals = [p for p in L.probes() if p.subcategory == "original"]
    assert len(originals) == 5
    for p in originals:
        task = by_source[p.source_object]
        assert p.catalog_entry()["objects"] == task["objects"], p.id
        assert p.goal() == task["goal"] and p.instruction == task["instruction"], p.id


def _sexp_balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.parametrize("p", L.probes(), ids=lambda p: p.id)
def test_each_bddl_problem_holds_its_objects_placement_and_goal(p):
    text = p.bddl()
    assert _sexp_balanced(text) and ";" not in text  # BDDL's comments start with ';'
    objects = dict(re.findall(r"^    (\w+) - (\w+)$", text.split("(:objects")[1], re.M))
    assert objects == p.objects() and len(objects) == 7 + len(p.added)
    init = dict(re.findall(r"\(On (\w+) floor_(\w+)\)", text))
    assert init == p.placement() and set(init) == set(objects)
    assert set(init.values()) <= set(L.REGIONS)
    assert len(set(init.values())) == len(init)  # one region per object
    (pred, a, b), = p.goal()
    assert f"(And ({pred.capitalize()} {a} {b}))" in text
    assert a == p.source_object and a in objects
    assert (b == f"{p.target_instance}_contain_region") == (p.target == "basket"
                                                             and not p.relation)
    assert p.source_object not in p.watched() and p.target_instance not in p.watched() \
        or p.relation


def test_the_suite_is_in_the_catalog_the_evaluator_plans_from():
    catalog = P.load_catalog()
    entries = catalog[L.SUITE]
    assert [e["index"] for e in entries] == list(range(55))
    trials = P.plan_trials(L.SUITE, "", "0-1", 7, catalog)
    assert len(trials) == 110 and trials[0].goal == L.probes()[0].goal()
    assert P.scene_suite(L.SUITE) == "libero_object"  # its step budget: 280
    assert P.pro_comparison({L.SUITE: {}, "libero_object": {}}) == []  # no LIBERO-PRO row
    with pytest.raises(ValueError, match="tasks 0..54"):
        L.by_index(55)
    with pytest.raises(ValueError, match="unknown LIBERO INT-ACT probe"):
        L.probe("libero_intact_nope")


# ------------------------------------------------------------------ metrics on LIBERO records

def _record(p, n=30, tcp=None, grip=None, moves=None) -> EpisodeRecord:
    """A LIBERO-named record: every object of the probe at rest 10 cm apart, the TCP high
    above the floor, gripper open; ``moves``: {object: (n, 3) positions}."""
    names = list(p.objects())
    pos = {name: np.tile([0.1 * i, 0.0, 0.05], (n, 1)) for i, name in enumerate(names)}
    for name in ("floor", "basket_1_contain_region", "flat_stove_1/button"):
        pos[name] = np.zeros((n, 3))
    pos.update(moves or {})
    tcp = np.tile([-0.3, 0.0, 0.4], (n, 1)) if tcp is None else tcp
    grip = np.ones(n) if grip is None else grip
    return EpisodeRecord(tcp_pos={"left": tcp}, tcp_rot={"left": np.tile(np.eye(3), (n, 1, 1))},
                         grip={"left": grip}, pos=pos)


def test_metrics_of_a_reach_a_grasp_and_a_moved_distractor():
    p = L.probe("libero_intact_original_alphabet_soup")
    src = p.source_object
    n = 30
    at_src = np.tile([0.0, 0.0, 0.05], (n, 1))  # the source is object 0, at the origin
    # a reach: the TCP comes within 4 cm of the source, the gripper stays open
    tcp = np.tile([-0.3, 0.0, 0.4], (n, 1))
    tcp[20:] = at_src[20:] + [0, 0, 0.04]
    m = libero_metrics(p, _record(p, tcp=tcp), False)
    assert m["intention_correct"] and not m["grasp_success"] and not m["wrong_object_attempt"]
    assert m["per_source"][0]["intention_t"] == 20
    # 6 cm away is no intention (the paper's 5 cm)
    tcp[20:] = at_src[20:] + [0.06, 0, 0]
    assert not libero_metrics(p, _record(p, tcp=tcp), False)["intention_correct"]
    # a grasp: closed at the source, the source lifted 5 cm with the TCP
    tcp[20:] = at_src[20:]
    lifted = at_src.copy()
    lifted[25:, 2] += 0.05
    tcp[25:, 2] += 0.05
    grip = np.ones(n)
    grip[22:] = 0.0
    m = libero_metrics(p, _record(p, tcp=tcp, grip=grip, moves={src: lifted}), True)
    assert m["intention_correct"] and m["grasp_success"] and m["task_success"]
    assert not m["wrong_object_attempt"]
    # lifted with an open gripper is no grasp (pushed up, not held)
    assert not libero_metrics(p, _record(p, tcp=tcp, moves={src: lifted}), False)["grasp_success"]
    # a distractor moved 10 cm while the source stays: a wrong-object attempt naming it
    other = p.others[2] + "_1"
    shoved = np.tile([0.1 * list(p.objects()).index(other), 0.0, 0.05], (n, 1))
    shoved[15:, 0] += 0.10
    m = libero_metrics(p, _record(p, moves={other: shoved}), False)
    assert m["wrong_object_attempt"] and m["wrong_object"] == other and m["wrong_object_t"] == 15
    # the container, the floor, regions and parts are never wrong objects
    basket = np.tile([0.1, 0.0, 0.05], (n, 1))
    basket[10:, 1] += 0.2
    moved_fixtures = {"basket_1": basket, "floor": np.linspace(0, 0.2, n)[:, None] * [1, 0, 0],
                      "flat_stove_1/button": np.linspace(0, 0.2, n)[:, None] * [1, 0, 0]}
    assert not libero_metrics(p, _record(p, moves=moved_fixtures), False)["wrong_object_attempt"]


def test_a_relation_probe_watches_its_target_item():
    """Knocking the item the source should go on aside is a move of a wrong object."""
    p = L.probe("libero_intact_ood_relation_cheese_on_butter")
    assert p.target_instance in p.watched() and p.goal() == [["on", "cream_cheese_1", "butter_1"]]
    n = 20
    butter = np.tile([0.1, 0.0, 0.05], (n, 1))
    butter[5:, 0] += 0.08
    m = libero_metrics(p, _record(p, n=n, moves={"butter_1": butter}), False)
    assert m["wrong_object"] == "butter_1"


def test_a_record_without_the_source_is_refused():
    p = L.probes()[0]
    record = _record(p)
    del record.pos[p.source_object]
    with pytest.raises(ValueError, match="not in the record"):
        libero_metrics(p, record, False)


def test_the_tables_take_libero_rows():
    rows = []
    for p in L.probes()[:10]:
        ok = p.subcategory == "original"
        rows.append({"task_id": p.id, "status": "ok", "success": ok,
                     "intact": {"intention_correct": True, "grasp_success": ok,
                                "task_success": ok, "wrong_object_attempt": False,
                                "wrong_object": None}})
    summary = tables.summarize(rows, list(L.probes()))
    assert summary["subcategories"]["original"]["success"]["k"] == 5
    assert summary["subcategories"]["ood_source"]["success"]["k"] == 0
    assert summary["subcategories"]["ood_source"]["intention"]["k"] == 5
    assert summary["probes"]["libero_intact_ood_source_cookies"]["source"] == "cookies_1"


def test_vla_bridge_tasks_lists_the_libero_probes(capsys):
    from vla_bridge.cli import main
    assert main(["tasks", "--intact", "commonsense_distractor,libero_intact_ood_source_cookies",
                 "--benchmark", "libero", "--instructions"]) == 0
    out = capsys.readouterr().out
    cookies = L.probe("libero_intact_ood_source_cookies")
    assert f"{cookies.index:>2}  ood_source" in out and cookies.instruction in out
    assert out.count("commonsense_distractor  libero_intact_") == 5
    assert "6 probes (suite libero_intact" in out
    assert main(["tasks", "--intact", "--benchmark", "libero"]) == 0
    assert "55 probes" in capsys.readouterr().out
    assert main(["tasks", "--intact", "nope", "--benchmark", "libero"]) == 2
    err = capsys.readouterr().err
    assert "unknown LIBERO INT-ACT probe 'nope'" in err and len(err.splitlines()) == 1
