"""Replay videos of visual-cue episodes (`vla-bridge report --videos N --video-view ...`).

Real oracle episodes run in-process (vla_bridge.evaluation.direct, the graph's session and scorer), saved
and annotated as the evaluator does (RunDirectory.save_episode, row["cue"] from
TrialCue.row_fields); the report replays them in MuJoCo and the decoded video frames are
checked: the cue is where the evaluator's overlay puts it, nothing else changes, a row without
a cue renders as before, and "both" is raw | cued side by side.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")
pytest.importorskip("mujoco")

from vla_bridge.reporting import build_report  # noqa: E402
from vla_bridge.reporting.video_io import Overlay  # noqa: E402
from vla_bridge.reporting.videos import _ghost_renderer  # noqa: E402
from vla_bridge.reporting.videos import render_episode_video, replay_frames  # noqa: E402
from vla_bridge.benchmarks.vifo import insert  # noqa: E402
from vla_bridge.benchmarks.vifo import protocols as P  # noqa: E402
from vla_bridge.benchmarks.vifo import scene_cards as SC  # noqa: E402
from vla_bridge.benchmarks.vifo.families import qr_payload, region_to_pixels  # noqa: E402
from vla_bridge.benchmarks.vifo.replay import CueConditioner, episode_cue, ghost_path  # noqa: E402

TASK = "L0_place_yellow_block_1_behind_red_sphere"
SCALE = 2  # render_episode_video's default upscaling
STRIDE = 50  # frames 0, 50, ..., 500 of the 501-frame oracle episode
CODEC_NOISE = 3.0  # mean |a - b| of two lossy (H.264) encodings of the same pixels stays below


def _episode(session, plan, trial, budget=None):
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    return run_episode_direct(session, OraclePolicy(), plan.begin_task, trial.seed, budget,
                              instruction=plan.language, images=False)


def _scene_card_episode(session, plan, trial, budget, cards):
    """An episode with the sim node's scene cue card in the reset (cue_placement scene)."""
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    return run_episode_direct(session, OraclePolicy(), plan.begin_task, trial.seed, budget,
                              instruction=plan.language, images=False, cue_objects=cards)


def _save_run(path: Path, trial, record, score, plan=None, **cue) -> tuple[Path, dict]:
    """A run directory holding one episode, written like the evaluator's SuiteRun does."""
    from vla_bridge.evaluation.run_dir import RunDirectory, result_row
    run = RunDirectory(path)
    run.start({"scene": trial.task.scene, "cue_protocol": plan.protocol if plan else ""}, [trial],
              resume=False)
    language = plan.language if plan else trial.task.instruction
    row = result_row(trial, score, instruction=language, frames=record.n)
    row["episode_file"] = run.save_episode(trial, record, row)
    if plan is not None:
        row["cue"] = {**plan.row_fields(), "cue_complete": bool(row["complete"]), **cue}
    run.append(row)
    return path, row


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (run dir, row): "plain" (no cue), "f8" (authorized, F8 qr), "f2" (authorized,
    F2 arrow) share one full authorized oracle episode (the oracle plans the cue task);
    "conflict" (F1 banner) is a short episode of the conflict partner; "scene" (no_language,
    F8 aruco, cue_placement scene) a short episode with the sim node's card on the table."""
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    from vla_bridge.sim_nodes.session import Budget, SimSession
    from vla_bridge.benchmarks.robofollow.tasks import Trial, episode_seed, load_suite

    suite = load_suite()
    task = suite.get(TASK)
    trial = Trial(task, 1, episode_seed(TASK, 1))
    cands = suite.eval_tasks(task.scene)
    plans = {name: P.plan_trial("authorized", task, trial.seed, cands, fam, var)
             for name, fam, var in (("f8", "F8", "qr"), ("f2", "F2", "arrow"))}
    conflict = P.plan_trial("conflict", task, trial.seed, cands, "F1", "banner")
    scene = P.plan_trial("no_language", task, trial.seed, cands, "F8", "aruco")
    root = tmp_path_factory.mktemp("cue_runs")
    session = SimSession(MujocoBackend())
    try:
        record, score = _episode(session, plans["f8"], trial)
        short = _episode(session, conflict, trial, Budget(2, 20))
        cards = SC.episode_scene_cues(task, "F8", "aruco", trial.seed, out_dir=root / "sim_cards")
        carded = _scene_card_episode(session, scene, trial, Budget(2, 20), cards)
    finally:
        session.backend.close()
    out = {"plain": _save_run(root / "plain", trial, record, score)}
    for name, plan in plans.items():
        out[name] = _save_run(root / name, trial, record, score, plan)
    out["conflict"] = _save_run(root / "conflict", trial, *short, conflict)
    out["scene"] = _save_run(root / "scene", trial, *carded, scene, placement="scene")
    return out


