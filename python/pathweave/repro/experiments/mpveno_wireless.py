"""mpveno-wireless: multipath goodput over lossy (wireless) paths (Le,
"Improving the Performance of Multipath Congestion Control over Wireless Networks", 2013,
Fig. 1, Fig. 3(c), Fig. 5).

Two separate paths carry one two-path connection; the links add random (non-congestive) loss.
Fig. 1: LIA's and OLIA's goodput falls sharply as the random loss grows. Fig. 5(a), the same
loss on both paths, and Fig. 5(b), 0.01 % on path 1 and 0.001-5 % on path 2: MPVeno's goodput
is above OLIA's (more so with larger beta) and MPTCP-Westwood's is the highest; in (b) beyond
1 % the total is dominated by path 1. The paper gives curves, not numbers, so the published
values here are orderings (ratios above 1) and a few thresholds of our own, named as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathweave.repro import papers
from pathweave.repro.experiment import AtLeast, AtMost, Experiment, ExperimentData, Published
from pathweave.repro.figures import new_figure
from pathweave.sweep import RunRecord, Sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

SCEN = "scenario"
LOSS = "link[0].loss"
FIGS = ("equal", "fixed1")
FIG_LABEL = {"equal": "Fig. 5(a)", "fixed1": "Fig. 5(b)"}
LOSSES = (1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2)  # 0.001 % ... 5 %
BETAS = (1, 3, 6)
MPVENO = tuple(f"mpveno-b{b}" for b in BETAS)
FLOWS = ("lia", "olia", *MPVENO, "mptcpw")
NAMES = {
    "lia": "LIA",
    "olia": "OLIA",
    "mpveno-b1": "MPVeno, beta = 1",
    "mpveno-b3": "MPVeno, beta = 3",
    "mpveno-b6": "MPVeno, beta = 6",
    "mptcpw": "MPTCPW",
}
PATH_PAYLOAD_BPS = 10e6 * 1000 / 1040  # one 10 Mbps path's payload rate


def _key(flow: str) -> str:
    return flow.replace("-", "_")


def _pct(p: float) -> str:
    return f"{100 * p:g} %"


def _value(flows: pd.DataFrame, name: str, column: str) -> float:
    """One flow's value in one column of the flows table."""
    return float(flows[flows["name"] == name][column].iloc[0])


def metrics(run: RunRecord) -> Mapping[str, float]:
    f = run.flows
    names = list(f["name"])
    subs = run.subflows
    out: dict[str, float] = {}
    good = {name: _value(f, name, "goodput_bps") for name in FLOWS}
    for name in FLOWS:
        k = _key(name)
        out[f"{k}_mbps"] = good[name] / 1e6
        out[f"{k}_utilisation"] = good[name] / (2 * PATH_PAYLOAD_BPS)
        idx = names.index(name)
        mine = subs[subs["flow"] == idx].set_index("subflow")["throughput_bps"]
        total = float(mine.sum())
        out[f"{k}_path1_share"] = float(mine.get(0, 0.0)) / total if total > 0 else float("nan")
        out[f"{k}_timeouts"] = _value(f, name, "timeouts")
    olia = good["olia"]
    for name in MPVENO:
        out[f"{_key(name)}_over_olia"] = good[name] / olia if olia > 0 else float("nan")
    out["b3_over_b1"] = good["mpveno-b3"] / good["mpveno-b1"]
    out["b6_over_b3"] = good["mpveno-b6"] / good["mpveno-b3"]
    best_other = max(good[n] for n in FLOWS if n != "mptcpw")
    out["mptcpw_over_best_other"] = good["mptcpw"] / best_other
    # Veno's backlog estimate N, averaged over MPVeno's subflows (beta = 3) after 10 s: how
    # often the congestion test can fire.
    ser = run.subflow_series
    idx3 = names.index("mpveno-b3")
    b3 = ser[(ser["flow"] == idx3) & (ser["time_s"] > 10.0)]["backlog_packets"]
    out["mpveno_b3_mean_backlog"] = float(b3.mean()) if len(b3) else float("nan")
    return out


