"""LIBERO-VIFO cue library: every family on pixels, fixed regions, insertion, parser, hooks.

Pure logic (no simulator, no rclpy): a synthetic camera with the Scene 1 overhead pose and the
Scene 1 layout as world state. The MuJoCo checks live in test_cue_projection.py.
"""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from vla_bridge.cues import (FAMILIES, SIGN_CATEGORIES, Anchor2D, AnchorRef, CueContext,  # noqa: E402
                             CueInserter, CueSpec, EpisodeRecord, GhostLayer, GroundingError,
                             ParseError, SignSpec, composite_layers, draw, family,
                             foreground_mask, full_chain_accuracy, ground, insert, make_cue,
                             parse, pixels_to_region, project_anchors, project_point,
                             protocol_language, protocol_metrics, region_to_pixels, render_sign,
                             vqa_questions)
from vla_bridge.cues.bench import EXAMPLE_INSTRUCTION, cam_high_model, synthetic_frame  # noqa: E402
from vla_bridge.cues.families import marker_id_for, qr_payload  # noqa: E402
from vla_bridge.cues.parser import RELATION_VECTORS, coverage_report, layout_world  # noqa: E402
from vla_bridge.sim_nodes.backend import CameraModel  # noqa: E402
from vla_bridge.tasks import episode_seed, load_suite  # noqa: E402

W, H = 320, 240


@pytest.fixture(scope="module")
def scene():
    objects, _ = layout_world("scene1", "default", 1)
    cam = cam_high_model()
    img = synthetic_frame(objects, cam)
    task = ground(parse(EXAMPLE_INSTRUCTION), objects)
    return img, objects, cam, task


def grey(w=W, h=H, value=120):
    return np.full((h, w, 3), value, np.uint8)


def changed(a, b):
    return np.any(a != b, axis=2)


def bbox(mask):
    ys, xs = np.nonzero(mask)
    return xs.min(), ys.min(), xs.max() + 1, ys.max() + 1


def is_magenta(img):
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (r > 180) & (b > 180) & (g < 90)


def ctx(**anchors):
    return CueContext({k: (None if v is None else Anchor2D(np.asarray(v[:2], float), v[2]))
                       for k, v in anchors.items()})


# --------------------------------------------------------------------------- registry

def test_registry_has_eight_families_with_several_variants():
    assert list(FAMILIES) == [f"F{i}" for i in range(1, 9)]
    for fam in FAMILIES.values():
        assert len(fam.variants) >= 3, fam.code
    assert family("text").code == "F1" and family("f8").code == "F8"
    assert list(family("F6").variants) == list(SIGN_CATEGORIES)
    with pytest.raises(ValueError, match="unknown cue family"):
        family("F9")
    with pytest.raises(ValueError, match="unknown variant 'zigzag' for F2"):
        draw(grey(), CueSpec("F2", "zigzag"), ctx())


def test_draw_never_modifies_its_input(scene):
    img, objects, cam, task = scene
    before = img.copy()
    for code, fam in FAMILIES.items():
        for v in fam.variants:
            params = {"image": img} if v == "goal_image" else {}
            cue = make_cue(task, code, v, world=objects, **params)
            layers = [GhostLayer(img, np.zeros(img.shape[:2], np.float32))] if code == "F3" else None
            out = insert(img, cue, objects, cam, layers)
            assert out.shape == img.shape and out.dtype == np.uint8
    assert np.array_equal(img, before)


# --------------------------------------------------------------------------- F1 text

@pytest.mark.parametrize("variant", list(FAMILIES["F1"].variants))
def test_text_stays_inside_its_region(variant):
    cue = CueSpec("F1", variant, {"text": "Put the red block behind the green ball"})
    img = grey()
    out = draw(img, cue, ctx())
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    diff = changed(out, img)
    assert diff.sum() > 150
    bx0, by0, bx1, by1 = bbox(diff)
    assert x0 <= bx0 and y0 <= by0 and bx1 <= x1 and by1 <= y1
    bright = (out.min(axis=2) > 200) | ((out[..., 2] < 120) & (out[..., 0] < 80))
    assert (bright & diff).sum() > 40  # text strokes (white, or dark blue on the note)


