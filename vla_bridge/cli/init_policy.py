"""`vla-bridge init-policy DIR [--seed N] [--chunk-size N] [--embodiment NAME]`: a randomly initialised checkpoint of
the built-in tiny policy (vla_bridge/policy_nodes/torch_policy.py), the starting point of the
`torch?checkpoint=DIR` examples."""
from __future__ import annotations

import argparse
import sys

from vla_bridge import contract as C


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="checkpoint directory (created)")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    parser.add_argument("--chunk-size", type=int, default=None, help="actions per prediction")
    parser.add_argument("--embodiment", choices=sorted(C.EMBODIMENTS), default=C.DEFAULT_EMBODIMENT,
                        help="the graph it serves (its state, actions and cameras)")


def run(args: argparse.Namespace) -> int:
    from vla_bridge.policy_nodes.torch_policy import init_checkpoint

    config = {"embodiment": args.embodiment}
    if args.chunk_size is not None:
        config["chunk_size"] = args.chunk_size
    try:
        path = init_checkpoint(args.directory, seed=args.seed, **config)
    except (OSError, TypeError, ValueError) as exc:
        print(f"vla-bridge init-policy: cannot write a checkpoint to {args.directory}: {exc}",
              file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0
