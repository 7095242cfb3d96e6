"""`torch` backend: a small built-in language-conditioned policy (CPU, PyTorch).

Image + state + instruction -> action chunk ``[H, D]`` of the checkpoint's embodiment
(``embodiment``: ``aloha_piper``, 14 absolute joint targets from the 14 joints, or
``libero_panda``, 7 end-effector deltas from the 8-D LIBERO state):

* language: a hashed bag of words. The instruction is lower-cased and split on
  non-alphanumerics; each word and each adjacent word pair is hashed with CRC-32 (stable
  across processes, unlike Python's ``hash``) into ``vocab_buckets`` buckets; an
  ``EmbeddingBag`` (mean) gives ``text_dim`` features. An empty instruction embeds to 0;
* vision: ``cam_high`` downscaled (area) to ``image_width x image_height`` (64 x 48), four
  3x3 convolutions (16-32-64-64 channels, strides 2-2-1-1, so a 16 x 12 map at 64 x 48).
  The language features scale and shift the last two layers' channels (FiLM), so what
  the camera features pick out depends on the instruction. The map is read out two ways:
  a spatial softmax per channel (the expected image x, y of that channel's strongest
  response: where things are) and global average pooling (what is there) -> 192 features;
* state: normalised with the checkpoint's ``state_mean`` / ``state_std``;
* head: MLP ``[192 + text_dim + state_dim] -> hidden -> hidden -> H * D``. For absolute joint
  targets it predicts normalised *offsets* from the current state: targets = state + offset *
  ``action_std`` + ``action_mean`` (so an untrained model stays near the current pose); for
  end-effector deltas the actions themselves: out * ``action_std`` + ``action_mean``.

Checkpoint: a directory with ``config.json`` (``TinyPolicyConfig`` fields plus
``format``) and ``weights.pt`` (a ``state_dict`` saved by ``torch.save``, loaded with
``weights_only=True``). ``TorchPolicy(checkpoint=DIR)`` loads it; ``save_checkpoint``
writes it; `vla-bridge train` (data/train.py) trains one on a LeRobot dataset.
"""
from __future__ import annotations

import json
import re
import zlib
from itertools import pairwise
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend

FORMAT = "vla_bridge.tiny_policy/2"  # /1: no FiLM or spatial softmax (retrain)
CONFIG_FILE, WEIGHTS_FILE = "config.json", "weights.pt"


@dataclass
class TinyPolicyConfig:
    chunk_size: int = 50
    embodiment: str = C.ALOHA_PIPER.name  # a checkpoint from before it was written: ALOHA's
    action_dim: int = C.ALOHA_PIPER.action_dim
    state_dim: int = C.ALOHA_PIPER.state_dim
    camera: str = "cam_high"
    image_width: int = 64
    image_height: int = 48
    vocab_buckets: int = 4096
    text_dim: int = 64
    hidden: int = 256
    state_mean: list[float] = field(default_factory=lambda: [0.0] * C.ALOHA_PIPER.action_dim)
    state_std: list[float] = field(default_factory=lambda: [1.0] * C.ALOHA_PIPER.action_dim)
    action_mean: list[float] = field(default_factory=lambda: [0.0] * C.ALOHA_PIPER.action_dim)
    action_std: list[float] = field(default_factory=lambda: [0.05] * C.ALOHA_PIPER.action_dim)

    @classmethod
    def from_dict(cls, d: dict) -> TinyPolicyConfig:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @classmethod
    def for_embodiment(cls, embodiment: str = C.ALOHA_PIPER.name, **fields) -> TinyPolicyConfig:
        """A config shaped for `embodiment` (its dimensions; neutral normalisation stats
        unless given)."""
        e = C.get_embodiment(embodiment)
        neutral = {"state_mean": [0.0] * e.state_dim, "state_std": [1.0] * e.state_dim,
                   "action_mean": [0.0] * e.action_dim,
                   "action_std": [0.05 if e.action_kind == C.ACTION_JOINT_ABSOLUTE else 0.5]
                   * e.action_dim}
        return cls(**{"embodiment": e.name, "action_dim": e.action_dim,
                      "state_dim": e.state_dim, **neutral, **fields})

    @property
    def absolute(self) -> bool:
        """Actions are absolute targets of the state's own joints (predicted as offsets)."""
        return C.get_embodiment(self.embodiment).action_kind == C.ACTION_JOINT_ABSOLUTE


