"""Find the project's data files (``config/...``) in a checkout or an installed package.

Pure logic, no rclpy. Lookup order for ``config_path("robofollow/tasks.json")``:

1. the repository checkout this module sits in: ``<repo>/config/robofollow/tasks.json``;
2. the share folder of the Python prefix: ``<sys.prefix>/share/vla_bridge/config/...``
   (pip / setuptools ``data_files`` installs);
3. the ament index, when ``ament_index_python`` is importable (colcon install spaces).
"""
from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = "vla_bridge"


def config_path(relative: str | Path) -> Path:
    """Absolute path of ``config/<relative>``; FileNotFoundError lists every place tried."""
    tried: list[str] = []
    for candidate in _candidates(Path(relative), tried):
        if candidate.is_file():
            return candidate
        tried.append(str(candidate))
    raise FileNotFoundError(
        f"config file {relative!s} not found; tried:\n  " + "\n  ".join(tried))


def _candidates(relative: Path, tried: list[str]):
    yield Path(__file__).resolve().parents[1] / "config" / relative
    yield Path(sys.prefix) / "share" / PACKAGE / "config" / relative
    share = _ament_share_dir(tried)
    if share is not None:
        yield share / "config" / relative


def _ament_share_dir(tried: list[str]) -> Path | None:
    try:
        from ament_index_python.packages import get_package_share_directory
    except ImportError:
        tried.append("ament index (ament_index_python not importable)")
        return None
    try:
        return Path(get_package_share_directory(PACKAGE))
    except Exception as exc:  # PackageNotFoundError, or no AMENT_PREFIX_PATH at all
        tried.append(f"ament index ({type(exc).__name__}: {exc})")
        return None


#: LIBERO's own virtualenv (robosuite 1.4.0 needs mujoco 3.3.7): `bash scripts/setup.sh libero`
LIBERO_PYTHON = Path(__file__).resolve().parents[1] / ".venv-libero" / "bin" / "python"
