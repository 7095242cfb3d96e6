"""The report's benchmark sections beyond RoboFollow's table: INT-ACT rates re-scored from the
saved episode files (``episodes/<scene>/<task>_r<round>.npz``) and the LIBERO-VIFO Table 2
metrics of cue-protocol episodes. (The policy latency section is ``run_dir.latency_summary``.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from vla_bridge.evaluation.report.common import level_order, pct

_INTACT_FIELDS = ("intention_correct", "grasp_success", "task_success", "wrong_object_attempt",
                 "wrong_object")


def intact_rates(run_dir: str | Path, rows: Sequence[Mapping]) -> dict | None:
    """INT-ACT rates re-scored from the episode files; None when the run saved none."""
    from vla_bridge.benchmarks.intact.metrics import intact_metrics, summarize_intact
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    from vla_bridge.embodiment.episode_record import load_episode
    run_dir = Path(run_dir)
    present = [r for r in rows if r.get("episode_file") and (run_dir / r["episode_file"]).is_file()]
    if not present:
        return None
    suite = load_suite()
    scored, errors = [], []
    for r in present:
        try:
            record, _meta = load_episode(run_dir / r["episode_file"])
            metrics = intact_metrics(suite.get(r["task_id"]), record, bool(r.get("complete")))
        except Exception as exc:  # one bad file must not sink the report
            errors.append(f"{r['episode_file']}: {type(exc).__name__}: {exc}")
            continue
        scored.append({"scene": r["scene"], "level": r["level"], "key": r.get("key"),
                       **{k: metrics[k] for k in _INTACT_FIELDS}})
    groups = {}
    for group, m in (summarize_intact(scored).items() if scored else []):
        groups[group] = {k: (pct(v) if k != "n_episodes" else v) for k, v in m.items()}
    ordered = {g: groups[g] for g in sorted(groups, key=level_order)}
    return {"n_episodes_scored": len(scored), "n_without_file": len(rows) - len(present),
            "groups": ordered, "episodes": scored, "errors": errors}


def cue_table(rows: Sequence[Mapping]) -> dict | None:
    """LIBERO-VIFO metrics of the run's cue-protocol episodes (None when it has none)."""
    from vla_bridge.benchmarks.vifo.protocols import cue_metrics
    if not any((r.get("cue") or {}).get("protocol") for r in rows):
        return None
    return cue_metrics(rows)
