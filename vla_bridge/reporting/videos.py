"""Replay videos of saved episodes.

A saved episode's executed commands are replayed in the MuJoCo backend from the same scene,
layout and seed (the lock-step sim is deterministic; the replay checks the TCP positions
against the recorded ones), rendered from ``cam_high`` with the instruction, frame index and
scores drawn in (``video_io``: H.264 MP4, else OpenCV ``mp4v``, else animated GIF). The idle
tail after the last motion (``idle``) is cut, leaving a second of rest; the last frame says so.
When the episode ran under a visual-cue protocol (its row has a ``cue`` with a family and a
cue task), the video shows by default what the policy saw: the evaluator's CueSpec is rebuilt
(``benchmarks.vifo.replay.episode_cue``) and every replayed frame goes through the overlay's
own conditioning (``benchmarks.vifo.replay.CueConditioner``: anchors re-resolved in the
replayed world state, wrist cameras from the replayed joints, the same ghost path). The view
is ``cued``, ``raw`` or ``both`` (side by side, raw left). A cue placed in the scene
(``cue_placement`` scene) is rebuilt as the sim node's card in the replay's reset instead:
the sim images show it, so there is one view.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from vla_bridge.reporting.common import ReportError
from vla_bridge.reporting.idle import active_length
from vla_bridge.reporting.video_io import GifWriter, Overlay, open_mp4

VIDEO_CAMERA = "cam_high"
VIDEO_VIEWS = ("cued", "raw", "both")  # what a video shows; default: cued if the episode had a cue
REPLAY_DRIFT_WARN_M = 1e-3  # replayed TCP further than this from the record: not the same episode


@dataclass
class VideoResult:
    episode: str  # the .npz, relative to the run directory when known
    path: str
    format: str  # "mp4" or "gif"
    codec: str  # "h264", "mp4v" (no PyAV/libx264) or "gif"
    frames: int  # frames written
    width: int
    height: int
    fps: float
    episode_frames: int  # frames in the record
    render_s: float  # wall time of replay + rendering + encoding
    max_tcp_drift_m: float  # max |replayed TCP - recorded TCP| over the rendered frames
    note: str = ""
    view: str = "raw"  # "raw", "cued" or "both" (raw | cued side by side)
    cue: str = ""  # the episode's cue (protocol | family / variant | cue task); "" without one
    cue_ms_per_frame: float | None = None  # mean cue conditioning time of a frame (cued views)
    idle_cut_frames: int = 0  # episode frames of the idle tail left out at the end
    idle_cut_s: float = 0.0  # the same in episode seconds


@dataclass
class ReplayFrame:
    """One rendered frame of a replay: tick index, world state, the raw camera image and, when
    a cue conditioner is given, the image the policy saw (else None)."""
    index: int
    world: Any
    raw: np.ndarray
    cued: np.ndarray | None = None
    cue_ms: float = 0.0  # time spent conditioning this frame


# =============================================================================== replay

def _check_replayable(episode_path, record, meta) -> None:
    if record.commands is None or len(record.commands) == 0:
        raise ValueError(f"{episode_path}: the record holds no commands to replay")
    for key in ("scene", "layout", "seed"):
        if meta.get(key) is None:
            raise ValueError(f"{episode_path}: meta lacks {key!r}, cannot rebuild the episode")


def replay_frames(record, meta: Mapping, backend, camera: str = VIDEO_CAMERA, stride: int = 1,
                  conditioner=None, cue_objects=(), end: int | None = None):
    """Replay a record's commands on `backend` (reset to meta's scene, layout, seed) and yield a
    ReplayFrame for frame 0 (after reset), every `stride`-th frame and the last one (frame
    `end` - 1 when `end` is given: the frames after it are not replayed).

    `conditioner` (``benchmarks.vifo.replay.CueConditioner``) adds the cued image: the frame
    goes through the overlay's code path with the replayed world state, joint state and the
    focal length the sim's ``camera_info`` carries for `camera`. `cue_objects`: the episode's
    scene cue cards (``benchmarks.vifo.replay.episode_scene_objects``), part of the reset like
    in the sim node.
    """
    from vla_bridge.sim_nodes.session import SimSession
    session = SimSession(backend)
    session.begin(meta["scene"], meta["layout"], int(meta["seed"]), cue_objects=tuple(cue_objects))
    focal = ({camera: float(backend.camera_model(camera).focal_px)}
             if conditioner is not None else None)
    n = len(record.commands) if end is None else min(end, len(record.commands))
    for i in range(n):
        if i:
            session.step_action(record.commands[i])
        if i % stride and i != n - 1:
            continue
        world = backend.world_state()
        raw = backend.render(camera)
        cued, ms = None, 0.0
        if conditioner is not None:
            t = time.perf_counter()
            cued = conditioner({camera: raw}, world, backend.joint_positions(), focal)[camera]
            ms = (time.perf_counter() - t) * 1e3
        yield ReplayFrame(i, world, raw, cued, ms)


def _episode_view(cue_info, seed, view: str | None):
    """(CueSpec to draw or None, view actually shown, note, placement) for one episode."""
    from vla_bridge.benchmarks.vifo.replay import cue_placement, episode_cue
    if view is not None and view not in VIDEO_VIEWS:
        raise ValueError(f"video view must be one of {', '.join(VIDEO_VIEWS)}, got {view!r}")
    placement = cue_placement(cue_info)
    spec = episode_cue(cue_info, seed) if placement is not None else None  # checks it rebuilds
    if spec is not None:  # F3 / F4 goal_image: from the plan's rollout, as the evaluator did
        from vla_bridge.benchmarks.robofollow.tasks import load_suite
        from vla_bridge.evaluation.cues.run import plan_params
        task = load_suite().get(str(cue_info["cue_task"]))
        spec.params.update(plan_params(task, int(seed), spec.family, spec.variant,
                                       cue_info.get("ghosts") == "rendered"))
    if placement == "scene":  # a card in the sim: every replayed image shows it, nothing to draw
        note = "" if view in (None, "cued") else (
            f"{view} view asked, but the cue is a card in the scene: the sim images show it")
        return None, "cued", note, placement
    shown = view or ("cued" if spec is not None else "raw")
    if spec is None and shown != "raw":
        return None, "raw", f"{shown} view asked, but the episode showed no cue: raw images", None
    return (spec if shown != "raw" else None), shown, "", placement


def _ghost_renderer(spec, cue_info, meta):
    """An F3 cue whose ghosts the evaluator rendered on a scene copy (row["cue"]["ghosts"]):
    the same renderer for the replay; else None (projected boxes, as the policy saw them)."""
    if spec is None or (cue_info or {}).get("ghosts") != "rendered":
        return None
    from vla_bridge.sim_nodes.mujoco.ghosts import MirrorGhostRenderer
    renderer = MirrorGhostRenderer()
    renderer.reset(meta["scene"], meta["layout"], int(meta["seed"]))
    return renderer


# =============================================================================== one video

def _add_note(note: str, extra: str) -> str:
    """`note` and `extra` joined by "; " (either may be empty)."""
    return "; ".join(part for part in (note, extra) if part)


def _caption(described: str, placement: str | None, shown: str) -> str:
    """The caption's cue line ("" without a cue)."""
    if not described:
        return ""
    if placement == "scene":
        return f"cue (a card in the scene): {described}"
    return f"cue: {described}" if shown != "raw" else f"cue (not drawn, raw view): {described}"


