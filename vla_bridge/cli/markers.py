"""`vla-bridge markers DIR [--config FILE]`: a printable PNG per board and object marker of the
tracker's objects file (vla_bridge/robot_nodes/tracker/tracker.py), to print at the configured
sizes."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="where to write the PNGs (created)")
    parser.add_argument("--config", default=None, help="objects file (default: the package's)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import cv2

    from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig, marker_image

    config = TrackerConfig.load(args.config)
    out = Path(args.directory)
    out.mkdir(parents=True, exist_ok=True)
    items = [(m, f"board_{m}", config.board_marker_length) for m in config.board]
    items += [(o.id, o.name, o.marker_length) for o in config.objects.values()]
    for marker_id, label, length in items:
        path = out / f"{marker_id:02d}_{label}_{length * 1000:.0f}mm.png"
        cv2.imwrite(str(path), marker_image(config, marker_id))
        print(f"{path}: print the black square {length * 1000:.0f} mm wide")
    return 0
