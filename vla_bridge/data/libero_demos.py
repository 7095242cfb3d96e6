"""`vla-bridge demos --benchmark libero`: LIBERO demonstrations by the LIBERO oracle, written as a
LeRobotDataset of the ``libero_panda`` embodiment (#24 point 3: the training set of a LIBERO
policy trained here).

* the tasks: suites x task numbers (default: LIBERO-Object and LIBERO-Spatial, every task),
  ``per_task`` episodes each (50, as LIBERO ships its own);
* each task's episodes are made in .venv-libero by ``data.libero_episodes`` (one process per
  task, ``workers`` at once): scenes from LIBERO's own placement samplers under each attempt's
  seed, never one of the initial states an evaluation restores; the oracle through the
  evaluation's session; only LIBERO successes are kept; frames at LIBERO's 20 Hz with both
  cameras at ``image_size`` (128, as LIBERO's datasets);
* a finished task becomes a LeRobotDataset under ``<out>/tasks/<suite>__<task>`` (written under
  a ``.partial`` name and renamed when whole); its raw episodes under ``<out>/raw/`` are then
  deleted; every task is merged into ``<out>/dataset``, with ``meta/vla_bridge_episodes.jsonl``
  (suite, task, seed, attempt, instruction per episode) as `vla-bridge demos` writes it.

Resumable: the same command again keeps the finished tasks and a task's finished episodes
(a changed plan is refused, as for RoboFollow's demos).
"""
from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from vla_bridge import contract as C
from vla_bridge.data import demos as D
from vla_bridge.data import lerobot_export as X
from vla_bridge.evaluation.progress import Progress
from vla_bridge.paths import LIBERO_PYTHON

DEFAULT_SUITES = ("libero_object", "libero_spatial")
RAW_DIR = "raw"
FPS = round(1.0 / C.LIBERO_PANDA.control_period)  # 20: every LIBERO step is a frame
WORKER = "vla_bridge.data.libero_episodes"


@dataclass(frozen=True)
class LiberoDemoPlan:
    suites: tuple[str, ...] = DEFAULT_SUITES
    tasks: str = ""  # task numbers within each suite, e.g. "0-4" ("" = all)
    per_task: int = 50
    image_size: int = 128
    video: bool = True
    base_seed: int = D.DEMO_BASE_SEED
    repo_id: str = "local/libero_demos"
    fps: int = FPS

    def shards(self) -> list[tuple[str, int]]:
        """(suite, task number) of every task the plan covers, in order (ValueError names an
        unknown suite or a task out of range)."""
        from vla_bridge.benchmarks.libero.protocol import plan_trials
        return [(t.suite, t.task_index) for t in plan_trials(list(self.suites), self.tasks, "0")]


def shard_name(suite: str, task: int) -> str:
    return f"{suite}__{task}"


