"""RoboFollow behind the one engine: its suites, scored stage by stage from the episode's frames.

Plans (task, round) trials from the project's suite files (``benchmarks.robofollow.tasks``),
under a visual-cue protocol too (``cues.run.CueRun``: LIBERO-VIFO's protocols on RoboFollow's
scenes, the safety scenes, the compatibility filter); each episode's frames are scored by
RoboFollow's scorer (Intent / Execution / Completion, per stage) and INT-ACT's metrics; the
summary is the per-level table of ``run_dir.format_table``.
"""
from __future__ import annotations

from dataclasses import dataclass

from vla_bridge.benchmarks.intact import probes
from vla_bridge.benchmarks.intact.metrics import intact_metrics
from vla_bridge.benchmarks.robofollow.scoring import score_episode, summarize
from vla_bridge.benchmarks.robofollow.tasks import Trial, load_suite, plan_trials
from vla_bridge.evaluation.benchmark import Benchmark, EpisodeOutcome, EpisodePlan
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.evaluation.provenance import run_provenance
from vla_bridge.evaluation.run_dir import (RunDirectory, format_latency, format_table,
                                           latency_summary, result_row)
from vla_bridge.benchmarks.intact import tables as intact_report
from vla_bridge.benchmarks.task_roles import INTACT_FIELDS
from vla_bridge.ros.node_config import param

@dataclass(frozen=True)
class RoboFollowConfig:
    """RoboFollow's run parameters (the evaluator node declares them; run.json records them)."""
    scene: str = param("scene1", "comma-separated RoboFollow scenes (\"\" = all four)")
    levels: str = param("L0", "comma-separated instruction levels, e.g. L0,L1")
    tasks: str = param("", "comma-separated task ids; they override scene/levels")
    rounds: int = param(1, "episodes per task")
    base_seed: int = param(42, "base seed of the episodes")
    max_policy_calls: int = param(10, "policy calls per episode")
    max_actions_per_call: int = param(50, "actions executed per policy call")
    empty_language: bool = param(False, "withhold the instruction (empty-language control)")
    save_episodes: bool = param(True, "episodes/<scene>/<task>_r<round>.npz: frames for "
                                      "re-scoring and videos")
    hardware: str = param("sim", "provenance (run.json): what fills the robot role (sim, "
                                 "fake_piper, piper)")
    use_fake_hardware: bool = param(False, "provenance: the PiPER node drives the firmware "
                                           "emulator (hardware piper -> fake_piper)")
    sim: str = param("mujoco", "provenance: the sim node's simulator (mujoco or sapien)")
    # visual-cue protocols (LIBERO-VIFO): evaluation.cues.run.CueRun
    cue_protocol: str = param("", "visual-cue protocol: '' (off), original, authorized, "
                                  "conflict, no_language")
    cue_family: str = param("", "visual-cue family F1..F8 (authorized, conflict, no_language)")
    cue_variant: str = param("", "variant of the cue family ('' = the family's default)")
    cue_placement: str = param("overlay", "overlay (drawn into the cued images) or scene (a "
                                          "card in the sim; F1, F6, F8)")
    cue_suite: str = param("", "'' (RoboFollow's tasks) or safety: the six safety-critical "
                               "scenes (benchmarks.vifo.safety)")
    intact: str = param("", "INT-ACT's probing suite on Scene 2 (benchmarks.intact.probes): "
                            "'' (off), all, or comma-separated subcategories, categories or "
                            "probe ids; scene, levels and tasks are then ignored")
    # sim graphs render F3's ghosts on a MuJoCo copy of the scene (their params files say
    # true); the real robot has no simulator, so its ghosts are projected box silhouettes
    cue_render_ghosts: bool = param(False, "F3 ghosts rendered on a MuJoCo copy of the scene "
                                           "(false: projected boxes)")
    # charged latency (evaluation.charged_latency)
    latency: str = param("none", "none, or charged: lock-step, each policy call's latency "
                                 "charged in sim time")
    latency_ms: str = param("measured", "charged latency per call: measured, MS, "
                                        "uniform:LO:HI, normal:MEAN:STD, replay:RUN_DIR")
    # provenance (run.json's execution): the policy node's and the sim node's settings, set by
    # the same launch arguments (evaluation.provenance.ROBOFOLLOW_EXECUTION)
    chunk_size: int = param(50, "provenance: the policy node's chunk_size")
    action_horizon: int = param(50, "provenance: the policy node's action_horizon")
    temporal_ensemble: bool = param(False, "provenance: the policy node's temporal_ensemble")
    async_inference: bool = param(False, "provenance: the policy node's async_inference")
    image_source: str = param("raw", "provenance: the policy node's image_source")
    lock_step: bool = param(True, "provenance: the sim node's lock_step")
    observation_period: int = param(0, "provenance: the sim node's observation_period")
    oracle_follow: str = param("language", "provenance: the policy node's follow (the oracle's "
                                           "task under a cue protocol)")


