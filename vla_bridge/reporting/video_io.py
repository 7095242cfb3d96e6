"""The files of the replay videos: the caption band drawn above each frame (instruction, cue,
frame index, scores), the encoders and a reader for checking what was written.

MP4 is H.264 (PyAV's libx264, yuv420p: what browsers and Markdown viewers play); without PyAV
or libx264 it falls back, with one log line, to OpenCV's ``mp4v``, which plays in desktop
players only. Animated GIF goes through PIL."""
from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

import numpy as np

log = logging.getLogger(__name__)


def _wrap(text: str, max_width: int, font, scale: float, thickness: int) -> list[str]:
    import cv2
    lines, current = [], ""
    for word in text.split():
        candidate = f"{current} {word}".strip()
        if current and cv2.getTextSize(candidate, font, scale, thickness)[0][0] > max_width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return lines + ([current] if current else [])


def _score_text(meta: dict) -> str:
    """"IS 1.00  ES 0.75  CR yes" from meta's scores (those it has)."""
    complete = meta.get("complete")
    score = []
    if meta.get("intent_score") is not None:
        score.append(f"IS {float(meta['intent_score']):.2f}")
    if meta.get("exec_score") is not None:
        score.append(f"ES {float(meta['exec_score']):.2f}")
    if complete is not None:
        score.append(f"CR {'yes' if complete else 'no'}")
    return "  ".join(score)


class Overlay:
    """Caption band above the (upscaled) camera image: instruction, then frame and scores.

    With a cue: a line (two when long) naming it (``cue``), and for side-by-side views a line
    of ``panels`` labels, one above each panel."""

    FONT_SCALE = 0.5
    LINE_H = 20

    def __init__(self, meta: dict, image_w: int, image_h: int, scale: int, cue: str = "",
                 panels: Sequence[str] = ()):
        import cv2
        self.cv2 = cv2
        self.font = cv2.FONT_HERSHEY_SIMPLEX
        self.w, self.h, self.scale = image_w * scale, image_h * scale, scale
        instruction = meta.get("instruction") or (
            "(no language instruction: the cue alone)" if cue
            else "(instruction withheld: empty language)")
        self.lines = _wrap(instruction, self.w - 16, self.font, self.FONT_SCALE, 1)[:3]
        self.cue_lines = _wrap(cue, self.w - 16, self.font, 0.42, 1)[:2] if cue else []
        self.panels = tuple(panels)
        self.scores = _score_text(meta)
        self.task = (f"{meta.get('task_id', '?')} r{meta.get('round', '?')} "
                     f"seed {meta.get('seed', '?')}")
        extra = len(self.cue_lines) + bool(self.panels)
        self.band = self.LINE_H * (len(self.lines) + 2 + extra) + 8

    @property
    def size(self) -> tuple[int, int]:
        return self.w, self.h + self.band

    def compose(self, rgb: np.ndarray, index: int, last: int, t: float,
                mark: str = "") -> np.ndarray:
        """RGB frame with the caption band on top; `mark` follows the frame index (e.g. where
        an idle tail was cut)."""
        cv2 = self.cv2
        image = rgb if self.scale == 1 else cv2.resize(rgb, (self.w, self.h),
                                                      interpolation=cv2.INTER_LINEAR)
        frame = np.zeros((self.h + self.band, self.w, 3), dtype=np.uint8)
        frame[self.band:] = image
        y = self.LINE_H
        white, grey, green = (255, 255, 255), (190, 190, 190), (120, 230, 120)
        for line in self.lines:
            cv2.putText(frame, line, (8, y), self.font, self.FONT_SCALE, white, 1, cv2.LINE_AA)
            y += self.LINE_H
        for line in self.cue_lines:
            cv2.putText(frame, line, (8, y), self.font, 0.42, (255, 140, 255), 1, cv2.LINE_AA)
            y += self.LINE_H
        cv2.putText(frame, self.task, (8, y), self.font, 0.42, grey, 1, cv2.LINE_AA)
        y += self.LINE_H
        text = f"frame {index}/{last}  t {t:5.2f} s  {mark}".rstrip()
        cv2.putText(frame, text, (8, y), self.font, self.FONT_SCALE, white, 1, cv2.LINE_AA)
        if self.scores:
            tw = cv2.getTextSize(self.scores, self.font, self.FONT_SCALE, 1)[0][0]
            cv2.putText(frame, self.scores, (self.w - tw - 8, y), self.font, self.FONT_SCALE,
                        green, 1, cv2.LINE_AA)
        if self.panels:
            y += self.LINE_H
            pw = self.w // len(self.panels)
            for k, text in enumerate(self.panels):
                cv2.putText(frame, text, (k * pw + 8, y), self.font, 0.42, grey, 1, cv2.LINE_AA)
        return frame


