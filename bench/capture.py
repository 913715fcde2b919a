"""Benchmark: what a packet capture and the queue log cost the simulator per packet.

`bench/scenarios/dumbbell-droptail.toml` (8 NewReno flows, 100 s, drop-tail) runs through the
Rust `run` example three ways: capture off; every link direction captured (`--pcap`, 18
pcapng files); every direction captured and the queue log kept (`[capture] events = true`).
For each it prints wall time per bottleneck packet (best of `--repeat` runs), instructions per
bottleneck packet (callgrind, when valgrind is installed; the whole run, parsing included, as
in `bench/engine.py`), and what the capture wrote. The differences to the run without capture
are the capture's cost: per bottleneck packet, and per packet written (every link direction's
packets, not only the bottleneck's).

The capture's byte limit is raised so that no file is cut short: a file that stops early would
make the capture look cheap.

    python bench/capture.py [--no-callgrind] [--repeat N] [--seconds S] [--json OUT]

`--seconds` shortens the scenario (100 s by default; callgrind runs about 50 times slower
than the run itself).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.engine import RUN, SCENARIOS, build, instructions

# Large enough that no file of the 100 s run is cut short (the largest is about 30 MB).
CAPTURE_TABLE = '\n[capture]\nmax_bytes = "4GB"\n'


def scenario(seconds: float | None, events: bool) -> str:
    text = (SCENARIOS / "dumbbell-droptail.toml").read_text()
    if seconds is not None:
        text = re.sub(r'(?m)^duration = "[^"]*"$', f'duration = "{seconds:g}s"', text)
    if events:
        text += CAPTURE_TABLE + "events = true\n"
    else:
        text += CAPTURE_TABLE
    return text


def run(path: Path, pcap: Path | None) -> dict:
    """One run of the `run` example on ``path``, capturing into ``pcap`` if given (the
    directory is replaced by each run): its JSON figures and its standard error."""
    extra = ["--pcap", str(pcap)] if pcap else []
    out = subprocess.run(
        [str(RUN), str(path), "--json", "--link", "bottleneck", *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    return {**json.loads(out.stdout), "stderr": out.stderr}


def written(stderr: str) -> tuple[int, int, bool]:
    """Packets and queue-log rows the run's capture holds (from the `run` example's closing
    line), and whether it warned that a limit cut the capture short."""
    m = re.search(r"capture: \d+ files, (\d+) packets, (\d+) queue-log rows", stderr)
    if m is None:
        raise RuntimeError(f"the run printed no capture summary: {stderr.strip()[-300:]}")
    warned = any(line and not line.startswith("capture:") for line in stderr.splitlines())
    return int(m.group(1)), int(m.group(2)), warned


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument("--repeat", type=int, default=3, help="wall-clock runs per case (best kept)")
    ap.add_argument(
        "--seconds", type=float, help="simulated seconds (default: the scenario's 100 s)"
    )
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.seconds is not None and args.seconds <= 0:
        ap.error(f"--seconds must be positive, got {args.seconds:g}")

    build()
    rows = []
    print(
        f"{'case':<34} {'bn packets':>11} {'µs/pkt':>7} {'instr/pkt':>10} "
        f"{'written':>10} {'log rows':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("capture off", scenario(args.seconds, False), False),
            ("every direction captured", scenario(args.seconds, False), True),
            ("captured + queue log", scenario(args.seconds, True), True),
        ]
        for k, (label, text, capture) in enumerate(cases):
            path = Path(tmp) / f"case{k}.toml"
            path.write_text(text)
            pcap = Path(tmp) / f"pcap{k}" if capture else None
            r = min((run(path, pcap) for _ in range(args.repeat)), key=lambda r: r["wall_s"])
            pkts = r["bottleneck_packets"]
            packets = rows_logged = 0
            if capture:
                packets, rows_logged, cut = written(r["stderr"])
                if cut:
                    print(f"{label}: a limit cut the capture short; its cost is understated")
            ir = None
            if not args.no_callgrind:
                ir = instructions(path, ("--pcap", str(pcap)) if pcap else ())
            row = {
                "case": label,
                "bottleneck_packets": pkts,
                "wall_us_per_packet": r["wall_s"] / pkts * 1e6,
                "instructions_per_packet": ir / pkts if ir else None,
                "packets_written": packets,
                "log_rows": rows_logged,
            }
            rows.append(row)
            ipp = f"{row['instructions_per_packet']:,.0f}" if ir else "—"
            print(
                f"{label:<34} {pkts:>11,} {row['wall_us_per_packet']:>7.3f} {ipp:>10} "
                f"{packets:>10,} {rows_logged:>10,}"
            )
    off = rows[0]
    print()
    for row in rows[1:]:
        extra_us = row["wall_us_per_packet"] - off["wall_us_per_packet"]
        line = (
            f"{row['case']}: +{extra_us:.3f} µs per bottleneck packet "
            f"({row['wall_us_per_packet'] / off['wall_us_per_packet']:.2f}x)"
        )
        if row["instructions_per_packet"] and off["instructions_per_packet"]:
            extra_i = row["instructions_per_packet"] - off["instructions_per_packet"]
            per_written = extra_i * row["bottleneck_packets"] / max(row["packets_written"], 1)
            line += (
                f", +{extra_i:,.0f} instructions per bottleneck packet, "
                f"{per_written:,.0f} per packet written"
            )
        print(line)
        row["extra_wall_us_per_packet"] = extra_us
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