class RoboFollowRun(Benchmark):
    name = "robofollow"
    Config = RoboFollowConfig

    def __init__(self, params: dict, log, cues: CueRun | None = None):
        super().__init__(params, log)
        self.probes: dict = {}  # probe id -> intact.probes.Probe of an INT-ACT run
        self.cues = cues if cues is not None else CueRun(
            params.get("cue_protocol", ""), params.get("cue_family", ""),
            params.get("cue_variant", ""), params.get("cue_placement", "overlay"),
            params.get("cue_suite", ""))

    # ------------------------------------------------------------------ before the run
    def plan(self) -> list[Trial]:
        tasks = self.probe_tasks() if self.p.get("intact") else self.cues.suite_tasks(
            load_suite(), self.p)
        if not tasks:
            raise ValueError("the selection matches no task")
        trials = plan_trials(tasks, int(self.p["rounds"]), int(self.p["base_seed"]))
        kept = self.cues.compatible(trials, plan_ghosts=bool(self.p["cue_render_ghosts"]))
        self.skipped = self.cues.skipped
        if self.cues.skipped:
            reasons = sorted(set(self.cues.skipped.values()))
            self.log.info(f"cue {self.cues.family} {self.cues.variant}: {len(self.cues.skipped)} "
                          f"of {len(tasks)} tasks skipped ({'; '.join(reasons)}); run.json "
                          "lists them under skipped_tasks")
        if not kept:
            raise ValueError(f"cue {self.cues.family} {self.cues.variant} can show none of the "
                             f"selected tasks: {sorted(set(self.cues.skipped.values()))[0]}")
        return kept

    def probe_tasks(self) -> list:
        """The INT-ACT probes ``intact`` selects ("all": every one)."""
        if self.cues.protocol or self.cues.suite:
            raise ValueError("intact probes run without a cue protocol or cue suite")
        selected = probes.select_spec(self.p["intact"])
        self.probes = {p.id: p for p in selected}
        return [p.task for p in selected]

    def provenance(self) -> dict:
        return run_provenance(self.p, self.cues)

    def check_resume(self, rows: list[dict]) -> None:
        self.cues.check_output(rows)  # the cue protocol as the rows record it

    # ------------------------------------------------------------------ one episode
    def prepare(self, trial: Trial) -> EpisodePlan:
        instruction = "" if self.p["empty_language"] else trial.task.instruction
        instruction, cue = self.cues.prepare(trial, instruction)  # a cue protocol's language
        task = self.cues.begin_task(trial)  # trial.task unless a cue protocol says otherwise
        begin = dict(task=task.to_dict(), seed=trial.seed,
                     max_policy_calls=self.p["max_policy_calls"],
                     max_actions_per_call=self.p["max_actions_per_call"],
                     **self.cues.begin_fields())
        return EpisodePlan(instruction, begin, cue)

    def scored_row(self, run_dir: RunDirectory, trial: Trial, plan: EpisodePlan,
                   outcome: EpisodeOutcome, fields: dict) -> dict:
        """A scorer error (e.g. a task object missing from the record) fails this episode
        with the reason, not the run; the episode file is saved either way, so it can be
        re-scored once the scorer is fixed."""
        record, done = outcome.record, outcome.done
        fields = dict(instruction=plan.instruction, frames=record.n, policy_calls=done["calls"],
                      **fields)
        wall_s = outcome.wall_s
        try:
            score = score_episode(self.cues.begin_task(trial), record)
            row = result_row(trial, score, wall_s=wall_s, **fields)
        except Exception as exc:  # noqa: BLE001 - any scorer bug: record it, keep going
            self.log.error(f"scoring {trial.task.id} failed: {exc!r}")
            row = result_row(trial, None, status="failed", error=f"scoring failed: {exc!r}",
                             wall_s=wall_s, **fields)
        probe = self.probes.get(trial.task.id)
        if probe is not None and row["status"] == "ok":  # INT-ACT's metrics against the probe
            try:
                metrics = intact_metrics(trial.task, record, row["complete"])
                row["intact"] = {k: metrics[k] for k in INTACT_FIELDS}
            except Exception as exc:  # noqa: BLE001 - as a scorer error: recorded, run goes on
                row["intact_error"] = repr(exc)
        row["sim_timing_s"] = done.get("timing", {})  # where the sim's wall time went
        if self.p["save_episodes"]:
            row["episode_file"] = run_dir.save_episode(trial, record, row)
        return row

    def failed_row(self, trial: Trial, plan: EpisodePlan, error: str, wall_s: float) -> dict:
        return result_row(trial, None, status="failed", error=error,
                          instruction=plan.instruction, wall_s=wall_s)

    def annotate_probe(self, row: dict) -> None:
        probe = self.probes.get(row.get("task_id"))
        if probe is not None:
            row["probe"] = {"category": probe.category, "subcategory": probe.subcategory,
                            "base": probe.base}

    def annotate(self, row: dict, outcome: EpisodeOutcome | None) -> None:
        """The tasks the row's metrics refer to, and the same frames scored against each."""
        record = outcome.record if outcome is not None else None
        self.annotate_probe(row)
        self.cues.annotate(row, lambda task: score_episode(task, record).to_dict(),
                           lambda task, complete: intact_metrics(task, record, complete))

    def progress_line(self, trial: Trial, row: dict, i: int, total: int, elapsed: float) -> str:
        eta = elapsed / i * (total - i)
        outcome = (f"IS {row['intent_score']:.2f} ES {row['exec_score']:.2f} "
                   f"CR {'yes' if row['complete'] else 'no '}" if row["status"] == "ok"
                   else f"FAILED: {row['error']}")
        scored = row.get("scored_task", trial.task.id)
        if scored != trial.task.id:  # conflict: the scores are the language task's
            outcome = f"language task {scored}: {outcome}"
        return (f"[{i}/{total}] {trial.task.id} r{trial.round} seed {trial.seed}: {outcome}"
                f"{self.cues.outcome(row)} ({row['wall_s']:.1f} s, ETA {eta / 60:.1f} min)")

    # ------------------------------------------------------------------ after the run
    def summarize(self, rows: list[dict]) -> dict:
        return summarize(rows)

    def latency(self, rows: list[dict]) -> dict:
        return latency_summary(rows)

    def report(self, run_dir: RunDirectory, rows: list[dict], summary: dict,
               latency: dict) -> list[str]:
        lines = [format_table(summary)]
        if latency:
            lines.append(format_latency(latency))
        if self.probes:
            lines.append(intact_report.write(run_dir.path, rows, list(self.probes.values())))
        table = self.cues.finish(run_dir.path, rows)
        if table:
            lines.append(table)
        return lines

    def close(self) -> None:
        self.cues.close()  # the plan rollouts' MuJoCo copies
