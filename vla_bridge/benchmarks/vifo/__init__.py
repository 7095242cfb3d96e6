"""LIBERO-VIFO visual cue library: parse a task, build a cue, insert it into observations.

Pure logic (numpy / OpenCV), no rclpy, no simulator; may import ``embodiment`` and
``benchmarks.robofollow`` (cues are grounded on RoboFollow's tasks and scenes)::

    from vla_bridge.benchmarks.vifo import parse, ground, make_cue, insert
    task = ground(parse("Use your right arm to pick up the block in front of the red cylinder "
                        "and place it behind the green ball."), backend.world_state())
    cue = make_cue(task, "F2", "curved_path", world=backend.world_state())
    frame = insert(backend.render("cam_high"), cue, backend.world_state(),
                   backend.camera_model("cam_high"))

Modules: ``projection`` (world -> pixel, MuJoCo convention), ``families`` (F1-F8 and
``draw``), ``instructions`` (reading the task: ``instructions.referring``, the shared vocabulary
and the object-reference grammar: colours, nouns, relations, locators such as "between A and
B", conditions; ``instructions.parser``, instruction -> steps with e_src / e_tgt / r_task, arm,
route, orientation, conditionals, sequences; ``instructions.grounding``, parsed task + world
state -> object names, ``layout_world``), ``insertion`` (scene-anchored,
fixed-region and simulator-state overlay; protocol hooks), ``protocols`` (closed-loop
protocols and their metrics), ``scene_cards`` (scene-placed cue cards, re-exported by
``protocols``), ``replay`` (rebuild an episode's cue).
"""
from vla_bridge.benchmarks.vifo.families import (FAMILIES, FIXED_REGION, SCENE_ANCHORED,
                                                 SIGN_CATEGORIES, STATE_OVERLAY, Anchor2D,
                                                 AnchorRef, CueContext, CueSpec, GhostLayer,
                                                 SignSpec, composite_layers, draw, family,
                                                 foreground_mask, list_variants, region_to_pixels,
                                                 render_sign)
from vla_bridge.benchmarks.vifo.insertion import (AUTHORIZED_PROMPT, PROTOCOLS, VQA_STAGES,
                                                  CueInserter, EpisodeRecord, full_chain_accuracy,
                                                  ghost_layers, insert, make_cue, pixels_to_region,
                                                  project_anchor, project_anchors,
                                                  protocol_language, protocol_metrics)
from vla_bridge.benchmarks.vifo.instructions.grounding import GroundedTask, GroundingError, ground
from vla_bridge.benchmarks.vifo.instructions.parser import ParsedTask, ParseError, parse
from vla_bridge.benchmarks.vifo.projection import (Projection, intrinsics, project_point,
                                                   project_points)

__all__ = [
    "FAMILIES", "FIXED_REGION", "SCENE_ANCHORED", "STATE_OVERLAY", "SIGN_CATEGORIES", "Anchor2D",
    "AnchorRef", "CueContext", "CueSpec", "GhostLayer", "SignSpec", "composite_layers", "draw",
    "family", "foreground_mask", "list_variants", "region_to_pixels", "render_sign",
    "AUTHORIZED_PROMPT", "PROTOCOLS", "CueInserter", "EpisodeRecord", "ghost_layers", "insert",
    "make_cue", "pixels_to_region", "project_anchor", "project_anchors", "protocol_language",
    "protocol_metrics", "VQA_STAGES", "full_chain_accuracy", "GroundedTask",
    "GroundingError", "ParsedTask", "ParseError", "ground", "parse", "Projection", "intrinsics",
    "project_point", "project_points",
]
