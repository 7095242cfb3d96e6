"""The distractors axis's pure logic (benchmarks.perturbations) and LIBERO's assets
(embodiment.libero_assets): the draw is seeded, graded and clear of the scene; the assets
parse into real-size objects (skipped when LIBERO's assets are not installed)."""
import numpy as np
import pytest

from vla_bridge.benchmarks import perturbations as P
from vla_bridge.benchmarks.perturbations import EpisodePerturbation, Perturbation
from vla_bridge.benchmarks.robofollow.scenes import SCENES, load_scene
from vla_bridge.embodiment import libero_assets

NAMES = tuple(f"object_{i}" for i in range(10))
FOOT = {n: np.array([0.02 + 0.004 * i, 0.03]) for i, n in enumerate(NAMES)}
SCENE = [(np.array([0.0, -0.1]), np.array([0.15, 0.08])), (np.array([0.2, 0.05]), np.array([0.04, 0.04]))]

needs_assets = pytest.mark.skipif(not libero_assets.available(),
                                  reason="LIBERO's assets are not installed "
                                         "(bash scripts/setup.sh libero)")


def ep(level: int, seed: int = 42) -> EpisodePerturbation:
    return EpisodePerturbation(Perturbation("distractors", level), seed)


def clear(xy_a, half_a, xy_b, half_b, gap=P.DISTRACTOR_CLEARANCE_M) -> bool:
    return bool(np.any(np.abs(np.asarray(xy_a) - xy_b) >= np.asarray(half_a) + half_b + gap - 1e-12))


def test_levels_are_graded_and_picks_do_not_repeat():
    for seed in range(20):
        names = [ep(k, seed).distractor_names(NAMES) for k in (1, 2, 3)]
        assert [len(n) for n in names] == [1, 2, 3] and len(set(names[2])) == 3
        assert names[2][:1] == names[0] and names[2][:2] == names[1]
        places = [ep(k, seed).distractor_places(NAMES, FOOT, SCENE) for k in (1, 2, 3)]
        for k in (1, 2):  # level k's places are the first k of level 3's
            for (a, xa), (b, xb) in zip(places[k - 1], places[2]):
                assert a == b and np.array_equal(xa, xb)
    assert {ep(1, s).distractor_names(NAMES)[0] for s in range(60)} == set(NAMES)


def test_the_draw_is_seeded():
    a, b = ep(3, 7).distractor_places(NAMES, FOOT, SCENE), ep(3, 7).distractor_places(NAMES, FOOT, SCENE)
    assert [n for n, _ in a] == [n for n, _ in b]
    assert all(np.array_equal(x, y) for (_, x), (_, y) in zip(a, b))
    other = ep(3, 8).distractor_places(NAMES, FOOT, SCENE)
    assert [n for n, _ in other] != [n for n, _ in a] or not np.allclose(other[0][1], a[0][1])


def test_places_lie_in_the_area_clear_of_the_scene_and_of_each_other():
    area = np.asarray(P.DISTRACTOR_AREA)
    for seed in range(40):
        placed = ep(3, seed).distractor_places(NAMES, FOOT, SCENE)
        for i, (name, xy) in enumerate(placed):
            half = FOOT[name]
            assert np.all(xy - half >= area[:, 0] - 1e-12) and np.all(xy + half <= area[:, 1] + 1e-12)
            for centre, other in SCENE:
                assert clear(xy, half, centre, other), (seed, name)
            for other_name, other_xy in placed[:i]:
                assert clear(xy, half, other_xy, FOOT[other_name]), (seed, name)


def test_no_place_is_a_clear_error():
    full = [(np.array([0.0, 0.0]), np.array([1.0, 1.0]))]  # the whole table taken
    with pytest.raises(ValueError, match=r"no place on the table for distractor object_\d "
                                         r"\(0 placed\) clear of the scene by 3 cm"):
        ep(2).distractor_places(NAMES, FOOT, full)


def test_layout_footprints_cover_every_body_and_its_jitter():
    spec = load_scene("scene2")
    feet = P.layout_footprints(spec, "default")
    lay = spec.layout("default")
    assert len(feet) == len(lay.placements)
    for p, (centre, half) in zip(lay.placements, feet):
        np.testing.assert_allclose(centre, p.xy)
    from vla_bridge.benchmarks.robofollow.scenes import sample_layout
    for seed in range(30):  # any seed's jittered spawn lies inside its footprint
        spawn = sample_layout(spec, "default", seed)
        for p, (centre, half) in zip(lay.placements, feet):
            assert np.all(np.abs(spawn[p.name][:2] - centre) <= half + 1e-12)


def test_check_supported_needs_the_assets(tmp_path, monkeypatch):
    monkeypatch.setenv(libero_assets.ENV_VAR, str(tmp_path))
    with pytest.raises(libero_assets.LiberoAssetsMissing) as err:
        P.check_supported(ep(1), frozenset({"distractors"}), "MujocoBackend")
    message = str(err.value)
    assert message.startswith("distractors need LIBERO's assets: `bash scripts/setup.sh libero` "
                              "installs them") and "\n" not in message
    assert isinstance(err.value, ValueError)
    with pytest.raises(ValueError, match="the SapienBackend cannot perturb 'distractors'"):
        P.check_supported(ep(1), frozenset({"initial_joints"}), "SapienBackend")


@needs_assets
def test_curated_assets_parse_into_real_size_objects():
    for name in libero_assets.NAMES:
        asset = libero_assets.load_asset(name)
        assert asset.collision and asset.visual, name
        assert np.all(asset.size > 0.01) and np.all(asset.size < 0.16), (name, asset.size)
        assert all(g.get("type") == "box" for g in asset.collision)
        for tag, attrs in asset.assets:
            if "file" in attrs:
                assert (asset.directory / attrs["file"]).is_file(), (name, attrs["file"])
        xml_assets, body = asset.mjcf("distractor_x", (0, 0, 1))
        assert 'name="distractor_x_' in xml_assets and str(asset.directory) in xml_assets
        assert body.startswith('<body name="distractor_x" pos="0 0 1"><freejoint')
    milk = libero_assets.load_asset("milk").size
    assert milk[2] == pytest.approx(0.131, abs=0.003) and milk[0] == pytest.approx(0.053, abs=0.003)
    with pytest.raises(ValueError, match="not a curated LIBERO distractor"):
        libero_assets.load_asset("wooden_cabinet_base")


@needs_assets
def test_every_scene_layout_has_room_for_three():
    for scene in SCENES:
        spec = load_scene(scene)
        for layout in spec.layouts:
            for seed in range(10):
                assert len(ep(3, seed).distractors(spec, layout)) == 3
    d = ep(2, 5)
    placed = d.distractors(load_scene("scene1"), "default")
    described = d.describe()
    assert described["objects"] == [n for n, _ in placed]
    assert described["xy_m"] == {n: [round(float(v), 4) for v in xy] for n, xy in placed}
    assert ep(2, 5).describe()["objects"] == described["objects"]  # without a scene: the names
