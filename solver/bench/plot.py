"""The bench plot: total latency against cluster size, which plan wins each case on the first
tier where they differ (``solver.bench.tiers``), and the cost ratio where every earlier tier ties.

matplotlib is optional (``pip install -e '.[bench]'``); asking for a plot
without it is a clear error, raised before any case runs.
"""

from __future__ import annotations

from typing import Any

from solver.bench import tiers
from solver.core.errors import SetupError


class PlotUnavailableError(SetupError):
    def __init__(self) -> None:
        super().__init__("--plot needs matplotlib: pip install -e '.[bench]'")


def require() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise PlotUnavailableError() from exc


def render(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(rows)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plain(value: float, _position: object = None) -> str:
    """A tick label as people write numbers: 0.14, 2, 60, 1000 (never 1.42674×10⁻¹)."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def figure(rows: list[dict[str, Any]]) -> Any:
    """Three panels: latency against cluster size; per case, the first tier where gangplace's
    plan and the baseline's (and kube-scheduler's, with --upstream) differ and who wins it; the
    cost ratio only on the cases where every tier before the cost ties."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(19, max(6.0, 2.0 + 0.4 * len(rows))),
                                              gridspec_kw={"width_ratios": (1.2, 1.1, 0.9)})
    left.plot([r["nodes"] for r in rows], [r["totalSeconds"] for r in rows], "o", label="gangplace")
    left.plot([r["nodes"] for r in rows], [r["baselineSeconds"] for r in rows], "x", label="upstream greedy")
    for r in rows:  # each point says which case it is
        left.annotate(r["case"], (r["nodes"], r["totalSeconds"]), fontsize=7, xytext=(4, 2),
                      textcoords="offset points")
    left.set_yscale("symlog", linthresh=1.0)
    left.yaxis.set_major_formatter(FuncFormatter(plain))
    left.xaxis.set_major_formatter(FuncFormatter(plain))
    left.set_xlabel("nodes")
    left.set_ylabel("seconds (median end-to-end)")
    left.set_title("latency against cluster size")
    left.legend()
    _decisions(middle, rows)
    _cost_ratios(right, rows)
    right.set_ylim(middle.get_ylim())
    fig.tight_layout()
    return fig


WINS, LOSES, TIES = "#2ca02c", "#d62728", "#7f7f7f"  # gangplace's plan better, worse, the same


def _others(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(row key, name, marker) of the plans gangplace is ranked against."""
    out = [("baseline", "upstream greedy", "o")]
    if any("upstream" in r for r in rows):
        out.append(("upstream", "kube-scheduler", "s"))
    return out


def _decisions(ax: Any, rows: list[dict[str, Any]]) -> None:
    from matplotlib.lines import Line2D

    others = _others(rows)
    for k, (key, _, marker) in enumerate(others):
        shift = 0.0 if len(others) == 1 else (k - 0.5) * 0.36
        for i, r in enumerate(rows):
            if key not in r:
                continue
            d = tiers.decide(r["gangplace"], r[key])
            color = WINS if d.sign > 0 else LOSES if d.sign < 0 else TIES
            ax.scatter([d.index], [i + shift], marker=marker, color=color, s=55, zorder=3)
            unsettled = " (unsettled)" if key == "upstream" and r.get("upstreamSettled") is False else ""
            ax.annotate(d.label() + unsettled, (d.index, i + shift), fontsize=7, xytext=(7, -3),
                        textcoords="offset points")
    ax.set_xticks(range(len(tiers.ORDER) + 1), [name for _, name, _ in tiers.ORDER] + ["tie"], fontsize=8,
                  rotation=30, ha="right")
    ax.set_xlim(-0.5, len(tiers.ORDER) + 1.2)
    ax.set_yticks(range(len(rows)), [r["case"] for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_title("first tier that differs (tier order decides)")
    handles = [Line2D([], [], linestyle="", marker="o", color=WINS, label="gangplace better"),
               Line2D([], [], linestyle="", marker="o", color=LOSES, label="gangplace worse"),
               Line2D([], [], linestyle="", marker="o", color=TIES, label="every tier ties")]
    handles += [Line2D([], [], linestyle="", marker=m, color="black", label=f"against {name}")
                for _, name, m in others]
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)


def _cost_ratios(ax: Any, rows: list[dict[str, Any]]) -> None:
    from matplotlib.ticker import FuncFormatter

    where, values = [], []
    for i, r in enumerate(rows):
        d = tiers.decide(r["gangplace"], r["baseline"])
        if d.cost_comparable and r.get("costRatio") is not None:
            where.append(i)
            values.append(float(r["costRatio"]))
        else:  # a cost ratio here would compare plans the objective already ranked, or divide by 0
            note = f"{d.short} decides: {d.values}" if not d.cost_comparable else "baseline cost 0"
            ax.text(0.02, i, note, fontsize=8, color=TIES, va="center", transform=ax.get_yaxis_transform())
    bars = ax.barh(where, values)
    ax.bar_label(bars, labels=[plain(v) for v in values], fontsize=8, padding=2)
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(rows)), ["" for _ in rows])
    ax.set_xlim(0, max([1.2, *(v * 1.15 for v in values)]))
    ax.xaxis.set_major_formatter(FuncFormatter(plain))
    ax.set_xlabel("preemption cost, gangplace / baseline")
    ax.set_title("cost ratio where tiers 1-3 tie (lower is better)")