def _open_writer(out_path: Path, fmt: str, fps: float, size: tuple[int, int]) -> tuple[Any, str]:
    """The writer of format `fmt` and a note ("" unless H.264 or mp4 failed)."""
    if fmt == "mp4":
        try:
            return open_mp4(out_path.with_suffix(".mp4"), fps, size)
        except Exception as exc:
            return GifWriter(out_path.with_suffix(".gif"), fps), f"mp4 failed ({exc}); wrote GIF"
    if fmt != "gif":
        raise ValueError(f"video format must be mp4 or gif, got {fmt!r}")
    return GifWriter(out_path.with_suffix(".gif"), fps), ""


def _tcp_drift(frame: ReplayFrame, record) -> float:
    """Max |replayed TCP - recorded TCP| (m) over the arms of one frame."""
    drift = 0.0
    for arm, tcp in frame.world.tcp.items():
        if arm in record.tcp_pos:
            recorded = record.tcp_pos[arm][frame.index]
            drift = max(drift, float(np.abs(np.asarray(tcp.pos) - recorded).max()))
    return drift


def _write_frames(writer, overlay: Overlay, frames, record, shown: str, control_period: float,
                  marks: Mapping[int, str]) -> tuple[int, float, list[float]]:
    """Caption and write the replayed frames: (frames written, max TCP drift, cue ms a frame).
    `marks`: text after the frame index of some frames (by episode frame index)."""
    last = len(record.commands) - 1
    drift, written, cue_ms = 0.0, 0, []
    for f in frames:
        drift = max(drift, _tcp_drift(f, record))
        if f.cued is not None:
            cue_ms.append(f.cue_ms)
        if shown == "both":
            image = np.concatenate([f.raw, f.cued], axis=1)
        else:  # a scene cue's "cued" view is the raw image: the card is in the scene
            image = f.raw if f.cued is None else f.cued
        writer.add(overlay.compose(image, f.index, last, f.index * control_period,
                                   marks.get(f.index, "")))
        written += 1
    return written, drift, cue_ms


