"""A perturbation sweep's summary (``vla-bridge sweep``): one run directory per level of one
axis (``benchmarks.perturbations``), ``DIR/L<level>``, turned into the success rate per level
with its 95 % Wilson interval: ``sweep.json``, ``sweep.md`` (a table) and ``sweep.png``
(the rate against the level, the intervals as error bars).

Success of an episode is one field of its results row (``--metric``):

* ``complete`` (RoboFollow's default): the scorer's completion (shared/robofollow/SCORING.md
  §7, ``benchmarks.robofollow.scoring.common.is_complete``): the episode reached its final
  stage (a pick-up: intent and execution both at their minimum; a placement, stack, push or
  route: the final target held). It is what the Completion Rate (CR) counts, per episode;
* ``success`` (LIBERO's default): LIBERO's goal predicates held at the end;
* any other field (a dotted path reaches into a nested one, e.g.
  ``scores.language.intact.task_success``): a boolean as it is; a number is a success at the
  full rate of ``max_total`` (§2.6, e.g. ``exec_score`` -> the execution reached 99 %).

A row of an episode the infrastructure failed, not yet counted, is left out
(``benchmarks.result_rows``, as every score does); a row whose field is missing (an episode
that errored before it was scored) is a failure. A level without a run directory or rows is
reported as missing. Pure logic apart from matplotlib (Agg), imported lazily.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vla_bridge.benchmarks import perturbations
from vla_bridge.benchmarks.result_rows import excluded
from vla_bridge.benchmarks.robofollow.scoring.common import full_rate_ok
from vla_bridge.evaluation.run_dir import RunDirectory
from vla_bridge.reporting.common import load_rows, load_run_info
from vla_bridge.reporting.pilot_report import wilson_interval

SWEEP_JSON, SWEEP_MD, SWEEP_PNG = "sweep.json", "sweep.md", "sweep.png"
CONFIDENCE = 0.95
#: the default metric of a benchmark (run.json's ``arguments.benchmark``)
DEFAULT_METRICS = {"robofollow": "complete", "libero": "success"}
METRIC_NOTES = {
    "complete": "RoboFollow completion, the scorer's `complete`: SCORING.md §7, what CR counts",
    "success": "LIBERO success: the task's goal predicates held",
}


def level_dir(out: str | Path, level: int) -> Path:
    """The run directory of one level of a sweep in ``out``."""
    return Path(out) / f"L{int(level)}"


def spec_of(axis: str, level: int) -> str | None:
    """What ``--perturb`` a level's run gets (None: level 0, unperturbed)."""
    return f"{axis}:{level}" if level else None


def check_axis(axis: str) -> str:
    """The axis, or ValueError naming the axes."""
    if axis not in perturbations.AXES:
        raise ValueError(f"unknown perturbation axis {axis!r}; the axes: "
                         + ", ".join(f"{a} (0..{top})" for a, (top, _) in
                                     perturbations.AXES.items()))
    return axis


def parse_levels(text: str | None, axis: str) -> list[int]:
    """``--levels 0,1,2`` of ``axis`` (None or "": 0..the axis's top), or ValueError."""
    top = perturbations.AXES[check_axis(axis)][0]
    if text is None or not str(text).strip():
        return list(range(top + 1))
    parts = [p.strip() for p in str(text).split(",")]
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"--levels wants comma-separated integers 0..{top} for {axis} "
                         f"(e.g. 0,1,2), got {text!r}")
    levels = [int(p) for p in parts]
    bad = [lv for lv in levels if lv > top]
    if bad:
        raise ValueError(f"{axis} has levels 0..{top}, --levels asks for {bad}")
    if len(set(levels)) != len(levels):
        raise ValueError(f"--levels names a level twice: {text!r}")
    return levels


# ------------------------------------------------------------------ rows -> figures


def field_value(row: dict, name: str) -> Any:
    """A row's field by name; a dotted name reaches into nested dicts (None: missing)."""
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def row_success(row: dict, metric: str) -> bool:
    """Whether the row's episode succeeded by ``metric`` (see the module docstring)."""
    value = field_value(row, metric)
    if isinstance(value, bool) or value is None:
        return bool(value)
    if isinstance(value, (int, float)):
        return full_rate_ok(float(value), float(row.get("max_total") or 1.0))
    return bool(value)


