"""`lerobot` backend: a LeRobot policy checkpoint run in-process from a local
``pretrained_model`` directory, driven the way LeRobot's own rollout drives its type.

The directory is what ``policy.save_pretrained(DIR)`` (plus, for LeRobot >= 0.4, the
processors' ``save_pretrained(DIR)``) writes: ``config.json`` (with ``type``),
``model.safetensors`` and, when present, ``policy_preprocessor.json`` /
``policy_postprocessor.json`` with their normalisation ``.safetensors``. Nothing is
downloaded (``lerobot.hub``): the path must be a local directory (``lerobot-train`` writes it to
``outputs/train/<run>/checkpoints/<step>/pretrained_model``), and Hub repositories the
checkpoint names (a VLA's VLM or tokenizer) come from the local Hugging Face cache or from
``hub_dirs='{"owner/repo": "/local/dir"}'``.

Observation mapping, as LeRobot's own ``predict_action`` prepares it:

* ``observation.state``: our 14 joints (contract order), float32 ``[1, 14]``;
* ``observation.images.<name>``: float32 ``[1, 3, H, W]`` in ``[0, 1]``, for every visual
  input feature of the checkpoint. ``<name>`` is our camera name unless ``camera_map``
  says otherwise (``{"top": "cam_high"}``: the checkpoint's ``observation.images.top`` is
  fed from ``cam_high``). Images are resized (area) to the feature's declared ``H x W``;
* ``task``: the instruction (language-conditioned policies read it; ``robot_type`` "").

The checkpoint's preprocessor (normalisation, tokenizer, batching) runs before the model and
its postprocessor un-normalises the actions; we return ``[H, 14]`` absolute targets (first
``chunk_size``). ``reset()`` (each episode) resets the policy and both processors. The chunk:

* **chunking policies** (ACT, SmolVLA, pi0 / pi0.5 / pi0-FAST, GR00T, X-VLA, WALL-OSS, ...):
  ``predict_action_chunk``, the whole predicted chunk (their ``select_action`` queues its
  first ``n_action_steps``; the node's ``action_horizon`` chooses how many run);
* **queue-driven policies** (Diffusion, VQ-BeT, TD-MPC): their ``predict_action_chunk`` reads
  the observation history that only ``select_action`` fills, so each call is one
  ``select_action``: it appends the observation to the history and pops the next action of
  the policy's plan, planning anew when that is used up. The chunk is that action plus the
  rest of the plan. Actions planned for control steps that passed since the previous call
  (the node executed them from the chunk returned then; steps from the observation stamps
  and ``control_period``) are dropped first. Called every control step (``action_horizon=1``)
  this is exactly LeRobot's rollout; called once per chunk, the history holds the
  observations of the last ``n_obs_steps`` calls and every call plans afresh;
* **single-step policies** (SAC): ``select_action``, a chunk of one action.

``gripper``: "identity" (default; the checkpoint was trained on data in our convention,
1 = open) or "aloha" (openpi/ALOHA normalised joint angle, see ``openpi.wire``). ``seed``: torch's
random generator is seeded with it at every ``reset()``, so a sampling policy (Diffusion, the
flow-matching VLAs) replays an episode exactly (default: not seeded).

**Which LeRobot.** A checkpoint saved by a newer LeRobot than this interpreter's (its
``config.json`` has keys this LeRobot's config class of that type lacks: LeRobot 0.6 writes
``pretrained_revision``, ``gradient_checkpointing``, ...), or any checkpoint when this interpreter
has no LeRobot, runs in ``.venv-lerobot`` (LeRobot 0.6.1, ``bash scripts/setup.sh lerobot``):
this backend is then a proxy of the same backend built in a worker process there
(``lerobot.worker``); without that venv, one error says how to build it. Checkpoints this
LeRobot reads (0.4.x ones in ``.venv``) run here, in-process, as before; the node itself can
also run from ``.venv-lerobot`` (``--policy_python .venv-lerobot/bin/python``), where LeRobot
0.6.1 reads both.

LeRobot is not in requirements.txt because every LeRobot release pins an older torch (0.4.4:
``torch<2.11``, ``torchvision<0.26``) and ``opencv-python-headless<4.13``, against this
project's ``torch==2.13.0`` and opencv 5. ``scripts/setup.sh`` installs it anyway, with
``--no-deps`` after ``requirements-lerobot.txt`` (the policy path's own dependencies,
constrained by our pins); ``--policy_python`` runs the node from another interpreter when a
checkpoint needs a LeRobot that cannot live beside them. Without it, this backend raises an
ImportError saying so.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

from vla_bridge import contract as C
from vla_bridge.policy_nodes.lerobot import hub, worker
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend

INSTALL_HINT = (
    "the lerobot backend needs the `lerobot` package (tested with lerobot 0.4.4), which is not "
    "installed in this interpreter. `bash scripts/setup.sh` installs it (unless "
    "VLA_BRIDGE_LEROBOT=0); or install it in a virtualenv of its own (with this package and the "
    "ROS wheels) and launch with --policy_python /path/to/that/venv/bin/python")
QUEUE_DRIVEN = ("diffusion", "vqbet", "tdmpc")  # see the module docstring
SINGLE_STEP = ("sac",)
ACTION = "action"  # LeRobot's action key (lerobot.utils.constants.ACTION)


def _import_lerobot():
    hub.go_offline()  # before huggingface_hub is imported, where possible
    try:
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from exc
    return PreTrainedConfig, get_policy_class, make_pre_post_processors


def _lerobot_version() -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version("lerobot")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def needs_lerobot_venv(path: Path) -> str | None:
    """Why the checkpoint at ``path`` must run in .venv-lerobot (None: it runs here)."""
    if worker.in_worker() or worker.is_this_interpreter(worker.venv_python()):
        return None
    try:
        PreTrainedConfig = _import_lerobot()[0]
    except ImportError:
        if worker.venv_python().exists():
            return f"this interpreter ({sys.executable}) has no LeRobot"
        raise
    config = json.loads((path / "config.json").read_text())
    kind = config.get("type")
    try:
        known = {f.name for f in dataclasses.fields(PreTrainedConfig.get_choice_class(kind))}
    except Exception:  # noqa: BLE001 - a type this LeRobot does not have
        if not worker.venv_python().exists():
            return None  # let LeRobot's own error say so
        return f"LeRobot {_lerobot_version()} here has no policy type {kind!r}"
    unknown = sorted(set(config) - known - {"type"})
    if not unknown:
        return None
    return (f"the {kind} checkpoint {path} was saved by a newer LeRobot than {_lerobot_version()} "
            f"here (config.json keys {unknown})")


def _as_dict(value: dict | str | None) -> dict:
    return dict(json.loads(value) if isinstance(value, str) else value or {})


class LeRobotPolicy(PolicyBackend):
    def __init__(self, checkpoint: str | None = None, device: str = "cpu",
                 chunk_size: int | None = None, camera_map: dict | str | None = None,
                 gripper: str = "identity", num_threads: int = 1,
                 control_period: float = 0.06, hub_dirs: dict | str | None = None,
                 seed: int | None = None):
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
        self.seed = None if seed is None else int(seed)
        self._remote = None
        why = needs_lerobot_venv(path)
        if why:  # the same backend, built in .venv-lerobot (module docstring)
            self._remote = worker.WorkerPolicy(
                "vla_bridge.policy_nodes.lerobot.backend:LeRobotPolicy",
                dict(checkpoint=str(path), device=device, chunk_size=chunk_size,
                     camera_map=camera_map, gripper=gripper, num_threads=num_threads,
                     control_period=control_period, hub_dirs=hub_dirs, seed=seed), why)
            return
        PreTrainedConfig, get_policy_class, make_pre_post_processors = _import_lerobot()
        import torch
        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.torch = torch
        self.checkpoint = str(path)
        self.config = PreTrainedConfig.from_pretrained(str(path))
        self.config.device = device
        self.camera_map = _as_dict(camera_map)
        self._map_features()  # refuses a non-ALOHA checkpoint before loading its weights
        hub.check_buildable(self.config.type)
        if not (path / "model.safetensors").is_file():  # before building a model to fill
            self._refuse_without_weights(path, _as_dict(hub_dirs))
        self._build(path, device, _as_dict(hub_dirs), get_policy_class, make_pre_post_processors)
        self.mode = ("queue" if self.config.type in QUEUE_DRIVEN else
                     "single" if self.config.type in SINGLE_STEP else "chunk")
        self.dt = float(control_period)
        self._last_step: int | None = None  # control step of the previous call (queue mode)
        self.gripper = gripper
        self.chunk_size = int(chunk_size) if chunk_size else None
        self.instruction = ""

    def _build(self, path: Path, device: str, hub_dirs: dict, get_policy_class,
               make_pre_post_processors) -> None:
        """The policy and its processors; a failure while Hub files it names are missing
        becomes one error naming them (``hub.missing_hub_files``)."""
        kind = self.config.type
        refs = {repo: where for repo, where in hub.hub_refs(self.config, path).items()
                if repo not in hub_dirs}
        overrides = hub.use_local_dirs(self.config, path, hub_dirs)
        try:
            self.policy = get_policy_class(kind).from_pretrained(str(path), config=self.config)
            self.policy.eval()
            if (path / "policy_preprocessor.json").is_file():
                pre = {"device_processor": {"device": device},
                       **overrides["policy_preprocessor.json"]}
                self.preprocessor, self.postprocessor = make_pre_post_processors(
                    self.config, pretrained_path=str(path), preprocessor_overrides=pre,
                    postprocessor_overrides=overrides["policy_postprocessor.json"])
            else:  # an older checkpoint: no saved processors, hence no normalisation stats
                self.preprocessor, self.postprocessor = make_pre_post_processors(self.config)
        except ImportError as exc:
            raise hub.missing_package_error(kind, exc) from exc
        except Exception as exc:
            error = hub.missing_hub_files(kind, path, refs, exc) if refs else None
            if error is None:
                raise
            raise error from exc

    def _refuse_without_weights(self, path: Path, hub_dirs: dict) -> None:
        """One error for a checkpoint with no weights: the Hub files it also lacks, if any."""
        missing = FileNotFoundError(f"{path} has no model.safetensors (the policy's weights)")
        refs = {repo: where for repo, where in hub.hub_refs(self.config, path).items()
                if repo not in hub_dirs}
        error = hub.missing_hub_files(self.config.type, path, refs, missing) if refs else None
        raise error or missing

    def _map_features(self) -> None:
        self.images = {}  # input feature key -> (our camera, (H, W))
        self.state_key = None
        for key, feature in self.config.input_features.items():
            if key.startswith("observation.images.") or key == "observation.image":
                name = key.removeprefix("observation.images.").removeprefix("observation.")
                self.images[key] = (self.camera_map.get(name, name), tuple(feature.shape[-2:]))
            elif key == "observation.state":
                self.state_key = key
                if feature.shape[-1] != C.ALOHA_PIPER.action_dim:
                    raise ValueError(f"checkpoint state has {feature.shape[-1]} dims, the "
                                     f"contract has {C.ALOHA_PIPER.action_dim}")
        action = self.config.output_features.get(ACTION)
        if action is None or action.shape[-1] != C.ALOHA_PIPER.action_dim:
            raise ValueError(f"checkpoint action feature must be [{C.ALOHA_PIPER.action_dim}], got "
                             f"{None if action is None else list(action.shape)}")

    def reset(self) -> None:
        if self._remote:
            return self._remote.reset()
        if self.seed is not None:
            self.torch.manual_seed(self.seed)
        self.policy.reset()
        self.preprocessor.reset()
        self.postprocessor.reset()
        self._last_step = None

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        if self._remote:
            return self._remote.set_instruction(instruction, task)
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
        if self._remote:
            return self._remote.predict(observation)
        with self.torch.inference_mode():
            batch = self.preprocessor(self.batch(observation))
            if self.mode == "queue":
                chunk = self._from_plan(batch, observation.stamp)
            elif self.mode == "single":
                chunk = self.policy.select_action(batch)[:, None]
            else:
                chunk = self.policy.predict_action_chunk(batch)
            chunk = self.postprocessor(chunk)  # [1, H, D]
        actions = np.asarray(chunk.detach().cpu().double().numpy())
        actions = actions.reshape(-1, C.ALOHA_PIPER.action_dim)
        if self.gripper == "aloha":
            from vla_bridge.policy_nodes.openpi.wire import actions_from_wire
            actions = actions_from_wire(actions, "aloha")
        return actions[: self.chunk_size] if self.chunk_size else actions

    @property
    def remote(self) -> worker.WorkerPolicy | None:
        """The worker in .venv-lerobot this backend forwards to (None: it runs here)."""
        return self._remote

    def close(self) -> None:
        if self._remote:
            self._remote.close()

    def _from_plan(self, batch: dict, stamp: float):
        """One ``select_action`` on the policy's own queues (module docstring): [1, n, D]."""
        plan = self.policy._queues[ACTION]  # its planned actions, [1, D] each (no public API)
        step = round(stamp / self.dt)
        passed = 0 if self._last_step is None else step - self._last_step - 1
        if passed < 0:  # the same (or an older) observation again: plan afresh
            plan.clear()
        for _ in range(min(passed, len(plan))):  # executed from the chunk returned last time
            plan.popleft()
        self._last_step = step
        first = self.policy.select_action(batch)
        return self.torch.stack([first, *self.policy._queues[ACTION]], dim=1)
