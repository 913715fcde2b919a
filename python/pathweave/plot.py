"""Plots of a run, drawn with matplotlib's Agg renderer (no display, no pyplot state)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from pathweave._core import Scenario

__all__ = ["RunTables", "plot_run"]


class RunTables(Protocol):
    """What a plot reads from a run. ``pathweave.Result`` is one; the plots depend on this
    shape only, so the result module can offer plotting without the two importing each
    other."""

    scenario: Scenario
    scenario_name: str
    seed: int
    flows: pd.DataFrame
    flow_series: pd.DataFrame
    links: pd.DataFrame
    link_series: pd.DataFrame


# Beyond this many lines a legend hides the plot; the first ones are labelled, the rest not.
_MAX_LEGEND = 12


def plot_run(
    result: RunTables,
    path_png: str | os.PathLike[str],
    *,
    pdf: bool = False,
    packets: bool = False,
) -> Path:
    """Draw one figure of ``result`` and save it as a PNG (and, with ``pdf``, a PDF beside it).

    Panels: (a) goodput per flow, (b) congestion window over time per flow (in packets with
    ``packets``, else bytes), (c) queue length over time for each sampled link direction.
    Returns the PNG's path.
    """
    fig = Figure(figsize=(10, 11), layout="constrained")
    FigureCanvasAgg(fig)
    goodput_ax, cwnd_ax, queue_ax = fig.subplots(3, 1)
    fig.suptitle(f"{result.scenario_name} (seed {result.seed})")
    _goodput(goodput_ax, result)
    _cwnd(cwnd_ax, result, packets)
    _queues(queue_ax, result)
    png = Path(path_png)
    fig.savefig(png, dpi=120)
    if pdf:
        fig.savefig(png.with_suffix(".pdf"))
    return png


def _goodput(ax: Axes, result: RunTables) -> None:
    flows = result.flows
    x = np.arange(len(flows))
    ax.bar(x, flows["goodput_bps"].to_numpy() / 1e6, color="tab:blue")
    ax.set_xticks(x, list(flows["name"]), rotation=45 if len(flows) > 8 else 0, ha="right")
    if len(flows) > 40:  # too many names to read: keep the bars, drop the labels
        ax.set_xticks([])
    ax.set_ylabel("goodput (Mbps)")
    ax.set_title("(a) goodput per flow", loc="left")


def _not_recorded(ax: Axes, title: str, column: str) -> None:
    """An empty panel saying that the scenario's ``[series]`` left ``column`` out."""
    ax.set_title(title, loc="left")
    ax.text(
        0.5,
        0.5,
        f"not recorded: {column} is not in this run's time series (see [series])",
        ha="center",
        va="center",
        transform=ax.transAxes,
    )
    ax.set_xticks([])
    ax.set_yticks([])


def _cwnd(ax: Axes, result: RunTables, packets: bool) -> None:
    series = result.flow_series
    if "cwnd_bytes" not in series.columns:
        _not_recorded(ax, "(b) congestion window", "cwnd_bytes")
        return
    mss = result.scenario.flow_mss_bytes
    drawn = 0
    for i, name in enumerate(result.flows["name"]):
        rows = series[series["flow"] == i]
        cwnd = rows["cwnd_bytes"].to_numpy()
        if rows.empty or np.isnan(cwnd).all():  # a CBR flow has no window
            continue
        if packets and mss[i]:
            cwnd = cwnd / mss[i]
        label = name if drawn < _MAX_LEGEND else None
        ax.plot(rows["time_s"].to_numpy(), cwnd, linewidth=0.8, label=label)
        drawn += 1
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (packets)" if packets else "cwnd (bytes)")
    ax.set_title("(b) congestion window", loc="left")
    if drawn:
        ax.legend(fontsize="small", ncols=2 if drawn > 6 else 1, loc="upper right")


def _queues(ax: Axes, result: RunTables) -> None:
    series = result.link_series
    if "queue_packets" not in series.columns:
        _not_recorded(ax, "(c) queue length per link", "queue_packets")
        return
    links = result.links
    # Busiest first, so the legend (which names only the first few) names those that matter.
    peaks = (
        series.groupby("link")["queue_packets"].max().sort_values(ascending=False, kind="stable")
    )
    idle = int((peaks == 0).sum())  # links that never queued would only be flat lines at zero
    drawn = 0
    for k in peaks.index[peaks > 0]:
        rows = series[series["link"] == k]
        name, direction = links["name"].iloc[k], links["direction"].iloc[k]
        label = name if direction == "forward" else f"{name} (reverse)"
        ax.step(
            rows["time_s"].to_numpy(),
            rows["queue_packets"].to_numpy(),
            where="post",
            linewidth=0.8,
            label=label if drawn < _MAX_LEGEND else None,
        )
        drawn += 1
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue (packets)")
    note = f" ({idle} link directions that never queued not shown)" if idle else ""
    ax.set_title(f"(c) queue length per link{note}", loc="left")
    if drawn:
        ax.legend(fontsize="small", ncols=2 if drawn > 6 else 1, loc="upper right")