def default_metric(info: dict, rows: list[dict]) -> str:
    """The metric of a run: its benchmark's default; else ``success`` where rows have it."""
    benchmark = (info.get("arguments") or {}).get("benchmark")
    if benchmark in DEFAULT_METRICS:
        return DEFAULT_METRICS[benchmark]
    return "success" if any("success" in r for r in rows) else "complete"


def summarize_level(out: str | Path, axis: str, level: int, metric: str | None = None,
                    wall_s: float | None = None) -> dict:
    """One level's figures from its run directory (``missing`` says why there are none)."""
    path = level_dir(out, level)
    entry: dict[str, Any] = {"level": level, "perturbation": spec_of(axis, level),
                             "run_dir": str(path), "wall_s": wall_s}
    info = load_run_info(path)
    every = RunDirectory(path).results()
    rows = load_rows(path)
    entry.update(status=info.get("status"), metric=metric or default_metric(info, rows),
                 excluded=sum(1 for r in every if excluded(r)))
    if not rows:
        entry.update(episodes=0, successes=0, rate=None, ci95=None,
                     missing=f"no run directory {path}" if not path.is_dir()
                     else f"no results rows in {path}")
        return entry
    successes = sum(row_success(r, entry["metric"]) for r in rows)
    entry["with_metric"] = sum(1 for r in rows if field_value(r, entry["metric"]) is not None)
    lo, hi = wilson_interval(successes, len(rows), CONFIDENCE)
    entry.update(episodes=len(rows), successes=successes, rate=successes / len(rows),
                 ci95=[lo, hi], errors=sum(1 for r in rows if r.get("status") not in (None, "ok")))
    problems = _perturbation_problems(info, rows, axis, level)
    if problems:
        entry["problems"] = problems
    if wall_s is None:
        entry["wall_s"] = _run_seconds(info)
    return entry


def _perturbation_problems(info: dict, rows: list[dict], axis: str, level: int) -> list[str]:
    """What says the level's run is not of ``axis`` at ``level``, or was not applied."""
    out = []
    recorded = (info.get("provenance") or {}).get("perturbation", "absent")
    if recorded != "absent" and recorded != spec_of(axis, level):
        out.append(f"run.json's perturbation is {recorded!r}, not {spec_of(axis, level)!r}")
    if level:
        wrong = [r for r in rows if not isinstance(r.get("perturbation"), dict)
                 or r["perturbation"].get("axis") != axis
                 or r["perturbation"].get("level") != level]
        unapplied = [r for r in rows if isinstance(r.get("perturbation"), dict)
                     and r["perturbation"].get("applied") is False]
        if wrong:
            out.append(f"{len(wrong)} row(s) without the perturbation {axis}:{level}")
        if unapplied:
            out.append(f"{len(unapplied)} row(s) the sim did not perturb (applied: false)")
    elif any(r.get("perturbation") for r in rows):
        out.append("level 0 has perturbed rows")
    return out


