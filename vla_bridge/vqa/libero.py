"""Part I-A on LIBERO's own tasks: the four cue questions on LIBERO's first observations.

The images come from LIBERO's simulator, which runs in its own virtualenv: ``render_frames``
calls ``python -m vla_bridge.sim_nodes.libero.frames`` there (the first observation of each
task and initial state, with its world state) and keeps them in a frames directory. Here, in
the main venv, each instance's cue is built as the LIBERO evaluator builds it
(``benchmarks.libero.vifo.build_cue``, from the task's BDDL goal) and drawn with the frame's own
camera poses (mirrored, as the policy sees LIBERO's images: ``replay.CueConditioner``);
the questions (``questions.vqa_questions``) name LIBERO's objects as its instructions do
("the black bowl", "the cream cheese", "the top drawer of the wooden cabinet"), and ask of a
state change what to do ("open it", "turn it on"). Variants LIBERO-VIFO does not build on
LIBERO (``vifo.skip_reason``) are listed as skipped. Rows, resume and metrics are the
RoboFollow runner's (``runner``). Pure logic except ``render_frames`` (a subprocess).
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vla_bridge import contract as C
from vla_bridge.benchmarks.libero import vifo
from vla_bridge.benchmarks.libero.protocol import load_catalog, plan_trials
from vla_bridge.benchmarks.vifo.replay import CueConditioner
from vla_bridge.embodiment.world import WorldState, world_from_dict

__all__ = ["LOOKS", "LiberoVqaTask", "LiberoVqaScene", "plan_libero_instances",
           "region_name", "render_frames", "run_libero_vqa"]

EMBODIMENT = C.LIBERO_PANDA
#: LIBERO's object categories as its instructions name them (what the image shows)
LOOKS = {"akita_black_bowl": "black bowl", "alphabet_soup": "alphabet soup",
         "basket": "basket", "bbq_sauce": "bbq sauce", "black_book": "black book",
         "butter": "butter", "chefmate_8_frypan": "frying pan",
         "chocolate_pudding": "chocolate pudding", "cookies": "cookie box",
         "cream_cheese": "cream cheese", "desk_caddy": "desk caddy", "flat_stove": "stove",
         "glazed_rim_porcelain_ramekin": "ramekin", "ketchup": "ketchup",
         "microwave": "microwave", "milk": "milk", "moka_pot": "moka pot",
         "orange_juice": "orange juice", "plate": "plate", "porcelain_mug": "white mug",
         "red_coffee_mug": "red mug", "salad_dressing": "salad dressing",
         "tomato_sauce": "tomato sauce", "white_cabinet": "white cabinet",
         "white_yellow_mug": "white and yellow mug", "wine_bottle": "wine bottle",
         "wine_rack": "wine rack", "wooden_cabinet": "wooden cabinet", "table": "table",
         "kitchen_table": "table", "living_room_table": "table", "study_table": "table"}
_SIDES = {"front": "in front of", "behind": "behind", "left": "to the left of",
          "right": "to the right of"}
FRAMES_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class LiberoVqaTask:
    """What a ``VqaInstance`` needs of its task: the id ("libero_goal/3"), the suite (the row's
    ``scene``), and which frame (task number, initial state)."""
    suite: str
    index: int
    init: int = 0
    level: str = ""

    @property
    def id(self) -> str:
        return vifo.task_id(self.suite, self.index)

    @property
    def scene(self) -> str:
        return self.suite


def _categories(entry: dict) -> dict[str, str]:
    return {**entry["fixtures"], **entry["objects"]}


def _look(name: str, entry: dict) -> str:
    category = _categories(entry).get(name, name.rstrip("_0123456789"))
    return LOOKS.get(category, category.replace("_", " "))


def region_name(region: str, entry: dict) -> str:
    """How a goal's region reads: "the top drawer of the wooden cabinet", "the basket", "the
    top of the wooden cabinet", "the table in front of the stove"."""
    owners = [o for o in _categories(entry) if region.startswith(o + "_")]
    owner = entry["regions"].get(region) or (max(owners, key=len) if owners else None)
    if owner is None:
        return "the " + region.replace("_", " ")
    words = region[len(owner) + 1:].removesuffix("_region").split("_")
    thing = _look(owner, entry)
    if thing == "table":
        sides = [w for w in words if w in _SIDES]
        others = [w for w in words if w not in _SIDES]
        if sides and others:
            return f"the table {_SIDES[sides[0]]} the {' '.join(others)}"
        return "the table"
    if words == ["top", "side"]:
        return f"the top of the {thing}"
    if words[0] in ("top", "middle", "bottom") and "cabinet" in thing:
        return f"the {words[0]} drawer of the {thing}"
    if words[-1] == "contain" and len(words) > 1:
        return f"the {' '.join(words[:-1])} compartment of the {thing}"
    return f"the {thing}"