@pytest.fixture(scope="module")
def backend():
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    b = MujocoBackend()
    yield b
    b.close()


def _render(runs, name, tmp_path, view=None, backend=None, **kw):
    run, row = runs[name]
    return render_episode_video(run / row["episode_file"], tmp_path / f"{name}_{view}",
                                backend=backend, stride=kw.pop("stride", STRIDE),
                                cue=row.get("cue"), view=view, trim_idle=False, **kw)


def _decode(video) -> np.ndarray:
    """(frames, H, W, 3) RGB of a written MP4."""
    cap = cv2.VideoCapture(video.path)
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame[..., ::-1])
    cap.release()
    assert len(frames) == video.frames
    return np.stack(frames).astype(int)


def _image(video, frames, w=320, h=240) -> np.ndarray:
    """The camera-image part (below the caption band) of decoded frames."""
    band = video.height - h * SCALE
    return frames[:, band:]


# ------------------------------------------------------------------------------ the cue itself

@pytest.mark.graph
def test_the_rebuilt_cue_is_the_evaluators(runs):
    """Same call as the evaluator's CueRun.prepare: build_cue(cue task, family, variant, seed)."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    for name in ("f8", "f2", "conflict"):
        _, row = runs[name]
        cue = row["cue"]
        want = P.build_cue(load_suite().get(cue["cue_task"]), cue["family"], cue["variant"], row["seed"])
        got = episode_cue(cue, row["seed"])
        assert (got.family, got.variant, got.anchors, got.params) == \
            (want.family, want.variant, want.anchors, want.params)
        assert cue["cue_task"] == TASK  # the conflict cue shows the trial, not the partner
    assert runs["conflict"][1]["cue"]["begin_task"] != TASK
    assert episode_cue(None, 1) is None and episode_cue({"protocol": "original"}, 1) is None


def test_overlay_and_replay_share_the_conditioning():
    from vla_bridge.benchmarks.vifo import replay
    from vla_bridge.evaluation.cues import overlay as cue_overlay
    assert cue_overlay.CueConditioner is replay.CueConditioner
    assert cue_overlay.ghost_path is replay.ghost_path
    assert cue_overlay.projected_ghost_layers is replay.projected_ghost_layers


# ------------------------------------------------------------------------------ videos

@pytest.mark.graph
def test_fixed_region_code_cued_vs_raw(runs, backend, tmp_path):
    """F8 QR: the cued video differs from the raw one inside the cue's region only, and the
    code decodes from the video frame to the evaluator's payload."""
    _, row = runs["f8"]
    cued = _render(runs, "f8", tmp_path, None, backend)  # default: cued (the episode had a cue)
    raw = _render(runs, "f8", tmp_path, "raw", backend)
    assert (cued.view, raw.view) == ("cued", "raw")
    assert cued.cue == raw.cue == f"authorized | F8 Code / qr | cue task {TASK}"
    assert (cued.width, cued.height, cued.frames) == (raw.width, raw.height, 11)
    assert cued.max_tcp_drift_m < 1e-6 and cued.cue_ms_per_frame is not None
    a, b = _image(cued, _decode(cued)), _image(raw, _decode(raw))
    spec = episode_cue(row["cue"], row["seed"])
    x0, y0, x1, y1 = (SCALE * v for v in region_to_pixels(spec.box, 320, 240))
    inside = np.zeros(a.shape[1:3], bool)
    inside[y0:y1, x0:x1] = True
    near = cv2.dilate(inside.astype(np.uint8), np.ones((33, 33), np.uint8)).astype(bool)
    diff = np.abs(a - b).max(axis=3)  # (frames, H, W)
    assert (diff[:, inside] > 60).mean() > 0.3  # a white tile with black modules over the scene
    assert np.abs(a - b)[:, ~near].mean() < CODEC_NOISE / 2
    assert np.quantile(diff[:, ~near], 0.999) < 40  # nothing drawn elsewhere
    # the arm moves in both videos alike
    assert max(np.abs(x[0] - x[k]).mean() for x in (a, b) for k in range(len(x))) > 2
    assert np.abs(a[:, ~near] - a[:1, ~near]).mean() == pytest.approx(
        np.abs(b[:, ~near] - b[:1, ~near]).mean(), abs=0.3)
    # the QR code decodes from every cued frame (2x upscaled, H.264) and from no raw frame
    det = cv2.QRCodeDetector()
    for k in (0, 5, 10):
        text, _, _ = det.detectAndDecode(a[k].astype(np.uint8)[..., ::-1].copy())
        assert text == qr_payload(spec)
        assert det.detectAndDecode(b[k].astype(np.uint8)[..., ::-1].copy())[0] == ""


