"""datacenter-permutation: FatTree permutation traffic, throughput per host against the number
of subflows (Raiciu et al., "Improving Datacenter Performance and Robustness with Multipath
TCP", SIGCOMM 2011, §4, Fig. 2 and the packet-level FatTree runs).

What the paper reports for a FatTree with full bisection under permutation traffic: single-path
TCP over ECMP loses throughput to hash collisions, about 40-50 % of the optimum (k = 8, 128
hosts: about half the host rate); MPTCP (LIA) gains with every subflow and reaches about 90 %
of the optimum with 8 subflows, at 128 hosts as at 8,192 (Fig. 2: "eight paths ... independent
of scale"). The public abstract gives the setting (FatTree, ECMP, MPTCP against TCP); the
numbers above are read from the paper's Fig. 2 and §4 text and are approximate.

Beside the packet-level runs stand the flow-level references of ``pathweave.datacenter``: the
single-path max-min allocation over each connection's first hashed path (what TCP over ECMP
can get at best, fairly shared) and the multipath optimum over every equal-cost path (the host
link rate for a permutation on a full-bisection FatTree, which is rearrangeably non-blocking;
computed at both sizes, not assumed: the bottleneck bound of ``pathweave.datacenter``, which
the even split over every connection's paths carries, in a fraction of a second at k = 16).
Both count wire bits; goodput counts payload, so ours is compared with the
reference times mss / (mss + header).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from pathweave.datacenter import multipath_optimum, single_path_reference
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

    from pathweave._core import Scenario

K = "topology.k"
ALG = "traffic.algorithm"
N = "traffic.subflows"
KS = (8, 16)
SUBFLOWS = (1, 2, 4, 8)
MULTIPATH = ("lia", "olia", "balia")
NAMES = {"reno": "TCP", "lia": "LIA", "olia": "OLIA", "balia": "Balia"}
# TCP is one subflow; each multipath algorithm runs 1, 2, 4 and 8.
COMBOS = [("reno", 1)] + [(a, n) for a in MULTIPATH for n in SUBFLOWS]
QUICK_COMBOS = [("reno", 1), ("lia", 8)]

# The scenario's segments: 1448 B of payload in 1500 B on the wire.
MSS_BYTES = 1448
HEADER_BYTES = 52
PAYLOAD_SHARE = MSS_BYTES / (MSS_BYTES + HEADER_BYTES)
WARM_UP = 0.2  # share of the run left out: slow start and the first shifts of traffic
# "Within noise": how far the mean throughput per host may fall when subflows are added (a
# fraction of the host rate): about the standard error of a mean over 128 hosts spread as
# TCP's are (s.d. 0.25 of the host rate at k = 8: 0.25 / sqrt(128) = 0.022). Both points of a
# step share the traffic matrix; another matrix moves the means themselves by more (k = 8,
# traffic seeds 1-3: TCP 0.50, 0.50, 0.45; LIA with 8 subflows 0.86, 0.85, 0.83).
NOISE = 0.02

TCP_PAPER = 0.5  # k = 8: TCP over ECMP gets about half the host rate (Fig. 2, §4)
TCP_PAPER_RANGE = (0.4, 0.6)
MPTCP8_OF_OPTIMUM = 0.9  # about 90 % of the optimum with 8 subflows (Fig. 2)
MPTCP8_OF_RATE = 0.85  # the bound asserted on the host rate itself


def _steady_goodput(run: RunRecord) -> np.ndarray:
    """Each connection's goodput after the warm-up, in bit/s, in flow order."""
    series = run.flow_series
    duration = run.point.scenario.duration_s
    steady = series[series["time_s"] > WARM_UP * duration]
    rates = steady.groupby("flow")["rate_bps"].mean()
    return rates.reindex(range(len(run.flows)), fill_value=0.0).to_numpy(dtype=float)


# Fabric and traffic matrix -> the two references; see _references.
_REFERENCES: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}


