"""The openpi backend sends the observation state as openpi's own clients do (issue #29, point
14): float64. openpi's examples/libero/main.py sends ``np.concatenate((eef_pos, axisangle,
gripper_qpos))`` of robosuite's float64 observations; its ALOHA clients send float64 too
(examples/aloha_real: ``qpos``, np.concatenate of the ROS joint positions; examples/aloha_sim:
gym_aloha's float64 ``agent_pos``). It used to go out float32, rounded (7 digits). Actions stay
float32 (what openpi's servers send)."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation


@pytest.mark.parametrize("key_map, state_key, images, dim", [
    ("libero", "observation/state", C.LIBERO_PANDA.camera_names, 8),
    ("aloha", "state", ("cam_high", "cam_left_wrist", "cam_right_wrist"), 14),
])
def test_the_state_reaches_the_server_as_float64_unrounded(key_map, state_key, images, dim):
    from support.openpi_servers import FakeServer, serve_in_thread
    from vla_bridge.policy_nodes.openpi.client import OpenPIPolicy
    width = 7 if key_map == "libero" else 14
    fake = FakeServer({"actions": np.zeros((10, width), np.float32)})
    port, stop = serve_in_thread(fake)
    rng = np.random.default_rng(3)
    # LIBERO-like values whose float32 rounding shows (a float32 keeps ~7 digits)
    state = np.array([0.123456789012345, -0.0123456789012, 1.123456789012345, 3.14159265358979,
                      1e-9, -0.1, 0.0391234567891, -0.0391234567891] * 2)[:dim]
    assert np.any(state.astype(np.float32).astype(float) != state)
    try:
        policy = OpenPIPolicy("127.0.0.1", port, key_map=key_map)
        policy.reset()
        policy.set_instruction("put the bowl on the plate")
        actions = policy.predict(Observation(
            state=state, images={c: rng.integers(0, 255, (256, 256, 3), np.uint8)
                                 for c in images}))
    finally:
        stop()
    sent = np.asarray(fake.last_obs[state_key])
    assert sent.dtype == np.float64 and sent.shape == (dim,)
    assert np.array_equal(sent, state)  # bit for bit, as openpi's client would send it
    assert actions.shape == (10, width)


def test_a_state_fn_is_sent_as_float64_too():
    from vla_bridge.policy_nodes.openpi.client import OpenPIPolicy
    policy = OpenPIPolicy("127.0.0.1", 1, key_map="libero",
                          state_fn=lambda obs: np.asarray(obs.state, np.float32) * 2)
    images = {c: np.zeros((224, 224, 3), np.uint8) for c in C.LIBERO_PANDA.camera_names}
    payload = policy.encode(Observation(state=np.full(8, 0.25), images=images))
    assert payload["observation/state"].dtype == np.float64
    assert payload["observation/state"].tolist() == [0.5] * 8
