"""`vla-bridge cue-table RUN_DIR... [--output DIR]`: cue-protocol runs (e.g. one per protocol
and family) merged into one LIBERO-VIFO table (AVF, VTR, LFR, UVF, UVI per family) and the
per-task table (RoboFollow and INT-ACT per protocol and task); vla_bridge/evaluation/cues/metrics.py."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run directories (results.jsonl)")
    parser.add_argument("--output", metavar="DIR",
                        help="also write cue_metrics.json, cue_table.txt and cue_task_table.txt "
                             "here")


def run(args: argparse.Namespace) -> int:
    from vla_bridge.evaluation.cues.metrics import format_cue_tables, format_task_table, merge_runs

    metrics = merge_runs(args.run_dirs, args.output)
    print(format_cue_tables(metrics))
    if "by_task" in metrics:
        print()
        print(format_task_table(metrics["by_task"]))
    return 0
