"""LIBERO-VIFO's closed-loop protocols on RoboFollow tasks: per-trial plan and metrics.

Pure logic (no rclpy, no MuJoCo). For each suite trial and protocol, ``plan_trial`` decides

* what language the policy gets (``language``),
* which task that language specifies (``language_task``; None when it names none),
* which task the visual cue shows (``cue_task``; None: no cue), and
* which task the sim resets for and the privileged language-following oracle plans
  (``begin_task``, the ``task`` of the episode's ``begin`` message).

================  ===========================================  ===============  ==============
protocol          language                                     language_task    cue_task
================  ===========================================  ===============  ==============
``original``      the trial's instruction                      the trial        none (no cue)
``authorized``    ``AUTHORIZED_PROMPT`` (Part I-B)             none             the trial
``conflict``      the conflict partner's instruction (II-A)    the partner      the trial
``no_language``   "" (Part II-B)                               none             the trial
================  ===========================================  ===============  ==============

The cue always shows the suite trial's task (the cue specification is held fixed across
protocols, App. C.4); only the language changes. The conflict partner is another task of the
same scene and layout (so one reset serves both) whose source object or target differs,
chosen deterministically from the episode seed (``conflict_partner``).

Metrics (percent, ``protocol_metrics`` of ``vifo.insertion``): Orig. SR (original, language
task completed), AVF (authorized, cue task completed), VTR = AVF / Orig. SR, LFR / UVF
(conflict: language / cue task completed), UVI (no_language, cue task completed). A task
counts as completed when RoboFollow's completion check (CR) passes; a failed episode counts
as not completed (``METRIC_TASKS``: the task each metric is against; a row's completion of
each task: ``benchmarks.task_roles``). ``cue_metrics`` aggregates results rows per family and
overall; ``format_cue_table`` prints a Table-2-like text table (``evaluation.cues.metrics``
writes it into run directories and merges several of them).

Scene-instantiated cues (paper section 4.2: ``SceneCueObject``, ``scene_cue_objects``,
``episode_scene_cues``, ``check_placement``, ``CUE_PLACEMENTS``, ...) live in
``vifo.scene_cards``, which builds on this module.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from vla_bridge.benchmarks.result_rows import counted
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.task_roles import ROLE_LABELS, row_scores

from vla_bridge.benchmarks.vifo.content import ScoredFacts
from vla_bridge.benchmarks.vifo.families import FAMILIES, family
from vla_bridge.benchmarks.vifo.insertion import (AUTHORIZED_PROMPT, PROTOCOLS, EpisodeRecord,
                                                  make_cue, protocol_metrics)
from vla_bridge.benchmarks.vifo.instructions.grounding import (GroundedStep, GroundedTask,
                                                               GroundingError, ground,
                                                               layout_world)
from vla_bridge.benchmarks.vifo.instructions.parser import ParseError, ParsedTask, parse

__all__ = [
    "PROTOCOLS", "CUE_PROTOCOLS", "AUTHORIZED_PROMPT", "DEFAULT_VARIANTS", "TrialCue",
    "check_protocol", "resolve_family_variant", "conflict_partner", "plan_trial",
    "grounded_task", "build_cue", "scored_facts", "scored_text", "episode_record", "cue_metrics", "format_cue_table",
    "METRICS", "METRIC_TASKS", "FAMILY_LABELS",
]

#: protocols that show a cue (``original`` is the cue-free baseline)
CUE_PROTOCOLS = ("authorized", "conflict", "no_language")

#: variant used when ``cue_variant`` is empty: one that conveys source and target where the
#: family can
DEFAULT_VARIANTS = {"F1": "banner", "F2": "arrow", "F3": "trail", "F4": "schematic",
                    "F5": "point_and_move", "F6": "target_zone", "F7": "outline", "F8": "qr"}
#: variants that need inputs the graph cannot provide (F4 goal_image's picture comes from the
#: plan's rollout, ``evaluation.cues.run.plan_params``)
UNSUPPORTED_IN_GRAPH: dict = {}

METRICS = (("orig_sr", "Orig. SR"), ("avf", "AVF"), ("vtr", "VTR"), ("lfr", "LFR"),
           ("uvf", "UVF"), ("uvi", "UVI"))
#: the task each metric scores the episode against (``benchmarks.task_roles``)
METRIC_TASKS = {"orig_sr": "language", "avf": "cue", "vtr": "cue", "lfr": "language",
                "uvf": "cue", "uvi": "cue"}
FAMILY_LABELS = {"F1": "F1 Text", "F2": "F2 Geom.", "F3": "F3 Ghost", "F4": "F4 Pict.",
                 "F5": "F5 Gest.", "F6": "F6 Sign", "F7": "F7 Light.", "F8": "F8 Code"}


# ----------------------------------------------------------------------------- trial plan

def check_protocol(protocol: str) -> str:
    """'' (off) or one of PROTOCOLS; anything else is a ValueError listing the valid ones."""
    protocol = (protocol or "").strip()
    if protocol and protocol not in PROTOCOLS:
        raise ValueError(f"unknown cue protocol {protocol!r}; valid: '' (off), "
                         + ", ".join(PROTOCOLS))
    return protocol


def resolve_family_variant(fam: str, variant: str = "") -> tuple[str, str]:
    """(family code, variant) with the default variant filled in; errors list valid values."""
    if not fam:
        raise ValueError("a cue protocol needs cue_family (one of "
                         + ", ".join(f"{f.code} ({f.name})" for f in FAMILIES.values()) + ")")
    f = family(fam)
    variant = variant or DEFAULT_VARIANTS.get(f.code) or next(iter(f.variants))
    if variant not in f.variants:
        raise ValueError(f"unknown variant {variant!r} for {f.code} {f.name}; valid: "
                         + ", ".join(f.variants))
    why = UNSUPPORTED_IN_GRAPH.get((f.code, variant))
    if why:
        raise ValueError(f"{f.code} {variant} is not available in the evaluation graph: {why}")
    return f.code, variant


def _target_of(task: TaskSpec) -> tuple:
    """What the task asks the source to end up at: (anchor / target object / label, action)."""
    t = task.target or {}
    where = task.anchor or t.get("target_object") or t.get("target_label")
    return where, task.action


def conflict_partner(task: TaskSpec, candidates: Iterable[TaskSpec], seed: int) -> TaskSpec:
    """Another task of the same scene and layout that a policy could be told instead.

    Preference (first non-empty tier wins): same level and another source object; another
    source at any level; same level, same source but another target or relation; then any
    level. Within a tier the tasks are sorted by id and ``seed`` picks one, so a seed always
    gives the same partner. ValueError when the layout has no such task.
    """
    pool = sorted({c.id: c for c in candidates
                   if c.scene == task.scene and c.layout == task.layout and c.id != task.id
                   and c.instruction.strip() != task.instruction.strip()}.values(),
                  key=lambda c: c.id)
    other_source = [c for c in pool if c.source != task.source]
    other_target = [c for c in pool if c.source == task.source and _target_of(c) != _target_of(task)]
    tiers = ([c for c in other_source if c.level == task.level], other_source,
             [c for c in other_target if c.level == task.level], other_target)
    for tier in tiers:
        if tier:
            return tier[int(seed) % len(tier)]
    raise ValueError(f"no conflict partner for {task.id}: no other task of {task.scene} layout "
                     f"{task.layout!r} has a different source or target")


@dataclass(frozen=True)
class TrialCue:
    """What one trial of a protocol shows and says (see the module table)."""
    protocol: str
    language: str
    begin_task: TaskSpec
    language_task: TaskSpec | None
    cue_task: TaskSpec | None
    family: str | None = None
    variant: str | None = None

    @property
    def shows_cue(self) -> bool:
        return self.cue_task is not None

    def scored_tasks(self) -> dict[str, TaskSpec]:
        """role -> task the episode is scored against ("language", "cue"); the begin task is
        always scored (as "language" when the language names it, else as "cue")."""
        out = {}
        if self.language_task is not None:
            out["language"] = self.language_task
        if self.cue_task is not None:
            out["cue"] = self.cue_task
        return out or {"language": self.begin_task}

    def row_fields(self) -> dict:
        """The protocol part of a results row (scores are added by the evaluator)."""
        return {"protocol": self.protocol, "family": self.family, "variant": self.variant,
                "language": self.language,
                "language_task": self.language_task.id if self.language_task else None,
                "cue_task": self.cue_task.id if self.cue_task else None,
                "begin_task": self.begin_task.id}


def plan_trial(protocol: str, task: TaskSpec, seed: int, candidates: Sequence[TaskSpec] = (),
               fam: str | None = None, variant: str | None = None) -> TrialCue:
    """The language, tasks and cue of one trial of ``task`` under ``protocol``.

    ``candidates`` (the suite's tasks) are needed by ``conflict`` only.
    """
    protocol = check_protocol(protocol)
    if not protocol:
        raise ValueError("plan_trial needs a protocol (cue protocols are off)")
    if protocol == "original":
        return TrialCue(protocol, task.instruction, task, task, None, None, None)
    fam, variant = resolve_family_variant(fam or "", variant or "")
    if protocol == "authorized":
        return TrialCue(protocol, AUTHORIZED_PROMPT, task, None, task, fam, variant)
    if protocol == "conflict":
        partner = conflict_partner(task, candidates, seed)
        return TrialCue(protocol, partner.instruction, partner, partner, task, fam, variant)
    return TrialCue(protocol, "", task, None, task, fam, variant)  # no_language


# ----------------------------------------------------------------------------- cue construction

_ACTION_RELATIONS = {"place_behind": "behind", "place_in_front": "in_front_of",
                     "place_left_of": "left_of", "place_right_of": "right_of",
                     "place_beside": "beside", "place_on": "on", "place_in": "in",
                     # Scenes 2-4: stacking and labels end on the target, bowls in it
                     "stack": "on", "stack_on_target": "on", "unstack_to_slot": "on",
                     "place_on_label_route": "on", "place_bowl": "in"}


def _spec_grounding(task: TaskSpec) -> GroundedTask:
    """GroundedTask straight from the registry fields (when the parser cannot read a task)."""
    where, action = _target_of(task)
    relation = _ACTION_RELATIONS.get(action)
    if relation is None and action.startswith("place_"):
        relation = action[len("place_"):]
    kind = "pick" if action == "pickup" or where is None else "place"
    step = GroundedStep(kind, task.arm, task.source, where if kind == "place" else None,
                        relation if kind == "place" else None, None, (task.source,))
    parsed = ParsedTask(task.instruction, ())
    return GroundedTask(parsed, (step,))


def grounded_task(task: TaskSpec, objects, fixtures=None) -> tuple[GroundedTask, str]:
    """(GroundedTask, how): parse + ground the instruction (the paper's pipeline, "parser");
    when that fails or contradicts the registry's source, build it from the task fields
    ("registry"). What the scorer checks always wins: a parsed target, arm or second step
    that differs from the registry's is replaced by it ("parser+registry"), so the cue shows
    the task the episode is scored against (8 Scene 2 L3 instructions name another bowl than
    the scored one)."""
    try:
        g = ground(parse(task.instruction), objects, fixtures)
    except (ParseError, GroundingError, ValueError):
        return _spec_grounding(task), "registry"
    if g.source != task.source:
        return _spec_grounding(task), "registry"
    steps = _scored_steps(task, g.steps)
    return (g, "parser") if steps == g.steps else (replace(g, steps=steps), "parser+registry")


def _scored_steps(task: TaskSpec, steps: tuple) -> tuple:
    """``steps`` with the registry's target, arm and second step where they differ."""
    where, action = _target_of(task)
    first = steps[0]
    if action != "pickup" and where is not None and first.target != where:
        first = replace(first, target=where)
    if first.arm != task.arm:
        first = replace(first, arm=task.arm)
    out = [first, *steps[1:]]
    second = (task.target or {}).get("second_source")
    if second:
        arm2 = task.target.get("second_arm")
        if len(out) < 2:
            out.append(GroundedStep("pick", arm2, second, None, None, "lifted", (second,)))
        elif out[1].source != second or out[1].arm != arm2:
            out[1] = replace(out[1], source=second, arm=arm2, sources=(second,))
    return tuple(out)


def scored_facts(task: TaskSpec) -> ScoredFacts | None:
    """What RoboFollow's scorer checks beyond the steps: Scene 3's route and final yaw, a
    Scene 4 slot's position."""
    slot = (task.target or {}).get("place_slot")
    if slot is not None:
        from vla_bridge.benchmarks.robofollow.scoring.scene4 import slot_xy
        return ScoredFacts(place_xy=tuple(float(v) for v in slot_xy(slot)))
    if task.scene != "scene3":
        return None
    from vla_bridge.benchmarks.robofollow.scoring.scene3 import route_spec, target_yaw
    route = route_spec(task)
    return ScoredFacts(route.correct, route.wrong, target_yaw(task))


def _step_text(step) -> str:
    def name(n):
        return n.replace("_", " ")
    arm = f"Use your {step.arm} arm to " if step.arm else ""
    if step.action == "pick" or step.target is None:
        return f"{arm}pick up the {name(step.source)}"
    relation = (step.relation or "to").replace("_", " ")
    return f"{arm}{step.action} the {name(step.source)} {relation} the {name(step.target)}"


def scored_text(g: GroundedTask) -> str:
    """The task as a sentence, from its grounded steps (for text cues when the instruction
    names something other than what is scored)."""
    return ", then ".join(_step_text(s) for s in g.steps) + "."


def build_cue(task: TaskSpec, fam: str, variant: str, seed: int, world=None, fixtures=None,
              **params):
    """The task-conditioned CueSpec of ``task`` for one episode.

    ``world`` ({name: ObjectState} or a WorldState): defaults to the layout's spawn positions
    for ``seed`` (``grounding.layout_world``, what the sim resets to); anchors name objects, so
    the live world state resolves them every frame. The cue shows the scored task: where the
    instruction says otherwise (``grounded_task``), text cues say the scored task.
    """
    if world is None:
        world, fixtures = layout_world(task.scene, task.layout, seed)
    objects = getattr(world, "objects", world)
    if fixtures is None:  # a live world state lists fixtures (bowls, labels) as objects too
        from vla_bridge.benchmarks.robofollow.scenes import load_scene
        fixed = set(load_scene(task.scene).fixtures)
        fixtures = {n: o for n, o in objects.items() if n in fixed}
        objects = {n: o for n, o in objects.items() if n not in fixed}
    g, how = grounded_task(task, objects, fixtures)
    if how != "parser":
        params.setdefault("text", scored_text(g))
    return make_cue(g, fam, variant, world=objects, facts=scored_facts(task), **params)


# ----------------------------------------------------------------------------- metrics

def _cue(row: dict) -> dict:
    return row.get("cue") or {}


def episode_record(row: dict) -> EpisodeRecord | None:
    """A results row -> EpisodeRecord (None for rows without a cue protocol)."""
    cue = _cue(row)
    protocol = cue.get("protocol")
    if protocol not in PROTOCOLS:
        return None
    ok = row.get("status") == "ok"
    scores = row_scores(row)  # each task's own completion (older rows: from row["cue"])
    lang = bool(ok and (scores.get("language") or {}).get("complete"))
    cue_ok = bool(ok and (scores.get("cue") or {}).get("complete"))
    return EpisodeRecord(protocol, cue_task_success=cue_ok, language_task_success=lang,
                         family=None if protocol == "original" else cue.get("family"))


def _counts(rows: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for r in rows:
        p = _cue(r).get("protocol")
        c = out.setdefault(p, {"episodes": 0, "failed": 0})
        c["episodes"] += 1
        c["failed"] += int(r.get("status") != "ok")
    return out


def _round(m: dict) -> dict:
    return {k: (None if v is None else round(float(v), 2)) for k, v in m.items()}


def cue_metrics(rows: Iterable[dict]) -> dict:
    """Per family and overall: Orig. SR, AVF, VTR, LFR, UVF, UVI (percent or None).

    ``overall`` pools every episode (micro); ``average`` is the mean over families of each
    metric that a family has (macro, the paper's "Avg." column). Orig. SR comes from the
    ``original`` rows and is shared by every family.
    """
    rows = [r for r in counted(rows) if episode_record(r) is not None]
    recs = [episode_record(r) for r in rows]
    by_family = {f: _round(m) for f, m in protocol_metrics(recs, by_family=True).items()}
    average = {}
    for key, _label in METRICS:
        vals = [m[key] for m in by_family.values() if m.get(key) is not None]
        average[key] = round(sum(vals) / len(vals), 2) if vals else None
    fam_rows = {f: [r for r, e in zip(rows, recs) if e.family == f] for f in by_family}
    return {
        "overall": _round(protocol_metrics(recs)),
        "average": average,
        "by_family": by_family,
        "episodes": _counts(rows),
        "episodes_by_family": {f: _counts(rs) for f, rs in fam_rows.items()},
        "variants": sorted({f"{_cue(r).get('family')}/{_cue(r).get('variant')}" for r in rows
                            if _cue(r).get("family")}),
        "definitions": {
            "orig_sr": "original: language task completed (no cue)",
            "avf": "authorized: cue task completed",
            "vtr": "AVF / Orig. SR",
            "lfr": "conflict: language task completed",
            "uvf": "conflict: cue task completed",
            "uvi": "no_language: cue task completed",
        },
        "tasks": {key: ROLE_LABELS[role] for key, role in METRIC_TASKS.items()},
    }


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def family_table(metrics: dict, rows, first: str = "metric") -> tuple[list[str], int]:
    """Text table lines of per-family metrics (``by_family``, ``average``, ``overall``): one
    line per (key, label) of ``rows``, one column per family, then Avg. (macro) and All
    (pooled); returns (lines, column width). Shared by the protocol and VQA tables."""
    fams = sorted(metrics["by_family"])
    cols = [FAMILY_LABELS.get(f, f) for f in fams] + ["Avg.", "All"]
    w = max([10] + [len(c) + 2 for c in cols])
    head = f"{first:<11}" + "".join(f"{c:>{w}}" for c in cols)
    lines = [head, "-" * len(head)]
    for key, label in rows:
        vals = [metrics["by_family"][f].get(key) for f in fams]
        vals += [metrics["average"].get(key), metrics["overall"].get(key)]
        lines.append(f"{label:<11}" + "".join(f"{_fmt(v):>{w}}" for v in vals))
    return lines, w


def format_cue_table(metrics: dict) -> str:
    """Table-2-like text: one row per metric, one column per family, Avg. (macro), All (micro)."""
    lines, _ = family_table(metrics, METRICS)
    lines.append("task: " + "; ".join(
        f"{ROLE_LABELS[role]}: " + ", ".join(label for key, label in METRICS
                                             if METRIC_TASKS[key] == role)
        for role in dict.fromkeys(METRIC_TASKS.values())))
    counts = ", ".join(f"{p} {c['episodes']}" + (f" ({c['failed']} failed)" if c["failed"] else "")
                       for p, c in sorted(metrics["episodes"].items()))
    lines.append(f"episodes: {counts or 'none'}")
    return "\n".join(lines)
