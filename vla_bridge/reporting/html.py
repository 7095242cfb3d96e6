"""report.html: the run's report as one self-contained page that opens in any browser.

It is the same document as report.md (`format_markdown`, one source for both), turned into
HTML by a converter for the small Markdown that module writes (headings, pipe tables, bullet
lists, paragraphs, `code`, **bold**, links and images), with every local file it refers to
inlined as a ``data:`` URI:

* plots (PNG) as images, where report.md shows them;
* replay videos as ``<video controls>`` players in the videos table (MP4 as H.264, which
  browsers play; GIF as an image);
* the cue examples the evaluator saved (``cue_examples/*.png``: raw | cued, one per camera of
  the run's first cue episode), in a section of their own;
* the provenance is report.md's header, as text.

So the file can be mailed or moved alone. A link to a local file that is not media (the pilot
sheet, a compared run) stays as its path in `code`, never a link that breaks once the page is
moved; a media file the report names that is missing is a `ReportError` (no page with a hole).
No JavaScript, no outside resource. Pure Python: no rclpy.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from vla_bridge.reporting.common import ReportError
from vla_bridge.reporting.markdown import format_markdown

REPORT_HTML = "report.html"
CUE_EXAMPLES_DIR = "cue_examples"  # evaluator_node.CueOverlayHook.EXAMPLES writes them
MEDIA_TYPES = {".png": "image/png", ".gif": "image/gif", ".jpg": "image/jpeg",
               ".jpeg": "image/jpeg", ".mp4": "video/mp4", ".webm": "video/webm"}
VIDEO_SUFFIXES = (".mp4", ".webm")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em;
       color: #222; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #eee; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f2f2f2; padding: 0 0.2em; }
img, video { max-width: 100%; }
td video { max-width: 320px; }
figure { margin: 0.5em 0 1em; }
"""

_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


class _Media:
    """Local files by the paths report.md names them (relative to the run directory, or
    absolute), read once each and inlined as data URIs."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.inlined: list[Path] = []

    def path(self, ref: str) -> Path | None:
        """The local media file `ref` names, or None when it is not media (or a URL)."""
        if "://" in ref or ref.startswith(("#", "mailto:", "data:")):
            return None
        if Path(ref).suffix.lower() not in MEDIA_TYPES:
            return None
        path = Path(ref) if Path(ref).is_absolute() else self.run_dir / ref
        if not path.is_file():
            raise ReportError(f"report.html: {ref} is named by the report but is missing "
                              f"({path})")
        return path

    def uri(self, path: Path) -> str:
        self.inlined.append(path)
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f"data:{MEDIA_TYPES[path.suffix.lower()]};base64,{data}"

    def element(self, path: Path, label: str) -> str:
        if path.suffix.lower() in VIDEO_SUFFIXES:
            return (f'<video controls muted preload="auto" title="{html.escape(label)}" '
                    f'src="{self.uri(path)}"></video>')
        return f'<img alt="{html.escape(label)}" src="{self.uri(path)}">'


def _inline(text: str, media: _Media) -> str:
    """One line of report.md's inline Markdown -> HTML (escaped, media inlined)."""
    parts: list[str] = []
    pos = 0
    pattern = re.compile(f"{_IMAGE.pattern}|{_LINK.pattern}")
    for match in pattern.finditer(text):
        parts.append(_plain(text[pos:match.start()]))
        if match.group(0).startswith("!"):
            label, ref = match.group(1), match.group(2)
        else:
            label, ref = match.group(3), match.group(4)
        path = media.path(ref)
        if path is not None:
            parts.append(media.element(path, label))
        elif "://" in ref:
            parts.append(f'<a href="{html.escape(ref)}">{_plain(label)}</a>')
        else:  # a local file that is not media: its path, as text
            parts.append(f"<code>{html.escape(ref)}</code>" if label == ref
                         else f"{_plain(label)} (<code>{html.escape(ref)}</code>)")
        pos = match.end()
    parts.append(_plain(text[pos:]))
    return "".join(parts)


def _plain(text: str) -> str:
    escaped = html.escape(text, quote=False)
    escaped = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escaped)
    return _BOLD.sub(lambda m: f"<strong>{m.group(1)}</strong>", escaped)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_to_html(markdown: str, media: _Media) -> str:
    """The body of the page for report.md's Markdown."""
    out: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif m := re.match(r"(#{1,6}) (.*)", line):
            level = len(m.group(1))
            out.append(f"<h{level}>{_inline(m.group(2), media)}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table(block, media))
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:], media)}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(
                    ("|", "- ", "#")):
                para.append(lines[i])
                i += 1
            out.append(f"<p>{_inline(' '.join(para), media)}</p>")
    return "\n".join(out)


def _table(block: list[str], media: _Media) -> str:
    header, rows = _cells(block[0]), block[1:]
    if rows and set(rows[0].replace("|", "").strip()) <= set("-: "):
        rows = rows[1:]  # the separator line
    head = "".join(f"<th>{_inline(c, media)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{_inline(c, media)}</td>" for c in _cells(r))
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cue_examples(run_dir: Path, media: _Media) -> str:
    examples = sorted((run_dir / CUE_EXAMPLES_DIR).glob("*.png"))
    if not examples:
        return ""
    figures = "".join(f"<figure>{media.element(p, p.stem)}<figcaption>{html.escape(p.stem)}: "
                      "what the camera saw | what the policy saw (cued)</figcaption></figure>"
                      for p in examples)
    return ("<h2>Cue examples</h2><p>The run's first cue episode, raw beside cued, one image "
            f"per camera (<code>{CUE_EXAMPLES_DIR}/</code>).</p>" + figures)


def format_html(report: dict, run_dir: str | Path | None = None) -> str:
    """report.html's text: report.md's content and the run's media, in one page."""
    run_dir = Path(run_dir or report["run_dir"])
    media = _Media(run_dir)
    body = markdown_to_html(format_markdown(report), media) + _cue_examples(run_dir, media)
    title = html.escape(f"Run report: {run_dir.name}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title><style>{STYLE}</style></head>\n<body>\n{body}\n"
            "</body></html>\n")
