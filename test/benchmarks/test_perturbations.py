"""The perturbation axes' pure logic: parsing, seeding, grading and the image axes."""
import numpy as np
import pytest

from vla_bridge.benchmarks import perturbations as P
from vla_bridge.benchmarks.perturbations import EpisodePerturbation, Perturbation


def ep(axis: str, level: int, seed: int = 42) -> EpisodePerturbation:
    return EpisodePerturbation(Perturbation(axis, level), seed)


def test_parse_reads_axis_and_level_and_refuses_bad_specs():
    assert P.parse("camera:2") == Perturbation("camera", 2)
    assert P.parse(" lighting:4 ") == Perturbation("lighting", 4)
    assert P.parse("") is None and P.parse("camera:0") is None  # level 0: no change
    for bad, says in (("camera", "AXIS:LEVEL"), ("camera:x", "AXIS:LEVEL"),
                      ("wind:1", "unknown perturbation axis 'wind'"),
                      ("texture:3", "levels 0..2"), ("camera:5", "levels 0..4")):
        with pytest.raises(ValueError, match=says):
            P.parse(bad)


def test_begin_field_round_trips_and_rejects_malformed_values():
    p = Perturbation("object_jitter", 3)
    assert Perturbation.from_dict(p.to_dict()) == p
    got = EpisodePerturbation.from_begin({"seed": 7, "perturbation": p.to_dict()})
    assert (got.axis, got.level, got.seed) == ("object_jitter", 3, 7)
    assert EpisodePerturbation.from_begin({"seed": 7}) is None
    assert EpisodePerturbation.from_begin({"seed": 7, "perturbation": {"axis": "camera",
                                                                         "level": 0}}) is None
    own = EpisodePerturbation.from_begin({"seed": 7, "perturbation": {**p.to_dict(), "seed": 9}})
    assert own.seed == 9  # a perturbation seed of its own (LIBERO: task seed + initial state)
    for bad in ("camera:2", {"axis": "camera"}, {"axis": "camera", "level": 2, "x": 1},
                {"axis": "camera", "level": 2, "seed": "9"},
                {"axis": "camera", "level": "2"}, {"axis": "camera", "level": True}):
        with pytest.raises(ValueError):
            EpisodePerturbation.from_begin({"seed": 1, "perturbation": bad})


def test_levels_scale_one_seeded_direction():
    """A level scales the change; the direction depends on the seed only, so a sweep's levels
    lie on one line."""
    shifts = [ep("camera", k).camera_offset()[0] for k in (1, 2, 4)]
    np.testing.assert_allclose(shifts[1], 2 * shifts[0])
    np.testing.assert_allclose(shifts[2], 4 * shifts[0])
    assert np.linalg.norm(shifts[0]) == pytest.approx(P.CAMERA_SHIFT_M)
    turn = ep("camera", 2).camera_offset()[1]
    assert np.degrees(2 * np.arccos(turn[0])) == pytest.approx(2 * P.CAMERA_TURN_DEG)
    np.testing.assert_allclose(ep("initial_joints", 4).joint_offsets(12),
                               4 * ep("initial_joints", 1).joint_offsets(12))
    assert np.abs(ep("initial_joints", 4).joint_offsets(12)).max() <= 4 * P.JOINT_OFFSET_RAD
    gains = [ep("lighting", k).light_change()[0] for k in (1, 2)]
    assert gains[1] - 1 == pytest.approx(2 * (gains[0] - 1))
    assert not np.allclose(ep("camera", 2, seed=1).camera_offset()[0],
                           ep("camera", 2, seed=2).camera_offset()[0])


def test_draws_repeat_for_the_same_seed_and_differ_between_axes():
    a, b = ep("object_jitter", 2).object_offsets(["red", "blue"]), \
        ep("object_jitter", 2).object_offsets(["blue", "red"])
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    # an object's offset does not depend on the other objects of the scene
    alone = ep("object_jitter", 2).object_offsets(["red"])
    np.testing.assert_array_equal(alone["red"], a["red"])
    assert not np.allclose(a["red"], a["blue"])
    blocks = ep("object_jitter", 2).object_offsets(["yellow_block_1", "yellow_block_2"])
    assert not np.allclose(blocks["yellow_block_1"], blocks["yellow_block_2"])  # whole name
    for name, off in a.items():
        assert 0.5 * 2 * P.OBJECT_SHIFT_M - 1e-12 <= np.linalg.norm(off) <= 2 * P.OBJECT_SHIFT_M
    assert not np.allclose(ep("initial_joints", 1).joint_offsets(3),
                           ep("camera", 1).rng().uniform(-1, 1, size=3) * P.JOINT_OFFSET_RAD)


