"""INT-ACT (From Intention to Execution): intention, grasp, success and wrong-object metrics.

``metrics`` computes them from the same episode record the RoboFollow scorer reads, on
RoboFollow's tasks, each against one task (a cue-protocol row has a language and a cue task:
``row_intact``). Pure logic; may import ``embodiment`` and ``benchmarks.robofollow``.
"""
