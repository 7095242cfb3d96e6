"""The eight LIBERO-VIFO visual cue families (F1-F8) drawn with OpenCV / numpy.

Common interface: a ``CueSpec`` (family, variant, rendering parameters, anchors / region,
insertion mode, the task it conveys) and ``draw(image, cue, context) -> image``. ``context`` is a
``CueContext`` with the anchors already projected into this image (``Anchor2D``, or None where
an anchor was dropped because it is behind the camera or off-image) and, for the ghost
trajectory, the pre-rendered future-state layers. ``draw`` never modifies its input; it returns
a new RGB uint8 image. Colours are RGB (MuJoCo renders RGB).

Modules: ``base`` (the types, insertion modes and the one registry every family joins),
``drawing`` (shared drawing helpers), and one module per family, each registering itself when
this package is imported::

    f1_text        text overlay in a fixed region
    f2_geometric   arrows, paths, target regions, markers (scene-anchored)
    f3_ghost       future object states alpha-composited (simulator-state overlay)
    f4_pictorial   small inset panel demonstrating the task (fixed region)
    f5_gesture     drawn hand / pointing glyph (scene-anchored)
    f6_signage     robot-oriented signs: 8 categories, frame/actor/predicate/target/modifier
    f7_highlight   spotlight, dimming, outline, glow, light beam (scene-anchored)
    f8_code        QR (cv2.QRCodeEncoder) and ArUco (cv2.aruco) codes that OpenCV decodes

Scene-anchored elements whose anchors were dropped are not drawn (an arrow needs both ends).
Sizes scale with the image height (reference 240 px). Fixed regions are normalised boxes, and
their cues (F1 text, F4 panels) are drawn at one canonical resolution and resized to the box,
F8 codes laid out in whole pixels at the reference and scaled: the same layout at 320x240 and
at 1280x960.
Pure logic: imports numpy and OpenCV only.
"""
from vla_bridge.benchmarks.vifo.families.base import (FAMILIES, FIXED_REGION, INSERTION_MODES,
                                                      SCENE_ANCHORED, STATE_OVERLAY, Anchor2D,
                                                      AnchorRef, CueContext, CueSpec, Family,
                                                      GhostLayer, draw, family, list_variants,
                                                      region_to_pixels, register_family)
# importing the family modules registers F1..F8, in this order
from vla_bridge.benchmarks.vifo.families import (f1_text, f2_geometric, f3_ghost,  # noqa: F401
                                                 f4_pictorial, f5_gesture, f6_signage,
                                                 f7_highlight, f8_code)
from vla_bridge.benchmarks.vifo.families.f3_ghost import composite_layers, foreground_mask
from vla_bridge.benchmarks.vifo.families.f6_signage import (CATEGORY_GROUPS, SIGN_CATEGORIES,
                                                            SignSpec, render_sign, sign_for_cue)
from vla_bridge.benchmarks.vifo.families.f8_code import aruco_dictionary, marker_id_for, qr_payload

__all__ = [
    "SCENE_ANCHORED", "FIXED_REGION", "STATE_OVERLAY", "INSERTION_MODES", "AnchorRef", "Anchor2D",
    "CueSpec", "CueContext", "GhostLayer", "Family", "FAMILIES", "register_family", "family",
    "draw", "list_variants", "region_to_pixels", "composite_layers", "foreground_mask",
    "SignSpec", "SIGN_CATEGORIES", "CATEGORY_GROUPS", "render_sign", "sign_for_cue", "qr_payload",
    "marker_id_for", "aruco_dictionary",
]
