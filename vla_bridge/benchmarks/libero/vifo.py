"""LIBERO-VIFO on LIBERO's own tasks: the paper's setting (40 tasks: the 10 of each of
libero_spatial, libero_object, libero_goal and libero_10), without LIBERO, MuJoCo or ROS.

* **Cue semantics from the BDDL goal.** A LIBERO task's goal is a conjunction of predicates
  (``on`` / ``in`` X Y, ``open`` / ``close`` / ``turnon`` X). ``grounded_task`` turns it into the
  cue pipeline's ``GroundedTask``: each ``on`` / ``in`` a place step (source X, target Y, a
  region or an object), each state change a step with no source. Placements come first (the
  conjunction holds in any order, and ``close`` must follow putting something inside).
* **Compatibility** (``skip_reason``): a cue instance exists when its variant carries what the
  task needs (``vifo.compatibility.CARRIES``): the source and target of a placement, the target
  of a state change, and every goal object for a task of several steps ("sequence"). F3
  ghosts need an object that moves: the two state-change-only tasks (open the middle drawer,
  turn on the stove) have none, as in the paper (ghosts cover 38 of 40 tasks). LIBERO has one
  arm, so no task needs one. F3 and F7 show every goal object of a multi-object task (a ghost
  path per object; a highlight on each).
* **Conflict partners** (Part II-A, ``conflict_partner``): another LIBERO task whose goal can be
  completed in the same scene (every object and region it names is there, and its nouns are
  unambiguous there) and neither goal contains the other: from the same suite when one fits, else
  from the other standard suites, else from libero_90 (which shares libero_10's scenes); the
  episode seed picks among them. libero_10's task 4 (two mugs on two plates) has none. The sim loads the cue task's environment and initial state
  and evaluates the partner's goal with LIBERO's own predicates.
* **Trials** (``plan_cue_trials``): which task the language names, which the cue shows, which
  goal each role is scored against, and which one ends the episode (the task the protocol
  asks for: the language task for ``original`` and ``conflict``, the cue task otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from vla_bridge.benchmarks.libero.protocol import STANDARD_SUITES, LiberoTrial
from vla_bridge.benchmarks.vifo import compatibility as compat
from vla_bridge.benchmarks.vifo.families import AnchorRef, CueSpec, family
from vla_bridge.benchmarks.vifo.instructions.grounding import GroundedStep, GroundedTask
from vla_bridge.benchmarks.vifo.insertion import (AUTHORIZED_PROMPT, PROTOCOLS, make_cue,
                                                  target_anchor)
from vla_bridge.benchmarks.vifo.instructions.parser import ParsedTask

__all__ = ["VIFO_SUITES", "goal_steps", "grounded_task", "task_needs", "skip_reason",
           "instance_counts", "conflict_partner", "LiberoCueTrial", "plan_cue_trials",
           "build_cue", "task_id", "goal_objects", "target_owner", "fits_scene"]

VIFO_SUITES = STANDARD_SUITES
#: LIBERO's state-change predicates -> (step action, target state)
STATE_PREDICATES = {"open": ("open", "open"), "close": ("close", "closed"),
                    "turnon": ("turn_on", "on"), "turnoff": ("turn_off", "off")}
PLACE_PREDICATES = ("on", "in")
#: variants that need what the LIBERO graph does not build
NOT_ON_LIBERO = {("F4", "goal_image"): "F4 goal_image needs a picture of the goal state, which "
                                       "would take a plan rollout in LIBERO (not built)"}
#: variants drawn from the source object to where it goes (F3's ghosts too)
DRAWS_A_MOVE = {("F2", "arrow"), ("F2", "curved_path"), ("F2", "dashed_path"),
                ("F5", "point_and_move")}
#: suites searched for a conflict partner after the cue task's own (libero_90 shares
#: libero_10's scenes)
PARTNER_SUITES = (*STANDARD_SUITES, "libero_90")


def task_id(suite: str, index: int) -> str:
    return f"{suite}/{index}"


# ----------------------------------------------------------------------------- semantics

def goal_steps(goal) -> tuple[GroundedStep, ...]:
    """The BDDL goal's predicates as steps: placements first, then state changes."""
    places, states = [], []
    for pred in goal:
        name, *args = [str(a) for a in pred]
        if name in PLACE_PREDICATES and len(args) == 2:
            places.append(GroundedStep("place", None, args[0], args[1], name, None, (args[0],)))
        elif name in STATE_PREDICATES and len(args) == 1:
            action, state = STATE_PREDICATES[name]
            states.append(GroundedStep(action, None, None, args[0], None, state))
        else:
            raise ValueError(f"LIBERO goal predicate {pred!r} is not one of "
                             f"{[*PLACE_PREDICATES, *STATE_PREDICATES]}")
    return tuple(places + states)


