"""RoboFollow episode scoring (shared/robofollow/SCORING.md): one scorer per scene, the
stage-wise Intent / Execution / Completion rules and the summary metrics. Pure numpy, no rclpy."""
from __future__ import annotations

from typing import Callable

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (EpisodeScore, StageScore, is_complete,
                                                             summarize)
from vla_bridge.benchmarks.robofollow.scoring import scene1, scene2, scene3, scene4
from vla_bridge.benchmarks.robofollow.scoring.scene1 import RELATION_UNITS, score_scene1
from vla_bridge.benchmarks.robofollow.scoring.scene2 import score_scene2
from vla_bridge.benchmarks.robofollow.scoring.scene3 import score_scene3
from vla_bridge.benchmarks.robofollow.scoring.scene4 import score_scene4

__all__ = ["score_episode", "scorer_for", "needed_objects", "SCENE_ACTIONS", "EpisodeScore",
           "StageScore", "summarize", "is_complete", "score_scene1", "score_scene2",
           "score_scene3", "score_scene4"]

Scorer = Callable[[TaskSpec, EpisodeRecord], EpisodeScore]

# Every action string of config/robofollow/tasks.json, per scene, and the scorer that handles it.
SCENE_ACTIONS: dict[str, dict[str, Scorer]] = {
    "scene1": {"pickup": score_scene1, **{action: score_scene1 for action in RELATION_UNITS}},
    "scene2": {action: score_scene2 for action in ("pickup", "stack", "push", "place_bowl")},
    "scene3": {"place_on_label_route": score_scene3},
    "scene4": {action: score_scene4
               for action in ("pickup", "stack_on_target", "unstack_to_slot", "sequence_pickups")},
}


def scorer_for(task: TaskSpec) -> Scorer:
    """The scorer of the task's scene and action; ValueError names an unknown scene or action."""
    actions = SCENE_ACTIONS.get(task.scene)
    if actions is None:
        raise ValueError(f"unknown scene {task.scene!r} for task {task.id}")
    try:
        return actions[task.action]
    except KeyError:
        raise ValueError(f"task {task.id}: unsupported {task.scene} action {task.action!r} "
                         f"(supported: {', '.join(actions)})") from None


#: per scene, the objects its scorer reads for a task (each must be in the record)
_NEEDED: dict[str, Callable[[TaskSpec], list[str]]] = {
    "scene1": scene1.needed_objects, "scene2": scene2.needed_objects,
    "scene3": scene3.needed_objects, "scene4": scene4.needed_objects}


def needed_objects(task: TaskSpec) -> list[str]:
    """The objects the task's scorer reads, in order: a real trial can begin only once each is
    tracked (robot_nodes.piper.episode), since its score needs them. ValueError for a task no
    scorer reads (its scene or action unknown, a field missing)."""
    scorer_for(task)  # the scene and action are known
    return _NEEDED[task.scene](task)


def score_episode(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one recorded episode of `task` with its scene's rules."""
    return scorer_for(task)(task, record)