@pytest.mark.graph
def test_scene_anchored_cue_is_reprojected_every_frame(runs, backend, tmp_path):
    """F2 arrow: each replayed frame is the library's insertion at that frame's world state
    (anchors follow the carried block), wrist cameras posed from the replayed joints."""
    from vla_bridge.embodiment.episode_record import load_episode
    run, row = runs["f2"]
    record, meta = load_episode(run / row["episode_file"])
    spec = episode_cue(row["cue"], row["seed"])
    drawn = {}
    for cam in ("cam_high", "cam_left_wrist"):
        frames = []
        for f in replay_frames(record, meta, backend, cam, STRIDE, CueConditioner(spec)):
            want = insert(f.raw, spec, f.world, backend.camera_model(cam))  # MuJoCo's own pose
            # (the arrow and the arm tag: sub-pixel pose differences move a few edge pixels)
            assert np.mean(np.any(f.cued != want, axis=2)) < 0.005, (cam, f.index)
            frames.append(f)
        assert [f.index for f in frames] == list(range(0, 501, STRIDE))
        drawn[cam] = [np.any(f.cued != f.raw, axis=2) for f in frames]
    high = drawn["cam_high"]
    assert all(0.001 < m.mean() < 0.2 for m in high)
    assert (high[0] ^ high[-1]).mean() > 0.002  # the block was carried: the arrow moved
    wrist = [m.mean() for m in drawn["cam_left_wrist"]]
    assert wrist[0] > 0.001 and min(wrist) < wrist[0]  # seen from the moving wrist, then not

    video = _render(runs, "f2", tmp_path, "cued", backend)
    raw = _render(runs, "f2", tmp_path, "raw", backend)
    a, b = _image(video, _decode(video)), _image(raw, _decode(raw))

    def magenta(x):
        return (x[..., 0] > 180) & (x[..., 1] < 100) & (x[..., 2] > 180)
    assert magenta(a).mean(axis=(1, 2)).min() > 0.001 and magenta(b).sum() == 0


@pytest.mark.graph
def test_ghost_path_fixed_at_the_first_frame(runs, backend):
    """F3: like the overlay, the ghost path is set from the world of the first observation."""
    from vla_bridge.embodiment.episode_record import load_episode
    run, row = runs["f2"]
    record, meta = load_episode(run / row["episode_file"])
    spec = episode_cue({**row["cue"], "family": "F3", "variant": "trail"}, row["seed"])
    cond = CueConditioner(spec)
    frames = list(replay_frames(record, meta, backend, "cam_high", 250, cond))
    want = ghost_path(spec, frames[0].world)
    assert len(cond.ghost) == len(want) == 4
    assert all(np.allclose(p, q) for (p, _), (q, _) in zip(cond.ghost, want))
    assert all(np.any(f.cued != f.raw) for f in frames)


@pytest.mark.graph
def test_both_is_raw_and_cued_side_by_side(runs, backend, tmp_path):
    both = _render(runs, "f8", tmp_path, "both", backend)
    cued = _render(runs, "f8", tmp_path, "cued", backend)
    raw = _render(runs, "f8", tmp_path, "raw", backend)
    assert both.view == "both" and both.width == 2 * cued.width == 2 * 320 * SCALE
    assert both.height > cued.height  # one more caption line: the panel labels
    x = _image(both, _decode(both))
    half = cued.width
    assert np.abs(x[:, :, :half] - _image(raw, _decode(raw))).mean() < CODEC_NOISE
    assert np.abs(x[:, :, half:] - _image(cued, _decode(cued))).mean() < CODEC_NOISE
    assert np.abs(x[:, :, :half] - x[:, :, half:]).mean() > 2 * CODEC_NOISE


@pytest.mark.graph
def test_conflict_episode_replays_with_the_trials_cue(runs, backend, tmp_path):
    """Conflict: the sim ran the partner task; the video shows the trial's (the cue's) F1 text."""
    _, row = runs["conflict"]
    video = _render(runs, "conflict", tmp_path, "both", backend, stride=20)
    assert video.max_tcp_drift_m < 1e-6 and video.frames == 3 and "conflict | F1 Text" in video.cue
    x = _image(video, _decode(video))
    spec = episode_cue(row["cue"], row["seed"])
    x0, y0, x1, y1 = (SCALE * v for v in region_to_pixels(spec.box, 320, 240))
    half = video.width // 2
    raw, cued = x[:, :, :half], x[:, :, half:]
    assert np.abs(raw - cued)[:, y0:y1, x0:x1].mean() > 30
    outside = np.ones(raw.shape[1:3], bool)
    outside[max(0, y0 - 16):y1 + 16, max(0, x0 - 16):x1 + 16] = False
    assert np.abs(raw - cued)[:, outside].mean() < CODEC_NOISE / 2


