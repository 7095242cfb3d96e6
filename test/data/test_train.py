"""`vla-bridge train`: the built-in tiny policy trained on a demos dataset (video features
decoded with PyAV), its checkpoint carrying the stats, served by the torch backend in the graph."""
from __future__ import annotations

import json

import numpy as np
import pytest

from support import graph_runs
from vla_bridge.data import demos as D
from vla_bridge.data import train as T

pytest.importorskip("lerobot")
TASK = "pickup_red_cylinder"


@pytest.fixture(scope="module")
def video_demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos") / "out"
    plan = D.DemoPlan(scenes=("scene2",), task_ids=(TASK,), per_task=2, video=True)
    D.generate(out, plan, workers=1, echo=lambda _: None)
    return out / D.DATASET_DIR


def test_chunk_targets_follow_the_control_period_and_hold_grippers():
    actions = np.zeros((5, 14), np.float32)
    actions[:, 0] = np.arange(5) * 0.1  # joint 0 moves 0.1 rad per 0.1 s frame
    actions[:, 6] = [1, 1, 0, 0, 0]  # left gripper closes at frame 2 (t = 0.2 s)
    targets = T.chunk_targets(actions, fps=10, chunk=4)
    assert targets.shape == (5, 4, 14)
    assert np.allclose(targets[0, :, 0], [0.06, 0.12, 0.18, 0.24])  # t + (k + 1) x 0.06 s
    assert list(targets[0, :, 6]) == [1, 1, 1, 0]  # held, not blended: 0.06, 0.12, 0.18, 0.24 s
    assert np.allclose(targets[4, :, 0], 0.4)  # past the end: the last target


@pytest.mark.graph
def test_training_lowers_the_loss_and_the_checkpoint_carries_its_stats(video_demos, tmp_path):
    options = T.TrainOptions(steps=60, batch_size=16, chunk_size=20, threads=1, shift_px=0)
    data = T.load_training_data(video_demos, options, echo=lambda _: None)
    assert data.images.shape[1:] == (48, 64, 3) and data.images.std() > 5  # real renders
    assert data.targets.shape == (len(data.states), 20, 14) and data.episodes == 2
    summary = T.train(video_demos, tmp_path / "ckpt", options, echo=lambda _: None)
    assert summary["final_loss"] < 0.5 * summary["first_loss"]
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    stats = T.normalisation(data)
    assert np.allclose(config["state_mean"], stats["state_mean"], atol=1e-6)
    assert np.allclose(config["action_std"], stats["action_std"], atol=1e-6)
    assert config["chunk_size"] == 20 and config["image_width"] == 64


@pytest.mark.graph
def test_the_torch_backend_serves_the_trained_checkpoint_in_the_graph(video_demos, tmp_path):
    options = T.TrainOptions(steps=20, batch_size=8, threads=1)
    ckpt = T.train(video_demos, tmp_path / "ckpt", options, echo=lambda _: None)["checkpoint"]
    out = tmp_path / "run"
    proc = graph_runs.launch("--tasks", "L0_pickup_red_cylinder", "--levels", "",
                             "--max_policy_calls", "2", "--output", str(out),
                             "--policy", f"torch?checkpoint={ckpt}", timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = graph_runs.results(out)
    assert row["status"] == "ok" and row["policy_calls"] == 2 and row["frames"] == 101
    assert row["policy"] == f"torch?checkpoint={ckpt}"
    run = json.loads((out / "run.json").read_text())
    assert len(run["provenance"]["checkpoint"]["sha256"]) == 64  # the trained weights' fingerprint


def test_random_shift_moves_each_image_by_at_most_the_pad():
    import torch
    images = torch.zeros(8, 3, 12, 16)
    images[:, :, 6, 8] = 1.0  # one bright pixel in the middle of each image
    shifted = T.random_shift(images, 2, np.random.default_rng(0))
    assert shifted.shape == images.shape
    spots = [divmod(int(torch.argmax(img[0])), 16) for img in shifted]
    assert all(abs(r - 6) <= 2 and abs(c - 8) <= 2 for r, c in spots)
    assert len(set(spots)) > 1  # images move independently
    assert torch.equal(T.random_shift(images, 0, np.random.default_rng(0)), images)


def test_libero_delta_chunks_are_the_next_steps_then_hold_still():
    from vla_bridge import contract as C
    from vla_bridge.data.train import delta_chunks, episode_targets
    actions = np.arange(3 * 7, dtype=np.float32).reshape(3, 7) + 1
    chunks = delta_chunks(actions, 4, C.LIBERO_PANDA)
    assert chunks.shape == (3, 4, 7)
    np.testing.assert_array_equal(chunks[1, :2], actions[1:3])
    np.testing.assert_array_equal(chunks[1, 2], [0, 0, 0, 0, 0, 0, actions[2, 6]])
    with pytest.raises(ValueError, match="need a frame per 0.05 s step, got 10 fps"):
        episode_targets(actions, 10, 4, C.LIBERO_PANDA)


def test_a_dataset_of_an_unknown_robot_type_is_named():
    from vla_bridge.data import lerobot_export as X
    assert X.embodiment_of("piper_aloha").name == "aloha_piper"
    assert X.embodiment_of("libero_panda").name == "libero_panda"
    with pytest.raises(X.ExportError, match="robot_type 'so100' is no embodiment"):
        X.embodiment_of("so100")
