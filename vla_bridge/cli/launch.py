"""`vla-bridge launch GRAPH [--name value | name:=value ...]`: a node graph as processes."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vla_bridge.ros.launch_args import GRAPHS

    parser.add_argument("graph", help=f"graph to run: {', '.join(sorted(GRAPHS))}")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the node commands instead of running them")
    parser.add_argument("--params-file", default=None,
                        help="use this ROS 2 params file instead of the graph's own")
    parser.add_argument("graph_args", nargs=argparse.REMAINDER,
                        help="graph arguments: --name value or name:=value "
                             "(see `vla-bridge launch GRAPH --help`; every node's parameters: "
                             "`vla-bridge params`)")


def run(args: argparse.Namespace) -> int:
    from vla_bridge.ros import launcher

    return launcher.launch(args.graph, args.graph_args, params_file=args.params_file,
                           dry_run=args.dry_run)