def render_episode_video(episode_path: str | Path, out_path: str | Path, *, backend=None,
                         camera: str = VIDEO_CAMERA, stride: int = 2, fps: float | None = None,
                         scale: int = 2, fmt: str = "mp4", meta_override: dict | None = None,
                         label: str | None = None, cue: Mapping | None = None,
                         view: str | None = None, trim_idle: bool = True) -> VideoResult:
    """Replay a saved episode's commands in MuJoCo and write a captioned video of `camera`.

    Frame 0 is the scene after reset; frame i (i >= 1) follows the i-th executed command.
    Every `stride`-th frame and the last one are rendered (rendering dominates the cost on
    a CPU renderer), played at `fps` (default: real time, 1 / (control period x stride)).
    `trim_idle`: stop a second after the last motion (``idle.active_length``); the last frame's
    caption and the result (``idle_cut_frames``) say how much was cut. `fmt` "mp4" is H.264,
    else mp4v, and falls back to "gif" when neither encodes; the output suffix follows the
    format actually written. `meta_override` replaces meta fields (e.g. the scores of the
    results row). `backend` (a MujocoBackend) may be shared between calls to keep compiled
    scene models.

    `cue` is the results row's ``cue`` (default: meta's ``cue``, if any). When it shows a cue,
    the evaluator's CueSpec is rebuilt and `view` chooses what the video shows: "cued" (what
    the policy saw; the default for a cue episode), "raw" (the sim's images; the default
    without a cue) or "both" (raw left, cued right: twice as wide). The caption names the
    protocol, family / variant and cue task. A cue placed in the scene (``placement`` "scene")
    is not drawn: the replay resets with the sim node's card, so every view is the sim image.
    """
    import tempfile

    from vla_bridge.benchmarks.vifo.replay import CueConditioner, cue_label, episode_scene_objects
    from vla_bridge.embodiment.episode_record import load_episode

    t0 = time.perf_counter()
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    record, meta = load_episode(episode_path)
    meta = {**meta, **(meta_override or {})}
    _check_replayable(episode_path, record, meta)
    cue_info = cue if cue is not None else meta.get("cue")
    spec, shown, note, placement = _episode_view(cue_info, meta["seed"], view)
    ghosts = _ghost_renderer(spec, cue_info, meta)
    conditioner = CueConditioner(spec, ghosts) if spec is not None else None
    # a scene cue: the sim node's card, rebuilt for the reset (textures live until the end)
    textures = (tempfile.TemporaryDirectory(prefix="vla_bridge_replay_cues_")
                if placement == "scene" else None)
    cards = episode_scene_objects(cue_info, meta["seed"], textures.name) if textures else []
    own_backend = backend is None
    if own_backend:
        from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
        backend = MujocoBackend()
    control_period = float(getattr(backend, "control_period", 0.06))
    fps = float(fps) if fps else 1.0 / (control_period * stride)
    n = len(record.commands)
    end = active_length(record, control_period) if trim_idle else n
    marks = {end - 1: f"(idle to {n - 1}: cut)"} if end < n else {}
    described = cue_label(cue_info)
    panels = ("raw camera", "cued: what the policy saw") if shown == "both" else ()
    overlay = Overlay(meta, backend.width * (2 if shown == "both" else 1), backend.height, scale,
                      cue=_caption(described, placement, shown), panels=panels)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    writer, fallback = _open_writer(out_path, fmt, fps, overlay.size)
    note = _add_note(note, fallback)
    try:
        frames = replay_frames(record, meta, backend, camera, stride, conditioner, cards, end)
        written, drift, cue_ms = _write_frames(writer, overlay, frames, record, shown,
                                               control_period, marks)
    finally:
        writer.close()
        if ghosts is not None:
            ghosts.close()
        if textures is not None:
            textures.cleanup()
        if own_backend:
            backend.close()
    path = writer.path
    if writer.codec != "gif" and (not path.is_file() or path.stat().st_size == 0):
        raise RuntimeError(f"the {writer.codec} encoder wrote no data to {path}")
    if drift > REPLAY_DRIFT_WARN_M:
        note = _add_note(note, f"replay diverged from the record by {drift:.4f} m "
                               "(not the recorded episode)")
    return VideoResult(episode=label or str(episode_path), path=str(path),
                       format=path.suffix.lstrip("."), codec=writer.codec, frames=written,
                       width=overlay.size[0], height=overlay.size[1], fps=round(fps, 3),
                       episode_frames=n, render_s=round(time.perf_counter() - t0, 3),
                       max_tcp_drift_m=drift, note=note, view=shown, cue=described,
                       cue_ms_per_frame=round(float(np.mean(cue_ms)), 3) if cue_ms else None,
                       idle_cut_frames=n - end, idle_cut_s=round((n - end) * control_period, 2))


