"""`vla-bridge entropy [--summary]`: scene entropy (RoboFollow Eq. 1) of RoboFollow's training
suite (from config/robofollow) and of LIBERO's four suites, in bits
(vla_bridge/benchmarks/robofollow/entropy.py)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", action="store_true",
                        help="one line with both values instead of the JSON report "
                             "(which adds group sizes, per-suite values and the paper's numbers)")


def run(args: argparse.Namespace) -> int:
    import json

    from vla_bridge.benchmarks.robofollow.entropy import report

    result = report()
    if args.summary:
        rf, lib = result["robofollow"], result["libero"]
        print(f"RoboFollow {rf['bits']:.3f} bits (paper {rf['paper_bits']:.3f}), "
              f"LIBERO {lib['bits']:.3f} bits (paper {lib['paper_bits']['mean']:.3f})")
    else:
        print(json.dumps(result, indent=2))
    return 0
