"""The current LeRobot's virtualenv for the tests (.venv-lerobot: LeRobot 0.6.1 on Python 3.12,
`bash scripts/setup.sh lerobot`; `setup.sh test` builds it): where it is, a marker that skips
a test without it, a runner for test-support functions that must run inside it, and the
policy calls of a recorded episode (what the policy node saw and what it published)."""
from __future__ import annotations

import os
import pickle
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
LEROBOT_PYTHON = REPO / ".venv-lerobot" / "bin" / "python"
needs_lerobot_venv = pytest.mark.skipif(
    not LEROBOT_PYTHON.exists() or os.environ.get("VLA_BRIDGE_LEROBOT") == "0",
    reason=f"{LEROBOT_PYTHON} absent: `bash scripts/setup.sh lerobot` builds it "
           "(setup.sh test does)")

RUNNER = """
import pickle, sys
from importlib import import_module
with open(sys.argv[1], "rb") as f:
    target, args, kwargs = pickle.load(f)
module, name = target.split(":")
result = getattr(import_module(module), name)(*args, **kwargs)
with open(sys.argv[1], "wb") as f:
    pickle.dump(result, f)
"""


def in_lerobot_venv(target: str, *args, timeout: float = 300, **kwargs):
    """``module:function(*args, **kwargs)`` run by .venv-lerobot's Python (test/ importable,
    e.g. "support.lerobot_checkpoints:save_tiny_checkpoint"); its (picklable) result."""
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as f:
        pickle.dump((target, args, kwargs), f)
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO / "test"), os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1"}
        proc = subprocess.run([str(LEROBOT_PYTHON), "-c", RUNNER, f.name], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-3000:]
        with open(f.name, "rb") as result:
            return pickle.load(result)
    finally:
        os.unlink(f.name)


def policy_calls(bag_dir: Path, camera: str = "cam_high", cameras: tuple[str, ...] = ()):
    """Each policy call of a recorded episode, in order: (state [14] float64, ``camera``'s
    image HxWx3 uint8, published chunk [H, 14]); with ``cameras``, the image is a dict
    {camera: image} of those cameras instead. The chunk's stamp echoes its observation's:
    the joint state and images of that stamp are what the node observed."""
    from vla_bridge import contract as C
    from vla_bridge.data.lerobot_export import _bag_messages
    names = tuple(cameras) or (camera,)
    topics = (C.TOPIC_ACTION_CHUNK, C.TOPIC_JOINT_STATES, *map(C.image_topic, names))
    messages = _bag_messages(Path(bag_dir), topics)
    joints = C.ALOHA_PIPER.state_names
    calls = []
    for stamp, chunk in messages[C.TOPIC_ACTION_CHUNK]:
        states = [m for s, m in messages[C.TOPIC_JOINT_STATES] if s == stamp]
        seen = {}
        for cam in names:
            images = [m for s, m in messages[C.image_topic(cam)] if s == stamp]
            assert states and len(images) == 1, f"no observation stamped {stamp} ({cam})"
            seen[cam] = np.frombuffer(bytes(images[0].data), np.uint8).reshape(
                images[0].height, images[0].width, 3).copy()
        index = {n: i for i, n in enumerate(states[-1].name)}
        state = np.array([states[-1].position[index[n]] for n in joints], float)
        index = {n: i for i, n in enumerate(chunk.joint_names)}
        actions = np.array([[p.positions[index[n]] for n in joints] for p in chunk.points])
        calls.append((state, seen if cameras else seen[camera], actions))
    return calls
