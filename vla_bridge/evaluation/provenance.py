"""A run's provenance, without ROS: what produced its episodes and with which code.

``run_provenance`` gathers the settings that give an episode its meaning -- the policy spec
and a fingerprint of its checkpoint, sim or hardware, the cue protocol, the base seed, the
budget, the charged latency, how the chunks are made and executed (``execution``: the
empty-language control, chunk size, action horizon, temporal ensembling, async inference,
lock-step, the images the policy reads ...) -- and the project's git commit; run.json
records them (``RunDirectory.start``).

Most ``execution`` settings are the policy node's or the sim node's parameters: the launch
arguments that set them set the evaluator's parameter of the same name too
(``ros.launch_args``), so the evaluator knows them before the first episode and a resume can
be refused before anything runs (the nodes' ready statuses would come only with an episode).
``resume_differences`` names what a resume would change, so the evaluator can refuse to mix
two setups in one run directory; ``describe`` is the one-line summary the report prints.
"""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from vla_bridge.benchmarks import perturbations
from vla_bridge.policy_nodes.registry import parse_spec

#: policy spec arguments that name local weights or recordings (``torch?checkpoint=DIR``,
#: ``replay?path=RUN``): their files are fingerprinted
CHECKPOINT_ARGS = ("checkpoint", "path")
#: the fields a resume must keep (they change what an episode means)
RESUME_FIELDS = ("policy", "checkpoint", "hardware", "cue", "base_seed", "budget", "latency",
                 "execution", "perturbation")
#: the ``execution`` settings (evaluator parameters the launch arguments also give the policy
#: or sim node) and their types: what the policy is told and sees and how its chunks run
EXECUTION_TYPES = {"empty_language": bool, "chunk_size": int, "action_horizon": int,
                   "temporal_ensemble": bool, "async_inference": bool, "image_source": str,
                   "lock_step": bool, "observation_period": int, "oracle_follow": str,
                   "cue_render_ghosts": bool}
#: RoboFollow's: always; in the sim (lock-step; the observation period where it acts: real
#: time or charged latency); under a cue protocol (the oracle's task, F3's ghosts)
ROBOFOLLOW_EXECUTION = ("empty_language", "chunk_size", "action_horizon", "temporal_ensemble",
                        "async_inference", "image_source")
SIM_EXECUTION = ("lock_step",)
CUE_EXECUTION = ("oracle_follow", "cue_render_ghosts")
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the checkout holding vla_bridge/
UNKNOWN = "unknown"


def fingerprint(path: str | Path) -> dict:
    """sha256 over a file's bytes, or over a directory's files (relative names, sizes and
    bytes, in name order), with the number of files and bytes."""
    path = Path(path).expanduser()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest, total = hashlib.sha256(), 0
    for file in files:
        size = file.stat().st_size
        if file != path:
            digest.update(f"{file.relative_to(path).as_posix()}\0{size}\0".encode())
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        total += size
    return {"sha256": digest.hexdigest(), "files": len(files), "bytes": total}


def checkpoint_of(policy: str) -> dict | None:
    """The checkpoint a policy spec names (None: it names none, e.g. oracle or hold): its
    argument and path, and ``fingerprint`` when the path is a local file or directory."""
    try:
        _, args = parse_spec(policy)
    except ValueError:  # a malformed spec: the policy node reports it
        return None
    for key in CHECKPOINT_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value:
            local = Path(value).expanduser()
            if local.exists():
                return {"arg": key, "path": value, **fingerprint(local)}
            return {"arg": key, "path": value, "sha256": None,
                    "note": "not a local file or directory"}
    return None


def git_commit(root: str | Path = SOURCE_ROOT) -> str:
    """The commit of the git checkout at ``root``; "unknown" when it is none (an installed
    package) or git is missing or fails."""
    root = Path(root)
    if not (root / ".git").exists():
        return UNKNOWN
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else UNKNOWN


def hardware_of(params: dict) -> str:
    """What filled the robot role: sim (the sim node on MuJoCo), sim:sapien (on SAPIEN),
    fake_piper (firmware emulator) or piper."""
    hardware = params.get("hardware") or "sim"
    if hardware == "piper" and params.get("use_fake_hardware"):
        return "fake_piper"
    simulator = params.get("sim") or "mujoco"
    if hardware == "sim" and simulator != "mujoco":
        return f"sim:{simulator}"
    return hardware


