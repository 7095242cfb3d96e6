"""Which task a results row's metrics refer to: the language task and the cue task.

Under the ``conflict`` cue protocol an episode has two tasks: the one the language names (the
conflict partner, which the sim resets for) and the one the visual cue shows (the suite
trial's). Every metric (RoboFollow IS/ES/CR, INT-ACT, LIBERO-VIFO) is the episode scored
against one of them, so a row names both and carries the scores for each:

* ``language_task``: the task the instruction names (without a cue protocol: the trial's;
  None when the language names none: ``authorized``, ``no_language``);
* ``cue_task``: the task the cue shows (None: no cue);
* ``scored_task``: the task of the row's own ``intent_score`` / ``exec_score`` /
  ``complete`` / ``stages`` (the begin task: the language task when there is one, else the
  cue task); ``task_id`` stays the suite trial's (the row's key, scene and level);
* ``scores``: role ("language", "cue") -> the scores against that role's task::

      {"task": id, "intent_score", "exec_score", "complete", "max_total", "stages",
       "intact": {"intention_correct", "grasp_success", "task_success",
                  "wrong_object_attempt", "wrong_object"} or None,
       "error" / "intact_error": why that scoring failed (only when it did)}

Rows written before these fields are read the same way (``row_tasks``, ``row_scores``): from
``row["cue"]`` (``language_task``, ``cue_task``, ``begin_task``, ``<role>_complete`` /
``_intent_score`` / ``_exec_score``) or, without a cue protocol, from ``task_id`` and the
row's own scores; their INT-ACT is not in the row (``intact`` None) and is re-scored from the
episode file (``benchmarks.intact.metrics.row_intact``). Pure logic on dicts.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["ROLES", "ROLE_LABELS", "INTACT_FIELDS", "row_tasks", "row_scores", "scored_role",
           "role_row", "role_rows", "roles_of", "tasks_differ", "task_label"]

ROLES = ("language", "cue")
#: how tables name the task a metric refers to
ROLE_LABELS = {"language": "followed language", "cue": "followed cue"}
#: the INT-ACT metrics a role's scores keep (benchmarks.intact.metrics.intact_metrics)
INTACT_FIELDS = ("intention_correct", "grasp_success", "task_success", "wrong_object_attempt",
                 "wrong_object")


def _ok(row: Mapping) -> bool:
    return row.get("status", "ok") == "ok"


def row_tasks(row: Mapping) -> dict[str, Any]:
    """{"language": id or None, "cue": id or None, "scored": id} of a new or old row."""
    if "scored_task" in row:
        return {"language": row.get("language_task"), "cue": row.get("cue_task"),
                "scored": row["scored_task"]}
    cue = row.get("cue") or {}
    if cue.get("protocol"):  # an older cue-protocol row: its tasks are in row["cue"]
        return {"language": cue.get("language_task"), "cue": cue.get("cue_task"),
                "scored": cue.get("begin_task") or row.get("task_id")}
    return {"language": row.get("task_id"), "cue": None, "scored": row.get("task_id")}


def _own_scores(row: Mapping, task) -> dict:
    """The row's own (top-level) scores as a role's entry."""
    ok = _ok(row)
    return {"task": task, "intent_score": float(row.get("intent_score") or 0.0) if ok else 0.0,
            "exec_score": float(row.get("exec_score") or 0.0) if ok else 0.0,
            "complete": bool(ok and row.get("complete")),
            "max_total": float(row.get("max_total") or 1.0),
            "stages": row.get("stages") or [], "intact": None}


def _old_cue_scores(row: Mapping, role: str, task) -> dict:
    cue = row["cue"]
    ok = _ok(row)
    entry = {"task": task, "intent_score": float(cue.get(f"{role}_intent_score") or 0.0),
             "exec_score": float(cue.get(f"{role}_exec_score") or 0.0),
             "complete": bool(ok and cue.get(f"{role}_complete")), "max_total": 1.0,
             "stages": cue.get(f"{role}_stages") or [], "intact": None}
    if cue.get(f"{role}_error"):
        entry["error"] = cue[f"{role}_error"]
    return entry


def row_scores(row: Mapping) -> dict[str, dict]:
    """role -> scores against that role's task (see the module docstring); roles without a
    task are absent."""
    if "scores" in row:
        return dict(row["scores"])
    tasks = row_tasks(row)
    cue = row.get("cue") or {}
    if not cue.get("protocol"):
        return {"language": _own_scores(row, tasks["language"])}
    out = {}
    for role in ROLES:  # an older cue row: a role has a task when its completion was recorded
        if cue.get(f"{role}_complete") is None:
            continue
        task = tasks[role]
        out[role] = (_own_scores(row, task) if task is not None and task == tasks["scored"]
                     else _old_cue_scores(row, role, task))
    return out


def scored_role(row: Mapping) -> str:
    """The role of the row's own scores: "language" when its scored task is the language
    task's, else "cue"."""
    t = row_tasks(row)
    return "language" if t["scored"] == t["language"] else "cue"


def role_row(row: Mapping, role: str) -> dict | None:
    """``row`` with its own scores replaced by ``role``'s (None: the row has no such task), so
    RoboFollow's ``summarize`` and the report's tables read them. ``task_id`` / ``scene`` /
    ``level`` stay the suite trial's: rows group by trial whichever task is scored."""
    s = row_scores(row).get(role)
    if s is None:
        return None
    return {**row, "scored_task": s.get("task"), "intent_score": s["intent_score"],
            "exec_score": s["exec_score"], "complete": s["complete"],
            "max_total": s.get("max_total", 1.0), "stages": s.get("stages", [])}


def role_rows(rows: Iterable[Mapping], role: str) -> list[dict]:
    """The rows that have a ``role`` task, each scored against it (``role_row``)."""
    return [r for r in (role_row(row, role) for row in rows) if r is not None]


def roles_of(rows: Iterable[Mapping]) -> list[str]:
    """The roles some row has a task for, in ROLES order."""
    seen = {role for row in rows for role in row_scores(row)}
    return [role for role in ROLES if role in seen]


def tasks_differ(rows: Iterable[Mapping]) -> bool:
    """Whether some row's language and cue tasks differ (a ``conflict`` episode): then each
    metric must be read per task."""
    for row in rows:
        t = row_tasks(row)
        if t["language"] is not None and t["cue"] is not None and t["language"] != t["cue"]:
            return True
    return False


def task_label(rows: Iterable[Mapping]) -> str:
    """What the rows' own scores refer to, for a table header: "followed language",
    "followed cue" or both joined with " / " (a directory mixing protocols)."""
    roles = {scored_role(row) for row in rows}
    return " / ".join(ROLE_LABELS[r] for r in ROLES if r in roles) or "-"
