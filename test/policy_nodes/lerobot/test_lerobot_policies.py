"""The lerobot backend drives each LeRobot policy type the way LeRobot's own rollout does, on
tiny random checkpoints saved like ``lerobot-train`` saves them (lerobot_checkpoints.py):

* queue-driven types (Diffusion, VQ-BeT, TD-MPC) and single-step SAC, called every control
  step, return exactly what LeRobot's ``select_action`` loop returns on the same observations
  (the first row of each chunk), the chunk being the rest of the policy's current plan; called
  once per chunk they plan every call; ``reset()`` starts an episode afresh;
* ACT returns the chunk its ``select_action`` queues;
* what cannot be built here fails with one error that says what to provide: a Hub-backed VLA
  whose VLM is not on this machine (nothing is downloaded), pi0 without LeRobot's patched
  transformers, a reward model.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from support.lerobot_checkpoints import (ACTION_SPAN, SMOLVLM, save_tiny_checkpoint,
                                         save_tiny_smolvla, save_tiny_vlm)
from vla_bridge.embodiment.world import Observation

pytestmark = pytest.mark.skipif(os.environ.get("VLA_BRIDGE_LEROBOT") == "0",
                                reason="VLA_BRIDGE_LEROBOT=0: LeRobot not installed")
DT = 0.06  # control period


def observations(n: int, image_hw: tuple[int, int], seed: int = 0) -> list[Observation]:
    """n observations, one per control step, with distinct states and images."""
    rng = np.random.default_rng(seed)
    return [Observation(state=rng.uniform(-0.5, 0.5, 14),
                        images={"cam_high": rng.integers(0, 256, (*image_hw, 3), dtype=np.uint8)},
                        stamp=i * DT) for i in range(n)]


def backend(ckpt, **kwargs):
    from vla_bridge.policy_nodes.lerobot.backend import LeRobotPolicy
    policy = LeRobotPolicy(checkpoint=str(ckpt), control_period=DT, **kwargs)
    policy.reset()
    policy.set_instruction("pick up the yellow block")
    return policy


def lerobot_rollout(ckpt, obs: list[Observation], image_key: str, seed: int) -> np.ndarray:
    """LeRobot's own loop on the checkpoint: reset, then per step the preprocessor,
    ``select_action`` and the postprocessor. [steps, 14]."""
    import torch
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    config = PreTrainedConfig.from_pretrained(str(ckpt))
    policy = get_policy_class(config.type).from_pretrained(str(ckpt), config=config).eval()
    pre, post = make_pre_post_processors(config, pretrained_path=str(ckpt))
    policy.reset()
    torch.manual_seed(seed)
    actions = []
    with torch.inference_mode():
        for o in obs:
            image = torch.from_numpy(o.images["cam_high"]).permute(2, 0, 1).float() / 255
            batch = {"observation.state": torch.tensor(o.state, dtype=torch.float32)[None],
                     image_key: image[None], "task": "pick up the yellow block", "robot_type": ""}
            actions.append(post(policy.select_action(pre(batch)))[0].double().numpy())
    return np.array(actions)


# kind -> (image H x W the checkpoint reads, its image key, backend camera_map)
KINDS = {"diffusion": ((96, 128), "observation.images.cam_high", None),
         "vqbet": ((96, 128), "observation.images.cam_high", None),
         "tdmpc": ((96, 96), "observation.image", {"image": "cam_high"}),
         "sac": ((96, 128), "observation.images.cam_high", None)}


@pytest.mark.graph
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_called_every_step_the_backend_is_lerobots_own_rollout(kind, tmp_path):
    """Queue-driven Diffusion, VQ-BeT, TD-MPC and single-step SAC."""
    import torch
    hw, image_key, camera_map = KINDS[kind]
    ckpt = save_tiny_checkpoint(kind, tmp_path / kind)
    obs = observations(9, hw)
    policy = backend(ckpt, camera_map=camera_map)
    torch.manual_seed(3)
    chunks = [policy.predict(o) for o in obs]
    expected = lerobot_rollout(ckpt, obs, image_key, seed=3)
    # each call's next action is the one LeRobot's select_action returns at that step
    np.testing.assert_allclose([c[0] for c in chunks], expected, atol=1e-6)
    # the chunk is the rest of the plan: it shrinks by one per step, then a new plan
    n = len(chunks[0])
    assert [len(c) for c in chunks] == [n - i % n for i in range(len(obs))]
    for now, later in zip(chunks, chunks[1:]):
        if len(later) == len(now) - 1:
            np.testing.assert_allclose(now[1:], later)
    # un-normalised by the checkpoint's postprocessor: near 0 rad, not the model's raw output
    assert all(c.shape[1] == 14 and np.abs(c).max() <= ACTION_SPAN + 1e-6 for c in chunks)
    assert np.ptp(np.concatenate(chunks), axis=0).max() > 1e-4


@pytest.mark.graph
@pytest.mark.parametrize("kind", ["diffusion", "vqbet"])
def test_called_once_per_chunk_a_queue_policy_plans_every_call(kind, tmp_path):
    """The node executes each chunk and comes back when it has run: nothing of the old plan
    is left to serve, so every call plans anew (with the observation history of its calls);
    reset() forgets history and plan, so an episode replays exactly."""
    import torch
    ckpt = save_tiny_checkpoint(kind, tmp_path / kind)
    policy = backend(ckpt)
    n = len(policy.predict(observations(1, (96, 128))[0]))
    obs = [Observation(o.state, o.images, stamp=i * n * DT)
           for i, o in enumerate(observations(3, (96, 128), seed=1))]
    episodes = []
    for _ in range(2):
        policy.reset()
        torch.manual_seed(5)
        episodes.append([policy.predict(o) for o in obs])
    assert [len(c) for c in episodes[0]] == [n, n, n]
    assert np.abs(episodes[0][0] - episodes[0][1]).max() > 1e-6
    np.testing.assert_array_equal(np.array(episodes[0]), np.array(episodes[1]))


@pytest.mark.graph
def test_act_returns_the_chunk_its_select_action_queues(tmp_path):
    ckpt = save_tiny_checkpoint("act", tmp_path / "act")
    obs = observations(2, (96, 128))
    policy = backend(ckpt)
    chunk = policy.predict(obs[0])
    assert chunk.shape == (20, 14)
    expected = lerobot_rollout(ckpt, [obs[0]] * 20, "observation.images.cam_high", seed=0)
    np.testing.assert_allclose(chunk, expected, atol=1e-6)
    assert np.abs(chunk).max() < 0.1  # un-normalised: action mean 0, std 0.01
    assert policy.predict(obs[1]).shape == (20, 14)  # every call: a whole new chunk


# ---------------------------------------------------------------- what cannot be built here


def save_config(config, directory) -> str:
    """Only the config.json of a checkpoint (the error comes before any weights are read)."""
    directory.mkdir()
    config._save_pretrained(directory)
    return str(directory)


def features():
    from lerobot.configs.types import FeatureType, PolicyFeature
    return ({"observation.state": PolicyFeature(FeatureType.STATE, (14,)),
             "observation.images.cam_high": PolicyFeature(FeatureType.VISUAL, (3, 96, 128))},
            {"action": PolicyFeature(FeatureType.ACTION, (14,))})


@pytest.fixture(scope="module")
def smolvla(tmp_path_factory):
    """A tiny SmolVLA checkpoint naming SMOLVLM, the tiny VLM standing in for a local copy of
    it, and the policy and processors as built (lerobot_checkpoints.save_tiny_smolvla)."""
    from huggingface_hub import snapshot_download
    try:
        snapshot_download(SMOLVLM, local_files_only=True)
        pytest.skip(f"{SMOLVLM} is in this machine's Hugging Face cache")
    except Exception:  # noqa: BLE001 - not cached: the case under test
        pass
    root = tmp_path_factory.mktemp("smolvla")
    vlm = save_tiny_vlm(root / "vlm")
    return (vlm, *save_tiny_smolvla(root / "pretrained_model", vlm))


@pytest.mark.graph
def test_a_hub_backed_vla_without_its_vlm_here_names_what_to_provide(smolvla, monkeypatch):
    import huggingface_hub.constants
    vlm, ckpt = smolvla[:2]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the backend's default: offline
    with pytest.raises(RuntimeError) as err:
        backend(ckpt)
    assert os.environ["HF_HUB_OFFLINE"] == "1" and huggingface_hub.constants.HF_HUB_OFFLINE
    message = str(err.value)
    assert (f"'{SMOLVLM}' (config.json vlm_model_name, policy_preprocessor.json "
            "tokenizer_processor.tokenizer_name)") in message
    assert "nothing is downloaded" in message
    assert f"hub_dirs='{{\"{SMOLVLM}\": \"/path/to/local/copy\"}}'" in message
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        backend(ckpt, hub_dirs={SMOLVLM: str(vlm / "nowhere")})


@pytest.mark.graph
def test_a_hub_backed_vla_runs_on_local_copies_of_its_hub_files(smolvla):
    """SmolVLA (a chunking VLA: VLM prefix + flow-matching action expert) with hub_dirs: the
    chunk is what its select_action queues, the instruction tokenized by the local tokenizer."""
    import torch
    vlm, ckpt, policy, pre, post = smolvla
    obs = observations(1, (96, 128))[0]
    ours = backend(ckpt, hub_dirs=json.dumps({SMOLVLM: str(vlm)}))
    torch.manual_seed(2)
    chunk = ours.predict(obs)
    assert chunk.shape == (10, 14) and np.abs(chunk).max() < 0.1  # un-normalised: std 0.01
    policy.reset()
    torch.manual_seed(2)
    batch = ours.batch(obs)
    with torch.inference_mode():
        expected = [post(policy.select_action(pre(batch)))[0].numpy() for _ in range(10)]
    np.testing.assert_allclose(chunk, expected, atol=1e-6)


@pytest.mark.graph
def test_pi0_without_lerobots_transformers_and_reward_models_are_refused_up_front(tmp_path):
    from lerobot.policies.pi0.configuration_pi0 import PI0Config
    from lerobot.policies.sac.reward_model.configuration_classifier import RewardClassifierConfig
    inputs, outputs = features()
    pi0 = save_config(PI0Config(input_features=inputs, output_features=outputs,
                                paligemma_variant="gemma_300m", device="cpu"), tmp_path / "pi0")
    # before building a model of ~1e9 parameters only to find the transformers fork missing
    with pytest.raises(ImportError, match="fix/lerobot_openpi.*--policy_python"):
        backend(pi0)
    reward = save_config(RewardClassifierConfig(input_features=inputs, output_features=outputs,
                                                device="cpu"), tmp_path / "reward")
    with pytest.raises(ValueError, match="reward model, not a policy"):
        backend(reward)
