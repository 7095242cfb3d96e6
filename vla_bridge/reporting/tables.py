"""The metric tables: IS, ES and CR in percent per scene/level and overall, each with a task
bootstrap interval, and the empty-language drop between two runs.

Point estimates are ``summary.json``'s (``scoring.common.summarize``: mean Intent/Execution
Score over episodes, task-macro Completion Rate).

Which task: a row's own scores are against its ``scored_task`` (``benchmarks.task_roles``);
under the ``conflict`` cue protocol the language task and the cue task differ, and
``results_table(rows, role=...)`` / ``task_tables`` score every row against its language or
its cue task instead. Every group names the task it was scored against (``task``: "followed
language", "followed cue"); rows still group by their suite trial (task_id, scene, level).

Intervals
---------
RoboFollow's CR is task-macro: the mean over tasks of each task's completion rate over its
rounds. Rounds of one task are not independent draws (same task, same layout), and the
estimand weights tasks, not episodes, so a Wilson interval over episodes would be too narrow
and centred on the wrong (episode-micro) quantity. We therefore resample **tasks** with
replacement, stratified by scene/level (each stratum keeps its number of tasks, so the "all"
row keeps the suite's level mix), recompute the statistic exactly as the point estimate
(CR: mean of per-task rates; IS/ES: mean over the resampled tasks' episodes) and take the
2.5th/97.5th percentiles of ``n_boot`` (default 2000) replicates drawn from
``numpy.random.default_rng(seed)`` (default seed 0; each group gets its own fixed stream,
so intervals do not change when other groups are added). The same method is used for IS and
ES, and paired (same resampled tasks in both runs) for the empty-language drop.
Limits: a group with fewer than 2 tasks gets no interval; percentile intervals from few
tasks (< ~10) are too narrow; with 1 round per task the interval still reflects only
between-task spread.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from vla_bridge.benchmarks.task_roles import (ROLE_LABELS, role_rows, roles_of, scored_role,
                                              task_label)
from vla_bridge.reporting.common import METRICS, group_key, level_order, pct
from vla_bridge.reporting.paper import (DEFAULT_PAPER_MODEL, EMPTY_LANGUAGE_MODEL,
                                                paper_cells, paper_model)

DEFAULT_BOOT = 2000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95

TaskKey = tuple[str, str, str]  # (scene, level, task_id)


# =============================================================================== bootstrap

@dataclass
class _TaskArrays:
    """Per-task sums of one set of rows, in a fixed task order."""
    keys: list[TaskKey]
    n: np.ndarray  # episodes per task
    is_sum: np.ndarray
    es_sum: np.ndarray
    cr_rate: np.ndarray  # completion rate of the task over its episodes


def _task_key(row: Mapping) -> TaskKey:
    return (str(row.get("scene")), str(row.get("level")), str(row.get("task_id")))


def _task_arrays(rows: Iterable[Mapping], keys: Sequence[TaskKey] | None = None) -> _TaskArrays:
    acc: dict[tuple, list[float]] = {}
    for r in rows:
        a = acc.setdefault(_task_key(r), [0, 0.0, 0.0, 0])
        a[0] += 1
        a[1] += float(r.get("intent_score") or 0.0)
        a[2] += float(r.get("exec_score") or 0.0)
        a[3] += bool(r.get("complete"))
    keys = sorted(acc) if keys is None else list(keys)
    vals = np.array([acc[k] for k in keys], dtype=float).reshape(len(keys), 4)
    return _TaskArrays(keys, vals[:, 0], vals[:, 1], vals[:, 2],
                       vals[:, 3] / np.maximum(vals[:, 0], 1))


def _resample(keys: Sequence[TaskKey], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n_tasks) indices: tasks drawn with replacement within each scene/level stratum."""
    strata: dict[tuple[str, str], list[int]] = {}
    for i, (scene, level, _) in enumerate(keys):
        strata.setdefault((scene, level), []).append(i)
    blocks = []
    for stratum in sorted(strata):
        members = np.asarray(strata[stratum])
        blocks.append(members[rng.integers(0, len(members), size=(n_boot, len(members)))])
    return np.concatenate(blocks, axis=1)


def _replicates(t: _TaskArrays, idx: np.ndarray) -> dict[str, np.ndarray]:
    """IS, ES (episode means) and CR (task-macro) of every bootstrap replicate."""
    n = t.n[idx].sum(axis=1)
    return {"IS": t.is_sum[idx].sum(axis=1) / n, "ES": t.es_sum[idx].sum(axis=1) / n,
            "CR": t.cr_rate[idx].mean(axis=1)}


