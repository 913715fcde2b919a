"""Compare the wall time of simulator builds on one scenario, in alternating runs.

On a shared machine the wall time of one run moves by tens of percent with the other jobs;
runs of two builds taken in turn see the same disturbances, so their minima and medians over
several rounds compare the builds where single runs cannot. Each round runs every binary
once (in reverse order every other round) as `BINARY FILE --json`, the interface of the
`run` example, and reads its wall time and bottleneck packets; the summary gives, per
binary, the minimum and median of µs per bottleneck packet and every run's figure, and each
median as a ratio to the first binary's.

    python bench/compare.py FILE BINARY [BINARY ...] [--rounds N] [--json OUT]

With `--side-by-side` the two binaries (exactly two) run at the same time, each pinned to a
CPU of its own and swapping CPUs every round, so that what the machine's neighbours do in
those seconds falls on both; the summary then adds the median and range of the per-round
ratio of the second binary's figure to the first's. Run the first binary against itself to
see the method's own spread.

For example, against a copy of an earlier build's binary:

    cp target/release/examples/run /tmp/run.base    # before the change
    cargo build --release -p pathweave-sim --examples
    python bench/compare.py bench/scenarios/dumbbell-10k-dense.toml /tmp/run.base \\
        target/release/examples/run --rounds 8
"""

from __future__ import annotations

import argparse
import json
import os
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


def _start(binary: str, scenario: Path, cpu: int | None = None) -> subprocess.Popen[str]:
    """Start one run, pinned to ``cpu`` if given."""
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    return subprocess.Popen(
        [binary, str(scenario), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=pin,
    )


def _finish(p: subprocess.Popen[str], binary: str) -> float:
    out, err = p.communicate()
    if p.returncode != 0:
        raise RunError(f"{binary} exited with {p.returncode}: {err.strip()[-400:]}")
    return us_per_packet(out, binary)


def run_once(binary: str, scenario: Path) -> float:
    return _finish(_start(binary, scenario), binary)


def side_by_side(
    scenario: Path, binaries: list[str], rounds: int
) -> tuple[list[Series], list[float]]:
    """Both binaries at once, each on a CPU of its own (swapped every round): their series and
    the per-round ratios of the second's figure to the first's."""
    if len(binaries) != 2:
        raise RunError(f"side by side compares exactly two binaries, got {len(binaries)}")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise RunError(f"side by side needs two CPUs, this process may use {len(cpus)}")
    series = [Series(b) for b in binaries]
    ratios = []
    for r in range(rounds):
        procs = [_start(s.binary, scenario, cpus[(k + r) % 2]) for k, s in enumerate(series)]
        try:
            figures = [_finish(p, s.binary) for p, s in zip(procs, series, strict=True)]
        finally:
            # One failed: the other is not left running.
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.communicate()  # reaps it and closes its pipes
        for s, x in zip(series, figures, strict=True):
            s.us_per_packet.append(x)
        ratios.append(figures[1] / figures[0])
    return series, ratios


def report_ratios(ratios: list[float]) -> str:
    return (
        f"side by side, second/first per round: median {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} rounds)"
    )


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
    ap.add_argument(
        "--side-by-side",
        action="store_true",
        help="run the two binaries at once, one per CPU, and report per-round ratios",
    )
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if not args.scenario.is_file():
        ap.error(f"no scenario file at {args.scenario}")
    if args.side_by_side and len(args.binaries) != 2:
        ap.error(f"--side-by-side compares exactly two binaries, got {len(args.binaries)}")
    ratios: list[float] = []
    try:
        if args.side_by_side:
            series, ratios = side_by_side(args.scenario, args.binaries, args.rounds)
        else:
            series = compare(args.scenario, args.binaries, args.rounds)
    except (RunError, OSError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    print(report(series))
    if ratios:
        print(report_ratios(ratios))
    if args.json:
        rows: list[dict[str, object]] = [
            {"binary": s.binary, "us_per_packet": s.us_per_packet} for s in series
        ]
        if ratios:
            rows[1]["ratio_to_first_per_round"] = ratios
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