def grounded_task(entry: dict) -> GroundedTask:
    """A catalog entry ({"instruction", "goal", ...}) as the cue pipeline's GroundedTask."""
    return GroundedTask(ParsedTask(entry["instruction"], ()), goal_steps(entry["goal"]))


def goal_objects(goal) -> set[str]:
    return {str(a) for pred in goal for a in pred[1:]}


def task_needs(entry: dict) -> frozenset:
    """What a cue must carry to specify the task (``compatibility.ASPECTS``)."""
    steps = goal_steps(entry["goal"])
    needs = {"target"}
    if any(s.source for s in steps):
        needs.add("source")
    if len(steps) > 1:
        needs.add("sequence")
    return frozenset(needs)


def _carries(fam: str, variant: str) -> frozenset:
    carried = compat.carries(fam, variant, plan_ghosts=False)  # ghosts: projected paths
    if fam in ("F3", "F7"):  # build_cue shows every goal object of a multi-object task
        carried |= {"sequence"}
    return carried


def skip_reason(entry: dict, fam: str, variant: str) -> str | None:
    """Why ``variant`` of ``fam`` cannot specify this task (None: it can)."""
    fam = family(fam).code
    if (fam, variant) in NOT_ON_LIBERO:
        return NOT_ON_LIBERO[(fam, variant)]
    if (fam == "F3" or (fam, variant) in DRAWS_A_MOVE) \
            and not any(s.source for s in goal_steps(entry["goal"])):
        return f"{fam} {variant} draws an object's motion; a state change moves no object"
    missing = sorted(task_needs(entry) - _carries(fam, variant))
    if missing:
        return f"{fam} {variant} does not show the task's {', '.join(missing)}"
    return None


def instance_counts(catalog: dict, variants, suites=VIFO_SUITES) -> dict:
    """{(family, variant): number of the suites' tasks it can specify}."""
    entries = [e for s in suites for e in catalog[s]]
    return {(f, v): sum(skip_reason(e, f, v) is None for e in entries) for f, v in variants}


# ----------------------------------------------------------------------------- conflicts

def _is_table(name: str, entry: dict) -> bool:
    category = entry["fixtures"].get(name, "")
    return category == "table" or category.endswith("_table")


def _in_scene(name: str, entry: dict) -> bool:
    """An object, fixture or BDDL region of the scene, or a site of a (non-table) object."""
    if name in entry["objects"] or name in entry["fixtures"] or name in entry["regions"]:
        return True
    owners = [o for o in (*entry["objects"], *entry["fixtures"]) if not _is_table(o, entry)]
    return any(name.startswith(o + "_") for o in owners)


def _unambiguous(name: str, entry: dict) -> bool:
    """The scene has one object of this object's kind (a partner's words name it)."""
    category = entry["objects"].get(name)
    return category is None or list(entry["objects"].values()).count(category) == 1


