"""LIBERO-VIFO metrics of run directories: cue_metrics.json, cue_table.txt, cue_task_table.txt
(the last only for RoboFollow runs; LIBERO runs score LIBERO's success alone).

``write_cue_metrics(run_dir)`` aggregates a run's results rows with
``benchmarks.vifo.protocols.cue_metrics`` and writes the files atomically;
``merge_runs`` (``vla-bridge cue-table RUN_DIR... [--output DIR]``) merges several run
directories (e.g. one per protocol and family) into one Table-2-like table.

Under ``conflict`` an episode has two tasks (``benchmarks.task_roles``), so RoboFollow's
IS / ES / CR and INT-ACT's rates are given per protocol and per task ("followed language",
"followed cue"): ``task_metrics`` (cue_metrics.json's ``by_task``) and
``format_task_table`` (cue_task_table.txt).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from vla_bridge.benchmarks.intact.metrics import row_intact, summarize_intact
from vla_bridge.benchmarks.result_rows import counted
from vla_bridge.benchmarks.robofollow.scoring import summarize
from vla_bridge.benchmarks.task_roles import ROLE_LABELS, role_rows, roles_of
from vla_bridge.benchmarks.vifo.protocols import cue_metrics, format_cue_table
from vla_bridge.evaluation.run_dir import read_jsonl

__all__ = ["write_cue_metrics", "merge_runs", "task_metrics", "format_task_table",
           "format_table2"]

#: INT-ACT rates of the task table: (key of summarize_intact, column)
_INTACT_COLUMNS = (("intention_correct_rate", "intention"), ("grasp_success_rate", "grasp"),
                   ("task_success_rate", "success"), ("wrong_object_attempt_rate", "wrong obj."))


def _pct(v) -> float | None:
    return None if v is None else round(100.0 * float(v), 2)


def _task_entry(rows: list[dict], role: str) -> dict:
    """One protocol's episodes scored against their ``role`` task."""
    s = summarize(role_rows(rows, role))["all"]
    entry = {"task": ROLE_LABELS[role], "episodes": s["n_episodes"],
             "IS": _pct(s["mean_intent_score"]), "ES": _pct(s["mean_exec_score"]),
             "CR": _pct(s["completion_rate"])}
    scored = [{"scene": r.get("scene"), "level": r.get("level"), **m}
              for r in rows if (m := row_intact(r).get(role)) is not None]
    rates = summarize_intact(scored).get("all", {})
    entry["intact_episodes"] = len(scored)  # older rows carry no INT-ACT
    entry.update({col: _pct(rates.get(key)) for key, col in _INTACT_COLUMNS})
    return entry


def task_metrics(rows: Iterable[dict]) -> dict:
    """protocol -> role -> {"task", "episodes", IS / ES / CR (RoboFollow, percent, CR
    task-macro), "intact_episodes", intention / grasp / success / wrong obj. (INT-ACT,
    percent)}, every metric of an entry scored against the same task."""
    by_protocol: dict[str, list[dict]] = {}
    for r in rows:
        by_protocol.setdefault((r.get("cue") or {}).get("protocol") or "none", []).append(r)
    return {p: {role: _task_entry(rs, role) for role in roles_of(rs)}
            for p, rs in sorted(by_protocol.items())}


def format_task_table(by_task: dict) -> str:
    """One line per protocol and task: the RoboFollow and INT-ACT metrics against it."""
    cols = ("episodes", "IS", "ES", "CR") + tuple(c for _, c in _INTACT_COLUMNS)
    head = f"{'protocol':<13}{'task':<19}" + "".join(f"{c:>11}" for c in cols)
    lines = [head, "-" * len(head)]
    for protocol, roles in by_task.items():
        for entry in roles.values():
            cells = [str(entry["episodes"])] + ["-" if entry[c] is None else f"{entry[c]:.1f}"
                                                for c in cols[1:]]
            lines.append(f"{protocol:<13}{entry['task']:<19}" + "".join(f"{c:>11}" for c in cells))
    lines.append("IS / ES / CR: RoboFollow; intention .. wrong obj.: INT-ACT; each line against "
                 "its task")
    return "\n".join(lines)


