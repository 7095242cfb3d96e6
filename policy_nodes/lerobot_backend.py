"""`lerobot` backend: a LeRobot policy checkpoint (ACT, Diffusion, pi0, SmolVLA, ...) run
in-process from a local ``pretrained_model`` directory.

The directory is what ``policy.save_pretrained(DIR)`` (plus, for LeRobot >= 0.4, the
processors' ``save_pretrained(DIR)``) writes: ``config.json`` (with ``type``),
``model.safetensors`` and, when present, ``policy_preprocessor.json`` /
``policy_postprocessor.json`` with their normalisation ``.safetensors``. Nothing is
downloaded: the path must be a local directory (``lerobot-train`` writes it to
``outputs/train/<run>/checkpoints/<step>/pretrained_model``).

Observation mapping, as LeRobot's own ``predict_action`` prepares it:

* ``observation.state``: our 14 joints (contract order), float32 ``[1, 14]``;
* ``observation.images.<name>``: float32 ``[1, 3, H, W]`` in ``[0, 1]``, for every visual
  input feature of the checkpoint. ``<name>`` is our camera name unless ``camera_map``
  says otherwise (``{"top": "cam_high"}``: the checkpoint's ``observation.images.top`` is
  fed from ``cam_high``). Images are resized (area) to the feature's declared ``H x W``;
* ``task``: the instruction (language-conditioned policies read it; ``robot_type`` "").

The checkpoint's preprocessor (normalisation, batching) runs before the model, then
``predict_action_chunk`` returns the whole chunk (``[1, H, D]``), the postprocessor
un-normalises it and we return ``[H, 14]`` absolute targets (first ``chunk_size``).
Policies without ``predict_action_chunk`` fall back to ``select_action`` called
``n_action_steps`` times on one observation (their internal queue of one inference).
``gripper``: "identity" (default; the checkpoint was trained on data in our convention,
1 = open) or "aloha" (openpi/ALOHA normalised joint angle, see openpi_backend).

LeRobot is not in requirements.txt because every LeRobot release pins an older torch (0.4.4:
``torch<2.11``, ``torchvision<0.26``) and ``opencv-python-headless<4.13``, against this
project's ``torch==2.13.0`` and opencv 5. ``scripts/setup.sh`` installs it anyway, with
``--no-deps`` after ``requirements-lerobot.txt`` (the policy path's own dependencies,
constrained by our pins); ``--policy_python`` runs the node from another interpreter when a
checkpoint needs a LeRobot that cannot live beside them. Without it, this backend raises an
ImportError saying so.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vla_bridge import contract as C
from vla_bridge.policy_nodes.backend import Observation, PolicyBackend

INSTALL_HINT = (
    "the lerobot backend needs the `lerobot` package (tested with lerobot 0.4.4), which is not "
    "installed in this interpreter. `bash scripts/setup.sh` installs it (unless "
    "VLA_BRIDGE_LEROBOT=0); or install it in a virtualenv of its own (with this package and the "
    "ROS wheels) and launch with --policy_python /path/to/that/venv/bin/python")


def _import_lerobot():
    try:
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from exc
    return PreTrainedConfig, get_policy_class, make_pre_post_processors


class LeRobotPolicy(PolicyBackend):
    def __init__(self, checkpoint: str | None = None, device: str = "cpu",
                 chunk_size: int | None = None, camera_map: dict | str | None = None,
                 gripper: str = "identity", num_threads: int = 1):
        if not checkpoint:
            raise ValueError("the lerobot policy needs a checkpoint directory: "
                             "--policy 'lerobot?checkpoint=DIR' (a pretrained_model dir)")
        path = Path(checkpoint)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path} is not a LeRobot pretrained_model directory (no "
                                    "config.json); only local directories are loaded, nothing "
                                    "is downloaded")
        if gripper not in ("identity", "aloha"):
            raise ValueError(f"gripper must be 'identity' or 'aloha', got {gripper!r}")
        PreTrainedConfig, get_policy_class, make_pre_post_processors = _import_lerobot()
        import torch
        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.torch = torch
        self.checkpoint = str(path)
        self.config = PreTrainedConfig.from_pretrained(str(path))
        self.config.device = device
        self.policy = get_policy_class(self.config.type).from_pretrained(str(path), config=self.config)
        self.policy.eval()
        if (path / "policy_preprocessor.json").is_file():
            self.preprocessor, self.postprocessor = make_pre_post_processors(
                self.config, pretrained_path=str(path),
                preprocessor_overrides={"device_processor": {"device": device}})
        else:  # an older checkpoint: no saved processors, hence no normalisation stats
            self.preprocessor, self.postprocessor = make_pre_post_processors(self.config)
        if isinstance(camera_map, str):
            camera_map = json.loads(camera_map)
        self.camera_map = dict(camera_map or {})
        self.gripper = gripper
        self.chunk_size = int(chunk_size) if chunk_size else None
        self.instruction = ""
        self.images = {}  # input feature key -> (our camera, (H, W))
        self.state_key = None
        for key, feature in self.config.input_features.items():
            if key.startswith("observation.images.") or key == "observation.image":
                name = key.removeprefix("observation.images.").removeprefix("observation.")
                self.images[key] = (self.camera_map.get(name, name), tuple(feature.shape[-2:]))
            elif key == "observation.state":
                self.state_key = key
                if feature.shape[-1] != C.ACTION_DIM:
                    raise ValueError(f"checkpoint state has {feature.shape[-1]} dims, the "
                                     f"contract has {C.ACTION_DIM}")
        action = self.config.output_features.get("action")
        if action is None or action.shape[-1] != C.ACTION_DIM:
            raise ValueError(f"checkpoint action feature must be [{C.ACTION_DIM}], got "
                             f"{None if action is None else list(action.shape)}")

    def reset(self) -> None:
        self.policy.reset()

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        self.instruction = instruction or ""

    def batch(self, observation: Observation) -> dict:
        import cv2
        t = self.torch
        batch = {}
        if self.state_key:
            batch[self.state_key] = t.as_tensor(np.asarray(observation.state, np.float32))[None]
        for key, (camera, (h, w)) in self.images.items():
            image = observation.images.get(camera)
            if image is None:
                raise ValueError(f"checkpoint input {key!r} needs camera {camera!r}; the "
                                 f"observation has {sorted(observation.images)} (camera_map "
                                 "maps checkpoint names to ours)")
            image = np.asarray(image)
            if image.shape[:2] != (h, w):
                image = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
            tensor = t.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float() / 255.0
            batch[key] = tensor[None]
        batch["task"] = self.instruction
        batch["robot_type"] = ""
        return batch

    def predict(self, observation: Observation) -> np.ndarray:
        with self.torch.inference_mode():
            batch = self.preprocessor(self.batch(observation))
            if hasattr(self.policy, "predict_action_chunk"):
                chunk = self.policy.predict_action_chunk(batch)
            else:  # one inference, served from the policy's own queue
                n = int(getattr(self.config, "n_action_steps", 1))
                self.policy.reset()
                chunk = self.torch.stack([self.policy.select_action(batch) for _ in range(n)], 1)
            chunk = self.postprocessor(chunk)
        actions = np.asarray(chunk.detach().cpu().double().numpy()).reshape(-1, C.ACTION_DIM)
        if self.gripper == "aloha":
            from vla_bridge.policy_nodes.openpi_backend import actions_from_wire
            actions = actions_from_wire(actions, "aloha")
        return actions[: self.chunk_size] if self.chunk_size else actions
