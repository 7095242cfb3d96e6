"""RoboFollow: high-entropy table scenes, instruction levels L0-L3, Intent/Execution scores.

* ``tasks``: the 554 evaluation tasks and the training suite (config/robofollow/tasks.json),
  task selection and per-trial seeds;
* ``scenes``: the four scene families' objects, fixtures, layouts and jitter;
* ``scoring``: the stage-wise scorer of every task type and the summary metrics;
* ``entropy``: scene entropy (the paper's Eq. 1).

Pure logic; may import ``embodiment`` and the foundation modules (see ``benchmarks``).
"""