@pytest.mark.parametrize("variant", ["banner", "sticky_note", "subtitle"])
def test_fixed_region_box_survives_a_resolution_change(variant):
    cue = CueSpec("F1", variant, {"text": "pick up the yellow block"}, region=(0.1, 0.55, 0.5, 0.3))
    boxes = []
    for w, h in ((320, 240), (640, 480), (960, 540)):
        img = grey(w, h)
        out = draw(img, cue, ctx())
        bx0, by0, bx1, by1 = bbox(changed(out, img))
        assert (bx0, by0, bx1, by1) == region_to_pixels(cue.region, w, h) or variant == "sticky_note"
        boxes.append(np.array([bx0 / w, by0 / h, bx1 / w, by1 / h]))
    assert np.allclose(boxes[0], boxes[1], atol=0.01) and np.allclose(boxes[0], boxes[2], atol=0.01)
    assert np.allclose(boxes[0], [0.1, 0.55, 0.6, 0.85], atol=0.01)


def test_region_pixel_round_trip():
    assert region_to_pixels((0.25, 0.5, 0.5, 0.25), 320, 240) == (80, 120, 240, 180)
    assert region_to_pixels((0.25, 0.5, 0.5, 0.25), 640, 480) == (160, 240, 480, 360)
    assert pixels_to_region(80, 120, 240, 180, 320, 240) == (0.25, 0.5, 0.5, 0.25)
    with pytest.raises(ValueError):
        region_to_pixels((0, 0, 0, 0.1), 320, 240)


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


# --------------------------------------------------------------------------- F3 ghost

def _layer(center, color=(0, 0, 255), r=12):
    g = grey()
    m = np.zeros((H, W), np.float32)
    cv2.circle(g, center, r, color, -1)
    cv2.circle(m, center, r, 1.0, -1)
    return GhostLayer(g, m)


def test_composite_is_alpha_blending_inside_the_mask_only():
    img = grey()
    out = composite_layers(img, [_layer((200, 100))], [0.5])
    assert np.allclose(out[100, 200], [60, 60, 188], atol=1)  # 0.5 * 120 + 0.5 * (0, 0, 255)
    assert np.array_equal(out[:70], img[:70]) and np.array_equal(out[:, :180], img[:, :180])
    # (image, bool mask) tuples work too
    out2 = composite_layers(img, [(_layer((200, 100)).image, _layer((200, 100)).mask > 0)], [0.5])
    assert np.array_equal(out, out2)


def test_ghost_variants_follow_their_opacity_schedule():
    layers = [_layer((60, 120)), _layer((160, 120)), _layer((260, 120))]
    img = grey()
    fade = draw(img, CueSpec("F3", "fade"), CueContext(layers=layers))
    blues = [int(fade[120, x, 2]) for x in (60, 160, 260)]
    assert blues[0] < blues[1] < blues[2]  # later states are more opaque
    final = draw(img, CueSpec("F3", "final"), CueContext(layers=layers))
    assert np.array_equal(final[:, :220], img[:, :220]) and final[120, 260, 2] > 180
    uniform = draw(img, CueSpec("F3", "uniform"), CueContext(layers=layers))
    tinted = draw(img, CueSpec("F3", "tinted", {"tint": (255, 0, 0)}), CueContext(layers=layers))
    assert int(tinted[120, 160, 0]) > int(uniform[120, 160, 0]) + 30  # the tint shows through
    trail = draw(img, CueSpec("F3", "trail"), CueContext(layers=layers))
    assert is_magenta(trail)[110:130, 90:230].any()  # dashed trail through the centres
    assert np.array_equal(draw(img, CueSpec("F3", "uniform"), CueContext()), img)  # no layers


def test_foreground_mask_finds_what_moved():
    bg = grey()
    render = bg.copy()
    cv2.rectangle(render, (100, 50), (120, 70), (0, 200, 0), -1)
    m = foreground_mask(render, bg, dilate=0)
    assert m[60, 110] == 1.0 and m.sum() == 21 * 21


# --------------------------------------------------------------------------- F4 pictorial

@pytest.mark.parametrize("variant", ["schematic", "storyboard", "before_after"])
def test_pictorial_panel_is_an_inset_in_its_region(scene, variant):
    img, objects, cam, task = scene
    cue = make_cue(task, "F4", variant, world=objects)
    out = insert(img, cue, objects, cam)
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    diff = changed(out, img)
    assert diff[y0:y1, x0:x1].mean() > 0.9 and not diff[y1:].any() and not diff[:, :x0].any()
    panel = out[y0:y1, x0:x1]
    # the glyphs carry the task's colours: the yellow block and the green ball
    assert ((panel[..., 0] > 200) & (panel[..., 1] > 180) & (panel[..., 2] < 80)).sum() > 10
    assert ((panel[..., 1] > 180) & (panel[..., 0] < 80)).sum() > 10
    if variant != "before_after":
        assert is_magenta(panel).any()  # the motion arrow


