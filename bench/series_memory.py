"""Benchmark: peak memory of long runs through Python, streamed and not.

Each run is a fresh interpreter that reports its own peak RSS (Linux `VmHWM`) and wall time:

* ``cli``: ``pathweave run FILE --out DIR`` (the time series streamed into their files);
* ``whole``: ``pathweave.run(FILE).write(DIR)`` (the series gathered in memory first, as the
  command line did before streaming).

Scenarios: the BMC dumbbell of bench/dumbbell.py (64 flows, SACK; 100 ms samples) and a two-flow
dumbbell sampled every 10 ms (7 series rows per sample), each for the given durations, and any
scenario files named with ``--file``.

    python bench/series_memory.py [--durations 100 1000] [--modes cli whole] [--file F ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.dumbbell import scenario_text

TWO_FLOWS = textwrap.dedent(
    """
    name = "two-flows"
    duration = "{duration}s"
    sample_interval = "10ms"

    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = {{ type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1, w_q = 0.002 }}

    [[link]]
    name = "access{{i}}"
    count = 2
    rate = "100Mbps"
    delay = "{{n}} ms"

    [[flow]]
    name = "reno{{i}}"
    count = 2
    path = ["access{{i}}", "bottleneck"]
    """
)

PROBE = """
import json, sys, time
mode, scenario, out = sys.argv[1:4]
t0 = time.perf_counter()
if mode == "cli":
    from pathweave.cli import main
    assert main(["run", scenario, "--out", out, "--quiet"]) == 0
else:
    import pathweave
    pathweave.run(scenario).write(out)
wall = time.perf_counter() - t0
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]
print(json.dumps({"peak_rss_kb": int(hwm), "wall_s": round(wall, 2)}))
"""


def measure(mode: str, scenario: Path, tmp: Path) -> dict[str, float]:
    out = tmp / f"out-{mode}-{scenario.stem}"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode, str(scenario), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(proc.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--durations", type=float, nargs="+", default=[100, 1000])
    parser.add_argument("--modes", nargs="+", choices=("cli", "whole"), default=["cli", "whole"])
    parser.add_argument("--file", type=Path, nargs="*", default=[], help="more scenario files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        scenarios: list[tuple[str, Path]] = []
        for d in args.durations:
            for label, text in (
                ("dumbbell-64", scenario_text(64, d)),
                ("two-flows-10ms", TWO_FLOWS.format(duration=f"{d:g}")),
            ):
                path = tmp / f"{label}-{d:g}s.toml"
                path.write_text(text)
                scenarios.append((f"{label}, {d:g} s", path))
        scenarios += [(str(f), f) for f in args.file]
        print(f"{'scenario':<28} {'mode':<6} {'peak RSS':>10} {'wall':>8}")
        for label, path in scenarios:
            for mode in args.modes:
                m = measure(mode, path, tmp)
                mib = m["peak_rss_kb"] / 1024
                print(f"{label:<28} {mode:<6} {mib:>7.1f} MB {m['wall_s']:>6.2f} s")


if __name__ == "__main__":
    main()
