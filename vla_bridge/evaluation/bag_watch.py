"""The evaluator's side of ``record:=true``: it hears the recorder node's statuses, holds an
episode's start until its bag is open, and after the episode waits for the closed bag, so
every results row names its complete bag (or says why there is none, ``bag_error``).

The recorder answers each episode's bag with one of (besides ``recording``, the bag is open):

* ``recorded``: complete (the episode ended normally): the row gets ``bag`` and
  ``bag_messages``;
* ``incomplete``: the episode did not end normally; the bag is kept under ``bags/.partial``,
  not filed: the row gets ``bag_error`` with the reason and where the bag is;
* ``failed``: the recorder could not write the bag (a full disk) and records nothing more: the
  row gets ``bag_error`` with the recorder's reason (the OSError and its errno), and the run
  stops with it (``missing_node``) before the next episode, as when the recorder is gone. A
  ``failed`` answer to a begin (no bag was opened) stops the run at once.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from vla_bridge import contract as C

BAG_TIMEOUT_S = 15.0  # how long an ended episode waits for its bag to be closed

RECORDER_INCOMPLETE, RECORDER_FAILED = C.RECORDER_INCOMPLETE, C.RECORDER_FAILED
_CLOSED = (C.RECORDER_RECORDED, RECORDER_INCOMPLETE, RECORDER_FAILED)


class BagWatch:
    def __init__(self, enabled: bool):
        self.enabled = bool(enabled)
        self.heard: dict[str, dict] = {}  # episode id -> the recorder's latest status
        self.failure: str | None = None  # the recorder cannot write bags: the run stops

    def on_status(self, status: dict) -> None:
        episode = status["episode"]
        if status["kind"] == RECORDER_FAILED and self.failure is None:
            if self.heard.get(episode, {}).get("kind") != C.RECORDER_RECORDING:
                self.failure = status.get("reason") or "the recorder failed"  # no bag open
            # else: the episode runs on without its bag; its row says so, then the run stops
        self.heard[episode] = status

    def ready(self, episode_id: str) -> bool:
        """The episode may start: recording is off, or the recorder answered its begin."""
        return not self.enabled or episode_id in self.heard

    def missing_node(self, count_publishers: Callable[[str], int]) -> str | None:
        """Why the run cannot go on (the recorder left the graph, or cannot write), else
        None."""
        if not self.enabled:
            return None
        if self.failure is not None:
            return f"the recorder cannot record (record:=true): {self.failure}"
        if count_publishers(C.TOPIC_RECORDER_STATUS) == 0:
            return "the recorder node is gone (record:=true, nobody publishes recorder status)"
        return None

    def row_fields(self, episode_id: str, run_dir: Path, spin: Callable[[], None],
                   monotonic: Callable[[], float]) -> dict:
        """``bag`` (relative to the run directory) and ``bag_messages`` once the recorder has
        closed the episode's bag complete; ``bag_error`` when the bag is incomplete, could not
        be written, or was not closed within BAG_TIMEOUT_S."""
        if not self.enabled:
            return {}
        if episode_id not in self.heard:
            why = "the recorder opened no bag for this episode"
            return {"bag_error": why + (f" ({self.failure})" if self.failure else "")}
        deadline = monotonic() + BAG_TIMEOUT_S
        while self.heard.get(episode_id, {}).get("kind") not in _CLOSED:
            if monotonic() > deadline:
                self.heard.pop(episode_id, None)
                return {"bag_error": f"the recorder did not close the bag within "
                                     f"{BAG_TIMEOUT_S:.0f} s"}
            spin()
        status = self.heard.pop(episode_id)
        if status["kind"] == RECORDER_FAILED:
            self.failure = self.failure or status["reason"]
            return {"bag_error": status["reason"]}
        bag = _relative(status["bag"], run_dir)
        if status["kind"] == RECORDER_INCOMPLETE:
            return {"bag_error": f"bag incomplete: {status['reason']} (kept as {bag})"}
        return {"bag": bag, "bag_messages": status["messages"]}


def _relative(path: str, run_dir: Path) -> str:
    bag = Path(path)
    try:
        bag = Path(os.path.relpath(bag.resolve(), Path(run_dir).resolve()))
    except ValueError:  # another drive (Windows); keep the absolute path
        pass
    return bag.as_posix()