def test_goal_image_inset_and_its_error():
    img = grey()
    goal = np.zeros((240, 320, 3), np.uint8)
    goal[:] = (10, 200, 30)
    cue = CueSpec("F4", "goal_image", {"image": goal}, region=(0.5, 0.5, 0.5, 0.5))
    out = draw(img, cue, ctx())
    assert np.allclose(out[200, 260], (10, 200, 30), atol=2)
    assert np.array_equal(out[:100], img[:100])
    with pytest.raises(ValueError, match="needs params\\['image'\\]"):
        draw(img, CueSpec("F4", "goal_image"), ctx())


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
        cue = make_cue(task, "F7", variant, world=objects)
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


# --------------------------------------------------------------------------- F8 codes

def decode_qr(img):
    text, pts, _ = cv2.QRCodeDetector().detectAndDecode(img)
    return text


def decode_aruco(img):
    det = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50),
                                  cv2.aruco.DetectorParameters())
    corners, ids, _ = det.detectMarkers(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))
    return ({} if ids is None else
            {int(i): c.reshape(4, 2).mean(axis=0) for i, c in zip(ids.ravel(), corners)})


@pytest.mark.parametrize("size", [(320, 240), (640, 480)])
def test_qr_code_decodes_to_the_task(scene, size):
    img, objects, cam, task = scene
    frame = cv2.resize(img, size)
    cue = make_cue(task, "F8", "qr", world=objects)
    out = insert(frame, cue, objects, cam)
    assert qr_payload(cue) == "place yellow_block_3 behind green_sphere"
    assert decode_qr(out) == qr_payload(cue)
    x0, y0, x1, y1 = region_to_pixels(cue.box, *size)
    assert not changed(out, frame)[:, :x0].any()


@pytest.mark.parametrize("size", [(320, 240), (640, 480)])
def test_aruco_marker_decodes_to_its_id(scene, size):
    img, objects, cam, task = scene
    frame = cv2.resize(img, size)
    cue = make_cue(task, "F8", "aruco", world=objects, marker_id=17)
    found = decode_aruco(insert(frame, cue, objects, cam))
    assert list(found) == [17]
    x0, y0, x1, y1 = region_to_pixels(cue.box, *size)
    assert x0 <= found[17][0] <= x1 and y0 <= found[17][1] <= y1
    assert 0 <= marker_id_for(make_cue(task, "F8", "aruco", world=objects)) < 50


def test_aruco_tags_mark_source_and_target(scene):
    img, objects, cam, task = scene
    cue = make_cue(task, "F8", "aruco_tags", world=objects)
    assert cue.mode == "scene_anchored"
    frame = cv2.resize(img, (640, 480))
    cam2 = CameraModel(640, 480, cam.fovy_deg, cam.world_from_camera)
    found = decode_aruco(insert(frame, cue, objects, cam2))
    assert set(found) == {1, 2}
    src = project_point(cam2, objects[task.source].pos)
    assert abs(found[1][0] - src[0]) < 3 and found[1][1] < src[1]  # just above the source


# --------------------------------------------------------------------------- insertion

def test_scene_anchored_cue_is_dropped_behind_or_outside_the_camera(scene):
    img, objects, cam, task = scene
    cue = CueSpec("F2", "arrow", anchors={"source": AnchorRef(entity="red_sphere"),
                                          "target": AnchorRef(entity="green_sphere")})
    assert changed(insert(img, cue, objects, cam), img).any()
    T = cam.world_from_camera.copy()
    T[:3, :3] = T[:3, :3] @ np.diag([-1.0, 1.0, -1.0])  # turn round: objects are behind
    behind = CameraModel(W, H, cam.fovy_deg, T)
    assert project_point(behind, objects["red_sphere"].pos) is None
    assert np.array_equal(insert(img, cue, objects, behind), img)
    off = CueSpec("F2", "arrow", anchors={"source": AnchorRef(entity="red_sphere"),
                                          "target": AnchorRef(point=(3.0, 0.0, 0.76))})
    assert np.array_equal(insert(img, off, objects, cam), img)  # far off to the side


