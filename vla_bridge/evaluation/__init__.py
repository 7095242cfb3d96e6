"""The run engine: plan the trials, run each episode through the graph, keep the results.

* ``run_dir``: the run directory (run.json, results.jsonl, summary.json, latency.json),
  resume and the results rows; ``provenance``: what produced a run (policy, checkpoint
  fingerprint, hardware, cue protocol, seed, budget, git commit) and the resume check;
* ``episodes``: the one episode engine (``SuiteRun``: begin / ready / start / done, timeouts,
  node deaths, resume), pure and driven by plain calls, with subscribers for latency and the
  cue overlay; ``evaluator_node``: its ROS shell, for every benchmark;
* ``benchmark``: the protocol a benchmark implements (plan, begin fields, score, summarise,
  report) and the registry; ``robofollow_run`` (RoboFollow's suites, cue protocols and safety
  scenes) and ``libero_run`` (LIBERO's suites and LIBERO-VIFO) implement it;
* ``cues/``: ``run`` / ``overlay`` / ``metrics``, the visual-cue protocol, overlay and
  LIBERO-VIFO tables; ``plan_rollout``, the oracle's plan on a MuJoCo copy (F3 ghosts, F4
  goal images);
* ``charged_latency``: policy latency charged in sim time; ``node_watch`` / ``bag_watch``:
  the launcher's news of nodes, and the wait for each episode's bag;
* ``direct``: one episode in-process (no DDS), for benchmarks and tests;
* ``progress``: progress lines for long work.

May import every layer below it: the foundation modules, ``embodiment``, ``ros``,
``benchmarks`` and the node folders; never ``data``, ``vqa``, ``reporting`` or the tools
(``cli``, ``perf``, ``campaign``).
"""
