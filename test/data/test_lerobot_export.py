"""`vla-bridge export lerobot`: recorded sim episodes -> a LeRobotDataset that LeRobot's own
loader reads from its local root, frame for frame equal to the bags."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from support import graph_runs
from vla_bridge import contract as C
from vla_bridge.data import lerobot_export as X

pytestmark = pytest.mark.graph  # see setup.cfg's markers

pytest.importorskip("lerobot")
TASK = "L0_place_yellow_block_1_behind_red_sphere"
CALLS = 2  # 100 ticks = 6 s of sim time -> 61 frames at 10 fps


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "run"
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--rounds", "2",
                             "--max_policy_calls", str(CALLS), "--output", str(out),
                             "--record", "true", "--record_fps", "10", timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def png_dataset(recorded_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("ds") / "png"
    summary = X.export_lerobot([recorded_run], root, video=False, echo=lambda _: None)
    return root, summary


def _load(root, **kwargs):
    os.environ["HF_HUB_OFFLINE"] = "1"
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    return LeRobotDataset("local/vla_bridge", root=root, **kwargs)


def test_the_bag_holds_dense_frames_on_the_fps_grid(recorded_run):
    rows = graph_runs.results(recorded_run)
    frames = X.read_episode(recorded_run / rows[0]["bag"])
    assert frames.fps == 10 and frames.n == round(CALLS * 50 * 0.06 * 10) + 1
    assert frames.images["cam_high"].shape == (frames.n, C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3)
    # the arm moves: the executed targets change and the joints follow them (a gripper
    # closed on a block stays open by the block's width, so it is left out)
    assert np.ptp(frames.actions, axis=0).max() > 0.05
    joints = [i for i in range(14) if i not in C.GRIPPER_INDEX.values()]
    assert np.abs(frames.states[-1, joints] - frames.actions[-1, joints]).max() < 0.1


def test_lerobot_loads_the_export_offline_and_its_frames_equal_the_bags(recorded_run, png_dataset):
    root, summary = png_dataset
    rows = graph_runs.results(recorded_run)
    episodes = [X.read_episode(recorded_run / r["bag"]) for r in rows]
    assert summary["episodes"] == 2 and summary["frames"] == sum(e.n for e in episodes)
    dataset = _load(root)
    assert dataset.fps == 10 and dataset.num_episodes == 2 and len(dataset) == summary["frames"]
    i = 0
    for ep_index, episode in enumerate(episodes):
        for k in range(episode.n):
            item = dataset[i]
            assert int(item["episode_index"]) == ep_index and int(item["frame_index"]) == k
            assert abs(float(item["timestamp"]) - k / 10) < dataset.tolerance_s
            assert np.array_equal(item[X.STATE].numpy(), episode.states[k])
            assert np.array_equal(item[X.ACTION].numpy(), episode.actions[k])
            image = (item["observation.images.cam_high"].numpy() * 255).round().astype(np.uint8)
            assert np.array_equal(image.transpose(1, 2, 0), episode.images["cam_high"][k])
            assert item["task"] == rows[ep_index]["instruction"]
            i += 1


def test_action_chunks_as_act_and_pi0_load_them_pass_lerobots_timestamp_check(png_dataset):
    """delta_timestamps of a 50-step action chunk go through LeRobot's own
    check_delta_timestamps and come back as the next 50 executed targets."""
    root, _ = png_dataset
    chunk = [k / 10 for k in range(50)]
    dataset = _load(root, delta_timestamps={X.ACTION: chunk})
    item = dataset[3]
    plain = _load(root)
    assert item[X.ACTION].shape == (50, 14)
    assert np.array_equal(item[X.ACTION][0].numpy(), plain[3][X.ACTION].numpy())
    assert np.array_equal(item[X.ACTION][1].numpy(), plain[4][X.ACTION].numpy())


def test_the_sidecar_keeps_each_episodes_task_level_seed_and_scores(recorded_run, png_dataset):
    root, _ = png_dataset
    rows = graph_runs.results(recorded_run)
    facts = [json.loads(line) for line in (root / X.SIDECAR).read_text().splitlines()]
    assert [f["episode_index"] for f in facts] == [0, 1]
    for fact, row in zip(facts, rows):
        assert (fact["task_id"], fact["level"], fact["seed"]) == (TASK, "L0", row["seed"])
        assert fact["intent_score"] == row["intent_score"] and fact["success"] == row["complete"]
        assert fact["bag"] == row["bag"]


def test_the_video_export_writes_av1_videos_of_every_frame(recorded_run, tmp_path):
    import av

    root = tmp_path / "video"
    summary = X.export_lerobot([recorded_run], root, echo=lambda _: None)
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["fps"] == 10 and info["total_episodes"] == 2
    assert info["features"]["observation.images.cam_high"]["dtype"] == "video"
    assert info["features"][X.STATE]["names"] == list(C.ALOHA_PIPER.action_names)
    bags = [X.read_episode(recorded_run / r["bag"]) for r in graph_runs.results(recorded_run)]
    truth = np.concatenate([b.images["cam_high"] for b in bags])
    video = next((root / "videos" / "observation.images.cam_high").rglob("*.mp4"))
    with av.open(str(video)) as container:
        decoded = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])
    assert len(decoded) == summary["frames"] == len(truth)
    assert np.abs(decoded.astype(int) - truth.astype(int)).mean() < 4  # lossy, but the same frames


def test_selection_errors_are_clear(recorded_run, tmp_path):
    with pytest.raises(X.ExportError, match=r"no episode to export .*level L0 not selected"):
        X.export_lerobot([recorded_run], tmp_path / "a", selection=X.Selection(levels=("L1",)),
                         echo=lambda _: None)
    (tmp_path / "exists").mkdir()
    with pytest.raises(X.ExportError, match="exists; choose a new --out or pass --overwrite"):
        X.export_lerobot([recorded_run], tmp_path / "exists", echo=lambda _: None)
    with pytest.raises(X.ExportError, match="not a run directory"):
        X.export_lerobot([tmp_path], tmp_path / "b", echo=lambda _: None)


def test_a_run_without_recording_names_the_flag(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    row = {"key": "k", "status": "ok", "complete": True, "level": "L0", "instruction": "x"}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(X.ExportError, match=r"not recorded \(run with --record true\)"):
        X.export_lerobot([run], tmp_path / "out", echo=lambda _: None)


def test_lerobots_own_trainer_trains_act_on_the_export(png_dataset, tmp_path):
    """`lerobot_train` (LeRobot's training entry point), offline, one step of a small ACT."""
    import subprocess
    import sys

    root, _ = png_dataset
    out = tmp_path / "train"
    cmd = [sys.executable, "-m", "lerobot.scripts.lerobot_train",
           "--dataset.repo_id=local/vla_bridge", f"--dataset.root={root}",
           "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
           "--policy.pretrained_backbone_weights=null",  # no download: random ResNet weights
           "--policy.dim_model=64", "--policy.dim_feedforward=128", "--policy.n_encoder_layers=1",
           "--policy.n_decoder_layers=1", "--policy.chunk_size=5", "--policy.n_action_steps=5",
           "--steps=1", "--batch_size=2", "--num_workers=0", "--save_freq=1", "--log_freq=1",
           "--wandb.enable=false", f"--output_dir={out}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "step:1" in proc.stdout + proc.stderr
    model = out / "checkpoints" / "000001" / "pretrained_model"
    assert (model / "model.safetensors").is_file() and (model / "config.json").is_file()


def test_a_fake_piper_run_exports_resampled_and_loads(tmp_path):
    """Hardware bags have no dense frames: cameras and joints stream at their own rates and
    the export resamples them at --fps (here the fake PiPER pair with synthetic cameras)."""
    import subprocess
    import sys

    out = tmp_path / "fake"
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_real",
           "--use_fake_hardware", "true", "--policy", "hold", "--tasks", "L0_pickup_yellow_block_3",
           "--max_policy_calls", "2", "--output", str(out), "--record", "true", "--timeout", "150"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=200, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (row,) = graph_runs.results(out)
    with pytest.raises(X.ExportError, match="give --fps to resample"):
        X.read_episode(out / row["bag"])
    root = tmp_path / "ds"
    summary = X.export_lerobot([out], root, fps=10, video=False, echo=lambda _: None)
    dataset = _load(root)
    assert dataset.fps == 10 and len(dataset) == summary["frames"] > 20
    item = dataset[len(dataset) - 1]
    assert item[X.STATE].shape == (14,) and item["observation.images.cam_left_wrist"].shape == (3, 240, 320)
    assert item["task"] == row["instruction"]
