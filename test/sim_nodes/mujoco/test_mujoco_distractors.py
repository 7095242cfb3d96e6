"""The distractors axis in the MuJoCo backend: LIBERO's objects stand at their drawn places on
the table, and nothing else about the scene changes; a rerun is identical, the next unperturbed
reset restores the scene, and without LIBERO's assets the begin is refused before the reset."""
import numpy as np
import pytest

from vla_bridge.benchmarks import perturbation_cards as cards
from vla_bridge.benchmarks.perturbations import EpisodePerturbation, Perturbation
from vla_bridge.benchmarks.robofollow.scenes import load_scene
from vla_bridge.embodiment import libero_assets
from vla_bridge.embodiment.workcell import TABLE_TOP_Z

mujoco_backend = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend")
pytestmark = pytest.mark.skipif(not libero_assets.available(),
                                reason="LIBERO's assets are not installed "
                                       "(bash scripts/setup.sh libero)")
CAMERAS = ("cam_high", "cam_left_wrist", "cam_right_wrist")
SCENE, LAYOUT, SEED = "scene2", "default", 42


@pytest.fixture(scope="module")
def backend():
    b = mujoco_backend.MujocoBackend()
    yield b
    b.close()


def snapshot(backend, level=None):
    p = EpisodePerturbation(Perturbation("distractors", level), SEED) if level else None
    backend.reset(SCENE, LAYOUT, SEED, perturbation=p)
    world = backend.world_state()
    return {"images": {c: backend.render(c) for c in CAMERAS}, "world": world,
            "objects": {n: np.concatenate([o.pos, o.quat]) for n, o in world.objects.items()},
            "joints": backend.joint_positions(), "perturbation": p}


@pytest.fixture(scope="module")
def base(backend):
    return snapshot(backend)


def test_distractors_stand_at_their_drawn_places_and_nothing_else_changes(backend, base):
    got = snapshot(backend, 3)
    drawn = EpisodePerturbation(Perturbation("distractors", 3), SEED).distractors(
        load_scene(SCENE), LAYOUT)
    names = {f"distractor_{n}" for n, _ in drawn}
    assert set(got["objects"]) == set(base["objects"]) | names and len(names) == 3
    for name, xy in drawn:
        obj = got["world"].objects[f"distractor_{name}"]
        size = libero_assets.load_asset(name).size
        np.testing.assert_allclose(obj.size, size)
        assert obj.shape == "box" and tuple(obj.rgba) == (0.6, 0.6, 0.6, 1.0)
        np.testing.assert_allclose(obj.pos[:2], xy, atol=3e-3)  # settled where drawn
        assert obj.pos[2] == pytest.approx(TABLE_TOP_Z + size[2] / 2, abs=3e-3)  # on the table
        assert np.degrees(2 * np.arccos(min(1.0, abs(obj.quat[0])))) < 3.0  # standing still
    for name in base["objects"]:  # the scene as unperturbed (the contact solver solves the
        a, b = got["objects"][name], base["objects"][name]  # whole scene: 0.01 mm, 0.02 deg)
        np.testing.assert_allclose(a[:3], b[:3], atol=1e-5)
        np.testing.assert_allclose(a[3:], b[3:], atol=2e-4)
    np.testing.assert_allclose(got["joints"], base["joints"], atol=1e-5)  # the same arms
    assert not np.array_equal(got["images"]["cam_high"], base["images"]["cam_high"])
    described = got["perturbation"].describe()  # what the row records
    assert described["objects"] == [n for n, _ in drawn]
    assert described["xy_m"] == {n: [round(float(v), 4) for v in xy] for n, xy in drawn}


def test_a_rerun_is_identical_and_an_unperturbed_reset_restores_the_scene(backend, base):
    first, again = snapshot(backend, 2), snapshot(backend, 2)
    for c in CAMERAS:
        np.testing.assert_array_equal(first["images"][c], again["images"][c])
    for name in first["objects"]:
        np.testing.assert_array_equal(first["objects"][name], again["objects"][name])
    restored = snapshot(backend)
    assert set(restored["objects"]) == set(base["objects"])
    for c in CAMERAS:
        np.testing.assert_array_equal(restored["images"][c], base["images"][c])
    for name in base["objects"]:
        np.testing.assert_array_equal(restored["objects"][name], base["objects"][name])
    np.testing.assert_array_equal(restored["joints"], base["joints"])


def test_the_card_names_the_sims_objects_and_places(backend):
    c = cards.card(Perturbation("distractors", 3), SEED, scene=SCENE, layout=LAYOUT)
    got = snapshot(backend, 3)["world"].objects
    assert list(c["objects"]) == [n[len("distractor_"):] for n in got if n.startswith("distractor_")]
    for name, entry in c["objects"].items():
        np.testing.assert_allclose(np.array(entry["xy_cm"]) / 100, got[f"distractor_{name}"].pos[:2],
                                   atol=4e-3)
        assert f"{name} at ({entry['xy_cm'][0]:+.1f}, {entry['xy_cm'][1]:+.1f})" in c["steps"][0]
    assert c["steps"][0].startswith("Place these objects at (x, y) cm on the table: ")


def test_without_the_assets_the_begin_is_refused_before_the_reset(backend, base, tmp_path,
                                                                 monkeypatch):
    from vla_bridge.sim_nodes.session import Budget, SimSession
    session = SimSession(backend)
    session.begin(SCENE, LAYOUT, SEED, Budget(10, 50))
    before = backend.world_state()
    monkeypatch.setenv(libero_assets.ENV_VAR, str(tmp_path))  # an empty directory
    with pytest.raises(ValueError) as err:
        session.begin(SCENE, LAYOUT, SEED, Budget(10, 50),
                      perturbation=EpisodePerturbation(Perturbation("distractors", 1), SEED))
    assert str(err.value).startswith("distractors need LIBERO's assets: `bash scripts/setup.sh "
                                     "libero` installs them") and "\n" not in str(err.value)
    assert session.perturbation is None
    after = backend.world_state()
    assert set(after.objects) == set(before.objects)
    for name, obj in before.objects.items():
        np.testing.assert_array_equal(after.objects[name].pos, obj.pos)
