"""The resumable Part I-A runner: render each instance, ask its four questions, append rows.

``run_vqa`` skips the instances whose four rows are already in the output directory, so an
interrupted run resumes; ``ask`` turns whatever a backend returns (or raises) into an answer
index or a recorded error; ``instance_rows`` shows each question its image (the cue-free
render for a cue-free detection question, else the cued one). MuJoCo is imported only when
``run_vqa`` builds its own simulator.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from vla_bridge.evaluation.progress import Progress
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec

from vla_bridge.benchmarks.vifo.scene_cards import check_placement
from vla_bridge.vqa.backends import (VqaBackend, VqaBackendUnavailable, encode_png,
                                                make_vqa_backend)
from vla_bridge.vqa.instances import (VqaInstance, VqaScene, parse_cues,
                                                 plan_instances)
from vla_bridge.vqa.questions import QUESTIONS_VERSION, vqa_questions
from vla_bridge.vqa.results import (EXAMPLES_DIR, RESULTS_FILE, done_instances,
                                               read_rows, write_metrics)

__all__ = ["ask", "instance_rows", "run_vqa"]


# ----------------------------------------------------------------------------- asking

def _index(raw, n: int) -> tuple[int | None, str | None]:
    """(answer, error): a valid option index, or None with the reason."""
    if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)):
        return None, f"answer {raw!r} is not an option index (int)"
    if not 0 <= int(raw) < n:
        return None, f"answer {int(raw)} out of range 0..{n - 1}"
    return int(raw), None


def ask(backend, image: np.ndarray, q: dict) -> tuple[int | None, str | None, float]:
    """(answer index or None, error or None, seconds) for one question."""
    extra = {"correct": q["answer"]} if getattr(backend, "privileged", False) else {}
    t0 = time.perf_counter()
    try:
        raw = backend.answer(image.copy(), q["question"], list(q["options"]), **extra)
        answer, error = _index(raw, len(q["options"]))
    except VqaBackendUnavailable:
        raise
    except Exception as exc:
        answer, error = None, f"{type(exc).__name__}: {exc}"
    return answer, error, time.perf_counter() - t0


def instance_rows(backend, inst: VqaInstance, shot: tuple, scene: VqaScene,
                  spec: str) -> list[dict]:
    """Ask the four questions of one instance; one row per question. ``shot`` is
    ``scene.shoot``'s (raw, cued, world, cue); ``scene`` gives the camera, the placement and
    the questions' camera model and names (``question_args``)."""
    raw, cued, world, cue = shot
    camera, placement = scene.camera, scene.placement
    base = {"instance": inst.key(camera, placement), "task": inst.task.id,
            "scene": inst.task.scene, "level": inst.task.level, "family": inst.family,
            "variant": inst.variant, "seed": inst.seed, "camera": camera,
            "placement": placement, "backend": spec, "questions": QUESTIONS_VERSION}
    rows = []
    args = scene.question_args(inst)
    camera_model = args.pop("camera")
    for q in vqa_questions(cue, world, camera_model, inst.question_seed,
                           inst.cue_free_detection, **args):
        answer, error, secs = ask(backend, cued if q["cue_shown"] else raw, q)
        rows.append({**base, "stage": q["stage"], "cue_shown": q["cue_shown"],
                     "question": q["question"], "options": q["options"],
                     "correct_index": q["answer"], "answer": answer,
                     "correct": answer == q["answer"], "seconds": round(secs, 4), "error": error})
    return rows


# ----------------------------------------------------------------------------- runner

def _check_same(rows: list[dict], spec: str, camera: str, out: Path,
                placement: str = "overlay") -> None:
    """Resuming must not mix backends, cameras, placements or question versions in one
    directory's metrics."""
    versions = sorted({r.get("questions", 1) for r in rows})
    if any(v != QUESTIONS_VERSION for v in versions):
        raise ValueError(f"{out} holds answers to questions of version {versions}, not "
                         f"{QUESTIONS_VERSION}: use another --output so the metrics do not mix")
    placements = sorted({r.get("placement", "overlay") for r in rows})
    if any(p != placement for p in placements):
        raise ValueError(f"{out} holds answers for cue placement {placements}, not "
                         f"{placement!r}: use another --output so the metrics do not mix")
    name = spec.partition("?")[0]
    backends = sorted({r.get("backend", "") for r in rows} - {""})
    if any(b.partition("?")[0] != name for b in backends):
        raise ValueError(f"{out} holds answers of backend {backends}, not {name!r}: "
                         "use another --output so the metrics do not mix")
    cameras = sorted({r.get("camera", "") for r in rows} - {""})
    if any(c != camera for c in cameras):
        raise ValueError(f"{out} holds answers for camera {cameras}, not {camera!r}: "
                         "use another --output so the metrics do not mix")


