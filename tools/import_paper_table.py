#!/usr/bin/env python3
"""Restate the RoboFollow paper's Table 1 (IS / ES / CR per model, scene and level, percent)
in the project's own JSON format: ``config/robofollow/paper_table1.json``.

Input: ``results_table1.csv`` of the extracted spec folder (default ``../shared/robofollow``
next to the repo root): columns model, family, scene (S1..S4), level (L0..L3),
intent_score, execution_score, completion_rate; CRLF line endings, UTF-8 model names.

Output (deterministic: models in the CSV's order, scenes and levels sorted, fixed
indentation, no timestamps)::

    {"format": "...", "source": "...", "units": "percent",
     "scenes": {"S1": "scene1", ...}, "levels": ["L0", ...],
     "models": [{"model": "π₀.₅", "family": "VLA",
                 "results": {"scene1": {"L0": {"IS": 99.1, "ES": 98.5, "CR": 98.8}, ...}, ...}},
                ...]}

Scenes are renamed to the project's names (S1 -> scene1). Every model must have all 16
scene/level cells with the three figures in [0, 100]; anything else is an error.

Usage: python tools/import_paper_table.py [CSV] [--out PATH] [--check]
  --check   compare with the existing output instead of writing it (exit 1 on a difference)
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "robofollow" / "results_table1.csv"
DEFAULT_OUT = REPO_ROOT / "config" / "robofollow" / "paper_table1.json"

SCENE_NAMES = {"S1": "scene1", "S2": "scene2", "S3": "scene3", "S4": "scene4"}
LEVELS = ("L0", "L1", "L2", "L3")
COLUMNS = {"intent_score": "IS", "execution_score": "ES", "completion_rate": "CR"}
HEADER = ("model", "family", "scene", "level", *COLUMNS)

FORMAT = ("RoboFollow paper, Table 1: per model (in the paper's order) and per scene/level the "
          "mean Intent Score (IS), mean Execution Score (ES) and Completion Rate (CR, task-macro), "
          "in percent, as published. Scenes use the project's names (paper S1 = scene1). "
          "'family' is the paper's grouping (VLA, WAM, Control); the Control row is pi0.5 evaluated "
          "with the instruction withheld (empty language). Written by tools/import_paper_table.py; "
          "do not edit by hand.")
SOURCE = ("AutoLab-SAI-SJTU/RoboFollow docs/assets/data/results.csv (commit a867718e), "
          "via ../shared/robofollow/results_table1.csv")


def parse_table(text: str) -> dict:
    """The CSV text -> the JSON document (see the module docstring)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = [r for r in reader if r]
    if not rows or tuple(h.strip() for h in rows[0]) != HEADER:
        raise ValueError(f"unexpected header {rows[0] if rows else None!r}; expected {','.join(HEADER)}")
    models: dict[str, dict] = {}
    for lineno, row in enumerate(rows[1:], start=2):
        if len(row) != len(HEADER):
            raise ValueError(f"line {lineno}: {len(row)} fields, expected {len(HEADER)}: {row!r}")
        model, family, scene, level = (v.strip() for v in row[:4])
        if scene not in SCENE_NAMES:
            raise ValueError(f"line {lineno}: unknown scene {scene!r}")
        if level not in LEVELS:
            raise ValueError(f"line {lineno}: unknown level {level!r}")
        entry = models.setdefault(model, {"model": model, "family": family, "results": {}})
        if entry["family"] != family:
            raise ValueError(f"line {lineno}: model {model!r} listed under families "
                             f"{entry['family']!r} and {family!r}")
        cells = entry["results"].setdefault(SCENE_NAMES[scene], {})
        if level in cells:
            raise ValueError(f"line {lineno}: duplicate cell {model!r} {scene} {level}")
        values = {}
        for column, short in COLUMNS.items():
            value = float(row[HEADER.index(column)])
            if not 0.0 <= value <= 100.0:
                raise ValueError(f"line {lineno}: {column} {value} is not a percentage")
            values[short] = value
        cells[level] = values
    for entry in models.values():
        missing = [f"{s}/{lv}" for s in SCENE_NAMES.values() for lv in LEVELS
                   if lv not in entry["results"].get(s, {})]
        if missing:
            raise ValueError(f"model {entry['model']!r} lacks cells {missing}")
        entry["results"] = {s: {lv: entry["results"][s][lv] for lv in LEVELS}
                            for s in sorted(entry["results"])}
    return {"format": FORMAT, "source": SOURCE, "units": "percent",
            "scenes": dict(SCENE_NAMES), "levels": list(LEVELS),
            "models": list(models.values())}


def dump(document: dict) -> str:
    """Compact but readable: one line per scene of one model."""
    lines = ["{"]
    for key in ("format", "source", "units", "scenes", "levels"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(document[key], ensure_ascii=False)},")
    lines.append('  "models": [')
    for i, entry in enumerate(document["models"]):
        lines.append(f"    {{\"model\": {json.dumps(entry['model'], ensure_ascii=False)}, "
                     f"\"family\": {json.dumps(entry['family'])}, \"results\": {{")
        scenes = list(entry["results"].items())
        for j, (scene, cells) in enumerate(scenes):
            comma = "," if j < len(scenes) - 1 else ""
            lines.append(f"      {json.dumps(scene)}: {json.dumps(cells)}{comma}")
        lines.append("    }}" + ("," if i < len(document["models"]) - 1 else ""))
    lines.append("  ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if json.loads(text) != document:  # the hand layout must not change the data
        raise AssertionError("dump() does not round-trip")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=str(DEFAULT_SOURCE), help="results_table1.csv")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--check", action="store_true",
                        help="compare with the existing output instead of writing it")
    args = parser.parse_args(argv)
    source = Path(args.source)
    if not source.is_file():
        print(f"error: {source} not found", file=sys.stderr)
        return 2
    text = dump(parse_table(source.read_bytes().decode("utf-8")))
    out = Path(args.out)
    n_models = text.count('"model":')
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{out}: {'up to date' if same else 'DIFFERS from ' + str(source)}")
        return 0 if same else 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: {n_models} models x 4 scenes x 4 levels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
