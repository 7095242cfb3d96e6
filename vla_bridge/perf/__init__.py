"""Performance benchmarks that print figures (never asserted in unit tests).

* ``graph``: ``vla-bridge bench overhead|throughput|recording`` -- the node graph's cost
  against one process, oracle trials per minute, and what recording costs;
* ``policy``: per-call policy latency through the graph;
* ``campaign``: a campaign's speed-up over Ray workers;
* ``cues``: cue overlay timings and the example sheets of ``docs/cues/``;
* ``sapien``: SAPIEN against MuJoCo (speed, the cross-simulator table, a figure);
* ``libero`` / ``libero_vifo``: the LIBERO node's speed and LIBERO-VIFO's protocols.

May import anything in the package (this is the top layer, beside ``cli`` and ``campaign``).
"""
