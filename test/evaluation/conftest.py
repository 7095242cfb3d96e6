"""Fixtures of the evaluation tests: one MuJoCo sim session per module."""
from __future__ import annotations

from support.oracle_episodes import session  # noqa: F401  (a fixture)
