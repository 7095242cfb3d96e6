"""The sim session's part of the perturbation axes (pure: a fake backend): it refuses an axis
the backend lacks before anything resets, applies the image axes to every image it hands out
(the same noise however often it renders) and reports what it applied in `ready`."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge.benchmarks.perturbations import EpisodePerturbation, Perturbation
from vla_bridge.sim_nodes.session import Budget, SimSession

from support.fake_backend import FakeBackend


class GreyBackend(FakeBackend):
    """A fake backend whose cameras see mid grey, and which counts its resets."""
    resets = 0

    def reset(self, scene, layout, seed, cue_objects=(), perturbation=None):
        super().reset(scene, layout, seed, cue_objects, perturbation)
        self.resets += 1
        self.perturbation_seen = perturbation

    def render(self, camera):
        return np.full((12, 16, 3), 128, np.uint8)


def perturbation(axis: str, level: int, seed: int = 3) -> EpisodePerturbation:
    return EpisodePerturbation(Perturbation(axis, level), seed)


def test_an_axis_the_backend_lacks_is_refused_before_the_reset():
    backend = GreyBackend()
    session = SimSession(backend)
    session.begin("scene1", "layout", 3, Budget(10, 50))
    with pytest.raises(ValueError, match="the GreyBackend cannot perturb 'camera'; it can: "
                                         "image_blur, image_noise"):
        session.begin("scene1", "layout", 3, Budget(10, 50),
                      perturbation=perturbation("camera", 2))
    assert backend.resets == 1 and session.perturbation is None  # the running episode stays


def test_image_noise_reaches_every_camera_and_repeats_per_tick():
    backend = GreyBackend()
    session = SimSession(backend)
    session.begin("scene1", "layout", 3, Budget(10, 50),
                  perturbation=perturbation("image_noise", 3))
    assert backend.perturbation_seen.axis == "image_noise"  # the backend is told, and ignores it
    first = session.observation()
    again = session.render("cam_high")  # rendering again at the same tick: the same noise
    np.testing.assert_array_equal(first.images["cam_high"], again)
    assert not np.array_equal(first.images["cam_high"], first.images["cam_left_wrist"])
    assert 10 < float(first.images["cam_high"].astype(float).std()) < 20  # sigma 15
    session.step_action(session.command)
    later = session.render("cam_high")
    assert not np.array_equal(later, again)  # a new tick, new noise
    assert session.ready_info()["perturbation"] == {"axis": "image_noise", "level": 3,
                                                     "seed": 3, "sigma": 15.0}


def test_without_a_perturbation_images_are_the_backends_and_ready_says_nothing():
    session = SimSession(GreyBackend())
    session.begin("scene1", "layout", 3, Budget(10, 50))
    np.testing.assert_array_equal(session.render("cam_high"), np.full((12, 16, 3), 128, np.uint8))
    assert "perturbation" not in session.ready_info()