class H264Writer:
    """MP4 of RGB frames in H.264 (PyAV, libx264, yuv420p); raises when PyAV or the encoder is
    missing. yuv420p needs even sizes: an odd width or height gets one black pixel row/column."""

    codec = "h264"
    CRF = "23"  # libx264's default quality; the caption text stays sharp

    def __init__(self, path: Path, fps: float, size: tuple[int, int]):
        import av
        self.path = path
        self.width, self.height = size[0] + size[0] % 2, size[1] + size[1] % 2
        # faststart: the index goes first, so a browser starts playing before the end arrives
        self.container = av.open(str(path), "w", options={"movflags": "faststart"})
        try:
            self.stream = self.container.add_stream(
                "libx264", rate=Fraction(fps).limit_denominator(1000))
            self.stream.width, self.stream.height = self.width, self.height
            self.stream.pix_fmt = "yuv420p"
            self.stream.options = {"crf": self.CRF, "preset": "veryfast"}
        except Exception:
            self.container.close()
            raise

    def add(self, rgb: np.ndarray) -> None:
        import av
        h, w = rgb.shape[:2]
        if (w, h) != (self.width, self.height):
            rgb = np.pad(rgb, ((0, self.height - h), (0, self.width - w), (0, 0)))
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        for packet in self.stream.encode(frame):
            self.container.mux(packet)

    def close(self) -> None:
        try:
            for packet in self.stream.encode():  # flush the encoder's delayed frames
                self.container.mux(packet)
        finally:
            self.container.close()


class Mp4Writer:
    """MP4 (OpenCV ``mp4v``) of RGB frames; raises when OpenCV cannot open the encoder."""

    codec = "mp4v"

    def __init__(self, path: Path, fps: float, size: tuple[int, int]):
        import cv2
        self.cv2 = cv2
        self.path = path
        self.writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
        if not self.writer.isOpened():
            raise RuntimeError(f"OpenCV cannot write mp4v video to {path}")

    def add(self, rgb: np.ndarray) -> None:
        self.writer.write(self.cv2.cvtColor(rgb, self.cv2.COLOR_RGB2BGR))

    def close(self) -> None:
        self.writer.release()


_warned_no_h264 = False


def open_mp4(path: Path, fps: float, size: tuple[int, int]) -> tuple[Any, str]:
    """An H.264 writer, else (logged once per process) OpenCV's mp4v: (writer, note)."""
    global _warned_no_h264
    try:
        return H264Writer(path, fps, size), ""
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    if not _warned_no_h264:
        log.warning("H.264 unavailable (%s; install av, see requirements): writing mp4v "
                    "videos, which browsers do not play", reason)
        _warned_no_h264 = True
    return Mp4Writer(path, fps, size), f"H.264 unavailable ({reason}); mp4v"


class GifWriter:
    """Animated GIF (PIL, 128 colours a frame), written on close."""

    codec = "gif"

    def __init__(self, path: Path, fps: float):
        self.path, self.fps, self.frames = path, fps, []

    def add(self, rgb: np.ndarray) -> None:
        from PIL import Image
        self.frames.append(Image.fromarray(rgb).quantize(colors=128))

    def close(self) -> None:
        if self.frames:
            self.frames[0].save(self.path, save_all=True, append_images=self.frames[1:],
                                duration=max(20, int(round(1000 / self.fps))), loop=0)


def video_codec(path: str | Path) -> str:
    """The codec of a written video's first video stream, as FFmpeg names it ("h264",
    "mpeg4" for mp4v, "gif"), read back with PyAV."""
    import av
    with av.open(str(path)) as container:
        return container.streams.video[0].codec_context.name


def count_video_frames(path: str | Path) -> int:
    """Frames in an MP4 (decoded with OpenCV) or a GIF (PIL)."""
    path = Path(path)
    if path.suffix.lower() == ".gif":
        from PIL import Image
        with Image.open(path) as im:
            return int(getattr(im, "n_frames", 1))
    import cv2
    cap = cv2.VideoCapture(str(path))
    n = 0
    while cap.isOpened():
        ok, _ = cap.read()
        if not ok:
            break
        n += 1
    cap.release()
    return n
