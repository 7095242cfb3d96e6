"""`vla-bridge dds-cleanup`: remove the Fast DDS shared-memory files that dead processes left in
/dev/shm (vla_bridge/ros/dds_shm.py; the launcher does the same before every graph)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass  # no flags: only files whose owner is gone are removed


def run(args: argparse.Namespace) -> int:
    from vla_bridge.ros.dds_shm import clean_stale_shm

    print(clean_stale_shm().summary())
    return 0
