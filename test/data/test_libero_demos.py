"""`vla-bridge demos --benchmark libero` (#24 point 3) with a tiny budget: a loadable LeRobot
dataset of LIBERO oracle successes in scenes LIBERO's samplers drew (never an evaluation's
initial state), whose actions, replayed from the same seed, give the same states and LIBERO's
success; resumable; refusals that name the problem."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from support.libero_venv import needs_libero_venv, run_in_libero_venv

from vla_bridge import contract as C
from vla_bridge.data import demos as D
from vla_bridge.data import lerobot_export as X
from vla_bridge.data import libero_demos as L
from vla_bridge.data import libero_episodes as W

SUITE, TASK, SIZE = "libero_object", 0, 64


def test_attempt_seeds_are_stable_distinct_and_never_the_evaluations():
    seeds = {W.attempt_seed(s, t, a, D.DEMO_BASE_SEED)
             for s in ("libero_object", "libero_spatial") for t in range(10) for a in range(100)}
    assert len(seeds) == 2000 and 7 not in seeds and all(0 <= s < 2 ** 32 for s in seeds)
    assert W.attempt_seed(SUITE, 0, 0, 20_000) == W.attempt_seed(SUITE, 0, 0, 20_000)
    assert W.attempt_seed(SUITE, 0, 0, 20_000) != W.attempt_seed(SUITE, 0, 0, 20_001)


def test_a_torn_episode_file_is_dropped_and_attempted_again(tmp_path, capsys):
    np.savez(W.episode_path(tmp_path, 0), state=np.zeros((3, 8)), seed=np.array(5),
             attempt=np.array(0))
    W.episode_path(tmp_path, 1).write_bytes(b"PK\x03\x04 torn")
    kept = W.kept_episodes(tmp_path)
    assert [(e["attempt"], e["seed"], e["frames"]) for e in kept] == [(0, 5, 3)]
    assert not W.episode_path(tmp_path, 1).exists()
    assert "ep_001.npz: unreadable, attempted again" in capsys.readouterr().err
    (tmp_path / ".ep_002.partial").write_bytes(b"cut")  # a write the process did not finish
    assert len(W.kept_episodes(tmp_path)) == 1 and not (tmp_path / ".ep_002.partial").exists()


@pytest.mark.parametrize("args, message", [
    (["--benchmark", "libero", "--scenes", "scene2"], "--scenes is RoboFollow's"),
    (["--benchmark", "libero", "--variants", "3"], "--variants is RoboFollow's"),
    (["--benchmark", "libero", "--fps", "10"], "at its 20 Hz control rate, got --fps 10"),
    (["--suites", "libero_object"], "--suites is for --benchmark libero"),
    (["--image-size", "64"], "--image-size is for --benchmark libero"),
    (["--benchmark", "libero", "--suites", "libero_nope"], "unknown LIBERO suite(s) ['libero_nope']"),
    (["--benchmark", "libero", "--tasks", "12"], "tasks '12' out of range 0..9"),
])
def test_the_cli_refuses_what_the_benchmark_cannot_use(tmp_path, args, message):
    proc = subprocess.run([sys.executable, "-m", "vla_bridge.cli", "demos", "--out",
                           str(tmp_path / "out"), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out" / D.TASKS_DIR).exists()  # nothing was started


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    pytest.importorskip("lerobot")
    if not L.LIBERO_PYTHON.exists():
        pytest.skip(f"{L.LIBERO_PYTHON} absent: `bash scripts/setup.sh libero` builds it")
    out = tmp_path_factory.mktemp("libero_demos") / "out"
    plan = L.LiberoDemoPlan(suites=(SUITE,), tasks=str(TASK), per_task=1, image_size=SIZE,
                            video=False)
    lines: list[str] = []
    summary = L.generate(out, plan, workers=1, echo=lines.append)
    return out, plan, summary, lines


def _load(root):
    os.environ["HF_HUB_OFFLINE"] = "1"
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    return LeRobotDataset("local/libero_demos", root=root)


@pytest.mark.graph
@needs_libero_venv
def test_a_libero_demonstration_replays_to_the_same_states_and_success(generated, tmp_path):
    out, plan, summary, lines = generated
    assert any(f"{SUITE}/{TASK} attempt 0" in line for line in lines)  # the worker's progress
    dataset = _load(out / D.DATASET_DIR)
    assert dataset.num_episodes == summary["episodes"] == 1 and dataset.fps == 20
    assert len(dataset) == summary["frames"] and not (out / L.RAW_DIR / f"{SUITE}__{TASK}").exists()
    facts = [json.loads(x) for x in (out / D.DATASET_DIR / X.SIDECAR).read_text().splitlines()]
    fact = facts[0]
    assert fact["seed"] == W.attempt_seed(SUITE, TASK, fact["attempt"], plan.base_seed)
    assert fact["task_id"] == f"{SUITE}/{TASK}" and fact["success"]
    item = dataset[0]
    assert item[X.STATE].shape == (8,) and item[X.ACTION].shape == (7,)
    for cam in C.LIBERO_PANDA.camera_names:
        assert item[X.IMAGE_KEY.format(cam)].shape == (3, SIZE, SIZE)
    assert item["task"] == fact["instruction"] == "pick up the alphabet soup and place it in the basket"
    states = np.stack([dataset[k][X.STATE].numpy() for k in range(len(dataset))])
    actions = np.stack([dataset[k][X.ACTION].numpy() for k in range(len(dataset))])
    np.savez(tmp_path / "episode.npz", state=states, action=actions)
    # LIBERO's process: the drawn scene is none of the 50 an evaluation restores, the seed
    # draws it again, and the dataset's actions from there give its states and the success
    result = run_in_libero_venv(f"""
        import json
        import numpy as np
        from vla_bridge.sim_nodes.libero.backend import LiberoBackend
        from vla_bridge.sim_nodes.session import Budget, SimSession
        episode = np.load({str(tmp_path / "episode.npz")!r})
        backend = LiberoBackend(initial_states="drawn")
        session = SimSession(backend)
        session.begin({SUITE!r}, "{TASK}:0", {fact["seed"]}, Budget(200, 5, 280))
        drawn = np.asarray(backend.env.env.sim.get_state().flatten())
        shipped = backend._all_init_states({SUITE!r}, {TASK})
        nearest = float(min(np.abs(s[:len(drawn)] - drawn).max() for s in shipped))
        error = 0.0
        for state, action in zip(episode["state"], episode["action"]):
            error = max(error, float(np.abs(backend.joint_positions() - state).max()))
            session.step_action(action)
        print(json.dumps({{"nearest": nearest, "error": error, "success": backend.success,
                          "success_step": backend.success_step}}))
    """)
    assert result["nearest"] > 0.01, result  # not one of the shipped initial states
    assert result["error"] < 1e-5, result  # frame k is the state action k was applied in
    assert result["success"] and result["success_step"] == len(dataset), result


@pytest.mark.graph
@needs_libero_venv
def test_a_libero_rerun_resumes_and_a_changed_plan_is_refused(generated):
    out, plan, summary, _ = generated
    lines: list[str] = []
    again = L.generate(out, plan, workers=1, echo=lines.append)
    assert "(1 tasks already done)" in lines[0] and again["tasks_built"] == []
    assert not any("attempt" in line for line in lines)  # no LIBERO process was started
    assert again["episodes"] == summary["episodes"]
    other = L.LiberoDemoPlan(**{**plan.__dict__, "image_size": 32})
    with pytest.raises(ValueError, match="started with another plan: image_size 64 -> 32"):
        L.generate(out, other, echo=lambda _: None)


@pytest.mark.graph
@needs_libero_venv
@pytest.mark.slow
def test_a_policy_trained_on_libero_demonstrations_runs_in_the_libero_graph(generated, tmp_path):
    """`vla-bridge train` on the LIBERO demonstrations (the libero_panda embodiment, read
    from the dataset), then the checkpoint served by the policy node of the LIBERO graph:
    the graph agrees on the embodiment and LIBERO scores the episode."""
    from support.libero_venv import launch_libero_graph

    from vla_bridge.data.train import TrainOptions, train
    out, _, summary, _ = generated
    ckpt = tmp_path / "ckpt"
    trained = train(out / D.DATASET_DIR, ckpt, TrainOptions(steps=30, batch_size=16, chunk_size=5,
                                                            image_width=32, image_height=32),
                    echo=lambda _: None)
    assert trained["embodiment"] == "libero_panda" and trained["frames"] == summary["frames"]
    assert trained["final_loss"] < trained["first_loss"]
    config = json.loads((ckpt / "config.json").read_text())
    assert (config["state_dim"], config["action_dim"]) == (8, 7)
    rows = launch_libero_graph(tmp_path / "run", "--suite", SUITE, "--tasks", str(TASK),
                               "--inits", "0", "--max_steps", "15",
                               "--policy", f"torch?checkpoint={ckpt}")
    assert len(rows) == 1 and rows[0]["episode"] == f"{SUITE}/{TASK}/0"
    assert rows[0]["steps"] == 15 and rows[0]["success"] is False  # 15 steps cannot solve it
