"""`vla-bridge train DATASET --out CKPT`: train the built-in tiny policy
(``policy_nodes.torch_policy``: camera image + state + instruction -> action chunk) on a
LeRobot dataset (``vla-bridge demos`` / ``export``), with torch on the CPU.

Data: every frame of the dataset is a sample. Its input is the camera image downscaled to the
checkpoint's size, the measured state and the episode's task text; its target is the chunk
the policy node will execute, in the dataset's embodiment (its ``robot_type``):

* absolute joint targets (``aloha_piper``): action k at the frame's time + (k + 1) x control
  period (0.06 s, the sim's tick, not the dataset's frame period), read from the episode's
  executed targets (joints interpolated linearly, grippers held from the last frame before;
  past the episode's end the last target);
* end-effector deltas (``libero_panda``, one frame per 20 Hz step): the actions of frames
  t .. t + H - 1 (past the episode's end: hold still, the gripper as it was last). Frames come through LeRobot's dataset API; video features are decoded
with PyAV (LeRobot's own decoders need torchcodec, which does not load here).

The checkpoint carries its config and the normalisation stats computed from the data
(state mean/std; mean/std of the target offsets from the current state), so
``--policy 'torch?checkpoint=CKPT'`` serves it as it is.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from vla_bridge import contract as C
from vla_bridge.data import lerobot_export as X
from vla_bridge.evaluation.progress import Progress

CONTROL_PERIOD_S = C.ALOHA_PIPER.control_period  # the sim's tick: what one action lasts
MIN_STD = 1e-3  # a dimension that never varies is not blown up by normalisation


@dataclass
class TrainingData:
    images: np.ndarray  # [N, h, w, 3] uint8
    states: np.ndarray  # [N, state_dim] float32
    targets: np.ndarray  # [N, H, action_dim] float32, the chunk's actions
    texts: list[str]  # [N] task text of each frame
    episodes: int
    embodiment: C.Embodiment = C.ALOHA_PIPER


@dataclass(frozen=True)
class TrainOptions:
    steps: int = 3000
    batch_size: int = 64
    lr: float = 1e-3
    chunk_size: int = 50
    image_width: int = 64
    image_height: int = 48
    camera: str = "cam_high"
    seed: int = 0
    threads: int | None = None
    shift_px: int = 3  # random image shift of up to this many pixels (0: none)


# ============================================================================ data
def _small(image: np.ndarray, width: int, height: int) -> np.ndarray:
    import cv2
    return cv2.resize(np.asarray(image), (width, height), interpolation=cv2.INTER_AREA)


def _video_frames(meta, key: str, width: int, height: int) -> list[np.ndarray]:
    """Every episode's frames of one video feature, in dataset order (PyAV)."""
    import av

    frames: list[np.ndarray] = []
    decoded: dict[str, list[tuple[float, np.ndarray]]] = {}
    times_of: dict[str, np.ndarray] = {}
    for ep in range(meta.total_episodes):
        path = str(meta.root / meta.get_video_file_path(ep, key))
        if path not in decoded:
            with av.open(path) as container:
                stream = container.streams.video[0]
                decoded[path] = [(float(f.pts * stream.time_base),
                                  _small(f.to_ndarray(format="rgb24"), width, height))
                                 for f in container.decode(stream)]
            decoded[path].sort(key=lambda tf: tf[0])
            times_of[path] = np.array([t for t, _ in decoded[path]])
        start = float(meta.episodes[ep][f"videos/{key}/from_timestamp"])
        length = int(meta.episodes[ep]["length"])
        frames += [decoded[path][i][1] for i in
                   _nearest(times_of[path], start + np.arange(length) / meta.fps)]
    return frames


