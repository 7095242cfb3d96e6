"""Fixtures of a real MuJoCo sim session and one real oracle episode, shared by the evaluation
and reporting tests: their conftest.py files import them (``from support.oracle_episodes import
saved_oracle_episode, session``)."""
from __future__ import annotations

import pytest

from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
from vla_bridge.sim_nodes.session import SimSession


@pytest.fixture(scope="module")
def session():
    """One MuJoCo sim session per test module (building the model takes a while)."""
    s = SimSession(MujocoBackend())
    yield s
    s.backend.close()


SAVED_ORACLE_TASK = "L0_pickup_yellow_block_3"


@pytest.fixture(scope="module")
def saved_oracle_episode(session, tmp_path_factory):
    """One real oracle episode of SAVED_ORACLE_TASK, saved as the evaluator saves it:
    (store dir, episode path relative to it, its results row)."""
    from pathlib import Path

    from vla_bridge.benchmarks.robofollow.tasks import Trial, episode_seed, load_suite
    from vla_bridge.embodiment.episode_record import save_episode
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.evaluation.run_dir import result_row
    from vla_bridge.policy_nodes.oracle import OraclePolicy

    task = load_suite().get(SAVED_ORACLE_TASK)
    trial = Trial(task, 1, episode_seed(task.id, 1))
    record, score = run_episode_direct(session, OraclePolicy(), task, trial.seed, images=False)
    row = result_row(trial, score, instruction=task.instruction, frames=record.n)
    relative = Path("episodes") / task.scene / f"{task.id}_r1.npz"
    store = tmp_path_factory.mktemp("episode_store")
    (store / relative).parent.mkdir(parents=True)
    meta = {k: row[k] for k in ("key", "task_id", "scene", "level", "round", "seed", "instruction")}
    meta.update(layout=task.layout, intent_score=row["intent_score"], exec_score=row["exec_score"],
                complete=row["complete"])
    save_episode(store / relative, record, meta)
    row["episode_file"] = str(relative)
    return store, relative, row
