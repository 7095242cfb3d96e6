"""SAPIEN backend: the PiPER chain against our forward kinematics, every scene layout and the
camera models against the MuJoCo backend, determinism and grasps. The checks both backends
pass (tracking, malformed targets, rendering, projection, layouts) are in ../test_backends.py."""
import numpy as np
import pytest

from vla_bridge import contract
from vla_bridge.benchmarks.robofollow.scenes import load_scene
from vla_bridge.embodiment import cameras as camera_specs
from vla_bridge.embodiment.kinematics import PiperKinematics, quat_to_mat
from vla_bridge.embodiment.workcell import MOUNTS, arm_slice, home_command

pytest.importorskip("sapien", reason="sapien is not installed: `bash scripts/setup.sh` installs "
                                     "it (requirements-sapien.txt) and Mesa's Vulkan driver")
sapien_backend = pytest.importorskip("vla_bridge.sim_nodes.sapien.backend")


@pytest.fixture(scope="module")
def backend():
    b = sapien_backend.SapienBackend()
    yield b
    b.close()


@pytest.fixture(scope="module")
def mujoco():
    mujoco_backend = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend")
    b = mujoco_backend.MujocoBackend()
    yield b
    b.close()


def random_joints(rng) -> np.ndarray:
    limits = PiperKinematics().limits
    q = home_command()
    for arm in contract.ARMS:
        s = arm_slice(arm)
        q[s.start:s.start + 6] = rng.uniform(limits[:, 0], limits[:, 1])
        q[s.start + 6] = rng.uniform(0, 1)
    return q


def test_tcp_pose_equals_our_forward_kinematics(backend):
    """SAPIEN's articulation, built from config/piper/kinematics.json, puts the TCP where
    embodiment.kinematics says for random joint vectors over the whole range."""
    backend.reset("scene1", "default", 1)
    kin = PiperKinematics()
    rng = np.random.default_rng(0)
    for _ in range(25):
        q = random_joints(rng)
        backend.pose(backend.world_state(), q)
        assert np.allclose(backend.joint_positions(), q, atol=1e-5)  # gripper convention too
        tcp = backend.world_state().tcp
        for arm in contract.ARMS:
            s = arm_slice(arm)
            want = MOUNTS[arm].world_from_base() @ kin.tcp(q[s.start:s.start + 6])
            assert np.allclose(tcp[arm].pos, want[:3, 3], atol=2e-5), arm
            assert np.allclose(quat_to_mat(tcp[arm].quat), want[:3, :3], atol=1e-4), arm


def test_cue_cards_are_not_supported(backend):
    with pytest.raises(NotImplementedError, match="cue"):
        backend.reset("scene1", "default", 1, cue_objects=[object()])


def trajectory(backend, scene, layout, seed, ticks=30) -> np.ndarray:
    """Every object pose and joint after each of `ticks` scripted ticks (a reach and close)."""
    backend.reset(scene, layout, seed)
    target, out = home_command(), []
    for k in range(ticks):
        target[0:6] += 0.01
        target[6] = 1.0 - k / ticks
        backend.apply(target)
        backend.step()
        world = backend.world_state()
        out.append(np.concatenate([np.concatenate([o.pos, o.quat]) for o in world.objects.values()]
                                  + [backend.joint_positions()]))
    return np.array(out)


def test_same_seed_gives_the_same_episode_whatever_ran_before(backend):
    first = trajectory(backend, "scene1", "default", 539)
    trajectory(backend, "scene2", "default", 7)  # other bodies in between
    trajectory(backend, "scene1", "scene1_2", 539)
    assert np.array_equal(trajectory(backend, "scene1", "default", 539), first)
    backend.reset("scene1", "default", 540)
    moved = [o.pos for o in backend.world_state().objects.values()]
    backend.reset("scene1", "default", 539)
    assert any(np.linalg.norm(a.pos - b) > 1e-4
               for a, b in zip(backend.world_state().objects.values(), moved))


LAYOUTS = [(scene, layout) for scene in ("scene1", "scene2", "scene3", "scene4")
           for layout in load_scene(scene).layouts]