def _references(key: tuple[object, ...], scenario: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """Single-path max-min and multipath optimum per connection (bit/s). Neither depends on
    the algorithm or the number of subflows (a connection's first subflow hashes onto the same
    path whatever the count), so one computation serves every point of a fabric."""
    if key in _REFERENCES:
        return _REFERENCES[key]
    single = single_path_reference(scenario)
    optimum = multipath_optimum(scenario)
    if len(_REFERENCES) >= 4:
        _REFERENCES.clear()
    _REFERENCES[key] = (single, optimum)
    return single, optimum


def metrics(run: RunRecord) -> Mapping[str, float]:
    scenario = run.point.scenario
    mss = set(scenario.flow_mss_bytes)
    if mss != {MSS_BYTES}:
        raise ValueError(f"the scenario's segments are {sorted(mss, key=str)} B, not {MSS_BYTES}")
    host_rate = float(max(scenario.link_direction_rates_bps))
    key = (run.params.get(K), tuple(scenario.flow_names), scenario.seed, host_rate)
    single, optimum = _references(key, scenario)
    x = _steady_goodput(run)
    jain = float(x.sum() ** 2 / (len(x) * (x**2).sum())) if (x > 0).any() else math.nan
    flows = run.flows
    return {
        "host_fraction": float(x.mean()) / host_rate,
        "least_host_fraction": float(x.min()) / host_rate,
        "jain": jain,
        "to_single_path": float(x.mean()) / (float(single.mean()) * PAYLOAD_SHARE),
        "to_optimum": float(x.mean()) / (float(optimum.mean()) * PAYLOAD_SHARE),
        "single_path_reference": float(single.mean()) / host_rate,
        "optimum_reference": float(optimum.mean()) / host_rate,
        "timeouts_per_connection": float(flows["timeouts"].mean()),
    }


def plot(data: ExperimentData) -> dict[str, Figure]:
    frac = data.metric("host_fraction")
    ks = sorted({int(k) for k in frac[K]})
    fig = new_figure(figsize=(5.5 * len(ks), 4.2))
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    single = data.metric("single_path_reference")
    optimum = data.metric("optimum_reference")
    for ax, k in zip(axes, ks, strict=True):
        rows = frac[frac[K] == k]
        sp = float(single[single[K] == k]["mean"].mean())
        opt = float(optimum[optimum[K] == k]["mean"].mean())
        ax.axhline(opt, color="black", lw=1, label="multipath optimum")
        ax.axhline(opt * PAYLOAD_SHARE, color="black", lw=1, ls=":", label="its payload")
        ax.axhline(sp, color="tab:gray", lw=1, ls="--", label="single-path max-min")
        for alg in MULTIPATH:
            sel = rows[rows[ALG] == alg].sort_values(N)
            if len(sel):
                ax.plot(sel[N], sel["mean"], "o-", label=NAMES[alg])
        tcp = rows[rows[ALG] == "reno"]
        if len(tcp):
            ax.plot(tcp[N], tcp["mean"], "ks", ms=8, label="TCP (ECMP)")
        if k == 8:
            ax.plot([1], [TCP_PAPER], "x", color="tab:red", ms=9, label="paper: TCP")
        ax.plot([8], [MPTCP8_OF_OPTIMUM], "+", color="tab:red", ms=11, label="paper: MPTCP, 8")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(SUBFLOWS), [str(n) for n in SUBFLOWS])
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("subflows per connection")
        ax.set_ylabel("throughput per host / host link rate")
        ax.set_title(f"FatTree k = {k} ({k**3 // 4} hosts)", loc="left")
        ax.legend(fontsize="x-small", loc="lower right")
    mode = "quick" if data.quick else "full"
    fig.suptitle(f"Permutation traffic: mean goodput per host ({mode})")
    figs = {"throughput-vs-subflows": fig}

    # Each host's throughput, ranked (the paper's distributions), for k = 8.
    fig2 = new_figure(figsize=(6, 4))
    ax2 = fig2.subplots()
    for run in data.result.runs:
        if run.params.get(K) != 8 or run.params.get(N) not in (1, 8):
            continue
        alg, n = str(run.params[ALG]), int(run.params[N])
        x = np.sort(_steady_goodput(run))
        rate = float(max(run.point.scenario.link_direction_rates_bps))
        ax2.plot(np.arange(len(x)), x / rate, lw=1.2, label=f"{NAMES.get(alg, alg)}, {n}")
    ax2.set_xlabel("hosts, ranked by throughput")
    ax2.set_ylabel("throughput / host link rate")
    ax2.set_ylim(0, 1.05)
    ax2.set_title("FatTree k = 8: each host's throughput", loc="left")
    ax2.legend(fontsize="small")
    figs["hosts-ranked-k8"] = fig2
    return figs


_SHORTFALL = (
    "the 10 s run is still shifting traffic after its 2 s warm-up: at k = 8 LIA's mean per "
    "host rises from 0.85 of the host rate in the third second to 0.87 from the fifth on, 0.90 "
    "of the optimum's payload, and over 30 s (6 s warm-up) it is 0.905 "
    "(tests/test_datacenter_permutation.py); the steady state sits at the paper's 90 %"
)


_SCALE = (
    "at k = 16 the mean per host with 8 subflows settles lower than at k = 8, not later: LIA "
    "climbs to 0.83 of the host rate by the tenth second and stays there, 0.833 over 30 s "
    "(6 s warm-up), 0.86 of the optimum's payload; the paper's flow-level Fig. 2 finds 8 "
    "subflows enough at any scale. Not explained: as at k = 8 about half of the drops are at "
    "the senders' own uplink queues, which run 86 % busy (docs/datacenter.md)"
)


def _where(k: int, alg: str, n: int) -> dict[str, object]:
    return {K: k, ALG: alg, N: n}


