"""ros.stamp_sync: one observation's parts put together by stamp (the policy node and the cue
overlay both use it)."""
from __future__ import annotations

import pytest

from vla_bridge.ros.stamp_sync import StampSync


def test_parts_of_one_stamp_come_together_and_older_stamps_go_when_one_is_taken():
    sync = StampSync(keep=4)
    sync.add(10, "state", "s10")
    sync.add(20, "images", "a20", camera="cam_high")
    sync.add(20, "state", "s20")
    sync.add(20, "images", "b20", camera="cam_left_wrist")
    assert sync.get(20) == {"images": {"cam_high": "a20", "cam_left_wrist": "b20"}, "state": "s20"}
    sync.add(30, "images", "a30", camera="cam_high")
    assert sync.take(20)["state"] == "s20"
    assert list(sync.parts) == [30]  # 10 went with it (no images: not counted as dropped)
    assert sync.dropped == 0
    with pytest.raises(KeyError):
        sync.take(20)


def test_the_oldest_open_stamp_is_evicted_beyond_keep_and_counted_when_it_held_images():
    sync = StampSync(keep=2)
    sync.add(1, "images", "x", camera="cam_high")
    sync.add(2, "state", "s")
    sync.add(3, "state", "s")  # evicts 1, which held an image
    assert sorted(sync.parts) == [2, 3] and sync.dropped == 1
    sync.add(4, "state", "s")  # evicts 2: no image
    assert sorted(sync.parts) == [3, 4] and sync.dropped == 1
    sync.add(4, "world", "w")  # a known stamp evicts nothing
    assert sorted(sync.parts) == [3, 4]
    sync.clear()
    assert sync.get(3) is None
