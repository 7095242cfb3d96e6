"""sim:=sapien through the node graph: only launch arguments differ from a MuJoCo graph, and a
SAPIEN episode is scored, with a rerun of the same seed identical frame for frame."""
from __future__ import annotations

import json

from pathlib import Path

import numpy as np
import pytest
import yaml

from support import graph_runs
from support.graph_runs import results
from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import ROBOFOLLOW_SIM

REPO = Path(__file__).resolve().parents[3]
TASK = "L0_pickup_yellow_block_3"


def commands(tmp_path: Path, name: str, given: dict):
    folder = tmp_path / name
    folder.mkdir()
    out = launcher.node_commands(ROBOFOLLOW_SIM, given, REPO, folder)
    argv = {c.name: [a.replace(str(folder), "<overrides>") for a in c.argv] for c in out}
    return {c.name: c for c in out}, argv


def test_only_launch_arguments_differ_from_a_mujoco_graph(tmp_path):
    """Both launchers read one table: `sim` sets the sim node's `backend` (and the evaluator's
    `sim`, which run.json's provenance records) and nothing else, so the two graphs run the
    same nodes, command lines and environments; only those two overrides differ. The params
    file's default is MuJoCo."""
    given = {"tasks": TASK, "levels": "", "output": "runs/x"}
    mujoco, mujoco_argv = commands(tmp_path, "mujoco", given)
    sapien, sapien_argv = commands(tmp_path, "sapien", {**given, "sim": "sapien"})
    assert list(mujoco) == list(sapien) == ["sim_node", "policy_node", "evaluator_node"]
    assert mujoco_argv == sapien_argv
    for name in mujoco:
        assert mujoco[name].env == sapien[name].env
        extra = {"sim_node": {"backend": "sapien"},
                 "evaluator_node": {"sim": "sapien"}}.get(name, {})
        assert sapien[name].overrides == {**mujoco[name].overrides, **extra}
    written = yaml.safe_load((tmp_path / "sapien" / "sim_node.overrides.yaml").read_text())
    assert written["/sim_node"]["ros__parameters"]["backend"] == "sapien"
    params = yaml.safe_load((REPO / ROBOFOLLOW_SIM.params_file).read_text())
    assert params["sim_node"]["ros__parameters"]["backend"] == ROBOFOLLOW_SIM.arg("sim").default
    assert launcher.parse_launch_args(ROBOFOLLOW_SIM, ["sim:=sapien"]) == {"sim": "sapien"}


@pytest.mark.graph
def test_a_sapien_episode_is_scored_through_the_graph_and_a_rerun_is_identical(tmp_path):
    pytest.importorskip("sapien", reason="sapien is not installed: `bash scripts/setup.sh` "
                                         "installs it (requirements-sapien.txt)")
    rows, frames = [], []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = graph_runs.launch("--sim", "sapien", "--tasks", TASK, "--levels", "",
                                 "--rounds", "1", "--output", str(out), timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "backend=sapien" in proc.stdout + proc.stderr  # the sim node says what it runs
        rows.append(results(out))
        frames.append(np.load(out / "episodes" / "scene1" / f"{TASK}_r1.npz"))
    (a,), (b,) = rows
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["provenance"]["hardware"] == "sim:sapien"  # a MuJoCo run cannot resume into it
    assert a["status"] == "ok" and a["frames"] == 501 and a["policy_calls"] == 10
    assert a["intent_score"] == 1.0 and a["exec_score"] == 1.0 and a["complete"]
    keep = ("seed", "intent_score", "exec_score", "complete", "stages", "flags")
    assert {k: a[k] for k in keep} == {k: b[k] for k in keep}
    assert frames[0].files == frames[1].files
    for key in frames[0].files:  # every recorded pose of every frame, bit for bit
        assert np.array_equal(frames[0][key], frames[1][key]), key
    lifted = frames[0]["pos/yellow_block_3"][:, 2].max() - frames[0]["pos/yellow_block_3"][0, 2]
    assert lifted > 0.1  # the grasp held the block while the arm lifted it
