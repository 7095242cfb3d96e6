"""The campaign's run directory: the usual format (run.json, results.jsonl, summary.json)
plus ``campaign.json`` and ``campaign/`` (each unit's own run directory, each worker's log).

Rows reach ``results.jsonl`` only through `merge`: a unit graph writes its own results (the
evaluator's fsync'ed appends); the driver copies each row whose key is planned and not yet
in the main file, once, with `RunDirectory.append` (fsync'ed). So a row is never duplicated,
and a row a unit finished is never lost: it is merged while the unit runs, after it ends,
and again at the start of a resumed campaign (a crash of the driver between a unit's write
and the merge loses nothing). A unit's directory is seeded with the main rows of its tasks
before its graph starts, so the graph's own resume skips every trial already finished,
whichever unit or campaign finished it (a LIBERO unit, whose graph runs only its own trials,
gets the rows of its keys: an infrastructure failure's, below).

A row of an episode the infrastructure failed (``benchmarks.result_rows``) is merged too, but
does not finish its trial: the unit is retried, its evaluator runs the trial again (once; the
seeded row tells it the trial failed so before) and that row is merged beside it. So a row is
told from another by its content (``_identity``), not by its key alone.

The files a row names relative to its unit's directory (``episode_file``, ``bag``) are linked
(hard links; copies across file systems) to the same relative path in the campaign's run
directory as the row is merged, so the campaign directory reads as one graph's: ``vla-bridge
report --videos`` and re-scoring find every episode.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from vla_bridge.benchmarks.result_rows import excluded
from vla_bridge.campaign.plan import Unit
from vla_bridge.evaluation.run_dir import RunDirectory, read_jsonl

CAMPAIGN_FILE = "campaign.json"
UNITS_DIR = "campaign/units"
LOGS_DIR = "campaign/logs"
#: row fields naming a file or directory relative to the run directory that wrote the row
FILE_FIELDS = ("episode_file", "bag")
#: row fields the merge may rewrite (a served unit's policy): not part of a row's identity
_REWRITTEN = ("policy", "policy_server")


def _identity(row: dict) -> str:
    """A row's content, as merged rows are told apart (the merge's rewrites left out)."""
    return json.dumps({k: v for k, v in row.items() if k not in _REWRITTEN}, sort_keys=True)


def _link_tree(source: Path, target: Path) -> None:
    """``target`` gets ``source``'s files (a file, or a directory's files): hard links, or
    copies where a link cannot be made; an existing target file is replaced."""
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    for file in files:
        dest = target if file == source else target / file.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".linking")
        tmp.unlink(missing_ok=True)
        try:
            os.link(file, tmp)
        except OSError:
            shutil.copy2(file, tmp)
        tmp.replace(dest)


class Ledger:
    def __init__(self, run_dir: RunDirectory, planned_keys: list[str], policy: str | None = None):
        self.run_dir = run_dir
        self.policy = policy  # the campaign's --policy (rows of served units name their server)
        self.root = run_dir.path
        self.planned = set(planned_keys)
        rows = [r for r in run_dir.results() if r.get("key") in self.planned]
        # a trial is done when a row of it counts (an infrastructure failure runs again)
        self.done: set[str] = {r["key"] for r in rows if not excluded(r)}
        self.merged: set[str] = {_identity(r) for r in rows}
        self.state = self._load_state()

    # ------------------------------------------------------------------ paths
    def unit_dir(self, unit: Unit) -> Path:
        return self.root / UNITS_DIR / unit.name

    def log_path(self, worker: int | str) -> Path:
        """campaign/logs/worker-<i>.log for a graph worker, <name>.log for a named process."""
        name = f"worker-{worker}" if isinstance(worker, int) else worker
        return self.root / LOGS_DIR / f"{name}.log"

    # ------------------------------------------------------------------ rows
    def merge_dir(self, directory: Path) -> int:
        """Append the planned rows of one unit directory that results.jsonl lacks (of trials
        not done yet), with the files they name; the number of trials this finished."""
        added = 0
        for row in read_jsonl(directory / "results.jsonl"):
            key = row.get("key")
            if key not in self.planned or key in self.done or _identity(row) in self.merged:
                continue
            self.link_files(directory, row)
            self.merged.add(_identity(row))
            if self.policy and row.get("policy") != self.policy:
                row["policy_server"], row["policy"] = row.get("policy"), self.policy
            self.run_dir.append(row)
            if not excluded(row):
                self.done.add(key)
                added += 1
        return added

    def link_files(self, directory: Path, row: dict) -> None:
        """The files the row names relative to the unit's directory, at the same relative
        paths in the campaign's run directory (before the row is appended: a crash between
        the two leaves a stray file, never a row naming a missing one)."""
        for field in FILE_FIELDS:
            name = row.get(field)
            if not isinstance(name, str) or not name or Path(name).is_absolute():
                continue
            source = directory / name
            if source.exists():
                _link_tree(source, self.root / name)

    def merge_all(self) -> int:
        """Every unit directory there is (resume: rows a crashed driver had not merged)."""
        units = self.root / UNITS_DIR
        return sum(self.merge_dir(d) for d in sorted(units.iterdir())) if units.is_dir() else 0

    def seed_unit(self, unit: Unit) -> None:
        """Give the unit's directory the finished rows of its trials (see module doc)."""
        directory = self.unit_dir(unit)
        directory.mkdir(parents=True, exist_ok=True)
        present = {_identity(r) for r in read_jsonl(directory / "results.jsonl")}
        tasks, keys = set(unit.task_ids), set(unit.keys)
        # a RoboFollow unit's graph runs all rounds of its tasks; a LIBERO unit's its keys
        rows = [r for r in self.run_dir.results()
                if (r.get("task_id") in tasks or r.get("key") in keys)
                and r.get("key") in self.planned and _identity(r) not in present]
        if rows:
            unit_run = RunDirectory(directory, log=self.run_dir.log)
            for row in rows:
                unit_run.append(row)

    def missing(self, unit: Unit) -> list[str]:
        return [k for k in unit.keys if k not in self.done]

    # ------------------------------------------------------------------ campaign.json
    def _load_state(self) -> dict:
        try:
            state = json.loads((self.root / CAMPAIGN_FILE).read_text())
        except (OSError, json.JSONDecodeError):
            state = {}
        state.setdefault("sessions", [])
        state.setdefault("units", {})
        return state

    def begin_session(self, info: dict) -> int:
        self.state["sessions"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                       "resumed_with": len(self.done), **info})
        self.save()
        return len(self.state["sessions"])

    def end_session(self, **info) -> None:
        self.state["sessions"][-1].update(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), **info)
        self.save()

    def note_worker(self, index: int, info: dict) -> None:
        """A started worker (pid, node, ROS domain) in this session's entry; a replacement
        adds its own line."""
        self.state["sessions"][-1].setdefault("worker_processes", []).append(info)
        self.save()

    def record_attempt(self, unit: Unit, worker: int, outcome: str, wall_s: float,
                       node: str | None = None) -> None:
        entry = self.state["units"].setdefault(
            unit.name, {"tasks": list(unit.task_ids), "trials": len(unit.keys), "attempts": []})
        entry["attempts"].append({"worker": worker, "node": node, "outcome": outcome,
                                  "wall_s": round(wall_s, 2), "missing": len(self.missing(unit))})
        self.save()

    def save(self) -> None:
        path = self.root / CAMPAIGN_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1))
        tmp.replace(path)
