"""PiPER kinematics: the numpy chain, the SDK's DH table, IK, and agreement with MuJoCo."""
import json
from pathlib import Path

import numpy as np
import pytest

from vla_bridge.embodiment.kinematics import (PiperKinematics, load_piper_data, mat_to_quat,
                                              quat_to_mat, transform)
from vla_bridge.embodiment.workcell import MOUNTS

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "piper" / "kinematics.json"


@pytest.fixture(scope="module")
def kin():
    return PiperKinematics()


def random_configs(kin, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(kin.limits[:, 0], kin.limits[:, 1], size=(n, 6))


def test_limits_take_the_tighter_source(kin):
    # joint3, joint4 and joint6 disagree between the model and the SDK table
    assert kin.limits[2].tolist() == [-2.697, 0.0]
    assert kin.limits[3].tolist() == [-1.745, 1.745]
    assert kin.limits[5].tolist() == [-2.0944, 2.0944]


def test_chain_and_sdk_dh_agree(kin):
    """The SDK's modified-DH flange and our chain's link6 are the same frame up to the ~1 cm
    the two sources differ by in link offsets; orientations agree closely."""
    for q in random_configs(kin, 50):
        chain = kin.link_frames(q)[-1]
        dh = kin.dh_flange(q)
        assert np.linalg.norm(chain[:3, 3] - dh[:3, 3]) < 0.02
        assert np.allclose(chain[:3, :3], dh[:3, :3], atol=0.03)


def test_ik_round_trip(kin):
    for q in random_configs(kin, 20, seed=1):
        target = kin.tcp(q)
        q_sol, ok, err = kin.solve_ik(target, kin.clip(q + 0.2))
        assert ok and err < 1e-3
        reached = kin.tcp(q_sol)
        assert np.allclose(reached[:3, 3], target[:3, 3], atol=1e-3)
        assert np.allclose(reached[:3, :3], target[:3, :3], atol=6e-3)  # rot_tol 5e-3 rad


def test_ik_reports_unreachable(kin):
    far = transform(np.array([2.0, 0.0, 0.0]), np.eye(3))
    _, ok, err = kin.solve_ik(far, np.zeros(6))
    assert not ok and err > 1.0


def test_quaternion_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        q = q if q[0] >= 0 else -q
        assert np.allclose(mat_to_quat(quat_to_mat(q)), q, atol=1e-9)


def test_numpy_fk_matches_mujoco_site():
    """One joint vector means the same TCP pose in our kinematics and in the simulated arm."""
    mujoco = pytest.importorskip("mujoco")
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    from vla_bridge.embodiment.mjcf import build_mjcf
    scene = load_scene("scene1")
    objects = scene.layout_objects("default")
    model = mujoco.MjModel.from_xml_string(
        build_mjcf(objects, {o.name: np.array([0.0, 0.2 + 0.1 * i, 0.8]) for i, o in enumerate(objects)}))
    data = mujoco.MjData(model)
    kin = PiperKinematics()
    for q in random_configs(kin, 10, seed=2):
        for arm in ("left", "right"):
            for i in range(6):
                data.qpos[model.jnt_qposadr[model.joint(f"{arm}_joint{i + 1}").id]] = q[i]
        mujoco.mj_forward(model, data)
        for arm in ("left", "right"):
            expected = MOUNTS[arm].world_from_base() @ kin.tcp(q)
            site = model.site(f"{arm}_tcp").id
            assert np.allclose(data.site_xpos[site], expected[:3, 3], atol=1e-6)
            assert np.allclose(data.site_xmat[site].reshape(3, 3), expected[:3, :3], atol=1e-6)


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/piper/kinematics.json not present")
def test_project_chain_matches_shared_reference():
    ref = json.loads(SHARED.read_text())
    ours = load_piper_data()
    ref_joints = [b for b in ref["chain"] if b.get("joint", {}).get("type") == "hinge"]
    assert len(ours["chain"]) == len(ref_joints) == 6
    for mine, theirs in zip(ours["chain"], ref_joints):
        assert mine["joint"] == theirs["joint"]["name"]
        assert mine["xyz"] == theirs["pos"] and mine["wxyz"] == theirs["quat"]
        assert mine["limits_model"] == theirs["joint"]["range"]
    assert ours["sdk_limits"] == ref["sdk_joint_limits_rad"]
    assert ours["sdk_modified_dh"]["a_mm"] == ref["sdk_modified_dh_mm_rad"]["a"]
    assert ours["sdk_modified_dh"]["d_mm"] == ref["sdk_modified_dh_mm_rad"]["d"]
