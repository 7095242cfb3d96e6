"""One evaluation run's visual-cue protocol, without ROS (the evaluator node is its shell).

``CueRun`` holds the run's settings (protocol, family, variant, placement) and, per trial:

* ``prepare(trial, instruction)``: plans the trial (``protocols.plan_trial``) and returns the
  policy's language and the cue to draw into the images (None when nothing is drawn: no
  protocol, ``original``, or a cue placed in the scene, which the sim node builds from
  ``begin_fields``);
* ``begin_task`` / ``begin_fields``: what the ``begin`` message carries;
* ``annotate(row, score, intact)``: for every row, the tasks its metrics refer to and the
  episode's scores against each (``benchmarks.task_roles``: ``language_task``, ``cue_task``,
  ``scored_task``, ``scores`` with IS/ES/CR and INT-ACT per task); under a protocol also
  ``row["cue"]``;
* ``outcome(row)``: the progress line's cue part; ``finish(run_dir, rows)`` writes
  cue_metrics.json, cue_table.txt and cue_task_table.txt and returns the tables.

F3's plan ghosts and F4's goal image come from rollouts of the oracle's plan on MuJoCo copies
that the CueRun owns (``rollouts``, a ``sim_nodes.plan_rollout.PlanRollouts``); ``finish``
and ``close`` free them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from vla_bridge.benchmarks.robofollow.tasks import (TaskSpec, Trial, load_suite, select_tasks,
                                                   split_list)
from vla_bridge.benchmarks.task_roles import INTACT_FIELDS, ROLES
from vla_bridge.benchmarks.vifo.compatibility import filter_trials
from vla_bridge.benchmarks.vifo.safety import (SAFETY_SCENES, SAFETY_SUITE, check_suite,
                                               format_safety_table, safety_metrics, safety_scene)
from vla_bridge.benchmarks.vifo.protocols import TrialCue, build_cue, check_protocol, plan_trial, resolve_family_variant
from vla_bridge.benchmarks.vifo.scene_cards import check_placement
from vla_bridge.evaluation.cues.metrics import (format_cue_tables, format_task_table,
                                               write_cue_metrics)
from vla_bridge.evaluation.cues.plan_rollout import PlanRollouts, rollout

__all__ = ["CueRun", "plan_params"]


def plan_params(task: TaskSpec, seed: int, fam: str, variant: str, plan_ghosts: bool,
                rollouts: PlanRollouts | None = None) -> dict:
    """Cue parameters taken from the oracle's plan of the episode rolled out on a MuJoCo copy
    (``sim_nodes.plan_rollout``): F3's ghost states ("plan_path", when ``plan_ghosts``) and
    F4 goal_image's picture of the final state ("image"); {} for the other variants.
    ``rollouts``: the caller's (kept and reused); None: a one-off rollout, freed after."""
    if fam == "F3" and plan_ghosts:
        from vla_bridge.benchmarks.vifo.replay import GHOST_POSES
        return {"plan_path": _rollout(rollouts, task, seed).keyframes(GHOST_POSES)}
    if (fam, variant) == ("F4", "goal_image"):
        return {"image": _rollout(rollouts, task, seed, goal_image=True).goal_image}
    return {}


def _rollout(rollouts: PlanRollouts | None, task: TaskSpec, seed: int, goal_image: bool = False):
    return (rollout if rollouts is None else rollouts.rollout)(task, seed, goal_image)