def test_scene_anchored_cue_follows_the_world_state(scene):
    img, objects, cam, task = scene
    cue = make_cue(task, "F2", "crosshair", world=objects)
    moved = dict(objects)
    o = objects[task.source]
    from vla_bridge.world import ObjectState
    moved[task.source] = ObjectState(o.name, o.pos + np.array([-0.15, 0.05, 0.0]), o.quat, o.size,
                                     o.rgba, o.shape)
    for world in (objects, moved):
        out = insert(img, cue, world, cam)
        ys, xs = np.nonzero(is_magenta(out))
        uv = project_point(cam, world[task.source].pos)
        assert np.hypot(xs.mean() - uv[0], ys.mean() - uv[1]) < 2.0


def test_inserter_hook_covers_every_camera_and_mode(scene):
    img, objects, cam, task = scene
    cams = {"cam_high": cam, "cam_left_wrist": cam}
    images = {"cam_high": img, "cam_left_wrist": img}
    for code, variant in (("F1", "banner"), ("F2", "arrow"), ("F8", "qr")):
        hook = CueInserter(make_cue(task, code, variant, world=objects))
        out = hook(images, objects, cams)
        assert set(out) == set(images) and all(changed(out[k], img).any() for k in out)
        assert hook.frame_index == 1
    only = CueInserter(make_cue(task, "F2", "arrow", world=objects), only=("cam_high",))
    out = only(images, objects, cams)
    assert out["cam_left_wrist"] is img and changed(out["cam_high"], img).any()
    ghost = CueInserter(make_cue(task, "F3", "uniform", world=objects))
    out = ghost(images, objects, cams, layers={"cam_high": [_layer((50, 50))]})
    assert changed(out["cam_high"], img).any() and np.array_equal(out["cam_left_wrist"], img)
    with pytest.raises(ValueError, match="pass world and camera"):
        insert(img, make_cue(task, "F2", "arrow", world=objects))
    with pytest.raises(ValueError, match="ghost layers"):
        insert(img, make_cue(task, "F3", "fade", world=objects))


def test_make_cue_builds_the_task_conditioned_spec(scene):
    img, objects, cam, task = scene
    cue = make_cue(task, "F2", "arrow", world=objects)
    assert cue.task is task and cue.mode == "scene_anchored" and cue.code == "F2"
    assert cue.anchors["source"].entity == "yellow_block_3"
    assert cue.anchors["target"].entity == "green_sphere"
    assert cue.anchors["target"].offset[1] > 0  # "behind": +y
    assert make_cue(task, "F1", "banner").mode == "fixed_region"
    assert make_cue(task, "F3", "fade").mode == "state_overlay"
    sign = make_cue(task, "F6", "target_zone", world=objects).params["sign"]
    assert (sign.category, sign.predicate, sign.target_shape, sign.modifier) == \
        ("target_zone", "place", "box", "back")
    pick = ground(parse("Use your left arm to pick up the block to the left of the green ball."), objects)
    assert make_cue(pick, "F2", "arrow", world=objects).anchors["target"].offset[2] > 0.1  # lift


# --------------------------------------------------------------------------- parser

ACTION_RELATION = {"place_behind": "behind", "place_in_front": "in_front_of",
                   "place_left_of": "left_of", "place_beside": "right_of"}


def test_every_scene1_instruction_parses_and_grounds_to_the_registry():
    suite = load_suite()
    tasks = suite.eval_tasks("scene1")
    assert len(tasks) == 116
    for t in tasks:
        p = parse(t.instruction)
        assert p.steps[0].arm == t.arm, t.id
        objects, _ = layout_world("scene1", t.layout, episode_seed(t.id, 1))
        g = ground(p, objects)
        assert g.source == t.source, t.id
        if t.action == "pickup":
            assert g.action == "pick" and g.target is None and p.steps[0].target_state == "lifted"
        else:
            assert g.action == "place" and g.target == t.anchor, t.id
            assert g.relation == ACTION_RELATION[t.action], t.id
            assert RELATION_VECTORS[g.relation] == tuple(t.relation), t.id


def test_scene1_parse_structure():
    p = parse("Use your left arm to pick up the block to the left of the green ball and place it "
              "in front of the green ball.")
    s = p.steps[0]
    assert (p.kind, s.action, s.arm, s.relation) == ("single", "place", "left", "in_front_of")
    assert (s.source.noun, s.source.locator[0]) == ("block", "left_of")
    assert (s.source.locator[1].noun, s.source.locator[1].colors) == ("ball", ("green",))
    assert (s.target.noun, s.target.colors) == ("ball", ("green",))


