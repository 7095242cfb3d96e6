"""Which results rows count in a benchmark's scores (pure logic on dicts, for every benchmark).

An episode failed by the infrastructure rather than by the policy has its row marked
``"failure": "infrastructure"``, the reason in the row's ``error`` (or LIBERO's ``reason``).
The evaluator (``evaluation.episodes``) marks these causes:

* the launcher restarted the policy node while the episode ran (its process died);
* a wait that timed out while it was not the policy's turn: the sim did not answer the
  begin, the sim stopped advancing, or the episode's recorded frames never arrived.

Not these: a node that reported an error (a policy that answered garbage, a chunk the sim
rejected: the policy's own doing, or a setting that fails every time), and a timeout while
the policy node was alive but silent on its turn (a hung backend is the policy's failure).

Such a row says nothing about the policy, so the scores leave it out (``counted``) and a
resume runs its trial again (``evaluation.run_dir``: ``finished_keys``). Once: the second
infrastructure failure of the same trial is kept *and counted* (``"counted": true``; it
scores zero like any failed episode). A failure that repeats on the same trial (same scene,
same seed) is most likely the trial's own doing -- a policy that crashes its node on that
observation -- and excluding it for good would flatter the policy and leave the run forever
incomplete.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["INFRASTRUCTURE", "INFRASTRUCTURE_RERUNS", "is_infrastructure_failure", "excluded",
           "counted"]

#: the ``failure`` of a row failed by the infrastructure
INFRASTRUCTURE = "infrastructure"
#: how often a trial failed by the infrastructure is run again before its failure counts
INFRASTRUCTURE_RERUNS = 1


def is_infrastructure_failure(row: Any) -> bool:
    """A row (a dict; other objects never are) of an episode the infrastructure failed."""
    return isinstance(row, Mapping) and row.get("failure") == INFRASTRUCTURE


def excluded(row: Any) -> bool:
    """Whether a row is left out of the scores: an infrastructure failure not yet counted."""
    return is_infrastructure_failure(row) and not row.get("counted")


def counted(rows: Iterable[Any]) -> list:
    """The rows the scores count (every row but the ``excluded`` ones), in order."""
    return [row for row in rows if not excluded(row)]
