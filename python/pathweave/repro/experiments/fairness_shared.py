"""fairness-shared: a multipath flow and a single-path flow on one shared bottleneck (Becke,
Dreibholz, Adhari & Rathgeb, "On the Fairness of Transport Protocols in a Multi-Path
Environment", IEEE ICC 2012, Scenario 2, Fig. 3).

S0 -> D0 is multi-homed: both of its sub-flows and the single-path flow S1 -> D1 cross the one
RED bottleneck alpha. Reno on every path takes two shares of three (link-centric sub-flow
fairness); the coupled RP-MP-v2 and MPTCP should take one of two (link-centric flow fairness,
which is here also the network-centric one). Fig. 3(b)/(c) plot the difference between the two
flows against rho(alpha) for bottleneck delays of 1, 5 and 10 ms.

The paper's MPTCP is LIA ported to SCTP's byte-counted windows. The brief maps it to
pathweave's ``lia`` (RFC 6356); ``mptcp-bytes`` (usrsctp's ``SCTP_CMT_MPTCP``, the closer
relative of the paper's port) runs beside it and is compared with the same published values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pathweave.repro import papers
from pathweave.repro.experiment import (
    Absolute,
    AtMost,
    Between,
    Experiment,
    ExperimentData,
    Published,
)
from pathweave.repro.fairness import (
    link_centric_flow,
    link_centric_subflow,
    network_centric_flow,
    shared_topology,
    totals,
)
from pathweave.repro.figures import error_bars, new_figure
from pathweave.sweep import RunRecord, Sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ALG = "flow[0].algorithm"
RATE = "link[0].rate"
DELAY = "link[0].delay"

ALGORITHMS = ("reno", "rpmp-v2", "lia", "mptcp-bytes")
NAMES = {
    "reno": "Reno per path",
    "rpmp-v2": "RP-MP-v2",
    "lia": "MPTCP (lia)",
    "mptcp-bytes": "MPTCP (mptcp-bytes)",
}
COLOURS = {
    "reno": "tab:red",
    "rpmp-v2": "tab:green",
    "lia": "tab:blue",
    "mptcp-bytes": "tab:purple",
}
MPTCP = ("lia", "mptcp-bytes")
RATES = (5, 10, 20, 50, 100)  # rho(alpha), Mbit/s
DELAYS = (1, 5, 10)  # delta_alpha, ms
DEFAULT_DELAY = 10  # Fig. 3(a)
QUICK_RATES = (20, 100)
QUICK_DELAYS = (1, 10)
SEEDS = 25  # the paper's minimum
WARM_UP_S = 20.0  # the paper's transient; the measured 300 s follow
PAYLOAD = 1452 / 1500  # payload per byte on the wire: 1452-byte messages, 48 B SCTP/IP
SHARE_TOLERANCE = 0.1
MPTCP_DIFF_1MS = 7.0  # Mbit/s at delta_alpha = 1 ms, rho(alpha) = 100 Mbit/s


def _value(text: object, unit: str) -> float:
    m = re.fullmatch(rf"\s*([0-9.]+)\s*{unit}\s*", str(text))
    if not m:
        raise ValueError(f"expected a value in {unit}, got {text!r}")
    return float(m.group(1))


def mbps(text: object) -> float:
    """``"20Mbps"`` -> 20.0."""
    return _value(text, "Mbps")


def millis(text: object) -> float:
    """``"10ms"`` -> 10.0."""
    return _value(text, "ms")


def flow_value(run: RunRecord, name: str, column: str) -> float:
    flows = run.flows
    return float(flows[flows["name"] == name][column].iloc[0])


def metrics(run: RunRecord) -> Mapping[str, float]:
    """Payload throughput of each flow after the 20 s transient (mean of the per-second
    goodput samples), as Mbit/s and as shares of alpha's payload capacity."""
    names = list(run.flows["name"])
    multi_id, single_id = names.index("multi"), names.index("single")
    series = run.flow_series
    steady = series[series["time_s"] > WARM_UP_S]
    rate = steady.groupby("flow")["rate_bps"].mean() / 1e6
    multi, single = float(rate.get(multi_id, 0.0)), float(rate.get(single_id, 0.0))
    cap = mbps(run.params[RATE]) * PAYLOAD
    subs = run.subflow_series
    subs = subs[(subs["time_s"] > WARM_UP_S) & (subs["flow"] == multi_id)]
    sub_rate = subs.groupby("subflow")["rate_bps"].mean() / 1e6
    return {
        "multi_mbps": multi,
        "single_mbps": single,
        "diff_mbps": multi - single,
        "multi_share": multi / cap,
        "single_share": single / cap,
        "utilisation": (multi + single) / cap,
        "sub0_mbps": float(sub_rate.get(0, 0.0)),
        "sub1_mbps": float(sub_rate.get(1, 0.0)),
        "multi_timeouts": flow_value(run, "multi", "timeouts"),
        "single_timeouts": flow_value(run, "single", "timeouts"),
        "multi_loss_event_rate": flow_value(run, "multi", "loss_event_rate"),
        "single_loss_event_rate": flow_value(run, "single", "loss_event_rate"),
    }


