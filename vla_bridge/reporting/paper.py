"""The paper's Table 1 beside our numbers: loading ``config/robofollow/paper_table1.json``,
finding a model by a loose spelling, its cells per scene/level, and where they fall outside
our intervals."""
from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from vla_bridge.reporting.common import METRICS, ReportError, group_key

PAPER_FILE = "robofollow/paper_table1.json"
DEFAULT_PAPER_MODEL = "π₀.₅"
EMPTY_LANGUAGE_MODEL = "π₀.₅ · empty language"  # the paper's control row for π₀.₅


def load_paper(path: str | Path | None = None) -> dict:
    """config/robofollow/paper_table1.json (written by tools/import_paper_table.py)."""
    if path is None:
        from vla_bridge.paths import config_path
        path = config_path(PAPER_FILE)
    return json.loads(Path(path).read_text(encoding="utf-8"))


def model_key(name: str) -> str:
    """Loose spelling of a model name: 'pi05', 'PI0.5', 'π₀.₅' all give 'pi05'."""
    text = unicodedata.normalize("NFKC", name).lower().replace("π", "pi")
    return "".join(ch for ch in text if ch.isalnum())


def paper_model(paper: dict, name: str) -> dict:
    """The paper entry of model `name` (exact, or by model_key); ReportError lists the models."""
    models = paper["models"]
    for entry in models:
        if entry["model"] == name:
            return entry
    matches = [e for e in models if model_key(e["model"]) == model_key(name)]
    if len(matches) == 1:
        return matches[0]
    listing = ", ".join(repr(e["model"]) for e in models)
    raise ReportError(f"no model {name!r} in the paper's Table 1; models: {listing} "
                      "(ASCII spellings such as pi05 or 'pi05 empty language' work too)")


def paper_cells(entry: dict) -> dict[str, dict[str, float]]:
    """{"scene1/L0": {"IS": 99.1, "ES": 98.5, "CR": 98.8}, ...} (percent)."""
    return {group_key(scene, level): dict(cell)
            for scene, levels in entry["results"].items() for level, cell in levels.items()}


def beside_paper(table: dict[str, dict], entry: dict) -> dict:
    """The paper's cells for the groups we have, and which paper values lie outside our CI."""
    cells = paper_cells(entry)
    out: dict[str, Any] = {"model": entry["model"], "family": entry["family"], "cells": {},
                           "outside_ci": {}, "delta": {}}
    for group, ours in table.items():
        if group not in cells:
            continue
        paper = cells[group]
        out["cells"][group] = paper
        out["delta"][group] = {m: round(ours[m]["value"] - paper[m], 4) for m in METRICS}
        # None: we have no interval (fewer than 2 tasks)
        out["outside_ci"][group] = None if ours["IS"]["lo"] is None else [
            m for m in METRICS if not ours[m]["lo"] - 1e-9 <= paper[m] <= ours[m]["hi"] + 1e-9]
    return out
