"""`vla-bridge report`: turn a run directory into RoboFollow-style tables, plots and videos.

From ``results.jsonl`` (one row per episode) it computes, per scene/level and overall:

* **IS, ES, CR in percent** with the same point estimates as ``summary.json``, each with a
  95% interval from a task-level (cluster) bootstrap (``tables``; its docstring explains the
  intervals), and the empty-language drop against a second run directory, with a paired
  task-bootstrap interval next to the paper's π₀.₅ drop (``tables.compare_runs``);
* beside them, optionally, the paper's Table 1 figures for one model (``paper``:
  ``config/robofollow/paper_table1.json``, default model π₀.₅);
* INT-ACT episode rates re-scored from the saved episode files, and the LIBERO-VIFO Table 2
  metrics of cue-protocol episodes (``sections``); the policy latency per call
  (``run_dir.latency_summary``);
* PNG plots (matplotlib, Agg) of IS/ES/CR from L0 to L3 per scene (``plots``);
* replay videos of saved episodes, raw or as the policy saw them under a visual cue
  (``videos``; captions and H.264 encoding in ``video_io``, the idle tail cut by ``idle``);
* a pilot's operator-scored report (pilot_report.md, ``pilot_report``) when the run
  directory has one; ``operator_console``: the operator's side of real pilot trials;
* a perturbation sweep's success per level with Wilson intervals, its table and plot
  (``sweep``: sweep.json, sweep.md, sweep.png of `vla-bridge sweep`).

``build`` puts it together (``build_report``, ``write_report``), ``markdown`` writes it as
text, ``html`` as one self-contained page (report.md's content with the plots, videos and cue
examples inlined). Everything lands in the run directory: ``report.md``, ``report.json``,
``report.html``, ``plots/``, ``videos/``. Numbers in ``report.json`` are percentages (0-100), like the paper's. Shared
names (metrics, levels, the input error, reading the run) are in ``common``. Each call adds
its sections to those of the run's earlier report (``memory``).

Pure logic apart from the optional MuJoCo/OpenCV/PyAV/matplotlib parts, which are imported
lazily; no rclpy. May import the engine (``evaluation`` and everything below it), ``data``
and ``vqa``; never the tools (``cli``, ``perf``, ``campaign``).
"""
from vla_bridge.reporting.build import ReportOptions, build_report, write_report
from vla_bridge.reporting.common import METRICS, ReportError
from vla_bridge.reporting.markdown import format_console, format_markdown
from vla_bridge.reporting.paper import DEFAULT_PAPER_MODEL
from vla_bridge.reporting.tables import DEFAULT_BOOT, DEFAULT_CONFIDENCE, DEFAULT_SEED
from vla_bridge.reporting.videos import VIDEO_CAMERA, VIDEO_VIEWS

__all__ = ["DEFAULT_BOOT", "DEFAULT_CONFIDENCE", "DEFAULT_PAPER_MODEL", "DEFAULT_SEED", "METRICS",
           "VIDEO_CAMERA", "VIDEO_VIEWS", "ReportError", "ReportOptions", "build_report",
           "format_console", "format_markdown", "write_report"]
