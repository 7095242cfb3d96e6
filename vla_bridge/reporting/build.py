"""Putting the report together: the options, ``build_report`` (every table and section as
one JSON-able dict, plots and videos written when asked) and ``write_report`` (report.md
and report.json into the run directory).

The sections come from the flags of this call added to those of the run's earlier report
(``memory``: a flag adds a section, never drops one; ``reset`` starts over)."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from vla_bridge.benchmarks.task_roles import tasks_differ
from vla_bridge.reporting import pilot_report
from vla_bridge.reporting import memory
from vla_bridge.reporting.common import ReportError, load_rows, load_run_info
from vla_bridge.reporting.html import REPORT_HTML, format_html
from vla_bridge.reporting.markdown import format_markdown
from vla_bridge.reporting.paper import beside_paper, load_paper, paper_model
from vla_bridge.reporting.plots import plot_levels
from vla_bridge.reporting.sections import cue_table, intact_rates
from vla_bridge.reporting.tables import (DEFAULT_BOOT, DEFAULT_CONFIDENCE, DEFAULT_SEED,
                                                 compare_runs, results_table, task_tables)
from vla_bridge.reporting.videos import VIDEO_CAMERA, render_videos, replayable
from vla_bridge.evaluation.run_dir import latency_summary


@dataclass
class ReportOptions:
    paper_model: str | None = None
    plots: bool = False
    videos: int = 0
    compare: str | Path | None = None
    n_boot: int = DEFAULT_BOOT
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE
    video_stride: int = 2
    video_fps: float | None = None
    video_format: str = "mp4"
    camera: str = VIDEO_CAMERA
    video_view: str | None = None  # "cued" | "raw" | "both"; None: cued if the episode had a cue
    video_trim_idle: bool = True  # cut the videos a second after the last motion
    reset: bool = False  # forget the sections of the run's earlier report (memory)
    paper_file: str | Path | None = None
    progress_stream: Any = field(default=None, repr=False)


def _empty_language(info: dict) -> bool | None:
    value = (info.get("arguments") or {}).get("empty_language")
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return None if value is None else bool(value)


def _header(run_dir: Path, info: dict, opts: ReportOptions) -> dict[str, Any]:
    """The report's first fields: the run, its run.json, the units and the method."""
    return {
        "run_dir": str(run_dir), "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "run": {"status": info.get("status"), "started": info.get("started"),
                "finished": info.get("finished"), "arguments": info.get("arguments", {}),
                "versions": info.get("versions", {}), "provenance": info.get("provenance"),
                "provenance_note": info.get("provenance_note")},
        "units": "percent",
        "method": {"point": "summary.json's: mean IS/ES over episodes, task-macro CR",
                   "interval": "percentile bootstrap over tasks, stratified by scene/level",
                   "n_boot": opts.n_boot, "seed": opts.seed, "confidence": opts.confidence},
        "errors": [],
    }


def _compare(report: dict, run_dir: Path, info: dict, rows: list[dict], table: dict,
             paper: dict | None, opts: ReportOptions, other: Path) -> tuple[dict | None, dict]:
    """Fill report["compare"] (the empty-language drop with `other`); returns the tables the
    plots show: (the empty-language run's, ours: the normal run's)."""
    other_rows = load_rows(other)
    if not other_rows:
        raise ReportError(f"{other}: no results to compare with")
    flags = (_empty_language(info), _empty_language(load_run_info(other)))
    normal, empty, normal_rows, empty_rows = run_dir, other, rows, other_rows
    note = ""
    if flags[0] is True and flags[1] is not True:
        normal, empty, normal_rows, empty_rows = other, run_dir, other_rows, rows
        note = f"{run_dir} is the empty-language run; roles swapped"
    elif flags[1] is not True:
        note = (f"{other} is not marked empty_language in its run.json; "
                "treated as the empty-language run anyway")
    groups = compare_runs(normal_rows, empty_rows, opts.n_boot, opts.seed, opts.confidence, paper)
    report["compare"] = {"normal_run": str(normal), "empty_run": str(empty), "note": note,
                         "groups": groups}
    if not groups:
        report["errors"].append(f"compare: no task in common between {normal} and {empty}")
    if empty == run_dir:  # the plots show the normal run as "ours", this one dotted
        return table, results_table(normal_rows, opts.n_boot, opts.seed, opts.confidence)
    return results_table(empty_rows, opts.n_boot, opts.seed, opts.confidence), table


def _plots(report: dict, run_dir: Path, table: dict, empty_table: dict | None,
           paper: dict | None, opts: ReportOptions, earlier: list[str]) -> None:
    """Draw the plots (cheap: redrawn each call, so they show every remembered line); when
    drawing fails, the earlier plots still on disk stay listed."""
    try:
        entry = paper_model(paper, opts.paper_model) if opts.paper_model else None
        paths = plot_levels(table, run_dir / "plots", entry, empty_table, run_dir.name)
        report["plots"] = [str(p.relative_to(run_dir)) for p in paths]
    except Exception as exc:
        report["errors"].append(f"plots: {type(exc).__name__}: {exc}")
        report["plots"] = [p for p in earlier if (run_dir / p).is_file()]


