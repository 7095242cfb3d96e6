"""The report's benchmark sections beyond RoboFollow's table: INT-ACT rates per task (the
evaluator's, or re-scored from the saved episode files ``episodes/<scene>/<task>_r<round>.npz``
for older rows) and the LIBERO-VIFO Table 2 metrics: of cue-protocol episodes, and the Part
I-A VQA rows per family when the run directory holds ``vla-bridge vqa``'s answers in
``vqa/`` (``vla-bridge vqa --output <run>/vqa``). (The policy latency section is
``run_dir.latency_summary``.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence


def intact_rates(run_dir: str | Path, rows: Sequence[Mapping]) -> dict | None:
    """INT-ACT rates per task each row names (``tables.intact_tables``): the evaluator's, or
    re-scored from the episode files for older rows; None when no row could be scored."""
    from vla_bridge.reporting.tables import intact_tables
    return intact_tables(run_dir, rows)


#: where the report looks for Part I-A answers, inside the run directory
VQA_DIR = "vqa"


def vqa_table(run_dir: str | Path) -> dict | None:
    """Part I-A metrics per family (stages, FCA, VQA) of ``<run_dir>/vqa``, recomputed from
    its answers; None when there are none."""
    from vla_bridge.vqa.results import read_rows, vqa_metrics
    rows = read_rows(Path(run_dir) / VQA_DIR) if (Path(run_dir) / VQA_DIR).is_dir() else []
    if not rows:
        return None
    m = vqa_metrics(rows)
    return {"dir": VQA_DIR, "by_family": m["by_family"], "average": m["average"],
            "overall": m["overall"], "backends": m["backends"], "variants": m["variants"]}


def cue_table(rows: Sequence[Mapping], run_dir: str | Path | None = None) -> dict | None:
    """LIBERO-VIFO metrics of the run's cue-protocol episodes, with ``vqa`` (``vqa_table``,
    or None); None when the run has neither."""
    from vla_bridge.benchmarks.vifo.protocols import cue_metrics
    vqa = vqa_table(run_dir) if run_dir is not None else None
    if not any((r.get("cue") or {}).get("protocol") for r in rows):
        return None if vqa is None else {"by_family": {}, "average": {}, "overall": {},
                                         "episodes": {}, "vqa": vqa}
    from vla_bridge.evaluation.cues.metrics import cue_instances
    return cue_metrics(rows) | {"vqa": vqa, "instances": cue_instances(rows)}
