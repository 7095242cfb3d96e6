"""LIBERO-VIFO scene-anchored cue families on pixels: F2 geometric, F5 gesture, F6 signage,
F7 highlight.

Pure logic (no simulator, no rclpy): synthetic frames with hand-placed anchors, and the
Scene 1 overhead camera (``cue_fixtures``) where a cue is built from a task.
"""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from support.cue_fixtures import H, W, changed, ctx, cue_scene, grey, is_magenta  # noqa: E402
from vla_bridge.benchmarks.vifo import (SIGN_CATEGORIES, CueSpec, SignSpec, draw, insert,  # noqa: E402
                                        make_cue, project_point, render_sign)


@pytest.fixture(scope="module")
def scene():
    return cue_scene()


# --------------------------------------------------------------------------- F2 geometric

def test_arrow_runs_from_source_to_target_and_nowhere_else():
    img = grey()
    out = draw(img, CueSpec("F2", "arrow"), ctx(source=(60, 120, 8), target=(260, 120, 4)))
    m = is_magenta(out)
    assert m[115:126, 150:170].any()  # the shaft passes the midpoint
    assert m[110:131, 240:262].sum() > 20  # the head near the target
    assert not m[:100].any() and not m[140:].any()
    assert not m[:, :60].any()  # trimmed off the source object


@pytest.mark.parametrize("variant", ["arrow", "curved_path", "dashed_path", "numbered"])
def test_two_anchor_symbols_are_dropped_with_a_missing_anchor(variant):
    img = grey()
    out = draw(img, CueSpec("F2", variant), ctx(source=(60, 120, 8), target=None))
    if variant == "numbered":  # one marker per visible anchor
        assert is_magenta(out)[:, :100].any() and not is_magenta(out)[:, 150:].any()
    else:
        assert np.array_equal(out, img)


def test_curved_path_bulges_upwards_and_target_region_covers_the_target():
    img = grey()
    out = draw(img, CueSpec("F2", "curved_path"), ctx(source=(60, 150, 6), target=(260, 150, 4)))
    ys, xs = np.nonzero(is_magenta(out))
    assert ys.min() < 130  # above the straight line
    out = draw(img, CueSpec("F2", "target_region"), ctx(target=(200, 100, 10)))
    px = out[100, 200].astype(int)
    assert px[0] > 150 and px[2] > 150 and px[1] < 100  # translucent magenta over the target
    assert np.array_equal(out[:, :150], img[:, :150])


@pytest.mark.parametrize("variant", ["crosshair", "bbox"])
def test_single_anchor_markers_surround_the_source(variant):
    img = grey()
    out = draw(img, CueSpec("F2", variant), ctx(source=(100, 80, 10)))
    ys, xs = np.nonzero(is_magenta(out))
    assert abs(xs.mean() - 100) < 2 and abs(ys.mean() - 80) < 2
    assert np.hypot(xs - 100, ys - 80).max() < 35


# --------------------------------------------------------------------------- F5 gesture

def skin(img):
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (abs(r - 238) < 12) & (abs(g - 196) < 14) & (abs(b - 160) < 14)


@pytest.mark.parametrize("anchor", [(80, 70), (250, 80), (90, 200), (240, 190)])
def test_pointing_hand_fingertip_is_at_the_source(anchor):
    img = grey()
    out = draw(img, CueSpec("F5", "point"), ctx(source=(*anchor, 8)))
    ys, xs = np.nonzero(skin(out))
    d = np.hypot(xs - anchor[0], ys - anchor[1])
    assert len(xs) > 200
    assert 7 <= d.min() <= 16  # fingertip just outside the object, not covering it
    assert d.max() < 70


def test_grasp_hand_is_above_the_source_and_missing_anchor_draws_nothing():
    img = grey()
    out = draw(img, CueSpec("F5", "grasp"), ctx(source=(160, 150, 10)))
    ys, xs = np.nonzero(skin(out))
    assert abs(xs.mean() - 160) < 6 and ys.mean() < 150
    assert np.array_equal(draw(img, CueSpec("F5", "point_target"), ctx(source=(1, 1, 1), target=None)), img)
    out = draw(img, CueSpec("F5", "point_and_move"), ctx(source=(100, 150, 8), target=(230, 150, 4)))
    white = out.min(axis=2) > 240
    assert white[:, 130:220].any()  # the motion arrow


# --------------------------------------------------------------------------- F6 signage