def _save_example(out: Path, inst: VqaInstance, image: np.ndarray) -> None:
    folder = out / EXAMPLES_DIR
    folder.mkdir(exist_ok=True)
    if not any(folder.glob(f"{inst.family}_*.png")):
        task = inst.task.id.replace("/", "_")  # LIBERO's ids are "suite/number"
        path = folder / f"{inst.family}_{inst.variant}_{task}_s{inst.seed}.png"
        path.write_bytes(encode_png(image))


def run_vqa(backend: str | VqaBackend, tasks: Iterable[TaskSpec],
            cues: Sequence[tuple[str, str]] | None = None, rounds: int = 1,
            seeds: Sequence[int] | None = None, camera: str = "cam_high",
            output: str | Path = "runs/vqa", sim=None, stream=None,
            name: str | None = None, placement: str = "overlay") -> dict:
    """Ask ``backend`` the Part I-A questions of every instance; see the package docstring for
    the files. ``backend`` is a spec (made and closed here) or an instance (``name``, default
    its class name, goes into the rows). ``sim`` defaults to a new ``MujocoBackend``. Returns
    the metrics plus ``new`` / ``resumed`` and ``skipped`` (instances whose cue could not be
    drawn, with the reason). ``placement`` "scene": the cue stands in the scene as a card
    (F1, F6, F8; as under the protocols' cue_placement scene) instead of being drawn."""
    owned = isinstance(backend, str)
    spec = backend if owned else (name or type(backend).__name__)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_rows(out)
    _check_same(rows, spec, camera, out, placement)
    plan = plan_instances(tasks, cues or parse_cues(), rounds, seeds)
    for fam in sorted({i.family for i in plan}):
        check_placement(placement, fam)
    done = done_instances(rows)
    todo = [i for i in plan if i.key(camera, placement) not in done]
    backend = make_vqa_backend(backend) if owned else backend
    own_sim = sim is None
    if own_sim:
        from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
        sim = MujocoBackend()
    skipped: list[dict] = []
    scene = VqaScene(sim, camera, placement)
    try:
        _run(backend, spec, todo, out, scene, skipped, stream, len(plan) - len(todo))
    finally:
        scene.close()
        if own_sim:
            sim.close()
        if owned:
            backend.close()
        metrics = write_metrics(out, {"camera": camera, "placement": placement,
                                      "skipped": skipped})
    return metrics | {"new": len(todo) - len(skipped), "resumed": len(plan) - len(todo)}


def _end_torn_line(path: Path) -> None:
    """A run killed mid-write leaves a line without newline: end it so new rows stay whole."""
    if path.exists() and path.stat().st_size:
        with open(path, "rb+") as fh:
            fh.seek(-1, 2)
            if fh.read(1) != b"\n":
                fh.write(b"\n")


def _run(backend, spec, todo, out, scene, skipped, stream, resumed) -> None:
    with Progress(len(todo), "vqa", stream if stream is not None else sys.stderr) as bar:
        if resumed:
            bar.write(f"vqa: {resumed} instance(s) already in {out / RESULTS_FILE}: skipped")
        _end_torn_line(out / RESULTS_FILE)
        with open(out / RESULTS_FILE, "a") as fh:
            for inst in todo:
                name = f"{inst.task.id} {inst.family}/{inst.variant} s{inst.seed}"
                why = _run_instance(backend, spec, inst, scene, out, fh)
                if why is not None:
                    skipped.append({"instance": inst.key(scene.camera, scene.placement),
                                    "reason": why})
                    bar.write(f"vqa: skipped {name}: {why}")
                bar.update(item=name)


def _run_instance(backend, spec, inst, scene, out, fh) -> str | None:
    """Render, ask and append one instance's four rows; the reason when it is skipped."""
    try:
        shot = scene.shoot(inst)
    except (ValueError, KeyError) as exc:
        return str(exc)
    rows = instance_rows(backend, inst, shot, scene, spec)
    fh.write("".join(json.dumps(r) + "\n" for r in rows))  # one write: whole or torn, never half
    fh.flush()
    _save_example(out, inst, shot[1])
    return None
