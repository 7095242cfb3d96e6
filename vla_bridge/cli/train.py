"""`vla-bridge train DATASET --out CKPT`: train the built-in tiny policy on a LeRobot dataset."""
from __future__ import annotations

import argparse
import sys

from vla_bridge.data.train import TrainOptions, train


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, e.g. 64x48, got {text!r}")
    if width < 16 or height < 16:
        raise argparse.ArgumentTypeError(f"at least 16x16, got {text!r}")
    return width, height


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", help="LeRobot dataset root (vla-bridge demos/export)")
    parser.add_argument("--out", required=True, help="checkpoint directory (written)")
    parser.add_argument("--steps", type=int, default=3000, help="optimiser steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (cosine decay)")
    parser.add_argument("--chunk-size", type=int, default=50, help="actions per prediction")
    parser.add_argument("--resolution", type=_size, default=(64, 48),
                        help="camera image size the policy sees, WIDTHxHEIGHT (default 64x48)")
    parser.add_argument("--camera", default="cam_high", help="camera the policy sees")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--shift", type=int, default=3,
                        help="augmentation: shift each training image by up to N pixels (0: off)")


def run(args: argparse.Namespace) -> int:
    options = TrainOptions(steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                           chunk_size=args.chunk_size, image_width=args.resolution[0],
                           image_height=args.resolution[1], camera=args.camera, seed=args.seed,
                           threads=args.threads, shift_px=args.shift)
    try:
        summary = train(args.dataset, args.out, options)
    except (ValueError, OSError, FileNotFoundError) as exc:
        print(f"vla-bridge train: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {summary['checkpoint']}: {summary['steps']} steps on {summary['frames']} frames "
          f"({summary['episodes']} episodes), loss {summary['first_loss']:.4f} -> "
          f"{summary['final_loss']:.4f}, {summary['wall_s']:.0f} s; serve it with "
          f"--policy 'torch?checkpoint={summary['checkpoint']}'")
    return 0
