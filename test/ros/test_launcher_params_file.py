"""The launcher checks a params file before it starts any node: one-line errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import GRAPHS

REPO = Path(__file__).resolve().parents[2]


def test_shipped_params_files_pass():
    for graph in GRAPHS.values():
        launcher.check_params_file(REPO / graph.params_file)
    launcher.check_params_file(REPO / "config" / "robofollow_real.yaml")


@pytest.mark.parametrize("text, expected", [
    ("sim_node:\n  ros__parameters:\n    scene: [scene1\n", r"not valid YAML: .* at line 4"),
    ("- sim_node\n", "expected a mapping of node names to 'ros__parameters', got list"),
    ("", "got NoneType"),
    ("sim_node:\n  scene: scene1\n", "node 'sim_node': no 'ros__parameters' mapping"),
    ("sim_node:\n  ros__parameters: [1]\n", "ros__parameters must be a mapping, got list"),
    ("/ns:\n  sim_node:\n    ros__parameters:\n      a:\n        b: [1, x]\n",
     r"node '/ns': ros__parameters.a.b: a list must hold values of one type"),
    ("sim_node:\n  ros__parameters:\n    scene:\n", "ros__parameters.scene has no value"),
])
def test_bad_params_files_are_one_line_errors(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=expected) as err:
        launcher.check_params_file(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_namespaced_and_nested_parameters_pass(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("/ns:\n  sim_node:\n    ros__parameters:\n      a:\n        b: [1, 2]\n"
                    "/**:\n  ros__parameters:\n    use_sim_time: false\n")
    launcher.check_params_file(path)
