"""The report's PNG plots (matplotlib, Agg): IS, ES and CR from L0 to L3, one figure per
scene, with our intervals, the paper's model and an empty-language run beside them."""
from __future__ import annotations

from pathlib import Path

from vla_bridge.reporting.common import LEVELS, METRIC_NAMES, METRICS, group_key
from vla_bridge.reporting.paper import paper_cells


def _plot_metric(ax, metric: str, scene: str, table: dict[str, dict], cells: dict,
                 paper: dict | None, empty_table: dict[str, dict] | None) -> None:
    """One panel: ours with interval bars, the paper (dashed), the empty-language run (dotted)."""
    x, y, err = [], [], [[], []]
    for i, level in enumerate(LEVELS):
        cell = table.get(group_key(scene, level))
        if cell is None:
            continue
        v = cell[metric]
        x.append(i)
        y.append(v["value"])
        err[0].append(v["value"] - v["lo"] if v["lo"] is not None else 0.0)
        err[1].append(v["hi"] - v["value"] if v["hi"] is not None else 0.0)
    ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label="ours (95% CI)", color="C0")
    if cells:
        ax.plot(range(len(LEVELS)), [cells[group_key(scene, lv)][metric] for lv in LEVELS],
                "s--", color="C1", label=f"paper: {paper['model']}")
    if empty_table:
        ex = [i for i, lv in enumerate(LEVELS) if group_key(scene, lv) in empty_table]
        ey = [empty_table[group_key(scene, LEVELS[i])][metric]["value"] for i in ex]
        if ex:
            ax.plot(ex, ey, "^:", color="C2", label="ours, empty language")
    ax.set_title(f"{metric} ({METRIC_NAMES[metric]})", fontsize=10)
    ax.set_xticks(range(len(LEVELS)), LEVELS)
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)


def plot_levels(table: dict[str, dict], out_dir: str | Path, paper: dict | None = None,
                empty_table: dict[str, dict] | None = None, title: str = "") -> list[Path]:
    """One PNG per scene: IS, ES, CR (percent) over L0..L3; ours with 95% interval bars, the
    paper's model (dashed) and an empty-language run (dotted) when given."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    scenes = sorted({v["scene"] for g, v in table.items() if g != "all"})
    cells = paper_cells(paper) if paper else {}
    paths = []
    for scene in scenes:
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.9), sharey=True)
        for ax, metric in zip(axes, METRICS):
            _plot_metric(ax, metric, scene, table, cells, paper, empty_table)
        axes[0].set_ylabel("percent")
        handles, labels = axes[0].get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: not labels[i].startswith("ours ("))
        handles, labels = [handles[i] for i in order], [labels[i] for i in order]
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
        fig.suptitle(f"{scene}{' - ' + title if title else ''}", fontsize=11)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        path = out_dir / f"{scene}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
