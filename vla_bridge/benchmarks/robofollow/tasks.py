"""RoboFollow task suites as the project's own data (config/robofollow/tasks.json).

Pure logic, no rclpy. ``load_suite()`` reads the file written by ``tools/import_robofollow.py``;
``Suite`` selects evaluation tasks, ``episode_seed`` / ``plan_trials`` give the per-episode seeds
of the benchmark protocol (10 rounds, base seed 42), which are computed, never stored.
"""
from __future__ import annotations

import difflib
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from vla_bridge.paths import config_path

TASKS_FILE = "robofollow/tasks.json"
SCENES = ("scene1", "scene2", "scene3", "scene4")
LEVELS = ("L0", "L1", "L2", "L3")
BASE_SEED = 42
ROUNDS = 10


@dataclass(frozen=True)
class TaskSpec:
    id: str  # exact registry name, e.g. "L0_pickup_yellow_block_1_left"
    scene: str  # "scene1" .. "scene4"
    level: str  # "L0" .. "L3"
    layout: str  # layout key in the scene's layouts, e.g. "default", "scene1_1"
    instruction: str
    arm: str  # "left" | "right"
    action: str  # "pickup", "place_behind", "place_in_front", "place_left_of", "place_beside", ...
    source: str  # object the scorer treats as the correct source
    anchor: str | None = None  # Scene 1 relation anchor
    relation: tuple[float, float] | None = None  # desired unit vector (source - anchor) in xy
    training_task: str | None = None
    target: dict = field(default_factory=dict, hash=False, compare=False)  # full target record
    base_task: str | None = None  # registry base task type (Scene 3 scores its route/orientation)
    variant: str | None = None  # instruction variant tag, e.g. "template_0", "rw_route0_ori1"
    #: scene edits of a probe (benchmarks.intact.probes): {"replace": {layout body: LIBERO
    #: object}, "add": [[LIBERO object, x, y], ...]}; empty for RoboFollow's own tasks
    edits: dict = field(default_factory=dict, hash=False, compare=False)

    def to_dict(self) -> dict:
        out = {
            "id": self.id, "scene": self.scene, "level": self.level, "layout": self.layout,
            "instruction": self.instruction, "arm": self.arm, "action": self.action,
            "source": self.source, "anchor": self.anchor,
            "relation": list(self.relation) if self.relation else None,
            "training_task": self.training_task, "target": dict(self.target),
            "base_task": self.base_task, "variant": self.variant,
        }
        if self.edits:  # only probes carry it: RoboFollow's task dicts stay as they were
            out["edits"] = {"replace": dict(self.edits.get("replace") or {}),
                            "add": [list(a) for a in self.edits.get("add") or []]}
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "TaskSpec":
        rel = d.get("relation")
        return cls(
            id=d["id"], scene=d["scene"], level=d["level"], layout=d["layout"],
            instruction=d["instruction"], arm=d["arm"], action=d["action"], source=d["source"],
            anchor=d.get("anchor"), relation=tuple(rel) if rel else None,
            training_task=d.get("training_task"), target=dict(d.get("target") or {}),
            base_task=d.get("base_task"), variant=d.get("variant"),
            edits=dict(d.get("edits") or {}),
        )


@dataclass(frozen=True)
class TrainingTask:
    """A training task: its definition is the L0 evaluation task ``spec``."""
    id: str
    scene: str
    layout: str
    instructions: tuple[str, ...]  # every paraphrase; the first is the L0 sentence
    spec: TaskSpec


@dataclass(frozen=True)
class Trial:
    task: TaskSpec
    round: int  # 1-based
    seed: int