def _rows(data: ExperimentData, metric: str, alg: str, delay: float) -> pd.DataFrame:
    rows = data.metric(metric)
    rows = rows[(rows[ALG] == alg) & (rows[DELAY].map(millis) == delay)].copy()
    rows["rho"] = rows[RATE].map(mbps)
    return rows.sort_values("rho")


def _ideal(ax: Axes, rates: list[float]) -> None:
    """The fairness definitions' allocations (Fig. 2(a)) as thin black lines."""
    line = [0.0, *rates]
    sub = [totals(link_centric_subflow(shared_topology(r * PAYLOAD))) for r in line]
    flow = [totals(link_centric_flow(shared_topology(r * PAYLOAD))) for r in line]
    net = [network_centric_flow(shared_topology(r * PAYLOAD)) for r in line]
    same = all(math.isclose(a["multi"], b["multi"]) for a, b in zip(flow, net, strict=True))
    ax.plot(line, [a["multi"] for a in sub], "k:", lw=0.9, label="link-centric sub-flow: multi")
    ax.plot(line, [a["single"] for a in sub], "k-.", lw=0.9, label="link-centric sub-flow: single")
    ax.plot(
        line,
        [a["multi"] for a in flow],
        "k-",
        lw=0.9,
        alpha=0.5,
        label="link-centric flow = network-centric (both)" if same else "link-centric flow",
    )
    if not same:
        ax.plot(line, [a["multi"] for a in net], "k--", lw=0.9, label="network-centric: multi")


def plot(data: ExperimentData) -> dict[str, Figure]:
    rates = sorted({mbps(r) for r in data.runs[RATE]})
    delays = sorted({millis(d) for d in data.runs[DELAY]})
    algs = [a for a in ALGORITHMS if a in set(data.runs[ALG])]
    fig_delay = DEFAULT_DELAY if DEFAULT_DELAY in delays else delays[-1]
    fig = new_figure(figsize=(15, 9))
    axes = fig.subplots(2, 2)
    ax = axes[0][0]
    _ideal(ax, rates)
    for alg in algs:
        for metric, style, who in (("multi_mbps", "--", "multi"), ("single_mbps", "-", "single")):
            rows = _rows(data, metric, alg, fig_delay)
            error_bars(
                ax,
                rows,
                fmt="o" + style,
                color=COLOURS[alg],
                label=f"{NAMES[alg]}: {who}",
            )
    ax.set_xlabel("bandwidth of alpha rho(alpha) (Mbit/s)")
    ax.set_ylabel("payload throughput (Mbit/s)")
    ax.set_title(f"(a) flow throughput, delta_alpha = {fig_delay:g} ms", loc="left")
    ax.legend(fontsize="x-small", ncol=2)
    panels = [("rpmp-v2", "(b) B0 - B1 for RP-MP-v2")] + [
        (a, f"({c}) B0 - B1 for {NAMES[a]}") for a, c in zip(MPTCP, "cd", strict=True)
    ]
    for (alg, title), ax in zip(panels, [axes[0][1], axes[1][0], axes[1][1]], strict=True):
        if alg not in algs:
            ax.set_visible(False)
            continue
        ax.axhline(0.0, color="black", lw=0.8)
        for d, marker in zip(delays, "os^v", strict=False):
            rows = _rows(data, "diff_mbps", alg, d)
            error_bars(
                ax,
                rows,
                fmt=marker + "-",
                ms=4,
                label=f"delta_alpha = {d:g} ms",
            )
        if alg in MPTCP:
            ax.plot([100], [MPTCP_DIFF_1MS], "k*", ms=10, label="paper: about +7 at 1 ms")
        ax.set_xlabel("bandwidth of alpha rho(alpha) (Mbit/s)")
        ax.set_ylabel("B0 - B1 (Mbit/s)")
        ax.set_title(title, loc="left")
        ax.legend(fontsize="small")
    mode = "quick" if data.quick else "full"
    fig.suptitle(
        f"Scenario 2: shared bottleneck alpha, RED, 10 ms paths ({mode}); "
        "multi = dashed, single = solid, as in the paper's Fig. 3"
    )
    return {"scenario2-throughput": fig}