def _scene_world(world: WorldState, entry: dict) -> WorldState:
    """The task's objects and fixtures as the questions see them (tables, the floor, region
    sites and articulated parts left out)."""
    keep = {n for n, c in _categories(entry).items()
            if c != "floor" and LOOKS.get(c) != "table"}
    objects = {n: o for n, o in world.objects.items() if n in keep}
    return WorldState(world.stamp, objects, world.tcp, world.cameras)


def plan_libero_instances(catalog: dict, suites: str = "", tasks: str = "",
                          cues: Sequence[tuple[str, str]] = (), inits: str = "0"):
    """(instances, skipped): ``VqaInstance`` per task x initial state x cue, the seed being the
    initial state; skipped: [{"instance", "reason"}] for the variants LIBERO-VIFO does not
    build on a task (``vifo.skip_reason``)."""
    from vla_bridge.vqa.instances import VqaInstance
    plan, skipped = [], []
    for trial in plan_trials(suites, tasks, inits, catalog=catalog):
        entry = catalog[trial.suite][trial.task_index]
        task = LiberoVqaTask(trial.suite, trial.task_index, trial.init)
        for fam, variant in cues:
            inst = VqaInstance(task, fam, variant, trial.init)
            why = vifo.skip_reason(entry, fam, variant)
            if why:
                skipped.append({"instance": inst, "reason": why})
            else:
                plan.append(inst)
    return plan, skipped


class LiberoVqaScene:
    """The frames of one camera: ``shoot(inst)`` gives (raw, cued, world, cue) as
    ``instances.cued_image`` does, ``question_args(inst)`` the questions' camera model (the
    frame's own, mirrored) and LIBERO's names for the task's objects and regions."""

    placement = "overlay"

    def __init__(self, frames: Path, camera: str, catalog: dict):
        if camera not in EMBODIMENT.camera_names:
            raise ValueError(f"unknown LIBERO camera {camera!r}; valid: "
                             f"{', '.join(EMBODIMENT.camera_names)}")
        self.frames, self.camera, self.catalog = Path(frames), camera, catalog
        self._model = None
        self._frame: tuple | None = None  # (task, image, world): every cue of a task reads it

    def frame(self, task: LiberoVqaTask) -> tuple[np.ndarray, WorldState]:
        if self._frame is None or self._frame[0] != task:
            from vla_bridge.sim_nodes.libero.frames import frame_path
            path = frame_path(self.frames, task.suite, task.index, task.init)
            with np.load(path) as data:
                image = np.array(data[f"image_{self.camera}"])
                world = world_from_dict(json.loads(str(data["world_json"])))
            self._frame = (task, image, world)
        return self._frame[1], self._frame[2]

    def shoot(self, inst):
        entry = self.catalog[inst.task.suite][inst.task.index]
        raw, world = self.frame(inst.task)
        cue = vifo.build_cue(entry, inst.family, inst.variant)
        conditioner = CueConditioner(cue, None, mirrored=EMBODIMENT.mirrored_images)
        cued = conditioner({self.camera: raw}, world)[self.camera]
        if np.array_equal(cued, raw):
            raise ValueError(f"{inst.family} {inst.variant} draws nothing in {self.camera} "
                             "(anchors off-image or hidden)")
        self._model = conditioner.camera_models({self.camera: raw}, world=world)[self.camera]
        return raw, cued, _scene_world(world, entry), cue

    def question_args(self, inst) -> dict:
        entry = self.catalog[inst.task.suite][inst.task.index]
        looks = {n: _look(n, entry) for n in _categories(entry)}
        regions = {s: region_name(s, entry) for p in entry["goal"] for s in p[1:]
                   if s not in looks}
        return {"camera": self._model, "looks": looks, "names": regions}

    def close(self) -> None:
        pass