def test_coverage_of_scenes_2_to_4():
    report = coverage_report(("scene2", "scene3", "scene4"))
    for scene, row in report.items():
        assert row["parsed"] == row["tasks"], (scene, row["errors"][:3])
        assert row["source_ok"] >= 0.95 * row["tasks"], (scene, row["errors"][:3])
        assert row["target_ok"] >= 0.9 * row["target_checked"], scene
    # Scene 3: the route constraint and the final orientation, as the instruction words them
    assert report["scene3"]["route_ok"] == report["scene3"]["orientation_ok"] == 216
    # Scene 2 misses are the swapped layouts where the registry keeps the training identity
    # ("the left bowl" after the bowls swapped places); every other scene grounds completely
    assert report["scene4"]["source_ok"] == 90 and report["scene3"]["source_ok"] == 216


@pytest.mark.parametrize("text, action, sources, relation, target, state", [
    ("put the bowl on the plate", "place", ["bowl"], "on", "plate", None),
    ("open the top drawer of the cabinet", "open", [], None, "drawer", "open"),
    ("pick up the alphabet soup and place it in the basket", "place", ["alphabet soup"], "in",
     "basket", None),
    ("put both the alphabet soup and the tomato sauce in the basket", "place",
     ["alphabet soup", "tomato sauce"], "in", "basket", None),
    ("put the wine bottle on top of the cabinet", "place", ["wine bottle"], "on", "cabinet", None),
    ("push the plate to the front of the stove", "push", ["plate"], "in_front_of", "stove", None),
    ("turn on the stove", "turn_on", [], None, "stove", "on"),
    ("put the chocolate pudding to the left of the plate", "place", ["chocolate pudding"],
     "left_of", "plate", None),
])
def test_libero_instructions(text, action, sources, relation, target, state):
    p = parse(text)
    s = p.steps[0]
    assert s.action == action and [e.noun for e in s.sources] == sources
    assert s.relation == relation and s.target.noun == target and s.target_state == state


def test_libero_compound_instructions_and_attributes():
    p = parse("put the black bowl in the bottom drawer of the cabinet and close it")
    assert [s.action for s in p.steps] == ["place", "close"]
    drawer = p.steps[0].target
    assert drawer.attributes == ("bottom",) and drawer.locator[0] == "part_of"
    assert p.steps[1].target == drawer  # "it" is the drawer
    p = parse("turn on the stove and put the moka pot on it")
    assert p.steps[1].target.noun == "stove" and p.steps[1].source.noun == "moka pot"
    p = parse("stack the black bowl at the front on the black bowl in the middle")
    assert p.source.attributes == ("front",) and p.target.attributes == ("middle",)
    p = parse("put the yellow and white mug in the microwave and close it")
    assert p.source.colors == ("yellow", "white") and p.steps[1].target.noun == "microwave"


def test_libero_grounding_by_object_names():
    from vla_bridge.world import ObjectState

    def obj(name, xyz):
        return ObjectState(name, np.asarray(xyz, float), np.array([1.0, 0, 0, 0]),
                           np.array([0.1, 0.1, 0.05]), shape="mesh")
    world = {"akita_black_bowl_1": obj("akita_black_bowl_1", (0.0, 0.1, 0.9)),
             "akita_black_bowl_2": obj("akita_black_bowl_2", (0.0, -0.2, 0.9)),
             "plate_1": obj("plate_1", (0.2, 0.0, 0.9)),
             "alphabet_soup_1": obj("alphabet_soup_1", (-0.2, 0.0, 0.9)),
             "basket_1": obj("basket_1", (0.3, 0.3, 0.9))}
    g = ground(parse("pick up the alphabet soup and place it in the basket"), world)
    assert (g.source, g.target, g.relation) == ("alphabet_soup_1", "basket_1", "in")
    g = ground(parse("put the black bowl at the front on the plate"), world)
    assert g.source == "akita_black_bowl_2"  # front = nearer the robot (smaller y)
    with pytest.raises(GroundingError, match="ambiguous"):
        ground(parse("put the black bowl on the plate"), world)
    with pytest.raises(GroundingError, match="no object matches 'the ketchup'"):
        ground(parse("put the ketchup on the plate"), world)