def _videos(report: dict, run_dir: Path, rows: list[dict], opts: ReportOptions,
            record: dict, earlier: list[dict]) -> None:
    """Render the videos asked now and those of the record whose file is gone; keep the
    earlier ones still on disk."""
    chosen = replayable(run_dir, rows, record["count"])
    if not chosen:
        report["errors"].append(f"videos: no episode files to replay in {run_dir} "
                                "(the run saved none)")
    render, kept = memory.plan_videos(run_dir, chosen, opts.videos, earlier)
    videos, errors = render_videos(run_dir, render, stride=record["stride"], fps=record["fps"],
                                   fmt=record["format"], camera=record["camera"],
                                   stream=opts.progress_stream, view=record["view"],
                                   trim_idle=record["trim_idle"])
    report["videos"] = memory.order_videos(list(kept) + [asdict(v) for v in videos], chosen)
    report["errors"] += [f"videos: {e}" for e in errors]


def _sections(run_dir: Path, opts: ReportOptions) -> tuple[dict, dict]:
    """(the sections of this report: asked now + remembered, the earlier report.json or {})."""
    asked = {"paper": opts.paper_model, "plots": opts.plots,
             "compare": memory.relative_run(opts.compare, run_dir) if opts.compare else None,
             "videos": memory.video_options(
                 opts.videos, opts.video_stride, opts.video_fps, opts.video_format, opts.camera,
                 opts.video_view, opts.video_trim_idle) if opts.videos > 0 else None}
    previous = None if opts.reset else memory.load_previous(run_dir)
    return memory.merge(memory.remembered(previous, run_dir), asked), previous or {}


def _add_compare(report: dict, run_dir: Path, info: dict, rows: list[dict], table: dict,
                 paper: dict | None, opts: ReportOptions, sections: dict):
    """The drop against the compared run: (empty-language table, table the plots show). A
    remembered run that is gone is a problem of the report, not an input error."""
    report["compare"] = None
    if not sections["compare"]:
        return None, table
    other = Path(opts.compare) if opts.compare else memory.compare_path(sections, run_dir)
    try:
        return _compare(report, run_dir, info, rows, table, paper, opts, other)
    except (ReportError, OSError) as exc:
        if opts.compare:
            raise
        report["errors"].append(f"compare (remembered from the earlier report): {exc}")
        return None, table


def build_report(run_dir: str | Path, options: ReportOptions | None = None, **kwargs) -> dict:
    """Everything the report shows, as one JSON-able dict (percent units). Writes plots and
    videos when its sections ask (into the run directory), not report.md/json (see
    write_report). A pilot report written as report.md is moved to pilot_report.md first."""
    opts = options or ReportOptions(**kwargs)
    run_dir = Path(run_dir)
    rows = load_rows(run_dir)
    if not rows:
        raise ReportError(f"{run_dir}: no results (results.jsonl missing or empty)")
    moved = pilot_report.move_legacy_report(run_dir)
    sections, previous = _sections(run_dir, opts)
    info = load_run_info(run_dir)
    report = _header(run_dir, info, opts)
    report["sections"] = sections
    table = results_table(rows, opts.n_boot, opts.seed, opts.confidence)
    report["groups"] = table
    opts = replace(opts, paper_model=sections["paper"])
    paper = load_paper(opts.paper_file) if sections["paper"] or sections["compare"] else None
    report["paper"] = (beside_paper(table, paper_model(paper, opts.paper_model))
                       if opts.paper_model else None)
    # conflict rows: IS / ES / CR against each task too (benchmarks.task_roles)
    report["groups_by_task"] = (task_tables(rows, opts.n_boot, opts.seed, opts.confidence)
                                if tasks_differ(rows) else None)
    report["intact"] = intact_rates(run_dir, rows)
    report["policy_latency"] = latency_summary(rows)
    report["cues"] = cue_table(rows, run_dir)
    if report["cues"] is not None:  # tasks the compatibility filter kept out of the run
        report["cues"]["skipped_tasks"] = info.get("skipped_tasks") or {}
    report["pilot"] = _pilot(run_dir, moved)
    empty_table, table_for_plot = _add_compare(report, run_dir, info, rows, table, paper, opts,
                                               sections)
    report["plots"] = []
    if sections["plots"]:
        _plots(report, run_dir, table_for_plot, empty_table, paper, opts,
               previous.get("plots") or [])
    report["videos"] = []
    if sections["videos"]:
        _videos(report, run_dir, rows, opts, sections["videos"], previous.get("videos") or [])
    return report


def _pilot(run_dir: Path, moved: str) -> dict | None:
    """The run's pilot report (pilot_report.md), shown in report.md."""
    path = run_dir / pilot_report.PILOT_REPORT_NAME
    if not path.is_file():
        return None
    return {"path": path.name, "markdown": path.read_text(encoding="utf-8"), "note": moved}


def write_report(report: dict, run_dir: str | Path | None = None) -> tuple[Path, Path]:
    """report.md, report.json and report.html (the same report in one self-contained page,
    reporting/html.py) into the run directory (atomic replace); the first two's paths."""
    run_dir = Path(run_dir or report["run_dir"])
    md, js = run_dir / "report.md", run_dir / "report.json"
    texts = ((md, format_markdown(report)),  # all three made first: a ReportError writes none
             (js, json.dumps(report, indent=1, ensure_ascii=False, default=str)),
             (run_dir / REPORT_HTML, format_html(report, run_dir)))
    for path, text in texts:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)
    return md, js
