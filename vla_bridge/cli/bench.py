"""`vla-bridge bench overhead|recording|throughput|campaign|multinode`: benchmarks that print
figures (the node graph; campaigns over Ray: bench/campaign.py)."""
from __future__ import annotations

import argparse

from vla_bridge.bench.graph import overhead, recording, throughput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("which", choices=["overhead", "recording", "throughput", "campaign",
                                          "multinode"], help="benchmark to run")
    parser.add_argument("--per-level", type=int, default=2,
                        help="throughput, campaign, multinode: tasks sampled per scene and level")
    parser.add_argument("--rounds", type=int, default=2, help="campaign, multinode: rounds per task")
    parser.add_argument("--task", default="L0_place_yellow_block_1_behind_red_sphere")
    parser.add_argument("--episodes", type=int, default=4,
                        help="episodes per side; the first of each side is a warm-up")


def run(args: argparse.Namespace) -> int:
    if args.which in ("campaign", "multinode"):
        from vla_bridge.bench import campaign
        if args.which == "campaign":
            return campaign.scale(args.per_level, args.rounds)
        return campaign.multinode(args.per_level, args.rounds)
    if args.which == "throughput":
        return throughput(args.per_level)
    if args.which == "recording":
        return recording(args.task, args.episodes)
    return overhead(args.task, args.episodes)
