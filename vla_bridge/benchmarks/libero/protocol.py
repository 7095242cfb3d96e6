"""The LIBERO evaluation protocol as data and arithmetic, without LIBERO, MuJoCo or ROS: the
suites' tasks (a catalog read from LIBERO's BDDL files), the trial plan, and per-task and
per-suite success with 95 % Wilson intervals.

The evaluator runs in the graph's main virtualenv, where `libero` is not installed, so the
task list comes from `config/libero/suites.json`: LIBERO's own task names, instructions and
BDDL goals, written from the installed package by

    .venv-libero/bin/python -m vla_bridge.sim_nodes.libero.backend --write-catalog

(a test compares it with the installed package).

A trial is one task of a suite from one of its 50 shipped initial states: episode id
`SUITE/TASK/INIT`, layout `TASK:INIT` for the sim, and the task's seed `seed` (7 by default),
as openpi's LIBERO loop (`examples/libero/main.py`) seeds: `env.seed(seed)` once per task, then
the initial states in order, so initial state INIT sees the generator after INIT resets. The
sim reproduces that generator whatever order the trials run in (`sim_nodes/libero/backend.py`,
"Seeding"): LIBERO draws the furniture's poses at every reset and an initial state does not
restore them, so this is what makes a scene openpi's. `SEEDING` names the scheme for run.json.
`report_markdown` writes a run's report.md.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from vla_bridge.benchmarks.result_rows import counted
from vla_bridge.paths import config_path

CATALOG = "libero/suites.json"
STANDARD_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
#: how a trial's seed makes its scene (run.json records it; a resume under another is refused):
#: openpi's, one seed per task, initial state k after the k resets before it. Before it was
#: named, each initial state had its own seed (seed + INIT, one reset): the furniture of
#: initial states 1-49 was not openpi's.
SEEDING = "openpi_per_task"


def load_catalog() -> dict:
    """{suite: [{"index", "name", "instruction", "goal"}, ...]} from config/libero/."""
    return json.loads(config_path(CATALOG).read_text())


@dataclass(frozen=True)
class LiberoTrial:
    suite: str
    task_index: int
    init: int
    name: str
    instruction: str
    goal: list
    seed: int

    @property
    def episode(self) -> str:
        return f"{self.suite}/{self.task_index}/{self.init}"

    @property
    def layout(self) -> str:
        return f"{self.task_index}:{self.init}"

    def task(self) -> dict:
        """The begin message's task (the sim reads scene and layout; privileged policies the
        goal)."""
        return {"scene": self.suite, "layout": self.layout, "id": self.episode,
                "name": self.name, "goal": self.goal}


def parse_ints(text: str, upper: int, what: str) -> list[int]:
    """"" (all of 0..upper-1), "3", "0-9" or "0,4,7-9" as sorted ints, checked in range."""
    if not str(text).strip():
        return list(range(upper))
    out: set[int] = set()
    for part in str(text).split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"{what} must be numbers or ranges like 0-9, got {text!r}") from None
        if not 0 <= a <= b < upper:
            raise ValueError(f"{what} {part.strip()!r} out of range 0..{upper - 1}")
        out.update(range(a, b + 1))
    return sorted(out)


def plan_trials(suites: str | list[str], tasks: str = "", inits: str = "0",
                seed: int = 7, catalog: dict | None = None) -> list[LiberoTrial]:
    """Trials of `suites` (comma-separated; "" = the four standard suites) x task numbers x
    initial states, in that order; every trial of a task has the task's seed `seed` (SEEDING)."""
    catalog = catalog or load_catalog()
    names = [s.strip() for s in suites.split(",")] if isinstance(suites, str) else list(suites)
    names = [s for s in names if s] or list(STANDARD_SUITES)
    unknown = [s for s in names if s not in catalog]
    if unknown:
        raise ValueError(f"unknown LIBERO suite(s) {unknown}; known: {sorted(catalog)}")
    trials = []
    for suite in names:
        entries = catalog[suite]
        for t in parse_ints(tasks, len(entries), "tasks"):
            for init in parse_ints(inits, 50, "inits"):
                e = entries[t]
                trials.append(LiberoTrial(suite, t, init, e["name"], e["instruction"],
                                          e["goal"], int(seed)))
    return trials


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate (0, 0 for no trials)."""
    if n == 0:
        return 0.0, 0.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _stats(rows: list[dict]) -> dict:
    n, k = len(rows), sum(bool(r.get("success")) for r in rows)
    lo, hi = wilson(k, n)
    walls = [r["wall_s"] for r in rows if isinstance(r.get("wall_s"), (int, float))]
    return {"episodes": n, "successes": k, "success_rate": k / n if n else 0.0,
            "ci95": [round(lo, 4), round(hi, 4)],
            "mean_wall_s": round(sum(walls) / len(walls), 3) if walls else None}


def summarize(rows: list[dict]) -> dict:
    """Per task and per suite success (rate, 95 % Wilson interval, mean wall time) and the
    failures' reasons, from result rows ({"suite", "task_index", "success", ...}); a row of
    an episode the infrastructure failed (``benchmarks.result_rows``) is left out."""
    rows = counted(rows)
    suites: dict[str, list[dict]] = {}
    tasks: dict[str, list[dict]] = {}
    for r in rows:
        suites.setdefault(r["suite"], []).append(r)
        tasks.setdefault(f"{r['suite']}/{r['task_index']}", []).append(r)
    return {"suites": {s: _stats(v) for s, v in suites.items()},
            "tasks": {t: {**_stats(v), "name": v[0].get("name", "")} for t, v in tasks.items()},
            "overall": _stats(rows),
            "failures": {r["episode"]: failure_reason(r) for r in rows if not r.get("success")}}


def failure_reason(row: dict) -> str:
    """Why an episode failed: the sim's reason, plus what the policy said it could not do
    (`policy_note`, e.g. the LIBERO oracle's goal without a plan)."""
    reason = row.get("reason", "")
    note = row.get("policy_note")
    return f"{reason}; the policy: {note}" if note else reason


def format_summary(summary: dict) -> str:
    lines = [f"{'suite':16} {'episodes':>8} {'success %':>10} {'95% CI':>15} {'s/episode':>10}"]
    for suite, s in [*summary["suites"].items(), ("all", summary["overall"])]:
        lo, hi = s["ci95"]
        wall = f"{s['mean_wall_s']:.1f}" if s["mean_wall_s"] is not None else "-"
        lines.append(f"{suite:16} {s['episodes']:8d} {100 * s['success_rate']:10.1f} "
                     f"{f'{100 * lo:.1f}-{100 * hi:.1f}':>15} {wall:>10}")
    return "\n".join(lines)


def report_markdown(summary: dict, params: dict, cue_table: str | None = None,
                    skipped: dict | None = None) -> str:
    """report.md of a LIBERO run: success per suite and per task with 95 % intervals, the
    LIBERO-VIFO table under a cue protocol, the trials skipped and each failure's reason."""
    protocol = params.get("cue_protocol") or ""
    title = f"# LIBERO run: policy `{params['policy']}`"
    if protocol:
        title += f", cue protocol `{protocol}` {params.get('cue_family') or ''} " \
                 f"{params.get('cue_variant') or ''}".rstrip()
    lines = [title, "", "| suite | episodes | success % | 95 % CI | s / episode |",
             "|---|---|---|---|---|"]
    for suite, s in [*summary["suites"].items(), ("all", summary["overall"])]:
        lo, hi = s["ci95"]
        wall = f"{s['mean_wall_s']:.1f}" if s["mean_wall_s"] is not None else "-"
        lines.append(f"| {suite} | {s['episodes']} | {100 * s['success_rate']:.1f} | "
                     f"{100 * lo:.1f}-{100 * hi:.1f} | {wall} |")
    lines += ["", "| task | name | episodes | success % | 95 % CI |", "|---|---|---|---|---|"]
    for task, s in summary["tasks"].items():
        lo, hi = s["ci95"]
        lines.append(f"| {task} | {s['name']} | {s['episodes']} | {100 * s['success_rate']:.1f}"
                     f" | {100 * lo:.1f}-{100 * hi:.1f} |")
    if protocol:
        lines += ["", "Success is the task the protocol asks for: the language task (original, "
                  "conflict) or the cue task (authorized, no_language)."]
    if cue_table:
        lines += ["", "## LIBERO-VIFO metrics", "", "```", cue_table, "```"]
    if skipped:
        lines += ["", "## Skipped trials", ""]
        lines += [f"- `{ep}`: {why}" for ep, why in skipped.items()]
    if summary["failures"]:
        lines += ["", "## Failures", ""]
        lines += [f"- `{ep}`: {why}" for ep, why in summary["failures"].items()]
    return "\n".join(lines) + "\n"
