"""LIBERO demonstrations by the LIBERO oracle (#24 point 3), one task per call.

Runs in the LIBERO virtualenv (robosuite needs mujoco 3.3.7); `vla-bridge demos --benchmark
libero` (``vla_bridge.data.libero_demos``) calls it once per task and turns what it writes into
a LeRobotDataset in the main venv::

    .venv-libero/bin/python -m vla_bridge.data.libero_episodes --out DIR --suite SUITE \
        --task N [--per-task 50] [--seed 20000] [--size 128]

* **Scenes no evaluation restores.** Each attempt is a fresh scene: the reset's own placement
  draw (LIBERO's region samplers, how its shipped initial states were made) under the
  attempt's seed (`attempt_seed`), never one of the 50 initial states an evaluation restores
  (``LiberoBackend(initial_states="drawn")``).
* **An evaluation episode.** The episode runs as the graph runs one (``SimSession``: the
  settle steps, the suite's step budget, the action ranges; the oracle's chunks planned on the
  world state), with both cameras rendered after every step at SIZE x SIZE (LIBERO's own
  datasets: 128). It ends at LIBERO's first success.
* **Only successes are kept.** A failed attempt (the budget ran out, the oracle found no plan)
  is replaced by the next seed, up to ATTEMPTS_FACTOR x per_task attempts.

Each kept episode is ``DIR/ep_<k>.npz``, written whole or not at all: its n frames at LIBERO's
20 Hz, ``state`` [n, 8] (the observation a step starts from), ``action`` [n, 7] (that step's
executed action, contract convention: gripper 1 = open), ``image_<camera>`` [n, H, W, 3] (as
the policy sees them), and ``instruction``, ``seed``, ``attempt``. ``DIR/done.json`` is written
when the task has its per_task episodes (or the attempts ran out: it says how many). A rerun
resumes after the last attempt written. One line per attempt on stdout.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["attempt_seed", "episode_path", "kept_episodes", "build_task", "main"]

ATTEMPTS_FACTOR = 2
DONE = "done.json"
#: LIBERO's own datasets are 128 x 128 (openpi resizes to 224 anyway)
DEFAULT_SIZE = 128


def attempt_seed(suite: str, task: int, attempt: int, base_seed: int) -> int:
    """The seed of a task's attempt: stable across runs and machines, distinct per task and
    attempt, below 2**32 (robosuite's `env.seed`), never the evaluation's 7 (base_seed apart)."""
    digest = hashlib.sha256(f"libero-demo/{suite}/{task}/{attempt}".encode()).digest()
    return (int(base_seed) + int.from_bytes(digest[:4], "big")) % 2 ** 32


def episode_path(out: Path, k: int) -> Path:
    return Path(out) / f"ep_{k:03d}.npz"


def kept_episodes(out: Path) -> list[dict]:
    """The readable episodes already in `out` (their scalar fields), in order; a torn file
    (an interrupted write never leaves one, a damaged disk may) is dropped with one line, and
    so is what an interrupted write left (``.ep_<k>.partial``)."""
    for stale in Path(out).glob(".ep_*.partial"):
        stale.unlink(missing_ok=True)
    kept = []
    for path in sorted(Path(out).glob("ep_*.npz")):
        try:
            with np.load(path) as data:
                kept.append({"path": path, "attempt": int(data["attempt"]),
                             "seed": int(data["seed"]), "frames": len(data["state"])})
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            print(f"{path.name}: unreadable, attempted again ({exc})", file=sys.stderr)
            path.unlink(missing_ok=True)
    return kept


def run_attempt(session, oracle, trial, seed: int) -> tuple[dict | None, str]:
    """One oracle episode from a drawn scene; (its frames, "success") or (None, why not)."""
    from vla_bridge import contract
    from vla_bridge.policy_nodes.oracle.primitives import PlanningError
    from vla_bridge.sim_nodes.session import Budget

    backend = session.backend
    cameras = backend.embodiment.camera_names
    task = dict(trial.task(), layout=f"{trial.task_index}:0")
    steps = backend.step_budget(trial.suite)  # the evaluation's budget (evaluation.libero_run)
    budget = Budget(math.ceil(steps / oracle.chunk_size) + 1, oracle.chunk_size, steps)
    session.begin(trial.suite, task["layout"], seed, budget, task=task)
    oracle.reset()
    oracle.set_instruction(trial.instruction, task)
    states, actions, images = [], [], {c: [] for c in cameras}

    def observe() -> None:
        states.append(backend.joint_positions().astype(np.float32))
        for cam in cameras:
            images[cam].append(backend.render(cam))

    observe()
    try:
        while not session.done:
            obs = session.observation(images=False, world=True)
            chunk = contract.validate_chunk(oracle.predict(obs), backend.embodiment.action_dim)
            for command in session.execute(chunk):
                actions.append(np.asarray(command, np.float32))
                observe()
    except PlanningError as exc:
        return None, f"the oracle could not plan: {exc}"
    if not backend.success:
        return None, f"no success ({session.reason}; oracle: {oracle.phase} {oracle.note})".rstrip()
    n = len(actions)  # the observation after the last step starts no step
    frames = {"state": np.stack(states[:n]), "action": np.stack(actions)}
    frames.update({f"image_{c}": np.stack(v[:n]) for c, v in images.items()})
    return frames, "success"


def build_task(out: Path, suite: str, task: int, per_task: int, base_seed: int,
               size: int = DEFAULT_SIZE, echo=print) -> dict:
    """Write task `task` of `suite`'s demonstrations into `out` (resuming); done.json's dict."""
    from vla_bridge.benchmarks.libero.protocol import plan_trials
    from vla_bridge.policy_nodes.oracle.libero import LiberoOracle
    from vla_bridge.sim_nodes.libero.backend import LiberoBackend
    from vla_bridge.sim_nodes.session import SimSession

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trial = plan_trials(suite, str(task), "0")[0]  # name, instruction and BDDL goal
    kept = kept_episodes(out)
    start = max((e["attempt"] for e in kept), default=-1) + 1
    rejected: dict[str, int] = {}
    backend = None
    t0 = time.monotonic()
    try:
        for attempt in range(start, per_task * ATTEMPTS_FACTOR):
            if len(kept) >= per_task:
                break
            if backend is None:
                backend = LiberoBackend(width=size, height=size, render_every_step=True,
                                        initial_states="drawn")
                session, oracle = SimSession(backend), LiberoOracle()
            seed = attempt_seed(suite, task, attempt, base_seed)
            t1 = time.monotonic()
            frames, why = run_attempt(session, oracle, trial, seed)
            if frames is None:
                rejected[why] = rejected.get(why, 0) + 1
                echo(f"{suite}/{task} attempt {attempt} (seed {seed}): rejected, {why}")
                continue
            path = episode_path(out, 1 + max((int(e["path"].stem[3:]) for e in kept),
                                             default=-1))
            tmp = path.with_name(f".{path.stem}.partial")
            with open(tmp, "wb") as f:
                np.savez(f, instruction=np.array(trial.instruction), seed=np.array(seed),
                         attempt=np.array(attempt), **frames)
            tmp.replace(path)  # whole or absent
            kept.append({"path": path, "attempt": attempt, "seed": seed,
                         "frames": len(frames["state"])})
            echo(f"{suite}/{task} attempt {attempt} (seed {seed}): kept as {path.name}, "
                 f"{len(frames['state'])} frames, {time.monotonic() - t1:.1f} s")
    finally:
        if backend is not None:
            backend.close()
    done = {"suite": suite, "task": task, "name": trial.name, "instruction": trial.instruction,
            "kept": len(kept), "per_task": per_task, "rejected": rejected,
            "attempts": max((e["attempt"] for e in kept), default=-1) + 1 + sum(rejected.values()),
            "frames": sum(e["frames"] for e in kept), "size": size, "base_seed": base_seed,
            "wall_s": round(time.monotonic() - t0, 1)}
    (out / DONE).write_text(json.dumps(done) + "\n")
    return done


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vla_bridge.data.libero_episodes",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the task's episode directory")
    parser.add_argument("--suite", required=True, help="a LIBERO suite, e.g. libero_object")
    parser.add_argument("--task", type=int, required=True, help="task number in the suite")
    parser.add_argument("--per-task", type=int, default=50, help="episodes to keep")
    parser.add_argument("--seed", type=int, default=20_000, help="base seed of the attempts")
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="image side, pixels")
    args = parser.parse_args(argv)
    if args.per_task < 1 or not 16 <= args.size <= 1024:
        print("libero_demos: --per-task must be >= 1 and --size in 16..1024", file=sys.stderr)
        return 2
    try:
        build_task(Path(args.out), args.suite, args.task, args.per_task, args.seed, args.size,
                   echo=lambda line: print(line, flush=True))
    except ValueError as exc:
        print(f"libero_demos: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