def tokenize(text: str, buckets: int) -> list[int]:
    """Hashed words and word pairs of ``text`` (deterministic across processes)."""
    words = [w for w in re.split(r"[^0-9a-z]+", (text or "").lower()) if w]
    grams = words + [f"{a} {b}" for a, b in pairwise(words)]
    return [zlib.crc32(g.encode()) % buckets for g in grams]


def build_model(config: TinyPolicyConfig):
    import torch
    from torch import nn

    class FiLMConv(nn.Module):
        """3x3 convolution + ReLU; with ``film``, the text features scale and shift its
        output channels."""

        def __init__(self, cin: int, cout: int, stride: int, text_dim: int, film: bool):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
            self.film = nn.Linear(text_dim, 2 * cout) if film else None
            if self.film is not None:  # start as the identity: scale 1, shift 0
                nn.init.zeros_(self.film.weight)
                nn.init.zeros_(self.film.bias)

        def forward(self, x, text):
            x = self.conv(x)
            if self.film is not None:
                scale, shift = self.film(text)[:, :, None, None].chunk(2, dim=1)
                x = x * (1.0 + scale) + shift
            return torch.relu(x)

    class TinyVLA(nn.Module):
        def __init__(self, cfg: TinyPolicyConfig):
            super().__init__()
            self.cfg = cfg
            chans, strides = [3, 16, 32, 64, 64], [2, 2, 1, 1]
            self.vision = nn.ModuleList(
                FiLMConv(cin, cout, stride, cfg.text_dim, film=i >= 2)
                for i, ((cin, cout), stride) in enumerate(zip(pairwise(chans), strides)))
            self.text = nn.EmbeddingBag(cfg.vocab_buckets, cfg.text_dim, mode="mean")
            d = cfg.action_dim
            self.absolute = cfg.absolute
            self.head = nn.Sequential(
                nn.Linear(3 * chans[-1] + cfg.text_dim + cfg.state_dim, cfg.hidden), nn.ReLU(),
                nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(),
                nn.Linear(cfg.hidden, cfg.chunk_size * d))
            for name in ("state_mean", "state_std", "action_mean", "action_std"):
                self.register_buffer(name, torch.tensor(getattr(cfg, name), dtype=torch.float32))

        @staticmethod
        def keypoints(features):
            """[B, C, h, w] -> [B, 2C]: each channel's softmax-weighted x and y in [-1, 1]."""
            b, c, h, w = features.shape
            weights = torch.softmax(features.reshape(b, c, h * w), dim=-1).reshape(b, c, h, w)
            xs = torch.linspace(-1.0, 1.0, w, device=features.device)
            ys = torch.linspace(-1.0, 1.0, h, device=features.device)
            x = (weights.sum(2) * xs).sum(-1)
            y = (weights.sum(3) * ys).sum(-1)
            return torch.cat([x, y], dim=1)

        def forward(self, image, state, tokens, offsets):
            """image [B, 3, h, w] float in [0, 1]; state [B, D]; tokens/offsets: EmbeddingBag
            input (flat ids, start of each sample). Returns the actions [B, H, D]."""
            txt = self.text(tokens, offsets)
            x = image * 2.0 - 1.0
            for layer in self.vision:
                x = layer(x, txt)
            vis = torch.cat([self.keypoints(x), x.mean((2, 3))], dim=1)
            s = (state - self.state_mean) / self.state_std
            out = self.head(torch.cat([vis, txt, s], dim=-1))
            out = out.view(-1, self.cfg.chunk_size, self.cfg.action_dim)
            actions = out * self.action_std + self.action_mean
            return state[:, None, :] + actions if self.absolute else actions

    return TinyVLA(config)


