"""What a LeRobot checkpoint needs beyond its own directory, checked before and while it is
built (the ``lerobot`` backend, ``lerobot.backend``):

* **offline**: nothing is downloaded. ``HF_HUB_OFFLINE=1`` unless the environment says
  otherwise (huggingface_hub reads it once, at import, so an already imported hub is told too);
* **Hub files**: hub-backed VLAs name other Hugging Face repositories in their config or in
  their saved processors: SmolVLA's ``vlm_model_name`` (its VLM's config and processor) and
  tokenizer, pi0-FAST's and X-VLA's tokenizers, GR00T's base model. ``hub_dirs`` maps such a
  repository id to a local directory holding its files; an id that is neither mapped nor in the
  local Hugging Face cache turns the build's failure into one error naming it and what to provide;
* **packages**: policy types whose code needs what PyPI cannot give next to this project's pins
  (pi0 / pi0.5 / pi0-FAST in LeRobot < 0.5: LeRobot's patched transformers; LeRobot 0.5+, in
  .venv-lerobot, runs them on PyPI's transformers 5) fail up front, before allocating a
  multi-GB model only to reject it; reward models are refused (they output no actions).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

PROCESSOR_FILES = ("policy_preprocessor.json", "policy_postprocessor.json")
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # "owner/name", as the Hub spells ids
# LeRobot ships these as policies, but they score transitions instead of acting
REWARD_MODELS = ("reward_classifier", "sarm")
# LeRobot's openpi ports check for the transformers fork their extra `lerobot[pi]` installs
# (git branch fix/lerobot_openpi, not on PyPI); the fork marks itself with this module
OPENPI_PORTS = ("pi0", "pi05", "pi0_fast")
OPENPI_TRANSFORMERS = "transformers.models.siglip.check"
# LeRobot's pip extra per policy type whose code imports more than the base install
EXTRAS = {"smolvla": "smolvla", "groot": "groot", "xvla": "xvla", "wall_x": "wallx",
          "pi0": "pi", "pi05": "pi", "pi0_fast": "pi"}


def go_offline() -> None:
    """Downloads off, unless HF_HUB_OFFLINE is set (to anything) in the environment."""
    if "HF_HUB_OFFLINE" in os.environ:
        return
    os.environ["HF_HUB_OFFLINE"] = "1"
    if "huggingface_hub" in sys.modules:  # it read the environment already
        import huggingface_hub.constants
        huggingface_hub.constants.HF_HUB_OFFLINE = True


def check_buildable(policy_type: str) -> None:
    """Refuse, before building anything, what cannot run here (see the module docstring)."""
    if policy_type in REWARD_MODELS:
        raise ValueError(f"LeRobot's {policy_type!r} is a reward model, not a policy: it "
                         "outputs no actions")
    if policy_type in OPENPI_PORTS and _needs_openpi_fork() and not _has_module(OPENPI_TRANSFORMERS):
        raise ImportError(
            f"LeRobot's {policy_type} policy needs LeRobot's patched transformers (git branch "
            "fix/lerobot_openpi of huggingface/transformers, what `pip install 'lerobot[pi]'` "
            "installs from a LeRobot checkout), which PyPI does not have and this interpreter "
            "lacks. Run the checkpoint from a virtualenv that has it "
            "(--policy_python, docs/policies.md) or serve it with openpi (--policy openpi)")


def _needs_openpi_fork() -> bool:
    """LeRobot < 0.5 ports openpi on a transformers fork; 0.5+ on PyPI's transformers 5."""
    import importlib.metadata
    try:
        version = tuple(int(x) for x in importlib.metadata.version("lerobot").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return True
    return version < (0, 5)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package is missing
        return False


def missing_package_error(policy_type: str, exc: ImportError) -> ImportError:
    extra = EXTRAS.get(policy_type)
    hint = f" (LeRobot's extra `lerobot[{extra}]` lists them)" if extra else ""
    return ImportError(
        f"LeRobot's {policy_type} policy needs packages this interpreter lacks: {exc}{hint}. "
        "requirements-lerobot.txt installs those of the types it supports; for others use "
        "a virtualenv of their own with --policy_python (docs/policies.md)")


# ------------------------------------------------------------------ Hub repositories


def _repo_like(value) -> bool:
    return isinstance(value, str) and REPO_ID.match(value) is not None and not Path(value).exists()


def hub_refs(config, checkpoint: Path) -> dict[str, list[str]]:
    """repo id -> where the checkpoint names it (``config.json vlm_model_name``,
    ``policy_preprocessor.json tokenizer_processor.tokenizer_name``), for every string of the
    policy config and of the saved processor steps that is a Hub id rather than a path."""
    refs: dict[str, list[str]] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if _repo_like(value):
            refs.setdefault(value, []).append(f"config.json {field.name}")
    for name, step, key, value in _processor_strings(checkpoint):
        if _repo_like(value):
            refs.setdefault(value, []).append(f"{name} {step}.{key}")
    return refs


def _processor_strings(checkpoint: Path):
    """(file, step key, config key, value) of every string in the saved processor steps."""
    for name in PROCESSOR_FILES:
        path = checkpoint / name
        if not path.is_file():
            continue
        for step in json.loads(path.read_text()).get("steps", []):
            step_key = step.get("registry_name") or step.get("class", "?").rsplit(".", 1)[-1]
            for key, value in (step.get("config") or {}).items():
                if isinstance(value, str):
                    yield name, step_key, key, value


def use_local_dirs(config, checkpoint: Path, hub_dirs: dict) -> dict[str, dict]:
    """Point the config's Hub ids at their ``hub_dirs`` directories (in place) and return the
    processor overrides that do the same for the saved steps: {file: {step: {key: dir}}}."""
    for repo, local in hub_dirs.items():
        if not Path(local).is_dir():
            raise FileNotFoundError(f"hub_dirs: {local!r} (for {repo!r}) is not a directory")
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, str) and value in hub_dirs:
            setattr(config, field.name, str(hub_dirs[value]))
    overrides: dict[str, dict] = {name: {} for name in PROCESSOR_FILES}
    for name, step, key, value in _processor_strings(checkpoint):
        if value in hub_dirs:
            overrides[name].setdefault(step, {})[key] = str(hub_dirs[value])
    return overrides


def in_local_cache(repo: str) -> bool:
    from huggingface_hub import snapshot_download
    try:
        snapshot_download(repo, local_files_only=True)
    except Exception:  # noqa: BLE001 - not there (or not readable): either way not usable
        return False
    return True


def missing_hub_files(policy_type: str, checkpoint: Path, refs: dict[str, list[str]],
                      exc: Exception) -> RuntimeError | None:
    """The error for a build that failed while Hub repositories it names are not on this
    machine (None when every one is: the failure is something else)."""
    missing = {repo: where for repo, where in refs.items() if not in_local_cache(repo)}
    if not missing:
        return None
    names = "; ".join(f"{repo!r} ({', '.join(where)})" for repo, where in missing.items())
    example = json.dumps({repo: "/path/to/local/copy" for repo in missing})
    return RuntimeError(
        f"the {policy_type} checkpoint {checkpoint} loads files from the Hugging Face Hub that "
        f"are not on this machine, and nothing is downloaded (HF_HUB_OFFLINE): {names}. Provide "
        "each as a local directory with that repository's files (config.json, tokenizer and "
        "processor files, and its weights where the policy loads them) and pass "
        f"hub_dirs='{example}', or put the repository in the Hugging Face cache (`hf download "
        f"REPO` on a connected machine, then copy its HF_HOME here). "
        f"({type(exc).__name__}: {str(exc)[:300]})")
