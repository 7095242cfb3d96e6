"""Charged latency (``latency:=charged``), the evaluator's side: where each policy call's
latency comes from, and its record in the results rows. Pure logic, no ROS.

The sim stays lock-step (reproducible) but charges every policy call its latency in sim
time (sim_nodes/session.py, ``execute_charged``): the robot keeps executing the previous
chunk, or holds, for ``ceil(L / dt)`` ticks and the new chunk's late actions are dropped.
``latency_ms`` (the launch argument) says where L comes from:

* ``measured`` (default): the sim's wall-clock wait from publishing an observation to
  receiving its chunk, i.e. the policy's real time on this machine (not reproducible; the
  row records it, so ``replay`` is);
* ``100``: every call is charged 100 ms;
* ``uniform:LO:HI`` or ``normal:MEAN:STD`` (clipped at 0): drawn per call from an RNG seeded
  by the episode's seed, so a rerun with the same seed charges the same;
* ``replay:RUN_DIR``: the latencies RUN_DIR's results row of the same trial (task, round)
  recorded, so a rerun is the same episode.

The evaluator sends an episode's latencies in its begin message (``charged_latency_ms``: one
per call of the budget, or "measured"); the sim reports what it charged in its done status,
and ``ChargedLatency`` writes that into the row (``charged_latency_ms``, and the sim's
``observation_period``, 0 meaning "when the chunk is used up"). Bad values are one error at
start (``from_params``); a replay run lacking a trial fails that episode with the reason.

A latency is bounded twice: a value above ``contract.MAX_CHARGED_LATENCY_MS`` (a minute per
call: ``latency_ms 10000000`` is a typo, not a policy) is refused at start in one line, fixed,
drawn (uniform's HI, normal's MEAN; normal's draws are clipped to it) or replayed; and the sim
charges a call at most the episode's whole budget of ticks (``SimSession.charge``), so a
measured wait of a hung policy cannot hold the sim either.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vla_bridge import contract as C
from vla_bridge.benchmarks.robofollow.tasks import Trial
from vla_bridge.evaluation.episodes import EpisodeFailed, Subscriber
from vla_bridge.evaluation.provenance import hardware_of
from vla_bridge.evaluation.run_dir import RunDirectory, read_jsonl, trial_key

MODES = ("none", "charged")  # the `latency` launch argument
DRAWN = ("uniform", "normal")
REPLAY = "replay"
ROW_FIELD = "charged_latency_ms"
RNG_STREAM = 0x1A7E  # keeps the latency draws apart from any other use of the seed
FORMS = ("measured", "MS (e.g. 100)", "uniform:LO:HI", "normal:MEAN:STD", "replay:RUN_DIR")


@dataclass(frozen=True)
class LatencySpec:
    """A parsed ``latency_ms``: kind "measured", "fixed", "uniform", "normal" or "replay"."""
    kind: str
    values: tuple[float, ...] = ()  # fixed (ms,), uniform (lo, hi), normal (mean, std)
    run_dir: str = ""  # replay

    def latencies(self, seed: int, calls: int) -> list[float]:
        """``calls`` latencies in ms for an episode of ``seed`` (fixed or drawn kinds)."""
        if self.kind == "fixed":
            return [self.values[0]] * calls
        rng = np.random.default_rng([RNG_STREAM, int(seed)])
        if self.kind == "uniform":
            drawn = rng.uniform(*self.values, size=calls)
        else:
            drawn = np.clip(rng.normal(*self.values, size=calls), 0.0, C.MAX_CHARGED_LATENCY_MS)
        return [round(float(v), 3) for v in drawn]


def parse_latency_ms(text: str) -> LatencySpec:
    """``latency_ms`` -> LatencySpec, else ValueError naming the forms it takes."""
    text = str(text).strip()
    head, _, rest = text.partition(":")
    if text == C.CHARGED_MEASURED:
        return LatencySpec("measured")
    if head == REPLAY:
        if not rest:
            raise ValueError("latency_ms replay: needs a run directory (replay:RUN_DIR)")
        return LatencySpec(REPLAY, run_dir=rest)
    if head in DRAWN:
        values = _numbers(text, rest.split(":"), 2)
        a, b = values
        if a < 0 or b < 0 or (head == "uniform" and b < a):
            raise ValueError(f"latency_ms {text!r}: " + (
                "needs 0 <= LO <= HI" if head == "uniform" else "needs MEAN >= 0 and STD >= 0"))
        _bounded(text, values[1] if head == "uniform" else values[0])
        return LatencySpec(head, values)
    (value,) = _numbers(text, [text], 1)
    if value < 0:
        raise ValueError(f"latency_ms {text!r}: a latency cannot be negative")
    _bounded(text, value)
    return LatencySpec("fixed", (value,))


def _bounded(text: str, value: float) -> None:
    """ValueError for a latency above contract.MAX_CHARGED_LATENCY_MS (a typo or a unit slip:
    it would hold the sim, charging tick after tick, for hours)."""
    if value > C.MAX_CHARGED_LATENCY_MS:
        raise ValueError(f"latency_ms {text!r}: {value:g} ms per policy call is more than the "
                         f"{C.MAX_CHARGED_LATENCY_MS:.0f} ms allowed (latency_ms is in "
                         "milliseconds)")


def _numbers(text: str, parts: list[str], n: int) -> tuple[float, ...]:
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise ValueError(f"latency_ms {text!r} is not one of: {', '.join(FORMS)}")
    return values


class ChargedLatency(Subscriber):
    """The run's charged latency: the begin field of each episode, its record in the row."""

    def __init__(self, spec: LatencySpec, max_calls: int):
        self.spec, self.max_calls = spec, int(max_calls)
        self.replayed = load_replay(spec.run_dir) if spec.kind == REPLAY else {}
        self.done: dict | None = None  # the sim's done status of the running episode

    def begin_fields(self, trial: Trial) -> dict:
        if self.spec.kind == "measured":
            return {ROW_FIELD: C.CHARGED_MEASURED}
        if self.spec.kind == REPLAY:
            return {ROW_FIELD: self.replay(trial)}
        return {ROW_FIELD: self.spec.latencies(trial.seed, self.max_calls)}

    def replay(self, trial: Trial) -> list[float]:
        key = trial_key(trial)
        recorded = self.replayed.get(key)
        where = f"charged latency replay of {self.spec.run_dir}"
        if recorded is None:
            raise EpisodeFailed(f"{where}: no row of {key} with {ROW_FIELD}")
        if len(recorded) < self.max_calls:
            raise EpisodeFailed(f"{where}: {key} recorded {len(recorded)} calls, this budget "
                                f"has {self.max_calls}")
        return list(recorded)

    def on_episode_start(self, trial: Trial, cue) -> None:
        self.done = None

    def on_status(self, source: str, status: dict) -> None:
        if source == "sim" and status["kind"] == C.STATUS_DONE:
            self.done = status

    def on_episode_end(self, trial: Trial, row: dict, run_dir: RunDirectory) -> None:
        if self.done is not None and ROW_FIELD in self.done:
            row[ROW_FIELD] = self.done[ROW_FIELD]
            row["observation_period"] = self.done.get("observation_period", 0)


