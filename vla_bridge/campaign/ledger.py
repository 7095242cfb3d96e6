"""The campaign's run directory: the usual format (run.json, results.jsonl, summary.json)
plus ``campaign.json`` and ``campaign/`` (each unit's own run directory, each worker's log).

Rows reach ``results.jsonl`` only through `merge`: a unit graph writes its own results (the
evaluator's fsync'ed appends); the driver copies each row whose key is planned and not yet
in the main file, once, with `RunDirectory.append` (fsync'ed). So a row is never duplicated,
and a row a unit finished is never lost: it is merged while the unit runs, after it ends,
and again at the start of a resumed campaign (a crash of the driver between a unit's write
and the merge loses nothing). A unit's directory is seeded with the main rows of its tasks
before its graph starts, so the graph's own resume skips every trial already finished,
whichever unit or campaign finished it.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from vla_bridge.campaign.plan import Unit
from vla_bridge.evaluation.run_dir import RunDirectory, read_jsonl

CAMPAIGN_FILE = "campaign.json"
UNITS_DIR = "campaign/units"
LOGS_DIR = "campaign/logs"


class Ledger:
    def __init__(self, run_dir: RunDirectory, planned_keys: list[str], policy: str | None = None):
        self.run_dir = run_dir
        self.policy = policy  # the campaign's --policy (rows of served units name their server)
        self.root = run_dir.path
        self.planned = set(planned_keys)
        self.done: set[str] = {r["key"] for r in run_dir.results() if r.get("key") in self.planned}
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
        """Append the planned rows of one unit directory that results.jsonl lacks; the count."""
        added = 0
        for row in read_jsonl(directory / "results.jsonl"):
            key = row.get("key")
            if key in self.planned and key not in self.done:
                if self.policy and row.get("policy") != self.policy:
                    row["policy_server"], row["policy"] = row.get("policy"), self.policy
                self.run_dir.append(row)
                self.done.add(key)
                added += 1
        return added

    def merge_all(self) -> int:
        """Every unit directory there is (resume: rows a crashed driver had not merged)."""
        units = self.root / UNITS_DIR
        return sum(self.merge_dir(d) for d in sorted(units.iterdir())) if units.is_dir() else 0

    def seed_unit(self, unit: Unit) -> None:
        """Give the unit's directory the finished rows of its trials (see module doc)."""
        directory = self.unit_dir(unit)
        directory.mkdir(parents=True, exist_ok=True)
        present = {r.get("key") for r in read_jsonl(directory / "results.jsonl")}
        tasks = set(unit.task_ids)
        rows = [r for r in self.run_dir.results() if r.get("task_id") in tasks
                and r.get("key") in self.planned and r.get("key") not in present]
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
