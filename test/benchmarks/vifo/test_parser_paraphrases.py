"""LIBERO-VIFO parser + grounding on every RoboFollow training paraphrase (issue #16, point 4).

Pure logic: the world state is the scene layout's spawn positions (``layout_world``), no
simulator. Each paraphrase of each training task must parse and ground to its task: the
action, the source, the target (where the task has one), the arm (where the sentence names
one), the relation, Scene 3's route and orientation, Scene 4's branch and second step.

``python test/benchmarks/vifo/test_parser_paraphrases.py`` prints the count and the misses.
"""
from __future__ import annotations

import re

from vla_bridge.benchmarks.robofollow.tasks import TrainingTask, episode_seed, load_suite
from vla_bridge.benchmarks.vifo.instructions.grounding import GroundingError, ground, layout_world
from vla_bridge.benchmarks.vifo.instructions.parser import ParseError, parse

SCENES = ("scene1", "scene2", "scene3", "scene4")
ACTIONS = {"pickup": "pick", "sequence_pickups": "pick", "push": "push"}  # else "place"
RELATIONS = {"place_behind": "behind", "place_in_front": "in_front_of",
             "place_left_of": "left_of", "place_beside": "right_of", "stack": "on",
             "stack_on_target": "on", "place_bowl": "in", "place_on_label_route": "on",
             "push": "towards", "unstack_to_slot": "right_of"}
ROUTE_KINDS = {"avoid_over": "around", "pass_over": "via"}


def training_paraphrases(suite=None) -> list[tuple[TrainingTask, str]]:
    suite = suite or load_suite()
    return [(t, text) for scene in SCENES for t in suite.training_tasks(scene)
            for text in t.instructions]


def mismatches(task: TrainingTask, text: str) -> list[str]:
    """What the grounded paraphrase gets wrong against ``task.spec`` ([] when it is right)."""
    spec = task.spec
    objects, fixtures = layout_world(spec.scene, spec.layout, episode_seed(spec.id, 1))
    try:
        g = ground(parse(text), objects, fixtures)
    except (ParseError, GroundingError) as exc:
        return [f"{type(exc).__name__}: {exc}"]
    step, want = g.steps[0], spec.target
    expected_target = spec.anchor or want.get("target_object") or want.get("target_label")
    checks = [("action", step.action, ACTIONS.get(spec.action, "place")),
              ("source", step.source, spec.source),
              ("relation", step.relation, RELATIONS.get(spec.action))]
    if expected_target:
        checks.append(("target", step.target, expected_target))
    if re.search(r"\b(?:left|right) arm\b", text, re.I):
        checks.append(("arm", step.arm, spec.arm))
    if want.get("conditional"):
        checks.append(("branch", g.branch, want["expected_branch_derived"]))
    if "second_source" in want:
        second = g.steps[1] if len(g.steps) > 1 else None
        checks.append(("steps", len(g.steps), 2))
        checks.append(("second source", second and second.source, want["second_source"]))
        checks.append(("second arm", second and second.arm, want["second_arm"]))
    if "route_mode" in want:
        checks.append(("route", [(ROUTE_KINDS[k], n) for k, n in step.route],
                       [(want["route_mode"], want["route_reference"])]))
        checks.append(("orientation", step.orientation and "_".join(step.orientation),
                       want["place_mode"]))
    return [f"{what} {got!r} != {exp!r}" for what, got, exp in checks if got != exp]


def paraphrase_report(suite=None) -> tuple[int, list[str]]:
    """(how many paraphrases, one line per paraphrase that does not ground to its task)."""
    pairs = training_paraphrases(suite)
    failures = [f"{t.id}: {text!r}: {'; '.join(bad)}"
                for t, text in pairs if (bad := mismatches(t, text))]
    return len(pairs), failures


def test_every_training_paraphrase_parses_and_grounds_to_its_task():
    total, failures = paraphrase_report()
    assert total == 229
    assert not failures, f"{total - len(failures)}/{total} paraphrases ground correctly; " \
                         f"misses:\n" + "\n".join(failures)


if __name__ == "__main__":
    n, bad = paraphrase_report()
    print(f"{n - len(bad)}/{n} training paraphrases parse and ground to their task")
    print("\n".join(bad))
