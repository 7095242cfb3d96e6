"""A ROS 2 params file's shape, checked before any node reads it (one-line errors): YAML
mapping node names (or namespaces of them) to ``ros__parameters`` mappings, every list of one
scalar type. Used by the own launcher (vla_bridge.ros.launcher) before it starts a graph."""
from __future__ import annotations

from pathlib import Path

import yaml


def check_params_file(path: Path) -> None:
    """ValueError (one line) unless ``path`` is a ROS 2 params file: YAML mapping node names
    (or namespaces of them) to ``ros__parameters`` mappings, every list of one scalar type."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ValueError(f"params file {path}: not valid YAML: {problem}{where}") from None
    if not isinstance(data, dict) or not data:
        raise ValueError(f"params file {path}: expected a mapping of node names to "
                         f"'ros__parameters', got {type(data).__name__}")
    for name, entry in data.items():
        problem = _params_entry_problem(entry)
        if problem:
            raise ValueError(f"params file {path}: node {name!r}: {problem}")


def _params_entry_problem(entry, depth: int = 0) -> str | None:
    """What is wrong with a node (or namespace) entry of a params file, or None."""
    if isinstance(entry, dict) and "ros__parameters" in entry:
        return _parameters_problem(entry["ros__parameters"], "ros__parameters")
    if not isinstance(entry, dict) or not entry or depth >= 8:
        return "no 'ros__parameters' mapping"
    for value in entry.values():
        problem = _params_entry_problem(value, depth + 1)
        if problem:
            return problem
    return None


def _parameters_problem(params, where: str) -> str | None:
    if not isinstance(params, dict):
        return f"{where} must be a mapping, got {type(params).__name__}"
    for key, value in params.items():
        if isinstance(value, dict):
            problem = _parameters_problem(value, f"{where}.{key}")
        elif isinstance(value, list) and len({type(v) for v in value}) > 1:
            problem = f"{where}.{key}: a list must hold values of one type, got {value!r}"
        elif value is None:
            problem = f"{where}.{key} has no value"
        else:
            problem = None
        if problem:
            return problem
    return None
