"""Benchmark: the BMC dumbbell with 8 and 64 Reno flows for 100 simulated seconds.

Runs pathweave's simulator (the Rust `run` example, so the peak memory is the simulator's
alone, not a Python interpreter's) and ns-3.44 (bench/ns3) on the same scenario in the same
invocation, and prints wall time, events per second, bottleneck packets per wall-clock second,
peak memory, and the ratio to ns-3, beside each simulator's aggregate goodput and Jain index.

    python bench/dumbbell.py [--flows 8 64] [--duration 100] [--no-ns3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "dumbbell.toml"
BINARY = ROOT / "target" / "release" / "examples" / "run"


def build() -> None:
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "pathweave-sim", "--example", "run"],
        cwd=ROOT,
        check=True,
    )


def scenario_text(flows: int, duration_s: float) -> str:
    """scenarios/dumbbell.toml with `flows` flows, set up as bench/ns3 runs it: SACK recovery
    and 42-byte headers and ACKs (ns-3 adds a 2-byte PPP header to the 40 bytes of TCP/IP)."""
    text = SCENARIO.read_text()
    text = re.sub(r"(?m)^count = \d+$", f"count = {flows}", text)
    text = re.sub(r'(?m)^duration = "[^"]*"$', f'duration = "{duration_s}s"', text)
    text = re.sub(r'(?m)^header = "[^"]*"$', 'header = "42B"', text)
    text = re.sub(r'(?m)^ack_size = "[^"]*"$', 'ack_size = "42B"', text)
    return re.sub(r'(?m)^recovery = "[^"]*"$', 'recovery = "sack"', text)


def run_pathweave(flows: int, duration_s: float, seed: int = 1) -> dict:
    """Run the dumbbell with `flows` flows; see `run_pathweave_text`."""
    return run_pathweave_text(scenario_text(flows, duration_s), f"dumbbell{flows}", seed)


def run_pathweave_text(text: str, label: str, seed: int = 1) -> dict:
    """Run scenario `text` in a child process and measure its own peak RSS (wait4)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{label}.toml"
        path.write_text(text)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [str(BINARY), str(path), "--json", "--seed", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out = proc.stdout.read() if proc.stdout else b""
        err = proc.stderr.read() if proc.stderr else b""
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        if status != 0:
            raise RuntimeError(f"pathweave run failed: {err.decode()}")
    res = json.loads(out)
    # The simulator reports its own peak (VmHWM): a forked child's ru_maxrss would also count
    # the Python parent's pages at the fork.
    res["peak_rss_mb"] = res.get("peak_rss_kb", usage.ru_maxrss) / 1024.0  # KiB
    res["process_wall_s"] = elapsed
    return res


def run_ns3(flows: int, duration_s: float, seed: int = 1, sack: bool = True) -> dict:
    sys.path.insert(0, str(ROOT))
    from bench.ns3.run_ns3 import run_ns3 as ns3

    return ns3(flows=flows, duration_s=duration_s, seed=seed, sack=sack)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--flows", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--duration", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-ns3", action="store_true", help="skip the ns-3 reference run")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)

    build()
    rows = []
    for n in args.flows:
        pw = run_pathweave(n, args.duration, args.seed)
        row = {"flows": n, "pathweave": pw}
        pw_pps = pw["bottleneck_packets"] / pw["wall_s"]
        print(f"\n== {n} flows, {args.duration:g} s simulated ==")
        print(
            f"pathweave: wall {pw['wall_s']:.3f} s, "
            f"{pw['events'] / pw['wall_s'] / 1e6:.2f} M events/s, "
            f"{pw_pps / 1e6:.3f} M bottleneck packets/s, peak RSS {pw['peak_rss_mb']:.1f} MB, "
            f"goodput {pw['aggregate_goodput_bps'] / 1e6:.2f} Mbps, Jain {pw['jain']:.4f}"
        )
        if not args.no_ns3:
            ns = run_ns3(n, args.duration, args.seed)
            row["ns3"] = ns
            ns_pps = ns["bottleneck_tx_packets"] / ns["wall_s"]
            print(
                f"ns-3.44:   wall {ns['wall_s']:.3f} s, {ns_pps / 1e3:.1f} k bottleneck packets/s, "
                f"peak RSS {ns['peak_rss_kb'] / 1024:.1f} MB, "
                f"goodput {ns['aggregate_goodput_bps'] / 1e6:.2f} Mbps, Jain {ns['jain_index']:.4f}"
            )
            ratio = pw_pps / ns_pps
            gdiff = pw["aggregate_goodput_bps"] / ns["aggregate_goodput_bps"] - 1.0
            row["speed_ratio"] = ratio
            print(
                f"ratio:     pathweave is {ratio:.0f}x ns-3 in bottleneck packets per second; "
                f"aggregate goodput {gdiff * 100:+.1f} %, Jain {pw['jain'] - ns['jain_index']:+.4f}"
            )
        rows.append(row)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
