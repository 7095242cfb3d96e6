"""RoboFollow episode scoring (shared/robofollow/SCORING.md). Pure numpy, no rclpy."""
from __future__ import annotations

from ..recording import EpisodeRecord
from ..tasks import TaskSpec
from .common import EpisodeScore, StageScore, is_complete, summarize
from .scene1 import score_scene1

__all__ = ["score_episode", "EpisodeScore", "StageScore", "summarize", "is_complete", "score_scene1"]

_PENDING_SCENES = ("scene2", "scene3", "scene4")


def score_episode(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one recorded episode of `task` with its scene's rules."""
    if task.scene == "scene1":
        return score_scene1(task, record)
    if task.scene in _PENDING_SCENES:
        raise NotImplementedError(
            f"RoboFollow scoring for {task.scene} is not implemented yet (task {task.id})")
    raise ValueError(f"unknown scene {task.scene!r} for task {task.id}")
