"""The ROS domain lock files that keep concurrent test sessions apart (test/conftest.py claims
one domain for the session; a test that needs more claims them the same way)."""
from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path


def claim_domain(domain: int):
    """The held lock file of ROS domain ``domain`` (close it to let the domain go), or None
    when another test session holds it."""
    fh = open(Path(tempfile.gettempdir()) / f"vla_bridge_test_domain_{domain}.lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return None
    return fh
