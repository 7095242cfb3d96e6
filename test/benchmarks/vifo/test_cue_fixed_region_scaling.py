"""Fixed-region cues keep their layout at any resolution (F1 text, F4 pictorial, F8 codes).

Each fixed-region variant is drawn at 320x240 and at 640x480 / 1280x960; the larger one,
area-averaged down to 320x240, must match the 320x240 one: positions, sizes, line widths and
font scales are proportional to the image. With the families' default regions (which do not
fall on whole pixels at every size) the match is within half a pixel; with a region on whole
pixels at every size it is nearly exact. Pure logic (no simulator).
"""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from support.cue_fixtures import cue_scene  # noqa: E402
from vla_bridge.benchmarks.vifo import FAMILIES, FIXED_REGION, draw, make_cue  # noqa: E402
from vla_bridge.benchmarks.vifo import region_to_pixels  # noqa: E402
from vla_bridge.benchmarks.vifo.families import CueContext  # noqa: E402

BG = 120
ALIGNED = (0.625, 0.0625, 0.34375, 0.3125)  # whole pixels at 320, 640 and 1280 px wide


@pytest.fixture(scope="module")
def scene():
    return cue_scene()


def fixed_region_variants():
    out = []
    for code, fam in FAMILIES.items():
        for variant in fam.variants:
            if fam.default_insertion == FIXED_REGION and variant != "aruco_tags":
                out.append((code, variant))
    return out


def cue_for(scene, code, variant, region=None):
    _img, objects, _cam, task = scene
    params = {} if region is None else {"region": region}
    if variant == "goal_image":
        goal = np.zeros((240, 320, 3), np.uint8)
        goal[:, :160] = (10, 200, 30)
        goal[60:180, 100:220] = (200, 40, 40)
        params["image"] = goal
    if variant == "aruco":  # the id does not matter here; this one was measured
        params["marker_id"] = 11
    return make_cue(task, code, variant, world=objects, **params)


def render(cue, w, h):
    return draw(np.full((h, w, 3), BG, np.uint8), cue, CueContext())


def cue_mask(img):
    return np.abs(img.astype(int) - BG).max(axis=2) > 24


def bbox(mask):
    ys, xs = np.nonzero(mask)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])


def compare(cue, size):
    """(small, the large one area-averaged to 320x240, |difference|)."""
    small = render(cue, 320, 240)
    down = cv2.resize(render(cue, *size), (320, 240), interpolation=cv2.INTER_AREA)
    return small, down, np.abs(small.astype(int) - down.astype(int))


def test_the_fixed_region_variants_are_text_panels_and_codes():
    assert fixed_region_variants() == (
        [("F1", v) for v in FAMILIES["F1"].variants] + [("F4", v) for v in FAMILIES["F4"].variants]
        + [("F8", "qr"), ("F8", "aruco")])


@pytest.mark.parametrize("size", [(640, 480), (1280, 960)])
@pytest.mark.parametrize("code, variant", fixed_region_variants())
def test_a_larger_image_gets_the_same_layout(scene, code, variant, size):
    cue = cue_for(scene, code, variant)
    small, down, diff = compare(cue, size)
    x0, y0, x1, y1 = region_to_pixels(cue.box, 320, 240)
    assert diff.mean() < 2.0, diff.mean()  # the whole image, in grey levels
    blur = np.abs(cv2.GaussianBlur(small, (0, 0), 1.0).astype(int)
                  - cv2.GaussianBlur(down, (0, 0), 1.0).astype(int))
    assert blur[y0:y1, x0:x1].mean() < 4.0  # the region, half-pixel shifts forgiven
    a, b = cue_mask(small), cue_mask(down)
    assert np.abs(bbox(a) - bbox(b)).max() <= 2
    assert (a & b).sum() / (a | b).sum() > 0.75  # the cue's own pixels (thin text strokes too)


@pytest.mark.parametrize("code, variant", fixed_region_variants())
def test_on_whole_pixels_the_layout_is_nearly_exact(scene, code, variant):
    cue = cue_for(scene, code, variant, ALIGNED)
    x0, y0, x1, y1 = region_to_pixels(ALIGNED, 320, 240)
    assert (x0, y0, x1, y1) == (200, 15, 310, 90)
    for size in ((640, 480), (1280, 960)):
        small, down, diff = compare(cue, size)
        box = diff[y0:y1, x0:x1]
        assert box.mean() < 4.0 and diff.mean() < 0.5, (size, box.mean())
        a, b = cue_mask(small), cue_mask(down)
        assert np.array_equal(bbox(a), bbox(b)) or np.abs(bbox(a) - bbox(b)).max() <= 1


@pytest.mark.parametrize("size", [(640, 480), (1280, 960)])
def test_text_keeps_its_line_breaks_and_font_size(scene, size):
    cue = cue_for(scene, "F1", "outlined")
    small, down, _ = compare(cue, size)
    rows = lambda m: np.flatnonzero(m.any(axis=1))  # noqa: E731
    a, b = cue_mask(small), cue_mask(down)
    assert abs(len(rows(a)) - len(rows(b))) <= 2  # same number of text rows, same height
    gaps = lambda r: int((np.diff(r) > 1).sum())  # noqa: E731
    assert gaps(rows(a)) == gaps(rows(b))  # same line breaks
    assert abs(int(a.sum()) - int(b.sum())) < 0.2 * a.sum()  # same stroke weight
