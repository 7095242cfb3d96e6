"""A generated suite's BDDL files (INT-ACT's probes, #25) in their cache folder: written by the
suite's writer, a damaged or stale file is rewritten from it, an intact one is left alone, and
a suite with no writer is refused. Pure file handling: no LIBERO needed."""
from __future__ import annotations

import os

import pytest

from vla_bridge.benchmarks.intact import libero_probes
from vla_bridge.sim_nodes.libero import suites


def test_a_damaged_cached_problem_file_is_rewritten_and_an_intact_one_left_alone(tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setenv("VLA_BRIDGE_CACHE", str(tmp_path))
    folder = suites.generated_bddl_dir(libero_probes.SUITE)
    assert folder == tmp_path / "bddl" / libero_probes.SUITE
    probes = libero_probes.probes()
    files = sorted(folder.glob("*.bddl"))
    assert len(files) == len(probes) == 55
    torn, stale, kept = (folder / f"{p.name}.bddl" for p in probes[:3])
    torn.write_text(torn.read_text()[:100])  # a write cut short
    stale.write_text(stale.read_text().replace("(:goal", "(:goal (Open basket_1)"))
    assert stale.read_text() != probes[1].bddl()
    os.utime(kept, (1, 1))  # an intact file: its mtime shows whether it was written again
    suites.generated_bddl_dir(libero_probes.SUITE)
    assert torn.read_text() == probes[0].bddl() and stale.read_text() == probes[1].bddl()
    assert kept.stat().st_mtime == 1
    assert not list(folder.glob("*.tmp*"))  # each file replaced whole, nothing left over


def test_every_generated_suite_has_a_writer_and_other_suites_are_refused(tmp_path, monkeypatch):
    from vla_bridge.benchmarks.libero.protocol import GENERATED_SUITES
    monkeypatch.setenv("VLA_BRIDGE_CACHE", str(tmp_path))
    assert set(suites.GENERATED_WRITERS) == set(GENERATED_SUITES)
    with pytest.raises(ValueError, match="'libero_object' is no generated suite"):
        suites.generated_bddl_dir("libero_object")
    assert not (tmp_path / "bddl").exists()
