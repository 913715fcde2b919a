"""reno-square-root: Reno's goodput under random loss against Mathis et al.'s square-root law.

A worked example of the reproduction machinery, not an experiment of the reproduced
papers: Mathis, Semke, Mahdavi & Ott, "The macroscopic behavior of the TCP
congestion avoidance algorithm" (CCR 27(3), 1997) give ``MSS/RTT · √(3/(2p))``. The figure
follows theirs: goodput against loss probability on log-log axes, the model as a line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathweave.repro import papers
from pathweave.repro.experiment import Experiment, ExperimentData, Published, Relative
from pathweave.repro.figures import new_figure
from pathweave.sweep import RunRecord, Sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

LOSS = "link[0].loss"
LOSS_RATES = (0.0001, 0.0003, 0.001, 0.003, 0.01)
QUICK_LOSS_RATES = (0.001, 0.003, 0.01)
MSS_BYTES = 1000
RTT_S = 0.050  # 2 · 25 ms; serialisation at 1 Gbps adds 8 µs, which the model ignores
WARM_UP = 0.2  # share of the run left out before measuring: the first slow start overshoots
TOLERANCE = 0.25


# Known causes of a departure from the model, shown if the point misses.
_REASONS = {
    0.01: "at high loss, retransmission timeouts (which the model leaves out) lower the "
    "goodput (Padhye et al., 1998)",
    0.0001: "few loss events per run: the slow-start overshoot still weighs on the estimate",
}


def mathis_bps(p: float) -> float:
    """Mathis et al. (1997), eq. 3: MSS/RTT · √(3/(2p)), in bits per second."""
    return MSS_BYTES * 8 / RTT_S * math.sqrt(3 / (2 * p))


def metrics(run: RunRecord) -> Mapping[str, float]:
    p = float(run.params[LOSS])
    duration = run.point.scenario.duration_s
    series = run.flow_series
    steady = series[series["time_s"] > WARM_UP * duration]
    goodput = float(steady["rate_bps"].mean())
    flow = run.flows.iloc[0]
    return {
        "goodput_bps": goodput,
        "ratio_to_model": goodput / mathis_bps(p),
        "whole_run_goodput_bps": float(flow["goodput_bps"]),
        "loss_event_rate": float(flow["loss_event_rate"]),
        "timeouts": float(flow["timeouts"]),
    }


def plot(data: ExperimentData) -> dict[str, Figure]:
    fig = new_figure(figsize=(10, 4.2))
    rate_ax, ratio_ax = fig.subplots(1, 2)
    goodput = data.metric("goodput_bps")
    ratio = data.metric("ratio_to_model")
    p = goodput[LOSS].to_numpy(dtype=float)
    line = [10 ** (k / 20) for k in range(-90, -29)]  # 1e-4.5 … 1e-1.5
    model = [mathis_bps(x) / 1e6 for x in line]
    rate_ax.fill_between(
        line,
        [m * (1 - TOLERANCE) for m in model],
        [m * (1 + TOLERANCE) for m in model],
        color="tab:gray",
        alpha=0.2,
        label=f"± {TOLERANCE:.0%}",
    )
    rate_ax.plot(line, model, color="black", linewidth=1, label="MSS/RTT·√(3/(2p))")
    runs = data.runs
    rate_ax.scatter(
        runs[LOSS].to_numpy(dtype=float),
        runs["goodput_bps"].to_numpy(dtype=float) / 1e6,
        s=10,
        color="tab:blue",
        alpha=0.35,
        label="runs",
    )
    rate_ax.errorbar(
        p,
        goodput["mean"].to_numpy() / 1e6,
        yerr=_yerr(goodput, 1e6),
        fmt="o",
        color="tab:blue",
        capsize=3,
        label="pathweave, mean ± 95 % CI",
    )
    rate_ax.set_xscale("log")
    rate_ax.set_yscale("log")
    rate_ax.set_xlabel("loss probability p")
    rate_ax.set_ylabel("goodput (Mbps)")
    rate_ax.set_title("(a) goodput against the square-root law", loc="left")
    rate_ax.legend(fontsize="small")
    ratio_ax.axhspan(1 - TOLERANCE, 1 + TOLERANCE, color="tab:gray", alpha=0.2)
    ratio_ax.axhline(1.0, color="black", linewidth=1)
    ratio_ax.errorbar(
        ratio[LOSS].to_numpy(dtype=float),
        ratio["mean"].to_numpy(),
        yerr=_yerr(ratio, 1.0),
        fmt="o",
        color="tab:blue",
        capsize=3,
    )
    ratio_ax.set_xscale("log")
    ratio_ax.set_ylim(0.5, 1.5)
    ratio_ax.set_xlabel("loss probability p")
    ratio_ax.set_ylabel("goodput / model")
    ratio_ax.set_title("(b) ratio to the model", loc="left")
    mode = "quick" if data.quick else "full"
    fig.suptitle(f"Reno, 1 Gbps / 50 ms RTT, Bernoulli loss ({mode})")
    return {"goodput-vs-loss": fig}


def _yerr(rows: pd.DataFrame, scale: float) -> list[float]:
    # No interval (one seed) draws no bar rather than failing.
    return [0.0 if math.isnan(h) else h / scale for h in rows["half_width"].to_numpy()]


EXPERIMENT = Experiment(
    id="reno-square-root",
    title="Reno under random loss: the square-root law",
    description=(
        "A worked example of the reproduction machinery, not an experiment of the papers "
        "reproduced here: one Reno flow's goodput under Bernoulli loss against Mathis, Semke, "
        "Mahdavi & Ott (1997), MSS/RTT·√(3/(2p))."
    ),
    source=f"{papers.MATHIS_1997}, eq. 3",
    setup=(
        "One Reno flow (NewReno recovery, MSS 1000 B, 40 B headers, initial window 2, "
        "min RTO 200 ms) over one 1 Gbps link of 25 ms (RTT 50 ms) whose forward direction "
        "drops each packet with probability p; the buffer (100 000 packets) never fills.\n"
        f"p ∈ {{{', '.join(f'{p:g}' for p in LOSS_RATES)}}}; 1000 s; 3 seeds.\n"
        "Goodput is measured from the per-second samples after the first 20 % of the run "
        "(the first slow start overshoots far beyond the steady window).\n"
        f"--quick: p ∈ {{{', '.join(f'{p:g}' for p in QUICK_LOSS_RATES)}}}, 60 s, 2 seeds.\n"
        "Model: MSS/RTT·√(3/(2p)) with RTT = 50 ms; tolerance ± 25 %."
    ),
    scenarios=("reno-square-root/reno.toml",),
    sweep=Sweep(grid={LOSS: list(LOSS_RATES)}, seeds=3),
    quick=Sweep(grid={LOSS: list(QUICK_LOSS_RATES)}, seeds=2, set={"duration": "60s"}),
    metrics=metrics,
    published=[
        Published(
            metric="goodput_bps",
            value=mathis_bps(p),
            tolerance=Relative(TOLERANCE),
            where={LOSS: p},
            label=f"Mathis et al., p = {p:g}",
            reason=_REASONS.get(p),
        )
        for p in LOSS_RATES
    ],
    plot=plot,
)