class UnknownTaskError(ValueError, KeyError):
    """An evaluation task id that is not in the suite (a ValueError and a KeyError)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def episode_seed(task_id: str, round: int, base_seed: int = BASE_SEED) -> int:
    """Benchmark seed: base_seed + 100*round + int(md5(task_id)[:8], 16) % 1000."""
    digest = hashlib.md5(task_id.encode("utf-8")).hexdigest()
    return base_seed + 100 * round + int(digest[:8], 16) % 1000


def plan_trials(tasks: Iterable[TaskSpec], rounds: int | Iterable[int] = ROUNDS,
                base_seed: int = BASE_SEED) -> list[Trial]:
    """Every (task, round) pair, task-major; ``rounds`` is a count (1..n) or explicit rounds."""
    round_list = list(range(1, rounds + 1)) if isinstance(rounds, int) else list(rounds)
    return [Trial(task, r, episode_seed(task.id, r, base_seed))
            for task in tasks for r in round_list]


class Suite:
    """The 554 evaluation tasks and 75 training tasks, with lookups and filters."""

    def __init__(self, eval_tasks: list[TaskSpec], training: dict[str, list[TrainingTask]],
                 base_seed: int = BASE_SEED, rounds: int = ROUNDS):
        self._tasks = list(eval_tasks)
        self._by_id = {t.id: t for t in self._tasks}
        if len(self._by_id) != len(self._tasks):
            raise ValueError("duplicate evaluation task ids")
        self._training = training
        self.base_seed = base_seed
        self.rounds = rounds

    def __len__(self) -> int:
        return len(self._tasks)

    def get(self, task_id: str) -> TaskSpec:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise UnknownTaskError(self._unknown_message(task_id)) from None

    def eval_tasks(self, scenes: str | Iterable[str] | None = None,
                   levels: str | Iterable[str] | None = None,
                   ids: Iterable[str] | None = None) -> list[TaskSpec]:
        """Tasks matching all given filters; with ``ids`` the result follows their order."""
        scene_set = _choices(scenes, SCENES, "scene")
        level_set = _choices(levels, LEVELS, "level")
        chosen = self._tasks if ids is None else [self.get(i) for i in dict.fromkeys(ids)]
        return [t for t in chosen
                if (scene_set is None or t.scene in scene_set)
                and (level_set is None or t.level in level_set)]

    def training_tasks(self, scene: str) -> list[TrainingTask]:
        _choices(scene, SCENES, "scene")
        return list(self._training.get(scene, []))

    def counts(self) -> dict:
        """Task counts: by_scene {scene: {level: n}}, by_level, total, training totals."""
        pairs = Counter((t.scene, t.level) for t in self._tasks)
        training = [t for tasks in self._training.values() for t in tasks]
        return {
            "by_scene": {s: {lv: pairs[(s, lv)] for lv in LEVELS} for s in SCENES},
            "by_level": {lv: sum(pairs[(s, lv)] for s in SCENES) for lv in LEVELS},
            "total": len(self._tasks),
            "training_tasks": len(training),
            "training_instructions": sum(len(t.instructions) for t in training),
        }

    def trials(self, tasks: Iterable[TaskSpec] | None = None) -> list[Trial]:
        """The full protocol (every round of every task) for ``tasks`` (default: all)."""
        return plan_trials(self._tasks if tasks is None else tasks, self.rounds, self.base_seed)

    def _unknown_message(self, task_id: str) -> str:
        close = difflib.get_close_matches(task_id, self._by_id, n=5, cutoff=0.6)
        hint = ("; close matches: " + ", ".join(close)) if close else ""
        return f"unknown evaluation task id {task_id!r}{hint}"


def split_list(text: str | None) -> list[str] | None:
    """"a, b,c" -> ["a", "b", "c"]; empty -> None (no filter). For CLI flags and parameters."""
    items = [s.strip() for s in str(text or "").split(",") if s.strip()]
    return items or None


def select_tasks(suite: "Suite", scenes: str = "", levels: str = "", tasks: str = "") -> list[TaskSpec]:
    """Tasks chosen by comma-separated strings; explicit task ids win over scene/level filters."""
    ids = split_list(tasks)
    if ids:
        return suite.eval_tasks(ids=ids)
    return suite.eval_tasks(scenes=split_list(scenes), levels=split_list(levels))


def _choices(value: str | Iterable[str] | None, valid: tuple[str, ...], what: str):
    if value is None:
        return None
    chosen = {value} if isinstance(value, str) else set(value)
    unknown = sorted(chosen - set(valid))
    if unknown:
        raise ValueError(f"unknown {what}(s) {unknown}; valid: {', '.join(valid)}")
    return chosen


def load_suite(path: str | Path | None = None) -> Suite:
    """Read config/robofollow/tasks.json (or ``path``) into a Suite."""
    data = json.loads(Path(path or config_path(TASKS_FILE)).read_text(encoding="utf-8"))
    tasks = [TaskSpec.from_dict(d) for scene in SCENES for d in data["eval_tasks"][scene]]
    by_id = {t.id: t for t in tasks}
    training = {
        scene: [TrainingTask(id=d["id"], scene=scene, layout=d["layout"],
                             instructions=tuple(d["instructions"]), spec=by_id[d["eval_task"]])
                for d in data["training_tasks"][scene]]
        for scene in SCENES
    }
    protocol = data["protocol"]
    suite = Suite(tasks, training, base_seed=protocol["base_seed"], rounds=protocol["rounds"])
    _check_declared_counts(suite, data["counts"])
    return suite


def _check_declared_counts(suite: Suite, declared: dict) -> None:
    # Cheap integrity check: a hand-edited or truncated file fails here, not mid-evaluation.
    found = suite.counts()
    if found != declared:
        raise ValueError(f"tasks.json counts {declared} do not match its content {found}")