def generate(out: str | Path, plan: LiberoDemoPlan, workers: int | None = None,
             echo: Callable[[str], None] = print) -> dict:
    """Build every unfinished task (``workers`` LIBERO processes at once), then merge."""
    out = Path(out)
    shards = plan.shards()
    if not LIBERO_PYTHON.exists():
        raise RuntimeError(f"{LIBERO_PYTHON} is absent: `bash scripts/setup.sh libero` builds it")
    D.check_plan(out, plan, free=("suites", "tasks"))
    todo = [s for s in shards if not (out / D.TASKS_DIR / shard_name(*s)).is_dir()]
    echo(f"demos: {len(shards)} LIBERO tasks x {plan.per_task} episodes at {plan.fps} fps, "
         f"{plan.image_size} px -> {out} ({len(shards) - len(todo)} tasks already done)")
    results = []
    with Progress(len(todo), "demo tasks") as bar, \
            concurrent.futures.ThreadPoolExecutor(max(1, min(workers or os.cpu_count() or 1,
                                                             len(todo) or 1))) as pool:
        jobs = {pool.submit(_run_worker, out, plan, suite, task, echo): (suite, task)
                for suite, task in todo}
        for job in concurrent.futures.as_completed(jobs):
            suite, task = jobs[job]
            raw = job.result()  # a worker's failure: raised, naming the task (finished kept)
            results.append(convert_task(out, plan, suite, task, raw))
            bar.update(item=D.result_line(results[-1]))
    summary = D.merge_shards(out, plan.repo_id, plan.fps, [shard_name(*s) for s in shards])
    summary["tasks_built"] = results
    (out / "demos_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _run_worker(out: Path, plan: LiberoDemoPlan, suite: str, task: int,
                echo: Callable[[str], None]) -> Path:
    """One task's episodes by the LIBERO process; its raw directory."""
    raw = out / RAW_DIR / shard_name(suite, task)
    cmd = [str(LIBERO_PYTHON), "-m", WORKER, "--out", str(raw), "--suite", suite,
           "--task", str(task), "--per-task", str(plan.per_task), "--seed", str(plan.base_seed),
           "--size", str(plan.image_size)]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    # one stream (two pipes read one after the other block once robosuite's warnings fill
    # the unread one): the attempts' lines are echoed, the last others kept for an error
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[2], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    others: collections.deque = collections.deque(maxlen=3)
    for line in proc.stdout:
        if line.startswith(f"{suite}/{task} "):  # one line per attempt: progress in a task
            echo(line.rstrip())
        elif line.strip():
            others.append(line.strip())
    if proc.wait() != 0:
        last = list(others)
        raise RuntimeError(f"task {shard_name(suite, task)}: the LIBERO process exited "
                           f"{proc.returncode}: {' | '.join(last)} (finished tasks and "
                           f"episodes are kept; rerun to resume)")
    return raw


def convert_task(out: Path, plan: LiberoDemoPlan, suite: str, task: int, raw: Path) -> dict:
    """A task's raw episodes as a finished LeRobotDataset under <out>/tasks (the raw ones then
    deleted); the task's result line fields."""
    done = json.loads((raw / "done.json").read_text())
    episodes = sorted(raw.glob("ep_*.npz"))
    if not episodes:
        raise RuntimeError(f"{suite}/{task}: no successful demonstration in {done['attempts']} "
                           f"attempts ({done['rejected']})")
    final = out / D.TASKS_DIR / shard_name(suite, task)
    partial = final.with_name(final.name + D.PARTIAL_SUFFIX)
    shutil.rmtree(partial, ignore_errors=True)
    dataset, facts = None, []
    for path in episodes:
        frames, fact = read_raw_episode(path, plan.fps, suite, task, done["name"])
        if dataset is None:
            dataset = X.create_dataset(partial, plan.repo_id, frames, plan.video)
        X.add_episode(dataset, frames, fact["instruction"], parallel_encoding=False)
        facts.append(fact)
    dataset.finalize()
    (partial / X.SIDECAR).write_text("".join(json.dumps(f) + "\n" for f in facts))
    partial.rename(final)
    shutil.rmtree(raw)
    return {"task": shard_name(suite, task), "kept": len(facts),
            "rejected": sum(done["rejected"].values()),
            "frames": sum(f["frames"] for f in facts), "wall_s": done["wall_s"]}


def read_raw_episode(path: Path, fps: int, suite: str, task: int,
                     name: str) -> tuple[X.EpisodeFrames, dict]:
    """One episode the LIBERO process wrote, as frames and its sidecar facts."""
    embodiment = C.LIBERO_PANDA
    with np.load(path) as data:
        images = {c: data[f"image_{c}"] for c in embodiment.camera_names}
        frames = X.EpisodeFrames(fps, data["state"], data["action"], images, embodiment)
        fact = {"task_id": f"{suite}/{task}", "suite": suite, "task": task, "name": name,
                "level": "train", "seed": int(data["seed"]), "attempt": int(data["attempt"]),
                "instruction": str(data["instruction"]), "success": True,
                "frames": frames.n}
    return frames, fact
