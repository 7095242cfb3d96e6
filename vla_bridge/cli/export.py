"""`vla-bridge export lerobot RUN_DIR... --out DIR`: recorded episodes -> a LeRobotDataset.

Damaged episodes (a torn results line, a bag that cannot be read) are skipped with one line
each; an error is one line on stderr: exit 1 when the dataset could not be written (the errno
is in the line; nothing of the dataset is left), 2 when the export cannot be done as asked."""
from __future__ import annotations

import argparse
import sys

from vla_bridge.data.lerobot_export import (DatasetWriteError, ExportError, Selection,
                                            export_lerobot)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("format", choices=["lerobot"], help="dataset format")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run directories recorded with --record true")
    parser.add_argument("--out", required=True,
                        help="dataset root to create (must not exist unless --overwrite)")
    parser.add_argument("--repo-id", default="local/vla_bridge",
                        help="the dataset's repo id (a name only: nothing is uploaded)")
    parser.add_argument("--successful-only", action="store_true",
                        help="only episodes the scorer marks complete")
    parser.add_argument("--levels", type=_csv, default=(), help="e.g. L0,L1 (default: all)")
    parser.add_argument("--tasks", type=_csv, default=(), help="task ids (default: all)")
    parser.add_argument("--fps", type=int, default=None,
                        help="resample bags without dense frames (hardware runs) at this rate; "
                             "sim bags recorded with --record_fps keep their own")
    parser.add_argument("--images", choices=("video", "png"), default="video",
                        help="camera frames as videos (LeRobot's default, AV1) or PNG images")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")


def run(args: argparse.Namespace) -> int:
    selection = Selection(args.successful_only, args.levels, args.tasks)
    try:
        summary = export_lerobot(args.run_dirs, args.out, repo_id=args.repo_id,
                                 selection=selection, fps=args.fps,
                                 video=args.images == "video", overwrite=args.overwrite)
    except DatasetWriteError as exc:
        print(f"vla-bridge export: error: {exc}", file=sys.stderr)
        return 1
    except (ExportError, OSError) as exc:
        print(f"vla-bridge export: error: {exc}", file=sys.stderr)
        return 2
    skipped = ", ".join(f"{n} {why}" for why, n in summary["skipped"].items()) or "none"
    print(f"wrote {summary['episodes']} episodes, {summary['frames']} frames at "
          f"{summary['fps']} fps to {summary['root']} (skipped: {skipped})")
    return 0
