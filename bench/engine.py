"""Benchmark: the simulator engine's speed and memory on the scenarios of docs/performance.md.

It first prints the machine (processor, logical CPUs, caches, transparent huge page mode):
wall-clock figures compare only on the same machine. For each scenario it runs the Rust `run`
example (the simulator alone, no Python) and prints bottleneck packets per wall-clock second,
events per bottleneck packet, instructions per bottleneck packet (callgrind, when valgrind is
installed), and the simulator process's own peak RSS (read by the process itself from
/proc/self/status, so no parent's memory is counted). A
bare event-queue loop (the `queue_loop` example) runs in the same invocation, and each
scenario's events per second are shown as a fraction of it. Wall-clock figures are the best of
`--repeat` runs (the 20 s scaled 10,000-flow run is run once).

It then prints the scale comparison of the requirement "cost per bottleneck packet within 2x of
the 8-flow case": wall time per bottleneck packet of `scenarios/dumbbell.toml` (8 flows) against
`bench/scenarios/dumbbell-10k.toml` (10,000 flows on the same 60 Mbps bottleneck, 6 kbps each),
`bench/scenarios/dumbbell-10k-scaled.toml` (10,000 flows on a 10 Gbps bottleneck, 1 Mbps each),
`bench/scenarios/dumbbell-10k-dense.toml` (the same with the 8-flow dumbbell's narrow spread of
round-trip times, so that consecutive packets nearly always belong to different flows) and
`bench/scenarios/multipath-1k.toml`, with the ratio to the 8-flow case. The multipath
scenario's bottleneck packets are those of both its bottlenecks (each connection has a subflow
through each). The run's wall time excludes parsing; callgrind's instruction counts include it.
On a shared machine one run's wall time moves by tens of percent with the other jobs, and a
large run and the 8-flow run taken minutes apart see different disturbances. So each ratio is
measured in `--pairs` rounds, each an 8-flow run followed at once by the large run, and the
table gives the median of the rounds' ratios with their range, beside the median µs per packet
of each side.

`--curve` adds the cost per packet against the number of flows with everything else held
per flow: the dense dumbbell at 8, 100, 1,000, 3,000 and 10,000 flows, each flow 1 Mbit/s of a
bottleneck of as many Mbit/s, the RED buffer scaled with the rate (never below the 8-flow
dumbbell's 50 packets and thresholds of 5 and 15), the receivers' delays over the 8-flow
dumbbell's 0-2.7 ms and the flows starting over the first second; each point runs long enough
for about 2.3 M bottleneck packets, and its ratio is to the 8-flow point in paired rounds. The
10,000-flow point is `bench/scenarios/dumbbell-10k-dense.toml` itself. Beside it the `mem_latency`
example's dependent-read time by buffer size shows how much of the last-level cache this
process gets (on a shared virtual machine, often a fraction of what the processor reports).

    python bench/engine.py [--no-callgrind] [--quick] [--long] [--curve] [--repeat N]
                           [--pairs N] [--binary RUN] [--json OUT]

`--quick` leaves out the long and large runs (64 flows for 1000 s, 10,000 flows, 1,000
multipath connections) and so the scale comparison. `--long` adds the scaled 10,000-flow
dumbbell for the requirement's full 100 s (about a minute and a half), whose peak RSS is the
one the 1 GB bound applies to. `--binary` measures a saved copy of the `run` example (an
earlier build, say) instead of building the current tree's, so that two builds are measured
by the same method; the bare loop is then still the current tree's.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "target" / "release" / "examples" / "run"
LOOP = ROOT / "target" / "release" / "examples" / "queue_loop"
PROBE = ROOT / "target" / "release" / "examples" / "mem_latency"
SCENARIOS = ROOT / "bench" / "scenarios"


def machine(
    cpuinfo: Path = Path("/proc/cpuinfo"),
    cpus: Path = Path("/sys/devices/system/cpu"),
    thp: Path = Path("/sys/kernel/mm/transparent_hugepage/enabled"),
) -> dict[str, str]:
    """What the figures were measured on: the processor's model name, the logical CPUs, the
    first CPU's caches by level (``L1d``, ``L1i``, ``L2``, ``L3``) and the transparent huge
    page mode, each ``"unknown"`` where the file is missing. Wall-clock figures are only
    comparable on the same machine: the same build runs the 10,000-flow dumbbells at
    different ratios to the 8-flow one on an Intel Xeon and an AMD EPYC virtual machine."""

    def read(p: Path) -> str | None:
        try:
            return p.read_text()
        except OSError:
            return None

    info = read(cpuinfo) or ""
    models = re.findall(r"(?m)^model name\s*:\s*(.+)$", info)
    caches = []
    for index in sorted((cpus / "cpu0" / "cache").glob("index*")):
        level, kind, size = (read(index / f) for f in ("level", "type", "size"))
        if level and kind and size:
            suffix = {"Data": "d", "Instruction": "i"}.get(kind.strip(), "")
            caches.append(f"L{level.strip()}{suffix} {size.strip()}")
    mode = re.search(r"\[(\w+)\]", read(thp) or "")
    return {
        "cpu": models[0].strip() if models else "unknown",
        "logical_cpus": str(len(models)) if models else "unknown",
        "caches": ", ".join(caches) if caches else "unknown",
        "transparent_huge_pages": mode.group(1) if mode else "unknown",
    }


def build() -> None:
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "pathweave-sim", "--examples"],
        cwd=ROOT,
        check=True,
    )


def dumbbell_text(flows: int, duration_s: float) -> str:
    sys.path.insert(0, str(ROOT))
    from bench.dumbbell import scenario_text

    return scenario_text(flows, duration_s)


# Labels of the rows the scale comparison reads.
EIGHT = "scenarios/dumbbell.toml (RED), 8 flows, 100 s"
TEN_K = "10,000 flows, 60 Mbps (6 kbps each), 100 s"
TEN_K_SCALED = "10,000 flows, 10 Gbps (1 Mbps each), 20 s"
TEN_K_SCALED_LONG = "10,000 flows, 10 Gbps (1 Mbps each), 100 s"
TEN_K_DENSE = "10,000 flows, 10 Gbps, RTTs within 3 ms, 5 s"
MULTIPATH = "1,000 multipath connections, 100 s"
# The multipath scenario's connections put half their packets through each of its two
# bottlenecks, so its bottleneck packets are both links' (every packet of the dumbbells crosses
# their one bottleneck).
MULTIPATH_BOTTLENECKS = "bottleneck,bottleneck2"


def cases(quick: bool, long: bool = False) -> list[tuple[str, str, bool, bool]]:
    """(label, scenario text, measure instructions, repeat the wall-clock run). Bottleneck
    packets are the link named "bottleneck"'s unless `BOTTLENECKS` names others."""
    out = [
        (
            "drop-tail NewReno, 8 flows, 100 s",
            (SCENARIOS / "dumbbell-droptail.toml").read_text(),
            True,
            True,
        ),
        (EIGHT, (ROOT / "scenarios" / "dumbbell.toml").read_text(), True, True),
        ("dumbbell RED+SACK, 8 flows, 100 s", dumbbell_text(8, 100), True, True),
        ("dumbbell RED+SACK, 64 flows, 100 s", dumbbell_text(64, 100), False, True),
    ]
    if not quick:
        out += [
            ("dumbbell RED+SACK, 64 flows, 1000 s", dumbbell_text(64, 1000), False, False),
            (TEN_K, (SCENARIOS / "dumbbell-10k.toml").read_text(), True, True),
            # About a minute per run, and an hour under callgrind.
            (
                TEN_K_SCALED,
                (SCENARIOS / "dumbbell-10k-scaled.toml").read_text(),
                False,
                False,
            ),
            (TEN_K_DENSE, (SCENARIOS / "dumbbell-10k-dense.toml").read_text(), False, True),
            (MULTIPATH, (SCENARIOS / "multipath-1k.toml").read_text(), False, True),
        ]
    if long:
        scaled = (SCENARIOS / "dumbbell-10k-scaled.toml").read_text()
        long_text = re.sub(r'(?m)^duration = "[^"]*"$', 'duration = "100s"', scaled)
        out.append((TEN_K_SCALED_LONG, long_text, False, False))
    return out


