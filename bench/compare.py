"""Compare the wall time of simulator builds on one scenario, in alternating runs.

On a shared machine the wall time of one run moves by tens of percent with the other jobs;
runs of two builds taken in turn see the same disturbances, so their minima and medians over
several rounds compare the builds where single runs cannot. Each round runs every binary
once (in reverse order every other round) as `BINARY FILE --json`, the interface of the
`run` example, and reads its wall time and bottleneck packets; the summary gives, per
binary, the minimum and median of µs per bottleneck packet and every run's figure, and each
median as a ratio to the first binary's.

    python bench/compare.py FILE BINARY [BINARY ...] [--rounds N] [--json OUT]

For example, against a copy of an earlier build's binary:

    cp target/release/examples/run /tmp/run.base    # before the change
    cargo build --release -p pathweave-sim --examples
    python bench/compare.py bench/scenarios/dumbbell-10k-dense.toml /tmp/run.base \\
        target/release/examples/run --rounds 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Series:
    """The runs of one binary: µs per bottleneck packet, in run order."""

    binary: str
    us_per_packet: list[float] = field(default_factory=list)

    @property
    def minimum(self) -> float:
        return min(self.us_per_packet)

    @property
    def median(self) -> float:
        return statistics.median(self.us_per_packet)


class RunError(RuntimeError):
    """A binary failed or printed something other than the `run` example's JSON."""


def us_per_packet(stdout: str, binary: str) -> float:
    """µs of wall time per bottleneck packet from a `run --json` line."""
    try:
        d = json.loads(stdout)
        wall, packets = float(d["wall_s"]), int(d["bottleneck_packets"])
    except (ValueError, KeyError, TypeError) as e:
        raise RunError(
            f"{binary}: expected a JSON object with wall_s and bottleneck_packets, got "
            f"{stdout[:200]!r}"
        ) from e
    if packets <= 0:
        raise RunError(f"{binary}: no bottleneck packets in the run, nothing to compare")
    return wall / packets * 1e6


def run_once(binary: str, scenario: Path) -> float:
    p = subprocess.run([binary, str(scenario), "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RunError(f"{binary} exited with {p.returncode}: {p.stderr.strip()[-400:]}")
    return us_per_packet(p.stdout, binary)


def compare(scenario: Path, binaries: list[str], rounds: int) -> list[Series]:
    series = [Series(b) for b in binaries]
    for r in range(rounds):
        order = series if r % 2 == 0 else series[::-1]
        for s in order:
            s.us_per_packet.append(run_once(s.binary, scenario))
    return series


def report(series: list[Series]) -> str:
    first = series[0].median
    width = max(len(s.binary) for s in series)
    lines = [f"{'binary':{width}s}  min µs  median µs  median/first  runs"]
    for s in series:
        runs = " ".join(f"{x:.3f}" for x in s.us_per_packet)
        lines.append(
            f"{s.binary:{width}s}  {s.minimum:6.3f}  {s.median:9.3f}  "
            f"{s.median / first:12.3f}  {runs}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", type=Path, help="scenario file, run by every binary")
    ap.add_argument("binaries", nargs="+", help="simulator binaries taking FILE --json")
    ap.add_argument("--rounds", type=int, default=6, help="runs of each binary (default 6)")
    ap.add_argument("--json", type=Path, help="also write the runs as JSON to this file")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if not args.scenario.is_file():
        ap.error(f"no scenario file at {args.scenario}")
    try:
        series = compare(args.scenario, args.binaries, args.rounds)
    except (RunError, OSError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    print(report(series))
    if args.json:
        rows = [{"binary": s.binary, "us_per_packet": s.us_per_packet} for s in series]
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
