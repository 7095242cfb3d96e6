"""`vla-bridge grounding`: how much of the RoboFollow task registry the LIBERO-VIFO parser and
grounder resolve, per scene (``coverage_report`` of
vla_bridge/benchmarks/vifo/instructions/grounding.py), with the first errors of each scene."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass  # no flags: all four scenes


def run(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.vifo.instructions.grounding import coverage_report

    for scene, row in coverage_report().items():
        extra = "".join(f", {k.replace('_ok', '')} {row[k]}/{row['tasks']}"
                        for k in ("route_ok", "orientation_ok") if k in row)
        print(f"{scene}: {row['parsed']}/{row['tasks']} parsed, source grounded "
              f"{row['source_ok']}/{row['tasks']}, target {row['target_ok']}/"
              f"{row['target_checked']}{extra}")
        for e in row["errors"][:8]:
            print("   ", e)
    return 0