def _where(alg: str, rho: int, delay: int) -> dict[str, str]:
    return {ALG: alg, RATE: f"{rho}Mbps", DELAY: f"{delay}ms"}


# Reasons for the values our simulator misses, from looking at the runs (see the report).
_RPMP_POSITIVE = (
    "pathweave's RP-MP-v2 backs off by less than half of the connection's window: it follows "
    "usrsctp's 'short version' decrease, so a loss on the sub-flow holding less than half of "
    "the connection's window removes only that sub-flow's window (down to max(4 MTU i_P, "
    "MTU)); in 120 s runs at 100 Mbit/s / 1 ms and 20 Mbit/s / 10 ms the connection's "
    "windows fell by 0.45 of their sum per decrease on average, the single-path Reno flow's "
    "by 0.50 of its window, at equal loss-event rates. The paper's RP-MP-v2 also keeps such "
    "a path idle for one RTO (§VII-A), which the paper credits for the difference staying "
    "below 0 and which pathweave does not model. The shares stay within 0.5 +- 0.1"
)
_MPTCP_BYTES_5MS = (
    "pathweave's mptcp-bytes is somewhat more aggressive than the paper's MPTCP at every "
    "delay (at 1 ms it is above +7 Mbit/s too, within the factor 2); its difference still "
    "falls as the delay grows, as the paper's does, but at 5 ms it has not yet fallen below "
    "the paper's 1 ms value"
)


def _published() -> list[Published]:
    out: list[Published] = []
    for alg in ALGORITHMS:
        multi, single = (2 / 3, 1 / 3) if alg == "reno" else (1 / 2, 1 / 2)
        for rho in RATES:
            for metric, value, who in (
                ("multi_share", multi, "multi"),
                ("single_share", single, "single"),
            ):
                out.append(
                    Published(
                        metric,
                        value,
                        Absolute(SHARE_TOLERANCE),
                        where=_where(alg, rho, DEFAULT_DELAY),
                        label=f"Fig. 3a {NAMES[alg]}: {who} share of alpha, rho = {rho} Mbps",
                    )
                )
    for delay in DELAYS:
        for rho in RATES:
            out.append(
                Published(
                    "diff_mbps",
                    0.0,
                    AtMost(0.0),
                    where=_where("rpmp-v2", rho, delay),
                    label=f"Fig. 3b RP-MP-v2: B0 - B1 <= 0, delay {delay} ms, rho = {rho} Mbps",
                    reason=_RPMP_POSITIVE,
                )
            )
    for alg in MPTCP:
        out.append(
            Published(
                "diff_mbps",
                MPTCP_DIFF_1MS,
                Between(MPTCP_DIFF_1MS / 2, MPTCP_DIFF_1MS * 2),
                where=_where(alg, 100, 1),
                label=f"Fig. 3c {NAMES[alg]}: B0 - B1 about +7 Mbps, delay 1 ms, rho = 100 Mbps",
            )
        )
        for delay in (5, 10):
            out.append(
                Published(
                    "diff_mbps",
                    MPTCP_DIFF_1MS,
                    AtMost(MPTCP_DIFF_1MS),
                    where=_where(alg, 100, delay),
                    label=f"Fig. 3c {NAMES[alg]}: B0 - B1 below its 1 ms value, delay "
                    f"{delay} ms, rho = 100 Mbps",
                    reason=_MPTCP_BYTES_5MS if alg == "mptcp-bytes" else None,
                )
            )
    return out


