"""Tiny randomly initialised LeRobot checkpoints (policy + pre/post-processors), saved the way
``lerobot-train`` saves them, for the lerobot backend's tests.

Every checkpoint reads our 14 joints and ``cam_high`` (96x128, or ``image=``: SIM_IMAGE is the
sim camera's, so the graph feeds it unresized) and writes 14-D actions. The same code saves
them with LeRobot 0.4.4 (.venv) and 0.6.1 (.venv-lerobot, through ``lerobot_venv``). The
action statistics centre the un-normalised actions near 0 rad (mean 0, std 0.01; min/max
+-ACTION_SPAN), so whatever the random model outputs, the targets are near 0, far from the
home pose, and a test can tell un-normalised actions from raw ones.
"""
from __future__ import annotations

from pathlib import Path

ACTION_SPAN = 0.05  # min/max of the action statistics (MIN_MAX-normalised types)
IMAGE = (3, 96, 128)
SIM_IMAGE = (3, 240, 320)  # contract.ALOHA_PIPER's image size (C, H, W)


def _features(image=IMAGE):
    from lerobot.configs.types import FeatureType, PolicyFeature
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (14,)),
              "observation.images.cam_high": PolicyFeature(FeatureType.VISUAL, tuple(image))}
    return inputs, {"action": PolicyFeature(FeatureType.ACTION, (14,))}


def _stats():
    import torch
    span = torch.full((14,), ACTION_SPAN)
    pixel = (3, 1, 1)
    return {"observation.state": {"mean": torch.zeros(14), "std": torch.ones(14),
                                  "min": torch.full((14,), -3.0), "max": torch.full((14,), 3.0)},
            "observation.images.cam_high": {"mean": torch.full(pixel, 0.5),
                                            "std": torch.full(pixel, 0.25),
                                            "min": torch.zeros(pixel), "max": torch.ones(pixel)},
            "action": {"mean": torch.zeros(14), "std": torch.full((14,), 0.01),
                       "min": -span, "max": span}}


def tiny_config(kind: str, image=IMAGE, **overrides):
    """A small config of LeRobot policy type ``kind`` (act, diffusion, vqbet, tdmpc, sac)
    reading a ``cam_high`` image of shape ``image``; ``overrides`` replace its fields."""
    from lerobot.policies.factory import make_policy_config
    inputs, outputs = _features(image)
    small = {
        "act": dict(chunk_size=20, n_action_steps=20, dim_model=32, n_heads=2, dim_feedforward=64,
                    n_encoder_layers=1, n_decoder_layers=1, use_vae=False,
                    pretrained_backbone_weights=None),
        # horizon 8 = n_obs_steps - 1 + n_action_steps + 1 (a multiple of 2 ** len(down_dims))
        "diffusion": dict(n_obs_steps=2, horizon=8, n_action_steps=6, crop_shape=(80, 112),
                          down_dims=(16, 32), kernel_size=3, n_groups=4,
                          diffusion_step_embed_dim=16, spatial_softmax_num_keypoints=4,
                          num_train_timesteps=20, num_inference_steps=4,
                          pretrained_backbone_weights=None),  # LeRobot 0.6's default: ImageNet
        "vqbet": dict(n_obs_steps=3, n_action_pred_token=2, action_chunk_size=4,
                      crop_shape=(80, 112), spatial_softmax_num_keypoints=4, vqvae_n_embed=4,
                      vqvae_embedding_dim=16, vqvae_enc_hidden_dim=16, gpt_block_size=32,
                      gpt_input_dim=32, gpt_output_dim=32, gpt_n_layer=1, gpt_n_head=2,
                      gpt_hidden_dim=32),
        "tdmpc": dict(n_action_steps=1, latent_dim=16, mlp_dim=32, q_ensemble_size=2,
                      horizon=2, n_gaussian_samples=8, n_pi_samples=2, n_elites=2,
                      cem_iterations=1, image_encoder_hidden_dim=4,
                      state_encoder_hidden_dim=16),
        "sac": dict(latent_dim=16, image_encoder_hidden_dim=4, vision_encoder_name=None),
    }[kind] | overrides
    if kind == "diffusion" and tuple(image) != IMAGE and "crop_shape" not in overrides:
        small["crop_shape"] = (image[1] - 16, image[2] - 16)  # crop what the image allows
    if kind == "tdmpc":  # one square image, named the TD-MPC way
        from lerobot.configs.types import FeatureType, PolicyFeature
        inputs = {"observation.state": inputs["observation.state"],
                  "observation.image": PolicyFeature(FeatureType.VISUAL, (3, 96, 96))}
    return make_policy_config(kind, input_features=inputs, output_features=outputs,
                              device="cpu", **small)


