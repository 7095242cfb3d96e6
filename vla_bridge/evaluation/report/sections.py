"""The report's benchmark sections beyond RoboFollow's table: INT-ACT rates per task (the
evaluator's, or re-scored from the saved episode files ``episodes/<scene>/<task>_r<round>.npz``
for older rows) and the LIBERO-VIFO Table 2 metrics of cue-protocol episodes. (The policy
latency section is ``run_dir.latency_summary``.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence


def intact_rates(run_dir: str | Path, rows: Sequence[Mapping]) -> dict | None:
    """INT-ACT rates per task each row names (``tables.intact_tables``): the evaluator's, or
    re-scored from the episode files for older rows; None when no row could be scored."""
    from vla_bridge.evaluation.report.tables import intact_tables
    return intact_tables(run_dir, rows)


def cue_table(rows: Sequence[Mapping]) -> dict | None:
    """LIBERO-VIFO metrics of the run's cue-protocol episodes (None when it has none)."""
    from vla_bridge.benchmarks.vifo.protocols import cue_metrics
    if not any((r.get("cue") or {}).get("protocol") for r in rows):
        return None
    return cue_metrics(rows)