# =============================================================================== a run's videos

def replayable(run_dir: str | Path, rows: Sequence[Mapping], count: int) -> list[Mapping]:
    """The first `count` rows (results order) whose episode file exists."""
    run_dir = Path(run_dir)
    return [r for r in rows
            if r.get("episode_file") and (run_dir / r["episode_file"]).is_file()][:count]


def _video_stem(run_dir: Path, episode: Path) -> Path:
    """<run>/videos/<scene>/<task>_r<round> (no suffix) of an episode file."""
    inside = episode.parts[:1] == ("episodes",)
    inner = episode.relative_to("episodes") if inside else Path(episode.name)
    return run_dir / "videos" / inner.with_suffix("")


def render_videos(run_dir: str | Path, rows: Sequence[Mapping], *, stride: int = 2,
                  fps: float | None = None, fmt: str = "mp4", camera: str = VIDEO_CAMERA,
                  stream=None, view: str | None = None,
                  trim_idle: bool = True) -> tuple[list[VideoResult], list[str]]:
    """Videos of the episodes of `rows` (see replayable), into
    <run>/videos/<scene>/<task>_r<round>.<mp4|gif>; returns (results, errors). `view`: see
    render_episode_video (None: cued for episodes that showed a cue, else raw)."""
    from vla_bridge.evaluation.progress import Progress
    run_dir = Path(run_dir)
    if view is not None and view not in VIDEO_VIEWS:
        raise ReportError(f"video view must be one of {', '.join(VIDEO_VIEWS)}, got {view!r}")
    if not rows:
        return [], []
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    backend = MujocoBackend()
    results, errors = [], []
    try:
        with Progress(len(rows), "videos", stream=stream) as bar:
            for r in rows:
                episode = Path(r["episode_file"])
                try:
                    res = render_episode_video(
                        run_dir / episode, _video_stem(run_dir, episode), backend=backend,
                        camera=camera, stride=stride, fps=fps, fmt=fmt, label=str(episode),
                        cue=r.get("cue"), view=view, trim_idle=trim_idle,
                        meta_override={k: r[k] for k in ("intent_score", "exec_score", "complete")
                                       if k in r})
                    res.path = str(Path(res.path).relative_to(run_dir))
                    results.append(res)
                    length = res.frames / res.fps if res.fps else 0.0
                    item = (f"{episode.stem} ({res.frames} frames, {length:.1f} s of video; "
                            f"rendered in {res.render_s:.1f} s)")
                except Exception as exc:
                    errors.append(f"{episode}: {type(exc).__name__}: {exc}")
                    item = f"{episode.stem} FAILED: {exc}"
                bar.update(item=item)
    finally:
        backend.close()
    return results, errors