def plot(data: ExperimentData) -> dict[str, Figure]:
    fig = new_figure(figsize=(15, 4.4))
    axes = fig.subplots(1, 3)
    styles = {
        "lia": ("tab:gray", "s--"),
        "olia": ("tab:blue", "o-"),
        "mpveno-b1": ("#f4a582", "^-"),
        "mpveno-b3": ("#d6604d", "^-"),
        "mpveno-b6": ("#b2182b", "^-"),
        "mptcpw": ("tab:green", "D-"),
    }
    panels = (
        (axes[0], "equal", ("lia", "olia"), "Fig. 1: LIA and OLIA, same loss on both paths"),
        (axes[1], "equal", ("olia", *MPVENO, "mptcpw"), "Fig. 5(a): same loss on both paths"),
        (axes[2], "fixed1", ("olia", *MPVENO, "mptcpw"), "Fig. 5(b): path 1 at 0.01 %"),
    )
    for ax, scen, names, title in panels:
        for name in names:
            rows = data.metric(f"{_key(name)}_mbps")
            rows = rows[rows[SCEN] == scen].copy()
            rows["x"] = rows[LOSS].astype(float) * 100
            rows = rows.sort_values("x")
            colour, style = styles[name]
            ax.errorbar(
                rows["x"],
                rows["mean"],
                yerr=rows["half_width"].fillna(0.0),
                fmt=style,
                color=colour,
                ms=4,
                capsize=2,
                label=NAMES[name],
            )
        ax.set_xscale("log")
        ax.set_xlabel("random loss rate (%)" + (" on path 2" if scen == "fixed1" else ""))
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_ylim(bottom=0)
        ax.set_title(title, loc="left", fontsize="medium")
        ax.legend(fontsize="small")
    mode = "quick" if data.quick else "full"
    fig.suptitle(f"Two-path goodput over two 10 Mbps / 40 ms lossy paths ({mode})")
    return {"goodput-vs-loss": fig}


_BETA = (
    "beta has no measurable effect here: MPVeno's backlog estimate N (metric "
    "mpveno_b3_mean_backlog) is about 1.5 packets at <= 0.01 % loss and bimodal (0, or 3 and "
    "more: RED's queue), and below 0.2 from 0.1 % on (windows far below the 50-packet BDP, "
    "empty queue), so it is rarely between the thresholds max(1, theta*beta) = 1, 1.5 and 3 "
    "(theta about 0.5) and the three betas classify nearly every loss alike; the ratio stays "
    "within 3 % of 1, inside the seed noise at most points, a little but significantly below "
    "1 for beta 6 against 3 at 0.001 % in (a) and at 0.5-5 % on path 2 in (b) (not "
    "investigated further)"
)
_TIMEOUTS = (
    "at 5 % every algorithm is in a timeout regime (windows of 3-4 packets, 2-2.5 timeouts "
    "per second per connection), where a timeout restarts the window at 1 MSS whatever the "
    "bandwidth estimate; MPVeno's 4/5 reduction keeps slightly larger windows than MPTCPW"
)


# Measured 2026-11-26: full form 1.018 (95 % interval 0.999-1.037, five 100 s seeds); the
# quick form's two 40 s seeds 0.983 (0.911-1.054).
_NEAR_OLIA = (
    "MPVeno (beta = 6) and OLIA are within 2 % of each other here: the full form (five 100 s "
    "seeds) gives 1.02 (95 % interval 1.00-1.04) and matches; two 40 s runs straddle 1"
)