@pytest.mark.parametrize("scene, layout", LAYOUTS)
def test_every_layout_settles_where_mujoco_settles(backend, mujoco, scene, layout):
    """Same bodies, sizes, shapes and colours as the MuJoCo backend; after both settle, every
    body is within a few millimetres of MuJoCo's pose (test_backends.py checks both against
    the layout's jittered xy)."""
    backend.reset(scene, layout, 3)
    mujoco.reset(scene, layout, 3)
    ours, theirs = backend.world_state().objects, mujoco.world_state().objects
    assert list(ours) == list(theirs)
    for name, obj in ours.items():
        ref = theirs[name]
        assert np.allclose(obj.size, ref.size) and np.allclose(obj.rgba, ref.rgba), name
        assert obj.shape == ref.shape, name
        assert np.linalg.norm(obj.pos - ref.pos) < 0.005, (name, obj.pos, ref.pos)


def test_camera_models_equal_mujoco_and_the_workcell_description(backend, mujoco):
    """Intrinsics and poses of all three cameras, the wrist cameras at random joint states."""
    backend.reset("scene1", "default", 1)
    mujoco.reset("scene1", "default", 1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = random_joints(rng)
        backend.pose(backend.world_state(), q)
        mujoco.pose(mujoco.world_state(), q)
        for cam in contract.ALOHA_PIPER.camera_names:
            ours, ref = backend.camera_model(cam), mujoco.camera_model(cam)
            spec = camera_specs.camera_model(cam, q)
            assert (ours.width, ours.height) == (ref.width, ref.height) == (320, 240)
            assert ours.fovy_deg == pytest.approx(ref.fovy_deg, abs=1e-4)
            assert ours.focal_px == pytest.approx(spec.focal_px, rel=1e-5)
            assert np.allclose(ours.world_from_camera, ref.world_from_camera, atol=1e-4), cam
            assert np.allclose(ours.world_from_camera, spec.world_from_camera, atol=1e-4), cam


@pytest.mark.graph
@pytest.mark.parametrize("task_id", ["L0_pickup_yellow_block_1_left", "L0_s41_l_pick_cube_in_bowl",
                                     "L0_stack_left_cube_on_red_cylinder"])
def test_grasps_hold_the_blocks(backend, task_id):
    """The oracle's plan, executed in SAPIEN: the block is lifted, carried and the episode
    scores full marks (the scorer checks the lift height and the final placement)."""
    from vla_bridge.benchmarks.robofollow.tasks import episode_seed, load_suite
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    from vla_bridge.sim_nodes.session import SimSession
    task = load_suite().get(task_id)
    _, score = run_episode_direct(SimSession(backend), OraclePolicy(), task,
                                  episode_seed(task.id, 1), images=False)
    assert score.complete and score.intent_score == 1.0 and score.exec_score == 1.0, [
        s.reason for s in score.stages]


def test_initial_joints_and_object_jitter_as_in_mujoco(backend):
    """SAPIEN applies the two pose axes with the same draws and start rule as MuJoCo (both use
    perturbations.pair_start / object_offsets); it refuses the appearance axes."""
    from vla_bridge.benchmarks.perturbations import EpisodePerturbation, Perturbation, pair_start

    backend.reset("scene1", "default", 42)
    base = backend.world_state().objects
    p = EpisodePerturbation(Perturbation("initial_joints", 3), 42)
    backend.reset("scene1", "default", 42, perturbation=p)
    start = pair_start(home_command(), p)
    np.testing.assert_allclose(backend.start_command(), start)
    np.testing.assert_allclose(backend.joint_positions(), start, atol=0.02)
    p = EpisodePerturbation(Perturbation("object_jitter", 3), 42)
    backend.reset("scene1", "default", 42, perturbation=p)
    moved = backend.world_state().objects
    names = [o.name for o in load_scene("scene1").layout_objects("default")]
    for name, off in p.object_offsets(names).items():
        np.testing.assert_allclose(moved[name].pos[:2] - base[name].pos[:2], off, atol=3e-3)
    np.testing.assert_allclose(backend.start_command(), home_command())
    assert backend.perturbation_axes == {"initial_joints", "object_jitter"}
