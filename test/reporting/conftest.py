"""Fixtures of the reporting tests: one MuJoCo sim session per module and one real oracle
episode saved as the evaluator saves it (support/oracle_episodes.py)."""
from __future__ import annotations

from support.oracle_episodes import saved_oracle_episode, session  # noqa: F401  (fixtures)