# Flow counts of the `--curve` ladder; the last is the dense 10,000-flow dumbbell.
CURVE_FLOWS = (8, 100, 1000, 3000, 10000)
# Bottleneck packets each curve point runs for, at least (its duration follows from its rate).
CURVE_PACKETS = 2_300_000
# Bits of a data packet on the wire (1000 B payload, 40 B headers), to size the durations.
CURVE_PACKET_BITS = 8320


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(
            f"bench/scenarios/dumbbell-10k-dense.toml: expected {old!r} exactly once, "
            f"found it {text.count(old)} times (the curve is derived from that file)"
        )
    return text.replace(old, new)


def curve_text(flows: int) -> str:
    """The dense dumbbell with `flows` flows and the per-flow shape held: 1 Mbit/s of
    bottleneck per flow, the RED buffer and thresholds scaled with the rate from the
    10,000-flow file's (at 10 Gbit/s: 8,300 packets, 830 and 2,500) but never below the 8-flow
    dumbbell's (50, 5, 15), the n-th receiver's delay n * 8 / (3 * flows) ms (0-2.7 ms at any
    size) and the starts spread over the first second."""
    if flows < 1:
        raise ValueError(f"flows must be at least 1, got {flows}")
    text = (SCENARIOS / "dumbbell-10k-dense.toml").read_text()
    scale = flows / 10_000
    limit = max(round(8300 * scale), 50)
    min_th, max_th = max(830 * scale, 5), max(2500 * scale, 15)
    rate = f"{flows // 1000}Gbps" if flows % 1000 == 0 else f"{flows}Mbps"
    seconds = max(5, -(-CURVE_PACKETS * CURVE_PACKET_BITS // (flows * 1_000_000)))
    text = _replace_once(text, 'name = "dumbbell-10k-dense"', f'name = "dumbbell-curve-{flows}"')
    text = _replace_once(
        text,
        'description = "10,000 Reno flows over a 10 Gbps RED bottleneck, RTTs within 3 ms of each '
        'other"',
        f'description = "{flows:,} Reno flows at 1 Mbps each over a RED bottleneck, RTTs within '
        f'3 ms of each other"',
    )
    text = _replace_once(text, 'rate = "10Gbps"', f'rate = "{rate}"')
    text = _replace_once(
        text,
        'limit = "8300pkt", min_th = 830, max_th = 2500',
        f'limit = "{limit}pkt", min_th = {min_th:g}, max_th = {max_th:g}',
    )
    text = _replace_once(text, 'duration = "5s"', f'duration = "{seconds}s"')
    text = _replace_once(text, "{n}*8/30000 ms", f"{{n}}*8/{3 * flows} ms")
    text = _replace_once(text, 'start = "{i}/10 ms"', f'start = "{{i}}/{flows / 1000:g} ms"')
    return text.replace("count = 10000", f"count = {flows}")


def memory_probe(sizes_mb: tuple[int, ...] = (2, 4, 8, 16, 32, 64)) -> list[dict]:
    """Dependent-read time (one chain: the latency) and the time per read of 16 chains (the
    throughput) over buffers of `sizes_mb`, from the `mem_latency` example with huge pages."""
    out = []
    for mb in sizes_mb:
        res = subprocess.run(
            [str(PROBE), "--huge", str(mb), "2000000"], capture_output=True, text=True, check=True
        )
        by_chains = {
            r["chains"]: r["ns_per_read"] for r in map(json.loads, res.stdout.splitlines())
        }
        out.append({"megabytes": mb, "latency_ns": by_chains[1], "ns_per_read_16": by_chains[16]})
    return out


def curve(tmp: Path, pairs: int) -> list[dict]:
    """The `--curve` ladder: each point's µs per bottleneck packet against the 8-flow point's
    in `pairs` paired rounds."""
    paths = {}
    for n in CURVE_FLOWS:
        paths[n] = tmp / f"curve{n}.toml"
        paths[n].write_text(curve_text(n))
    ref = paths[CURVE_FLOWS[0]]
    rows = []
    for n in CURVE_FLOWS:
        m = paired(ref, paths[n], "bottleneck", pairs)
        r = m["last_run"]
        rows.append(
            {
                "flows": n,
                "bottleneck_packets": r["bottleneck_packets"],
                "events_per_packet": r["events"] / r["bottleneck_packets"],
                "peak_rss_mb": r["peak_rss_kb"] / 1024,
                **ratio_summary(m),
            }
        )
    return rows


BOTTLENECKS = {MULTIPATH: MULTIPATH_BOTTLENECKS}
# The large runs compared with the 8-flow dumbbell.
SCALE = (TEN_K, TEN_K_SCALED, TEN_K_SCALED_LONG, TEN_K_DENSE, MULTIPATH)


def run(path: Path, links: str) -> dict:
    out = subprocess.run(
        [str(RUN), str(path), "--json", "--link", links],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def best_run(path: Path, links: str, repeat: int) -> dict:
    """The run with the least wall time of `repeat` (the results are identical)."""
    return min((run(path, links) for _ in range(max(repeat, 1))), key=lambda r: r["wall_s"])


def us_per_packet(r: dict) -> float:
    return r["wall_s"] / r["bottleneck_packets"] * 1e6


def paired(ref: Path, big: Path, links: str, pairs: int) -> dict:
    """`pairs` rounds of the 8-flow run `ref` followed by the large run `big`: each round's
    ratio compares two runs taken seconds apart, which share the machine's disturbances."""
    ref_us, big_us, ratios = [], [], []
    last = {}
    for _ in range(max(pairs, 1)):
        a = us_per_packet(run(ref, "bottleneck"))
        last = run(big, links)
        b = us_per_packet(last)
        ref_us.append(a)
        big_us.append(b)
        ratios.append(b / a)
    return {
        "ref_us_per_packet": ref_us,
        "wall_us_per_packet_runs": big_us,
        "ratios": ratios,
        "last_run": last,
    }


def ratio_summary(m: dict) -> dict:
    """The medians and range of the paired rounds `m` (from `paired`)."""
    return {
        "ref_us_per_packet": statistics.median(m["ref_us_per_packet"]),
        "wall_us_per_packet": statistics.median(m["wall_us_per_packet_runs"]),
        "ratio_to_8_flows": statistics.median(m["ratios"]),
        "ratio_min": min(m["ratios"]),
        "ratio_max": max(m["ratios"]),
        "pairs": len(m["ratios"]),
    }


def scale_rows(rows: list[dict], measured: dict[str, dict]) -> list[dict]:
    """Wall time per bottleneck packet of the large runs against the 8-flow dumbbell, from
    the paired rounds of `measured` (by scenario label)."""
    by = {r["scenario"]: r for r in rows}
    out = []
    for label in (TEN_K, TEN_K_SCALED, TEN_K_SCALED_LONG, TEN_K_DENSE, MULTIPATH):
        r, m = by.get(label), measured.get(label)
        if r is None or m is None:
            continue
        out.append(
            {
                "scenario": label,
                "bottleneck_packets": r["bottleneck_packets"],
                **ratio_summary(m),
                "events_per_packet": r["events_per_packet"],
                "instructions_per_packet": r["instructions_per_packet"],
            }
        )
    return out


def callgrind(path: Path, extra: tuple[str, ...] = ()) -> tuple[int | None, str]:
    """Instructions executed by the whole run of `path` under callgrind (None if callgrind
    printed no count), with the `run` example's further arguments ``extra``, and the run's
    standard output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/cg.out",
                str(RUN),
                str(path),
                "--json",
                *extra,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    m = re.search(r"Collected : (\d+)", out.stderr)
    return (int(m.group(1)) if m else None), out.stdout


def instructions(path: Path, extra: tuple[str, ...] = ()) -> int | None:
    """Instructions executed by the whole run under callgrind (with the `run` example's
    further arguments ``extra``); None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    return callgrind(path, extra)[0]


def bare_loop() -> float:
    out = subprocess.run([str(LOOP), "40", "20000000"], capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["events_per_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument("--quick", action="store_true", help="leave out the long and large runs")
    ap.add_argument(
        "--long", action="store_true", help="add the scaled 10,000-flow dumbbell for 100 s"
    )
    ap.add_argument(
        "--curve",
        action="store_true",
        help="add the cost per packet against the number of flows, 8 to 10,000",
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="wall-clock runs per scenario (best is kept)"
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=3,
        help="rounds of an 8-flow run and a large run for each scale ratio (median kept)",
    )
    ap.add_argument(
        "--binary",
        type=Path,
        help="measure this copy of the run example instead of the current tree's build",
    )
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.pairs < 1:
        ap.error(f"--repeat and --pairs must be at least 1, got {args.repeat} and {args.pairs}")
    if args.binary is not None and not args.binary.is_file():
        ap.error(f"--binary {args.binary}: no such file (give a copy of the run example)")

    build()
    if args.binary is not None:
        global RUN
        RUN = args.binary.resolve()
    host = machine()
    print(
        f"machine: {host['cpu']}, {host['logical_cpus']} logical CPUs, caches "
        f"{host['caches']}, transparent huge pages {host['transparent_huge_pages']}"
    )
    baseline = bare_loop()
    print(f"bare event-queue loop (40 components): {baseline / 1e6:.1f} M events/s")
    header = (
        f"{'scenario':<46} {'bn packets':>11} {'M pkt/s':>8} {'ev/pkt':>7} "
        f"{'instr/pkt':>10} {'peak RSS':>9} {'of loop':>8}"
    )
    print(header)
    rows = []
    measured: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp) / "eight.toml"
        ref.write_text((ROOT / "scenarios" / "dumbbell.toml").read_text())
        for k, (label, text, count, again) in enumerate(cases(args.quick, args.long)):
            path = Path(tmp) / f"case{k}.toml"
            path.write_text(text)
            links = BOTTLENECKS.get(label, "bottleneck")
            r = best_run(path, links, args.repeat if again else 1)
            if label in SCALE:
                measured[label] = paired(ref, path, links, args.pairs)
            pkts = r["bottleneck_packets"]
            ir = instructions(path) if count and not args.no_callgrind else None
            row = {
                "scenario": label,
                "bottleneck_packets": pkts,
                "packets_per_s": pkts / r["wall_s"],
                "wall_us_per_packet": r["wall_s"] / pkts * 1e6,
                "events_per_packet": r["events"] / pkts,
                "instructions_per_packet": ir / pkts if ir else None,
                "peak_rss_mb": r["peak_rss_kb"] / 1024,
                "events_per_s_of_bare_loop": r["events"] / r["wall_s"] / baseline,
            }
            rows.append(row)
            ipp = f"{row['instructions_per_packet']:,.0f}" if ir else "—"
            print(
                f"{label:<46} {pkts:>11,} {row['packets_per_s'] / 1e6:>8.2f} "
                f"{row['events_per_packet']:>7.2f} {ipp:>10} {row['peak_rss_mb']:>6.1f} MB "
                f"{row['events_per_s_of_bare_loop']:>7.1%}"
            )
    scale = scale_rows(rows, measured)
    if scale:
        print()
        print(
            "scale: wall time per bottleneck packet against the 8-flow dumbbell "
            f"(target: 2x), median of {args.pairs} paired rounds"
        )
        print(
            f"{'scenario':<46} {'bn packets':>11} {'8-flow µs':>9} {'µs/pkt':>7} "
            f"{'ratio':>6} {'range':>11} {'ev/pkt':>7} {'instr/pkt':>10}"
        )
        for s in scale:
            ipp = s["instructions_per_packet"]
            ipp_text = f"{ipp:,.0f}" if ipp else "—"
            span = f"{s['ratio_min']:.2f}-{s['ratio_max']:.2f}"
            print(
                f"{s['scenario']:<46} {s['bottleneck_packets']:>11,} "
                f"{s['ref_us_per_packet']:>9.3f} {s['wall_us_per_packet']:>7.3f} "
                f"{s['ratio_to_8_flows']:>5.2f}x {span:>11} "
                f"{s['events_per_packet']:>7.2f} {ipp_text:>10}"
            )
    ladder: list[dict] = []
    probe: list[dict] = []
    if args.curve:
        probe = memory_probe()
        print()
        print("memory: one dependent read (latency) and 16 chains (time per read), huge pages")
        print(
            "  "
            + "  ".join(
                f"{p['megabytes']} MB {p['latency_ns']:.0f}/{p['ns_per_read_16']:.1f} ns"
                for p in probe
            )
        )
        print()
        print(
            "curve: the dense dumbbell at 1 Mbps per flow, wall time per bottleneck packet "
            f"against its 8-flow point, median of {args.pairs} paired rounds"
        )
        print(
            f"{'flows':>6} {'bn packets':>11} {'µs/pkt':>7} {'ratio':>6} {'range':>11} "
            f"{'ev/pkt':>7} {'peak RSS':>9}"
        )
        with tempfile.TemporaryDirectory() as tmp:
            ladder = curve(Path(tmp), args.pairs)
        for c in ladder:
            span = f"{c['ratio_min']:.2f}-{c['ratio_max']:.2f}"
            print(
                f"{c['flows']:>6,} {c['bottleneck_packets']:>11,} {c['wall_us_per_packet']:>7.3f} "
                f"{c['ratio_to_8_flows']:>5.2f}x {span:>11} {c['events_per_packet']:>7.2f} "
                f"{c['peak_rss_mb']:>6.1f} MB"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "machine": host,
                    "bare_loop_events_per_s": baseline,
                    "rows": rows,
                    "scale": scale,
                    "memory_probe": probe,
                    "curve": ladder,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