def test_parse_error_says_what_it_could_not_parse():
    with pytest.raises(ParseError, match="cannot parse the action in 'dance with the robot'"):
        parse("Use your left arm to dance with the robot.")
    with pytest.raises(ParseError, match="empty instruction"):
        parse("   ")
    with pytest.raises(ParseError, match="route constraint 'fly over the slab'"):
        parse("Use your left arm to pick up the blue slab, fly over the slab, and place it on the "
              "green square label with the long side facing right.")
    with pytest.raises(ParseError, match="condition"):
        parse("If the moon is full, pick up the ball; otherwise pick up the cube.")


def test_conditionals_and_sequences_choose_the_branch():
    objects, fixtures = layout_world("scene4", "scene4.1", 3)
    p = parse("If the blue sphere is to the right of the red sphere, use your left arm to pick up "
              "the blue sphere; otherwise use your right arm to place the cylinder from the right "
              "cube on the yellow cylinder.")
    assert p.kind == "conditional" and p.condition.relation == "right_of"
    g = ground(p, objects, fixtures)
    assert g.branch == "else" and (g.source, g.target, g.relation) == \
        ("green_cylinder_top", "yellow_cylinder", "on")
    p = parse("First use your left arm to pick up the cube inside the bowl, then use your right "
              "arm to pick up the green cylinder.")
    g = ground(p, objects, fixtures)
    assert p.kind == "sequence" and [s.source for s in g.steps] == ["red_cube_in_bowl",
                                                                    "green_cylinder_top"]
    assert [s.arm for s in g.steps] == ["left", "right"]
    cue = make_cue(g, "F2", "numbered", world=objects)
    assert set(cue.anchors) >= {"step1", "step2"}


# --------------------------------------------------------------------------- protocol hooks

def test_protocol_language_and_metrics():
    ins = "Use your left arm to pick up the block to the left of the green ball."
    other = "Use your right arm to pick up the block in front of the red cylinder."
    assert protocol_language("original", ins) == ins
    assert "follow the visual cue" in protocol_language("authorized", ins).lower()
    assert protocol_language("conflict", ins, other) == other
    assert protocol_language("no_language", ins) == ""
    with pytest.raises(ValueError):
        protocol_language("conflict", ins, ins)
    recs = ([EpisodeRecord("original", language_task_success=s) for s in (1, 1, 1, 0)]
            + [EpisodeRecord("authorized", cue_task_success=s) for s in (1, 0, 1, 0)]
            + [EpisodeRecord("conflict", cue_task_success=0, language_task_success=s) for s in (1, 1)]
            + [EpisodeRecord("no_language", cue_task_success=s) for s in (1, 0, 0, 0)])
    m = protocol_metrics(recs)
    assert m == {"orig_sr": 75.0, "avf": 50.0, "vtr": pytest.approx(66.667, abs=1e-3),
                 "lfr": 100.0, "uvf": 0.0, "uvi": 25.0}


def test_part_one_a_questions(scene):
    img, objects, cam, task = scene
    qs = vqa_questions(make_cue(task, "F6", "target_zone", world=objects), objects, seed=1)
    assert [q["stage"] for q in qs] == ["detection", "semantics", "grounding", "decision"]
    answers = [q["options"][q["answer"]] for q in qs]
    assert answers[0] == "Visual Signage"
    assert answers[1] == "place the yellow block 3 behind the green sphere"
    assert answers[2] == "yellow block 3" and "right gripper" in answers[3]
    assert all(len(set(q["options"])) == len(q["options"]) >= 3 for q in qs)
    assert full_chain_accuracy([[1, 1, 1, 1], [1, 0, 1, 1]]) == 50.0


@pytest.mark.parametrize("code, variant", [(c, v) for c in ("F2", "F5", "F6", "F7") for v in
                                           FAMILIES[c].variants] + [("F8", "aruco_tags")])
def test_scene_anchored_variants_draw_nothing_when_every_anchor_is_dropped(scene, code, variant):
    img, objects, cam, task = scene
    cue = make_cue(task, code, variant, world=objects)
    T = cam.world_from_camera.copy()
    T[:3, 3] += 3.0 * T[:3, 2]  # step 3 m back along +z (OpenGL: behind the camera)...
    T[:3, :3] = T[:3, :3] @ np.diag([-1.0, 1.0, -1.0])  # ...and turn round: all behind
    away = CameraModel(W, H, cam.fovy_deg, T)
    assert all(a is None for a in project_anchors(cue, objects, away).values())
    assert np.array_equal(insert(img, cue, objects, away), img)
    assert changed(insert(img, cue, objects, cam), img).any()  # and visible ones do draw
