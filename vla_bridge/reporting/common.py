"""What every part of the report shares: metric and level names, the input error, reading a
run directory's rows and run.json, and the group keys ("scene/level", "all") of all tables."""
from __future__ import annotations

import json
from pathlib import Path

from vla_bridge.benchmarks.result_rows import counted
from vla_bridge.evaluation.run_dir import RunDirectory

LEVELS = ("L0", "L1", "L2", "L3")
METRICS = ("IS", "ES", "CR")
METRIC_NAMES = {"IS": "Intent Score", "ES": "Execution Score", "CR": "Completion Rate"}


class ReportError(RuntimeError):
    """A problem with the inputs (no results, unknown model); the CLI exits 2."""


def load_rows(run_dir: str | Path) -> list[dict]:
    """Result rows of a run directory; a repeated key keeps its first row. A row of an
    episode the infrastructure failed, not counted (``benchmarks.result_rows``), is no result:
    left out (its trial's rerun is the row that counts)."""
    rows, seen = [], set()
    for row in counted(RunDirectory(run_dir).results()):
        key = row.get("key")
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        rows.append(row)
    return rows


def load_run_info(run_dir: str | Path) -> dict:
    """The run's run.json ({} when missing or unreadable)."""
    path = RunDirectory(run_dir).run_path
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def group_key(scene: str, level: str) -> str:
    return f"{scene}/{level}"


def level_order(group: str) -> tuple:
    """Sort key of a group: by scene, then L0..L3; "all" last."""
    if group == "all":
        return ("~",)  # after every scene
    scene, _, level = group.partition("/")
    return (scene, LEVELS.index(level) if level in LEVELS else 99, level)


def pct(x: float | None) -> float | None:
    """A fraction in percent, rounded to 4 decimals (None stays None)."""
    return None if x is None else round(100.0 * float(x), 4)