def _nearest(times: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Index of the decoded frame nearest to each wanted time (`times` ascending)."""
    right = np.clip(np.searchsorted(times, wanted), 1, len(times) - 1)
    left = right - 1
    return np.where(np.abs(times[left] - wanted) <= np.abs(times[right] - wanted), left, right)


def chunk_targets(actions: np.ndarray, fps: int, chunk: int,
                  period: float = CONTROL_PERIOD_S) -> np.ndarray:
    """[n, chunk, D] targets of one episode's frames: the action at each frame's time +
    (k + 1) x period; joints linear, grippers the last value before, held at the end."""
    n, dim = actions.shape
    t_frames = np.arange(n) / fps
    query = t_frames[:, None] + (np.arange(chunk)[None, :] + 1) * period  # [n, chunk]
    query = np.minimum(query, t_frames[-1])
    out = np.empty((n, chunk, dim), np.float32)
    grippers = set(C.GRIPPER_INDEX.values())
    held = np.clip(np.searchsorted(t_frames, query + 1e-9, side="right") - 1, 0, n - 1)
    for d in range(dim):
        if d in grippers:
            out[:, :, d] = actions[held, d]
        else:
            out[:, :, d] = np.interp(query, t_frames, actions[:, d])
    return out


def delta_chunks(actions: np.ndarray, chunk: int, embodiment: C.Embodiment) -> np.ndarray:
    """[n, chunk, D] targets of one episode of per-step deltas: the actions of frames t ..
    t + chunk - 1; past its end, no motion and each gripper as it was last."""
    n, dim = actions.shape
    hold = np.zeros(dim, np.float32)
    grippers = [i for i, name in enumerate(embodiment.action_names) if "gripper" in name]
    hold[grippers] = actions[-1, grippers]
    padded = np.concatenate([actions, np.tile(hold, (chunk, 1))])
    return np.stack([padded[t:t + chunk] for t in range(n)]).astype(np.float32)


def episode_targets(actions: np.ndarray, fps: int, chunk: int,
                    embodiment: C.Embodiment) -> np.ndarray:
    """One episode's chunk targets in its embodiment's kind of action (module docstring)."""
    if embodiment.action_kind == C.ACTION_EEF_DELTA:
        if abs(fps * embodiment.control_period - 1.0) > 1e-9:
            raise ValueError(f"{embodiment.name} datasets need a frame per "
                             f"{embodiment.control_period} s step, got {fps} fps")
        return delta_chunks(actions, chunk, embodiment)
    return chunk_targets(actions, fps, chunk, embodiment.control_period)


def load_training_data(root: str | Path, options: TrainOptions,
                       echo: Callable[[str], None] = print) -> TrainingData:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset("local/train", root=Path(root))
    meta, table = dataset.meta, dataset.hf_dataset
    embodiment = X.embodiment_of(meta.robot_type)
    key = X.IMAGE_KEY.format(options.camera)
    if key not in meta.features:
        raise ValueError(f"{root} has no {key}; features: {sorted(meta.features)}")
    states = np.asarray(table[X.STATE], np.float32)
    actions = np.asarray(table[X.ACTION], np.float32)
    episode = np.asarray(table["episode_index"])
    tasks = {int(i): text for text, i in zip(meta.tasks.index, meta.tasks["task_index"])}
    texts = [tasks[int(i)] for i in table["task_index"]]
    echo(f"train: {len(states)} frames of {meta.total_episodes} {embodiment.name} episodes at "
         f"{meta.fps} fps; decoding {key}")
    if key in meta.video_keys:
        images = _video_frames(meta, key, options.image_width, options.image_height)
    else:
        images = [_small(np.asarray(img), options.image_width, options.image_height)
                  for img in table.with_format(None)[key]]
    if len(images) != len(states):
        raise ValueError(f"{key}: {len(images)} frames decoded for {len(states)} samples")
    targets = np.concatenate([episode_targets(actions[episode == e], meta.fps, options.chunk_size,
                                              embodiment) for e in np.unique(episode)])
    return TrainingData(np.stack(images), states, targets, texts, int(meta.total_episodes),
                        embodiment)


# ============================================================================ training
def random_shift(images, pad: int, generator: np.random.Generator):
    """Each image of [B, 3, h, w] moved by up to `pad` pixels (edge-padded, then cropped back):
    the augmentation that keeps a small CNN from keying on exact pixel positions, since the
    scenes' layouts jitter by only 1-2 cm."""
    import torch
    if pad <= 0:
        return images
    b, _, h, w = images.shape
    padded = torch.nn.functional.pad(images, (pad, pad, pad, pad), mode="replicate")
    dx, dy = generator.integers(0, 2 * pad + 1, size=(2, b))
    return torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(b)])