def render_frames(frames: Path, suites: str, tasks: str, inits: str,
                  python: str | None = None, stream=None) -> None:
    """Render the missing frames with LIBERO's virtualenv (``sim_nodes.libero.frames``);
    RuntimeError naming what to do when that venv is missing or the render fails."""
    from vla_bridge.ros.launch_args import LIBERO_VENV_PYTHON
    python = python or LIBERO_VENV_PYTHON
    if not Path(python).exists():
        raise RuntimeError(f"LIBERO's images need its virtualenv ({python}): run "
                           "`bash scripts/setup.sh libero`, or pass --frames with rendered frames")
    env = dict(os.environ)
    env.setdefault("MUJOCO_GL", "egl")
    cmd = [python, "-m", "vla_bridge.sim_nodes.libero.frames", "--out", str(frames),
           "--suites", suites, "--tasks", tasks, "--inits", inits]
    proc = subprocess.run(cmd, stdout=stream, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=str(Path(__file__).resolve().parents[3]),
                          timeout=FRAMES_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"rendering LIBERO's frames failed ({proc.returncode}): "
                           f"{proc.stderr.strip()[-1500:]}")


def run_libero_vqa(backend, frames: str | Path, suites: str = "", tasks: str = "",
                   cues: Sequence[tuple[str, str]] | None = None, inits: str = "0",
                   camera: str = "cam_high", output: str | Path = "runs/vqa_libero",
                   name: str | None = None, stream=None, render: bool = True) -> dict:
    """Part I-A on LIBERO's tasks (see the module docstring); ``backend`` as in
    ``runner.run_vqa``. Frames missing from ``frames`` are rendered first (``render``)."""
    from vla_bridge.vqa.backends import make_vqa_backend
    from vla_bridge.vqa.instances import parse_cues
    from vla_bridge.vqa.results import done_instances, read_rows, write_metrics
    from vla_bridge.vqa.runner import _check_same, _run
    catalog = load_catalog()
    plan, not_built = plan_libero_instances(catalog, suites, tasks, cues or parse_cues(), inits)
    scene = LiberoVqaScene(Path(frames), camera, catalog)
    owned = isinstance(backend, str)
    spec = backend if owned else (name or type(backend).__name__)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_rows(out)
    _check_same(rows, spec, camera, out)
    done = done_instances(rows)
    todo = [i for i in plan if i.key(camera) not in done]
    if render and todo:
        render_frames(Path(frames), suites, tasks, inits)
    skipped = [{"instance": s["instance"].key(camera), "reason": s["reason"]}
               for s in not_built]
    backend = make_vqa_backend(backend) if owned else backend
    try:
        _run(backend, spec, todo, out, scene, skipped, stream, len(plan) - len(todo))
    finally:
        if owned:
            backend.close()
        metrics = write_metrics(out, {"camera": camera, "placement": "overlay",
                                      "benchmark": "libero", "skipped": skipped})
    return metrics | {"new": len(todo) - (len(skipped) - len(not_built)),
                      "resumed": len(plan) - len(todo)}