def _published() -> list[Published]:
    out: list[Published] = [
        Published(
            "host_fraction",
            TCP_PAPER,
            Between(*TCP_PAPER_RANGE),
            where=_where(8, "reno", 1),
            label="TCP over ECMP: about half the host rate, k = 8 (Fig. 2, §4)",
        )
    ]
    for k in KS:
        out.append(
            Published(
                "to_single_path",
                1.0,
                Relative(0.10),
                where=_where(k, "reno", 1),
                label=f"TCP within 10 % of the single-path max-min reference, k = {k}",
            )
        )
        out.append(
            Published(
                "to_optimum",
                MPTCP8_OF_OPTIMUM,
                AtLeast(MPTCP8_OF_OPTIMUM),
                where=_where(k, "lia", 8),
                label=f"LIA, 8 subflows: at least 90 % of the multipath optimum, k = {k} (Fig. 2)",
                reason=_SHORTFALL if k == 8 else _SCALE,
            )
        )
        for alg in MULTIPATH:
            note = "" if alg == "lia" else " (the paper runs LIA only: the same bound)"
            out.append(
                Published(
                    "host_fraction",
                    MPTCP8_OF_RATE,
                    AtLeast(MPTCP8_OF_RATE),
                    where=_where(k, alg, 8),
                    label=f"{NAMES[alg]}, 8 subflows: at least 0.85 of the host rate, k = {k}"
                    + note,
                    reason=_SCALE if k == 16 else None,
                )
            )
            for lo, hi in itertools.pairwise(SUBFLOWS):
                out.append(
                    Published(
                        "host_fraction",
                        0.0,
                        AtLeast(-NOISE),
                        where=_where(k, alg, hi),
                        baseline=_where(k, alg, lo),
                        label=f"{NAMES[alg]}: no lower with {hi} subflows than with {lo}, "
                        f"k = {k} (change)",
                    )
                )
        out.append(
            Published(
                "jain",
                0.0,
                AtLeast(0.0),
                where=_where(k, "lia", 8),
                baseline=_where(k, "reno", 1),
                label=f"Jain's index across hosts higher for LIA with 8 subflows than for TCP, "
                f"k = {k} (change)",
            )
        )
    return out


EXPERIMENT = Experiment(
    id="datacenter-permutation",
    title="FatTree permutation traffic: throughput against subflows (Raiciu et al. Fig. 2)",
    description=(
        "Every host of a FatTree sends to one other (a random permutation) over long-running "
        "connections whose subflows ECMP hashes onto equal-cost paths: TCP (one subflow) "
        "against LIA, OLIA and Balia with 1, 2, 4 and 8 subflows, at k = 8 (128 hosts) and "
        "k = 16 (1,024 hosts), beside the flow-level single-path max-min and multipath-optimum "
        "references and the paper's shape: TCP near half the host rate, MPTCP rising with "
        "subflows to about 90 % of the optimum with 8."
    ),
    source=f"{papers.RAICIU_2011}, §4 (Fig. 2 and the packet-level FatTree runs)",
    setup=(
        "FatTree (Al-Fares et al. 2008) of k = 8 and 16, every link 100 Mbit/s and 20 µs "
        "(full bisection), drop-tail buffers of 100 packets, 1500-byte packets (1448 B of "
        "payload), permutation traffic (one matrix, traffic seed 1), starts within the first "
        "10 ms, 10 s. Each subflow on the equal-cost path its ECMP hash picks. Chosen: the link "
        "rate (the results are fractions of it; 100 Mbit/s keeps k = 16 affordable), the "
        "buffers, the delays, NewReno recovery, min RTO 200 ms.\n"
        "Throughput per host: its connection's goodput averaged over the last 80 % of the run, "
        "as a fraction of the host link rate. The references count wire bits, goodput payload: "
        "ours is compared with reference x 1448/1500. The multipath optimum is computed at "
        "both sizes (the bottleneck bound, which the routes carry: the host rate for every "
        "host, as full bisection promises).\n"
        "The simulation has no random element and the sweep's seed does not change the "
        "traffic matrix, so one seed suffices (no confidence interval).\n"
        "Shape asserted: TCP within 10 % of the single-path reference (and about 0.5 of the "
        "host rate at k = 8, within [0.4, 0.6]); each multipath algorithm's throughput no lower "
        f"with more subflows, within {NOISE:g} of the host rate; with 8 subflows at least 0.85 "
        "of the host rate and (LIA) at least 0.9 of the multipath optimum; Jain's index "
        "higher for LIA with 8 subflows than for TCP.\n"
        "--quick: k = 8, TCP and LIA with 8 subflows only, 10 s."
    ),
    scenarios=("datacenter-permutation/fat-tree.toml",),
    sweep=Sweep(
        grid={K: list(KS)},
        zipped={ALG: [a for a, _ in COMBOS], N: [n for _, n in COMBOS]},
        seeds=1,
    ),
    quick=Sweep(
        grid={K: [8]},
        zipped={ALG: [a for a, _ in QUICK_COMBOS], N: [n for _, n in QUICK_COMBOS]},
        seeds=1,
    ),
    metrics=metrics,
    published=_published(),
    plot=plot,
)