def run_provenance(params: dict, cues) -> dict:
    """run.json's ``provenance`` of a run with the evaluator's ``params`` (the fields of
    episodes.EngineConfig and RoboFollowConfig) and its resolved cue protocol (a CueRun)."""
    policy = str(params.get("policy", ""))
    return {
        "policy": policy, "checkpoint": checkpoint_of(policy), "hardware": hardware_of(params),
        "cue": {"protocol": cues.protocol or None, "family": cues.family,
                "variant": cues.variant, "placement": cues.placement if cues.protocol else None},
        "base_seed": int(params["base_seed"]),
        "budget": {"max_policy_calls": int(params["max_policy_calls"]),
                   "max_actions_per_call": int(params["max_actions_per_call"])},
        "latency": latency_of(params),
        "execution": robofollow_execution(params, bool(cues.protocol)),
        "git_commit": git_commit(),
    }


def execution_of(params: dict, names) -> dict:
    """The ``execution`` settings ``names`` as ``params`` has them (typed; absent: left out)."""
    return {name: EXECUTION_TYPES[name](params[name]) for name in names if name in params}


def robofollow_execution(params: dict, cue_protocol: bool) -> dict:
    """A RoboFollow run's ``execution`` settings (see ROBOFOLLOW_EXECUTION)."""
    names = list(ROBOFOLLOW_EXECUTION)
    if hardware_of(params).startswith("sim"):
        names += SIM_EXECUTION
        if not params.get("lock_step", True) or str(params.get("latency")) == "charged":
            names.append("observation_period")
    if cue_protocol:
        names += CUE_EXECUTION
    return execution_of(params, names)


def latency_of(params: dict) -> dict | None:
    """The run's charged latency (evaluation.charged_latency): None when off."""
    if str(params.get("latency", "none")) != "charged":
        return None
    return {"mode": "charged", "latency_ms": str(params.get("latency_ms", "measured"))}


def _comparable(name: str, value):
    """A checkpoint is the same when its fingerprint is (or, without one, its path)."""
    if name == "checkpoint" and value:
        return value.get("sha256") or value.get("path")
    return value


def _short(name: str, value) -> str:
    if name == "checkpoint" and value:
        fp = value.get("sha256")
        return f"{value.get('path')!r} (sha256 {fp[:12] if fp else 'none'})"
    return repr(value)


def perturbation_of(params: dict) -> str | None:
    """The provenance's ``perturbation``: the run's ``AXIS:LEVEL`` (``--perturb``), None when
    unperturbed; ValueError on a malformed one."""
    p = perturbations.parse(str(params.get("perturb") or ""))
    return p.spec if p else None


def resume_differences(old: dict | None, new: dict, rows=()) -> list[str]:
    """What differs between a run directory's recorded provenance ``old`` and this run's
    ``new`` (each "name: old -> new"); also a results row naming another policy. A field
    ``old`` lacks (a directory from before it was recorded) is not compared; ``execution``
    is compared setting by setting (each named on its own), over those both record."""
    found = []
    for name in RESUME_FIELDS:
        if name == "execution" and old is not None and old.get(name) is not None:
            was, now = old[name], new.get(name) or {}
            found += [f"{key} {was[key]!r} -> {now[key]!r}" for key in was
                      if key in now and was[key] != now[key]]
        elif old is not None and name in old:
            was, now = _comparable(name, old[name]), _comparable(name, new[name])
            if was != now:
                found.append(f"{name} {_short(name, old[name])} -> {_short(name, new[name])}")
    policies = sorted({str(row["policy"]) for row in rows if "policy" in row} - {new["policy"]})
    if policies and not any(item.startswith("policy ") for item in found):
        found.append(f"policy {policies[0]!r} (results.jsonl) -> {new['policy']!r}")
    return found


def describe(provenance: dict | None) -> str:
    """One line: policy, checkpoint, hardware, cue protocol, seed, budget, commit."""
    if not provenance:
        return "provenance not recorded (a run directory from before it was)"
    p = provenance
    checkpoint = p.get("checkpoint")
    cue = p.get("cue") or {}
    budget = p.get("budget") or {}
    parts = [f"policy {p.get('policy') or '?'}"]
    if checkpoint:
        parts.append(f"checkpoint {_short('checkpoint', checkpoint)}")
    parts.append(f"on {p.get('hardware', '?')}")
    if cue.get("protocol"):
        parts.append("cue " + "/".join(str(cue[k]) for k in ("protocol", "family", "variant",
                                                             "placement") if cue.get(k)))
    if p.get("latency"):
        parts.append(f"charged latency {p['latency'].get('latency_ms')}")
    if p.get("perturbation"):
        parts.append(f"perturbed {p['perturbation']}")
    parts.append(f"base seed {p.get('base_seed', '?')}")
    if budget:
        parts.append(f"budget {budget.get('max_policy_calls')} calls x "
                     f"{budget.get('max_actions_per_call')} actions")
    parts.append(f"commit {str(p.get('git_commit', UNKNOWN))[:12]}")
    return ", ".join(parts)
