"""Run directories written by hand for the reporting tests: run.json and results.jsonl."""
from __future__ import annotations

import json
from pathlib import Path


def write_run(path: Path, rows: list[dict], arguments: dict | None = None) -> Path:
    """A finished run directory at `path` holding `rows` (scene1 unless `arguments` say)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(json.dumps({"arguments": arguments or {"scene": "scene1"},
                                               "status": "finished"}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
