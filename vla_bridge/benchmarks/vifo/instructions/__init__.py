"""Reading a task instruction: words -> parsed steps -> the scene's objects (LIBERO-VIFO App. C).

The first half of the cue pipeline (``parse`` then ``ground``; ``insertion.make_cue`` takes the
grounded task from here): ``referring`` (the shared vocabulary and the object-reference grammar:
colours, nouns, relations, locators such as "between A and B", conditions), ``parser``
(instruction -> steps with e_src / e_tgt / r_task, arm, route, orientation; conditionals,
sequences) and ``grounding`` (parsed task + world state -> object names; ``layout_world``,
``coverage_report``). Language and geometry only: no drawing, no families; may import
``embodiment`` and ``benchmarks.robofollow`` (RoboFollow's scenes and task registry).
"""