CATEGORY_PIXEL = {
    "prohibition": lambda t: (t[..., 0] > 180) & (t[..., 1] < 80),
    "mandatory": lambda t: (t[..., 2] > 150) & (t[..., 0] < 60),
    "permission": lambda t: (t[..., 1] > 120) & (t[..., 0] < 60) & (t[..., 2] < 110),
    "hazard": lambda t: (t[..., 0] > 220) & (t[..., 1] > 180) & (t[..., 2] < 60),
    "target_zone": lambda t: (t[..., 0] > 90) & (t[..., 2] > 140) & (t[..., 1] < 70),
    "hri": lambda t: (t[..., 0] > 220) & (abs(t[..., 1].astype(int) - 120) < 30) & (t[..., 2] < 40),
    "maintenance": lambda t: (t[..., 0] < 40) & (t[..., 1] > 120) & (t[..., 2] > 130),
    "system_state": lambda t: (abs(t[..., 0].astype(int) - 70) < 15) & (abs(t[..., 2].astype(int) - 80) < 15),
}


@pytest.mark.parametrize("category", list(SIGN_CATEGORIES))
def test_sign_frame_colour_sits_above_the_anchor(category):
    img = grey(value=200)
    out = draw(img, CueSpec("F6", category, {"role": "source"}), ctx(source=(160, 150, 8)))
    frame = CATEGORY_PIXEL[category](out)
    ys, xs = np.nonzero(frame)
    assert len(xs) > 60, category
    assert abs(xs.mean() - 160) < 8 and ys.mean() < 140 and ys.max() < 150
    assert not frame[160:].any()
    # absent when its anchor is dropped
    assert np.array_equal(draw(img, CueSpec("F6", category, {"role": "source"}), ctx(source=None)), img)


def test_sign_composition_changes_the_pictogram():
    base = SignSpec("mandatory", "grasp", "box", (230, 200, 20))
    tile, alpha = render_sign(base, 64)
    assert tile.shape == (64, 64, 3) and alpha.shape == (64, 64) and alpha.max() == 1.0
    assert alpha[0, 0] == 0.0  # outside the round frame
    for other in (SignSpec("mandatory", "place", "box", (230, 200, 20)),
                  SignSpec("mandatory", "grasp", "sphere", (230, 200, 20)),
                  SignSpec("mandatory", "grasp", "box", (230, 200, 20), modifier="left")):
        assert np.abs(render_sign(other, 64)[0].astype(int) - tile).sum() > 500
    with pytest.raises(ValueError, match="unknown sign category"):
        render_sign(SignSpec("bogus"), 32)


def test_sign_moves_below_when_there_is_no_room_above():
    out = draw(grey(value=200), CueSpec("F6", "hazard", {"role": "source"}), ctx(source=(160, 20, 8)))
    ys, _ = np.nonzero(CATEGORY_PIXEL["hazard"](out))
    assert ys.min() > 20


# --------------------------------------------------------------------------- F7 highlight

def test_spotlight_darkens_away_from_the_anchor():
    img = grey(value=150)
    out = draw(img, CueSpec("F7", "spotlight"), ctx(source=(100, 120, 10)))
    assert out[120, 100].mean() >= 150 and out[20, 300].mean() < 0.35 * 150 + 2
    out2 = draw(img, CueSpec("F7", "spotlight", {"roles": ["source", "target"]}),
                ctx(source=(100, 120, 10), target=(250, 60, 10)))
    assert out2[60, 250].mean() >= 150  # both lit


def test_dim_desaturates_everything_but_the_anchor():
    img = np.zeros((H, W, 3), np.uint8)
    img[:] = (200, 40, 40)
    out = draw(img, CueSpec("F7", "dim"), ctx(source=(160, 120, 10)))
    assert np.array_equal(out[120, 160], img[120, 160])
    far = out[10, 10].astype(int)
    assert far.max() - far.min() <= 2 and far.max() < 80  # grey and dark


def test_outline_glow_beam_land_on_the_object(scene):
    img, objects, cam, task = scene
    uv = project_point(cam, objects[task.source].pos)
    for variant in ("outline", "glow", "beam"):
        # the source's highlight alone (no arm tag, not the placement point)
        cue = make_cue(task, "F7", variant, world=objects, arms=(), roles=["source"])
        out = insert(img, cue, objects, cam)
        d = changed(out, img)
        ys, xs = np.nonzero(d)
        assert len(xs) > 30, variant
        near = np.hypot(xs - uv[0], ys - uv[1]) < 30
        if variant == "beam":
            assert d[int(uv[1]), int(uv[0])] and ys.min() == 0  # from the top down to it
        else:
            assert near.mean() > 0.95, variant
    yellow = (out[..., 0] > 200) & (out[..., 1] > 200)
    assert yellow.any()
