"""The shipped Fast DDS profile delivers large images between processes, and discovers fast.

Two real processes (test/support/dds_probe.py) talk real DDS on this session's
ROS_DOMAIN_ID.
Run with -s to see the figures.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

HERE = Path(__file__).resolve().parents[1]  # the test root
PROBE = HERE / "support" / "dds_probe.py"
PROFILE = HERE.parent / "config" / "fastdds_profile.xml"
COUNT = 20
DISCOVERY_BOUND_S = 2.5
FDS = "{http://www.eprosima.com}"


def _result(output: str) -> dict:
    for line in output.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"probe printed no RESULT line:\n{output}")


def _run_pair(env: dict, cwd: Path, count: int = COUNT, width: int = 640,
              height: int = 480) -> tuple[dict, dict]:
    """Start the subscriber, wait until it is up, run the publisher; both results."""
    sub = subprocess.Popen([sys.executable, str(PROBE), "sub", "--count", str(count),
                            "--timeout", "25"], env=env, cwd=cwd, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert sub.stdout.readline().strip() == "READY", "subscriber did not start"
        pub = subprocess.run([sys.executable, str(PROBE), "pub", "--count", str(count),
                              "--width", str(width), "--height", str(height)],
                             env=env, cwd=cwd, text=True, capture_output=True, timeout=60)
        sub_out, _ = sub.communicate(timeout=40)
    finally:
        if sub.poll() is None:
            sub.kill()
    return _result(pub.stdout + pub.stderr), _result(sub_out)


def _env(with_profile: bool) -> dict:
    env = dict(os.environ, RMW_IMPLEMENTATION="rmw_fastrtps_cpp")
    if with_profile:
        env["FASTDDS_DEFAULT_PROFILES_FILE"] = str(PROFILE)
    else:
        env.pop("FASTDDS_DEFAULT_PROFILES_FILE", None)
        env["SKIP_DEFAULT_XML_FILE"] = "1"  # nor a DEFAULT_FASTDDS_PROFILES.xml in cwd
    return env


def _print_figures(label: str, pub: dict, sub: dict) -> None:
    print(f"\n[{label}] discovery {pub['discovery_s']:.3f} s "
          f"(process start to match {pub['startup_to_match_s']:.3f} s); "
          f"received of {pub['sent']}: {sub['received']}; corrupt: {sub['corrupt']}")


def test_profile_is_well_formed_and_sized_for_images():
    root = ElementTree.parse(PROFILE).getroot()
    segment = root.find(f".//{FDS}transport_descriptor/{FDS}segment_size")
    assert int(segment.text) >= 16 * 640 * 480 * 3, "SHM segment should hold many frames"
    defaults = [e for e in root.iter() if e.get("is_default_profile") == "true"]
    assert {e.tag.replace(FDS, "") for e in defaults} == {"participant", "data_writer",
                                                          "data_reader"}


@pytest.mark.graph
@pytest.mark.slow
def test_large_images_cross_processes_with_profile(tmp_path):
    start = time.monotonic()
    pub, sub = _run_pair(_env(with_profile=True), tmp_path)
    _print_figures("shipped profile", pub, sub)
    assert pub["discovery_s"] is not None, "publisher never matched the subscriber"
    assert pub["discovery_s"] < DISCOVERY_BOUND_S
    assert sub["corrupt"] == {"best_effort": 0, "reliable": 0}
    assert sub["received"]["reliable"] == COUNT
    # Best effort may lose a frame on an overloaded machine, never most of them.
    assert sub["received"]["best_effort"] >= COUNT * 0.9
    assert time.monotonic() - start < 30


@pytest.mark.graph
@pytest.mark.slow
def test_default_profile_figures_for_comparison(tmp_path):
    """Without the profile: print what gets through (losses vary, so nothing is asserted
    about best effort; reliable must still arrive)."""
    pub, sub = _run_pair(_env(with_profile=False), tmp_path)
    _print_figures("Fast DDS defaults", pub, sub)
    assert sub["corrupt"] == {"best_effort": 0, "reliable": 0}
