"""What the one episode engine (``episodes.SuiteRun``) asks of a benchmark.

A benchmark is one module with one ``Benchmark`` class: it plans the trials, says what an
episode's ``begin`` carries, turns a finished episode into its results row, summarises the rows
and writes its report. The engine does the rest once for every benchmark: waiting for the
graph, begin / ready / start / done, timeouts, a node that dies or restarts, resume and the
provenance check, recording, the viewer, the run directory.

``BENCHMARKS`` names them for the evaluator node's ``benchmark`` parameter; each is imported
only when chosen. Pure logic, no rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module

from vla_bridge.evaluation.run_dir import RunDirectory

BENCHMARKS = {"robofollow": "vla_bridge.evaluation.robofollow_run:RoboFollowRun",
              "libero": "vla_bridge.evaluation.libero_run:LiberoRun"}
DEFAULT_BENCHMARK = "robofollow"


@dataclass
class EpisodePlan:
    """What one trial's episode is, before it runs."""
    instruction: str  # published on the instruction topic and sent in the begin
    begin: dict  # the begin's benchmark fields: task, seed, budget, cue fields ...
    cue: object = None  # the CueSpec the overlay draws (None: none)


@dataclass
class EpisodeOutcome:
    """What the engine heard of one episode, for the benchmark's row."""
    done: dict  # the sim's done status
    ready: dict = field(default_factory=dict)  # source ("sim", "policy") -> its ready status
    record: object = None  # the EpisodeRecord of its frames (benchmarks that record frames)
    reset_s: float = 0.0  # begin -> both ready
    run_s: float = 0.0  # start -> done
    wall_s: float = 0.0  # the whole episode, begin to scoring


@dataclass(frozen=True)
class BenchmarkConfig:
    """A benchmark without parameters of its own (each benchmark's ``Config`` has its fields,
    made with ``vla_bridge.ros.node_config.param``)."""


class Benchmark:
    """The protocol: subclasses set ``name`` and ``Config`` and implement the methods below."""
    name = ""
    #: the benchmark's own parameters, a frozen config dataclass (the evaluator node declares
    #: them beside the engine's ``episodes.EngineConfig``)
    Config: type = BenchmarkConfig
    #: the engine waits for and hands over the sim's frames (an EpisodeRecord per episode)
    records_frames = True

    def __init__(self, params: dict, log):
        self.p, self.log = params, log
        self.skipped: dict[str, str] = {}  # trial or task -> why it is not run

    def plan(self) -> list:
        """The run's trials (each has a ``key``, or is a RoboFollow Trial: run_dir.trial_key);
        ValueError when none is left to run, saying why."""
        raise NotImplementedError

    def provenance(self) -> dict:
        """What gives the episodes their meaning (evaluation.provenance's fields)."""
        raise NotImplementedError

    def check_resume(self, rows: list[dict]) -> None:
        """Extra checks before resuming into a directory holding ``rows`` (ValueError)."""

    def prepare(self, trial) -> EpisodePlan:
        """The trial's instruction, begin fields and cue."""
        raise NotImplementedError

    def scored_row(self, run_dir: RunDirectory, trial, plan: EpisodePlan,
                   outcome: EpisodeOutcome, fields: dict) -> dict:
        """The results row of a finished episode; ``fields``: the subscribers' row fields."""
        raise NotImplementedError

    def failed_row(self, trial, plan: EpisodePlan, error: str, wall_s: float) -> dict:
        """The results row of an episode that failed before it finished (it scores zero)."""
        raise NotImplementedError

    def perturbation_seed(self, trial) -> int | None:
        """The seed of the trial's perturbation draws (``--perturb``); None: the begin's
        episode seed, which suits a benchmark whose trials each have their own."""
        return None

    def annotate(self, row: dict, outcome: EpisodeOutcome | None) -> None:
        """Last word on a row, scored or failed (e.g. the cue protocol's per-role scores)."""

    def progress_line(self, trial, row: dict, i: int, total: int, elapsed: float) -> str:
        """The console line of a finished episode."""
        raise NotImplementedError

    def summarize(self, rows: list[dict]) -> dict:
        """summary.json's content."""
        raise NotImplementedError

    def latency(self, rows: list[dict]) -> dict:
        """latency.json's content ({}: none is written)."""
        return {}

    def report(self, run_dir: RunDirectory, rows: list[dict], summary: dict,
               latency: dict) -> list[str]:
        """Write the benchmark's files into the run directory; the lines to print
        (``summary`` and ``latency``: what ``summarize`` and ``latency`` gave)."""
        raise NotImplementedError

    def close(self) -> None:
        """Free what the benchmark holds (simulator copies)."""


def benchmark_class(name: str) -> type[Benchmark]:
    """The Benchmark class called ``name``; ValueError listing the known ones."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    module, cls = BENCHMARKS[name].split(":")
    return getattr(import_module(module), cls)
