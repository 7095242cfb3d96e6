"""`vla-bridge` command line: a registry of subcommands, one module each.

Each subcommand is a `Subcommand` (name, help, add_arguments(parser), run(args) -> exit
code) registered in `SUBCOMMANDS`. To add one, write `cli/<name>.py` with those two
functions and register it below; `main` builds the argparse tree from the registry, so
nothing else changes. Modules load lazily, so `vla-bridge --help` stays fast.

May import anything in the package (the top layer, beside ``bench``).
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


# ------------------------------------------------------------------------ subcommands


def _lazy(module: str, function: str):
    """`module.function`, imported on first call (each subcommand's imports stay its own)."""
    def call(*args):
        from importlib import import_module
        return getattr(import_module(module), function)(*args)
    return call


def _register_module(name: str, help_text: str) -> None:
    """Register the subcommand whose add_arguments/run live in vla_bridge.cli.<name>."""
    module = f"vla_bridge.cli.{name}"
    register(Subcommand(name, help_text, _lazy(module, "add_arguments"), _lazy(module, "run")))


_register_module("launch", "run a node graph (e.g. robofollow_sim) as separate processes")
_register_module("campaign", "shard a run's trials over Ray workers, each with its own node "
                             "graph (local Ray on demand, or --ray-address)")
_register_module("tasks", "list, filter and dry-run the RoboFollow evaluation suites")
_register_module("bench", "benchmarks that print figures (overhead of the node graph)")
_register_module("report", "tables with 95% intervals, paper numbers, plots and replay videos of a run")
_register_module("demos", "generate RoboFollow's training set with the oracle, as a LeRobot dataset")
_register_module("train", "train the built-in tiny policy on a LeRobot dataset (CPU)")
_register_module("export", "recorded episodes (--record true) -> a LeRobot dataset")
_register_module("serve", "serve a policy backend over openpi's websocket protocol")
_register_module("vqa", "LIBERO-VIFO Part I-A: ask a VQA backend the four cue questions "
                        "(detection, semantics, grounding, decision) on cued sim renders")

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