def load_replay(run_dir: str) -> dict[str, list[float]]:
    """trial key -> the charged latencies RUN_DIR's results rows recorded (the last row of a
    key wins); ValueError when the directory or its recorded latencies are missing."""
    path = Path(run_dir).expanduser()
    if not path.is_dir():
        raise ValueError(f"latency_ms replay:{run_dir}: no such run directory")
    rows = read_jsonl(path / "results.jsonl")
    recorded = {row["key"]: row[ROW_FIELD] for row in rows
                if "key" in row and isinstance(row.get(ROW_FIELD), list)}
    if not recorded:
        raise ValueError(f"latency_ms replay:{run_dir}: its results.jsonl holds no "
                         f"{ROW_FIELD} (was it run with latency:=charged?)")
    for key, values in recorded.items():
        try:
            C.check_charged_latency(values)
        except ValueError as exc:
            raise ValueError(f"latency_ms replay:{run_dir}: row {key}: {exc}") from None
    return recorded


def from_params(params: dict) -> ChargedLatency | None:
    """The run's ChargedLatency for the evaluator's ``latency`` / ``latency_ms`` (None: off),
    or ValueError in one line for a bad value or a robot role that is not the sim."""
    mode, text = str(params.get("latency", "none")), str(params.get("latency_ms", "measured"))
    if mode not in MODES:
        raise ValueError(f"latency must be one of {list(MODES)}, got {mode!r}")
    spec = parse_latency_ms(text)
    if mode == "none":
        if text != C.CHARGED_MEASURED:
            raise ValueError(f"latency_ms:={text} needs latency:=charged")
        return None
    hardware = hardware_of(params)
    if hardware != "sim":
        raise ValueError(f"latency:=charged is a simulation mode; hardware {hardware} pays "
                         "the policy's latency on the wall clock")
    return ChargedLatency(spec, params["max_policy_calls"])

