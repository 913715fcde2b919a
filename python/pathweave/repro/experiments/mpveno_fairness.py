"""mpveno-fairness: a two-path MPVeno flow against a single-path Veno flow on one bottleneck
(Le, "Improving the Performance of Multipath Congestion Control over Wireless Networks", 2013,
§IV.A, Fig. 3(b), Fig. 4).

Both MPVeno subflows cross the one bottleneck that the Veno flow uses; with beta = 6 for both,
the paper finds the single-path flow's data sent about equal to the two-path flow's total
(Fig. 4b): MPVeno's theta_r = x_r / sum x scales each subflow's backlog threshold so that the
connection as a whole keeps beta packets queued, like one Veno flow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathweave.repro import papers
from pathweave.repro.experiment import Between, Experiment, ExperimentData, Published
from pathweave.repro.figures import new_figure
from pathweave.sweep import RunRecord, Sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def _value(flows: pd.DataFrame, name: str, column: str) -> float:
    """One flow's value in one column of the flows table."""
    return float(flows[flows["name"] == name][column].iloc[0])


def metrics(run: RunRecord) -> Mapping[str, float]:
    f = run.flows
    ser = run.subflow_series
    late = ser[ser["time_s"] > 10.0]
    mp_n = late[late["flow"] == 0]["backlog_packets"]
    sp_n = late[late["flow"] == 1]["backlog_packets"]
    return {
        "sent_ratio": _value(f, "veno", "packets_sent") / _value(f, "mpveno", "packets_sent"),
        "goodput_ratio": _value(f, "veno", "goodput_bps") / _value(f, "mpveno", "goodput_bps"),
        "mpveno_mbps": _value(f, "mpveno", "goodput_bps") / 1e6,
        "veno_mbps": _value(f, "veno", "goodput_bps") / 1e6,
        "mpveno_timeouts": _value(f, "mpveno", "timeouts"),
        "veno_timeouts": _value(f, "veno", "timeouts"),
        # Veno's backlog estimate N: the connection's (sum over its subflows) and the
        # single-path flow's, averaged over the samples after 10 s.
        "mpveno_backlog_sum": float(mp_n.mean()) * 2 if len(mp_n) else float("nan"),
        "veno_backlog": float(sp_n.mean()) if len(sp_n) else float("nan"),
    }


def plot(data: ExperimentData) -> dict[str, Figure]:
    fig = new_figure(figsize=(12, 4.2))
    cwnd_ax, sent_ax = fig.subplots(1, 2)
    runs = sorted(data.result.runs, key=lambda r: r.seed)
    if runs:
        run = runs[0]
        s = run.subflow_series
        for sub, colour in ((0, "tab:red"), (1, "tab:orange")):
            one = s[(s["flow"] == 0) & (s["subflow"] == sub)]
            cwnd_ax.plot(
                one["time_s"],
                one["cwnd_bytes"] / 1000,
                lw=0.7,
                color=colour,
                label=f"MPVeno subflow {sub + 1}",
            )
        one = s[s["flow"] == 1]
        cwnd_ax.plot(
            one["time_s"], one["cwnd_bytes"] / 1000, lw=0.7, color="tab:blue", label="Veno"
        )
        cwnd_ax.set_xlabel("time (s)")
        cwnd_ax.set_ylabel("cwnd (packets)")
        cwnd_ax.set_title(f"(a) congestion windows, seed {run.seed}", loc="left")
        cwnd_ax.legend(fontsize="small")
        fs = run.flow_series
        for flow, name, colour in ((0, "MPVeno (two paths)", "tab:red"), (1, "Veno", "tab:blue")):
            one = fs[fs["flow"] == flow].sort_values("time_s")
            dt = one["time_s"].diff().fillna(one["time_s"].iloc[0] if len(one) else 0.0)
            sent_mb = (one["rate_bps"] * dt).cumsum() / 8e6
            sent_ax.plot(one["time_s"], sent_mb, color=colour, label=name)
        sent_ax.set_xlabel("time (s)")
        sent_ax.set_ylabel("data transferred (MB)")
        ratio = data.metric("sent_ratio")
        if len(ratio):
            sent_ax.set_title(
                f"(b) data transferred; Veno / MPVeno sent = {float(ratio['mean'].iloc[0]):.2f} "
                f"(mean of {int(ratio['n'].iloc[0])} seeds)",
                loc="left",
                fontsize="medium",
            )
        sent_ax.legend(fontsize="small")
    mode = "quick" if data.quick else "full"
    fig.suptitle(
        f"MPVeno (two paths) vs Veno on one 10 Mbps / 40 ms RED bottleneck, beta = 6 ({mode})"
    )
    return {"cwnd-and-data-sent": fig}


EXPERIMENT = Experiment(
    id="mpveno-fairness",
    title="MPVeno against single-path Veno at one bottleneck (MPVeno paper, Fig. 4)",
    description=(
        "A two-path MPVeno flow, both subflows through one bottleneck, against one single-path "
        "TCP Veno flow, beta = 6 for both: the paper finds the single-path flow's data sent "
        "about equal to the two-path flow's total (Fig. 4b)."
    ),
    source=f"{papers.LE_2013}, §IV.A (Fig. 3(b), Fig. 4)",
    setup=(
        "Given: dumbbell, beta = 6, SACK, RED, buffer = BDP, 1000 B packets. Chosen: 10 Mbps "
        "bottleneck, 40 ms RTT (18 ms bottleneck + 2 ms access links one way), BDP 50 packets "
        "= RED limit, RED min_th 5, max_th 15, max_p 0.1, w_q 0.002, gentle; 100 s; 5 seeds. "
        "The ratio is Veno's data packets sent over MPVeno's (both subflows), over the run."
    ),
    scenarios=("mpveno-fairness/dumbbell.toml",),
    sweep=Sweep(seeds=5),
    quick=Sweep(seeds=2, set={"duration": "40s"}),
    metrics=metrics,
    published=[
        Published(
            "sent_ratio",
            1.0,
            Between(0.8, 1.25),
            label="Fig. 4(b): Veno's data sent / MPVeno's total",
        ),
        Published(
            "goodput_ratio",
            1.0,
            Between(0.8, 1.25),
            label="Fig. 4(b): Veno's goodput / MPVeno's total",
        ),
    ],
    plot=plot,
)
