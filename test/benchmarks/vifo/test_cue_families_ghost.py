"""LIBERO-VIFO F3 ghost trajectory: alpha compositing, opacity schedules, foreground masks.

Pure logic (no simulator, no rclpy): synthetic future-state layers (``cue_fixtures``).
"""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

from support.cue_fixtures import ghost_layer, grey, is_magenta  # noqa: E402
from vla_bridge.benchmarks.vifo import (CueContext, CueSpec, composite_layers, draw,  # noqa: E402
                                        foreground_mask)


# --------------------------------------------------------------------------- F3 ghost

def test_composite_is_alpha_blending_inside_the_mask_only():
    img = grey()
    out = composite_layers(img, [ghost_layer((200, 100))], [0.5])
    assert np.allclose(out[100, 200], [60, 60, 188], atol=1)  # 0.5 * 120 + 0.5 * (0, 0, 255)
    assert np.array_equal(out[:70], img[:70]) and np.array_equal(out[:, :180], img[:, :180])
    # (image, bool mask) tuples work too
    layer = ghost_layer((200, 100))
    out2 = composite_layers(img, [(layer.image, layer.mask > 0)], [0.5])
    assert np.array_equal(out, out2)


def test_ghost_variants_follow_their_opacity_schedule():
    layers = [ghost_layer((60, 120)), ghost_layer((160, 120)), ghost_layer((260, 120))]
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
