"""What a run's report holds, remembered from one `vla-bridge report` call to the next.

report.json keeps a ``sections`` record: the paper model beside ours, whether plots are drawn,
the empty-language run compared with, and the videos (how many, and how they were rendered).
A later call adds its flags to the record, so a flag adds a section and never drops one
(`--paper --plots --videos 3`, then `--compare OTHER`, keeps all four). What is cheap is
rebuilt from the record (tables, paper column, plots, the drop); videos are rendered only when
asked now or when an earlier one's file is gone. `--reset` (``ReportOptions.reset``) forgets
the record: the report then has the flags of this call only. No call deletes a file under
plots/ or videos/.

A report.json from before the record is read from its parts (paper model, plots, compare,
videos); anything else in report.json (e.g. a pilot report's, once written there) is no record.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

SECTIONS = "sections"
NONE: dict[str, Any] = {"paper": None, "plots": False, "compare": None, "videos": None}


def video_options(count: int, stride: int, fps: float | None, fmt: str, camera: str,
                  view: str | None, trim_idle: bool) -> dict:
    """The record of the videos: how many episodes and how they are rendered."""
    return {"count": count, "stride": stride, "fps": fps, "format": fmt, "camera": camera,
            "view": view, "trim_idle": trim_idle}


def relative_run(other: str | Path, run_dir: Path) -> str:
    """`other` as the record keeps it: relative to the run directory (moving both together
    keeps it valid), absolute where no relative path exists."""
    try:
        return os.path.relpath(Path(other).resolve(), Path(run_dir).resolve())
    except ValueError:  # another drive
        return str(Path(other).resolve())


def load_previous(run_dir: str | Path) -> dict | None:
    """The report.json an earlier call wrote (None: none, unreadable, or not a run report)."""
    try:
        data = json.loads((Path(run_dir) / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "method" in data and "groups" in data else None


def _legacy_sections(previous: Mapping, run_dir: Path) -> dict:
    """The record of a report.json written before there was one, read from its parts."""
    compare = previous.get("compare") or {}
    other = compare.get("empty_run")
    if other and Path(other).resolve() == run_dir.resolve():
        other = compare.get("normal_run")
    videos = previous.get("videos") or []
    return {"paper": (previous.get("paper") or {}).get("model"),
            "plots": bool(previous.get("plots")),
            "compare": relative_run(other, run_dir) if other else None,
            "videos": video_options(len(videos), 2, None, "mp4", "cam_high", None, True)
            if videos else None}


def remembered(previous: Mapping | None, run_dir: str | Path) -> dict:
    """The sections an earlier report had (NONE when there is none)."""
    if not previous:
        return dict(NONE)
    record = previous.get(SECTIONS)
    if isinstance(record, dict):
        return {**NONE, **record}
    return _legacy_sections(previous, Path(run_dir))


def merge(before: Mapping, asked: Mapping) -> dict:
    """The union: what is asked now, plus what the report had before and is not asked anew.
    More videos asked than before raise the count; fewer keep the earlier ones."""
    videos = asked["videos"] or before["videos"]
    if asked["videos"] and before["videos"]:
        videos = {**asked["videos"],
                  "count": max(asked["videos"]["count"], before["videos"]["count"])}
    return {"paper": asked["paper"] or before["paper"],
            "plots": bool(asked["plots"] or before["plots"]),
            "compare": asked["compare"] or before["compare"], "videos": videos}


def compare_path(record: Mapping, run_dir: str | Path) -> Path | None:
    """The compared run of a record, resolved against the run directory (no "run/..")."""
    other = record.get("compare")
    return None if not other else Path(os.path.normpath(Path(run_dir) / other))


# =============================================================================== videos

def _episode(value: str | Path) -> str:
    return str(Path(value))


def plan_videos(run_dir: str | Path, chosen: Sequence[Mapping], asked_count: int,
                previous: Sequence[Mapping]) -> tuple[list[Mapping], list[Mapping]]:
    """(rows to render now, earlier video entries to keep) for the `chosen` rows (the
    replayable episodes the record counts): the first `asked_count` are rendered because they
    are asked now, the others only when no earlier video of theirs is on disk. Earlier
    entries whose file still exists and that are not rendered anew are kept, chosen or not."""
    run_dir = Path(run_dir)
    on_disk = {_episode(e["episode"]): e for e in previous
               if e.get("path") and (run_dir / e["path"]).is_file()}
    render = [r for k, r in enumerate(chosen)
              if k < asked_count or _episode(r["episode_file"]) not in on_disk]
    rendering = {_episode(r["episode_file"]) for r in render}
    return render, [e for name, e in on_disk.items() if name not in rendering]


def order_videos(entries: Sequence[Mapping], chosen: Sequence[Mapping]) -> list[Mapping]:
    """Video entries in the results order of their episodes; others (kept from an earlier
    report, no longer among the chosen) last."""
    order = {_episode(r["episode_file"]): k for k, r in enumerate(chosen)}
    return sorted(entries, key=lambda e: order.get(_episode(e["episode"]), len(order)))