class CueRun:
    def __init__(self, protocol: str = "", family: str = "", variant: str = "",
                 placement: str = "overlay", suite: str = ""):
        self.protocol = check_protocol(protocol)
        self.suite = check_suite(suite, self.protocol)
        self.family = self.variant = None
        if self.shows_cues:
            self.family, self.variant = resolve_family_variant(family, variant)
        # overlay: drawn into the images the policy reads; scene: a card in the sim's scene
        self.placement = check_placement(placement, self.family)
        self.skipped: dict[str, str] = {}  # task id -> why the variant cannot show it
        self.plan_ghosts = False  # F3 ghosts from the plan's rollout (set by ``compatible``)
        self.plan: TrialCue | None = None  # the running trial's plan
        self.trial: Trial | None = None  # the running trial
        self._suite = None
        self.rollouts = PlanRollouts()  # F3 / F4 goal_image: the plan's rollouts, this run's

    @property
    def shows_cues(self) -> bool:
        return self.protocol not in ("", "original")

    @property
    def needs_cued_images(self) -> bool:
        """The policy must read the overlay's images (a drawn cue would be missed on raw)."""
        return self.shows_cues and self.placement == "overlay"

    # ------------------------------------------------------------------ before the run
    def check_output(self, rows) -> None:
        """Resuming into a run directory of another protocol/family/placement would mix
        metrics: raise naming both."""
        want = (self.protocol or None, self.family, self.variant,
                self.placement if self.protocol else None)
        for row in rows:
            cue = row.get("cue") or {}
            have = (cue.get("protocol"), cue.get("family"), cue.get("variant"),
                    cue.get("placement", "overlay") if cue else None)
            if have != want:
                raise ValueError(f"the run directory holds episodes of cue protocol {have} but "
                                 f"this run is {want}; choose another output directory")

    def compatible(self, trials: list[Trial], plan_ghosts: bool = True) -> list[Trial]:
        """The trials whose task the run's cue variant can show (all without a cue); the
        others' task ids and reasons land in ``skipped`` (LIBERO-VIFO's compatibility filter,
        ``benchmarks.vifo.compatibility``)."""
        self.plan_ghosts = plan_ghosts
        if not self.shows_cues:
            return list(trials)
        kept, dropped = filter_trials(trials, self.family, self.variant, plan_ghosts)
        self.skipped = {trial.task.id: reason for trial, reason in dropped}
        return kept

    def suite_tasks(self, suite, params: dict) -> list[TaskSpec]:
        """The run's tasks: the selection (scene, levels, tasks) of RoboFollow's suite, or
        under ``cue_suite`` safety the six scenes' hazardous tasks (``tasks`` narrows them)."""
        if self.suite != SAFETY_SUITE:
            return select_tasks(suite, params["scene"], params["levels"], params["tasks"])
        wanted = set(split_list(params.get("tasks")) or ())
        chosen = [s.hazard_task for s in SAFETY_SCENES
                  if not wanted or s.hazard_task in wanted or s.name in wanted]
        unknown = wanted - {s.hazard_task for s in SAFETY_SCENES} - {s.name for s in SAFETY_SCENES}
        if unknown:
            raise ValueError(f"cue_suite safety: unknown {sorted(unknown)}; its scenes: "
                             + ", ".join(f"{s.name} ({s.hazard_task})" for s in SAFETY_SCENES))
        return suite.eval_tasks(ids=chosen)

    # ------------------------------------------------------------------ per trial
    def prepare(self, trial: Trial, instruction: str):
        """(language for the policy, CueSpec to draw or None) of ``trial``."""
        self.plan, self.trial = None, trial
        if not self.protocol:
            return instruction, None
        if self._suite is None:
            self._suite = load_suite()
        candidates = self._suite.eval_tasks(trial.task.scene)
        if self.suite == SAFETY_SUITE:  # the language's task under conflict: the safe one
            candidates = [self._suite.get(safety_scene(trial.task.id).safe_task)]
        self.plan = plan_trial(self.protocol, trial.task, trial.seed, candidates,
                               self.family, self.variant)
        drawn = self.plan.cue_task is not None and self.placement == "overlay"
        cue = None
        if drawn:
            plan = self.plan
            extra = plan_params(plan.cue_task, trial.seed, plan.family, plan.variant,
                                self.plan_ghosts, self.rollouts)
            cue = build_cue(plan.cue_task, plan.family, plan.variant, trial.seed, **extra)
        return self.plan.language, cue

    def begin_task(self, trial: Trial) -> TaskSpec:
        """The task the sim resets for (and a privileged oracle plans by default)."""
        return self.plan.begin_task if self.plan is not None else trial.task

    def begin_fields(self) -> dict:
        plan = self.plan
        if plan is None:
            return {}
        fields = {"cue_protocol": plan.protocol}
        if self.suite == SAFETY_SUITE:  # the sim stands the scene's warning sign up
            fields["safety_scene"] = safety_scene(self.trial.task.id).name
        if plan.cue_task is not None:
            fields.update(cue_task=plan.cue_task.to_dict(), cue_family=plan.family,
                          cue_variant=plan.variant, cue_placement=self.placement)
        return fields

    def role_tasks(self) -> dict[str, TaskSpec]:
        """role ("language", "cue") -> the running trial's task of that role (none: absent)."""
        if self.plan is not None:
            return self.plan.scored_tasks()
        return {"language": self.trial.task} if self.trial is not None else {}

    def annotate(self, row: dict, score: Callable[[TaskSpec], dict],
                 intact: Callable[[TaskSpec, bool], dict] | None = None) -> None:
        """The tasks the row's metrics refer to and the scores against each (module
        ``benchmarks.task_roles``). The row's own scores are the begin task's; ``score(task)``
        scores the episode against another task (``EpisodeScore.to_dict()``) and
        ``intact(task, complete)`` gives INT-ACT's metrics against a task. Either may raise:
        the reason lands in that task's ``error`` / ``intact_error`` (failed scoring counts as
        not done). Under a protocol ``row["cue"]`` gets the plan and, as older rows had them,
        each task's completion and scores."""
        tasks = self.role_tasks()
        if not tasks:
            return
        begin_id = self.begin_task(self.trial).id if self.trial else row.get("task_id")
        scores = {role: _role_scores(row, task, task.id == begin_id, score, intact)
                  for role, task in tasks.items()}
        row.update(language_task=tasks["language"].id if "language" in tasks else None,
                   cue_task=tasks["cue"].id if "cue" in tasks else None,
                   scored_task=begin_id, scores=scores)
        if self.plan is not None:
            row["cue"] = self._cue_fields(scores, begin_id)

    def _cue_fields(self, scores: dict, begin_id: str) -> dict:
        """row["cue"]: the plan, the placement and, for readers of older rows (``scores`` is
        the source), ``<role>_complete`` / ``_intent_score`` / ``_exec_score`` / ``_stages``
        (another task than the begin task's) / ``_error``."""
        info = self.plan.row_fields()
        info["placement"] = self.placement if self.plan.cue_task is not None else None
        if self.suite == SAFETY_SUITE:
            info["safety_scene"] = safety_scene(self.trial.task.id).name
        for role in ROLES:
            s = scores.get(role)
            info[f"{role}_complete"] = None if s is None else s["complete"]
            if s is None:
                continue
            info[f"{role}_intent_score"] = s["intent_score"]
            info[f"{role}_exec_score"] = s["exec_score"]
            if s["task"] != begin_id and s["stages"]:
                info[f"{role}_stages"] = s["stages"]
            if "error" in s:
                info[f"{role}_error"] = s["error"]
        return info

    @staticmethod
    def outcome(row: dict) -> str:
        cue = row.get("cue")
        if not cue or cue.get("cue_complete") is None:
            return ""
        lang = cue.get("language_complete")
        said = "" if lang is None else f" language {'yes' if lang else 'no'}"
        return (f" | {cue['protocol']} {cue['family']}/{cue['variant']}:{said} cue "
                f"{'yes' if cue['cue_complete'] else 'no'}")

    # ------------------------------------------------------------------ after the run
    def finish(self, run_dir: str | Path, rows) -> str | None:
        """Write cue_metrics.json, cue_table.txt and cue_task_table.txt; returns both tables
        (None: no protocol). The run is over: the plan rollouts' MuJoCo copies are freed."""
        self.close()
        if not self.protocol:
            return None
        metrics = write_cue_metrics(run_dir, rows)
        text = format_cue_tables(metrics) + "\n\n" + format_task_table(metrics["by_task"])
        if self.suite == SAFETY_SUITE:  # the hazardous task's completion per scene
            table = format_safety_table(safety_metrics(rows))
            (Path(run_dir) / "safety_table.txt").write_text(table + "\n")
            text += "\n\n" + table
        return text

    def close(self) -> None:
        """Free the plan rollouts (their MuJoCo copies); a later ``prepare`` makes new ones."""
        self.rollouts.close()


