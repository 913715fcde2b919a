"""mptcpw-balance: congestion balance of MPTCP-Westwood and its weighted form (Le,
"Improving the Performance of Multipath Congestion Control over Wireless Networks", 2013,
§II.C, Fig. 2, Fig. 3(a)).

One two-path connection has a subflow on each of two links: link 1 (40 Mbps, 30 ms) carries
20 TCP Westwood background flows, link 2 (32 Mbps, 90 ms) 12. The paper observes loss rates of
0.29 % and 0.1 % (0.31 % and 0.08 % with wMPTCPW); MPTCPW moves its traffic to the lightly
loaded link 2 and its total is about the mean rate of the 12 flows there (Fig. 2a, 2b), while
wMPTCPW keeps about half a background flow's rate on each link (Fig. 2c, 2d: no balancing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathweave.repro import papers
from pathweave.repro.experiment import (
    AtLeast,
    Between,
    Experiment,
    ExperimentData,
    Published,
    Relative,
)
from pathweave.repro.figures import new_figure
from pathweave.sweep import RunRecord, Sweep

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALG = "flow[0].algorithm"
ALGS = ("mptcpw", "wmptcpw")
NAMES = {"mptcpw": "MPTCPW", "wmptcpw": "wMPTCPW"}
# §II.C: loss rates observed at links 1 and 2, in %.
LOSS_PCT = {"mptcpw": (0.29, 0.1), "wmptcpw": (0.31, 0.08)}


def metrics(run: RunRecord) -> Mapping[str, float]:
    f = run.flows
    bg1 = float(f[f["group"] == "bg1"]["throughput_bps"].mean())
    bg2 = float(f[f["group"] == "bg2"]["throughput_bps"].mean())
    sub = run.subflows[run.subflows["flow"] == 0].set_index("subflow")["throughput_bps"]
    s1, s2 = float(sub.get(0, 0.0)), float(sub.get(1, 0.0))
    links = run.links[run.links["direction"] == "forward"]
    out: dict[str, float] = {
        "mp_total_mbps": (s1 + s2) / 1e6,
        "sub1_mbps": s1 / 1e6,
        "sub2_mbps": s2 / 1e6,
        "bg1_mean_mbps": bg1 / 1e6,
        "bg2_mean_mbps": bg2 / 1e6,
        "total_over_bg2": (s1 + s2) / bg2,
        "sub1_over_bg1": s1 / bg1,
        "sub2_over_bg2": s2 / bg2,
        "path2_share": s2 / (s1 + s2) if s1 + s2 > 0 else float("nan"),
        "bg_timeouts_per_flow": float(f[f["group"] != "mp"]["timeouts"].mean()),
    }
    for i, name in ((1, "link1"), (2, "link2")):
        row = links[links["name"] == name]
        drops = float(row[["drops_overflow", "drops_early", "drops_forced"]].to_numpy().sum())
        out[f"loss{i}_pct"] = 100 * drops / float(row["arrivals"].iloc[0])
    ls = run.link_series
    for i in (1, 2):
        # link_series' `link` is the row of the links table: 2k is link k's forward direction.
        q = ls[ls["link"] == 2 * (i - 1)]["queue_packets"]
        out[f"queue{i}_mean_packets"] = float(q.mean()) if len(q) else float("nan")
    return out


def plot(data: ExperimentData) -> dict[str, Figure]:
    fig = new_figure(figsize=(12, 4.2))
    axes = fig.subplots(1, 2)
    for ax, alg, panel in zip(axes, ALGS, ("(a)", "(c)"), strict=True):
        runs = [r for r in data.result.runs if r.params.get(ALG) == alg]
        if not runs:
            continue
        run = min(runs, key=lambda r: r.seed)
        s = run.subflow_series
        fs = run.flow_series
        groups = dict(zip(range(len(run.flows)), run.flows["group"], strict=True))
        for g, colour, label in (
            ("bg1", "tab:blue", "mean link-1 Westwood flow"),
            ("bg2", "tab:green", "mean link-2 Westwood flow"),
        ):
            ids = [k for k, v in groups.items() if v == g]
            mean = fs[fs["flow"].isin(ids)].groupby("time_s")["rate_bps"].mean()
            ax.plot(mean.index, mean.to_numpy() / 1e6, color=colour, lw=0.8, label=label)
        for sub, colour in ((0, "tab:red"), (1, "tab:orange")):
            one = s[(s["flow"] == 0) & (s["subflow"] == sub)]
            ax.plot(
                one["time_s"],
                one["rate_bps"] / 1e6,
                color=colour,
                lw=0.8,
                label=f"{NAMES[alg]} subflow on link {sub + 1}",
            )
        total = s[s["flow"] == 0].groupby("time_s")["rate_bps"].sum()
        ax.plot(total.index, total.to_numpy() / 1e6, "k", lw=1.0, label=f"{NAMES[alg]} total")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("rate (Mbit/s)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{panel} {NAMES[alg]}, seed {run.seed}: cf. Fig. 2{panel}", loc="left")
        ax.legend(fontsize="x-small")
    mode = "quick" if data.quick else "full"
    fig.suptitle(f"Congestion balance: 20 Westwood flows on link 1, 12 on link 2 ({mode})")
    return {"rates": fig}


_LOSS = (
    "our RED thresholds (min_th 5, max_th 15, chosen; the paper gives only buffer = BDP) keep "
    "the queues at about 9 and 6 packets (1-2 ms) on paths of 300 and 720 packets BDP, so the "
    "background windows stay small (about 14 packets on link 1) and Westwood+'s decrease to "
    "BWE x RTTmin hardly backs off with an empty queue: the loss rate settles near 2 % and "
    "0.7 %; diagnostic runs (not registered) give 0.39 and 0.39 % with drop-tail BDP buffers "
    "and 1.3 and 0.35 % with RED thresholds 25/75, so the published rates imply much fuller "
    "queues than these thresholds allow"
)


def _published() -> list[Published]:
    out: list[Published] = []
    for alg in ALGS:
        for i, value in enumerate(LOSS_PCT[alg], start=1):
            out.append(
                Published(
                    f"loss{i}_pct",
                    value,
                    Relative(0.5),
                    where={ALG: alg},
                    label=f"§II.C: loss rate at link {i} (%), with {NAMES[alg]}",
                    reason=_LOSS,
                )
            )
    out.append(
        Published(
            "total_over_bg2",
            1.0,
            Between(0.8, 1.25),
            where={ALG: "mptcpw"},
            label="Fig. 2(b): MPTCPW total / mean link-2 Westwood flow",
        )
    )
    out.append(
        Published(
            "path2_share",
            1.0,
            AtLeast(0.5),
            where={ALG: "mptcpw"},
            label="Fig. 2(a): MPTCPW moves its traffic to link 2 (our threshold: share >= 0.5)",
        )
    )
    for i in (1, 2):
        out.append(
            Published(
                f"sub{i}_over_bg{i}",
                0.5,
                Between(0.4, 0.625),
                where={ALG: "wmptcpw"},
                label=f"Fig. 2(c): wMPTCPW subflow / mean Westwood flow on link {i}",
                # Measured 2026-11-26: full form 0.623 (95 % CI 0.565-0.682, three 200 s
                # seeds), the quick form's one 60 s seed 0.665.
                reason=(
                    "at the window's upper edge: the full form (three 200 s seeds) gives 0.62 "
                    "(95 % interval 0.56-0.68) and matches; a single shorter run can land "
                    "above 0.625"
                )
                if i == 1
                else None,
            )
        )
    return out


EXPERIMENT = Experiment(
    id="mptcpw-balance",
    title="Congestion balance of MPTCP-Westwood and wMPTCPW (MPVeno paper, Fig. 2)",
    description=(
        "A two-path MPTCPW or wMPTCPW connection over a heavily loaded link (40 Mbps, 30 ms, "
        "20 Westwood flows) and a lightly loaded one (32 Mbps, 90 ms, 12 Westwood flows): "
        "MPTCPW should move to link 2 and get about a link-2 flow's rate; wMPTCPW keeps about "
        "half a background flow's rate on each link."
    ),
    source=f"{papers.LE_2013}, §II.C (Fig. 2, Fig. 3(a))",
    setup=(
        "Given: link 1 40 Mbps / 30 ms, link 2 32 Mbps / 90 ms, 20 and 12 TCP Westwood "
        "background flows, SACK, RED, buffer = BDP, 1000 B packets. Chosen: delays one way "
        "(RTT 60 and 180 ms, BDP 300 and 720 packets = RED limits), RED min_th 5, max_th 15, "
        "max_p 0.1, w_q 0.002, gentle; Westwood+ background flows started 50 ms apart, the "
        "two-path flow at 1 s; 200 s; 3 seeds. Rates are acknowledged throughput over each "
        "flow's lifetime; loss rate = the link's congestive drops / arrivals. The tolerances "
        "of the loss rates (50 %) and of the half-rate claim ([0.4, 0.625]) are ours."
    ),
    scenarios=("mptcpw-balance/two-links.toml",),
    sweep=Sweep(grid={ALG: list(ALGS)}, seeds=3),
    quick=Sweep(grid={ALG: list(ALGS)}, seeds=1, set={"duration": "60s"}),
    metrics=metrics,
    published=_published(),
    plot=plot,
)
