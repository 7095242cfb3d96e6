"""The benchmarks vla_bridge serves: task suites, scenes, scoring rules and visual cues.

* ``robofollow``: RoboFollow's suites, scene layouts, stage-wise scoring and scene entropy;
* ``intact``: INT-ACT's intention / grasp / success / wrong-object metrics;
* ``vifo``: the LIBERO-VIFO cue library (eight families, three insertion modes, protocols);
* ``perturbations``: perturbation axes of our own for any benchmark (camera, lighting,
  texture, image noise and blur, initial joints, object jitter), seeded and graded, and
  ``perturbation_cards``: the operator's card of the same draws for a real trial.

Pure logic (numpy, OpenCV): may import ``vla_bridge.contract``, ``vla_bridge.paths``,
``embodiment`` and each other; never rclpy, ``ros``, a node folder or ``evaluation``.
"""
