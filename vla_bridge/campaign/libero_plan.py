"""A LIBERO campaign's plan: the trials the evaluator would run ((suite, task, initial state),
``libero_run.LiberoRun.plan``: cue protocols and their skips included), cut into units.

A unit is one graph, ``--suite S --tasks T --inits I``, which plans the cross product of T
and I in S. So a unit holds whole tasks of one suite, all their planned initial states, and
packs several when they share the same initial states; a task with more trials than the
unit size is split into contiguous initial-state ranges of about equal length. The split is
what lets many workers share few tasks: LIBERO's four suites have 40 tasks, and vla-eval runs
their 2,000 episodes on 50 shards; units of whole tasks would leave 10 of 50 workers idle and
make the campaign as long as one task's 50 episodes.

The unit size (`unit_size`, at most MAX_UNIT_TRIALS: a whole task of 50 initial states) is
the one that makes the campaign shortest by a simple model: every unit pays a graph start-up
and its tasks' first environment (LIBERO builds the model: 3-7 s), about UNIT_OVERHEAD_TRIALS
episodes, and the workers run the units in rounds, so the length is rounds x (largest unit +
overhead). Smaller units balance better at the end but pay more start-ups; the model also
avoids a size whose split leaves a few units over for a last round (400 trials on 50 workers:
6 ranges of 8-9 per task, 48 units, not 7 of 7-8, 56 units). 2,000 trials on 50 workers:
units of 10 (each task in 5 ranges), 4 per worker; one suite (500) on 2 workers: whole tasks.

A unit's episodes are the ones a single graph would run: every trial of a task has the task's
seed and the sim rebuilds openpi's generator for any initial state, in any order or shard
(docs/libero.md, "Seeding"). Pure: no Ray, no rclpy.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from vla_bridge.campaign.plan import MAX_UNIT_TRIALS, GraphPlan, Unit

GRAPH = "libero_sim"
#: launch arguments the campaign sets per unit (a user's value would be overridden)
UNIT_ARGS = ("suite", "tasks", "inits", "output", "resume")
#: launch arguments that only choose which trials run: a resume may change them
SELECTION_ARGS = ("suite", "tasks", "inits")
#: a unit's graph start-up and first environment, in oracle episodes (measured: ~27 s
#: against ~11 s per libero_object episode, two graphs on 2 busy cores)
UNIT_OVERHEAD_TRIALS = 2.5


@dataclass(frozen=True)
class LiberoUnit(Unit):
    """A unit and its graph's selection (``task_ids`` are "suite/task", as campaign.json and
    the driver's messages name them)."""
    suite: str = ""
    tasks: str = ""  # task numbers, e.g. "0,1"
    inits: str = ""  # initial states, e.g. "0-9" or "0,3,5-9"


def evaluator_params(values: dict[str, str]) -> dict:
    """The evaluator parameters planning reads, from the graph's resolved launch values."""
    return {"suites": values["suite"], "tasks": values["tasks"], "inits": values["inits"],
            "seed": int(values["seed"]), "policy": values.get("policy", "libero_oracle"),
            "cue_protocol": values.get("cue_protocol", ""),
            "cue_family": values.get("cue_family", ""),
            "cue_variant": values.get("cue_variant", "")}


def benchmark(params: dict):
    """The evaluator's own LIBERO benchmark (planning, summary, report.md) for `params`."""
    from vla_bridge.evaluation.libero_run import LiberoRun
    return LiberoRun(params, logging.getLogger("vla_bridge.campaign"))


def planned_trials(values: dict[str, str]) -> list:
    """The trials of a libero_sim graph's resolved launch values, as its evaluator plans
    them (ValueError on an unknown suite, a task or initial state out of range, none left)."""
    return benchmark(evaluator_params(values)).plan()


def unit_size(trials: list, workers: int) -> int:
    """Trials per unit: the size up to MAX_UNIT_TRIALS whose units make the shortest campaign
    by the module doc's model (a tie: the bigger size, fewer start-ups)."""
    best, best_length = 1, math.inf
    for size in range(1, min(MAX_UNIT_TRIALS, max(1, len(trials))) + 1):
        units = make_units(trials, size)
        length = (math.ceil(len(units) / max(1, workers))
                  * (max((len(u.keys) for u in units), default=0) + UNIT_OVERHEAD_TRIALS))
        if length <= best_length:
            best, best_length = size, length
    return best


def format_ints(numbers) -> str:
    """Sorted ints as the launcher's ranges: [0, 1, 2, 5, 7, 8] -> "0-2,5,7-8"."""
    parts: list[str] = []
    values = sorted(set(int(n) for n in numbers))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


def _pieces(trials: list, size: int) -> list[tuple[str, int, list]]:
    """(suite, task, its trials) per task in plan order, a task with more than `size` trials
    cut into contiguous runs of about equal length."""
    by_task: dict[tuple[str, int], list] = {}
    for trial in trials:
        by_task.setdefault((trial.trial.suite, trial.trial.task_index), []).append(trial)
    pieces = []
    for (suite, task), task_trials in by_task.items():
        n = math.ceil(len(task_trials) / size)
        step = len(task_trials) / n
        for k in range(n):
            pieces.append((suite, task, task_trials[round(k * step):round((k + 1) * step)]))
    return pieces


def make_units(trials: list, size: int, prefix: str = "u") -> list[LiberoUnit]:
    """The planned LIBERO trials (``vifo.LiberoCueTrial``) in units of at most `size` trials:
    consecutive tasks of one suite with the same initial states packed, a bigger task split
    by initial-state ranges. Every trial is in exactly one unit."""
    units: list[LiberoUnit] = []
    group: list[tuple[str, int, list]] = []

    def close() -> None:
        if not group:
            return
        suite, inits = group[0][0], [t.trial.init for t in group[0][2]]
        tasks = [task for _, task, _ in group]
        keys = tuple(t.key for _, _, piece in group for t in piece)
        units.append(LiberoUnit(f"{prefix}{len(units):04d}",
                                tuple(f"{suite}/{task}" for task in tasks), keys, suite=suite,
                                tasks=format_ints(tasks), inits=format_ints(inits)))
        group.clear()

    for suite, task, piece in _pieces(trials, size):
        inits = [t.trial.init for t in piece]
        if group and (suite != group[0][0] or inits != [t.trial.init for t in group[0][2]]
                      or sum(len(p) for _, _, p in group) + len(piece) > size):
            close()
        group.append((suite, task, piece))
    close()
    return units


def cut(trials: list, values: dict, workers: int, unit_trials: int | None,
        prefix: str) -> tuple[int, list[LiberoUnit]]:
    units = make_units(trials, unit_trials or unit_size(trials, workers), prefix)
    return max((len(u.keys) for u in units), default=0), units


def unit_tokens(given: dict[str, str], unit: LiberoUnit, output: str) -> list[str]:
    """The launch tokens of one unit's graph: the user's arguments, with the unit's suite,
    tasks and initial states, its own output directory and resume on."""
    args = {k: v for k, v in given.items() if k not in UNIT_ARGS}
    args.update(suite=unit.suite, tasks=unit.tasks, inits=unit.inits, output=output,
                resume="true")
    return [f"{name}:={value}" for name, value in args.items()]


LIBERO = GraphPlan(GRAPH, SELECTION_ARGS, planned_trials, cut, unit_tokens)