@pytest.mark.graph
def test_scene_placed_cue_is_rebuilt_in_the_replayed_scene(runs, backend, tmp_path):
    """cue_placement scene: nothing is drawn; the replay resets with the sim node's card, so the
    tag decodes from the video like from the policy's raw cameras."""
    from vla_bridge.benchmarks.vifo.families import marker_id_for

    def tags(frame):
        from vla_bridge.benchmarks.vifo.families import aruco_dictionary
        det = cv2.aruco.ArucoDetector(aruco_dictionary(), cv2.aruco.DetectorParameters())
        ids = det.detectMarkers(cv2.cvtColor(frame.astype(np.uint8), cv2.COLOR_RGB2GRAY))[1]
        return [] if ids is None else ids.ravel().tolist()

    _, row = runs["scene"]
    video = _render(runs, "scene", tmp_path, None, backend, stride=20)
    assert video.view == "cued" and video.cue_ms_per_frame is None and video.note == ""
    assert video.max_tcp_drift_m < 1e-6 and video.width == 640
    want = [marker_id_for(episode_cue(row["cue"], row["seed"]))]
    assert [tags(f) for f in _image(video, _decode(video))] == [want] * 3
    both = _render(runs, "scene", tmp_path, "both", backend, stride=20)
    assert both.view == "cued" and both.width == 640 and "card in the scene" in both.note
    # the overlay episodes' raw images hold no tag: the card comes from the replayed reset
    raw = _render(runs, "f8", tmp_path, "raw", backend, stride=250)
    assert tags(_image(raw, _decode(raw))[0]) == []


@pytest.mark.graph
def test_row_without_a_cue_renders_as_before(runs, backend, tmp_path):
    plain = _render(runs, "plain", tmp_path, None, backend)
    assert (plain.view, plain.cue, plain.note, plain.cue_ms_per_frame) == ("raw", "", "", None)
    # caption band as before: instruction lines + task line + frame line, no cue line
    run, row = runs["plain"]
    lines = len(Overlay({"instruction": row["instruction"]}, 320, 240, SCALE).lines)
    assert (plain.width, plain.height) == (640, 480 + 20 * (lines + 2) + 8)
    # asking for the cued view of a cue-free episode gives the same raw video, with a note
    asked = _render(runs, "plain", tmp_path, "cued", backend)
    assert asked.view == "raw" and "showed no cue" in asked.note
    assert Path(asked.path).read_bytes() == Path(plain.path).read_bytes()
    # the same episode's raw view in the cue run shows the same pixels
    raw = _render(runs, "f8", tmp_path, "raw", backend)
    assert np.abs(_image(plain, _decode(plain)) - _image(raw, _decode(raw))).mean() < CODEC_NOISE / 2


@pytest.mark.graph
def test_report_cli_video_view(runs, capsys):
    from vla_bridge.cli import main
    run, _ = runs["f8"]
    assert main(["report", str(run), "--videos", "1", "--video-view", "both", "--video-stride", "250",
                 "--keep-idle", "--bootstrap", "50"]) == 0
    (video,) = json.loads((run / "report.json").read_text())["videos"]
    # the console gives the video's own length (frames / fps), the render time labelled apart
    # (#29 point 15: "7.3 s" was the render time)
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("video: "))
    assert f"{video['frames']} frames, {video['frames'] / video['fps']:.1f} s at " in line
    assert f"rendered in {video['render_s']:.1f} s" in line
    assert video["view"] == "both" and video["width"] == 1280 and video["frames"] == 3
    assert video["cue"].startswith("authorized | F8 Code / qr")
    md = (run / "report.md").read_text(encoding="utf-8")
    assert "both (cue: authorized | F8 Code / qr" in md
    report = build_report(runs["plain"][0], videos=1, video_stride=250, n_boot=50)
    assert report["videos"][0]["view"] == "raw" and report["videos"][0]["cue"] == ""
    with pytest.raises(SystemExit):
        main(["report", str(run), "--video-view", "policy"])


def test_replay_renders_f3_ghosts_like_the_evaluator_did():
    """row["cue"]["ghosts"] says how the policy's F3 ghosts were made; the replay follows."""
    from vla_bridge.sim_nodes.mujoco.ghosts import MirrorGhostRenderer
    meta = {"scene": "scene1", "layout": "default", "seed": 3}
    spec = object()  # any cue: only "ghosts" decides
    renderer = _ghost_renderer(spec, {"ghosts": "rendered"}, meta)
    try:
        assert isinstance(renderer, MirrorGhostRenderer)
    finally:
        renderer.close()
    assert _ghost_renderer(spec, {"ghosts": "projected"}, meta) is None
    assert _ghost_renderer(spec, {}, meta) is None and _ghost_renderer(None, {"ghosts": "rendered"}, meta) is None
