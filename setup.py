"""ament_python package vla_bridge.

Works both ways:
* `colcon build` (a ROS 2 workspace): scripts land in lib/vla_bridge (setup.cfg), launch and
  config files in share/vla_bridge, the ament index marker in share/ament_index;
* `pip install -e .` (the PyPI ROS 2 wheels in a virtualenv, see scripts/setup.sh).

Dependencies are not declared in install_requires on purpose: on a ROS install they come
from the distro (package.xml), in a virtualenv from requirements.txt.
"""
import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "vla_bridge"
HERE = os.path.dirname(os.path.abspath(__file__))

# Top-level folders imported as vla_bridge.<folder> (the product card fixes the layout).
MAPPED_FOLDERS = ("sim_nodes", "robot_nodes", "policy_nodes")


def packages_and_dirs():
    """All packages under vla_bridge/ plus the mapped folders and their subpackages."""
    packages = [p for p in find_packages(where=HERE, include=[PACKAGE, f"{PACKAGE}.*"])]
    package_dir = {PACKAGE: PACKAGE}
    for folder in MAPPED_FOLDERS:
        if not os.path.isfile(os.path.join(HERE, folder, "__init__.py")):
            continue
        name = f"{PACKAGE}.{folder}"
        packages.append(name)
        package_dir[name] = folder
        for sub in find_packages(where=os.path.join(HERE, folder)):
            packages.append(f"{name}.{sub}")
            package_dir[f"{name}.{sub}"] = os.path.join(folder, *sub.split("."))
    return packages, package_dir


def share_files(folder, pattern="**/*"):
    """(install dir, [files]) pairs that mirror `folder` under share/vla_bridge."""
    by_dir = {}
    for path in sorted(glob(os.path.join(HERE, folder, pattern), recursive=True)):
        if not os.path.isfile(path) or "__pycache__" in path:
            continue
        rel = os.path.relpath(path, HERE)
        by_dir.setdefault(os.path.join("share", PACKAGE, os.path.dirname(rel)), []).append(rel)
    return sorted(by_dir.items())


PACKAGES, PACKAGE_DIR = packages_and_dirs()

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        *share_files("launch", "*.launch.py"),
        *share_files("config"),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="vla_bridge maintainers",
    maintainer_email="vla-bridge@example.com",
    description="Evaluate VLA policies the same way in simulation and on real arms (ROS 2).",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "vla-bridge = vla_bridge.cli:main",
            "sim_node = vla_bridge.sim_nodes.sim_node:main",
            "policy_node = vla_bridge.policy_nodes.policy_node:main",
            "evaluator_node = vla_bridge.evaluation.evaluator_node:main",
            "recorder_node = vla_bridge.data.recorder_node:main",
            "viewer_node = vla_bridge.data.viewer_node:main",
            "piper_node = vla_bridge.robot_nodes.piper.piper_node:main",
            "realsense_node = vla_bridge.robot_nodes.realsense.realsense_node:main",
            "tracker_node = vla_bridge.robot_nodes.tracker.tracker_node:main",
        ],
    },
)
