"""The report's video files: H.264 MP4 (what browsers play), read back with PyAV; the mp4v
fallback when H.264 is missing, logged once; the idle tail after the last motion cut, on a
synthetic record and on a replayed oracle episode whose last ~80 % is the arms at rest."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

av = pytest.importorskip("av")

from vla_bridge.embodiment.episode_record import EpisodeRecord  # noqa: E402
from vla_bridge.reporting import video_io
from vla_bridge.reporting.idle import (IDLE_MARGIN_S, active_length,  # noqa: E402
                                               last_motion)
from vla_bridge.reporting.video_io import (H264Writer, Mp4Writer, open_mp4,  # noqa: E402
                                                   video_codec)

PERIOD = 0.06  # the sim's control period (s)
MARGIN = int(np.ceil(IDLE_MARGIN_S / PERIOD))  # 17 frames


def _frames(n: int, w: int, h: int) -> list[np.ndarray]:
    out = []
    for k in range(n):
        image = np.full((h, w, 3), 40, np.uint8)
        image[:, (5 * k) % w:(5 * k) % w + 8] = (250, 200, 30)  # a bar sweeping right
        out.append(image)
    return out


def _decoded(path: Path) -> tuple[str, str, int, tuple[int, int]]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = list(container.decode(stream))
        return (stream.codec_context.name, stream.codec_context.pix_fmt, len(frames),
                (frames[0].width, frames[0].height))


def test_mp4_is_h264_yuv420p_with_even_size(tmp_path):
    writer, note = open_mp4(tmp_path / "clip.mp4", 1 / (2 * PERIOD), (101, 75))  # odd size
    assert isinstance(writer, H264Writer) and writer.codec == "h264" and note == ""
    for image in _frames(30, 101, 75):
        writer.add(image)
    writer.close()
    assert _decoded(tmp_path / "clip.mp4") == ("h264", "yuv420p", 30, (102, 76))
    assert video_codec(tmp_path / "clip.mp4") == "h264"


def test_without_h264_it_writes_mp4v_and_says_so_once(tmp_path, monkeypatch, caplog):
    def no_av(*args):
        raise ImportError("No module named 'av'")

    monkeypatch.setattr(video_io, "H264Writer", no_av)
    monkeypatch.setattr(video_io, "_warned_no_h264", False)
    caplog.set_level(logging.WARNING, logger=video_io.__name__)
    for name in ("a.mp4", "b.mp4"):
        writer, note = open_mp4(tmp_path / name, 8.0, (64, 48))
        assert isinstance(writer, Mp4Writer) and "H.264 unavailable" in note
        for image in _frames(5, 64, 48):
            writer.add(image)
        writer.close()
    assert sum("H.264 unavailable" in r.getMessage() for r in caplog.records) == 1
    assert video_codec(tmp_path / "a.mp4") == "mpeg4"


def _record(n: int, moving_until: int, object_jitter: float = 0.0,
            object_falls_at: int | None = None) -> EpisodeRecord:
    """An arm moving 2 mm a frame up to `moving_until`, then still; an object at rest (with
    optional jitter), or falling 3 cm a frame from `object_falls_at` for five frames."""
    t = np.minimum(np.arange(n), moving_until)[:, None]
    tcp = np.hstack([0.002 * t, np.zeros((n, 2))])
    rng = np.random.default_rng(0)
    obj = np.zeros((n, 3)) + object_jitter * rng.standard_normal((n, 3))
    if object_falls_at is not None:
        obj[:, 2] -= 0.03 * np.clip(np.arange(n) - object_falls_at, 0, 5)
    commands = np.zeros((n, 14))
    commands[:, 0] = 0.01 * t[:, 0]
    return EpisodeRecord(tcp_pos={"right": tcp}, tcp_rot={}, grip={"right": np.ones(n)},
                         pos={"block": obj}, commands=commands)


def test_idle_tail_found_from_the_record():
    still_tail = _record(400, moving_until=100)  # the last 75 % at rest
    assert last_motion(still_tail) == 100
    assert active_length(still_tail, PERIOD) == 100 + MARGIN + 1 == 118
    # resting contact jitter does not count as motion; an object falling late does
    assert active_length(_record(400, 100, object_jitter=2e-5), PERIOD) == 118
    assert last_motion(_record(400, 100, object_falls_at=300)) == 305
    assert active_length(_record(400, 399), PERIOD) == 400  # never idle: nothing cut


@pytest.mark.graph
def test_replayed_video_is_h264_and_its_idle_tail_cut(session, tmp_path):
    """A real oracle episode (501 frames, done after ~95): the trimmed H.264 video is a
    fraction of the full one; both decode with PyAV to the frames the report states."""
    from vla_bridge.benchmarks.robofollow.tasks import episode_seed, load_suite
    from vla_bridge.embodiment.episode_record import save_episode
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.reporting.videos import render_episode_video
    from vla_bridge.policy_nodes.oracle import OraclePolicy

    task = load_suite().get("L0_pickup_yellow_block_3")
    seed = episode_seed(task.id, 1)
    record, score = run_episode_direct(session, OraclePolicy(), task, seed, images=False)
    episode = tmp_path / "ep.npz"
    save_episode(episode, record, {"scene": task.scene, "layout": task.layout, "seed": seed,
                                   "task_id": task.id, "round": 1,
                                   "instruction": task.instruction})
    kw = dict(backend=session.backend, stride=10)
    full = render_episode_video(episode, tmp_path / "full", trim_idle=False, **kw)
    cut = render_episode_video(episode, tmp_path / "cut", **kw)
    end = active_length(record, PERIOD)
    assert (full.codec, cut.codec, cut.format) == ("h264", "h264", "mp4")
    assert full.idle_cut_frames == 0 and full.frames == 51  # 0, 10, ..., 500
    assert cut.idle_cut_frames == 501 - end > 0.75 * 501  # the oracle rests after ~95 frames
    assert cut.idle_cut_s == pytest.approx((501 - end) * PERIOD, abs=0.01)
    assert cut.frames == len(range(0, end, 10)) + bool((end - 1) % 10)  # + frame end - 1
    assert cut.frames < full.frames / 3
    for video in (full, cut):
        assert _decoded(Path(video.path))[:3] == ("h264", "yuv420p", video.frames)
    assert Path(cut.path).stat().st_size < Path(full.path).stat().st_size
