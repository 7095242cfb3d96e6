"""`vla-bridge demos`: RoboFollow's training set, generated here by the scripted oracle and
written as a LeRobotDataset (the paper's recipe, appendix A).

* the 75 training tasks (or a subset: scenes, task ids), ``per_task`` episodes each (50);
* each episode in the task's scene layout with the benchmark's own per-object jitter (about
  1 cm per axis, RoboFollow's rules in config/robofollow/scenes.json) from its seed;
* each episode's instruction drawn from the task's paraphrases (``variants``: only the first
  N of them, for the paper's Table-3 controls);
* only episodes the scorer marks complete are kept; a failed one is replaced by a new seed,
  up to ``per_task * ATTEMPTS_FACTOR`` tries.

An episode is run in-process with the same SimSession, oracle and scorer as the node graph
(``evaluation.direct``), without images. A complete one is then replayed (its executed
commands, lock-step, so the replay is the episode; checked at its last frame) with the dense
frame sampler on, up to the moment the arms are back home plus MARGIN_S: demonstrations end
when the task does, not when the policy-call budget runs out.

Each task is one LeRobotDataset under ``<out>/tasks/<scene>__<task>``, written by one worker
process and moved into place only when complete, so an interrupted run resumes at the first
unfinished task. The tasks are then merged (LeRobot's ``aggregate_datasets``) into
``<out>/dataset``, with ``meta/vla_bridge_episodes.jsonl`` beside it as in the export.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from vla_bridge.benchmarks.robofollow.tasks import TrainingTask, episode_seed, load_suite
from vla_bridge.data import lerobot_export as X
from vla_bridge.evaluation.progress import Progress

DEMO_BASE_SEED = 20_000  # demonstrations never share a seed with an evaluation episode
MARGIN_S = 1.0  # frames kept after the arms are back home
ATTEMPTS_FACTOR = 2
TASKS_DIR, DATASET_DIR, PARTIAL_SUFFIX = "tasks", "dataset", ".partial"


@dataclass(frozen=True)
class DemoPlan:
    scenes: tuple[str, ...] = ("scene1", "scene2", "scene3", "scene4")
    task_ids: tuple[str, ...] = ()  # training task ids; empty = every task of the scenes
    per_task: int = 50
    variants: int | None = None  # paraphrases to draw from (None: all of them)
    fps: int = 10
    video: bool = True
    base_seed: int = DEMO_BASE_SEED
    repo_id: str = "local/robofollow_demos"

    def tasks(self) -> list[TrainingTask]:
        suite = load_suite()
        tasks = [t for scene in self.scenes for t in suite.training_tasks(scene)]
        if self.task_ids:
            known = {t.id for t in tasks}
            unknown = sorted(set(self.task_ids) - known)
            if unknown:
                raise ValueError(f"unknown training task(s) {unknown} in scenes "
                                 f"{list(self.scenes)}; known: {sorted(known)}")
            tasks = [t for t in tasks if t.id in self.task_ids]
        if not tasks:
            raise ValueError(f"no training task in scenes {list(self.scenes)}")
        return tasks


def demo_seed(task: TrainingTask, attempt: int, base_seed: int = DEMO_BASE_SEED) -> int:
    return episode_seed(f"demo/{task.scene}/{task.id}", attempt + 1, base_seed)


def draw_instruction(task: TrainingTask, seed: int, variants: int | None) -> str:
    """The episode's instruction: one of the task's first `variants` paraphrases, by seed."""
    options = task.instructions[:variants] if variants else task.instructions
    return options[int(np.random.default_rng(seed).integers(len(options)))]


def shard_name(task: TrainingTask) -> str:
    return f"{task.scene}__{task.id}"


# ============================================================================ one episode
def run_demo(session, task: TrainingTask, seed: int, instruction: str, fps: int):
    """(EpisodeFrames, facts) of a complete demonstration, or (None, why it is not kept)."""
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    from vla_bridge.policy_nodes.oracle.primitives import PlanningError

    try:
        record, score = run_episode_direct(session, OraclePolicy(), task.spec, seed,
                                           images=False, instruction=instruction)
    except PlanningError as exc:  # this seed's jitter put a target out of reach: next seed
        return None, f"the oracle could not plan: {exc}"
    if not score.complete:
        return None, f"not complete (IS {score.intent_score:.2f}, ES {score.exec_score:.2f})"
    done = score.flags.get("home_t") or score.flags.get("tc") or record.n - 1
    last = min(record.n - 1, int(done) + round(MARGIN_S / session.backend.control_period))
    frames = replay_frames(session, task, seed, record, last, fps)
    facts = {"task_id": task.id, "scene": task.scene, "level": "train", "seed": seed,
             "instruction": instruction, "intent_score": score.intent_score,
             "exec_score": score.exec_score, "complete": True, "success": True,
             "frames": frames.n, "ticks": last}
    return frames, facts


def replay_frames(session, task: TrainingTask, seed: int, record, last: int,
                  fps: int) -> X.EpisodeFrames:
    """The episode's ticks 1..last replayed with dense frames at `fps` (frame 0: the reset)."""
    backend = session.backend
    embodiment = backend.embodiment
    states, actions, images = [], [], {c: [] for c in embodiment.camera_names}

    def grab() -> None:
        states.append(backend.joint_positions().astype(np.float32))
        actions.append(session.command.astype(np.float32))
        for cam in embodiment.camera_names:
            images[cam].append(backend.render(cam))

    session.record_frames(fps, grab)
    try:
        session.begin(task.spec.scene, task.spec.layout, seed)
        grab()
        for tick in range(1, last + 1):
            session.step_action(record.commands[tick])
        _check_replay(session, record, last)
    finally:
        session.record_frames(0, None)
    return X.EpisodeFrames(fps, np.stack(states), np.stack(actions),
                           {c: np.stack(v) for c, v in images.items()}, embodiment)


