"""Benchmark: generated datacenter fabrics, from reading them to running them packet by packet.

Prints, in this order:

* the wall time to parse and build a FatTree scenario with permutation traffic (k = 32 by
  default: 8,192 hosts, 24,576 links, 8,192 flows; target: under a second);
* the packet-level runs: FatTree permutations (k = 8: 128 hosts; k = 16: 1,024 hosts and 8,192
  subflows) of LIA connections with 8 subflows each, every link 1 Gbit/s, 1 s of simulated
  time, run by the Rust `run` example (the simulator alone, no Python): wall time, link
  packets per wall-clock second, peak memory (the child process's own peak resident set,
  `VmHWM`, which it reports itself: the `ru_maxrss` that wait4 returns for a child started
  from this interpreter also counts the interpreter's pages at the fork), and the cost
  per link packet against the 8-flow drop-tail dumbbell (`bench/scenarios/dumbbell-droptail.toml`,
  100 s), whose packets are counted the same way (target: within 2x at k = 16);
* instructions per link packet (callgrind, where valgrind is installed), FatTree against
  dumbbell;
* the time of ``pathweave.datacenter.reference`` on a FatTree permutation with 8 subflows per
  connection (k = 8: 128 connections; k = 16: 1,024, whose hashed subflows' reference takes
  one linear program of about 14 s of CPU), and of its multipath optimum alone.

A *link packet* is one packet delivered by one link direction, data or ACK: a packet that
crosses six links (a FatTree route between pods) counts six times, one that crosses the
dumbbell's access link and bottleneck twice. It is the unit of work of the engine (each is
one event), so the cost per link packet compares fabrics and dumbbells whose routes differ in
length. The runs also report the packets of the host links alone (both directions of each
host's link, `host_link_packets`) and every event.

The cost ratio comes from paired rounds, as in bench/engine.py: each round runs the dumbbell
and then the FatTree at once, so both see the same load of the shared machine, and the table
gives the median of the rounds' ratios with their range. Both wall time and CPU time (the
run's own thread's time on a CPU, from Linux's schedstat) are given per link packet; the CPU
time leaves out the time the process waited for a CPU that another held, not the caches the
other processes took.

Instructions per link packet are marginal: the instructions of a run of `2T` less those of
a run of `T`, over the link packets of the second half (the FatTree: T = 0.05 s; the
dumbbell: T = 50 s), so neither parsing and building nor slow start is in them.

    python bench/datacenter.py [--quick] [--k 32] [--sizes 8 16] [--duration 1]
                               [--rounds N] [--no-callgrind] [--callgrind-k 8]
                               [--no-reference] [--reference-k 8 16] [--json OUT]

`--quick` runs the packet-level FatTrees for 0.1 s of simulated time, one round each, and
leaves out callgrind and the reference (under a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "target" / "release" / "examples" / "run"
DUMBBELL = ROOT / "bench" / "scenarios" / "dumbbell-droptail.toml"
# The target at k = 16: cost per link packet within this factor of the 8-flow dumbbell's.
TARGET_RATIO = 2.0


def fat_tree(
    k: int, subflows: int, duration_s: float = 1.0, link_rate: str = "1Gbps", seed: int = 1
) -> str:
    """A FatTree of `k`-port switches under permutation traffic: LIA connections of
    `subflows` ECMP-hashed subflows, every link at `link_rate` (10 µs, 100-packet drop-tail
    queues), no time series."""
    return f"""
