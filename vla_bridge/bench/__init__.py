"""Benchmarks that print figures (never asserted in unit tests).

* ``graph``: ``vla-bridge bench overhead|throughput`` -- the node graph's cost against one
  process, and oracle trials per minute;
* ``policy``: per-call policy latency through the graph;
* ``cues``: cue overlay timings and the example sheets of ``docs/cues/``.

May import anything in the package (this is the top layer, beside ``cli``).
"""
