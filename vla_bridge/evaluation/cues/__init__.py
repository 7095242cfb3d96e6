"""The engine's visual-cue protocols (LIBERO-VIFO on every benchmark): ``run`` (``CueRun``:
a trial's cue, instruction and roles), ``overlay`` (the evaluator's overlay: raw images in,
cued images out), ``metrics`` (cue_metrics.json: following rates per family and protocol) and
``plan_rollout`` (the oracle's planned path for trajectory cues)."""
