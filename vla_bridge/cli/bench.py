"""`vla-bridge bench overhead|recording|throughput|campaign|multinode|sapien|crosssim|libero|
libero-vifo`: benchmarks that print figures (the node graph; campaigns over Ray:
perf/campaign.py; SAPIEN against MuJoCo: perf/sapien.py; LIBERO: perf/libero.py and the
LIBERO-VIFO protocols, perf/libero_vifo.py)."""
from __future__ import annotations

import argparse

from vla_bridge.perf.graph import overhead, recording, throughput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("which", choices=["overhead", "recording", "throughput", "campaign",
                                          "multinode", "sapien", "crosssim", "libero",
                                          "libero-vifo"],
                        help="benchmark to run")
    parser.add_argument("--per-level", type=int, default=2,
                        help="throughput, campaign, multinode: tasks sampled per scene and level")
    parser.add_argument("--rounds", type=int, default=2, help="campaign, multinode: rounds per task")
    parser.add_argument("--task", default="L0_place_yellow_block_1_behind_red_sphere")
    parser.add_argument("--episodes", type=int, default=4,
                        help="episodes per side; the first of each side is a warm-up")
    parser.add_argument("--scene", default="scene1",
                        help="crosssim: comma-separated scenes ('' = all four)")
    parser.add_argument("--levels", default="", help="crosssim: comma-separated levels ('' = all)")
    parser.add_argument("--policy", default=None,
                        help="crosssim: policy backend spec (default oracle); libero-vifo: "
                             "(default libero_oracle)")
    parser.add_argument("--output", default=None,
                        help="crosssim: write the rows to this JSON file; libero-vifo: the "
                             "runs' directory (default runs/libero_vifo)")
    parser.add_argument("--families", default="F1,F2,F3,F4,F5,F6,F7,F8",
                        help="libero-vifo: cue families, each at its default variant")
    parser.add_argument("--protocols", default="original,authorized,conflict,no_language",
                        help="libero-vifo: protocols to run")
    parser.add_argument("--vqa", default="",
                        help="libero-vifo: a VQA backend spec (random, http?url=...) that also "
                             "answers Part I-A on the same tasks: table2.txt has all four parts")
    parser.add_argument("--suite", default="libero_spatial,libero_object,libero_goal,libero_10",
                        help="libero: comma-separated LIBERO suites")
    parser.add_argument("--tasks", default="", help="libero: task numbers per suite, e.g. 0-9")
    parser.add_argument("--inits", default="0", help="libero: initial states per task, e.g. 0-4")
    parser.add_argument("--figure", default=None,
                        help="sapien: instead of timing, write MuJoCo/SAPIEN images of --task here")
    parser.add_argument("--no-graph", action="store_true",
                        help="sapien, libero: time in one process only, not through the graph")


def run(args: argparse.Namespace) -> int:
    if args.which == "libero-vifo":
        from vla_bridge.perf import libero_vifo
        return libero_vifo.protocol_table(args.output or "runs/libero_vifo", args.suite,
                                          args.tasks, args.inits, args.families,
                                          args.protocols, args.policy or "libero_oracle",
                                          args.vqa)
    if args.which == "libero":
        from vla_bridge.perf import libero
        return libero.speed(args.suite, args.tasks, args.inits, graph=not args.no_graph)
    if args.which in ("sapien", "crosssim"):
        from vla_bridge.perf import sapien
        if args.which == "sapien" and args.figure:
            return sapien.figure(args.task, args.figure)
        if args.which == "sapien":
            return sapien.speed(args.task, args.episodes, graph=not args.no_graph)
        return sapien.crosssim(args.scene, args.levels, args.policy or "oracle", args.output)
    if args.which in ("campaign", "multinode"):
        from vla_bridge.perf import campaign
        if args.which == "campaign":
            return campaign.scale(args.per_level, args.rounds)
        return campaign.multinode(args.per_level, args.rounds)
    if args.which == "throughput":
        return throughput(args.per_level)
    if args.which == "recording":
        return recording(args.task, args.episodes)
    return overhead(args.task, args.episodes)
