"""lia-two-links: LIA over two links with Reno cross traffic (González Usach and Kühlewind,
"Implementation and Evaluation of Coupled Congestion Control for Multipath TCP", EUNICE 2012,
§4, Fig. 1-6).

The paper runs its LIA kernel module in the real Linux stack inside the IKR SimLib: one MPTCP
connection with one subflow on each of two links, one Reno flow on each link, buffers of one
bandwidth-delay product, 85 s. Three scenarios with cross traffic (Table/Fig. 4-6) give the
MPTCP sum and each TCP's throughput; two without (Fig. 2, 3) show the cwnd slopes: with equal
delays the larger link's subflow grows faster, with equal capacities and different delays both
grow at the same rate (LIA is RTT-compensating). We run LIA with both arithmetics: `spec`
(RFC 6356, real-valued) and `linux` (the later kernel's fixed point), and the simulator both
with its defaults and with `[tcp] profile = "linux"` (every option it has for doing what the
Linux stack does: limited transmit, PRR, SACK kept across a timeout, window validation,
Linux's retransmission timer, MPTCP's option bytes, send queues and handshakes;
docs/scenarios.md). Beside them the report
gives the real kernel's figures for the same scenarios, measured with pathweave's BPF LIA
(`pw_lia`) under `pathweave emulate` by `bench/droptail_kernel.py`, against the linux
profile with the emulator's packets and the kernel's timing noise (jitter on the links, as
measured), as the mean over seeds (docs/kernel.md, "Drop-tail links").
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

SCEN = "scenario"
ARITH = "flow[0].arithmetic"
PROFILE = "tcp.profile"
# The simulator's settings compared: (arithmetic, profile). The linux profile runs with the
# kernel's arithmetic; the specification's arithmetic stays on the defaults.
# Each with a packet layout: the paper's (1448-byte segments, 52-byte headers with timestamps,
# deterministic links) for the published values, and the emulator's (1460-byte segments,
# 40-byte headers) with timing noise on the links for the kernel's: JITTER on every link, the
# noise measured on the kernel's runs (the sender's ACK-to-send turnaround exceeds its minimum
# by 10 us at the median, 42-43 us at p90 and 71-81 us at p99 in S2's queue logs; a uniform
# draw below 50 us has its p90 at 45 us, and one is drawn for the data and one for the ACK of
# each round trip; docs/kernel.md, "Drop-tail links"), over SEEDS runs that differ in it.
SETTINGS_FULL = (
    ("spec", "default", "paper"),
    ("linux", "default", "paper"),
    ("linux", "linux", "paper"),
    ("linux", "linux", "kernel"),
)
SETTINGS_QUICK = (
    ("spec", "default", "paper"),
    ("linux", "linux", "paper"),
    ("linux", "linux", "kernel"),
)
JITTER = "50us"
LAYOUT = "tcp.header"  # what tells the two layouts apart in a run's parameters
LAYOUTS = {
    "paper": {"tcp.mss": "1448B", LAYOUT: "52B", "tcp.ack_size": "52B", "jitter": "0us"},
    "kernel": {"tcp.mss": "1460B", LAYOUT: "40B", "tcp.ack_size": "40B", "jitter": JITTER},
}
SEEDS_FULL = 30
SEEDS_QUICK = 5
# The sweep labels each point with its scenario file's stem.
CROSS = ("s1", "s2", "s3")
NOCROSS = ("nocross-s2", "nocross-s3")
FILES = tuple(f"lia-two-links/{stem}.toml" for stem in CROSS + NOCROSS)

# §4.3: average throughput in Mbps (MPTCP sum, TCP on A, TCP on B).
PUBLISHED = {
    CROSS[0]: (3.54, 3.13, 3.24),
    CROSS[1]: (5.73, 6.0, 3.19),
    CROSS[2]: (3.34, 3.56, 2.87),
}
TOLERANCE = 0.20

# The kernel's goodput for S1-S3 (Mbit/s: MPTCP sum, TCP on A, TCP on B), mean of the emulated
# runs of 85 s recorded, each reliable, LIA on `pw_lia`, 1460-byte segments and 40-byte headers
# (the emulator's 1500-byte packets without TCP timestamps, where these scenarios' 52-byte
# headers carry 1448): `sudo python bench/droptail_kernel.py`, three runs of 2026-12-02 and
# three (S1, S2) or five (S3) of 2026-12-03; docs/kernel.md. Compared with the linux-profile
# runs at the same packets and with timing noise, within KERNEL_TOLERANCE, the bound
# docs/kernel.md sets for the simulator beside the kernel.
KERNEL = {
    "s1": (2.45, 3.61, 3.56),
    "s2": (4.64, 6.03, 3.74),
    "s3": (2.90, 3.59, 3.07),
}
KERNEL_TOLERANCE = 0.15
# What has been measured about the gap (docs/kernel.md, "Drop-tail links").
_KERNEL_GAP = (
    "mean over seeds of the simulator with the emulator's packets and the kernel's timing noise "
    "as measured (50 us of jitter on every link), against the kernel's mean over six to eight "
    "runs whose own spread is 0.2-0.9 Mbit/s per flow: on drop-tail links which flow an "
    "overflow takes decides a run (docs/kernel.md, Drop-tail links)"
)
_CHAOS = (
    "one deterministic run at the paper's packets, on drop-tail links where which flow an "
    "overflow takes decides the run: with the profile the simulator follows the kernel packet "
    "for packet through the first slow starts and parts from it at one overflow, as the "
    "kernel's own runs part among themselves; with the kernel's timing noise its mean over "
    "seeds is within 15 % of the kernel's for every flow (the kernel's rows), and a change "
    "of segment size moves the single run (S2 4.62 / 6.45 / 3.35 Mbit/s at 1460 bytes, 5.79 / "
    "4.76 / 3.73 at 1448; docs/kernel.md, Drop-tail links)"
)
WARM_UP_S = 10.0  # slopes are read after the first slow start


def _slope(series: object, subflow: int) -> float:
    """Average growth rate of a subflow's cwnd in bytes per second: the sum of its increases
    between samples after the warm-up, over the time they span (decreases left out)."""
    import pandas as pd

    s = series if isinstance(series, pd.DataFrame) else pd.DataFrame()
    one = s[(s["flow"] == 0) & (s["subflow"] == subflow)].sort_values("time_s")
    one = one[one["time_s"] > WARM_UP_S]
    if len(one) < 2:
        return float("nan")
    d = one["cwnd_bytes"].diff()
    span = float(one["time_s"].iloc[-1] - one["time_s"].iloc[0])
    return float(d[d > 0].sum()) / span


def metrics(run: RunRecord) -> Mapping[str, float]:
    subs = run.subflows
    by_flow = subs.groupby("flow")["throughput_bps"].sum()
    names = list(run.flows["name"])
    out: dict[str, float] = {"mptcp_mbps": float(by_flow.get(0, 0.0)) / 1e6}
    if "tcpA" in names:
        out["tcp_a_mbps"] = float(by_flow.get(names.index("tcpA"), 0.0)) / 1e6
        out["tcp_b_mbps"] = float(by_flow.get(names.index("tcpB"), 0.0)) / 1e6
        mp = subs[subs["flow"] == 0].set_index("subflow")["throughput_bps"]
        best = max(out["tcp_a_mbps"], out["tcp_b_mbps"])
        # Goal 1: at least the better single TCP's share (x0.9); goal 2: no subflow above the
        # TCP on its link (ratio ≤ 1).
        out["goal1_ratio"] = out["mptcp_mbps"] / best if best > 0 else float("nan")
        out["goal2_ratio"] = max(
            float(mp.get(0, 0.0)) / 1e6 / out["tcp_a_mbps"],
            float(mp.get(1, 0.0)) / 1e6 / out["tcp_b_mbps"],
        )
    else:
        a, b = _slope(run.subflow_series, 0), _slope(run.subflow_series, 1)
        out["slope_ratio_a_to_b"] = a / b if b > 0 else float("nan")
    return out


def plot(data: ExperimentData) -> dict[str, Figure]:
    figs: dict[str, Figure] = {}
    fig = new_figure(figsize=(12, 4))
    axes = fig.subplots(1, 3, sharey=False)
    settings = SETTINGS_QUICK if data.quick else SETTINGS_FULL
    for ax, scen in zip(axes, CROSS, strict=True):
        labels = ("MPTCP sum", "TCP on A", "TCP on B")
        keys = ("mptcp_mbps", "tcp_a_mbps", "tcp_b_mbps")
        width = 0.8 / (2 + len(settings))
        ax.bar(
            [i - 0.4 + width / 2 for i in range(3)],
            PUBLISHED[scen],
            width,
            color="0.6",
            label="published",
        )
        for j, (arith, profile, layout) in enumerate(settings):
            vals = []
            header = LAYOUTS[layout][LAYOUT]
            for key in keys:
                rows = data.metric(key)
                sel = rows[
                    (rows[SCEN] == scen)
                    & (rows[ARITH] == arith)
                    & (rows[PROFILE] == profile)
                    & (rows[LAYOUT] == header)
                ]
                vals.append(float(sel["mean"].iloc[0]) if len(sel) else float("nan"))
            what = "" if layout == "paper" else f", emulator's packets, {JITTER} jitter"
            ax.bar(
                [i - 0.4 + (j + 1.5) * width for i in range(3)],
                vals,
                width,
                label=f"LIA {arith}, {profile} profile{what}",
            )
        ax.bar(
            [i - 0.4 + (len(settings) + 1.5) * width for i in range(3)],
            KERNEL[scen],
            width,
            color="0.2",
            label="kernel (pw_lia)",
        )
        ax.set_xticks(range(3), labels)
        ax.set_title(scen.upper(), loc="left")
        ax.set_ylabel("throughput (Mbit/s)")
        ax.legend(fontsize="small")
    fig.suptitle("LIA with Reno cross traffic: ours beside the paper's (Fig. 4-6) and the kernel's")
    figs["throughput"] = fig

    fig2 = new_figure(figsize=(12, 4))
    axes2 = fig2.subplots(1, 2)
    for ax, scen in zip(axes2, NOCROSS, strict=True):
        runs = [
            r
            for r in data.result.runs
            if r.params.get(SCEN) == scen
            and r.params.get(ARITH) == "spec"
            and r.params.get(PROFILE) == "default"
        ]
        if not runs:
            continue
        s = runs[0].subflow_series
        for k, name in ((0, "subflow on A"), (1, "subflow on B")):
            one = s[(s["flow"] == 0) & (s["subflow"] == k)]
            ax.plot(one["time_s"], one["cwnd_bytes"] / 1448.0, lw=0.8, label=name)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("cwnd (packets)")
        fig_no = (
            "Fig. 2: 10 vs 5 Mbps, equal delays"
            if "s2" in scen
            else "Fig. 3: equal rates, 50 vs 100 ms"
        )
        ax.set_title(fig_no, loc="left")
        ax.legend(fontsize="small")
    fig2.suptitle("LIA without cross traffic: cwnd slopes (spec arithmetic)")
    figs["cwnd-no-cross-traffic"] = fig2
    return figs


_DROPTAIL = (
    "drop-tail without any randomness: the overflow drop hits the flow whose window grows "
    "fastest, so the Reno flows (1 packet per RTT) lose far more often than LIA's subflows "
    "(about 1/4 packet per RTT); the paper's real Linux stack adds timing noise"
)


_PROFILE_NOTE = {
    "default": _DROPTAIL,
    "linux": "with the linux profile the simulator and the paper's Linux stack part: " + _CHAOS,
}


def _published() -> list[Published]:
    out: list[Published] = []
    for arith, profile, layout in SETTINGS_FULL:
        tag = f"LIA {arith}" + (", linux profile" if profile == "linux" else "")
        if layout == "kernel":
            # The kernel's figures, beside the simulator with the emulator's packets and the
            # kernel's timing noise, mean over seeds.
            for scen in CROSS:
                where = {SCEN: scen, ARITH: arith, PROFILE: profile, LAYOUT: "40B"}
                for metric, kernel, what in zip(
                    ("mptcp_mbps", "tcp_a_mbps", "tcp_b_mbps"),
                    KERNEL[scen],
                    ("MPTCP sum", "TCP on A", "TCP on B"),
                    strict=True,
                ):
                    out.append(
                        Published(
                            metric,
                            kernel,
                            Relative(KERNEL_TOLERANCE),
                            where=where,
                            label=f"{scen.upper()} {what}: the kernel's pw_lia, measured ({tag})",
                            reason=_KERNEL_GAP,
                        )
                    )
            continue
        for scen, (mp, a, b) in PUBLISHED.items():
            label = scen.upper()
            where = {SCEN: scen, ARITH: arith, PROFILE: profile, LAYOUT: "52B"}
            for metric, value, what in (
                ("mptcp_mbps", mp, "MPTCP sum"),
                ("tcp_a_mbps", a, "TCP on A"),
                ("tcp_b_mbps", b, "TCP on B"),
            ):
                out.append(
                    Published(
                        metric,
                        value,
                        Relative(TOLERANCE),
                        where=where,
                        label=f"{label} {what} ({tag})",
                        reason=_PROFILE_NOTE[profile],
                    )
                )
            out.append(
                Published(
                    "goal1_ratio",
                    1.0,
                    AtLeast(0.9),
                    where=where,
                    label=f"{label} goal 1: MPTCP ≥ 0.9 x better TCP ({tag})",
                )
            )
            out.append(
                Published(
                    "goal2_ratio",
                    1.0,
                    Between(0.0, 1.0),
                    where=where,
                    label=f"{label} goal 2: no subflow above its link's TCP ({tag})",
                    reason=_PROFILE_NOTE[profile],
                )
            )
        out.append(
            Published(
                "slope_ratio_a_to_b",
                2.0,
                AtLeast(1.3),
                where={SCEN: NOCROSS[0], ARITH: arith, PROFILE: profile, LAYOUT: "52B"},
                label=f"Fig. 2: the 10 Mbps subflow's cwnd grows faster ({tag})",
            )
        )
        out.append(
            Published(
                "slope_ratio_a_to_b",
                1.0,
                Between(0.75, 1.33),
                where={SCEN: NOCROSS[1], ARITH: arith, PROFILE: profile, LAYOUT: "52B"},
                label=f"Fig. 3: equal slopes despite 50 vs 100 ms ({tag})",
                reason=(
                    "the kernel's best-path choice underflows at these RTTs "
                    "(ALGORITHMS.md §1.3): with srtt in µs, w·2^32/srtt² truncates to 0 for "
                    "both paths, the last subflow is taken as best, and alpha no longer "
                    "compensates the RTT difference"
                )
                if arith == "linux"
                else None,
            )
        )
    return out


def _zipped(settings: tuple[tuple[str, str, str], ...], quick: bool) -> dict[str, list[str]]:
    """The sweep's zipped dimension: each setting's arithmetic, profile and packet layout, its
    jitter on both links, and in the quick form its duration (40 s for the paper's layout,
    the kernel runs' 85 s for the emulator's)."""
    out: dict[str, list[str]] = {ARITH: [], PROFILE: []}
    for arith, profile, layout in settings:
        out[ARITH].append(arith)
        out[PROFILE].append(profile)
        for key, value in LAYOUTS[layout].items():
            keys = ["link[0].jitter", "link[1].jitter"] if key == "jitter" else [key]
            for k in keys:
                out.setdefault(k, []).append(value)
        if quick:
            out.setdefault("duration", []).append("85s" if layout == "kernel" else "40s")
    return out


EXPERIMENT = Experiment(
    id="lia-two-links",
    title="LIA over two links with Reno cross traffic (Linux LIA paper, Fig. 1-6)",
    description=(
        "One LIA connection with a subflow on each of two links, each link shared with one Reno "
        "flow; three scenarios with cross traffic and two without. LIA is run with the "
        "real-valued RFC 6356 arithmetic and with the Linux kernel's fixed point, the simulator "
        'with its defaults and with profile = "linux", beside the real kernel\'s LIA (pw_lia) '
        "measured on the same scenarios."
    ),
    source=f"{papers.GONZALEZ_USACH_2012}, §4 (Fig. 1-6)",
    setup=(
        "S1: 5 and 5 Mbps, 50 ms one-way for all. S2: A 10 Mbps, B 5 Mbps, 50 ms. S3: 5 and "
        "5 Mbps, path A 50 ms, path B 100 ms. Drop-tail buffers of one BDP, 85 s (60 s without "
        "cross traffic). Chosen: 1448-byte segments, 52-byte headers, SACK, no delayed ACK. "
        "These runs are deterministic (no random element). Beside the kernel's figures the "
        "linux profile runs with the emulator's packets (1460-byte segments, 40-byte headers), "
        "85 s, and 50 us of jitter on every link (the kernel's timing noise, measured), as the "
        "mean over seeds. Throughput is the acknowledged payload rate at the sender."
    ),
    scenarios=FILES,
    sweep=Sweep(zipped=_zipped(SETTINGS_FULL, quick=False), seeds=SEEDS_FULL),
    quick=Sweep(zipped=_zipped(SETTINGS_QUICK, quick=True), seeds=SEEDS_QUICK),
    metrics=metrics,
    published=_published(),
    plot=plot,
)
