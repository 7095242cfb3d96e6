"""A full disk without root or a tmpfs: a byte quota at the system-call layer for the files and
folders created under one directory (test/data/test_recorder_full_disk.py,
test_lerobot_export_damage.py).

``full_disk(monkeypatch)`` patches ``open`` (builtins, io: pathlib and PIL write through them)
and ``os.mkdir``: a file opened for writing under the root is a FileIO whose ``write()``
writes what still fits and then fails with ENOSPC, as a full file system does; a new folder
costs a 4 kB block. Python's buffering and the libraries above it (rosbags' MCAP writer,
PIL's PNG encoder) run unchanged; writes from native code (pyarrow, ffmpeg) are not counted.
"""
from __future__ import annotations

import builtins
import errno
import io
import os
import pathlib

BLOCK = 4096


class Disk:
    """``free`` bytes left for the files under ``root`` whose name matches ``names``."""

    def __init__(self, root, free: int, names: str = "*"):
        self.root, self.free, self.names = os.path.abspath(os.fspath(root)), free, names
        self.refused = 0

    def covers(self, path) -> bool:
        if isinstance(path, int):
            return False
        path = os.path.abspath(os.fsdecode(os.fspath(path)))
        return path.startswith(self.root + os.sep) and pathlib.PurePath(path).match(self.names)

    def take(self, n: int) -> int:
        """How many of ``n`` bytes fit; ENOSPC when none does."""
        if n and self.free <= 0:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fit = min(n, self.free)
        self.free -= fit
        return fit


class QuotaFileIO(io.FileIO):
    disk: Disk

    def write(self, b) -> int:
        data = memoryview(b).cast("B")
        return super().write(data[:self.disk.take(len(data))])


def full_disk(monkeypatch):
    """``install(root, free, names="*") -> Disk``: from then on (for the test), the writes
    under ``root`` share ``free`` bytes."""
    real_open, real_mkdir = builtins.open, os.mkdir
    disks: list[Disk] = []

    def disk_of(path):
        return next((d for d in disks if d.covers(path)), None)

    def open_(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None,
              closefd=True, opener=None):
        disk = disk_of(file)
        if disk is None or not set(mode) & set("wxa+") or opener is not None:
            return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        raw = type("Quota", (QuotaFileIO,), {"disk": disk})(
            file, mode.replace("b", "").replace("t", ""), closefd)
        if buffering == 0:
            return raw
        buffered = (io.BufferedRandom if "+" in mode else io.BufferedWriter)(raw)
        if "b" in mode:
            return buffered
        return io.TextIOWrapper(buffered, encoding or "utf-8", errors, newline)

    def mkdir(path, mode=0o777, *, dir_fd=None):
        disk = disk_of(path) if dir_fd is None else None
        if disk is not None and not os.path.exists(path):
            disk.take(BLOCK)  # a folder needs a block: ENOSPC on a full disk
        return real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)

    def install(root, free: int, names: str = "*") -> Disk:
        disks.append(Disk(root, free, names))
        return disks[-1]
    return install
