"""LIBERO-VIFO metrics of run directories: cue_metrics.json and cue_table.txt.

``write_cue_metrics(run_dir)`` aggregates a run's results rows with
``benchmarks.vifo.protocols.cue_metrics`` and writes both files atomically;
``python -m vla_bridge.evaluation.cue_metrics RUN_DIR... [--output DIR]`` merges several run
directories (e.g. one per protocol and family) into one Table-2-like table.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Iterable, Sequence

from vla_bridge.benchmarks.vifo.protocols import cue_metrics, format_cue_table
from vla_bridge.evaluation.run_dir import read_jsonl

__all__ = ["write_cue_metrics", "main"]


def write_cue_metrics(run_dir: str | Path, rows: Iterable[dict] | None = None) -> dict:
    """cue_metrics.json and cue_table.txt in ``run_dir`` from its results.jsonl (or ``rows``)."""
    run_dir = Path(run_dir)
    if rows is None:
        rows = _read_rows(run_dir)
    metrics = cue_metrics(rows)
    table = format_cue_table(metrics)
    for name, text in (("cue_metrics.json", json.dumps(metrics, indent=1)), ("cue_table.txt", table + "\n")):
        tmp = run_dir / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(run_dir / name)
    return metrics


def _read_rows(run_dir: Path) -> list[dict]:
    return read_jsonl(run_dir / "results.jsonl")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m vla_bridge.evaluation.cue_metrics",
        description="Merge the results of cue-protocol runs into one LIBERO-VIFO table "
                    "(AVF, VTR, LFR, UVF, UVI per family).")
    ap.add_argument("run_dirs", nargs="+", help="run directories (results.jsonl)")
    ap.add_argument("--output", help="also write cue_metrics.json and cue_table.txt here")
    args = ap.parse_args(argv)
    rows = [r for d in args.run_dirs for r in _read_rows(Path(d))]
    metrics = cue_metrics(rows)
    if args.output:
        Path(args.output).mkdir(parents=True, exist_ok=True)
        write_cue_metrics(args.output, rows)
    print(format_cue_table(metrics))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