EXPERIMENT = Experiment(
    id="fairness-shared",
    title="Multipath fairness on a shared bottleneck (Becke et al., Scenario 2, Fig. 3)",
    description=(
        "A multi-homed S0 -> D0 flow with two sub-flows and a single-path S1 -> D1 flow share "
        "one RED bottleneck alpha. Reno on every path should take 2/3 of alpha and leave 1/3 "
        "(link-centric sub-flow fairness); RP-MP-v2 and MPTCP should split it 1/2 : 1/2 "
        "(link-centric flow fairness). The difference B0 - B1 stays at or below 0 for "
        "RP-MP-v2 at every bottleneck delay and grows for MPTCP as the delay shrinks (about "
        "+7 Mbps at 1 ms and 100 Mbps). 25 replications per point, as the paper's minimum "
        "(randomness: RED's drops)."
    ),
    source=f"{papers.BECKE_2012}, §IV, §V-B, §VI, §VII-A (Fig. 1(b), 2, 3)",
    setup=(
        "Bottleneck alpha: rho(alpha) in {5, 10, 20, 50, 100} Mbit/s, delay delta_alpha in "
        "{1, 5, 10} ms (10 ms for Fig. 3a), RED MinTh 30, MaxTh 90, MaxP 0.1 (paper); RED's "
        "other parameters ns-2's defaults (w_q 0.002, gentle, wait, packet mode, mean packet "
        "500 B) and a 180-packet limit (chosen). Each sub-flow and the single-path flow have "
        "their own 1 Gbit/s, 50 us access link (chosen). 1452-byte messages with 48 bytes of "
        "SCTP/IP framing (1500-byte packets), saturated senders, SACK recovery (SCTP's "
        "SACKs), initial window 2, min RTO 200 ms, no delayed ACK (chosen). Multipath CC: "
        "Reno per path (algorithm 'reno', uncoupled), RP-MP-v2 ('rpmp-v2', usrsctp's "
        "reference form), MPTCP ('lia', RFC 6356, and 'mptcp-bytes', usrsctp's LIA in bytes); "
        "the single-path flow runs Reno.\n"
        "320 s per run; throughput = mean of the per-second goodput samples after 20 s (the "
        "paper's 300 s after a 20 s transient). Shares are of alpha's payload capacity "
        "rho(alpha) x 1452/1500; the ideal lines use the same capacity. 25 seeds (paper: "
        ">= 25), 95 % Student-t intervals.\n"
        f"Tolerances: shares within +-{SHARE_TOLERANCE:g} of 2/3, 1/3 or 1/2; RP-MP-v2's "
        "B0 - B1 <= 0 at every point; MPTCP's B0 - B1 at 1 ms / 100 Mbit/s within a factor 2 "
        "of +7 Mbit/s and at 5 and 10 ms at most +7 Mbit/s.\n"
        "--quick: rho(alpha) in {20, 100}, delta_alpha in {1, 10} ms, 80 s, 2 seeds."
    ),
    scenarios=("fairness-shared/shared.toml",),
    sweep=Sweep(
        grid={
            ALG: list(ALGORITHMS),
            RATE: [f"{r}Mbps" for r in RATES],
            DELAY: [f"{d}ms" for d in DELAYS],
        },
        seeds=SEEDS,
    ),
    quick=Sweep(
        grid={
            ALG: list(ALGORITHMS),
            RATE: [f"{r}Mbps" for r in QUICK_RATES],
            DELAY: [f"{d}ms" for d in QUICK_DELAYS],
        },
        seeds=2,
        set={"duration": "80s"},
    ),
    metrics=metrics,
    published=_published(),
    plot=plot,
)
