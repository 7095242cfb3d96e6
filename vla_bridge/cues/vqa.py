"""LIBERO-VIFO Part I-A: cue understanding by visual question answering.

Pure logic (numpy / OpenCV; MuJoCo is imported only when ``run_vqa`` builds its simulator),
no rclpy. For every selected task x cue (family, variant) x seed, ``run_vqa``

1. resets the MuJoCo scene for the task's layout and seed and renders one camera,
2. builds the task's cue exactly as the evaluator does for the closed-loop protocols
   (``protocols.build_cue(task, family, variant, seed)``) and inserts it with the live world
   state and camera model (F3 ghosts: the source object re-rendered at 4 future poses),
3. asks a ``VqaBackend`` the four multiple-choice questions of ``insertion.vqa_questions``
   (detection, semantics, grounding, decision),

and writes to the output directory:

* ``vqa_results.jsonl``: one row per question (appended; a rerun skips the instances whose
  four rows are there, so an interrupted run resumes and nothing is lost);
* ``vqa_examples/<family>_<variant>_<task>_s<seed>.png``: the cued image of the first
  instance of each family;
* ``vqa_metrics.json`` and ``vqa_table.txt``: accuracy per stage and Full-Chain Accuracy
  (FCA: an instance counts only when all four answers are right), per family and overall.

Backends are named by a spec string like the policy registry: ``random``, ``random?seed=3``,
``http?url=http://host:8000/vqa&timeout=30``, ``oracle``, or ``package.module:Class?k=v``.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import inspect
import json
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import cv2
import numpy as np

from vla_bridge.progress import Progress
from vla_bridge.tasks import TaskSpec, episode_seed

from .families import FAMILIES, STATE_OVERLAY, family
from .insertion import VQA_STAGES, full_chain_accuracy, insert, vqa_questions
from .protocols import (UNSUPPORTED_IN_GRAPH, build_cue, check_placement,
                        episode_scene_cues, family_table, resolve_family_variant)
from .replay import GHOST_POSES, ghost_path
from .sim_ghosts import render_ghost_layers

__all__ = [
    "VqaBackend", "RandomVqa", "OracleVqa", "HttpVqa", "VqaBackendUnavailable", "VQA_BACKENDS",
    "make_vqa_backend", "parse_cues", "VqaInstance", "plan_instances", "run_vqa", "vqa_metrics",
    "format_vqa_table", "read_rows", "encode_png", "RESULTS_FILE", "METRICS_FILE", "TABLE_FILE",
    "EXAMPLES_DIR",
]

RESULTS_FILE = "vqa_results.jsonl"
METRICS_FILE = "vqa_metrics.json"
TABLE_FILE = "vqa_table.txt"
EXAMPLES_DIR = "vqa_examples"


# ----------------------------------------------------------------------------- backends

class VqaBackend:
    """Answers one multiple-choice question about one image.

    ``answer(image, question, options)`` gets an (H, W, 3) uint8 RGB image and returns the
    index of the chosen option. Anything else (an index out of range, a non-integer, an
    exception) is recorded as a wrong answer with the reason. ``privileged`` backends also
    get ``correct=`` (the known answer index): only the oracle, which validates the pipeline.
    """

    privileged: bool = False

    def answer(self, image: np.ndarray, question: str, options: list[str]) -> int:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (connections, models)."""


class RandomVqa(VqaBackend):
    """Chance baseline: a uniformly random option, reproducible from (seed, image, question,
    options), so a resumed run answers exactly like an uninterrupted one."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def answer(self, image, question, options):
        h = hashlib.sha256(json.dumps([self.seed, question, list(options)]).encode())
        h.update(np.ascontiguousarray(image).tobytes())
        return int.from_bytes(h.digest()[:8], "little") % len(options)


class OracleVqa(VqaBackend):
    """Privileged: returns the known correct index without looking at the image. Its 100 %
    only shows that questions, answers and metrics are wired right; it measures nothing."""

    privileged = True

    def answer(self, image, question, options, correct: int | None = None):
        if correct is None:
            raise ValueError("the oracle VQA backend needs the correct index (privileged)")
        return correct


class VqaBackendUnavailable(ConnectionError):
    """The backend cannot be reached at all: the run stops (rows so far are kept)."""


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an RGB uint8 image."""
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("could not encode the image as PNG")
    return buf.tobytes()