def save_checkpoint(model, config: TinyPolicyConfig, path) -> Path:
    import torch
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / CONFIG_FILE).write_text(json.dumps({"format": FORMAT, **asdict(config)}, indent=2))
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, path / WEIGHTS_FILE)
    return path


def load_checkpoint(path):
    """(model in eval mode, config) from a checkpoint directory."""
    import torch
    path = Path(path)
    cfg_file, weights = path / CONFIG_FILE, path / WEIGHTS_FILE
    if not cfg_file.is_file() or not weights.is_file():
        raise FileNotFoundError(f"torch policy checkpoint {path} needs {CONFIG_FILE} and "
                                f"{WEIGHTS_FILE}")
    raw = json.loads(cfg_file.read_text())
    if raw.get("format") != FORMAT:
        raise ValueError(f"{cfg_file}: format {raw.get('format')!r}, expected {FORMAT!r} "
                         f"(a checkpoint of an older model: train it again with vla-bridge train)")
    config = TinyPolicyConfig.from_dict(raw)
    try:
        embodiment = C.get_embodiment(config.embodiment)
    except ValueError as exc:
        raise ValueError(f"{cfg_file}: {exc}") from None
    if (config.state_dim, config.action_dim) != (embodiment.state_dim, embodiment.action_dim):
        raise ValueError(f"{cfg_file}: a {config.state_dim}-D state and {config.action_dim}-D "
                         f"actions do not fit {embodiment.summary()}")
    model = build_model(config)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    model.eval()
    return model, config


def init_checkpoint(path, seed: int = 0, **config) -> Path:
    """A randomly initialised checkpoint (tests, smoke runs, the start of training)."""
    import torch
    cfg = TinyPolicyConfig.for_embodiment(**config)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = build_model(cfg)
    return save_checkpoint(model, cfg, path)


class TorchPolicy(PolicyBackend):
    """The built-in tiny policy from a checkpoint directory (CPU only)."""

    def __init__(self, checkpoint: str | None = None, chunk_size: int | None = None,
                 num_threads: int = 1):
        import torch
        if not checkpoint:
            raise ValueError("the torch policy needs a checkpoint: --policy 'torch?checkpoint=DIR' "
                             "(a directory with config.json and weights.pt)")
        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.torch = torch
        self.model, self.config = load_checkpoint(checkpoint)
        self.embodiment = self.config.embodiment  # the policy node refuses another graph's
        self.checkpoint = str(checkpoint)
        self.chunk_size = int(chunk_size) if chunk_size else None
        self.instruction = ""
        self._tokens = None

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        self.instruction = instruction or ""
        ids = tokenize(self.instruction, self.config.vocab_buckets)
        self._tokens = self.torch.tensor(ids, dtype=self.torch.long)

    def preprocess(self, observation: Observation):
        import cv2
        cfg = self.config
        image = observation.images.get(cfg.camera)
        if image is None:
            raise ValueError(f"torch policy needs camera {cfg.camera!r}; the observation has "
                             f"{sorted(observation.images)}")
        small = cv2.resize(np.asarray(image), (cfg.image_width, cfg.image_height),
                           interpolation=cv2.INTER_AREA)
        t = self.torch
        img = t.from_numpy(np.ascontiguousarray(small)).permute(2, 0, 1)[None].float() / 255.0
        state = t.as_tensor(np.asarray(observation.state, np.float32)).reshape(1, -1)
        if state.shape[1] != cfg.state_dim:
            raise ValueError(f"torch policy expects a [{cfg.state_dim}] state, got "
                             f"{list(state.shape[1:])}")
        if self._tokens is None:
            self.set_instruction(self.instruction)
        return img, state, self._tokens, t.zeros(1, dtype=t.long)

    def predict(self, observation: Observation) -> np.ndarray:
        with self.torch.inference_mode():
            out = self.model(*self.preprocess(observation))[0].double().numpy()
        return out[: self.chunk_size] if self.chunk_size else out
