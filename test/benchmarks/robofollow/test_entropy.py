"""Scene entropy (RoboFollow paper Eq. 1, appendix A.1) for RoboFollow and LIBERO."""
from __future__ import annotations

import dataclasses
import math

import pytest

from support import scoring_fixtures  # noqa: F401  (puts the repo root on sys.path)
from vla_bridge.benchmarks.robofollow.entropy import (LIBERO_PAPER_BITS, LIBERO_SUITES,
                                                      ROBOFOLLOW_PAPER_BITS,
                                                      ROBOFOLLOW_PAPER_GROUP_SIZES,
                                                      conditional_entropy, entropy_from_group_sizes,
                                                      group_sizes, libero_entropy,
                                                      libero_suite_entropies, report,
                                                      robofollow_entropy, robofollow_task_groups,
                                                      scene_entropy, scene_specification)
from vla_bridge.benchmarks.robofollow.scenes import load_scenes
from vla_bridge.benchmarks.robofollow.tasks import load_suite


def test_robofollow_training_suite_is_3_782_bits():
    h = robofollow_entropy()
    assert round(h, 3) == ROBOFOLLOW_PAPER_BITS == 3.782
    expected = 64 / 75 * math.log2(16) + 7 / 75 * math.log2(7) + 4 / 75 * math.log2(4)
    assert h == pytest.approx(expected, abs=1e-12)


def test_robofollow_groups_come_from_the_config():
    groups = robofollow_task_groups()
    assert len(groups) == 75
    assert tuple(group_sizes(groups)) == ROBOFOLLOW_PAPER_GROUP_SIZES
    by_scene = {}
    for task_id, spec in groups.items():
        by_scene.setdefault(task_id.split("/")[0], set()).add(spec)
    assert {s: len(v) for s, v in by_scene.items()} == {"scene1": 1, "scene2": 1, "scene3": 1, "scene4": 3}


def test_scene_specification_ignores_layout_keys_but_not_placements():
    scenes = load_scenes()
    s4 = scenes["scene4"]
    # scene4.4 only swaps the two spheres relative to scene4.1: a different specification
    assert scene_specification(s4, "scene4.1") != scene_specification(s4, "scene4.4")
    # the same placements under another key fall into the same group
    copy = dataclasses.replace(s4.layouts["scene4.1"], key="copy")
    renamed = dataclasses.replace(s4, layouts={**s4.layouts, "copy": copy})
    assert scene_specification(renamed, "copy") == scene_specification(s4, "scene4.1")


def test_libero_suites_reproduce_the_paper():
    per_suite = libero_suite_entropies()
    for name in ("spatial", "object", "goal", "long"):
        assert round(per_suite[name], 3) == LIBERO_PAPER_BITS[name]
    assert per_suite["goal"] == pytest.approx(math.log2(10))
    assert round(libero_entropy(), 3) == LIBERO_PAPER_BITS["mean"] == 0.880
    assert all(len(tasks) == 10 for tasks in LIBERO_SUITES.values())
    assert group_sizes(LIBERO_SUITES["long"]) == [2, 1, 1, 1, 1, 1, 1, 1, 1]


def test_pooled_libero_equals_the_mean_because_every_suite_has_10_tasks():
    pooled = {f"{suite}/{t}": g for suite, tasks in LIBERO_SUITES.items() for t, g in tasks.items()}
    assert scene_entropy(pooled) == pytest.approx(libero_entropy())


def test_eq1_with_unequal_demonstrations():
    # one scene, two tasks with 30 / 10 demos: H = -(0.75 log2 0.75 + 0.25 log2 0.25)
    h = conditional_entropy({"s": {"a": 30, "b": 10}})
    assert h == pytest.approx(0.8112781244591328)
    # a second scene with a single task contributes nothing but dilutes p(s)
    assert conditional_entropy({"s": {"a": 30, "b": 10}, "t": {"c": 40}}) == pytest.approx(h / 2)
    assert scene_entropy({"a": "s", "b": "s", "c": "t"}, {"a": 30, "b": 10, "c": 40}) == pytest.approx(h / 2)


def test_equal_demos_reduce_to_group_sizes_and_the_count_cancels():
    groups = {"a": 1, "b": 1, "c": 1, "d": 2}
    assert scene_entropy(groups, 7) == pytest.approx(entropy_from_group_sizes([3, 1]))
    assert scene_entropy(groups, 50) == pytest.approx(scene_entropy(groups, 1))
    assert robofollow_entropy(demos_per_task=1) == pytest.approx(robofollow_entropy())
    assert entropy_from_group_sizes([1] * 10) == 0.0


def test_errors():
    with pytest.raises(ValueError):
        conditional_entropy({})
    with pytest.raises(ValueError, match="twice"):
        scene_entropy([("a", "s"), ("a", "t")])


def test_entropy_follows_the_suite_passed_in():
    suite = load_suite()
    assert robofollow_entropy(suite=suite) == pytest.approx(robofollow_entropy())
    r = report()
    assert round(r["robofollow"]["bits"], 3) == 3.782 and round(r["libero"]["bits"], 3) == 0.880
