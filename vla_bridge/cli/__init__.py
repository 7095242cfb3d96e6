"""`vla-bridge` command line: a registry of subcommands, one module each.

Each subcommand is a `Subcommand` (name, help, add_arguments(parser), run(args) -> exit
code) registered in `SUBCOMMANDS`. To add one, write `cli/<name>.py` with those two
functions and register it below; `main` builds the argparse tree from the registry, so
nothing else changes. Modules load lazily, so `vla-bridge --help` stays fast.

May import anything in the package (the top layer, beside ``perf`` and ``campaign``).
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
    """Register the subcommand whose add_arguments/run live in vla_bridge.cli.<name> (a dash
    in the command's name is an underscore in the module's: init-policy -> init_policy)."""
    module = f"vla_bridge.cli.{name.replace('-', '_')}"
    register(Subcommand(name, help_text, _lazy(module, "add_arguments"), _lazy(module, "run")))


# running an evaluation
_register_module("launch", "run a node graph (e.g. robofollow_sim) as separate processes")
_register_module("params", "a node's parameters (name, type, default, help) from its config "
                          "dataclass; with --graph, the values its params file gives")
_register_module("campaign", "shard a run's trials over Ray workers, each with its own node "
                             "graph (local Ray on demand, or --ray-address)")
_register_module("tasks", "list, filter and dry-run the RoboFollow evaluation suites")
_register_module("sweep", "run one graph at every level of a perturbation axis (a run per "
                         "level), then success per level with 95% intervals: sweep.json/md/png")
_register_module("perturb", "the perturbation axes (list) and, for a real pilot, the operator's "
                            "card of one axis, level and seed (card)")
# real trials
_register_module("doctor", "pre-flight checks of the arms (CAN, firmware, limits, mode, rates, "
                           "e-stop), cameras and table calibration; --fake: on the emulator")
_register_module("console", "operator console for real pilot trials: what the tracker cannot "
                            "see, asked stage by stage into a resumable trial sheet")
_register_module("markers", "write printable PNGs of the tracker's board and object markers")
# results
_register_module("report", "tables with 95% intervals, paper numbers, plots and replay videos "
                           "of a run")
_register_module("cue-table", "merge cue-protocol runs into one LIBERO-VIFO table and the "
                              "per-task table")
# data and policies
_register_module("demos", "generate a training set with an oracle (RoboFollow's, or LIBERO "
                          "suites'), as a LeRobot dataset")
_register_module("train", "train the built-in tiny policy on a LeRobot dataset (CPU)")
_register_module("init-policy", "write a randomly initialised checkpoint of the built-in tiny "
                                "policy")
_register_module("export", "recorded episodes (--record true) -> a LeRobot dataset")
_register_module("record-demos", "teleoperated demonstrations: leader arms drive the followers, "
                                 "an operator console saves each episode as a bag (export lerobot)")
_register_module("serve", "serve a policy backend over openpi's websocket protocol")
# the benchmarks themselves: VQA, the suites, the instructions
_register_module("vqa", "LIBERO-VIFO Part I-A: ask a VQA backend the four cue questions "
                        "(detection, semantics, grounding, decision) on cued sim renders")
_register_module("entropy", "scene entropy (RoboFollow Eq. 1) of RoboFollow's and LIBERO's "
                            "training suites, in bits")
_register_module("grounding", "how many RoboFollow tasks the LIBERO-VIFO parser and grounder "
                              "resolve, per scene")
# performance and upkeep
_register_module("bench", "performance benchmarks that print figures (one sub-command each: "
                          "`vla-bridge bench --help`)")
_register_module("dds-cleanup", "remove the Fast DDS shared-memory files that dead processes "
                                "left in /dev/shm")

# -------------------------------------------------------------------------------- main


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr (the command, what is wrong), exit status 2; the
    sub-commands' parsers (and theirs, e.g. `vla-bridge bench overhead`) are of this class
    too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vla-bridge", description="Evaluate VLA policies in simulation and on real arms.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in SUBCOMMANDS.values():
        command.add_arguments(sub.add_parser(command.name, help=command.help.replace("%", "%%"),
                                             description=command.help))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return SUBCOMMANDS[args.command].run(args)

