"""A plain-terminal progress bar with no dependencies.

On a TTY it redraws one line in place::

    videos [##########----------]  3/6  0.14/s  ETA 0:21  scene1/L0_pickup_yellow_block_3_r1

Anywhere else (a log file, a pipe, CI) it prints one line per finished item instead, so logs
stay readable and nothing is lost::

    videos 3/6 (50%)  0.14/s  ETA 0:21  scene1/L0_pickup_yellow_block_3_r1

Usage::

    with Progress(len(items), "videos") as bar:
        for item in items:
            work(item)
            bar.update(item=str(item))

or ``for item in track(items, "videos"): ...``. Pure Python, no rclpy.
"""
from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Callable, TextIO, TypeVar

T = TypeVar("T")


def format_duration(seconds: float | None) -> str:
    """H:MM:SS or M:SS; '?' when unknown."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_rate(per_second: float | None) -> str:
    """Items per second, or seconds per item when slower than one a second."""
    if not per_second:
        return "?/s"
    if per_second >= 1.0:
        return f"{per_second:.1f}/s"
    return f"{1.0 / per_second:.1f}s/item"


class Progress:
    """Count, rate and ETA of `total` items (total may be None: no bar, no ETA).

    `tty` forces the mode (default: ``stream.isatty()``); `clock` is injectable for tests.
    On a TTY redraws are throttled to one per `min_interval` seconds (the last item always
    draws); the line is cut to the terminal width.
    """

    def __init__(self, total: int | None, label: str = "", stream: TextIO | None = None,
                 width: int = 20, tty: bool | None = None, min_interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stdout
        self.width = width
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        self.min_interval = min_interval
        self.clock = clock
        self.count = 0
        self.start = clock()
        self._last_draw = float("-inf")
        self._line_len = 0
        self._closed = False

    # ------------------------------------------------------------------ numbers
    @property
    def elapsed(self) -> float:
        return self.clock() - self.start

    @property
    def rate(self) -> float | None:
        """Items per second so far (None before the first item)."""
        elapsed = self.elapsed
        return self.count / elapsed if self.count and elapsed > 0 else None

    @property
    def eta(self) -> float | None:
        rate = self.rate
        if self.total is None or not rate:
            return None
        return max(0, self.total - self.count) / rate

    # ------------------------------------------------------------------ drawing
    def line(self, item: str = "") -> str:
        """The status text for the current count (without carriage return or newline)."""
        parts = [self.label] if self.label else []
        if self.total:
            digits = len(str(self.total))
            if self.tty:
                filled = int(self.width * min(self.count, self.total) / self.total)
                parts.append("[" + "#" * filled + "-" * (self.width - filled) + "]")
                parts.append(f"{self.count:>{digits}}/{self.total}")
            else:
                parts.append(f"{self.count}/{self.total} ({100 * self.count / self.total:.0f}%)")
        else:
            parts.append(str(self.count))
        parts.append(format_rate(self.rate))
        if self.total is not None:
            parts.append(("ETA " + format_duration(self.eta)) if self.count < self.total
                         else "in " + format_duration(self.elapsed))
        if item:
            parts.append(item)
        return "  ".join(parts)

    def update(self, n: int = 1, item: str = "") -> None:
        """Count `n` more finished items; `item` names the last one."""
        self.count += n
        if self.tty:
            now = self.clock()
            last = self.total is not None and self.count >= self.total
            if last or now - self._last_draw >= self.min_interval:
                self._draw_tty(self.line(item))
                self._last_draw = now
        else:
            self.stream.write(self.line(item) + "\n")
            self.stream.flush()

    def write(self, message: str) -> None:
        """Print a message above the bar without garbling it."""
        if self.tty and self._line_len:
            self.stream.write("\r" + " " * self._line_len + "\r")
            self._line_len = 0
        self.stream.write(message.rstrip("\n") + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.tty and self._line_len:
            self.stream.write("\n")
            self.stream.flush()

    def _draw_tty(self, text: str) -> None:
        columns = shutil.get_terminal_size((100, 24)).columns
        text = text[: max(10, columns - 1)]
        pad = " " * max(0, self._line_len - len(text))
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._line_len = len(text)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def track(items: Iterable[T], label: str = "", total: int | None = None,
          stream: TextIO | None = None, name: Callable[[T], str] = str) -> Iterator[T]:
    """Yield the items, counting each one as done when the loop asks for the next."""
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with Progress(total, label, stream) as bar:
        for item in items:
            yield item
            bar.update(item=name(item))
