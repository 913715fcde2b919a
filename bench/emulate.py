"""Benchmark: how many packets one emulator core carries through one link, and how late.

For each link rate, one UDP constant-rate flow of 1500-byte datagrams at 98 % of the rate
crosses one emulated link (5 ms, drop-tail, 20,000 packets) for a few seconds of real time.
The queue is deep because the sending thread is bursty (when it gets the CPU late it sends the
datagrams it owes back to back) and at 98 % load a backlog drains at only 2 % of the rate:
with 1000 packets, a few per cent of the datagrams overflowed at 1-2 Gbit/s while the
emulator read every packet within 0.1 ms; with 20,000, none. The emulator's own
figures are printed: packets forwarded per second, the release lateness percentiles (release
time minus the time the link model planned), and its drops. The highest rate whose p99
lateness stays within 0.2 ms with no packet dropped for want of the emulator (in its buffers
or in the TUN devices' queues) is the emulator's real-time capacity on this machine.

    python bench/emulate.py [--rates 10 100 1000 1500 1900] [--seconds 4] [--trace]
                            [--json OUT]

With `--trace`, each link's capacity is a trace in Mahimahi's format instead of a constant
rate: n delivery opportunities of 1504 bytes every millisecond, n the nearest whole number to
the rate over 12.032 Mbit/s (one opportunity per millisecond), so the trace's rate is a
multiple of 12.032 Mbit/s near the one asked for. It measures the packets per second a
trace-driven link carries in real time, and the lateness, against the constant-rate link's.

Needs root, /dev/net/tun and iproute2 (as `pathweave emulate` does). The numbers come from
the emulator's lateness histogram, not from a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

P99_TARGET_MS = 0.2
SIZE = 1500


# Mahimahi's delivery opportunity (`PACKET_SIZE` in its link_queue.cc): one a millisecond is
# 12.032 Mbit/s.
OPPORTUNITY_MBPS = 1504 * 8 / 1e3


def trace_rate_mbps(rate_mbps: float) -> float:
    """The rate of the constant trace that stands for ``rate_mbps`` (see the module's notes)."""
    return max(1, round(rate_mbps / OPPORTUNITY_MBPS)) * OPPORTUNITY_MBPS


def trace_text(rate_mbps: float) -> str:
    """One second of a constant trace at ``trace_rate_mbps(rate_mbps)``."""
    per_ms = round(trace_rate_mbps(rate_mbps) / OPPORTUNITY_MBPS)
    return "".join(f"{ms}\n" * per_ms for ms in range(1, 1001))


def scenario_text(rate_mbps: float, seconds: float, trace: bool = False) -> str:
    capacity = '{ trace = "bench.trace" }' if trace else f'"{rate_mbps}Mbps"'
    return f"""
name = "emulate-bench-{rate_mbps:g}"
duration = "{seconds}s"
sample_interval = "500ms"
[[link]]
name = "l"
rate = {capacity}
delay = "5ms"
queue = {{ type = "droptail", limit = "20000pkt" }}
[[flow]]
name = "udp"
path = ["l"]
traffic = {{ type = "cbr", rate = "{0.98 * rate_mbps:g}Mbps", size = "{SIZE}B" }}
"""


def measure(rate_mbps: float, seconds: float, trace: bool = False) -> dict[str, float | int | bool]:
    from pathweave.emulate import emulate

    if trace:
        rate_mbps = trace_rate_mbps(rate_mbps)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text(scenario_text(rate_mbps, seconds, trace))
        if trace:
            (Path(tmp) / "bench.trace").write_text(trace_text(rate_mbps))
        res = emulate(path, max_load_bps=int(10e9))
    e = res.emulation
    lat = e["lateness"]
    fwd = res.links.iloc[0]
    return {
        "rate_mbps": rate_mbps,
        "packets_per_s": float(fwd["delivered_packets"]) / seconds,
        "offered_per_s": float(res.flows["packets_sent"][0]) / seconds,
        "p50_ms": lat["p50_ms"],
        "p99_ms": lat["p99_ms"],
        "p999_ms": lat["p999_ms"],
        "max_ms": lat["max_ms"],
        "intake_p99_ms": e["intake_wait"]["p99_ms"],
        "emulator_drops": e["emulator_drops"],
        # Overflow of the link's queue: the model's answer to bursts in what it was offered
        # (the intake wait shows whether the emulator read them late).
        "queue_drops": int(fwd["drops_overflow"]),
        "device_drops": e["device_drops"],
        "realtime": e["realtime_priority"],
        # The link thread's CPU time per packet read, in µs, and the packets one core would
        # carry per second at that cost. It includes the receiving stack's processing of each
        # packet the thread writes to a device, its sleeps and wake-ups, and polling.
        "cpu_us_per_packet": 1e6 * e["link_thread_cpu_s"] / max(1, e["packets_read"]),
        "core_packets_per_s": e["packets_read"] / max(1e-9, e["link_thread_cpu_s"]),
        "cpu_share": e["link_thread_cpu_s"] / seconds,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[10, 100, 1000, 1500, 1900])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument(
        "--trace", action="store_true", help="links driven by a constant Mahimahi trace"
    )
    ap.add_argument("--json", type=Path, metavar="OUT")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/emulate.py: needs root (network namespaces, TUN devices)", file=sys.stderr)
        return 2
    print(
        f"# {time.strftime('%Y-%m-%d')} {platform.node()} {os.cpu_count()} CPUs, "
        f"{platform.release()}; {SIZE}-byte datagrams at 98 % of the link rate"
        + ("; links driven by a constant trace" if args.trace else "")
    )
    header = (
        f"{'link Mbit/s':>11} {'offered pkt/s':>13} {'carried pkt/s':>13} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'p99.9 ms':>9} {'max ms':>8} {'intake p99':>10} {'emu drops':>9} "
        f"{'dev drops':>9} {'queue drops':>11} {'CPU us/pkt':>10} {'pkt/core-s':>10} "
        f"{'thread CPU':>10}"
    )
    print(header)
    rows = []
    for rate in args.rates:
        r = measure(rate, args.seconds, args.trace)
        rows.append(r)
        print(
            f"{r['rate_mbps']:>11g} {r['offered_per_s']:>13,.0f} {r['packets_per_s']:>13,.0f} "
            f"{r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} {r['p999_ms']:>9.3f} {r['max_ms']:>8.3f} "
            f"{r['intake_p99_ms']:>10.3f} {r['emulator_drops']:>9} {r['device_drops']:>9} "
            f"{r['queue_drops']:>11} "
            f"{r['cpu_us_per_packet']:>10.2f} {r['core_packets_per_s']:>10,.0f} "
            f"{100 * float(r['cpu_share']):>9.0f}%"
        )
    # Real time kept: p99 lateness and p99 intake wait within the target and no packet lost
    # because the emulator lagged (neither in its own buffers nor in the TUN devices' queues).
    ok = [
        r
        for r in rows
        if float(r["p99_ms"]) <= P99_TARGET_MS
        and float(r["intake_p99_ms"]) <= P99_TARGET_MS
        and not r["emulator_drops"]
        and not r["device_drops"]
    ]
    if ok:
        best = max(ok, key=lambda r: float(r["packets_per_s"]))
        print(
            f"capacity: {best['packets_per_s']:,.0f} pkt/s "
            f"({float(best['packets_per_s']) * SIZE * 8 / 1e9:.2f} Gbit/s of {SIZE}-byte packets)"
            f" with p99 lateness and intake wait <= {P99_TARGET_MS} ms"
        )
    else:
        print(f"capacity: no rate kept p99 lateness within {P99_TARGET_MS} ms")
    # What one emulator core could carry if it had the core to itself: the link thread's
    # packets per CPU-second at the highest rate measured (where polling without sleeping,
    # a fixed cost, weighs least). On a machine whose traffic sources and sinks share the
    # cores, this and the real-time capacity above differ.
    top = max(rows, key=lambda r: float(r["packets_per_s"]))
    print(
        f"link thread: {top['cpu_us_per_packet']:.2f} us of CPU per packet at "
        f"{top['rate_mbps']:g} Mbit/s, {top['core_packets_per_s']:,.0f} packets per CPU-second"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