def save_tiny_checkpoint(kind: str, directory: Path, seed: int = 0, image=IMAGE,
                         **overrides) -> Path:
    """Save a random ``kind`` policy (config: tiny_config) and its processors into
    ``directory``; returns it."""
    import torch
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    config = tiny_config(kind, image, **overrides)
    torch.manual_seed(seed)
    policy = get_policy_class(kind)(config)
    if kind == "vqbet":  # as after VQ-BeT's first training phase (else it warns every call)
        policy.vqbet.action_head.vqvae_model.discretized.fill_(True)
    stats = _stats()
    if kind == "tdmpc":
        stats["observation.image"] = stats.pop("observation.images.cam_high")
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    for part in (policy, pre, post):
        part.save_pretrained(directory)
    return Path(directory)


# ------------------------------------------------------------ a Hub-backed VLA (SmolVLA)

SMOLVLM = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"  # SmolVLA's default VLM (Hub id)
WORDS = "pick up the yellow block red sphere behind place a to".split()


def save_tiny_vlm(directory: Path) -> Path:
    """A SmolVLM-architecture VLM config and processor (word-level tokenizer, 64x64 images)
    standing in for a local copy of SMOLVLM: what SmolVLA reads when it does not load VLM
    weights (``load_vlm_weights=False``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (PreTrainedTokenizerFast, SmolVLMConfig, SmolVLMImageProcessor,
                              SmolVLMProcessor, SmolVLMVideoProcessor)
    special = {"image_token": "<image>", "fake_image_token": "<fake_token_around_image>",
               "global_image_token": "<global-img>", "end_of_utterance_token": "<end_of_utterance>",
               "video_token": "<video>"}
    vocab = ["<unk>", "<pad>", *special.values(), *WORDS]
    words = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>",
                                        pad_token="<pad>", extra_special_tokens=special)
    images = SmolVLMImageProcessor(size={"longest_edge": 64}, max_image_size={"longest_edge": 64})
    SmolVLMProcessor(image_processor=images, tokenizer=tokenizer, image_seq_len=4,
                     video_processor=SmolVLMVideoProcessor()).save_pretrained(directory)
    text = dict(model_type="llama", vocab_size=len(vocab), hidden_size=32, intermediate_size=64,
                num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                pad_token_id=1)
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, image_size=64, patch_size=16)
    SmolVLMConfig(image_token_id=vocab.index("<image>"), scale_factor=2, vocab_size=len(vocab),
                  text_config=text, vision_config=vision).save_pretrained(directory)
    return Path(directory)


def save_tiny_smolvla(directory: Path, vlm: Path, seed: int = 0, image=IMAGE):
    """A random SmolVLA on the tiny VLM at ``vlm``, saved as if trained from SMOLVLM: its
    config and tokenizer step name the Hub id. Returns (directory, policy, pre, post), the
    last three as built (on ``vlm``), for comparison."""
    import torch
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
    inputs, outputs = _features(image)
    config = SmolVLAConfig(input_features=inputs, output_features=outputs, device="cpu",
                           vlm_model_name=str(vlm), load_vlm_weights=False, num_vlm_layers=2,
                           resize_imgs_with_padding=(64, 64), chunk_size=10, n_action_steps=10,
                           num_steps=2, max_state_dim=16, max_action_dim=16,
                           tokenizer_max_length=16)
    torch.manual_seed(seed)
    policy = get_policy_class("smolvla")(config).eval()
    pre, post = make_pre_post_processors(config, dataset_stats=_stats())
    config.vlm_model_name = SMOLVLM
    tokenizer_step = next(s for s in pre.steps if hasattr(s, "tokenizer_name"))
    tokenizer_step.tokenizer_name = SMOLVLM
    for part in (policy, pre, post):
        part.save_pretrained(directory)
    tokenizer_step.tokenizer_name = str(vlm)
    return Path(directory), policy, pre, post


# ------------------------------------------------------------ LeRobot's own rollout


def rollout(ckpt, observations, instruction: str = "", seed: int | None = None,
            calls_per_observation: int = 1, reset_each: bool = False, vlm=None):
    """LeRobot's own loop on a saved checkpoint (its policy class, saved processors and
    ``select_action``): reset (and ``torch.manual_seed(seed)``), then per observation
    ``calls_per_observation`` times preprocessor -> ``select_action`` -> postprocessor (after
    a reset if ``reset_each``). Observations are (state [14], image HxWx3 uint8) as the
    checkpoint reads them (no resizing), or (state, {camera: image}) for one reading several
    cameras (``observation.images.<camera>`` each). ``vlm``: the local stand-in for SMOLVLM
    (a SmolVLA checkpoint, save_tiny_smolvla). Returns [observations, calls, 14] float64."""
    import numpy as np
    import torch
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    config = PreTrainedConfig.from_pretrained(str(ckpt))
    overrides = {}
    if vlm is not None:
        config.vlm_model_name = str(vlm)
        overrides = {"tokenizer_processor": {"tokenizer_name": str(vlm)}}
    policy = get_policy_class(config.type).from_pretrained(str(ckpt), config=config).eval()
    pre, post = make_pre_post_processors(config, pretrained_path=str(ckpt),
                                         preprocessor_overrides=overrides)
    image_key = next(k for k in config.input_features if "image" in k)
    policy.reset()
    if seed is not None:
        torch.manual_seed(seed)
    out = []
    with torch.inference_mode():
        for state, image in observations:
            if reset_each:
                policy.reset()
            images = ({f"observation.images.{cam}": im for cam, im in image.items()}
                      if isinstance(image, dict) else {image_key: image})
            batch = {"observation.state": torch.tensor(np.asarray(state), dtype=torch.float32)[None],
                     "task": instruction, "robot_type": ""}
            for key, im in images.items():
                im = torch.from_numpy(np.ascontiguousarray(im)).permute(2, 0, 1).float() / 255
                batch[key] = im[None]
            out.append([post(policy.select_action(pre(dict(batch))))[0].double().numpy()
                        for _ in range(calls_per_observation)])
    return np.array(out)


def save_tiny_smolvla_dir(directory: Path, seed: int = 0, image=IMAGE):
    """save_tiny_smolvla's checkpoint and tiny VLM under ``directory``: (checkpoint, vlm)."""
    vlm = save_tiny_vlm(Path(directory) / "vlm")
    return save_tiny_smolvla(Path(directory) / "pretrained_model", vlm, seed, image)[0], vlm


