"""LIBERO's first observations, saved for Part I-A (LIBERO-VIFO's VQA on LIBERO's images).

Runs in the LIBERO virtualenv (robosuite needs mujoco 3.3.7)::

    .venv-libero/bin/python -m vla_bridge.sim_nodes.libero.frames --out DIR \
        [--suites libero_spatial,...] [--tasks 0-9] [--inits 0]

For each task and initial state it does what an episode's reset does (restore the state,
let the objects settle: ``LiberoBackend.reset``, with the episodes' seed, so the furniture is
where the episode of that initial state has it: openpi's scene) and writes
``DIR/<suite>__<task>__i<init>.npz``: both cameras' images as the policy sees them
(``agentview``, ``wrist``), the world state (``world_json``: objects, region sites, articulated
parts, camera poses), from which the main venv's VQA runner draws the cues
(``vla_bridge.vqa.libero``), and ``scene`` (SCENE: how it was seeded). A frame already there
with this SCENE is kept (the set is a cache: delete it to render again); one rendered under
another seeding (before ``scene`` was written: seed 0, its furniture ~15 mm off the episodes')
is rendered again. One line per frame on stdout.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from vla_bridge.benchmarks.libero.protocol import SEEDING, plan_trials
from vla_bridge.embodiment.world import world_to_dict

__all__ = ["frame_path", "frame_scene", "render_frames", "main"]

FRAME_SEED = 7  # the episodes' task seed (plan_trials' and openpi's): their furniture
SCENE = f"{SEEDING} seed {FRAME_SEED}"  # written into each frame; another one is rendered again


def frame_path(out: Path, suite: str, task: int, init: int) -> Path:
    return Path(out) / f"{suite}__{task}__i{init}.npz"


def frame_scene(path: Path) -> str | None:
    """The SCENE a frame was rendered under ("" for one from before it was written; None: no
    readable frame there)."""
    try:
        with np.load(path) as data:
            return str(data["scene"]) if "scene" in data.files else ""
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def render_frames(out: Path, suites: str = "", tasks: str = "", inits: str = "0",
                  backend=None, echo=print) -> list[Path]:
    """Render the missing frames of suites x tasks x inits into ``out``; their paths."""
    from vla_bridge.sim_nodes.libero.backend import LiberoBackend
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    own = backend is None
    paths = []
    try:
        for trial in plan_trials(suites, tasks, inits, seed=FRAME_SEED):
            path = frame_path(out, trial.suite, trial.task_index, trial.init)
            paths.append(path)
            if frame_scene(path) == SCENE:
                continue
            if backend is None:
                backend = LiberoBackend()
            t0 = time.perf_counter()
            backend.reset(trial.suite, trial.layout, trial.seed)
            images = {cam: backend.render(cam) for cam in backend.cameras}
            world = json.dumps(world_to_dict(backend.world_state()))
            tmp = path.with_suffix(".tmp.npz")
            np.savez_compressed(tmp, world_json=np.array(world), scene=np.array(SCENE),
                                **{f"image_{cam}": img for cam, img in images.items()})
            tmp.replace(path)  # whole or absent: an interrupted run never leaves half a frame
            echo(f"{path.name}: {trial.instruction} ({time.perf_counter() - t0:.1f} s)")
    finally:
        if own and backend is not None:
            backend.close()
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vla_bridge.sim_nodes.libero.frames",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory of the frames")
    parser.add_argument("--suites", default="", help="comma-separated (default: the four)")
    parser.add_argument("--tasks", default="", help="task numbers, e.g. 0-9 (default: all)")
    parser.add_argument("--inits", default="0", help="initial states, e.g. 0 or 0-4")
    args = parser.parse_args(argv)
    try:
        render_frames(Path(args.out), args.suites, args.tasks, args.inits)
    except ValueError as exc:
        print(f"libero_frames: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
