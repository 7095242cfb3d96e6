"""The run's perturbation axis (``--perturb AXIS:LEVEL``, `benchmarks.perturbations`) as an
engine subscriber, for every benchmark: each begin asks the sim for the axis and level, and
each row records what the sim's ``ready`` says it applied (the axis, level, seed and drawn
values). A sim that applied nothing although asked (a node from before the axes) leaves
``"applied": false`` in the row, so such rows never pass for perturbed ones; a sim that cannot
apply the axis refuses the begin, and the episode fails with its reason.
"""
from __future__ import annotations

from vla_bridge import contract as C
from vla_bridge.benchmarks import perturbations
from vla_bridge.evaluation.episodes import Subscriber


class PerturbationHook(Subscriber):
    """``seed_of(trial)``: the trial's perturbation seed, or None for the begin's episode seed
    (`Benchmark.perturbation_seed`)."""

    def __init__(self, spec: str, seed_of=lambda trial: None):
        self.perturbation = perturbations.parse(spec)  # ValueError: a bad --perturb
        self.seed_of = seed_of
        self.applied: dict | None = None

    def begin_fields(self, trial) -> dict:
        if self.perturbation is None:
            return {}
        value = self.perturbation.to_dict()
        seed = self.seed_of(trial)
        if seed is not None:
            value["seed"] = int(seed)
        return {"perturbation": value}

    def on_episode_start(self, trial, cue) -> None:
        self.applied = None

    def on_status(self, source: str, status: dict) -> None:
        if source == "sim" and status.get("kind") == C.STATUS_READY:
            self.applied = status.get("perturbation")

    def on_episode_end(self, trial, row: dict, run_dir) -> None:
        if self.perturbation is None:
            return
        row["perturbation"] = (dict(self.applied) if isinstance(self.applied, dict)
                               else {**self.perturbation.to_dict(), "applied": False})

