"""The current LeRobot (0.6.1, in .venv-lerobot) by default: a `lerobot?checkpoint=DIR` saved
by LeRobot 0.6's own code (its ``save_pretrained``, or its trainer, ``lerobot-train``) runs
through the graph with no flag (the node's LeRobot 0.4.4 cannot read it, so the backend runs it
in a worker in .venv-lerobot, lerobot/worker.py), and every published chunk is what that
LeRobot's own ``select_action`` gives on the observation the node saw (read back from the
episode's bag).
"""
from __future__ import annotations

import json
import os
import subprocess
import urllib.parse

import numpy as np
import pytest

from support.cli_process import run_cli
from support.graph_runs import launch, results
from support.lerobot_venv import LEROBOT_PYTHON, in_lerobot_venv, needs_lerobot_venv, policy_calls

pytestmark = [needs_lerobot_venv, pytest.mark.graph]
TASK = "L0_place_yellow_block_1_behind_red_sphere"
CKPT = "support.lerobot_checkpoints"
CAMERAS = ("cam_high", "cam_left_wrist", "cam_right_wrist")
# LeRobot 0.6.1's own trainer, offline on a local dataset: a tiny ACT (random ResNet-18, no
# ImageNet download), two steps of batch 2 on the CPU, checkpoint saved at step 2, no wandb/Hub
TRAIN = ["--dataset.repo_id=local/vla_bridge", "--policy.type=act", "--policy.device=cpu",
         "--policy.push_to_hub=false", "--policy.pretrained_backbone_weights=null",
         "--policy.dim_model=32", "--policy.n_heads=2", "--policy.dim_feedforward=64",
         "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1", "--policy.use_vae=false",
         "--policy.chunk_size=20", "--policy.n_action_steps=20", "--steps=2", "--batch_size=2",
         "--num_workers=0", "--save_checkpoint=true", "--save_freq=2", "--log_freq=1",
         "--wandb.enable=false"]


