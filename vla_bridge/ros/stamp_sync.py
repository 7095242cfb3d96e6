"""One observation's parts put back together by their stamp.

A sim or robot node sends an observation as several messages with one header stamp: the joint
state, one image per camera, the world state. A reader (the policy node, the evaluator's cue
overlay) collects them per stamp and uses a stamp once everything it needs has arrived; what
is older than a used stamp can never be needed again. Pure: keys are stamps in nanoseconds
(``messages.stamp_ns``), values whatever the reader keeps.
"""
from __future__ import annotations


class StampSync:
    """Parts per stamp: ``add`` one, ``take`` a complete stamp (and drop the older ones).

    At most ``keep`` stamps are open; a new one beyond that evicts the oldest. ``dropped``
    counts the stamps that went unused and held images (evicted, or older than a taken one).
    """

    def __init__(self, keep: int):
        self.keep = int(keep)
        self.parts: dict[int, dict] = {}
        self.dropped = 0

    def add(self, key: int, field: str, value, camera: str | None = None) -> dict:
        """Keep ``value`` as the stamp's ``field`` (``camera``: as that camera's image, under
        "images"); the stamp's parts so far."""
        part = self.parts.get(key)
        if part is None:
            if len(self.parts) >= self.keep:
                self._drop(min(self.parts))
            part = self.parts[key] = {"images": {}}
        if camera is not None:
            part["images"][camera] = value
        else:
            part[field] = value
        return part

    def get(self, key: int) -> dict | None:
        return self.parts.get(key)

    def take(self, key: int) -> dict:
        """The stamp's parts, removed with every older stamp (nothing older is needed now)."""
        part = self.parts.pop(key)
        for older in [k for k in self.parts if k < key]:
            self._drop(older)
        return part

    def clear(self) -> None:
        self.parts = {}

    def _drop(self, key: int) -> None:
        if self.parts.pop(key)["images"]:
            self.dropped += 1
