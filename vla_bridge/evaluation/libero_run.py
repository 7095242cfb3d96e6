"""LIBERO behind the one engine: its suites, scored by LIBERO's own goal predicates.

Plans the trials from the catalog (``benchmarks.libero.protocol.plan_trials``: suites x tasks x
initial states) and, under a LIBERO-VIFO protocol (``cue_protocol``: original, authorized,
conflict, no_language; ``benchmarks.libero.vifo``), which task the language names and which the
cue shows. Each ``begin`` carries the task ({"scene": suite, "layout": "TASK:INIT", "goal",
"goals", "end_on"}), ``cue_task``, the seed, ``max_steps`` and ``max_actions_per_call``; the
sim's ``done`` says whether LIBERO's predicates held (``success``, and per role ``goals``).
The summary is success per task and per suite with 95 % Wilson intervals (``report.md``); under
a cue protocol also ``cue_metrics.json`` / ``cue_table.txt`` (Table 2's metrics). A run of
INT-ACT's LIBERO probes (suite ``libero_intact``, ``benchmarks.intact.libero_probes``) records
the episodes' frames, scores each row's INT-ACT metrics from them (``row["intact"]``) and
writes intact.json / intact.md (``benchmarks.intact.tables``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from vla_bridge import contract as C
from vla_bridge.benchmarks.intact import libero_probes
from vla_bridge.benchmarks.intact import tables as intact_report
from vla_bridge.benchmarks.intact.metrics import libero_metrics
from vla_bridge.benchmarks.libero import vifo
from vla_bridge.benchmarks.task_roles import INTACT_FIELDS
from vla_bridge.benchmarks.libero.protocol import (SEEDING, format_summary, load_catalog,
                                                   plan_trials, report_markdown, summarize)
from vla_bridge.benchmarks.vifo.protocols import resolve_family_variant
from vla_bridge.evaluation.benchmark import Benchmark, EpisodeOutcome, EpisodePlan
from vla_bridge.evaluation.cues.metrics import format_cue_tables, write_cue_metrics
from vla_bridge.evaluation.provenance import checkpoint_of, execution_of, git_commit
from vla_bridge.evaluation.run_dir import RunDirectory
from vla_bridge.ros.node_config import param


@dataclass(frozen=True)
class LiberoConfig:
    """LIBERO's run parameters (config/libero_sim.yaml sets them for the graph)."""
    suites: str = param("libero_spatial", "comma-separated LIBERO suites (\"\" = spatial, "
                                          "object, goal, 10)")
    tasks: str = param("", "task numbers within each suite, e.g. 0-4 or 0,3 (\"\" = all)")
    inits: str = param("0", "initial states of each task, e.g. 0-49 (the full protocol)")
    seed: int = param(7, "base seed (episode seed = seed + initial state)")
    max_steps: int = param(0, "step budget per episode (0: the suite's: 220/280/300/520; a "
                              "LIBERO-PRO suite's is its base suite's)")
    actions_per_call: int = param(5, "actions executed per policy call (openpi's LIBERO "
                                     "replanning: 5)")
    cue_protocol: str = param("", "LIBERO-VIFO protocol: '' (off), original, authorized, "
                                  "conflict, no_language")
    cue_family: str = param("", "visual-cue family F1..F8 (authorized, conflict, no_language)")
    cue_variant: str = param("", "variant of the cue family ('' = the family's default)")
    # provenance (run.json's execution): the policy node's settings, set by the same launch
    # arguments
    chunk_size: int = param(5, "provenance: the policy node's chunk_size")
    image_source: str = param("raw", "provenance: the policy node's image_source")
    oracle_follow: str = param("language", "provenance: the policy node's follow (the oracle's "
                                           "task under a cue protocol)")


#: the provenance's ``execution`` settings of a LIBERO run (the oracle's task: under a protocol)
EXECUTION = ("chunk_size", "image_source")
EMBODIMENT = C.LIBERO_PANDA