def _group_rng(seed: int, group: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(group.encode())])


def _quantiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def task_bootstrap(rows: Sequence[Mapping], n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE,
                   group: str = "") -> dict[str, tuple[float, float] | None]:
    """Percentile intervals (fractions) of IS, ES and CR from the stratified task bootstrap.

    None for every metric when the rows hold fewer than 2 tasks. `group` names the stream of
    random numbers (so each scene/level has its own, reproducible one).
    """
    t = _task_arrays(rows)
    if len(t.keys) < 2:
        return {m: None for m in METRICS}
    reps = _replicates(t, _resample(t.keys, n_boot, _group_rng(seed, group)))
    return {m: _quantiles(reps[m], confidence) for m in METRICS}


# =============================================================================== table

def group_rows(rows: Iterable[Mapping]) -> dict[str, list[Mapping]]:
    """Rows per "scene/level" (sorted by scene, then L0..L3) plus "all"."""
    rows = list(rows)
    groups: dict[str, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(group_key(r.get("scene"), r.get("level")), []).append(r)
    out = {g: groups[g] for g in sorted(groups, key=level_order)}
    if rows:
        out["all"] = rows
    return out


def results_table(rows: Sequence[Mapping], n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                  confidence: float = DEFAULT_CONFIDENCE,
                  role: str | None = None) -> dict[str, dict]:
    """Per group: counts, the task scored (``task``) and IS / ES / CR in percent, each
    {"value", "lo", "hi"}.

    ``role`` None: the rows' own scores, the numbers of summary.json
    (``scoring.common.summarize``); "language" / "cue": every row scored against that task
    (rows without one are left out).
    """
    from vla_bridge.benchmarks.robofollow.scoring.common import summarize
    rows = role_rows(rows, role) if role else list(rows)
    label = ROLE_LABELS[role] if role else task_label(rows)
    summary = summarize(rows)
    table = {}
    for group, members in group_rows(rows).items():
        s = summary[group]
        ci = task_bootstrap(members, n_boot, seed, confidence, group)
        point = {"IS": s["mean_intent_score"], "ES": s["mean_exec_score"],
                 "CR": s["completion_rate"]}
        scene, _, level = group.partition("/")
        table[group] = {
            "scene": scene if group != "all" else "all", "level": level or "all", "task": label,
            "n_episodes": s["n_episodes"], "n_tasks": s["n_tasks"],
            "n_failed": sum(1 for r in members if r.get("status", "ok") != "ok"),
            **{m: {"value": pct(point[m]), "lo": pct(ci[m][0]) if ci[m] else None,
                   "hi": pct(ci[m][1]) if ci[m] else None} for m in METRICS},
            "CR_episode_micro": pct(s["episode_micro_completion_rate"]),
            "IS_full_rate": pct(s["intent_full_rate"]), "ES_full_rate": pct(s["exec_full_rate"]),
        }
    return table


def task_tables(rows: Sequence[Mapping], n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict[str, dict]]:
    """role -> ``results_table`` of the rows scored against that role's task, for every role
    some row has ("language", "cue"): a conflict run's IS / ES / CR per task."""
    return {role: results_table(rows, n_boot, seed, confidence, role) for role in roles_of(rows)}


# =============================================================================== empty language

def _paper_drops(paper: dict) -> dict[str, dict[str, float]]:
    """The paper's π₀.₅ drop per group: its full row minus its empty-language control row."""
    full = paper_cells(paper_model(paper, DEFAULT_PAPER_MODEL))
    ctrl = paper_cells(paper_model(paper, EMPTY_LANGUAGE_MODEL))
    return {g: {m: round(full[g][m] - ctrl[g][m], 4) for m in METRICS} for g in full}


def _paired_drop(normal: Sequence[Mapping], empty: Sequence[Mapping], common: list[TaskKey],
                 n_boot: int, seed: int, confidence: float, group: str) -> dict[str, Any]:
    """One group's drop of each metric over the tasks in `common`, paired bootstrap interval."""
    keep = set(common)
    a = _task_arrays([r for r in normal if _task_key(r) in keep], common)
    b = _task_arrays([r for r in empty if _task_key(r) in keep], common)
    point_a = _replicates(a, np.arange(len(common))[None, :])
    point_b = _replicates(b, np.arange(len(common))[None, :])
    entry: dict[str, Any] = {"n_tasks": len(common), "n_episodes_normal": int(a.n.sum()),
                             "n_episodes_empty": int(b.n.sum())}
    if len(common) >= 2:
        idx = _resample(common, n_boot, _group_rng(seed, "compare:" + group))
        reps_a, reps_b = _replicates(a, idx), _replicates(b, idx)
    for m in METRICS:
        drop = float(point_a[m][0] - point_b[m][0])
        lo = hi = None
        if len(common) >= 2:
            lo, hi = _quantiles(reps_a[m] - reps_b[m], confidence)
        entry[m] = {"normal": pct(point_a[m][0]), "empty": pct(point_b[m][0]),
                    "drop": pct(drop), "lo": pct(lo), "hi": pct(hi)}
    return entry


def compare_runs(normal_rows: Sequence[Mapping], empty_rows: Sequence[Mapping],
                 n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                 confidence: float = DEFAULT_CONFIDENCE,
                 paper: dict | None = None) -> dict[str, dict]:
    """Drop (normal - empty language) of IS / ES / CR per group, percent points.

    Only tasks present in both runs count (a task-paired comparison); the interval is the
    paired stratified task bootstrap (the same resampled tasks in both runs). With `paper`
    (the loaded Table 1), the paper's π₀.₅ drop is added per group.
    """
    normal_groups, empty_groups = group_rows(normal_rows), group_rows(empty_rows)
    paper_drop = _paper_drops(paper) if paper is not None else {}
    out = {}
    for group in normal_groups:
        if group not in empty_groups:
            continue
        common = sorted({_task_key(r) for r in normal_groups[group]} &
                        {_task_key(r) for r in empty_groups[group]})
        if not common:
            continue
        entry = _paired_drop(normal_groups[group], empty_groups[group], common,
                             n_boot, seed, confidence, group)
        if group in paper_drop:
            entry["paper_drop"] = paper_drop[group]
        out[group] = entry
    return out


# =============================================================================== INT-ACT per task

def _row_intact(run_dir: Path, row: Mapping, suite, errors: list[str]) -> dict | None:
    """``row_intact`` of one row: the evaluator's metrics, else re-scored from its episode
    file; None when it needs the file and has none."""
    from vla_bridge.benchmarks.intact.metrics import row_intact
    from vla_bridge.embodiment.episode_record import load_episode
    stored = row_intact(row)
    if all(m is not None for m in stored.values()):
        return stored
    file = row.get("episode_file")
    if not file or not (run_dir / file).is_file():
        return None
    if row.get("status", "ok") != "ok":  # a failed episode is not scored
        return stored
    try:
        record, _meta = load_episode(run_dir / file)
        return row_intact(row, record, suite)
    except Exception as exc:  # noqa: BLE001 - one bad file must not sink the report
        errors.append(f"{file}: {type(exc).__name__}: {exc}")
        return stored


def _pct_groups(groups: Mapping) -> dict:
    ordered = sorted(groups, key=level_order)
    return {g: {k: (v if k == "n_episodes" else pct(v)) for k, v in groups[g].items()}
            for g in ordered}


def intact_tables(run_dir: str | Path, rows: Sequence[Mapping]) -> dict | None:
    """INT-ACT rates (percent) per task the rows name (``by_task``: "language" / "cue" ->
    {"task": "followed language" / "followed cue", "groups"}), every metric against one task
    with that task's completion as success. The evaluator stores them per task; older rows
    are re-scored from their episode files. ``groups`` / ``task``: the rows' own (scored)
    task's, as the report showed before. None when no row could be scored."""
    from vla_bridge.benchmarks.intact.metrics import summarize_intact_by_task
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    run_dir, suite, errors = Path(run_dir), load_suite(), []
    per_row = [_row_intact(run_dir, r, suite, errors) for r in rows]
    by_task = summarize_intact_by_task(rows, [m or {} for m in per_row])
    if not by_task:
        return None
    role = next((scored_role(r) for r in rows if scored_role(r) in by_task), next(iter(by_task)))
    scored = [(r, m) for r, m in zip(rows, per_row) if m and any(v is not None for v in m.values())]
    return {"task": ROLE_LABELS[role], "groups": _pct_groups(by_task[role]["groups"]),
            "by_task": {r: {"task": v["task"], "groups": _pct_groups(v["groups"])}
                        for r, v in by_task.items()},
            "n_episodes_scored": len(scored), "n_without_file": per_row.count(None),
            "episodes": [{"scene": r.get("scene"), "level": r.get("level"), "key": r.get("key"),
                          **m} for r, m in scored],
            "errors": errors}
