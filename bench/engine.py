"""Benchmark: the simulator engine's speed and memory on the scenarios of docs/performance.md.

For each scenario it runs the Rust `run` example (the simulator alone, no Python) and prints
bottleneck packets per wall-clock second, events per bottleneck packet, instructions per
bottleneck packet (callgrind, when valgrind is installed), and the simulator process's own peak
RSS (read by the process itself from /proc/self/status, so no parent's memory is counted). A
bare event-queue loop (the `queue_loop` example) runs in the same invocation, and each
scenario's events per second are shown as a fraction of it.

    python bench/engine.py [--no-callgrind] [--quick] [--json OUT]

`--quick` leaves out the long and large runs (64 flows for 1000 s, 10,000 flows, 1,000
multipath connections).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "target" / "release" / "examples" / "run"
LOOP = ROOT / "target" / "release" / "examples" / "queue_loop"
SCENARIOS = ROOT / "bench" / "scenarios"


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


def cases(quick: bool) -> list[tuple[str, str, bool]]:
    """(label, scenario text, measure instructions)."""
    out = [
        (
            "drop-tail NewReno, 8 flows, 100 s",
            (SCENARIOS / "dumbbell-droptail.toml").read_text(),
            True,
        ),
        (
            "scenarios/dumbbell.toml (RED), 8 flows, 100 s",
            (ROOT / "scenarios" / "dumbbell.toml").read_text(),
            True,
        ),
        ("dumbbell RED+SACK, 8 flows, 100 s", dumbbell_text(8, 100), True),
        ("dumbbell RED+SACK, 64 flows, 100 s", dumbbell_text(64, 100), False),
    ]
    if not quick:
        out += [
            ("dumbbell RED+SACK, 64 flows, 1000 s", dumbbell_text(64, 1000), False),
            ("10,000 flows, 100 s", (SCENARIOS / "dumbbell-10k.toml").read_text(), False),
            (
                "1,000 multipath connections, 100 s",
                (SCENARIOS / "multipath-1k.toml").read_text(),
                False,
            ),
        ]
    return out


def run(path: Path) -> dict:
    out = subprocess.run(
        [str(RUN), str(path), "--json"], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def instructions(path: Path) -> int | None:
    """Instructions executed by the whole run under callgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/cg.out",
                str(RUN),
                str(path),
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    m = re.search(r"Collected : (\d+)", out.stderr)
    return int(m.group(1)) if m else None


def bare_loop() -> float:
    out = subprocess.run([str(LOOP), "40", "20000000"], capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["events_per_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument("--quick", action="store_true", help="leave out the long and large runs")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)

    build()
    baseline = bare_loop()
    print(f"bare event-queue loop (40 components): {baseline / 1e6:.1f} M events/s")
    header = (
        f"{'scenario':<46} {'bn packets':>11} {'M pkt/s':>8} {'ev/pkt':>7} "
        f"{'instr/pkt':>10} {'peak RSS':>9} {'of loop':>8}"
    )
    print(header)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, text, count) in enumerate(cases(args.quick)):
            path = Path(tmp) / f"case{k}.toml"
            path.write_text(text)
            r = run(path)
            pkts = r["bottleneck_packets"]
            ir = instructions(path) if count and not args.no_callgrind else None
            row = {
                "scenario": label,
                "bottleneck_packets": pkts,
                "packets_per_s": pkts / r["wall_s"],
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
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"bare_loop_events_per_s": baseline, "rows": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