def _run_seconds(info: dict) -> float | None:
    """run.json's started -> finished in seconds (None when either is missing)."""
    import datetime as dt
    try:
        start, end = (dt.datetime.strptime(info[k], "%Y-%m-%dT%H:%M:%S%z")
                      for k in ("started", "finished"))
    except (KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds()


def summarize_sweep(out: str | Path, axis: str, levels: list[int], metric: str | None = None,
                    walls: dict[int, float] | None = None, **extra) -> dict:
    """Every level's figures; ``extra`` (graph, launch arguments, a stop) kept as given."""
    walls = walls or {}
    per_level = [summarize_level(out, axis, lv, metric, walls.get(lv)) for lv in levels]
    if metric and any(e["episodes"] for e in per_level) \
            and not any(e.get("with_metric") for e in per_level):
        raise ValueError(f"no results row has the field {metric!r} (--metric); e.g. complete "
                         "(RoboFollow), success (LIBERO), exec_ok, intent_ok")
    metrics = {e["metric"] for e in per_level if e["episodes"]}
    used = metric or (metrics.pop() if len(metrics) == 1 else
                      next((e["metric"] for e in per_level), "complete"))
    top, description = perturbations.AXES[axis]
    return {"axis": axis, "description": description, "top_level": top, "metric": used,
            "metric_note": METRIC_NOTES.get(used, f"the rows' {used!r}"),
            "confidence": CONFIDENCE, **extra, "levels": per_level}


def stored_sweep(out: str | Path) -> dict:
    """A sweep directory's sweep.json ({} when missing or unreadable)."""
    try:
        return json.loads((Path(out) / SWEEP_JSON).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def found_levels(out: str | Path) -> list[int]:
    """The levels whose run directories (``L<level>``) lie in ``out``, in order."""
    return sorted(int(p.name[1:]) for p in Path(out).glob("L*")
                  if p.is_dir() and p.name[1:].isdigit())


def found_axis(out: str | Path) -> str | None:
    """The axis the run directories of ``out`` were perturbed on (their run.json)."""
    for level in found_levels(out):
        spec = (load_run_info(level_dir(out, level)).get("provenance") or {}).get("perturbation")
        if spec:
            return str(spec).partition(":")[0]
    return None


# ------------------------------------------------------------------ outputs


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_markdown(summary: dict) -> str:
    """sweep.md: the axis, the metric and one table row per level."""
    lines = [f"# Sweep: {summary['axis']}", "",
             f"{summary['description']} (levels 0..{summary['top_level']}; level 0 unperturbed).",
             f"Success: `{summary['metric']}` ({summary['metric_note']}); "
             "rows failed by the infrastructure are left out.", ""]
    if summary.get("graph"):
        args = " ".join(summary.get("launch_args") or [])
        lines += [f"Graph: `{summary['graph']}`" + (f", launch arguments `{args}`" if args else ""),
                  ""]
    lines += ["| level | perturbation | episodes | successes | success rate | 95% interval "
              "| left out | wall s | run |",
              "|---|---|---|---|---|---|---|---|---|"]
    for e in summary["levels"]:
        if e["episodes"]:
            lo, hi = e["ci95"]
            cells = [str(e["episodes"]), str(e["successes"]), _pct(e["rate"]),
                     f"{_pct(lo)} - {_pct(hi)}"]
        else:
            cells = ["0", "-", f"missing: {e['missing']}", "-"]
        wall = "-" if e.get("wall_s") is None else f"{e['wall_s']:.0f}"
        lines.append("| " + " | ".join([str(e["level"]), e["perturbation"] or "none", *cells,
                                        str(e.get("excluded", 0)), wall,
                                        f"`{e['run_dir']}`"]) + " |")
    notes = [f"- level {e['level']}: {p}" for e in summary["levels"] for p in e.get("problems", [])]
    if summary.get("stopped"):
        notes.insert(0, f"- stopped: {summary['stopped']}")
    if notes:
        lines += ["", "Notes:", "", *notes]
    return "\n".join(lines) + "\n"


def plot_sweep(summary: dict, path: str | Path) -> Path:
    """sweep.png: success rate (percent) against the level, 95 % intervals as error bars;
    missing levels are left out of the line."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    done = [e for e in summary["levels"] if e["episodes"]]
    x = [e["level"] for e in done]
    y = [100 * e["rate"] for e in done]
    err = [[100 * (e["rate"] - e["ci95"][0]) for e in done],
           [100 * (e["ci95"][1] - e["rate"]) for e in done]]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.errorbar(x, y, yerr=err, marker="o", capsize=4, color="C0", label="success (95% CI)")
    for e in done:
        ax.annotate(f"n={e['episodes']}", (e["level"], 100 * e["rate"]), fontsize=8,
                    textcoords="offset points", xytext=(6, -12))
    levels = [e["level"] for e in summary["levels"]] or [0]
    ax.set_xticks(levels)
    ax.set_xlim(min(levels) - 0.5, max(levels) + 0.5)
    ax.set_xlabel(f"{summary['axis']} level")
    ax.set_ylabel(f"success rate, % ({summary['metric']})")
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)
    ax.set_title(f"{summary['axis']}: {summary['description']}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_sweep(out: str | Path, summary: dict) -> list[Path]:
    """sweep.json, sweep.md and sweep.png in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SWEEP_JSON).write_text(json.dumps(summary, indent=1) + "\n")
    (out / SWEEP_MD).write_text(format_markdown(summary))
    return [out / SWEEP_JSON, out / SWEEP_MD, plot_sweep(summary, out / SWEEP_PNG)]


def progress(summary_levels: list[dict]) -> str:
    """The figures so far, for the sweep's progress line: "L0 3/4, L1 2/4"."""
    parts = [f"L{e['level']} {e['successes']}/{e['episodes']}" if e["episodes"]
             else f"L{e['level']} -" for e in summary_levels]
    return ", ".join(parts) or "none yet"
