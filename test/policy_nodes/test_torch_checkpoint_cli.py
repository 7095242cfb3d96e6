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


@pytest.mark.graph
def test_a_libero_checkpoint_serves_the_libero_embodiment(tmp_path):
    """`init-policy --embodiment libero_panda`: an 8-D state in, 7-D end-effector deltas out
    (not offsets from the state: an untrained model stays near the mean action)."""
    ckpt = tmp_path / "libero"
    assert _init(str(ckpt), "--embodiment", "libero_panda", "--chunk-size", "5").returncode == 0
    policy = TorchPolicy(checkpoint=str(ckpt))
    assert policy.embodiment == C.LIBERO_PANDA.name
    policy.set_instruction("put the bowl on the plate")
    w, h = C.LIBERO_PANDA.image_size
    image = np.full((h, w, 3), 90, np.uint8)
    obs = Observation(state=np.full(8, 0.4), stamp=0.0,
                      images={c: image for c in C.LIBERO_PANDA.camera_names})
    chunk = policy.predict(obs)
    assert chunk.shape == (5, 7) and np.abs(chunk).max() < 0.4  # near 0, not near the state
    with pytest.raises(ValueError, match=r"expects a \[8\] state, got \[14\]"):
        policy.predict(Observation(state=np.zeros(14), stamp=0.0, images=obs.images))


def test_a_checkpoint_whose_dimensions_do_not_fit_its_embodiment_is_refused(tmp_path):
    import json

    from vla_bridge.policy_nodes.torch_policy import init_checkpoint, load_checkpoint
    ckpt = init_checkpoint(tmp_path / "c", embodiment="libero_panda")
    config = json.loads((ckpt / "config.json").read_text())
    (ckpt / "config.json").write_text(json.dumps({**config, "state_dim": 14}))
    with pytest.raises(ValueError, match="a 14-D state and 7-D actions do not fit libero_panda"):
        load_checkpoint(ckpt)
    (ckpt / "config.json").write_text(json.dumps({**config, "embodiment": "nope"}))
    with pytest.raises(ValueError, match="nope"):
        load_checkpoint(ckpt)
    # a checkpoint from before the field was written is ALOHA's, as it was then
    old = init_checkpoint(tmp_path / "old")
    config = json.loads((old / "config.json").read_text())
    del config["embodiment"], config["state_dim"]
    (old / "config.json").write_text(json.dumps(config))
    assert load_checkpoint(old)[1].embodiment == C.ALOHA_PIPER.name
