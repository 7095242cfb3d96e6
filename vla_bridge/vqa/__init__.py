"""LIBERO-VIFO Part I-A: cue understanding by visual question answering.

Pure logic (numpy / OpenCV; MuJoCo is imported only when ``run_vqa`` builds its simulator),
no rclpy. For every selected task x cue (family, variant) x seed, ``run_vqa``

1. resets the MuJoCo scene for the task's layout and seed and renders one camera,
2. builds the task's cue exactly as the evaluator does for the closed-loop protocols
   (``protocols.build_cue(task, family, variant, seed)``) and inserts it with the live world
   state and camera model (F3 ghosts: the source object re-rendered at 4 future poses),
3. asks a ``VqaBackend`` the four multiple-choice questions of ``questions.vqa_questions``
   (detection, semantics, grounding, decision; objects named as they look, never by an
   internal index; half of the detection questions show the render without the cue),

and writes to the output directory:

* ``vqa_results.jsonl``: one row per question (appended; a rerun skips the instances whose
  four rows are there, so an interrupted run resumes and nothing is lost);
* ``vqa_examples/<family>_<variant>_<task>_s<seed>.png``: the cued image of the first
  instance of each family;
* ``vqa_metrics.json`` and ``vqa_table.txt``: accuracy per stage, Full-Chain Accuracy
  (FCA: an instance counts only when all four answers are right) and the paper's Table 2
  "VQA" score (the mean of the four stage accuracies), per family and overall, beside the
  chance level of a uniform guess.

``libero.run_libero_vqa`` does the same on LIBERO's 40 tasks: first observations rendered by
``.venv-libero`` (``sim_nodes.libero.frames``), cues from the tasks' BDDL goals, objects and
regions named as LIBERO's instructions name them.

Backends are named by a spec string like the policy registry: ``random``, ``random?seed=3``,
``http?url=http://host:8000/vqa&timeout=30``, ``oracle``, or ``package.module:Class?k=v``.

Modules: ``backends`` (the backends and their specs), ``instances`` (task x cue x seed and
the cued render), ``describe`` (objects named as the image shows them), ``questions`` (the
four questions), ``results`` (the output files, accuracy and FCA), ``runner`` (asking,
``run_vqa``).

May import the engine (``evaluation`` and everything below it); never ``data``,
``reporting`` or the tools.
"""
from vla_bridge.vqa.backends import (VQA_BACKENDS, HttpVqa, OracleVqa, RandomVqa,
                                                VqaBackend, VqaBackendUnavailable, encode_png,
                                                make_vqa_backend)
from vla_bridge.vqa.describe import describe_objects
from vla_bridge.vqa.instances import VqaInstance, parse_cues, plan_instances
from vla_bridge.vqa.questions import NO_CUE, QUESTIONS_VERSION, vqa_questions
from vla_bridge.vqa.results import (EXAMPLES_DIR, METRICS_FILE, RESULTS_FILE,
                                               TABLE_FILE, format_vqa_table, read_rows,
                                               vqa_metrics)
from vla_bridge.vqa.runner import run_vqa

__all__ = [
    "VqaBackend", "RandomVqa", "OracleVqa", "HttpVqa", "VqaBackendUnavailable", "VQA_BACKENDS",
    "make_vqa_backend", "parse_cues", "VqaInstance", "plan_instances", "run_vqa", "vqa_metrics",
    "format_vqa_table", "read_rows", "encode_png", "RESULTS_FILE", "METRICS_FILE", "TABLE_FILE",
    "EXAMPLES_DIR", "vqa_questions", "describe_objects", "NO_CUE", "QUESTIONS_VERSION",
]
