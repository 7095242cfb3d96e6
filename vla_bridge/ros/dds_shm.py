"""Remove Fast DDS shared-memory files that dead processes left in /dev/shm.

Every Fast DDS participant maps a shared-memory segment (64 MiB with this project's profile,
config/fastdds_profile.xml) and listens on shared-memory ports. A process that exits normally
unlinks them; one that is killed (SIGKILL, a crash, a test timeout) leaves them behind, and
on a machine that runs many graphs they add up (gigabytes of RAM-backed tmpfs).

Fast DDS marks a file in use by holding an advisory ``flock`` on a companion lock file
(``<name>_el`` or ``<name>_sl``) for as long as its owner lives, so a lock we can take
ourselves means the owner is gone. Only such files are removed, together with what belongs to
them: the segment or port itself and, for a port, its named semaphore
(``sem.<port>_mutex``). Files of live processes, other programs' files and anything younger
than ``min_age_s`` (a participant that is just being created) are left alone.

Pure standard library; the launcher calls ``clean_stale_shm`` before starting a graph and
``vla-bridge dds-cleanup`` does it by hand.
"""
from __future__ import annotations

import fcntl
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

SHM_DIR = Path("/dev/shm")
# fastdds_<16 hex digits>_el: a participant's segment; fastdds_port<N>_el|_sl: a port
_LOCK_FILE = re.compile(r"^fastdds_(?:[0-9a-z]{16}|port\d{1,5})_(?:el|sl)$")


@dataclass
class CleanReport:
    removed: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    in_use: int = 0

    def summary(self) -> str:
        return (f"removed {len(self.removed)} stale Fast DDS shared-memory file(s) "
                f"({self.freed_bytes / 2**20:.0f} MiB) left by dead processes; "
                f"{self.in_use} in use")


def owner_alive(lock_file: Path) -> bool:
    """True when some process holds the lock (or we cannot tell: then keep the files)."""
    try:
        with open(lock_file, "ab") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when fh closes
    except OSError:
        return True
    return False


def _companions(lock_file: Path) -> list[Path]:
    """The files that belong to a lock file: itself, its segment/port, a port's semaphore."""
    base = lock_file.name[:-3]
    files = [lock_file, lock_file.with_name(base)]
    if base.startswith("fastdds_port"):
        files.append(lock_file.with_name(f"sem.{base}_mutex"))
    return files


def clean_stale_shm(shm_dir: str | Path = SHM_DIR, min_age_s: float = 10.0) -> CleanReport:
    """Remove the Fast DDS files of processes that no longer exist (see the module doc)."""
    report = CleanReport()
    shm_dir = Path(shm_dir)
    try:
        names = sorted(os.listdir(shm_dir))
    except OSError:
        return report
    now = time.time()
    for name in names:
        lock_file = shm_dir / name
        if not _LOCK_FILE.match(name):
            continue
        try:
            if now - lock_file.stat().st_mtime < min_age_s:
                continue
        except OSError:
            continue
        if owner_alive(lock_file):
            report.in_use += 1
            continue
        for path in _companions(lock_file):
            try:
                size = path.stat().st_size
                path.unlink()
            except OSError:
                continue
            report.removed.append(path.name)
            report.freed_bytes += size
    return report
