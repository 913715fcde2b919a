"""mpveno-friendliness: MPVeno and MPTCP-Westwood against OLIA over wired paths (Le,
"Improving the Performance of Multipath Congestion Control over Wireless Networks", 2013,
§IV.C, Fig. 3(d), Fig. 6).

A two-path MPVeno (or MPTCPW) connection shares two wired paths with a two-path OLIA
connection, router buffers 75 packets (= BDP). The paper: MPTCPW takes clearly more than OLIA
(it sets its window to the bandwidth estimate instead of halving, Fig. 6a); MPVeno shares
about equally (Fig. 6b). A drop-tail variant (not the paper's setup) runs beside the paper's
RED for comparison with drop-tail observations; it has no published values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathweave.repro import papers
from pathweave.repro.experiment import AtLeast, Between, Experiment, ExperimentData, Published
from pathweave.repro.figures import new_figure
from pathweave.sweep import RunRecord, Sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

SCEN = "scenario"
QUEUES = ("red", "droptail")
CONTESTS = ("mpveno-b3", "mpveno-b6", "mptcpw")
NAMES = {"mpveno-b3": "MPVeno, beta = 3", "mpveno-b6": "MPVeno, beta = 6", "mptcpw": "MPTCPW"}


def _key(flow: str) -> str:
    return flow.replace("-", "_")


def _value(flows: pd.DataFrame, name: str, column: str) -> float:
    """One flow's value in one column of the flows table."""
    return float(flows[flows["name"] == name][column].iloc[0])


def metrics(run: RunRecord) -> Mapping[str, float]:
    f = run.flows
    out: dict[str, float] = {}
    for name in CONTESTS:
        k = _key(name)
        mine = _value(f, name, "goodput_bps")
        olia = _value(f, f"olia-vs-{name}", "goodput_bps")
        out[f"{k}_over_olia"] = mine / olia if olia > 0 else float("nan")
        out[f"{k}_mbps"] = mine / 1e6
        out[f"olia_vs_{k}_mbps"] = olia / 1e6
        out[f"{k}_loss_events"] = _value(f, name, "loss_events")
        out[f"olia_vs_{k}_loss_events"] = _value(f, f"olia-vs-{name}", "loss_events")
    return out


def plot(data: ExperimentData) -> dict[str, Figure]:
    fig = new_figure(figsize=(12, 4.2))
    bars_ax, series_ax = fig.subplots(1, 2)
    width = 0.38
    for j, scen in enumerate(QUEUES):
        vals, errs = [], []
        for name in CONTESTS:
            rows = data.metric(f"{_key(name)}_over_olia")
            rows = rows[rows[SCEN] == scen]
            vals.append(float(rows["mean"].iloc[0]) if len(rows) else float("nan"))
            errs.append(float(rows["half_width"].fillna(0.0).iloc[0]) if len(rows) else 0.0)
        label = "RED (paper)" if scen == "red" else "drop-tail (variant)"
        xs = [i + (j - 0.5) * width for i in range(len(CONTESTS))]
        bars_ax.bar(xs, vals, width, yerr=errs, capsize=3, label=label)
    bars_ax.axhspan(0.8, 1.25, color="tab:gray", alpha=0.2, label="[0.8, 1.25]")
    bars_ax.set_xticks(range(len(CONTESTS)), [NAMES[n] for n in CONTESTS])
    bars_ax.set_ylabel("goodput / OLIA's goodput")
    bars_ax.set_title("(a) each algorithm against a two-path OLIA flow", loc="left")
    bars_ax.legend(fontsize="small")
    runs = [r for r in data.result.runs if r.params.get(SCEN) == "red"]
    if runs:
        run = min(runs, key=lambda r: r.seed)
        fs = run.flow_series
        names = list(run.flows["name"])
        for name, colour in (
            ("mptcpw", "tab:green"),
            ("olia-vs-mptcpw", "tab:olive"),
            ("mpveno-b6", "tab:red"),
            ("olia-vs-mpveno-b6", "tab:blue"),
        ):
            one = fs[fs["flow"] == names.index(name)].sort_values("time_s")
            dt = one["time_s"].diff().fillna(one["time_s"].iloc[0] if len(one) else 0.0)
            series_ax.plot(
                one["time_s"], (one["rate_bps"] * dt).cumsum() / 8e6, color=colour, label=name
            )
        series_ax.set_xlabel("time (s)")
        series_ax.set_ylabel("data transferred (MB)")
        series_ax.set_title(f"(b) RED, seed {run.seed}: cf. Fig. 6(a), 6(b)", loc="left")
        series_ax.legend(fontsize="small")
    mode = "quick" if data.quick else "full"
    fig.suptitle(f"Friendliness to OLIA over two wired 20 Mbps / 30 ms paths ({mode})")
    return {"friendliness": fig}


EXPERIMENT = Experiment(
    id="mpveno-friendliness",
    title="MPVeno and MPTCP-Westwood against OLIA over wired paths (MPVeno paper, Fig. 6)",
    description=(
        "A two-path MPVeno (beta = 3 or 6) or MPTCP-Westwood connection against a two-path "
        "OLIA connection over two wired paths: MPVeno should share about equally, MPTCPW take "
        "clearly more (Fig. 6). A drop-tail variant (not the paper's RED) is run and plotted "
        "beside it, without published values."
    ),
    source=f"{papers.LE_2013}, §IV.C (Fig. 3(d), Fig. 6)",
    setup=(
        "Given: two wired paths, one subflow of each connection on each, buffers 75 packets = "
        "BDP, SACK, RED, 1000 B packets. Chosen: each path one 20 Mbps / 15 ms link (30 ms "
        "RTT, BDP 75 packets), RED min_th 5, max_th 15, max_p 0.1, w_q 0.002, gentle, limit 75; "
        "MPVeno beta = 3 and 6 (not given for Fig. 6); MPTCPW gamma = 1; OLIA starts 5 ms "
        "first; 100 s; 5 seeds. The three contests run side by side on disjoint links of one "
        "file. Goodput over the whole run."
    ),
    scenarios=tuple(f"mpveno-friendliness/{q}.toml" for q in QUEUES),
    sweep=Sweep(seeds=5),
    quick=Sweep(seeds=2, set={"duration": "40s"}),
    metrics=metrics,
    published=[
        *(
            Published(
                f"{_key(name)}_over_olia",
                1.0,
                Between(0.8, 1.25),
                where={SCEN: "red"},
                label=f"Fig. 6(b): {NAMES[name]} / OLIA about equal (RED)",
            )
            for name in ("mpveno-b3", "mpveno-b6")
        ),
        Published(
            "mptcpw_over_olia",
            1.25,
            AtLeast(1.25),
            where={SCEN: "red"},
            label="Fig. 6(a): MPTCPW / OLIA clearly above 1 (RED)",
        ),
    ],
    plot=plot,
)