def fits_scene(partner: dict, entry: dict) -> bool:
    """``partner``'s goal can be completed, and named, in ``entry``'s scene; neither goal
    contains the other, they change the state of different things, and the partner does more
    than close or switch off (which is usually how the scene starts)."""
    names = goal_objects(partner["goal"])
    mine, theirs = {tuple(p) for p in entry["goal"]}, {tuple(p) for p in partner["goal"]}
    changed = {p[1] for p in mine if p[0] in STATE_PREDICATES}
    theirs_changed = {p[1] for p in theirs if p[0] in STATE_PREDICATES}
    undo_only = theirs and all(p[0] in ("close", "turnoff") for p in theirs)
    return (not (mine <= theirs or theirs <= mine)  # doing one must not do the other
            and not changed & theirs_changed  # nor undo it (turn off what the cue turns on)
            and not undo_only  # closing / turning off: usually already so at the start
            and all(_in_scene(n, entry) for n in names)
            and all(_unambiguous(n, entry) for n in names))


def conflict_partner(catalog: dict, suite: str, index: int, seed: int) -> tuple[str, int] | None:
    """(suite, index) of the task whose instruction conflicts with this one's cue, or None
    when no LIBERO task fits the scene (see the module docstring)."""
    entry = catalog[suite][index]
    others = tuple(s for s in STANDARD_SUITES if s != suite)
    for group in (suite,), others, tuple(s for s in PARTNER_SUITES if s not in (suite, *others)):
        found = [(s, e["index"]) for s in group if s in catalog for e in catalog[s]
                 if (s, e["index"]) != (suite, index) and fits_scene(e, entry)]
        if found:
            return found[seed % len(found)]
    return None


# ----------------------------------------------------------------------------- trials

@dataclass(frozen=True)
class LiberoCueTrial:
    """One LIBERO trial under a LIBERO-VIFO protocol (``protocol`` "" = no cue protocol)."""
    trial: LiberoTrial  # the cue task's (the suite trial's) task and initial state
    protocol: str
    family: str | None
    variant: str | None
    language: str  # what the policy is told
    language_task: str | None  # "suite/index" of the task the language names
    language_goal: list | None
    skip: str | None = None  # why this trial cannot run (no instance, no partner)

    @property
    def cue_task(self) -> str | None:
        return task_id(self.trial.suite, self.trial.task_index) if self.family else None

    @property
    def end_role(self) -> str | None:
        """The task whose success ends the episode: the one the protocol asks for (None
        without a protocol: the loaded task's own, LIBERO's success)."""
        if not self.protocol:
            return None
        return "language" if self.language_task is not None else "cue"

    def goals(self) -> dict[str, list]:
        """role -> BDDL goal the sim watches (none without a protocol)."""
        out = {}
        if not self.protocol:
            return out
        if self.language_goal is not None:
            out["language"] = self.language_goal
        if self.family:
            out["cue"] = self.trial.goal
        return out

    @property
    def key(self) -> str:
        """The trial's name in a run directory (``evaluation.run_dir``)."""
        return self.trial.episode

    def run_entry(self) -> dict:
        """The trial as run.json lists it."""
        t = self.trial
        return {"key": self.key, "task": task_id(t.suite, t.task_index), "init": t.init,
                "seed": t.seed, "language_task": self.language_task}

    def begin_task(self) -> dict:
        """The begin message's task: the sim loads the cue task's (the trial's) environment
        and initial state and watches ``goals``; ``goal`` is the language task's goal (None
        when the language names no task), what a language-following privileged policy plans."""
        task = self.trial.task()
        if self.protocol:
            task.update(goals=self.goals(), end_on=self.end_role, goal=self.language_goal,
                        id=self.language_task or self.cue_task)
        return task

    def cue_task_spec(self) -> dict | None:
        """The begin message's ``cue_task`` (what a cue-following privileged policy plans)."""
        if not self.family:
            return None
        return {"id": self.cue_task, "scene": self.trial.suite, "layout": self.trial.layout,
                "goal": self.trial.goal}

    def row_fields(self) -> dict:
        return {"protocol": self.protocol or None, "family": self.family,
                "variant": self.variant, "cue_task": self.cue_task,
                "language_task": self.language_task}