def save_vla_config(kind: str, directory: Path) -> Path:
    """Only the config.json of a LeRobot VLA (pi0, pi05, groot, xvla) reading our features,
    at LeRobot's defaults (pi0 / pi0.5 on their smallest Gemma)."""
    from lerobot.policies.factory import make_policy_config
    inputs, outputs = _features(SIM_IMAGE)
    extra = {"pi0": dict(paligemma_variant="gemma_300m"),
             "pi05": dict(paligemma_variant="gemma_300m")}.get(kind, {})
    config = make_policy_config(kind, input_features=inputs, output_features=outputs,
                                device="cpu", **extra)
    Path(directory).mkdir(parents=True)
    config._save_pretrained(Path(directory))
    return Path(directory)


def vla_refusals(directory: Path) -> dict[str, str]:
    """The lerobot backend's error for each VLA config alone (save_vla_config): {kind: message}."""
    from vla_bridge.policy_nodes.lerobot.backend import LeRobotPolicy
    errors = {}
    for kind in ("pi0", "pi05", "groot", "xvla"):
        try:
            LeRobotPolicy(checkpoint=str(save_vla_config(kind, Path(directory) / kind)))
            errors[kind] = "built"
        except Exception as exc:  # noqa: BLE001 - the message is the result
            errors[kind] = f"{type(exc).__name__}: {exc}"
    return errors