def test_texture_levels_name_the_surfaces_and_choices_are_seeded():
    assert ep("texture", 1).texture_surfaces() == ("table",)
    assert ep("texture", 2).texture_surfaces() == ("table", "floor")
    picks = {ep("texture", 2, seed=s).texture_choice("table", 4) for s in range(40)}
    assert picks == {0, 1, 2, 3}
    assert ep("texture", 2, 5).texture_choice("floor", 4) == ep("texture", 1, 5).texture_choice("floor", 4)
    with pytest.raises(ValueError):
        ep("texture", 1).texture_choice("table", 0)


def test_image_noise_depends_on_seed_camera_and_tick_only():
    image = np.full((24, 32, 3), 128, np.uint8)
    noisy = ep("image_noise", 2).apply_image(image, 0, 1000)
    assert noisy.dtype == np.uint8 and noisy.shape == image.shape
    assert abs(float(noisy.astype(float).std()) - 2 * P.NOISE_SIGMA) < 1.5
    np.testing.assert_array_equal(noisy, ep("image_noise", 2).apply_image(image, 0, 1000))
    assert not np.array_equal(noisy, ep("image_noise", 2).apply_image(image, 1, 1000))
    assert not np.array_equal(noisy, ep("image_noise", 2).apply_image(image, 0, 1001))
    # a scene axis leaves images to the renderer
    assert ep("camera", 2).apply_image(image, 0, 0) is image


def test_blur_smooths_edges_and_keeps_flat_images():
    flat = np.full((20, 20, 3), 77, np.uint8)
    np.testing.assert_array_equal(P.gaussian_blur(flat, 1.5), flat)
    edge = np.zeros((20, 20, 3), np.uint8)
    edge[:, 10:] = 255
    blurred = ep("image_blur", 2).apply_image(edge, 0, 0)
    assert 0 < blurred[0, 9, 0] < 128 < blurred[0, 10, 0] < 255
    np.testing.assert_array_equal(blurred[:, :, 0], blurred[:, :, 1])
    np.testing.assert_array_equal(blurred[0], blurred[19])  # blurred along x only: no change in y
    assert abs(float(blurred.mean()) - float(edge.mean())) < 1.0


def test_describe_gives_what_was_drawn():
    d = ep("camera", 2, seed=9).describe()
    assert d["axis"] == "camera" and d["level"] == 2 and d["seed"] == 9
    assert d["camera"] == P.CAMERA and d["turn_deg"] == pytest.approx(5.0)
    assert np.linalg.norm(d["shift_m"]) == pytest.approx(0.05, abs=1e-3)
    assert ep("texture", 2).describe()["surfaces"] == ["table", "floor"]
    assert ep("image_noise", 3).describe()["sigma"] == 15.0


def test_check_supported_names_what_the_backend_can_do():
    P.check_supported(None, frozenset(), "X")
    P.check_supported(ep("image_noise", 1), frozenset(), "X")  # the session's axis
    with pytest.raises(ValueError, match=r"the SapienBackend cannot perturb 'camera'; it can: "
                                         r"image_blur, image_noise, initial_joints"):
        P.check_supported(ep("camera", 1), frozenset({"initial_joints"}), "SapienBackend")


def test_the_evaluators_hook_sends_the_benchmarks_seed_and_records_what_the_sim_applied():
    from vla_bridge.evaluation.perturbation import PerturbationHook

    hook = PerturbationHook("camera:2", seed_of=lambda trial: trial * 10)
    assert hook.begin_fields(3) == {"perturbation": {"axis": "camera", "level": 2, "seed": 30}}
    hook.on_episode_start(3, None)
    row = {}
    hook.on_episode_end(3, row, None)  # the sim said nothing: not passed off as perturbed
    assert row["perturbation"] == {"axis": "camera", "level": 2, "applied": False}
    applied = EpisodePerturbation(Perturbation("camera", 2), 30).describe()
    hook.on_status("sim", {"kind": "ready", "perturbation": applied})
    hook.on_episode_end(3, row, None)
    assert row["perturbation"] == applied
    unperturbed, row = PerturbationHook(""), {}
    assert unperturbed.begin_fields(3) == {}
    unperturbed.on_episode_end(3, row, None)
    assert row == {}
    assert PerturbationHook("camera:1").begin_fields(3) == {
        "perturbation": {"axis": "camera", "level": 1}}  # the begin's seed
