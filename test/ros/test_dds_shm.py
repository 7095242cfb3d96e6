"""vla_bridge.ros.dds_shm: only the Fast DDS files of dead processes are removed."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

from vla_bridge.ros.dds_shm import clean_stale_shm


def _touch(path, size=0, age_s=60.0):
    path.write_bytes(b"\0" * size)
    old = time.time() - age_s
    os.utime(path, (old, old))


def test_removes_dead_segments_and_ports_keeps_live_young_and_foreign_files(tmp_path):
    dead, live, young = "fastdds_0123456789abcdef", "fastdds_fedcba9876543210", "fastdds_00000000000000aa"
    for name in (dead, live, young):
        _touch(tmp_path / name, size=4096, age_s=5.0 if name == young else 60.0)
        _touch(tmp_path / f"{name}_el", age_s=5.0 if name == young else 60.0)
    for name in ("fastdds_port7411", "fastdds_port7411_el", "sem.fastdds_port7411_mutex",
                 "fastdds_port7413", "sem.fastdds_port7413_mutex", "other_program_segment"):
        _touch(tmp_path / name, size=0 if name.endswith("_el") else 64)
    # a live owner: another process holds the flock on the live segment's lock file
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         f"fh = open({str(tmp_path / (live + '_el'))!r}, 'ab')\n"
         "fcntl.flock(fh, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        report = clean_stale_shm(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    left = sorted(os.listdir(tmp_path))
    assert dead not in left and f"{dead}_el" not in left
    assert "fastdds_port7411" not in left and "sem.fastdds_port7411_mutex" not in left
    assert {live, f"{live}_el", young, f"{young}_el", "other_program_segment",
            "fastdds_port7413", "sem.fastdds_port7413_mutex"} <= set(left)  # no lock file: unknown
    assert report.freed_bytes == 4096 + 2 * 64 and report.in_use == 1
    assert "removed 5 stale" in report.summary()
    # the lock we tested with is released: the live owner's file can be locked again later
    with open(tmp_path / f"{live}_el", "ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_missing_directory_is_nothing_to_clean(tmp_path):
    report = clean_stale_shm(tmp_path / "absent")
    assert report.removed == [] and report.in_use == 0
