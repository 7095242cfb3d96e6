"""The evaluator's side of ``record:=true``: it hears the recorder node's statuses, holds an
episode's start until its bag is open, and after the episode waits for the closed bag, so
every results row names its complete bag (or says why there is none).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from vla_bridge import contract as C

BAG_TIMEOUT_S = 15.0  # how long an ended episode waits for its bag to be closed


class BagWatch:
    def __init__(self, enabled: bool):
        self.enabled = bool(enabled)
        self.heard: dict[str, dict] = {}  # episode id -> the recorder's latest status

    def on_status(self, status: dict) -> None:
        self.heard[status["episode"]] = status

    def ready(self, episode_id: str) -> bool:
        """The episode may start: recording is off, or its bag is open."""
        return not self.enabled or episode_id in self.heard

    def missing_node(self, count_publishers: Callable[[str], int]) -> str | None:
        """Why the run cannot go on (the recorder left the graph), else None."""
        if self.enabled and count_publishers(C.TOPIC_RECORDER_STATUS) == 0:
            return "the recorder node is gone (record:=true, nobody publishes recorder status)"
        return None

    def row_fields(self, episode_id: str, run_dir: Path, spin: Callable[[], None],
                   monotonic: Callable[[], float]) -> dict:
        """``bag`` (relative to the run directory) and ``bag_messages`` once the recorder has
        closed the episode's bag; ``bag_error`` when it did not within BAG_TIMEOUT_S."""
        if not self.enabled:
            return {}
        if episode_id not in self.heard:
            return {"bag_error": "the recorder opened no bag for this episode"}
        deadline = monotonic() + BAG_TIMEOUT_S
        while self.heard.get(episode_id, {}).get("kind") != C.RECORDER_RECORDED:
            if monotonic() > deadline:
                self.heard.pop(episode_id, None)
                return {"bag_error": f"the recorder did not close the bag within "
                                     f"{BAG_TIMEOUT_S:.0f} s"}
            spin()
        status = self.heard.pop(episode_id)
        bag = Path(status["bag"])
        try:
            bag = Path(os.path.relpath(bag.resolve(), Path(run_dir).resolve()))
        except ValueError:  # another drive (Windows); keep the absolute path
            pass
        return {"bag": bag.as_posix(), "bag_messages": status["messages"]}