def _published() -> list[Published]:
    out: list[Published] = []
    eq = {SCEN: "equal"}
    for name in ("lia", "olia"):
        out.append(
            Published(
                f"{name}_utilisation",
                1.0,
                AtLeast(0.8),
                where={**eq, LOSS: 1e-5},
                label=f"Fig. 1: {NAMES[name]} near capacity at 0.001 % (our threshold: >= 0.8)",
            )
        )
        for p in (1e-2, 5e-2):
            out.append(
                Published(
                    f"{name}_utilisation",
                    0.0,
                    AtMost(0.5),
                    where={**eq, LOSS: p},
                    label=(
                        f"Fig. 1: {NAMES[name]} falls sharply, {_pct(p)} "
                        "(our threshold: utilisation <= 0.5)"
                    ),
                )
            )
    for scen in FIGS:
        fig = FIG_LABEL[scen]
        for p in LOSSES:
            where = {SCEN: scen, LOSS: p}
            # Fig. 5(a): "higher ... from 5 x 10^-3 % to 5 %"; Fig. 5(b): "at any condition".
            if not (scen == "equal" and p < 5e-5):
                for name in MPVENO:
                    out.append(
                        Published(
                            f"{_key(name)}_over_olia",
                            1.0,
                            AtLeast(1.0),
                            where=where,
                            label=f"{fig}: {NAMES[name]} above OLIA at {_pct(p)}",
                            reason=_NEAR_OLIA
                            if (scen, p, name) == ("fixed1", 1e-2, "mpveno-b6")
                            else None,
                        )
                    )
            out.append(
                Published(
                    "mptcpw_over_best_other",
                    1.0,
                    AtLeast(1.0),
                    where=where,
                    label=f"{fig}: MPTCPW highest at {_pct(p)}",
                    reason=_TIMEOUTS if p >= 5e-2 else None,
                )
            )
            out.append(
                Published(
                    "b3_over_b1",
                    1.0,
                    AtLeast(1.0),
                    where=where,
                    label=f"{fig}: MPVeno beta = 3 >= beta = 1 at {_pct(p)}",
                    reason=_BETA,
                )
            )
            out.append(
                Published(
                    "b6_over_b3",
                    1.0,
                    AtLeast(1.0),
                    where=where,
                    label=f"{fig}: MPVeno beta = 6 >= beta = 3 at {_pct(p)}",
                    reason=_BETA,
                )
            )
    for name in ("olia", "mpveno-b3"):
        out.append(
            Published(
                f"{_key(name)}_path1_share",
                1.0,
                AtLeast(0.75),
                where={SCEN: "fixed1", LOSS: 5e-2},
                label=(
                    f"Fig. 5(b): {NAMES[name]} total dominated by path 1 at 5 % "
                    "(our threshold: path-1 share >= 0.75)"
                ),
            )
        )
    return out


EXPERIMENT = Experiment(
    id="mpveno-wireless",
    title="MPVeno, OLIA, LIA and MPTCP-Westwood over lossy paths (MPVeno paper, Fig. 1, 5)",
    description=(
        "One two-path connection over two separate paths with random loss: LIA and OLIA fall "
        "sharply as the loss grows (Fig. 1); MPVeno stays above OLIA, more so for larger beta, "
        "and MPTCP-Westwood is highest (Fig. 5a: the same loss on both paths; Fig. 5b: path 1 "
        "at 0.01 %, path 2 varied). The paper gives curves only: the comparison checks the "
        "orderings, and a few thresholds of our own for the shape of Fig. 1."
    ),
    source=f"{papers.LE_2013}, §II.B, §IV.B (Fig. 1, 3(c), 5)",
    setup=(
        "Given: two separate paths, random loss 0.001-5 % (both paths, or path 2 with path 1 at "
        "0.01 %), SACK, RED, buffer = BDP, 1000 B packets. Chosen: each path 10 Mbps / 20 ms "
        "one-way (40 ms RTT, BDP 50 packets = RED limit), RED min_th 5, max_th 15, max_p 0.1, "
        "w_q 0.002, gentle; MPVeno beta = 1, 3, 6; MPTCPW gamma = 1; 100 s; 8 loss rates (0.001, "
        "0.005, 0.01, 0.05, 0.1, 0.5, 1, 5 %); 5 seeds. The six algorithms run side by side on "
        "disjoint links of one scenario file per figure. Goodput over the whole run."
    ),
    scenarios=tuple(f"mpveno-wireless/{s}.toml" for s in FIGS),
    sweep=Sweep(grid={LOSS: list(LOSSES)}, seeds=5),
    quick=Sweep(grid={LOSS: [1e-3, 1e-2]}, seeds=2, set={"duration": "40s"}),
    metrics=metrics,
    published=_published(),
    plot=plot,
)