def cue_instances(rows: Iterable[dict]) -> dict[str, int]:
    """"family/variant" -> the distinct cue instances (cue task, seed) the rows showed (the
    paper counts instances per family and variant; the compatibility filter decides them)."""
    seen: dict[str, set] = {}
    for r in rows:
        cue = r.get("cue") or {}
        if cue.get("family") and cue.get("cue_task"):
            seen.setdefault(f"{cue['family']}/{cue.get('variant')}", set()).add(
                (cue["cue_task"], r.get("seed")))
    return {k: len(v) for k, v in sorted(seen.items())}


def format_cue_tables(metrics: dict) -> str:
    """The Table-2 text plus the instance count per family and variant."""
    counts = ", ".join(f"{k} {n}" for k, n in metrics.get("instances", {}).items())
    return format_cue_table(metrics) + (f"\ninstances: {counts}" if counts else "")


#: Part I-A rows of Table 2: (key of the VQA metrics, label)
VQA_ROWS = (("detection", "VQA Det."), ("semantics", "VQA Sem."), ("grounding", "VQA Gnd."),
            ("decision", "VQA Dec."), ("fca", "VQA FCA"), ("vqa", "VQA"))


def format_table2(cues: dict | None, vqa: dict | None) -> str:
    """The paper's Table 2 as text: Part I-A's VQA rows (``vqa``: ``vqa.vqa_metrics``) above
    the closed-loop rows of Parts I-B, II-A and II-B (``cues``: ``cue_metrics``), one column
    per family of either, then Avg. (macro) and All (pooled); "-" where a part has no
    figure."""
    from vla_bridge.benchmarks.vifo.protocols import METRICS, family_table
    parts = [("vqa:", VQA_ROWS, vqa), ("", METRICS, cues)]
    fams = sorted({f for _, _, m in parts if m for f in m["by_family"]})
    merged = {"by_family": {f: {} for f in fams}, "average": {}, "overall": {}}
    rows = []
    for prefix, keys, m in parts:
        if not m:
            continue
        rows += [(prefix + key, label) for key, label in keys]
        for f in fams:
            merged["by_family"][f].update({prefix + k: v for k, v in
                                           m["by_family"].get(f, {}).items()})
        for scope in ("average", "overall"):
            merged[scope].update({prefix + k: v for k, v in m.get(scope, {}).items()})
    lines, _ = family_table(merged, rows, "Table 2")
    return "\n".join(lines)


def write_cue_metrics(run_dir: str | Path, rows: Iterable[dict] | None = None) -> dict:
    """cue_metrics.json, cue_table.txt and cue_task_table.txt in ``run_dir`` from its
    results.jsonl (or ``rows``)."""
    run_dir = Path(run_dir)
    rows = _read_rows(run_dir) if rows is None else counted(rows)
    metrics = cue_metrics(rows)
    metrics["instances"] = cue_instances(rows)
    files = [("cue_metrics.json", None), ("cue_table.txt", format_cue_tables(metrics) + "\n")]
    if _robofollow(rows):  # LIBERO rows have LIBERO's success, no IS / ES / CR to table
        metrics["by_task"] = task_metrics(r for r in rows if (r.get("cue") or {}).get("protocol"))
        files.append(("cue_task_table.txt", format_task_table(metrics["by_task"]) + "\n"))
    files[0] = ("cue_metrics.json", json.dumps(metrics, indent=1))
    for name, text in files:
        tmp = run_dir / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(run_dir / name)
    return metrics


def _robofollow(rows: list[dict]) -> bool:
    """Rows of RoboFollow tasks (LIBERO rows, which name their suite and task number, carry
    LIBERO's success only: no IS / ES / CR to table)."""
    return not rows or not all("suite" in r and "task_index" in r for r in rows)


def _read_rows(run_dir: Path) -> list[dict]:
    """The rows that count (an infrastructure failure not counted is no result)."""
    return counted(read_jsonl(run_dir / "results.jsonl"))


def merge_runs(run_dirs: Iterable[str | Path], output: str | Path | None = None) -> dict:
    """The metrics of several run directories' rows pooled (e.g. one run per protocol and
    family: `vla-bridge cue-table`); with ``output``, also written there as
    ``write_cue_metrics`` writes a run's."""
    rows = [r for d in run_dirs for r in _read_rows(Path(d))]
    if output:
        Path(output).mkdir(parents=True, exist_ok=True)
        return write_cue_metrics(output, rows)
    metrics = cue_metrics(rows)
    metrics["instances"] = cue_instances(rows)
    if _robofollow(rows):
        metrics["by_task"] = task_metrics(r for r in rows if (r.get("cue") or {}).get("protocol"))
    return metrics