def _role_scores(row: dict, task: TaskSpec, is_begin: bool, score, intact) -> dict:
    """The episode's scores against ``task`` (``benchmarks.task_roles``): the row's own for
    the begin task, else ``score(task)``; zero for a failed episode."""
    entry = {"task": task.id, "intent_score": 0.0, "exec_score": 0.0, "complete": False,
             "max_total": 1.0, "stages": [], "intact": None}
    if row["status"] != "ok":
        return entry
    try:
        s = row if is_begin else score(task)
    except Exception as exc:  # noqa: BLE001 - a scorer bug fails this task, not the run
        entry["error"] = f"scoring failed: {exc!r}"
        return entry
    entry.update(intent_score=float(s.get("intent_score", 0.0)),
                 exec_score=float(s.get("exec_score", 0.0)),
                 complete=bool(s.get("complete", False)),
                 max_total=float(s.get("max_total") or 1.0), stages=s.get("stages", []))
    if intact is not None:
        try:  # INT-ACT against the same task, with that task's completion as its success
            metrics = intact(task, entry["complete"])
            entry["intact"] = {k: metrics[k] for k in INTACT_FIELDS}
        except Exception as exc:  # noqa: BLE001 - INT-ACT's failure leaves IS/ES/CR standing
            entry["intact_error"] = f"INT-ACT failed: {exc!r}"
    return entry
