"""Packaging: setup.py, setup.cfg and package.xml agree, and colcon installs what launch needs."""
from __future__ import annotations

import configparser
import importlib
import importlib.util
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock
from xml.etree import ElementTree

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "vla_bridge"
REQUIRED_EXEC_DEPENDS = {
    "rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "trajectory_msgs", "std_srvs",
    "visualization_msgs", "rosgraph_msgs", "launch", "launch_ros", "ament_index_python",
    "python3-numpy", "python3-opencv", "python3-yaml",
}


def _setup_kwargs() -> dict:
    """Run setup.py with setuptools.setup replaced by a recorder (nothing is built)."""
    recorded: dict = {}
    cwd = os.getcwd()
    try:
        os.chdir(REPO)
        with mock.patch("setuptools.setup", side_effect=lambda **kw: recorded.update(kw)):
            runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    finally:
        os.chdir(cwd)
    return recorded


SETUP = _setup_kwargs()
CONSOLE_SCRIPTS = SETUP["entry_points"]["console_scripts"]


def _package_xml() -> ElementTree.Element:
    return ElementTree.parse(REPO / "package.xml").getroot()


def test_package_xml_matches_setup_py():
    root = _package_xml()
    assert root.get("format") == "3"
    assert root.findtext("name") == SETUP["name"] == PACKAGE
    assert root.findtext("version") == SETUP["version"]
    assert root.findtext("export/build_type") == "ament_python"
    assert root.findtext("license") == SETUP["license"]
    assert REQUIRED_EXEC_DEPENDS <= {e.text for e in root.findall("exec_depend")}
    assert "python3-pytest" in {e.text for e in root.findall("test_depend")}


def test_setup_cfg_puts_scripts_where_ros2_run_looks():
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO / "setup.cfg")
    assert cfg["develop"]["script_dir"] == f"$base/lib/{PACKAGE}"
    assert cfg["install"]["install_scripts"] == f"$base/lib/{PACKAGE}"


def test_every_package_folder_is_packaged():
    packages = set(SETUP["packages"])
    expected = {PACKAGE}
    for init in (REPO / PACKAGE).rglob("__init__.py"):
        expected.add(".".join(init.parent.relative_to(REPO).parts))
    for folder in ("sim_nodes", "robot_nodes", "policy_nodes"):
        for init in (REPO / folder).rglob("__init__.py"):
            expected.add(".".join((PACKAGE, *init.parent.relative_to(REPO).parts)))
            assert SETUP["package_dir"][f"{PACKAGE}.{folder}"] == folder
    assert expected <= packages, f"not packaged: {sorted(expected - packages)}"


def test_data_files_cover_resource_launch_and_all_config():
    installed = {os.path.join(target, os.path.basename(src)): src
                 for target, sources in SETUP["data_files"] for src in sources}
    marker = f"share/ament_index/resource_index/packages/{PACKAGE}"
    assert installed[marker] == f"resource/{PACKAGE}"
    assert installed[f"share/{PACKAGE}/package.xml"] == "package.xml"
    wanted = [p for p in (REPO / "launch").glob("*.launch.py")]
    wanted += [p for p in (REPO / "config").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts]
    for path in wanted:
        rel = path.relative_to(REPO).as_posix()
        assert installed.get(f"share/{PACKAGE}/{rel}") == rel, f"{rel} is not installed"


@pytest.mark.parametrize("entry", CONSOLE_SCRIPTS,
                         ids=[e.split("=")[0].strip() for e in CONSOLE_SCRIPTS])
def test_console_script_target_exists(entry):
    name, target = (part.strip() for part in entry.split("="))
    module, function = target.split(":")
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        pytest.skip(f"console script {name}: module {module} does not exist yet")
    assert callable(getattr(importlib.import_module(module), function, None)), (
        f"console script {name}: {module} has no function {function}()")


def _colcon() -> str | None:
    beside_python = Path(sys.executable).parent / "colcon"
    return str(beside_python) if beside_python.exists() else shutil.which("colcon")


@pytest.mark.graph
@pytest.mark.slow
def test_colcon_build_installs_launch_and_config(tmp_path):
    colcon = _colcon()
    if colcon is None:
        pytest.skip("colcon is not installed (pip install colcon-common-extensions)")
    source = tmp_path / "src" / PACKAGE
    # the package's own files only: the LIBERO and LeRobot venvs beside .venv are 8 GB, and
    # copying them filled a CI machine's disk
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", ".foxglove-clients", "node_modules", "build", "install", "log", "runs",
        "__pycache__", "*.egg-info", ".pytest_cache"))
    copied = sum(f.stat().st_size for f in source.rglob("*") if f.is_file())
    assert copied < 200e6, f"the package copy is {copied / 1e6:.0f} MB: something big is copied"
    result = subprocess.run(
        [colcon, "build", "--base-paths", str(source), "--build-base", str(tmp_path / "build"),
         "--install-base", str(tmp_path / "install")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    prefix = tmp_path / "install" / PACKAGE
    share = prefix / "share" / PACKAGE
    expected = [share / "package.xml",
                prefix / "share/ament_index/resource_index/packages" / PACKAGE]
    expected += [share / p.relative_to(source) for p in (source / "launch").glob("*.launch.py")]
    expected += [share / p.relative_to(source) for p in (source / "config").rglob("*")
                 if p.is_file()]
    expected += [prefix / "lib" / PACKAGE / e.split("=")[0].strip() for e in CONSOLE_SCRIPTS]
    missing = [str(p.relative_to(tmp_path)) for p in expected if not p.exists()]
    assert not missing, f"colcon did not install: {missing}"
    assert (share / "launch/robofollow_sim.launch.py").exists()
    assert (share / "config/robofollow_sim.yaml").exists()


def test_cli_help_lists_every_subcommand(capsys):
    from vla_bridge.cli import SUBCOMMANDS, build_parser
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in text
    assert "95% intervals" in text  # a % in a help text must not break argparse