class LiberoRun(Benchmark):
    name = "libero"
    Config = LiberoConfig
    records_frames = False  # LIBERO's predicates score the episode: the sim's done says

    def __init__(self, params: dict, log, catalog: dict | None = None):
        super().__init__(params, log)
        self.planned_keys: set[str] = set()
        self.catalog = catalog if catalog is not None else load_catalog()
        self.protocol = str(params.get("cue_protocol") or "").strip()
        suites = [x.strip() for x in str(params.get("suites") or "").split(",")]
        #: INT-ACT's probes: their metrics need the episodes' frames (the world state)
        self.records_frames = libero_probes.SUITE in suites
        if self.records_frames and self.protocol:
            raise ValueError(f"{libero_probes.SUITE} runs without a cue protocol")
        self.family = self.variant = None
        if self.protocol not in ("", "original"):
            self.family, self.variant = resolve_family_variant(str(params["cue_family"]),
                                                               str(params["cue_variant"]))

    # ------------------------------------------------------------------ before the run
    def plan(self) -> list[vifo.LiberoCueTrial]:
        p = self.p
        trials = plan_trials(p["suites"], p["tasks"], p["inits"], int(p["seed"]), self.catalog)
        planned = vifo.plan_cue_trials(trials, self.protocol, self.family, self.variant,
                                       self.catalog)
        self.skipped = {t.key: t.skip for t in planned if t.skip}
        if self.skipped:
            self.log.info(f"{len(self.skipped)} trials skipped "
                          f"({'; '.join(sorted(set(self.skipped.values())))}); run.json lists "
                          "them under skipped_tasks")
        kept = [t for t in planned if not t.skip]
        self.planned_keys = {t.key for t in kept}
        if not kept:
            raise ValueError("no trial to run: " + (next(iter(self.skipped.values()))
                                                    if self.skipped else "the selection is empty"))
        return kept

    def provenance(self) -> dict:
        """run.json's provenance. Its ``budget`` is the whole episode protocol, which a resume
        compares (a directory run under another protocol is refused): ``max_steps`` (0: each
        suite's ``step_budget``), ``actions_per_call`` (= ``replan_steps``, openpi's 5), the
        sim's ``settle_steps`` and the ``seeding`` (``protocol.SEEDING``: one seed per task, as
        openpi's loop gives it; directories from before it was recorded seeded each initial
        state with seed + INIT)."""
        from vla_bridge.sim_nodes.libero.backend import SETTLE_STEPS, STEP_BUDGET
        p = self.p
        apc = int(p["actions_per_call"])
        return {"policy": str(p["policy"]), "checkpoint": checkpoint_of(str(p["policy"])),
                "hardware": "sim:libero",
                "cue": {"protocol": p["cue_protocol"] or None,
                        "family": p["cue_family"] or None, "variant": p["cue_variant"] or None},
                "base_seed": int(p["seed"]),
                "budget": {"max_steps": int(p["max_steps"]), "actions_per_call": apc,
                           "step_budget": dict(STEP_BUDGET), "settle_steps": SETTLE_STEPS,
                           "replan_steps": apc, "seeding": SEEDING},
                "latency": None,
                "execution": execution_of(p, EXECUTION + (("oracle_follow",) if self.protocol
                                                          else ())),
                "git_commit": git_commit()}

    # ------------------------------------------------------------------ one episode
    def cue_of(self, ct: vifo.LiberoCueTrial):
        """The CueSpec the overlay draws for the trial (None: none)."""
        if not ct.family:
            return None
        entry = self.catalog[ct.trial.suite][ct.trial.task_index]
        return vifo.build_cue(entry, ct.family, ct.variant)

    def prepare(self, ct: vifo.LiberoCueTrial) -> EpisodePlan:
        apc = int(self.p["actions_per_call"])
        max_steps = int(self.p["max_steps"]) or None
        begin = {"task": ct.begin_task(), "seed": ct.trial.seed,
                 "max_policy_calls": math.ceil((max_steps or 600) / apc) + 1,
                 "max_actions_per_call": apc}
        if ct.family:
            begin["cue_task"] = ct.cue_task_spec()
        if max_steps:
            begin["max_steps"] = max_steps
        return EpisodePlan(ct.language, begin, self.cue_of(ct))

    def perturbation_seed(self, ct: vifo.LiberoCueTrial) -> int:
        """The task's seed plus the initial state: openpi's seeding gives every initial state
        of a task the same episode seed, which would give them one perturbation draw."""
        return ct.trial.seed + ct.trial.init

    def _row(self, ct: vifo.LiberoCueTrial, plan: EpisodePlan) -> dict:
        trial = ct.trial
        return {"key": ct.key, "episode": ct.key, "suite": trial.suite,
                "task_index": trial.task_index, "init": trial.init, "name": trial.name,
                "instruction": plan.instruction, "seed": trial.seed, "policy": self.p["policy"]}

    def scored_row(self, run_dir: RunDirectory, ct: vifo.LiberoCueTrial, plan: EpisodePlan,
                   outcome: EpisodeOutcome, fields: dict) -> dict:
        done, ready = outcome.done, outcome.ready
        row = self._row(ct, plan)
        if (ready.get("policy") or {}).get("note"):  # what the policy said it cannot do
            row["policy_note"] = ready["policy"]["note"]
        # each role's task done; without a protocol the loaded task is the language's
        goals = done.get("goals") or ({} if ct.protocol else
                                      {"language": bool(done.get("success"))})
        success = goals.get(ct.end_role or "language", False)
        row.update(success=bool(success), steps=done.get("steps"), calls=done.get("calls"),
                   reason=done.get("reason", ""), wall_s=round(outcome.run_s, 3),
                   reset_s=round(outcome.reset_s, 3), status="ok")
        row.update(role_fields(ct, goals, ok=True))
        held = [r for r, v in ((ready.get("sim") or {}).get("held_at_start") or {}).items() if v]
        if held:
            row["held_at_start"] = held  # such a goal counts as done from the first step
        if ct.trial.suite == libero_probes.SUITE:
            self._score_intact(row, ct, outcome)
        return row

    def _score_intact(self, row: dict, ct: vifo.LiberoCueTrial, outcome: EpisodeOutcome) -> None:
        """A probe's row: its id and subcategory, and INT-ACT's metrics from the frames (an
        error names itself in ``intact_error`` and leaves the row's LIBERO result)."""
        probe = libero_probes.by_index(ct.trial.task_index)
        row.update(task_id=probe.id, subcategory=probe.subcategory, source=probe.source_object)
        try:
            metrics = libero_metrics(probe, outcome.record, row["success"])
            row["intact"] = {k: metrics[k] for k in INTACT_FIELDS}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            row["intact_error"] = repr(exc)

    def failed_row(self, ct: vifo.LiberoCueTrial, plan: EpisodePlan, error: str,
                   wall_s: float) -> dict:
        row = self._row(ct, plan)
        row.update(success=False, reason=f"episode failed: {error}", status="error",
                   wall_s=round(wall_s, 3))
        row.update(role_fields(ct, {}, ok=False))
        return row

    def progress_line(self, ct, row: dict, i: int, total: int, elapsed: float) -> str:
        roles = ", ".join(f"{role} task {'done' if s['complete'] else 'not done'}"
                          for role, s in (row.get("scores") or {}).items())
        return (f"[{i}/{total}] {row['episode']} {row['instruction']!r}: "
                f"{'success' if row['success'] else 'failure'} after {row.get('steps')} steps "
                f"({row['wall_s']:.1f} s; {row['reason']}{'; ' + roles if roles else ''})")

    # ------------------------------------------------------------------ after the run
    def planned(self, rows: list[dict]) -> list[dict]:
        """The rows of this run's planned trials (a directory may hold other suites' too)."""
        return [r for r in rows if r.get("key") in self.planned_keys]

    def summarize(self, rows: list[dict]) -> dict:
        return summarize(self.planned(rows))

    def report(self, run_dir: RunDirectory, rows: list[dict], summary: dict,
               latency: dict) -> list[str]:
        rows = self.planned(rows)
        cue_table = None
        if any((r.get("cue") or {}).get("protocol") for r in rows):
            cue_table = format_cue_tables(write_cue_metrics(run_dir.path, rows))
        (run_dir.path / "report.md").write_text(report_markdown(summary, self.p, cue_table,
                                                                self.skipped))
        lines = [format_summary(summary), *([cue_table] if cue_table else [])]
        probe_rows = [r for r in rows if r.get("suite") == libero_probes.SUITE]
        if probe_rows:
            lines.append(intact_report.write(run_dir.path, probe_rows,
                                             list(libero_probes.probes())))
        return lines


def role_fields(ct: vifo.LiberoCueTrial, goals: dict, ok: bool) -> dict:
    """The row's tasks (`benchmarks.task_roles`): each role's task and whether LIBERO's
    predicates say it was completed; the cue protocol's fields under `cue`."""
    tasks = {"language": ct.language_task, "cue": ct.cue_task}
    scores = {role: {"task": task, "complete": bool(ok and goals.get(role))}
              for role, task in tasks.items() if task is not None}
    out = {"language_task": ct.language_task, "cue_task": ct.cue_task,
           "scored_task": ct.language_task or ct.cue_task, "scores": scores}
    if ct.protocol:
        out["cue"] = ct.row_fields()
    return out