def normalisation(data: TrainingData) -> dict:
    """State and action stats; absolute joint targets as offsets from the state (what the
    model predicts for them), deltas as they are."""
    absolute = data.embodiment.action_kind == C.ACTION_JOINT_ABSOLUTE
    offsets = data.targets - data.states[:, None, :] if absolute else data.targets
    return {"state_mean": data.states.mean(0), "state_std": np.maximum(data.states.std(0), MIN_STD),
            "action_mean": offsets.mean((0, 1)),
            "action_std": np.maximum(offsets.std((0, 1)), MIN_STD)}


def train(dataset: str | Path, out: str | Path, options: TrainOptions = TrainOptions(),
          echo: Callable[[str], None] = print) -> dict:
    """Train a tiny policy on `dataset`; the checkpoint at `out`; a summary (losses, time)."""
    import torch

    from vla_bridge.policy_nodes.torch_policy import (TinyPolicyConfig, build_model,
                                                      save_checkpoint, tokenize)
    if options.threads:
        torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    t0 = time.monotonic()
    data = load_training_data(dataset, options, echo)
    stats = normalisation(data)
    config = TinyPolicyConfig.for_embodiment(
        data.embodiment.name, chunk_size=options.chunk_size, camera=options.camera,
        image_width=options.image_width, image_height=options.image_height,
        **{k: v.astype(float).tolist() for k, v in stats.items()})
    model = build_model(config)
    tokens = [torch.tensor(tokenize(text, config.vocab_buckets), dtype=torch.long)
              for text in sorted(set(data.texts))]
    token_of = {text: tokens[i] for i, text in enumerate(sorted(set(data.texts)))}
    images = torch.from_numpy(data.images).permute(0, 3, 1, 2).contiguous()
    states, targets = torch.from_numpy(data.states), torch.from_numpy(data.targets)
    action_std = torch.tensor(stats["action_std"], dtype=torch.float32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=options.lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, options.steps)
    generator = np.random.default_rng(options.seed)
    losses, every = [], max(1, options.steps // 20)  # 20 progress lines, not one per step
    model.train()
    with Progress(options.steps, "train steps") as bar:
        for step in range(options.steps):
            idx = generator.integers(len(states), size=options.batch_size)
            ids = [token_of[data.texts[i]] for i in idx]
            offsets = torch.tensor(np.cumsum([0] + [len(t) for t in ids[:-1]]), dtype=torch.long)
            flat = torch.cat(ids) if any(len(t) for t in ids) else torch.zeros(0, dtype=torch.long)
            batch = random_shift(images[idx].float() / 255.0, options.shift_px, generator)
            pred = model(batch, states[idx], flat, offsets)
            # the loss on normalised offsets: every joint counts alike, whatever its range
            err = (pred - targets[idx]) / action_std
            loss = (err ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            done = step + 1
            if done % every == 0 or done == options.steps:
                bar.update(done - bar.count, item=f"loss {np.mean(losses[-50:]):.4f}")
    model.eval()
    path = save_checkpoint(model, config, out)
    summary = {"checkpoint": str(path), "embodiment": data.embodiment.name,
               "frames": len(states), "episodes": data.episodes,
               "steps": options.steps, "batch_size": options.batch_size,
               "first_loss": float(np.mean(losses[:10])), "final_loss": float(np.mean(losses[-50:])),
               "wall_s": round(time.monotonic() - t0, 1), "options": options.__dict__}
    (Path(out) / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