def run_graph(out, ckpt, *args: str, cameras: tuple[str, ...] = ()):
    proc = launch("--tasks", TASK, "--levels", "", "--output", str(out), "--record", "true",
                  "--policy", f"lerobot?checkpoint={ckpt}", "--episode_timeout", "150", *args,
                  timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = results(out)
    assert row["status"] == "ok", row.get("error")
    return row, policy_calls(out / row["bag"], cameras=cameras)


@pytest.fixture(scope="module")
def act_run(tmp_path_factory):
    """A random ACT saved by LeRobot 0.6.1 run through the graph, recorded with dense frames
    (--record_fps 10: the trainer's test exports this run): (checkpoint, run dir, row, calls)."""
    from support.lerobot_checkpoints import SIM_IMAGE
    tmp = tmp_path_factory.mktemp("act")
    ckpt = in_lerobot_venv(f"{CKPT}:save_tiny_checkpoint", "act", tmp / "act", image=SIM_IMAGE)
    row, calls = run_graph(tmp / "run", ckpt, "--max_policy_calls", "3", "--record_fps", "10")
    return ckpt, tmp / "run", row, calls


def test_a_lerobot_06_act_checkpoint_runs_through_the_graph_as_its_select_action(act_run):
    ckpt, _, row, calls = act_run
    assert "pretrained_revision" in (ckpt / "config.json").read_text()  # 0.6's, not 0.4.4's
    assert row["policy_calls"] == len(calls) == 3
    # LeRobot 0.6.1's rollout: per observation, a fresh queue of n_action_steps = 20 actions
    expected = in_lerobot_venv(f"{CKPT}:rollout", ckpt, [(s, i) for s, i, _ in calls],
                               calls_per_observation=20, reset_each=True)
    for (_, _, chunk), want in zip(calls, expected):
        assert chunk.shape == (20, 14)
        np.testing.assert_allclose(chunk, want, atol=1e-6)
    assert np.abs(calls[0][2] - calls[-1][2]).max() > 1e-5  # different observations, chunks


def test_a_lerobot_06_diffusion_checkpoint_called_every_step_is_its_rollout(tmp_path):
    """Queue-driven Diffusion, seeded (``seed=0``: torch's generator at the episode's reset),
    a call every control step (action_horizon 1): each chunk's first action is what LeRobot
    0.6.1's own select_action loop returns on the same observations, same seed."""
    from support.lerobot_checkpoints import SIM_IMAGE
    ckpt = in_lerobot_venv(f"{CKPT}:save_tiny_checkpoint", "diffusion", tmp_path / "diffusion",
                           image=SIM_IMAGE)
    row, calls = run_graph(tmp_path / "run", f"{ckpt}&seed=0", "--action_horizon", "1",
                           "--max_policy_calls", "8")
    assert row["policy_calls"] == len(calls) == 8
    expected = in_lerobot_venv(f"{CKPT}:rollout", ckpt, [(s, i) for s, i, _ in calls], seed=0)
    np.testing.assert_allclose([c[0] for _, _, c in calls], expected[:, 0], atol=1e-6)
    assert all(len(c) == 1 for _, _, c in calls)  # the node publishes action_horizon of each
    assert np.ptp([c[0] for _, _, c in calls], axis=0).max() > 1e-5


def test_an_act_from_lerobot_06s_own_trainer_runs_through_the_graph_as_its_select_action(
        act_run, tmp_path):
    """The way a user gets one: `vla-bridge export lerobot` of a recorded run (AV1 videos,
    the default; LeRobot 0.6.1 decodes them with torchcodec, or PyAV where torchcodec cannot
    load), LeRobot 0.6.1's `lerobot-train` on it (ACT on all three cameras, two steps), and
    its ``checkpoints/000002/pretrained_model`` through the graph: each chunk is 0.6.1's
    select_action queue (n_action_steps 20) on the observation the node saw."""
    _, recorded, _, _ = act_run
    data, train = tmp_path / "dataset", tmp_path / "train"
    proc = run_cli("export", "lerobot", str(recorded), "--out", str(data))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    trainer = LEROBOT_PYTHON.parent / "lerobot-train"
    proc = subprocess.run([str(trainer), *TRAIN, f"--dataset.root={data}",
                           f"--output_dir={train}"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "step:2 " in proc.stdout + proc.stderr
    ckpt = train / "checkpoints" / "000002" / "pretrained_model"
    assert (ckpt / "train_config.json").is_file()  # the trainer's checkpoint
    config = json.loads((ckpt / "config.json").read_text())
    assert set(config["input_features"]) == {"observation.state",
                                             *(f"observation.images.{c}" for c in CAMERAS)}
    row, calls = run_graph(tmp_path / "run", ckpt, "--max_policy_calls", "2", cameras=CAMERAS)
    assert row["policy_calls"] == len(calls) == 2
    expected = in_lerobot_venv(f"{CKPT}:rollout", ckpt, [(s, i) for s, i, _ in calls],
                               calls_per_observation=20, reset_each=True)
    for (_, _, chunk), want in zip(calls, expected):
        assert chunk.shape == (20, 14)
        np.testing.assert_allclose(chunk, want, atol=1e-6)
    assert np.abs(calls[0][2] - calls[-1][2]).max() > 1e-6


def test_a_lerobot_06_smolvla_on_a_local_tiny_vlm_runs_through_the_graph_as_its_select_action(
        tmp_path):
    """SmolVLA saved by LeRobot 0.6.1 on a tiny random SmolVLM (a transformers config and a
    word-level tokenizer, no Hub), run through the graph with hub_dirs and seed in the policy
    spec (the node's LeRobot 0.4.4 cannot read it: a worker in .venv-lerobot): each chunk is
    what 0.6.1's select_action queues (n_action_steps 10) on the observation the node saw and
    the episode's instruction, same seed."""
    from support.lerobot_checkpoints import SMOLVLM, SIM_IMAGE
    ckpt, vlm = in_lerobot_venv(f"{CKPT}:save_tiny_smolvla_dir", tmp_path, image=SIM_IMAGE)
    spec = urllib.parse.urlencode({"hub_dirs": json.dumps({SMOLVLM: str(vlm)}), "seed": 0})
    row, calls = run_graph(tmp_path / "run", f"{ckpt}&{spec}", "--max_policy_calls", "3")
    assert row["policy_calls"] == len(calls) == 3
    expected = in_lerobot_venv(f"{CKPT}:rollout", ckpt, [(s, i) for s, i, _ in calls],
                               instruction=row["instruction"], seed=0,
                               calls_per_observation=10, reset_each=True, vlm=vlm)
    for (_, _, chunk), want in zip(calls, expected):
        assert chunk.shape == (10, 14)
        np.testing.assert_allclose(chunk, want, atol=1e-6)
    assert np.abs(calls[0][2] - calls[-1][2]).max() > 1e-6


def test_the_vlas_from_a_local_config_alone_are_refused_naming_what_is_missing(tmp_path):
    """pi0, pi0.5, GR00T, X-VLA: LeRobot 0.6.1 configs saved alone (no weights, no Hub), given
    to the backend in .venv-lerobot: one line each, naming the missing weights or the Hub
    repositories it would download, before any model is built (pi0 / pi0.5 no longer need
    the transformers fork in LeRobot 0.6)."""
    errors = in_lerobot_venv(f"{CKPT}:vla_refusals", tmp_path)
    assert set(errors) == {"pi0", "pi05", "groot", "xvla"}
    for kind in ("pi0", "pi05"):
        assert errors[kind].endswith("has no model.safetensors (the policy's weights)")
    assert "'nvidia/GR00T-N1.7-3B' (config.json base_model_path)" in errors["groot"]
    assert "'facebook/bart-large' (config.json tokenizer_name)" in errors["xvla"]
    assert all("\n" not in e and "nothing is downloaded" in e
               for e in (errors["groot"], errors["xvla"]))
