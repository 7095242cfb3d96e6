"""The current LeRobot (0.6.1, in .venv-lerobot) by default: a `lerobot?checkpoint=DIR` saved
by LeRobot 0.6's own code runs through the graph with no flag (the node's LeRobot 0.4.4 cannot
read it, so the backend runs it in a worker in .venv-lerobot, lerobot/worker.py), and every
published chunk is what that LeRobot's own ``select_action`` gives on the observation the node
saw (read back from the episode's bag).
"""
from __future__ import annotations

import numpy as np
import pytest

from support.graph_runs import launch, results
from support.lerobot_venv import in_lerobot_venv, needs_lerobot_venv, policy_calls

pytestmark = [needs_lerobot_venv, pytest.mark.graph]
TASK = "L0_place_yellow_block_1_behind_red_sphere"
CKPT = "support.lerobot_checkpoints"


def run_graph(out, ckpt, *args: str):
    proc = launch("--tasks", TASK, "--levels", "", "--output", str(out), "--record", "true",
                  "--policy", f"lerobot?checkpoint={ckpt}", "--episode_timeout", "150", *args,
                  timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = results(out)
    assert row["status"] == "ok", row.get("error")
    return row, policy_calls(out / row["bag"])


def test_a_lerobot_06_act_checkpoint_runs_through_the_graph_as_its_select_action(tmp_path):
    from support.lerobot_checkpoints import SIM_IMAGE
    ckpt = in_lerobot_venv(f"{CKPT}:save_tiny_checkpoint", "act", tmp_path / "act",
                           image=SIM_IMAGE)
    assert "pretrained_revision" in (ckpt / "config.json").read_text()  # 0.6's, not 0.4.4's
    row, calls = run_graph(tmp_path / "run", ckpt, "--max_policy_calls", "3")
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


def test_a_lerobot_06_smolvla_on_a_local_tiny_vlm_is_its_select_action(tmp_path):
    """SmolVLA saved by LeRobot 0.6.1 on a tiny random SmolVLM (a transformers config and a
    word-level tokenizer, no Hub), run by the backend (this interpreter's LeRobot 0.4.4 cannot
    read it: a worker in .venv-lerobot) with hub_dirs and seed: each chunk is what 0.6.1's
    select_action queues (n_action_steps 10) on the same observation, same seed."""
    import json
    from support.lerobot_checkpoints import SMOLVLM, SIM_IMAGE
    from vla_bridge.policy_nodes.lerobot.backend import LeRobotPolicy
    from vla_bridge.embodiment.world import Observation
    ckpt, vlm = in_lerobot_venv(f"{CKPT}:save_tiny_smolvla_dir", tmp_path, image=SIM_IMAGE)
    rng = np.random.default_rng(0)
    obs = [Observation(state=rng.uniform(-0.5, 0.5, 14), stamp=i * 0.06,
                       images={"cam_high": rng.integers(0, 256, (240, 320, 3), np.uint8)})
           for i in range(2)]
    policy = LeRobotPolicy(checkpoint=str(ckpt), hub_dirs=json.dumps({SMOLVLM: str(vlm)}),
                           seed=0)
    try:
        assert policy.remote is not None  # 0.6's checkpoint: run in .venv-lerobot
        policy.reset()
        policy.set_instruction("pick up the yellow block")
        chunks = [policy.predict(o) for o in obs]
    finally:
        policy.close()
    expected = in_lerobot_venv(f"{CKPT}:rollout", ckpt, [(o.state, o.images["cam_high"])
                                                        for o in obs],
                               instruction="pick up the yellow block", seed=0,
                               calls_per_observation=10, reset_each=True, vlm=vlm)
    np.testing.assert_allclose(np.array(chunks), expected, atol=1e-6)
    assert np.abs(chunks[0] - chunks[1]).max() > 1e-6


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
