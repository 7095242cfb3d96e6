"""`vla-bridge perturb list` (the perturbation axes, their levels and what a level changes) and
`vla-bridge perturb card AXIS:LEVEL --seed N [--scene S --layout L] [--json]` (for a real pilot
trial, what the operator changes before it, from the seeded draws the sim uses:
`benchmarks.perturbation_cards`)."""
from __future__ import annotations

import argparse
import json
import sys

PROG = "vla-bridge perturb"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="each axis, its levels and what a level changes",
                   description="each axis, its levels and what a level changes")
    card = sub.add_parser("card", help="what the operator changes before a real trial",
                          description="what the operator changes before a real trial at one "
                                      "axis and level, from the episode seed's draws (the same "
                                      "the sim uses); the trial's seed: `vla-bridge tasks "
                                      "--dry-run`")
    card.add_argument("spec", metavar="AXIS:LEVEL", help="e.g. camera:2")
    card.add_argument("--seed", type=int, required=True, help="the trial's episode seed")
    card.add_argument("--scene", default="scene1",
                      help="RoboFollow scene whose objects object_jitter moves (default scene1)")
    card.add_argument("--layout", default="default",
                      help="the scene's layout (default: default)")
    card.add_argument("--json", action="store_true", help="print the card as JSON")


def run(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks import perturbation_cards as cards

    if args.action == "list":
        print(cards.axes_text(), end="")
        return 0
    try:
        card = cards.card(cards.parse_spec(args.spec), args.seed, args.scene, args.layout)
    except ValueError as e:
        print(f"{PROG} card: {e}", file=sys.stderr)
        return 2
    print(json.dumps(card, indent=1) if args.json else cards.card_text(card), end="\n"
          if args.json else "")
    return 0
