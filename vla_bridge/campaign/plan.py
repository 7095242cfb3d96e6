"""A campaign's plan: the trials the evaluator would run, cut into units.

A unit is a set of whole tasks (all their rounds), run by one graph with ``tasks:=`` set to
them. Trial seeds depend only on (task, round, base seed) (``plan_trials``), so a unit's
graph runs exactly the episodes a single graph would. Units hold whole tasks because the
graph's selection is by task; a few tasks per unit keep the graph's start-up (a few
seconds) small beside its episodes.

The driver asks a graph's plan through a `GraphPlan` (``driver.graph_plan``): RoboFollow's is
here, LIBERO's in ``libero_plan`` (units of (suite, task) pairs, split by initial-state ranges).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from vla_bridge.benchmarks.robofollow.tasks import Trial, load_suite, plan_trials
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.evaluation.run_dir import trial_key

#: graphs a campaign can shard: robofollow_sim (scene/levels/tasks/rounds/seed) and
#: libero_sim (suite/tasks/inits/seed, ``libero_plan``)
GRAPHS = ("robofollow_sim", "libero_sim")
#: launch arguments the campaign sets per unit (a user's value would be overridden)
UNIT_ARGS = ("tasks", "output", "resume")
#: launch arguments that only choose which trials run: a resume may change them
SELECTION_ARGS = ("scene", "levels", "tasks", "rounds")
MAX_UNIT_TRIALS = 50
UNITS_PER_WORKER = 4  # enough units to keep every worker busy until the end


@dataclass(frozen=True)
class Unit:
    name: str  # unique in the campaign; its graph's output is units/<name>
    task_ids: tuple[str, ...]
    keys: tuple[str, ...]  # trial keys (run_dir.trial_key) it must produce


def planned_trials(values: dict[str, str]) -> list[Trial]:
    """The trials of a graph's resolved launch values, as its evaluator plans them (the cue
    suite's tasks, the compatibility filter of a cue protocol)."""
    if int(values["rounds"]) < 1:
        raise ValueError(f"rounds must be >= 1, got {values['rounds']}")
    cues = CueRun(values.get("cue_protocol", ""), values.get("cue_family", ""),
                  values.get("cue_variant", ""), values.get("cue_placement", "overlay"),
                  values.get("cue_suite", ""))
    params = {"scene": values["scene"], "levels": values["levels"], "tasks": values["tasks"]}
    tasks = cues.suite_tasks(load_suite(), params)
    if not tasks:
        raise ValueError("the selection matches no task")
    trials = plan_trials(tasks, int(values["rounds"]), int(values["seed"]))
    ghosts = str(values.get("cue_render_ghosts", "true")).lower() in ("true", "1", "yes")
    return cues.compatible(trials, plan_ghosts=ghosts)


def unit_size(trials: int, workers: int, rounds: int) -> int:
    """Trials per unit: about UNITS_PER_WORKER units per worker, at most MAX_UNIT_TRIALS, at
    least one task's rounds."""
    even = math.ceil(trials / max(1, workers * UNITS_PER_WORKER))
    return max(rounds, min(MAX_UNIT_TRIALS, even))


def make_units(trials: list[Trial], size: int, prefix: str = "u") -> list[Unit]:
    """Whole tasks, in plan order, packed into units of at most `size` trials (a task with
    more rounds than `size` is a unit of its own)."""
    by_task: dict[str, list[Trial]] = {}
    for trial in trials:
        by_task.setdefault(trial.task.id, []).append(trial)
    units, ids, keys = [], [], []
    for task_id, task_trials in by_task.items():
        if ids and len(keys) + len(task_trials) > size:
            units.append(Unit(f"{prefix}{len(units):04d}", tuple(ids), tuple(keys)))
            ids, keys = [], []
        ids.append(task_id)
        keys += [trial_key(t) for t in task_trials]
    if ids:
        units.append(Unit(f"{prefix}{len(units):04d}", tuple(ids), tuple(keys)))
    return units


def unit_tokens(given: dict[str, str], unit: Unit, output: str) -> list[str]:
    """The launch tokens of one unit's graph: the user's arguments, with the unit's tasks,
    its own output directory and resume on (a retried unit skips what it finished)."""
    args = {k: v for k, v in given.items() if k not in UNIT_ARGS}
    args.update(tasks=",".join(unit.task_ids), output=output, resume="true")
    return [f"{name}:={value}" for name, value in args.items()]


@dataclass(frozen=True)
class GraphPlan:
    """What the driver asks of the graph it shards."""
    graph: str
    #: launch arguments that only choose which trials run: a resume may change them
    selection_args: tuple[str, ...]
    #: resolved launch values -> the trials its evaluator plans (ValueError: a bad selection)
    planned_trials: Callable[[dict], list]
    #: (trials to run, resolved values, workers, --unit-trials or None, name prefix) ->
    #: (trials per unit, units)
    cut: Callable[[list, dict, int, "int | None", str], "tuple[int, list[Unit]]"]
    #: (the user's launch arguments, unit, its output directory) -> the unit graph's tokens
    unit_tokens: Callable[[dict, Unit, str], list[str]]


def _cut(trials: list, values: dict, workers: int, unit_trials: int | None,
         prefix: str) -> tuple[int, list[Unit]]:
    size = unit_trials or unit_size(len(trials), workers, int(values["rounds"]))
    return size, make_units(trials, size, prefix)


ROBOFOLLOW = GraphPlan("robofollow_sim", SELECTION_ARGS, planned_trials, _cut, unit_tokens)
