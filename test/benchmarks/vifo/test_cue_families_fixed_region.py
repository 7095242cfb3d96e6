"""LIBERO-VIFO fixed-region cue families on pixels: F1 text, F4 pictorial, F8 codes.

Pure logic (no simulator, no rclpy): synthetic frames and the Scene 1 overhead camera
(``cue_fixtures``). Each family module of ``vla_bridge.benchmarks.vifo.families`` has its
section here or in test_cue_families_scene_anchored.py / test_cue_families_ghost.py.
"""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from support.cue_fixtures import H, W, bbox, changed, ctx, cue_scene, grey, is_magenta  # noqa: E402
from vla_bridge.benchmarks.vifo import (FAMILIES, CueSpec, draw, insert, make_cue,  # noqa: E402
                                        pixels_to_region, project_point, region_to_pixels)
from vla_bridge.benchmarks.vifo.families import marker_id_for, qr_payload  # noqa: E402
from vla_bridge.benchmarks.vifo.content import ARUCO_MEANINGS, read_payload  # noqa: E402
from vla_bridge.embodiment.cameras import CameraModel  # noqa: E402


@pytest.fixture(scope="module")
def scene():
    return cue_scene()


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
    assert qr_payload(cue) == "v=vifo-task/1;s1=right,place,yellow_block_3,behind,green_sphere"
    assert decode_qr(out) == qr_payload(cue)
    assert read_payload(decode_qr(out))["steps"] == [
        {"arm": "right", "action": "place", "source": "yellow_block_3", "relation": "behind",
         "target": "green_sphere"}]
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
    # the dictionary (content.ARUCO_MEANINGS): 2 = source for the right arm, 7 = target behind
    assert set(found) == {2, 7}
    assert ARUCO_MEANINGS[2] == "source, right arm" and ARUCO_MEANINGS[7] == "target: behind"
    found[1] = found[2]
    src = project_point(cam2, objects[task.source].pos)
    assert abs(found[1][0] - src[0]) < 3 and found[1][1] < src[1]  # just above the source
