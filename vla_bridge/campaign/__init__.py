"""Campaigns: one run's planned trials sharded over Ray workers (`vla-bridge campaign`).

* ``plan``: the run's trials (the evaluator's own planning) cut into units of whole tasks,
  and the launch arguments of the graph that runs one unit (pure, no Ray, no rclpy);
  ``libero_plan`` the same for libero_sim (units of (suite, task) pairs, split by
  initial-state ranges);
* ``ledger``: the campaign's run directory: unit rows merged into ``results.jsonl`` exactly
  once (fsync'ed, as the evaluator writes them), ``campaign.json`` with every unit's attempts
  and failure reasons, resume (pure, no Ray);
* ``workers``: the Ray actors: a graph worker runs one unit's node graph in a subprocess with
  its own ROS domain; a policy server actor runs `vla-bridge serve` (``num_gpus``);
* ``driver``: the scheduling loop: dispatch, retries of units whose worker or graph died,
  one progress bar, the final summary.

A tools-layer package (beside ``cli`` and ``bench``): may import anything in the package; it
runs graphs as subprocesses and never imports rclpy itself.
"""
