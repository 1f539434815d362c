"""The bench plot: total latency against cluster size, and the cost ratio per case.

matplotlib is optional (``pip install -e '.[bench]'``); asking for a plot
without it is a clear error, raised before any case runs.
"""

from __future__ import annotations

from typing import Any

from solver.model.errors import SolverError


class PlotUnavailableError(SolverError):
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
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6))
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
    named = [(r["case"], r["costRatio"]) for r in rows if r["costRatio"] is not None]
    bars = right.barh([n for n, _ in named], [v for _, v in named])
    right.bar_label(bars, labels=[plain(v) for _, v in named], fontsize=8, padding=2)
    right.invert_yaxis()
    right.axvline(1.0, color="grey", linewidth=0.8)
    right.xaxis.set_major_formatter(FuncFormatter(plain))
    right.set_xlabel("preemption cost, gangplace / baseline")
    right.set_title("cost ratio per case (lower is better)")
    fig.tight_layout()
    return fig
