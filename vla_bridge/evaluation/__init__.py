"""Running episodes and reporting them.

* ``run_dir``: the run directory (run.json, results.jsonl, summary.json, latency.json),
  resume and the results rows; ``provenance``: what produced a run (policy, checkpoint
  fingerprint, hardware, cue protocol, seed, budget, git commit) and the resume check;
* ``episodes``: the evaluator's episode state machine (``SuiteRun``: begin / ready / start /
  done, scoring, timeouts, resume), pure and driven by plain calls, with subscribers for
  latency and the cue overlay; ``evaluator_node``: its ROS shell;
  ``cue_run`` / ``cue_overlay`` / ``cue_metrics``: its visual-cue protocol, overlay and
  LIBERO-VIFO tables;
* ``bags``: one rosbag2 bag (MCAP) per episode; ``recorder_node``: the node that writes
  them (record:=true); ``bag_watch``: the evaluator's wait for each episode's bag;
* ``direct``: one episode in-process (no DDS), for benchmarks and tests;
* ``report/``: report.md / report.json of a run directory: tables, paper rows, sections,
  plots, replay videos;
* ``vqa/``: LIBERO-VIFO Part I-A (VQA backends, instances, the resumable runner);
* ``operator_console`` / ``pilot_report``: real pilot trials, scored with the operator;
* ``progress``: progress lines for long work.

May import every layer below it: the foundation modules, ``embodiment``, ``ros``,
``benchmarks`` and the node folders; never ``cli`` or ``bench``.
"""