def _check_replay(session, record, tick: int) -> None:
    """The replay must be the episode: same executed command and TCPs at its last tick."""
    world = session.backend.world_state()
    same = np.allclose(session.command, record.commands[tick], atol=1e-9) and all(
        np.allclose(world.tcp[arm].pos, record.tcp_pos[arm][tick], atol=1e-6) for arm in world.tcp)
    if not same:
        raise RuntimeError(f"the replay diverged from the episode at tick {tick}")


# ============================================================================ one task
def build_task(out: str, plan: DemoPlan, task: TrainingTask) -> dict:
    """Write one task's demonstrations as a finished LeRobotDataset (worker process)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    from vla_bridge.sim_nodes.session import SimSession

    final = Path(out) / TASKS_DIR / shard_name(task)
    partial = final.with_name(final.name + PARTIAL_SUFFIX)
    shutil.rmtree(partial, ignore_errors=True)
    t0, session, dataset, facts, rejected = time.monotonic(), SimSession(MujocoBackend()), None, [], {}
    try:
        for attempt in range(plan.per_task * ATTEMPTS_FACTOR):
            if len(facts) == plan.per_task:
                break
            seed = demo_seed(task, attempt, plan.base_seed)
            instruction = draw_instruction(task, seed, plan.variants)
            frames, fact = run_demo(session, task, seed, instruction, plan.fps)
            if frames is None:
                rejected[fact] = rejected.get(fact, 0) + 1
                continue
            if dataset is None:
                dataset = X.create_dataset(partial, plan.repo_id, frames, plan.video)
            # videos encoded here: the task workers already use every core, and a pool
            # worker may not start processes of its own
            X.add_episode(dataset, frames, instruction, parallel_encoding=False)
            facts.append(fact)
    finally:
        session.backend.close()
    if dataset is None:
        raise RuntimeError(f"{task.id}: no complete demonstration in "
                           f"{plan.per_task * ATTEMPTS_FACTOR} tries ({rejected})")
    dataset.finalize()
    (partial / X.SIDECAR).write_text("".join(json.dumps(f) + "\n" for f in facts))
    partial.rename(final)
    return {"task": shard_name(task), "kept": len(facts), "rejected": sum(rejected.values()),
            "frames": sum(f["frames"] for f in facts), "wall_s": time.monotonic() - t0}


# ============================================================================ the run
def generate(out: str | Path, plan: DemoPlan, workers: int | None = None,
             echo: Callable[[str], None] = print) -> dict:
    """Build every unfinished task (in parallel), then merge them into <out>/dataset."""
    out = Path(out)
    tasks = plan.tasks()
    check_plan(out, plan)
    todo = [t for t in tasks if not (out / TASKS_DIR / shard_name(t)).is_dir()]
    echo(f"demos: {len(tasks)} tasks x {plan.per_task} episodes at {plan.fps} fps -> {out} "
         f"({len(tasks) - len(todo)} tasks already done)")
    results = _build_tasks(out, plan, todo, workers or os.cpu_count() or 1)
    summary = merge(out, plan, tasks)
    summary["tasks_built"] = results
    (out / "demos_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def check_plan(out: Path, plan, free: tuple[str, ...] = ("scenes", "task_ids")) -> None:
    """A resumed directory must have been started with the same plan (it is one dataset);
    the `free` fields (which tasks) may change between runs."""
    out.mkdir(parents=True, exist_ok=True)
    path, current = out / "demos_plan.json", asdict(plan)
    current = json.loads(json.dumps(current))  # tuples as lists, as read back
    if path.exists():
        before = json.loads(path.read_text())
        differs = {k: (before.get(k), v) for k, v in current.items()
                   if k not in free and before.get(k) != v}
        if differs:
            raise ValueError(f"{out} was started with another plan: " + ", ".join(
                f"{k} {a!r} -> {b!r}" for k, (a, b) in differs.items()) + "; use a new --out")
    path.write_text(json.dumps(current, indent=2) + "\n")


def _build_tasks(out: Path, plan: DemoPlan, todo: list[TrainingTask], workers: int) -> list:
    results = []
    with Progress(len(todo), "demo tasks") as bar:
        if workers <= 1 or len(todo) <= 1:
            for task in todo:
                results.append(build_task(str(out), plan, task))
                bar.update(item=result_line(results[-1]))
            return results
        # spawn: MuJoCo's EGL context and the DDS-free sim must not be inherited by a fork
        with multiprocessing.get_context("spawn").Pool(min(workers, len(todo))) as pool:
            jobs = [(t, pool.apply_async(build_task, (str(out), plan, t))) for t in todo]
            for task, job in jobs:
                try:
                    results.append(job.get())
                except Exception as exc:  # noqa: BLE001 - a worker's failure: name the task
                    raise RuntimeError(f"task {shard_name(task)} failed: {exc!r} (finished "
                                       f"tasks are kept; rerun to resume)") from exc
                bar.update(item=result_line(results[-1]))
    return results


def result_line(result: dict) -> str:
    return (f"{result['task']}: {result['kept']} kept, {result['rejected']} rejected, "
            f"{result['frames']} frames, {result['wall_s']:.0f} s")


def merge(out: Path, plan: DemoPlan, tasks: list[TrainingTask]) -> dict:
    """<out>/dataset from the task datasets in plan order, and its episode facts."""
    return merge_shards(out, plan.repo_id, plan.fps, [shard_name(t) for t in tasks])


def merge_shards(out: Path, repo_id: str, fps: int, names: list[str]) -> dict:
    """<out>/dataset from the task datasets <out>/tasks/<name> in that order (rebuilt each
    time: cheap next to generating), and its episode facts (renumbered)."""
    from lerobot.datasets.aggregate import aggregate_datasets

    roots = [out / TASKS_DIR / name for name in names]
    target = out / DATASET_DIR
    shutil.rmtree(target, ignore_errors=True)
    aggregate_datasets([repo_id] * len(roots), repo_id, roots=roots, aggr_root=target)
    facts = [json.loads(line) for root in roots
             for line in (root / X.SIDECAR).read_text().splitlines()]
    for i, fact in enumerate(facts):
        fact["episode_index"] = i
    (target / X.SIDECAR).write_text("".join(json.dumps(f) + "\n" for f in facts))
    return {"episodes": len(facts), "frames": sum(f["frames"] for f in facts),
            "tasks": len(roots), "fps": fps, "dataset": str(target)}
