"""Policy backends by name. Each entry is "module:Class" so heavy backends import lazily.

A spec may carry constructor arguments as a query string, so they travel through the
`policy` launch argument unchanged: ``NAME?key=value&key=value``, e.g.
``openpi?host=10.0.0.5&port=8000``, ``torch?checkpoint=ckpt/tiny``,
``replay?path=runs/s1_all``. Values are parsed as JSON when they can be (numbers, true,
false, null, lists, objects) and kept as strings otherwise; they override the node's own
keywords (chunk_size, control_period, follow).
"""
from __future__ import annotations

import inspect
import json
import urllib.parse
from importlib import import_module
from pathlib import Path

import numpy as np

from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend

POLICIES = {
    "oracle": "vla_bridge.policy_nodes.oracle:OraclePolicy",
    "hold": "vla_bridge.policy_nodes.hold:HoldPolicy",
    "openpi": "vla_bridge.policy_nodes.openpi.client:OpenPIPolicy",
    # a vla-eval model server (vla-eval's websocket + msgpack protocol, docs/policies.md)
    "vla_eval": "vla_bridge.policy_nodes.vla_eval.client:VlaEvalPolicy",
    "torch": "vla_bridge.policy_nodes.torch_policy:TorchPolicy",
    "lerobot": "vla_bridge.policy_nodes.lerobot.backend:LeRobotPolicy",
    # LeRobot's gRPC policy server (lerobot.async_inference), spoken as its robot client does
    "lerobot_async": "vla_bridge.policy_nodes.lerobot_async.client:LeRobotAsyncPolicy",
    "replay": "vla_bridge.policy_nodes.registry:ReplayPolicy",
    # LIBERO (embodiment libero_panda): privileged pick-and-place over OSC deltas
    "libero_oracle": "vla_bridge.policy_nodes.oracle.libero:LiberoOracle",
}


def parse_spec(spec: str) -> tuple[str, dict]:
    """"NAME?k=v&k2=v2" -> ("NAME", {"k": value, ...}) (values JSON-parsed when possible)."""
    name, _, query = spec.partition("?")
    args = {}
    for key, raw in urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        try:
            args[key] = json.loads(raw)
        except json.JSONDecodeError:
            args[key] = raw
    return name, args


def make_policy(name: str, **kwargs) -> PolicyBackend:
    """A registered backend by name, or a user's own as "package.module:Class" (either may
    carry "?key=value" constructor arguments)."""
    base, explicit = parse_spec(name)
    spec = POLICIES.get(base, base)
    if ":" not in spec:
        raise ValueError(f"unknown policy backend {base!r}; available: {sorted(POLICIES)} "
                         "or 'package.module:Class' for your own")
    module, cls = spec.split(":", 1)
    backend_cls = getattr(import_module(module), cls)
    params = inspect.signature(backend_cls).parameters
    open_ended = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [k for k in explicit if k not in params and not open_ended]
    if unknown:
        accepted = [k for k, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        raise ValueError(f"policy {base!r} takes no argument(s) {unknown}; it accepts {accepted}")
    chosen = {k: v for k, v in kwargs.items() if k in params}
    chosen.update(explicit)
    return backend_cls(**chosen)


class ReplayPolicy(PolicyBackend):
    """Plays back the executed commands of a recorded episode (``record.commands`` of a run
    directory's ``episodes/<scene>/<task>_r<round>.npz``, see vla_bridge.embodiment.episode_record).

    ``path``: a run directory (the episode whose recorded instruction equals the current
    one is chosen, round 1 first) or one ``.npz`` file; ``episode``: a substring of the file
    name to choose instead (e.g. ``L0_pickup_yellow_block_3_r2``). Chunks are aligned by
    the observation stamp: the observation ``s`` control periods after the episode's first
    one gets ``commands[s + 1 : s + 1 + chunk_size]`` (frame 0 is the command at reset),
    held at the last command once the recording ends. Replaying a lock-step run with the
    same seed reproduces its executed commands exactly.
    """

    def __init__(self, path: str = "runs/latest", episode: str | None = None,
                 chunk_size: int = 50, control_period: float = 0.06):
        self.path = Path(path)
        self.episode = episode
        self.chunk_size = int(chunk_size)
        self.dt = float(control_period)
        self.commands: np.ndarray | None = None
        self.source: Path | None = None
        self._index: list[tuple[Path, dict]] | None = None
        self._t0: float | None = None

    def _episodes(self) -> list[tuple[Path, dict]]:
        if self._index is None:
            from vla_bridge.embodiment.episode_record import load_episode
            if self.path.is_file():
                files = [self.path]
            elif self.path.is_dir():
                files = sorted(self.path.glob("episodes/**/*.npz")) or sorted(self.path.glob("*.npz"))
            else:
                raise FileNotFoundError(f"replay: {self.path} is neither a run directory nor an .npz")
            if not files:
                raise FileNotFoundError(f"replay: no recorded episodes (episodes/**/*.npz) in {self.path}")
            self._index = [(f, load_episode(f)[1]) for f in files]
        return self._index

    def reset(self) -> None:
        self._t0 = None

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        from vla_bridge.embodiment.episode_record import load_episode
        episodes = self._episodes()
        if self.episode:
            found = [f for f, _ in episodes if self.episode in f.stem]
        elif len(episodes) == 1:
            found = [episodes[0][0]]
        else:
            found = [f for f, meta in episodes if meta.get("instruction") == instruction]
        if not found:
            raise ValueError(f"replay: no recorded episode in {self.path} matches "
                             f"{self.episode or instruction!r}; recorded: "
                             f"{[f.stem for f, _ in episodes][:10]}")
        record, _ = load_episode(found[0])
        if record.commands is None or record.commands.ndim != 2 or len(record.commands) < 2:
            raise ValueError(f"replay: {found[0]} has no recorded commands")
        self.source, self.commands = found[0], np.asarray(record.commands, float)
        self._t0 = None

    def predict(self, observation: Observation) -> np.ndarray:
        if self.commands is None:
            raise RuntimeError("replay: no episode chosen (set_instruction was not called)")
        if self._t0 is None:
            self._t0 = observation.stamp
        step = max(0, int(np.rint((observation.stamp - self._t0) / self.dt)))
        rows = np.arange(step + 1, step + 1 + self.chunk_size)
        return self.commands[np.minimum(rows, len(self.commands) - 1)]
