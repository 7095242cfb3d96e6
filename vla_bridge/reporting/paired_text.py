"""The paired sim-vs-real report as text: ``pair_report.md`` (one or several policies), the
console lines of ``vla-bridge report --pair``, and writing both files. The numbers come from
``paired`` (the 2x2 statistics, PPI, the planning and the across-policy figures)."""
from __future__ import annotations

import json
from pathlib import Path

from vla_bridge.reporting.markdown import _md_table
from vla_bridge.reporting.paired import (CAVEAT, PAIR_REPORT_JSON, PAIR_REPORT_MD,  # noqa: F401
                                         ONE_POLICY)


def write_paired_report(report: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """pair_report.md and pair_report.json into out_dir (created; atomic replace)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / PAIR_REPORT_MD, out_dir / PAIR_REPORT_JSON
    text_of = format_multi_markdown if "policies" in report else format_paired_markdown
    for path, text in ((md, text_of(report)),
                       (js, json.dumps(report, indent=1, ensure_ascii=False))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)
    return md, js


# ===================================================================================== text

def _rate_text(r: dict) -> str:
    return (f"{r['successes']}/{r['trials']} = {r['rate_pct']:.1f}% "
            f"[{r['ci_low_pct']:.1f}, {r['ci_high_pct']:.1f}]")


def _difference_text(o: dict) -> str:
    diff, t = o["difference"], o["table"]
    return (f"{diff['sim_minus_real_pct']:+.1f} points [{diff['ci_low_pct']:+.1f}, "
            f"{diff['ci_high_pct']:+.1f}]; McNemar exact p = {o['mcnemar_exact_p']:.3g} "
            f"(discordant pairs: {t['b_sim_only']} only sim succeeded, "
            f"{t['c_real_only']} only real)")


def _kappa_text(o: dict) -> str:
    return "undefined (one outcome only)" if o["kappa"] is None else f"{o['kappa']:.2f}"


def format_paired_console(report: dict) -> str:
    """A few lines for the terminal."""
    o = report["overall"]
    lines = [f"sim vs real: {report['n_pairs']} paired trials of {report['n_instructions']} "
             f"instructions (unpaired: {report['n_sim_only']} in sim only, {report['n_real_only']} "
             f"in real only)",
             f"  sim success   {_rate_text(o['sim'])}",
             f"  real success  {_rate_text(o['real'])}",
             f"  sim - real    {_difference_text(o)}",
             f"  agreement     {_rate_text(o['agreement'])}; Cohen's kappa {_kappa_text(o)}"]
    if "ppi" in report:
        lines += [f"  {line}" for line in _ppi_lines(report["ppi"])]
        lines += [f"  {line}" for line in _plan_lines(report["sample_size"])]
    if report.get("across_policies", {}).get("skipped") == ONE_POLICY:
        lines.append(f"  across policies: skipped, {ONE_POLICY}")
    return "\n".join(lines + [f"warning: {w}" for w in report["warnings"]])


def _ppi_text(e: dict) -> str:
    if e["ci_low_pct"] is None:
        interval = f"no interval: {e['interval_note']}"
    else:
        interval = f"[{e['ci_low_pct']:.1f}, {e['ci_high_pct']:.1f}]"
    return f"{e['estimate_pct']:.1f}% {interval}"


def _ppi_lines(ppi: dict) -> list[str]:
    """The PPI estimate beside the real-only rate, a line each."""
    lines = [f"real success, real only   {_rate_text(ppi['real_only'])} (Wilson)"]
    if ppi["skipped"]:
        return lines + [f"real success, PPI         not computed: {ppi['skipped']}"]
    t, c = ppi["tuned"], ppi["classical"]
    lines += [f"real success, PPI++       {_ppi_text(t)} (lambda {t['lambda']:.2f}; "
              f"{ppi['n_paired']} pairs + {ppi['n_sim_only']} sim-only trials; default)",
              f"real success, PPI (l=1)   {_ppi_text(c)}",
              f"naive sim rate            {_rate_text(ppi['naive_sim'])} (all sim trials, "
              f"uncorrected)"]
    return lines + [f"note: {n}" for n in ppi["notes"]]


def _n_text(n: int | None, saving: float | None = None) -> str:
    if n is None:
        return "undefined"
    if saving is None:
        return f"{n}"
    if saving >= 0:
        return f"{n} (saves {saving:.1f}%)"
    return f"{n} (needs {-saving:.1f}% more)"


def _plan_lines(plan: dict) -> list[str]:
    """Real trials for the target width, real only and with sim (two lines, the reference and
    the notes)."""
    return [f"real trials for a {plan['target_width_pct']:g}-point wide "
            f"{100 * plan['confidence']:g}% interval at p_real {plan['p_real_pct']:.1f}%: "
            f"real only {_n_text(plan['real_only_normal'])} (normal; Wilson "
            f"{_n_text(plan['real_only_wilson'])})",
            f"  with the sim run (N = {plan['n_sim_only']} sim-only trials), PPI++: "
            f"{_n_text(plan['with_sim_tuned'], plan['saving_pct'])}; with unlimited sim "
            f"{_n_text(plan['unlimited_sim_tuned'], plan['saving_unlimited_pct'])}; classical "
            f"PPI {_n_text(plan['with_sim_classical'], plan['saving_classical_pct'])}",
            f"  ({plan['reference']})"] + [f"note: {n}" for n in plan["notes"]]


def _across_lines(across: dict) -> list[str]:
    if across["skipped"]:
        return [f"across policies: skipped, {across['skipped']}"]
    b = across["bootstrap"]
    if across["pearson_r"] is None:
        r = f"Pearson r {across['pearson_note']}"
    else:
        r = (f"Pearson r {across['pearson_r']:.3f} [{across['pearson_ci_low']:.3f}, "
             f"{across['pearson_ci_high']:.3f}]")
        if b["pearson_undefined_replicates"]:
            k = b["pearson_undefined_replicates"]
            r += f" ({k} replicate{'s' if k > 1 else ''} without an r left out)"
    return [f"across {across['n_policies']} policies (paired sim vs real success rates): "
            f"MMRV {across['mmrv_pct']:.1f} points [{across['mmrv_ci_low_pct']:.1f}, "
            f"{across['mmrv_ci_high_pct']:.1f}]; {r}",
            f"  (percentile bootstrap, {b['n_boot']} resamples of each policy's paired trials, "
            f"seed {b['seed']})"]


def format_multi_console(report: dict) -> str:
    """Each policy's console block, then the comparison across the policies."""
    out = []
    for rep in report["policies"]:
        out += [f"policy {rep['policy']}:", format_paired_console(rep)]
    return "\n".join(out + _across_lines(report["across_policies"]))


def format_paired_markdown(report: dict) -> str:
    """The paired analysis as a short Markdown section."""
    o, t = report["overall"], report["overall"]["table"]
    out = ["## Sim vs real (paired trials)", "",
           f"- sim run `{report['sim_run']}`, real run `{report['real_run']}`; "
           f"{report['n_pairs']} trials paired by (scene, task, round) over "
           f"{report['n_instructions']} instructions; status 'ok' rows only "
           f"(left out as not ok: sim {report['excluded_not_ok']['sim']}, "
           f"real {report['excluded_not_ok']['real']})",
           f"- success: sim {_rate_text(o['sim'])}, real {_rate_text(o['real'])} "
           f"(Wilson {100 * report['confidence']:g}%)",
           f"- sim - real: {_difference_text(o)}; interval: Newcombe's paired hybrid score",
           f"- agreement: {_rate_text(o['agreement'])} of the pairs; "
           f"Cohen's kappa {_kappa_text(o)}",
           f"- caveat: {report['caveat']}", ""]
    out += _md_table(["", "real success", "real failure"],
                     [["**sim success**", f"{t['a_both']} (a)", f"{t['b_sim_only']} (b)"],
                      ["**sim failure**", f"{t['c_real_only']} (c)", f"{t['d_neither']} (d)"]])
    out += ["", "Per instruction (its paired trials):", ""]
    out += _md_table(["scene", "task", "instruction", "sim", "real", "only sim", "only real"],
                     [[r["scene"], r["task_id"], r["instruction"].replace("|", "\\|"),
                       _rate_text(r["sim"]), _rate_text(r["real"]), r["sim_only"],
                       r["real_only"]] for r in report["per_instruction"]])
    if "ppi" in report:
        out += ["", "Real success rate with the sim run (prediction-powered inference, "
                    "`vla_bridge/reporting/sim_real.py`):", ""]
        out += [f"- {line}" for line in _ppi_lines(report["ppi"])]
        out += ["", "Real trials for the target interval width:", ""]
        out += [f"- {line.strip()}" for line in _plan_lines(report["sample_size"])]
        across = report.get("across_policies", {})
        if across.get("skipped") == ONE_POLICY:
            out += ["", f"Across policies: skipped, {ONE_POLICY}."]
    if report["unpaired"]:
        out += ["", f"Unpaired trials ({report['n_sim_only']} in sim only, "
                    f"{report['n_real_only']} in real only), not in the numbers above:", ""]
        out += [f"- {u['trial']} (in {u['run']} only; {u['other']})" for u in report["unpaired"]]
    if report["warnings"]:
        out += ["", "Warnings:", ""] + [f"- {w}" for w in report["warnings"]]
    return "\n".join(out)


def format_multi_markdown(report: dict) -> str:
    """The comparison across policies, then each policy's paired section."""
    across = report["across_policies"]
    out = [f"## Sim vs real across {report['n_policies']} policies", ""]
    if not across["skipped"]:
        out += _md_table(["policy", "sim run", "real run", "pairs", "sim %", "real %"],
                         [[p["policy"], f"`{p['sim_run']}`", f"`{p['real_run']}`", p["n_pairs"],
                           f"{p['sim_pct']:.1f}", f"{p['real_pct']:.1f}"]
                          for p in across["policies"]]) + [""]
    out += [f"- {line.strip()}" for line in _across_lines(across)]
    for rep in report["policies"]:
        section = format_paired_markdown(rep).split("\n")
        section[0] += f": {rep['policy']}"
        out += [""] + section
    return "\n".join(out)
