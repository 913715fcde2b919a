"""Benchmark: the headline scenario at scale — 64 two-subflow LIA connections plus 64 Reno
flows over the BMC dumbbell's 60 Mbps RED bottleneck — against a single-path run of the same
size (192 Reno flows, one per path), 100 simulated seconds each. Prints bottleneck packets per
wall-clock second for both and their ratio (target: multipath within 25 % of single-path).

    python bench/multipath.py [--duration 100] [--connections 64]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.dumbbell import build, run_pathweave_text

HEAD = """
duration = "{duration}s"
[[link]]
name = "bottleneck"
rate = "60Mbps"
delay = "20ms"
queue = {{ type = "red", limit = "50pkt", min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002,
          gentle = true, mean_pkt_size = "1040B" }}
"""

ACCESS = """
[[link]]
name = "{name}{{i}}"
count = {count}
rate = "100Mbps"
delay = "2ms"
queue = {{ type = "droptail", limit = "1000pkt" }}
"""


def multipath(n: int, duration: float) -> str:
    access = "".join(ACCESS.format(name=x, count=n) for x in ("a", "b", "r"))
    return (
        HEAD.format(duration=duration)
        + access
        + f"""
[[flow]]
name = "mp{{i}}"
count = {n}
algorithm = "lia"
subflows = [ {{ path = ["a{{i}}", "bottleneck"] }}, {{ path = ["b{{i}}", "bottleneck"] }} ]
[[flow]]
name = "reno{{i}}"
count = {n}
path = ["r{{i}}", "bottleneck"]
start = "1ms"
"""
    )


def single(n: int, duration: float) -> str:
    return (
        HEAD.format(duration=duration)
        + ACCESS.format(name="s", count=3 * n)
        + f"""
[[flow]]
name = "reno{{i}}"
count = {3 * n}
path = ["s{{i}}", "bottleneck"]
"""
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--duration", type=float, default=100.0)
    ap.add_argument("--connections", type=int, default=64)
    args = ap.parse_args()
    build()
    n = args.connections
    rows = []
    for label, text in (
        ("single-path", single(n, args.duration)),
        ("multipath", multipath(n, args.duration)),
    ):
        res = run_pathweave_text(text, label)
        pps = res["bottleneck_packets"] / res["wall_s"]
        rows.append(pps)
        print(
            f"{label:12s} wall {res['wall_s']:.3f} s, "
            f"{res['events'] / res['wall_s'] / 1e6:.2f} M events/s, "
            f"{pps / 1e6:.3f} M bottleneck packets/s, peak RSS {res['peak_rss_mb']:.1f} MB"
        )
    print(f"multipath / single-path: {rows[1] / rows[0]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
