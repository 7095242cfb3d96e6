"""openpi wire edges: float32 actions and state (as openpi's servers send), and an ALOHA
action gripper that maps our [0, 1] opening onto [0, 1] exactly, both ways."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.policy_nodes.openpi import wire as ob

GRIPPERS = list(C.GRIPPER_INDEX.values())


def test_open_and_closed_map_to_the_ends_of_the_aloha_range():
    for g in (0.0, 1.0):  # was 1.038 for an open gripper
        a = ob.contract_gripper_to_aloha_action(g)
        assert 0.0 <= a <= 1.0 and a == pytest.approx(g, abs=1e-12)
        assert ob.aloha_action_gripper_to_contract(g) == pytest.approx(g, abs=1e-12)


def test_gripper_round_trips_inside_the_range_both_ways():
    g = np.linspace(0.0, 1.0, 1001)
    a = ob.contract_gripper_to_aloha_action(g)
    assert a.min() >= 0.0 and a.max() <= 1.0 and np.all(np.diff(a) > 0)
    np.testing.assert_allclose(ob.aloha_action_gripper_to_contract(a), g, atol=1e-12)
    np.testing.assert_allclose(ob.contract_gripper_to_aloha_action(
        ob.aloha_action_gripper_to_contract(g)), g, atol=1e-12)


def test_linkage_ends_are_the_normalisation_ends():
    assert ob.X_CLOSE == pytest.approx(ob.finger_position(ob.JOINT_CLOSE))
    assert ob.X_OPEN == pytest.approx(ob.finger_position(ob.JOINT_OPEN))
    assert ob.X_CLOSE < ob.X_OPEN < ob.POS_OPEN  # the linkage stops short of POS_OPEN


@pytest.mark.parametrize("gripper", [g for g in ob.GRIPPERS if g != "libero"])  # 14-D
def test_wire_is_float32_and_round_trips(gripper):
    chunk = np.tile(home_command(), (4, 1))
    chunk[:, GRIPPERS] = [[0.0, 1.0], [0.3, 0.7], [1.0, 0.0], [0.5, 0.5]]
    wire = ob.actions_to_wire(chunk, gripper)
    assert wire.dtype == np.float32
    assert wire[:, GRIPPERS].min() >= 0.0 and wire[:, GRIPPERS].max() <= 1.0
    back = ob.actions_from_wire(wire, gripper)
    assert back.dtype == np.float64
    np.testing.assert_allclose(back, chunk, atol=1e-6)
    assert ob.state_to_wire(home_command(), gripper).dtype == np.float32


def test_our_server_answers_float32_actions():
    from vla_bridge.policy_nodes.openpi.serve import PolicyServer
    server = PolicyServer("hold")
    state = home_command()
    obs = {"state": state, "prompt": "hold",
           "images": {c: np.zeros((3, 8, 8), np.uint8) for c in C.ALOHA_PIPER.camera_names}}
    actions = server.infer(obs)["actions"]
    assert actions.dtype == np.float32 and actions.shape == (50, C.ALOHA_PIPER.action_dim)
    assert actions[0, GRIPPERS].tolist() == [1.0, 1.0]  # open goes out as 1.0, not 1.038