class HttpVqa(VqaBackend):
    """A user's VLM server. POSTs ``{"image_png_base64", "question", "options"}`` as JSON to
    ``url`` and expects ``{"answer": <int index>}``. Connection refused / unknown host stops
    the run with ``VqaBackendUnavailable``; a timeout, an HTTP error or a bad reply counts
    as a wrong answer with the reason recorded."""

    def __init__(self, url: str, timeout: float = 60.0):
        if not str(url).startswith(("http://", "https://")):
            raise ValueError(f"http VQA backend: url must start with http:// or https://, got {url!r}")
        self.url, self.timeout = str(url), float(timeout)

    def answer(self, image, question, options):
        body = json.dumps({"image_png_base64": base64.b64encode(encode_png(image)).decode("ascii"),
                           "question": question, "options": list(options)}).encode()
        req = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                reply = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace")
            raise RuntimeError(f"VQA server replied HTTP {exc.code}: {detail}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise TimeoutError(f"no answer from {self.url} within {self.timeout:g} s") from None
            raise VqaBackendUnavailable(f"VQA server {self.url} is unreachable ({exc.reason}); "
                                        "start it or fix http?url=...") from None
        except TimeoutError:
            raise TimeoutError(f"no answer from {self.url} within {self.timeout:g} s") from None
        if not isinstance(reply, dict) or "answer" not in reply:
            raise ValueError(f'VQA server reply has no "answer": {str(reply)[:200]}')
        return reply["answer"]


VQA_BACKENDS = {
    "random": "vla_bridge.cues.vqa:RandomVqa",
    "http": "vla_bridge.cues.vqa:HttpVqa",
    "oracle": "vla_bridge.cues.vqa:OracleVqa",
}


def _backend_class(base: str):
    spec = VQA_BACKENDS.get(base, base)
    if ":" not in spec:
        raise ValueError(f"unknown VQA backend {base!r}; available: {sorted(VQA_BACKENDS)} "
                         "or 'package.module:Class' for your own")
    module, name = spec.split(":", 1)
    try:
        cls = getattr(import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"VQA backend {base!r} cannot be loaded: {exc}") from None
    if not callable(getattr(cls, "answer", None)):
        raise ValueError(f"VQA backend {base!r} has no answer(image, question, options) method")
    return cls


def make_vqa_backend(spec: str) -> VqaBackend:
    """A backend from "NAME", "NAME?k=v&k=v" or "package.module:Class?k=v" (values JSON-parsed
    when they can be, as for policies)."""
    from vla_bridge.policy_nodes.registry import parse_spec

    base, kwargs = parse_spec(spec)
    cls = _backend_class(base)
    params = inspect.signature(cls).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise ValueError(f"VQA backend {base!r} takes no argument(s) {unknown}; "
                             f"it accepts {list(params)}")
    missing = [k for k, p in params.items() if p.default is p.empty and k not in kwargs
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        example = "http?url=http://localhost:8000/vqa" if base == "http" else f"{base}?{missing[0]}=..."
        raise ValueError(f"VQA backend {base!r} needs {missing} (e.g. {example})")
    return cls(**kwargs)


# ----------------------------------------------------------------------------- instances

def parse_cues(families: str | Sequence[str] = "", variant: str = "") -> list[tuple[str, str]]:
    """(family code, variant) pairs. ``families``: comma-separated codes or names (default: all
    eight). ``variant``: "" (each family's default), "all" (every variant the runner can
    draw), a name (valid for every chosen family) or "F2=curved_path,F6=hazard"."""
    names = families.split(",") if isinstance(families, str) else list(families)
    codes = list(dict.fromkeys(family(n.strip()).code for n in names if n.strip())) or list(FAMILIES)
    variant = (variant or "").strip()
    if variant == "all":
        return [(c, v) for c in codes for v in FAMILIES[c].variants
                if (c, v) not in UNSUPPORTED_IN_GRAPH]
    if "=" in variant:
        chosen = {family(k.strip()).code: v.strip()
                  for k, v in (p.split("=", 1) for p in variant.split(",") if p.strip())}
        return [resolve_family_variant(c, chosen.get(c, "")) for c in codes]
    return [resolve_family_variant(c, variant) for c in codes]


@dataclass(frozen=True)
class VqaInstance:
    """One cue instance: a task shown with one cue (family, variant) at one seed."""
    task: TaskSpec
    family: str
    variant: str
    seed: int

    def key(self, camera: str, placement: str = "overlay") -> str:
        base = f"{self.task.id}|{self.family}|{self.variant}|{self.seed}|{camera}"
        return base if placement == "overlay" else f"{base}|{placement}"

    @property
    def question_seed(self) -> int:
        """Seed of the option order: differs per cue, so the correct option's position does
        not repeat across the families of one episode (a position bias stays a bias)."""
        return zlib.crc32(f"{self.seed}|{self.family}|{self.variant}".encode())


def plan_instances(tasks: Iterable[TaskSpec], cues: Sequence[tuple[str, str]],
                   rounds: int = 1, seeds: Sequence[int] | None = None,
                   base_seed: int = 42) -> list[VqaInstance]:
    """Task-major instances; seeds are explicit or the benchmark's ``episode_seed`` per round
    (so instance s matches episode s of the closed-loop protocols)."""
    out = []
    for task in tasks:
        task_seeds = list(seeds) if seeds else [episode_seed(task.id, r, base_seed)
                                                for r in range(1, rounds + 1)]
        out += [VqaInstance(task, f, v, s) for s in task_seeds for f, v in cues]
    return out


# ----------------------------------------------------------------------------- scene + cue

def ghost_poses(cue, world, k: int = GHOST_POSES) -> list[np.ndarray]:
    """K future positions of the cue's source object (``replay.ghost_path``, the path the
    graph's overlay draws)."""
    return [pos for pos, _obj in ghost_path(cue, world, k)]


def sim_ghost_layers(sim, cue, world, camera: str) -> list:
    """F3 simulator-state overlay: the source object re-rendered at its future poses
    (``sim_ghosts.render_ghost_layers``). [] when the source is not a free body (nothing
    moves, so there is no trajectory) or the sim is not MuJoCo."""
    src = cue.anchors.get("source")
    if getattr(sim, "model", None) is None or src is None or src.entity is None:
        return []
    return render_ghost_layers(sim, src.entity, ghost_poses(cue, world), camera)


class _Scene:
    """Resets the sim only when (scene, layout, seed) changes; the frame is reused by every
    cue of that reset."""

    def __init__(self, sim, camera: str, placement: str = "overlay"):
        self.sim, self.camera, self._key, self.frame = sim, camera, None, None
        self.placement = placement
        # scene placement: the card textures (rewritten per instance)
        self.textures = tempfile.TemporaryDirectory(prefix="vla_bridge_vqa_") \
            if placement == "scene" else None

    def close(self) -> None:
        if self.textures is not None:
            self.textures.cleanup()

    def get(self, task: TaskSpec, seed: int):
        key = (task.scene, task.layout, seed)
        if key != self._key:
            self.sim.reset(task.scene, task.layout, seed)
            world = self.sim.world_state()
            self.frame = (world, self.sim.render(self.camera), self.sim.camera_model(self.camera))
            self._key = key
        return self.frame


def cued_image(scene: _Scene, inst: VqaInstance):
    """(raw, cued, world, cue) for one instance; ValueError when the cue draws nothing.

    The cue is built exactly as the evaluator builds it for the closed-loop protocols
    (grounded against the layout's spawn positions for the seed: the cue specification is
    held fixed across protocols); its anchors name objects, so the live world places it."""
    world, raw, cam = scene.get(inst.task, inst.seed)
    cue = build_cue(inst.task, inst.family, inst.variant, inst.seed)
    if scene.placement == "scene":
        return scene_card_image(scene, inst, raw, cue)
    layers = sim_ghost_layers(scene.sim, cue, world, scene.camera) if cue.mode == STATE_OVERLAY else None
    if layers == []:
        raise ValueError(f"{inst.family} {inst.variant}: no ghost trajectory (the source is not "
                         "a movable object, or the sim cannot re-render it)")
    cued = insert(raw, cue, world, cam, layers)
    if np.array_equal(cued, raw):
        raise ValueError(f"{inst.family} {inst.variant} draws nothing in {scene.camera} "
                         "(anchors off-image or hidden)")
    return raw, cued, world, cue


def scene_card_image(scene: _Scene, inst: VqaInstance, raw: np.ndarray, cue):
    """(raw, image, world, cue) with the cue standing in the scene as the sim node places it
    under cue_placement scene (``protocols.episode_scene_cues``), rendered by the sim."""
    cards = episode_scene_cues(inst.task, inst.family, inst.variant, inst.seed,
                               out_dir=scene.textures.name)
    scene.sim.reset(inst.task.scene, inst.task.layout, inst.seed, cards)
    image = scene.sim.render(scene.camera)
    if np.array_equal(image, raw):
        raise ValueError(f"{inst.family} {inst.variant}: the card is not visible in {scene.camera}")
    return raw, image, scene.sim.world_state(), cue


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


def instance_rows(backend, inst: VqaInstance, image, world, cue, camera: str,
                  spec: str, placement: str = "overlay") -> list[dict]:
    """Ask the four questions of one instance; one row per question."""
    base = {"instance": inst.key(camera, placement), "task": inst.task.id,
            "scene": inst.task.scene, "level": inst.task.level, "family": inst.family,
            "variant": inst.variant, "seed": inst.seed, "camera": camera,
            "placement": placement, "backend": spec}
    rows = []
    for q in vqa_questions(cue, world, inst.question_seed):
        answer, error, secs = ask(backend, image, q)
        rows.append({**base, "stage": q["stage"], "question": q["question"],
                     "options": q["options"], "correct_index": q["answer"], "answer": answer,
                     "correct": answer == q["answer"], "seconds": round(secs, 4), "error": error})
    return rows


# ----------------------------------------------------------------------------- results

def read_rows(out_dir: str | Path) -> list[dict]:
    """Rows of ``vqa_results.jsonl`` (a torn last line is ignored)."""
    from vla_bridge.evaluation import read_jsonl
    return read_jsonl(Path(out_dir) / RESULTS_FILE)


def _latest(rows: Iterable[dict]) -> list[dict]:
    """One row per (instance, stage): the last written."""
    return list({(r["instance"], r["stage"]): r for r in rows}.values())


def _done(rows: list[dict]) -> set[str]:
    stages: dict[str, set] = {}
    for r in rows:
        stages.setdefault(r["instance"], set()).add(r["stage"])
    return {k for k, s in stages.items() if s >= set(VQA_STAGES)}


def _pct(hits: int, n: int) -> float | None:
    return round(100.0 * hits / n, 2) if n else None


def _summary(rows: list[dict]) -> dict:
    out = {}
    for stage in VQA_STAGES:
        rs = [r for r in rows if r["stage"] == stage]
        out[stage] = _pct(sum(r["correct"] for r in rs), len(rs))
    done = _done(rows)
    chains = {}
    for r in rows:
        if r["instance"] in done:
            chains.setdefault(r["instance"], []).append(r["correct"])
    out["fca"] = round(full_chain_accuracy(chains.values()), 2) if chains else None
    out["instances"] = len(chains)
    out["questions"] = len(rows)
    out["errors"] = sum(r.get("error") is not None for r in rows)
    return out


def vqa_metrics(rows: Iterable[dict]) -> dict:
    """Per family and overall (pooled): accuracy per stage and FCA (percent); ``average`` is
    the mean over families (the paper's "Avg."); timing in seconds."""
    rows = _latest(rows)
    fams = sorted({r["family"] for r in rows})
    by_family = {f: _summary([r for r in rows if r["family"] == f]) for f in fams}
    keys = (*VQA_STAGES, "fca")
    average = {k: (round(float(np.mean(v)), 2) if (v := [m[k] for m in by_family.values()
                                                          if m[k] is not None]) else None)
               for k in keys}
    secs = [r["seconds"] for r in rows]
    per_inst: dict[str, float] = {}
    for r in rows:
        per_inst[r["instance"]] = per_inst.get(r["instance"], 0.0) + r["seconds"]
    return {
        "overall": _summary(rows), "average": average, "by_family": by_family,
        "variants": sorted({f"{r['family']}/{r['variant']}" for r in rows}),
        "backends": sorted({r.get("backend", "") for r in rows}),
        "seconds_per_question": round(float(np.mean(secs)), 4) if secs else None,
        "answer_seconds_per_instance": (round(float(np.mean(list(per_inst.values()))), 4)
                                        if per_inst else None),
        "definitions": {s: f"{s} questions answered correctly" for s in VQA_STAGES}
        | {"fca": "instances with all four answers correct (Full-Chain Accuracy)"},
    }


def format_vqa_table(metrics: dict) -> str:
    """Text table: one row per stage + FCA, one column per family, Avg. (macro), All (pooled)."""
    fams = sorted(metrics["by_family"])
    lines, w = family_table(metrics, [(s, s) for s in VQA_STAGES] + [("fca", "FCA")], "stage")
    counts = [metrics["by_family"][f]["instances"] for f in fams]
    lines.append(f"{'instances':<11}" + "".join(f"{n:>{w}}" for n in counts)
                 + f"{'':>{w}}{metrics['overall']['instances']:>{w}}")
    o = metrics["overall"]
    lines.append(f"questions: {o['questions']} ({o['errors']} errors); "
                 f"backend: {', '.join(metrics['backends']) or '-'}")
    return "\n".join(lines)


def write_metrics(out_dir: str | Path, extra: dict | None = None) -> dict:
    """vqa_metrics.json and vqa_table.txt from the directory's vqa_results.jsonl."""
    out = Path(out_dir)
    metrics = vqa_metrics(read_rows(out)) | (extra or {})
    for name, text in ((METRICS_FILE, json.dumps(metrics, indent=1)),
                       (TABLE_FILE, format_vqa_table(metrics) + "\n")):
        tmp = out / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(out / name)
    return metrics


def _check_same(rows: list[dict], spec: str, camera: str, out: Path,
                placement: str = "overlay") -> None:
    """Resuming must not mix backends, cameras or placements in one directory's metrics."""
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
        path = folder / f"{inst.family}_{inst.variant}_{inst.task.id}_s{inst.seed}.png"
        path.write_bytes(encode_png(image))


# ----------------------------------------------------------------------------- runner

def run_vqa(backend: str | VqaBackend, tasks: Iterable[TaskSpec],
            cues: Sequence[tuple[str, str]] | None = None, rounds: int = 1,
            seeds: Sequence[int] | None = None, camera: str = "cam_high",
            output: str | Path = "runs/vqa", sim=None, stream=None,
            name: str | None = None, placement: str = "overlay") -> dict:
    """Ask ``backend`` the Part I-A questions of every instance; see the module docstring for
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
    done = _done(rows)
    todo = [i for i in plan if i.key(camera, placement) not in done]
    backend = make_vqa_backend(backend) if owned else backend
    own_sim = sim is None
    if own_sim:
        from vla_bridge.sim_nodes.mujoco_backend import MujocoBackend
        sim = MujocoBackend()
    skipped: list[dict] = []
    scene = _Scene(sim, camera, placement)
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
        _raw, image, world, cue = cued_image(scene, inst)
    except (ValueError, KeyError) as exc:
        return str(exc)
    rows = instance_rows(backend, inst, image, world, cue, scene.camera, spec, scene.placement)
    fh.write("".join(json.dumps(r) + "\n" for r in rows))  # one write: whole or torn, never half
    fh.flush()
    _save_example(out, inst, image)
    return None


# ----------------------------------------------------------------------------- CLI

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", required=True,
                        help="VQA backend spec: random[?seed=N], http?url=URL[&timeout=S], oracle "
                             "(privileged, pipeline check only) or package.module:Class[?k=v]")
    parser.add_argument("--scene", default="", help="comma-separated scenes (default: all)")
    parser.add_argument("--levels", default="", help="comma-separated levels L0..L3 (default: all)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (override --scene/--levels)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N selected tasks")
    parser.add_argument("--families", default="", help="comma-separated families (default: F1..F8)")
    parser.add_argument("--variant", default="",
                        help="'' each family's default, 'all', a variant name, or F2=arrow,F6=hazard")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--rounds", type=int, default=1,
                       help="seeds per task: the benchmark episode seeds of rounds 1..N (default 1)")
    seeds.add_argument("--seeds", default="", help="explicit comma-separated seeds instead")
    parser.add_argument("--camera", default="cam_high", help="camera to render (default cam_high)")
    parser.add_argument("--placement", choices=("overlay", "scene"), default="overlay",
                        help="overlay: draw the cue into the render (default); scene: stand it in "
                             "the workspace as a card (F1, F6, F8; paper section 4.2)")
    parser.add_argument("--output", default="runs/vqa", help="output directory (resumed when it exists)")


def _int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated integers, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from vla_bridge.contract import CAMERAS
    from vla_bridge.tasks import load_suite, select_tasks

    try:
        if args.camera not in CAMERAS:
            raise ValueError(f"unknown camera {args.camera!r}; valid: {', '.join(CAMERAS)}")
        cues = parse_cues(args.families, args.variant)
        for fam, _variant in cues:
            check_placement(args.placement, fam)
        tasks = select_tasks(load_suite(), args.scene, args.levels, args.tasks)
        seeds = _int_list(args.seeds, "--seeds") if args.seeds else None
        tasks = tasks[:args.limit] if args.limit > 0 else tasks
        if not tasks:
            raise ValueError("no task selected")
        backend = make_vqa_backend(args.backend)
    except ValueError as exc:
        print(f"vla-bridge vqa: {exc}", file=sys.stderr)
        return 2
    try:
        metrics = run_vqa(backend, tasks, cues, args.rounds, seeds, args.camera, args.output,
                          name=args.backend, placement=args.placement)
    except (VqaBackendUnavailable, ValueError) as exc:
        print(f"vla-bridge vqa: {exc}", file=sys.stderr)
        return 1
    finally:
        backend.close()
    print(format_vqa_table(metrics))
    print(f"results: {Path(args.output) / RESULTS_FILE}")
    return 0
