"""Benchmark: reading and building large generated fabrics, and the flow-level reference.

Prints the wall time to parse and build a FatTree scenario with permutation traffic (k = 32
by default: 8,192 hosts, 24,576 links, 8,192 flows; target: under a second), and the time of
``pathweave.datacenter.reference`` on a FatTree permutation with 8 subflows per connection
(k = 8 by default, 128 connections: 2.9 s measured; k = 16's 1,024 connections, the target of
a few seconds, did not finish in four minutes). A benchmark, not a timed test.

    python bench/datacenter.py [--k 32] [--reference-k 8] [--subflows 8]
"""

from __future__ import annotations

import argparse
import time

import pathweave
from pathweave.datacenter import reference


def fat_tree(k: int, subflows: int) -> str:
    return f"""
duration = "1s"
series = false
[topology]
type = "fat-tree"
k = {k}
link_rate = "1Gbps"
[traffic]
pattern = "permutation"
algorithm = "lia"
subflows = {subflows}
"""


def parse_time(k: int, subflows: int, repeats: int = 3) -> float:
    text = fat_tree(k, subflows)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        pathweave.parse(text)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--reference-k", type=int, default=8)
    ap.add_argument("--subflows", type=int, default=8)
    args = ap.parse_args()
    for subflows in (1, args.subflows):
        t = parse_time(args.k, subflows)
        sc = pathweave.parse(fat_tree(args.k, subflows))
        topo = sc.topology
        assert topo is not None
        print(
            f"fat-tree k={args.k}, {subflows} subflow(s): {topo['hosts']:,} hosts, "
            f"{topo['links']:,} links, {len(sc.flow_names):,} flows: "
            f"parsed and built in {t * 1e3:.0f} ms (best of 3)"
        )
    sc = pathweave.parse(fat_tree(args.reference_k, args.subflows))
    t0 = time.perf_counter()
    ref = reference(sc)
    took = time.perf_counter() - t0
    print(
        f"reference, fat-tree k={args.reference_k}, {len(ref.flows):,} connections x "
        f"{args.subflows} subflows: {took:.2f} s (mean rates, Mbit/s: single path "
        f"{ref.single_path_bps.mean() / 1e6:.1f}, hashed subflows "
        f"{ref.subflows_bps.mean() / 1e6:.1f}, multipath optimum "
        f"{ref.multipath_bps.mean() / 1e6:.1f})"
    )


if __name__ == "__main__":
    main()
