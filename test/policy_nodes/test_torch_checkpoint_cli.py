"""`vla-bridge init-policy DIR`: the documented way to make the
checkpoint that the `torch?checkpoint=DIR` examples load (issue #11, point 7)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")

from vla_bridge import contract as C  # noqa: E402
from vla_bridge.embodiment.world import Observation  # noqa: E402
from vla_bridge.policy_nodes.torch_policy import TorchPolicy  # noqa: E402


def _init(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vla_bridge.cli", "init-policy", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.graph
def test_init_writes_a_checkpoint_the_backend_loads(tmp_path):
    ckpt = tmp_path / "ckpt" / "tiny"
    proc = _init(str(ckpt), "--seed", "3", "--chunk-size", "10")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {ckpt}"
    assert (ckpt / "config.json").is_file() and (ckpt / "weights.pt").is_file()
    policy = TorchPolicy(checkpoint=str(ckpt))
    policy.set_instruction("pick up the red block")
    image = np.zeros((C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), np.uint8)
    obs = Observation(state=np.zeros(C.ALOHA_PIPER.action_dim), images={c: image for c in C.ALOHA_PIPER.camera_names},
                      stamp=0.0)
    chunk = policy.predict(obs)
    assert chunk.shape == (10, C.ALOHA_PIPER.action_dim) and np.isfinite(chunk).all()


@pytest.mark.graph
def test_init_under_a_file_is_one_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = _init(str(blocker / "ckpt"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("vla-bridge init-policy: cannot write a checkpoint to")
    assert len(proc.stderr.strip().splitlines()) == 1
