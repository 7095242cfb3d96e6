"""Evaluation bookkeeping, independent of ROS: the run directory (run.json, results.jsonl,
summary.json), resume, per-episode result rows and the printed per-level table.

A run directory never loses a finished episode: each result is appended and flushed as one
JSON line the moment it is scored, and a rerun with the same output skips what is there. A
last line torn by a cut write is moved to results.jsonl.torn before the next append, and a run
whose planned trials are not all in results.jsonl ends "incomplete", never "finished".
A directory that cannot be created or written raises ``RunDirError`` (one line).

A row of an episode the infrastructure failed (``"failure": "infrastructure"``, see
``benchmarks.result_rows``: a policy-node restart, a sim that stopped answering, frames lost)
is kept but is no result: ``finished_keys`` leaves its trial out, so a resume runs it again
(once: its second such failure is counted), and until then the run ends "incomplete".
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

from vla_bridge import __version__
from vla_bridge.benchmarks.result_rows import counted, excluded
from vla_bridge.benchmarks.robofollow.tasks import Trial


def trial_key(trial) -> str:
    """Unique name of one trial in a run directory: a RoboFollow (task, round), or the
    trial's own ``key`` (a LIBERO trial: suite/task/initial state)."""
    key = getattr(trial, "key", None)
    if key is not None:
        return str(key)
    return f"{trial.task.scene}/{trial.task.id}/r{trial.round}"


def _run_entry(trial) -> dict:
    """A trial as run.json lists it (``trial.run_entry()`` where the trial defines one)."""
    if hasattr(trial, "run_entry"):
        return trial.run_entry()
    return {"key": trial_key(trial), "task": trial.task.id, "round": trial.round,
            "seed": trial.seed}


def package_versions() -> dict:
    versions = {"vla_bridge": __version__, "python": platform.python_version()}
    for name in ("numpy", "mujoco", "rclpy"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name)
            except ImportError:
                continue
        versions[name] = getattr(module, "__version__", "unknown")
    versions["rmw"] = os.environ.get("RMW_IMPLEMENTATION", "default")
    return versions


class RunDirError(RuntimeError):
    """The run directory cannot be created or written (read-only, under a file, disk full)."""


