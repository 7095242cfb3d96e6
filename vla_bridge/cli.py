"""`vla-bridge` command line: a registry of subcommands.

Each subcommand is a `Subcommand` (name, help, add_arguments(parser), run(args) -> exit
code) registered in `SUBCOMMANDS`. To add one, write a module with those two functions and
register it with `register(...)` below (or from the module itself); `main` builds the
argparse tree from the registry, so nothing else changes.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


SUBCOMMANDS: dict[str, Subcommand] = {}


def register(command: Subcommand) -> Subcommand:
    if command.name in SUBCOMMANDS:
        raise ValueError(f"subcommand {command.name!r} is already registered")
    SUBCOMMANDS[command.name] = command
    return command

# ------------------------------------------------------------------------------ launch


def _launch_arguments(parser: argparse.ArgumentParser) -> None:
    from vla_bridge.launch_args import GRAPHS

    parser.add_argument("graph", help=f"graph to run: {', '.join(sorted(GRAPHS))}")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the node commands instead of running them")
    parser.add_argument("--params-file", default=None,
                        help="use this ROS 2 params file instead of the graph's own")
    parser.add_argument("graph_args", nargs=argparse.REMAINDER,
                        help="graph arguments: --name value or name:=value "
                             "(see `vla-bridge launch GRAPH --help`)")


def _launch_run(args: argparse.Namespace) -> int:
    from vla_bridge import launcher

    return launcher.launch(args.graph, args.graph_args, params_file=args.params_file,
                           dry_run=args.dry_run)


register(Subcommand("launch", "run a node graph (e.g. robofollow_sim) as separate processes",
                    _launch_arguments, _launch_run))

# ------------------------------------------------------------------------ tasks, bench


def _lazy(module: str, function: str):
    def call(*args):
        from importlib import import_module
        return getattr(import_module(module), function)(*args)
    return call


register(Subcommand("tasks", "list, filter and dry-run the RoboFollow evaluation suites",
                    _lazy("vla_bridge.task_cli", "add_arguments"), _lazy("vla_bridge.task_cli", "run")))
register(Subcommand("bench", "benchmarks that print figures (overhead of the node graph)",
                    _lazy("vla_bridge.bench", "add_arguments"), _lazy("vla_bridge.bench", "run")))
register(Subcommand("report", "tables with 95% intervals, paper numbers, plots and replay videos of a run",
                    _lazy("vla_bridge.report", "add_arguments"), _lazy("vla_bridge.report", "run")))
register(Subcommand("serve", "serve a policy backend over openpi's websocket protocol",
                    _lazy("vla_bridge.policy_nodes.serve", "add_arguments"),
                    _lazy("vla_bridge.policy_nodes.serve", "run")))
register(Subcommand("vqa", "LIBERO-VIFO Part I-A: ask a VQA backend the four cue questions "
                           "(detection, semantics, grounding, decision) on cued sim renders",
                    _lazy("vla_bridge.cues.vqa", "add_arguments"), _lazy("vla_bridge.cues.vqa", "run")))

# -------------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vla-bridge", description="Evaluate VLA policies in simulation and on real arms.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in SUBCOMMANDS.values():
        command.add_arguments(sub.add_parser(command.name, help=command.help.replace("%", "%%"),
                                             description=command.help))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return SUBCOMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