name = "fat-tree-k{k}-permutation"
duration = "{duration_s:g}s"
seed = {seed}
series = false
[topology]
type = "fat-tree"
k = {k}
link_rate = "{link_rate}"
[traffic]
pattern = "permutation"
algorithm = "lia"
subflows = {subflows}
"""


def build() -> None:
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "pathweave-sim", "--example", "run"],
        cwd=ROOT,
        check=True,
    )


def parse_time(k: int, subflows: int, repeats: int = 3) -> float:
    import pathweave

    text = fat_tree(k, subflows)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        pathweave.parse(text)
        best = min(best, time.perf_counter() - t0)
    return best


def run_child(path: Path) -> dict:
    """Run scenario `path` with the `run` example in a child process: its JSON (with its own
    peak RSS, `peak_rss_kb`), and the `ru_maxrss` wait4 returns for it as `maxrss_kb` (KiB;
    at least the interpreter's resident set at the fork)."""
    with open(os.devnull, "rb") as devnull:
        proc = subprocess.Popen(
            [str(RUN), str(path), "--json"],
            stdin=devnull,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stderr is not None
        with proc.stdout, proc.stderr:
            out = proc.stdout.read()
            err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{path}: the run failed: {err.decode()}")
    res = json.loads(out)
    res["maxrss_kb"] = usage.ru_maxrss
    return res


def per_packet(r: dict, clock: str) -> float:
    """µs of `clock` ("wall_s" or "cpu_s") per link packet of run `r`, NaN without it."""
    t = r.get(clock)
    return float("nan") if t is None else t / r["link_packets"] * 1e6


def paired(ref: Path, big: Path, rounds: int) -> dict:
    """`rounds` rounds of the dumbbell `ref` followed at once by the run `big`: each round's
    ratios (wall and CPU time per link packet) compare two runs that share the machine's
    load. The last run of `big` is kept whole."""
    out: dict = {"ref_wall_us": [], "ref_cpu_us": [], "wall_us": [], "cpu_us": []}
    last: dict = {}
    for _ in range(max(rounds, 1)):
        a = run_child(ref)
        last = run_child(big)
        out["ref_wall_us"].append(per_packet(a, "wall_s"))
        out["ref_cpu_us"].append(per_packet(a, "cpu_s"))
        out["wall_us"].append(per_packet(last, "wall_s"))
        out["cpu_us"].append(per_packet(last, "cpu_s"))
    out["wall_ratios"] = [b / a for a, b in zip(out["ref_wall_us"], out["wall_us"], strict=True)]
    out["cpu_ratios"] = [b / a for a, b in zip(out["ref_cpu_us"], out["cpu_us"], strict=True)]
    out["last_run"] = last
    return out


def summary(m: dict) -> dict:
    """Medians and ranges of the paired rounds `m` (from `paired`)."""
    r = m["last_run"]
    return {
        "link_packets": r["link_packets"],
        "host_link_packets": r["host_link_packets"],
        "events": r["events"],
        "wall_s": r["wall_s"],
        "cpu_s": r["cpu_s"],
        "peak_rss_mb": r["peak_rss_kb"] / 1024,
        "ru_maxrss_mb": r["maxrss_kb"] / 1024,
        "link_packets_per_s": r["link_packets"] / r["wall_s"],
        "wall_us_per_packet": statistics.median(m["wall_us"]),
        "cpu_us_per_packet": statistics.median(m["cpu_us"]),
        "ref_wall_us_per_packet": statistics.median(m["ref_wall_us"]),
        "ref_cpu_us_per_packet": statistics.median(m["ref_cpu_us"]),
        "wall_ratio": statistics.median(m["wall_ratios"]),
        "wall_ratio_range": [min(m["wall_ratios"]), max(m["wall_ratios"])],
        "cpu_ratio": statistics.median(m["cpu_ratios"]),
        "cpu_ratio_range": [min(m["cpu_ratios"]), max(m["cpu_ratios"])],
        "rounds": len(m["wall_ratios"]),
    }


def instructions(path: Path) -> tuple[int, int]:
    """Callgrind's instruction count for a run of `path`, and its link packets."""
    from bench.engine import callgrind

    count, stdout = callgrind(path)
    if count is None:
        raise RuntimeError(f"callgrind printed no instruction count for {path}")
    return count, json.loads(stdout)["link_packets"]


def marginal_instructions(text_of, short: float, tmp: Path, label: str) -> dict:
    """Instructions per link packet between simulated times `short` and `2 * short`:
    `text_of(duration)` gives the scenario."""
    counts = []
    for d in (short, 2 * short):
        path = tmp / f"{label}-{d:g}.toml"
        path.write_text(text_of(d))
        counts.append(instructions(path))
    (i1, p1), (i2, p2) = counts
    return {
        "from_s": short,
        "to_s": 2 * short,
        "instructions": i2 - i1,
        "link_packets": p2 - p1,
        "per_link_packet": (i2 - i1) / (p2 - p1),
        "whole_run_per_link_packet": i2 / p2,
    }


def dumbbell_text(duration_s: float) -> str:
    text = DUMBBELL.read_text()
    return re.sub(r'(?m)^duration = "[^"]*"$', f'duration = "{duration_s:g}s"', text)


def reference_times(ks: list[int], subflows: int) -> list[dict]:
    """Print and return the time of ``reference`` and of its multipath optimum alone on the
    FatTree permutations of ``ks``."""
    import pathweave
    from pathweave.datacenter import equal_cost_routes, multipath_optimum, reference

    out = []
    for k in ks:
        sc = pathweave.parse(fat_tree(k, subflows))
        t0 = time.perf_counter()
        multipath_optimum(sc)
        optimum_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = reference(sc)
        took = time.perf_counter() - t0
        routes = equal_cost_routes(sc)
        print(
            f"reference, fat-tree k={k}, {len(res.flows):,} connections x {subflows} "
            f"subflows: {took:.2f} s (multipath optimum alone, {routes:,} routes: "
            f"{optimum_s:.2f} s; mean rates, Mbit/s: single path "
            f"{res.single_path_bps.mean() / 1e6:.1f}, hashed subflows "
            f"{res.subflows_bps.mean() / 1e6:.1f}, multipath optimum "
            f"{res.multipath_bps.mean() / 1e6:.1f})",
            flush=True,
        )
        out.append({"k": k, "seconds": took, "multipath_optimum_s": optimum_s, "routes": routes})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="0.1 s runs, one round, no callgrind")
    ap.add_argument("--k", type=int, default=32, help="the FatTree parsed and built")
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 16], help="FatTrees run")
    ap.add_argument("--subflows", type=int, default=8)
    ap.add_argument("--duration", type=float, help="simulated seconds (default 1, quick 0.1)")
    ap.add_argument(
        "--rounds",
        type=int,
        help="paired rounds per FatTree (default 3 for k <= 8 and 1 above; quick: 1)",
    )
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument(
        "--callgrind-k", type=int, nargs="+", default=[8], help="FatTrees counted by callgrind"
    )
    ap.add_argument("--no-reference", action="store_true", help="skip the flow-level reference")
    ap.add_argument(
        "--reference-k", type=int, nargs="+", default=[8, 16], help="FatTrees of the reference"
    )
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    duration = args.duration if args.duration is not None else (0.1 if args.quick else 1.0)
    callgrind = not (args.quick or args.no_callgrind) and shutil.which("valgrind") is not None
    sys.path.insert(0, str(ROOT))
    from bench.engine import machine

    host = machine()
    print(f"machine: {host['cpu']}, {host['logical_cpus']} logical CPUs, caches {host['caches']}")
    record: dict = {"machine": host}

    import pathweave

    record["parse"] = []
    for subflows in (1, args.subflows):
        t = parse_time(args.k, subflows)
        sc = pathweave.parse(fat_tree(args.k, subflows))
        topo = sc.topology
        assert topo is not None
        verdict = "under a second" if t < 1.0 else "NOT under a second"
        print(
            f"fat-tree k={args.k}, {subflows} subflow(s): {topo['hosts']:,} hosts, "
            f"{topo['links']:,} links, {len(sc.flow_names):,} flows: "
            f"parsed and built in {t * 1e3:.0f} ms (best of 3; target: under a second: "
            f"{verdict})"
        )
        record["parse"].append({"k": args.k, "subflows": subflows, "seconds": t})

    build()
    print()
    print(
        f"packet level: FatTree permutation, {args.subflows} LIA subflows per connection, "
        f"1 Gbit/s links, {duration:g} s simulated, against the 8-flow drop-tail dumbbell "
        f"(100 s)"
    )
    print(
        "link packet: a packet delivered by one link direction (data or ACK, one per hop); "
        "µs/pkt: wall and CPU µs per link packet (the dumbbell's: wall/CPU); ratios: median "
        "of paired rounds (range)"
    )
    header = (
        f"{'k':>3} {'hosts':>6} {'subflows':>8} {'link pkts':>13} {'host-link':>12} "
        f"{'wall':>8} {'M pkt/s':>8} {'peak RSS':>9} {'µs/pkt wall':>11} {'cpu':>6} "
        f"{'dumbbell':>15} {'ratio wall':>17} {'ratio cpu':>17}"
    )
    print(header)
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ref = tmp / "dumbbell.toml"
        ref.write_text(DUMBBELL.read_text())
        for k in args.sizes:
            path = tmp / f"fat-tree-{k}.toml"
            path.write_text(fat_tree(k, args.subflows, duration))
            rounds = args.rounds or (1 if args.quick or k > 8 else 3)
            s = summary(paired(ref, path, rounds))
            s.update({"k": k, "hosts": k**3 // 4, "subflows": k**3 // 4 * args.subflows})
            rows.append(s)
            wr, cr = s["wall_ratio_range"], s["cpu_ratio_range"]
            print(
                f"{k:>3} {s['hosts']:>6,} {s['subflows']:>8,} {s['link_packets']:>13,} "
                f"{s['host_link_packets']:>12,} {s['wall_s']:>7.1f}s "
                f"{s['link_packets_per_s'] / 1e6:>8.2f} {s['peak_rss_mb']:>6.0f} MB "
                f"{s['wall_us_per_packet']:>11.4f} {s['cpu_us_per_packet']:>6.4f} "
                f"{s['ref_wall_us_per_packet']:>7.4f}/{s['ref_cpu_us_per_packet']:.4f} "
                f"{s['wall_ratio']:>5.2f}x ({wr[0]:.2f}-{wr[1]:.2f}) "
                f"{s['cpu_ratio']:>5.2f}x ({cr[0]:.2f}-{cr[1]:.2f})"
            )
        record["runs"] = rows
        for s in rows:
            if s["k"] == 16:
                met = "met" if s["cpu_ratio"] <= TARGET_RATIO else "NOT met"
                print(
                    f"target (k = 16 within {TARGET_RATIO:g}x of the dumbbell per link "
                    f"packet): {met} ({s['cpu_ratio']:.2f}x in CPU time, "
                    f"{s['wall_ratio']:.2f}x in wall time)"
                )
        if callgrind:
            print()
            print(
                "instructions per link packet (callgrind, marginal: a run of 2T less a run of "
                "T over the second half's link packets)"
            )
            ref_ir = marginal_instructions(dumbbell_text, 50.0, tmp, "dumbbell")
            print(
                f"  8-flow drop-tail dumbbell, 50-100 s: {ref_ir['per_link_packet']:,.0f} "
                f"({ref_ir['whole_run_per_link_packet']:,.0f} over the whole run)"
            )
            record["instructions"] = {"dumbbell": ref_ir}
            for k in args.callgrind_k:

                def text_of(d: float, k: int = k) -> str:
                    return fat_tree(k, args.subflows, d)

                ir = marginal_instructions(text_of, 0.05, tmp, f"fat-tree-{k}")
                ir["ratio"] = ir["per_link_packet"] / ref_ir["per_link_packet"]
                record["instructions"][f"fat_tree_k{k}"] = ir
                print(
                    f"  FatTree k={k}, 0.05-0.1 s: {ir['per_link_packet']:,.0f} "
                    f"({ir['ratio']:.2f}x the dumbbell's; "
                    f"{ir['whole_run_per_link_packet']:,.0f} over the whole 0.1 s run)"
                )
    if not (args.quick or args.no_reference):
        print()
        record["reference"] = reference_times(args.reference_k, args.subflows)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