def plan_cue_trials(trials, protocol: str, fam: str | None, variant: str | None,
                    catalog: dict) -> list[LiberoCueTrial]:
    """Each trial under ``protocol`` ("" or one of ``insertion.PROTOCOLS``) with cue family
    ``fam`` / ``variant`` (ignored for "" and ``original``)."""
    if protocol and protocol not in PROTOCOLS:
        raise ValueError(f"unknown cue protocol {protocol!r}; valid: '' (off), "
                         + ", ".join(PROTOCOLS))
    shows_cue = protocol not in ("", "original")
    out = []
    for t in trials:
        own = task_id(t.suite, t.task_index)
        if not shows_cue:
            out.append(LiberoCueTrial(t, protocol, None, None, t.instruction, own, t.goal))
            continue
        entry = catalog[t.suite][t.task_index]
        skip = skip_reason(entry, fam, variant)
        language, lang_task, lang_goal = {"authorized": (AUTHORIZED_PROMPT, None, None),
                                          "no_language": ("", None, None)}.get(protocol,
                                                                               (None,) * 3)
        if protocol == "conflict":
            # by seed + initial state: the partner varies over a task's initial states (the
            # episode seed is the task's, one per task as openpi seeds)
            partner = conflict_partner(catalog, t.suite, t.task_index, t.seed + t.init)
            if partner is None:
                skip = skip or "no other LIBERO task can be done in this task's scene"
                language = ""
            else:
                e = catalog[partner[0]][partner[1]]
                language, lang_task, lang_goal = e["instruction"], task_id(*partner), e["goal"]
        out.append(LiberoCueTrial(t, protocol, fam, variant, language, lang_task, lang_goal,
                                  skip))
    return out


# ----------------------------------------------------------------------------- cues

def target_owner(target: str, entry: dict) -> str | None:
    """The object a target region belongs to (None: the target is an object itself, or a
    region of the table, which has no outline worth drawing)."""
    if target in entry["objects"] or target in entry["fixtures"]:
        return None
    owner = entry["regions"].get(target)
    if owner is None:  # a site of an object (basket_1_contain_region)
        owners = [o for o in (*entry["objects"], *entry["fixtures"]) if target.startswith(o + "_")]
        owner = max(owners, key=len) if owners else None
    return None if owner is None or _is_table(owner, entry) else owner


def build_cue(entry: dict, fam: str, variant: str, **params) -> CueSpec:
    """The task-conditioned CueSpec of a LIBERO task. Anchors name LIBERO's objects and region
    sites (the live world state resolves them every frame); the target's outline is its
    owner's box for a region of an object (a drawer, the basket), none for a region of the
    table."""
    g = grounded_task(entry)
    steps = g.steps
    if len(steps) > 1 and family(fam).code == "F7":
        params.setdefault("roles", [f"step{i}" for i, s in enumerate(steps, 1) if s.source]
                          + ["target"])
    cue = make_cue(g, fam, variant, world=None, **params)
    anchors = dict(cue.anchors)
    moves = [(i, s) for i, s in enumerate(steps, 1) if s.source]
    if len(moves) > 1 and cue.code == "F3":  # one ghost path per object that moves
        for i, s in moves:
            anchors[f"step{i}_target"] = target_anchor(s, None)
        cue = replace(cue, params={**cue.params,
                                   "ghost_steps": [(f"step{i}", f"step{i}_target")
                                                   for i, _ in moves]})
    target = steps[0].target
    if "target_object" in anchors and target not in entry["objects"] \
            and target not in entry["fixtures"]:
        owner = target_owner(target, entry)
        if owner is None:
            del anchors["target_object"]
        else:
            anchors["target_object"] = AnchorRef(entity=owner, outline=True)
    return replace(cue, anchors=anchors)
