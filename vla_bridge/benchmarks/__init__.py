"""The benchmarks vla_bridge serves: task suites, scenes, scoring rules and visual cues.

* ``robofollow``: RoboFollow's suites, scene layouts, stage-wise scoring and scene entropy;
* ``intact``: INT-ACT's intention / grasp / success / wrong-object metrics;
* ``vifo``: the LIBERO-VIFO cue library (eight families, three insertion modes, protocols).

Pure logic (numpy, OpenCV): may import ``vla_bridge.contract``, ``vla_bridge.paths``,
``embodiment`` and each other; never rclpy, ``ros``, a node folder or ``evaluation``.
"""
