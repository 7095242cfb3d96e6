"""RoboFollow episode scoring (shared/robofollow/SCORING.md): one scorer per scene, the
stage-wise Intent / Execution / Completion rules and the summary metrics. Pure numpy, no rclpy."""
from __future__ import annotations

from typing import Callable

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (EpisodeScore, StageScore, is_complete,
                                                             summarize)
from vla_bridge.benchmarks.robofollow.scoring.scene1 import RELATION_UNITS, score_scene1
from vla_bridge.benchmarks.robofollow.scoring.scene2 import score_scene2
from vla_bridge.benchmarks.robofollow.scoring.scene3 import score_scene3
from vla_bridge.benchmarks.robofollow.scoring.scene4 import score_scene4

__all__ = ["score_episode", "scorer_for", "SCENE_ACTIONS", "EpisodeScore", "StageScore", "summarize",
           "is_complete", "score_scene1", "score_scene2", "score_scene3", "score_scene4"]

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


def score_episode(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one recorded episode of `task` with its scene's rules."""
    return scorer_for(task)(task, record)
