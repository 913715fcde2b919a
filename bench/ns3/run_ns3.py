#!/usr/bin/env python3
"""Run the ns-3.44 reference BMC dumbbell and return its results.

Library use::

    from bench.ns3.run_ns3 import run_ns3      # or put bench/ns3 on sys.path
    res = run_ns3(flows=8, duration_s=100, seed=1)
    res["aggregate_goodput_bps"], res["jain_index"], res["bottleneck_tx_packets"]

Command line::

    python3 bench/ns3/run_ns3.py --flows 8 --duration 100 [--seed 1] [--sack]
    python3 bench/ns3/run_ns3.py --shape scaled --flows 1000 --duration 0.5 \
        [--routing static] [--mark 0.25] [--arg redQW=auto ...] --summary

The binary is built on first use by bench/ns3/build.sh (which installs the
PyPI ns3 3.44 wheel privately if needed).  The dict returned is the JSON the
binary prints; see README.md for the keys.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_SH = HERE / "build.sh"
BINARY = HERE / "build" / "dumbbell"


def build(force: bool = False) -> Path:
    """Build (or check) the ns-3 binary; returns its path. Build logs go to stderr."""
    cmd = ["bash", str(BUILD_SH)] + (["--force"] if force else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"ns-3 build failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    if not BINARY.exists():
        raise RuntimeError(f"build.sh succeeded but {BINARY} is missing")
    return BINARY


def _parse_json(stdout: str) -> dict:
    start, end = stdout.find("{"), stdout.rfind("}")
    if start < 0 or end < start:
        raise RuntimeError(f"no JSON object in ns-3 output:\n{stdout}")
    return json.loads(stdout[start : end + 1])


def run_ns3(
    flows: int,
    duration_s: float,
    seed: int = 1,
    sack: bool = False,
    timeout_s: float | None = None,
    shape: str | None = None,
    routing: str | None = None,
    mark_s: float | None = None,
    extra_args: dict[str, object] | None = None,
) -> dict:
    """Build if needed, run the dumbbell with N flows for duration_s simulated
    seconds, and return the parsed JSON result (a dict).

    sack=False (default) is the requested classic NewReno without SACK; see
    README.md for why ns-3.44 behaves badly in that mode here.

    shape ("dumbbell", "scaled", "dense"), routing ("global", "static") and
    mark_s are passed as --shape, --routing and --mark when given; extra_args
    maps further option names to values ({"redQW": "auto"} -> --redQW=auto).
    Left at None, the program's defaults apply (the 8-flow dumbbell's settings).
    """
    if flows < 1:
        raise ValueError("flows must be >= 1")
    if duration_s <= 0:
        raise ValueError("duration_s must be > 0")
    binary = build()
    cmd = [
        str(binary),
        f"--flows={int(flows)}",
        f"--duration={float(duration_s)!r}",
        f"--seed={int(seed)}",
        f"--sack={'1' if sack else '0'}",
    ]
    if shape is not None:
        cmd.append(f"--shape={shape}")
    if routing is not None:
        cmd.append(f"--routing={routing}")
    if mark_s is not None:
        cmd.append(f"--mark={float(mark_s)!r}")
    for key, value in (extra_args or {}).items():
        if isinstance(value, bool):
            value = "1" if value else "0"
        cmd.append(f"--{key}={value}")
    env = dict(os.environ)
    env.pop("NS_LOG", None)  # ns-3 logging would flood and slow the run
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return _parse_json(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ns-3.44 reference run of the BMC dumbbell")
    ap.add_argument("--flows", type=int, default=8)
    ap.add_argument("--duration", type=float, default=100.0, help="simulated seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sack", action="store_true", help="enable SACK (default: off)")
    ap.add_argument(
        "--shape",
        choices=["dumbbell", "scaled", "dense"],
        help="scenario shape (default: the program's, dumbbell)",
    )
    ap.add_argument(
        "--routing", choices=["global", "static"], help="IPv4 routing (default: global)"
    )
    ap.add_argument("--mark", type=float, help="also report the cost after this simulated time (s)")
    ap.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="pass --NAME=VALUE to the program (repeatable), e.g. --arg sndBuf=524288",
    )
    ap.add_argument(
        "--summary", action="store_true", help="also print a one-line summary to stderr"
    )
    args = ap.parse_args(argv)
    extra: dict[str, object] = {}
    for item in args.arg:
        name, sep, value = item.partition("=")
        if not sep or not name:
            ap.error(f"--arg expects NAME=VALUE, got {item!r}")
        extra[name.lstrip("-")] = value
    res = run_ns3(
        args.flows,
        args.duration,
        args.seed,
        sack=args.sack,
        shape=args.shape,
        routing=args.routing,
        mark_s=args.mark,
        extra_args=extra or None,
    )
    json.dump(res, sys.stdout, indent=2)
    sys.stdout.write("\n")
    if args.summary:
        print(
            f"flows={res['flows']} sack={res['sack']} "
            f"goodput={res['aggregate_goodput_bps'] / 1e6:.2f} Mbps "
            f"jain={res['jain_index']:.4f} bn_pkts={res['bottleneck_tx_packets']} "
            f"wall={res['wall_s']:.2f} s "
            f"pkts/wall_s={res['bottleneck_packets_per_wall_s']:.0f} "
            f"us/pkt={res['wall_s'] * 1e6 / max(res['bottleneck_tx_packets'], 1):.2f} "
            f"rss={res['peak_rss_kb'] / 1024:.1f} MB",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