def read_jsonl(path: str | Path) -> list[dict]:
    """Every complete JSON line of an append-only file (none if it does not exist); a line
    torn by a crash mid-write is skipped, so what was written before it is never lost."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


class RunDirectory:
    def __init__(self, path: str | Path, log=None):
        self.path = Path(path)
        self.results_path = self.path / "results.jsonl"
        self.torn_path = self.path / "results.jsonl.torn"
        self.run_path = self.path / "run.json"
        self.summary_path = self.path / "summary.json"
        self.log = log if log is not None else logging.getLogger(__name__)
        self._started = False  # start() wrote run.json ...
        self._run_json_before: bytes | None = None  # ... over this (None: there was none)

    # ------------------------------------------------------------------ reading
    def results(self) -> list[dict]:
        """Every complete line of results.jsonl (a torn last line from a crash is ignored)."""
        return read_jsonl(self.results_path)

    def finished_keys(self) -> set[str]:
        """The trials a resume skips: those with a row that counts (an infrastructure failure
        not yet counted is run again, ``benchmarks.result_rows``)."""
        return {row["key"] for row in counted(self.results())}

    def info(self) -> dict:
        """run.json ({} when missing or unreadable)."""
        try:
            return json.loads(self.run_path.read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    # ------------------------------------------------------------------ writing
    def start(self, arguments: dict, trials: list[Trial], resume: bool,
              provenance: dict | None = None, skipped: dict | None = None) -> list[Trial]:
        """Create/reuse the directory (and its missing parents); return the trials still to
        run. ``provenance``: what produced the episodes (evaluation.provenance); ``skipped``:
        task id -> why its trials are not run (a cue variant that cannot show the task)."""
        self._create()
        if not resume and self.results_path.exists() and self.results_path.stat().st_size:
            raise FileExistsError(f"{self.results_path} already holds results; pass resume:=true "
                                  "to continue that run or choose another output directory")
        self._run_json_before = self.run_path.read_bytes() if self.run_path.is_file() else None
        self._started = True
        done = self.finished_keys() if resume else set()
        run = {
            "arguments": arguments, "versions": package_versions(), "provenance": provenance,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "status": "running",
            "trials": [_run_entry(t) for t in trials],
            "resumed_with": len(done),
        }
        if skipped:
            run["skipped_tasks"] = dict(skipped)
        note = self._provenance_note(done) if resume else None
        if note:
            run["provenance_note"] = note
        with self._writing("write run.json"):
            self._write_json(self.run_path, run)
        return [t for t in trials if trial_key(t) not in done]

    def undo_start(self) -> None:
        """Put run.json back as it was before ``start`` (removed when there was none): the
        run was refused before its first episode, so it must not speak for the directory."""
        if not self._started:
            return
        self._started, before = False, self._run_json_before
        with self._writing("restore run.json"):
            if before is None:
                self.run_path.unlink(missing_ok=True)
            else:
                tmp = self.run_path.with_suffix(".tmp")
                tmp.write_bytes(before)
                tmp.replace(self.run_path)

    def _provenance_note(self, done: set[str]) -> str | None:
        """Carried over, or new when resuming episodes whose run.json recorded no provenance."""
        old = self.info()
        if old.get("provenance_note"):
            return old["provenance_note"]
        if done and not old.get("provenance"):
            return (f"{len(done)} episodes were run before provenance was recorded "
                    "(their policy and settings are unknown)")
        return None

    def _create(self) -> None:
        in_the_way = next((p for p in (self.path, *self.path.parents)
                           if p.exists() and not p.is_dir()), None)
        if in_the_way is not None:
            raise RunDirError(f"run directory {self.path}: {in_the_way} is a file, "
                              "not a directory")
        with self._writing("create it"):
            self.path.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def _writing(self, what: str):
        """An OSError (permission, full disk) as one clear RunDirError line."""
        try:
            yield
        except OSError as exc:
            reason = exc.strerror or str(exc)
            where = f" ({exc.filename})" if exc.filename else ""
            raise RunDirError(f"run directory {self.path}: cannot {what}: {reason}{where}") \
                from None

    def save_episode(self, trial: Trial, record, row: dict) -> str:
        """episodes/<task>_r<round>.npz with the frames (re-scoring, replay videos); returns
        its path relative to the run directory."""
        from vla_bridge.embodiment.episode_record import save_episode
        relative = Path("episodes") / trial.task.scene / f"{trial.task.id}_r{trial.round}.npz"
        meta = {k: row[k] for k in ("key", "task_id", "scene", "level", "round", "seed", "instruction")}
        meta.update(layout=trial.task.layout, intent_score=row.get("intent_score"),
                    exec_score=row.get("exec_score"), complete=row.get("complete"))
        with self._writing(f"save {relative}"):
            (self.path / relative).parent.mkdir(parents=True, exist_ok=True)
            save_episode(self.path / relative, record, meta)
        return str(relative)

    def append(self, row: dict) -> None:
        """One results line, flushed to disk (a torn last line is cut off first)."""
        with self._writing("append to results.jsonl"):
            self.cut_torn_line()
            with open(self.results_path, "a") as f:
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
                f.flush()
                os.fsync(f.fileno())

    def cut_torn_line(self) -> int:
        """When results.jsonl does not end in a newline (a write cut short: full disk, a
        crash), move the partial last line to results.jsonl.torn and cut the file back to its
        last newline, so the next row is not glued onto it; the bytes moved (0: none)."""
        if not self.results_path.exists() or self.results_path.stat().st_size == 0:
            return 0
        with open(self.results_path, "rb+") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":
                return 0
            f.seek(0)
            data = f.read()
            keep = data.rfind(b"\n") + 1
            with open(self.torn_path, "ab") as torn:
                torn.write(data[keep:] + b"\n")
                torn.flush()
                os.fsync(torn.fileno())
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        self.log.error(f"{self.results_path}: its last line was torn (a cut write); moved its "
                       f"{len(data) - keep} bytes to {self.torn_path.name}")
        return len(data) - keep

    def finish(self, status: str, summary: dict, latency: dict | None = None) -> None:
        with self._writing("write summary.json / run.json"):
            self._write_json(self.summary_path, summary)
            if latency:
                self._write_json(self.path / LATENCY_FILE, latency)
            run = self.info()
            run.update(status=status, finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            self._write_json(self.run_path, run)

    def update_info(self, **fields) -> None:
        """Add or replace fields of run.json (atomically)."""
        with self._writing("write run.json"):
            self._write_json(self.run_path, {**self.info(), **fields})

    @staticmethod
    def _write_json(path: Path, payload: dict) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, indent=1))
        tmp.replace(path)  # atomic: a crash never leaves half a file


def completion_status(status: str, planned: list[Trial], rows) -> str:
    """The run's final status: "finished" only when every planned trial has a row in
    results.jsonl that counts, else "incomplete: N of M trials missing ..." and/or "... failed
    for infrastructure reasons ..." (a trial whose only rows are infrastructure failures not
    yet counted, ``benchmarks.result_rows``); another status is kept."""
    rows = list(rows)
    present = {row.get("key") for row in counted(rows)}
    missing = [trial_key(t) for t in planned if trial_key(t) not in present]
    if status != "finished" or not missing:
        return status
    infra = {row.get("key"): row.get("error") or row.get("reason") for row in rows
             if excluded(row)}
    absent = [key for key in missing if key not in infra]
    rerun = [key for key in missing if key in infra]
    parts = []
    if absent:
        shown = ", ".join(absent[:3]) + (", ..." if len(absent) > 3 else "")
        parts.append(f"{len(absent)} of {len(planned)} trials missing from results.jsonl "
                     f"({shown})")
    if rerun:
        shown = ", ".join(f"{key}: {infra[key]}" for key in rerun[:2]) + (
            ", ..." if len(rerun) > 2 else "")
        parts.append(f"{len(rerun)} of {len(planned)} trials failed for infrastructure "
                     f"reasons, not scored ({shown})")
    return f"incomplete: {'; '.join(parts)}; resume to run them"


#: per-call policy timings kept per episode (ms): the backend's whole predict call, the
#: node's own share, and the breakdown of the node's ``latency_ms`` status field
LATENCY_KEYS = ("inference", "overhead", "preprocess", "postprocess", "transport")
LATENCY_FILE = "latency.json"


def call_latency(status: dict) -> dict[str, float]:
    """One ``predicted`` policy status -> {LATENCY_KEYS...} in ms (missing keys left out)."""
    out = {"inference": status.get("inference_ms"), "overhead": status.get("overhead_ms")}
    out.update({k: v for k, v in (status.get("latency_ms") or {}).items() if k != "inference"})
    return {k: round(float(out[k]), 4) for k in LATENCY_KEYS if out.get(k) is not None}


def result_row(trial: Trial, score=None, *, status: str = "ok", error: str | None = None,
               instruction: str = "", wall_s: float = 0.0, frames: int = 0,
               policy_calls: int = 0, policy_latency_ms: list[dict] | None = None) -> dict:
    """One results.jsonl line. A failed episode (node error, timeout) scores zero.
    ``policy_latency_ms``: per call, ``call_latency`` of its status (kept as per-key lists)."""
    task = trial.task
    row = {"key": trial_key(trial), "task_id": task.id, "scene": task.scene, "level": task.level,
           "round": trial.round, "seed": trial.seed, "arm": task.arm, "action": task.action,
           "instruction": instruction, "status": status, "error": error,
           "frames": frames, "policy_calls": policy_calls, "wall_s": round(wall_s, 3)}
    if policy_latency_ms:
        per_key = {k: [c[k] for c in policy_latency_ms if k in c] for k in LATENCY_KEYS}
        row["policy_latency_ms"] = {k: v for k, v in per_key.items() if v}
        inference = per_key["inference"]
        if inference:
            row["policy_latency_ms_mean"] = round(sum(inference) / len(inference), 3)
    if score is not None:
        row.update(score.to_dict())
    else:
        row.update(intent_score=0.0, exec_score=0.0, complete=False, stages=[])
    row["task_id"], row["scene"], row["level"] = task.id, task.scene, task.level
    return row


def latency_summary(rows) -> dict:
    """Per-call policy timings over a run's episodes: for each of LATENCY_KEYS, the number of
    calls and mean / p50 / p95 / max in ms ({} when no row has any)."""
    import numpy as np
    out = {}
    for key in LATENCY_KEYS:
        values = [v for row in rows for v in (row.get("policy_latency_ms") or {}).get(key, [])]
        if values:
            a = np.asarray(values, float)
            out[key] = {"calls": int(a.size), "mean": round(float(a.mean()), 3),
                        "p50": round(float(np.percentile(a, 50)), 3),
                        "p95": round(float(np.percentile(a, 95)), 3),
                        "max": round(float(a.max()), 3)}
    return out


def format_latency(summary: dict) -> str:
    """One line per timing: 'inference  p50 12.3 ms  p95 15.0 ms  max 20.1 ms  (100 calls)'."""
    return "\n".join(f"policy {key:<12} p50 {m['p50']:8.3f} ms  p95 {m['p95']:8.3f} ms  "
                     f"max {m['max']:8.3f} ms  ({m['calls']} calls)" for key, m in summary.items())


def format_table(summary: dict) -> str:
    """Per-level table of mean IS / ES / CR (percent), as RoboFollow's Table 1 reports them."""
    head = f"{'group':<14}{'episodes':>9}{'tasks':>7}{'IS %':>8}{'ES %':>8}{'CR %':>8}{'IS full':>9}{'ES full':>9}"
    lines = [head, "-" * len(head)]
    for group, m in summary.items():
        lines.append(f"{group:<14}{m['n_episodes']:>9}{m['n_tasks']:>7}"
                     f"{100 * m['mean_intent_score']:>8.1f}{100 * m['mean_exec_score']:>8.1f}"
                     f"{100 * m['completion_rate']:>8.1f}{100 * m['intent_full_rate']:>9.1f}"
                     f"{100 * m['exec_full_rate']:>9.1f}")
    return "\n".join(lines)
