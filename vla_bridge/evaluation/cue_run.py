"""One evaluation run's visual-cue protocol, without ROS (the evaluator node is its shell).

``CueRun`` holds the run's settings (protocol, family, variant, placement) and, per trial:

* ``prepare(trial, instruction)``: plans the trial (``protocols.plan_trial``) and returns the
  policy's language and the cue to draw into the images (None when nothing is drawn: no
  protocol, ``original``, or a cue placed in the scene, which the sim node builds from
  ``begin_fields``);
* ``begin_task`` / ``begin_fields``: what the ``begin`` message carries;
* ``annotate(row, score)``: ``row["cue"]``, the protocol, both tasks and whether the episode
  completed each (``score(task)`` scores the episode against a task);
* ``outcome(row)``: the progress line's cue part; ``finish(run_dir, rows)`` writes
  cue_metrics.json and cue_table.txt and returns the table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from vla_bridge.benchmarks.robofollow.tasks import TaskSpec, Trial, load_suite

from vla_bridge.benchmarks.vifo.protocols import (TrialCue, build_cue, check_placement,
                                                  check_protocol, format_cue_table, plan_trial,
                                                  resolve_family_variant)
from vla_bridge.evaluation.cue_metrics import write_cue_metrics

__all__ = ["CueRun"]


class CueRun:
    def __init__(self, protocol: str = "", family: str = "", variant: str = "",
                 placement: str = "overlay"):
        self.protocol = check_protocol(protocol)
        self.family = self.variant = None
        if self.shows_cues:
            self.family, self.variant = resolve_family_variant(family, variant)
        # overlay: drawn into the images the policy reads; scene: a card in the sim's scene
        self.placement = check_placement(placement, self.family)
        self.plan: TrialCue | None = None  # the running trial's plan
        self._suite = None

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

    # ------------------------------------------------------------------ per trial
    def prepare(self, trial: Trial, instruction: str):
        """(language for the policy, CueSpec to draw or None) of ``trial``."""
        self.plan = None
        if not self.protocol:
            return instruction, None
        if self._suite is None:
            self._suite = load_suite()
        candidates = self._suite.eval_tasks(trial.task.scene)
        self.plan = plan_trial(self.protocol, trial.task, trial.seed, candidates,
                               self.family, self.variant)
        drawn = self.plan.cue_task is not None and self.placement == "overlay"
        cue = (build_cue(self.plan.cue_task, self.plan.family, self.plan.variant, trial.seed)
               if drawn else None)
        return self.plan.language, cue

    def begin_task(self, trial: Trial) -> TaskSpec:
        """The task the sim resets for (and a privileged oracle plans by default)."""
        return self.plan.begin_task if self.plan is not None else trial.task

    def begin_fields(self) -> dict:
        plan = self.plan
        if plan is None:
            return {}
        fields = {"cue_protocol": plan.protocol}
        if plan.cue_task is not None:
            fields.update(cue_task=plan.cue_task.to_dict(), cue_family=plan.family,
                          cue_variant=plan.variant, cue_placement=self.placement)
        return fields

    def annotate(self, row: dict, score: Callable[[TaskSpec], dict]) -> None:
        """row["cue"]: the protocol, both tasks and whether each was completed. The row's own
        scores are the begin task's; ``score(task)`` scores the episode against the other
        (it may raise: the reason lands in ``<role>_error`` and the task counts as not done)."""
        plan = self.plan
        if plan is None:
            return
        info = plan.row_fields()
        info["placement"] = self.placement if plan.cue_task is not None else None
        ok = row["status"] == "ok"
        for role, task in (("language", plan.language_task), ("cue", plan.cue_task)):
            if task is None:
                info[f"{role}_complete"] = None
            elif task.id == plan.begin_task.id:
                info[f"{role}_complete"] = bool(ok and row["complete"])
                info[f"{role}_intent_score"] = row["intent_score"] if ok else 0.0
                info[f"{role}_exec_score"] = row["exec_score"] if ok else 0.0
            else:
                s = self._score_other(score, task, role, info) if ok else {}
                info[f"{role}_complete"] = bool(s.get("complete", False))
                info[f"{role}_intent_score"] = s.get("intent_score", 0.0)
                info[f"{role}_exec_score"] = s.get("exec_score", 0.0)
                if s:
                    info[f"{role}_stages"] = s.get("stages", [])
        row["cue"] = info

    @staticmethod
    def _score_other(score, task: TaskSpec, role: str, info: dict) -> dict:
        try:
            return score(task)
        except Exception as exc:  # noqa: BLE001 - a scorer bug fails this task, not the run
            info[f"{role}_error"] = f"scoring failed: {exc!r}"
            return {}

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
        """Write cue_metrics.json / cue_table.txt; returns the table (None: no protocol)."""
        if not self.protocol:
            return None
        return format_cue_table(write_cue_metrics(run_dir, rows))
