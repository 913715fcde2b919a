"""Overflow episodes of drop-tail queues, from queue logs (`[capture] events = true`).

For each capture directory given (a simulated or an emulated run of the same scenario), and
for each captured link's forward direction, it prints after `--after` seconds (the first slow
start left out):

* the overflow episodes: drops on the link less than `--gap` seconds apart form one;
* per flow (and subflow), the episodes in which it lost a packet, and of those the ones in
  which it lost the second packet of a back-to-back pair (arriving less than 5 % of the
  link's packet time after the flow's previous packet: a window increase, or a burst);
* per flow, the share of its data packets shorter than its commonest size.

With several directories of one engine, `--sum` adds their episodes up. The lia-two-links
study in docs/kernel.md ("Drop-tail links") uses it on captures written by
`pathweave run FILE --pcap DIR` and `pathweave emulate FILE --pcap DIR`.

    python bench/droptail_episodes.py DIR [DIR ...] [--after 3] [--gap 0.5] [--sum]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

COLUMNS = ["time_s", "link", "direction", "flow", "subflow", "event", "bytes"]


def episodes(log: pd.DataFrame, after: float, gap: float) -> dict[str, dict[str, Any]]:
    """Per link: the number of overflow episodes, and per (flow, subflow) the episodes it lost a
    packet in, those it lost a back-to-back pair's second packet in, its data packets and the
    short ones among them."""
    log = log[(log.time_s > after) & (log.direction == "forward")]
    out: dict[str, dict[str, Any]] = {}
    for link, g in log.groupby("link", sort=True):
        arrivals = g[g.event != "dequeue"].sort_values("time_s", kind="stable")
        t = arrivals.time_s.to_numpy()
        key = list(
            zip(
                arrivals.flow.to_numpy().tolist(), arrivals.subflow.to_numpy().tolist(), strict=True
            )
        )
        size = arrivals.bytes.to_numpy()
        dropped = (arrivals.event == "drop").to_numpy()
        # The link's packet time: the commonest gap between departures.
        dq = np.diff(np.sort(g[g.event == "dequeue"].time_s.to_numpy()))
        packet_time = float(np.median(dq)) if len(dq) else 0.0
        last: dict[tuple[int, int], float] = {}
        eps: list[tuple[float, set[tuple[int, int]], set[tuple[int, int]]]] = []
        for i in range(len(t)):
            k = key[i]
            if dropped[i]:
                pair = k in last and t[i] - last[k] < 0.05 * packet_time
                if eps and t[i] - eps[-1][0] < gap:
                    eps[-1] = (t[i], eps[-1][1], eps[-1][2])
                else:
                    eps.append((t[i], set(), set()))
                eps[-1][1].add(k)
                if pair:
                    eps[-1][2].add(k)
            last[k] = t[i]
        flows: dict[tuple[int, int], dict[str, int]] = {}
        for k in sorted(set(key)):
            mine = size[[j for j in range(len(key)) if key[j] == k]]
            data = mine[mine > 100]
            common = Counter(data.tolist()).most_common(1)[0][0] if len(data) else 0
            flows[k] = {
                "hit": sum(k in e[1] for e in eps),
                "hit_by_pair": sum(k in e[2] for e in eps),
                "packets": len(data),
                "short": int((data < common).sum()),
            }
        out[str(link)] = {"episodes": len(eps), "flows": flows}
    return out


def add(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The episodes of two runs of one scenario, added up."""
    out = {
        k: {"episodes": v["episodes"], "flows": {f: dict(c) for f, c in v["flows"].items()}}
        for k, v in a.items()
    }
    for link, v in b.items():
        o = out.setdefault(link, {"episodes": 0, "flows": {}})
        o["episodes"] += v["episodes"]
        for f, c in v["flows"].items():
            into = o["flows"].setdefault(f, {"hit": 0, "hit_by_pair": 0, "packets": 0, "short": 0})
            for name, n in c.items():
                into[name] += n
    return out


def _share(x: int, n: int) -> str:
    return f"{x / n:.0%}" if n else "-"


def show(label: str, res: dict[str, dict[str, Any]]) -> None:
    for link, v in res.items():
        n = v["episodes"]
        print(f"{label}  link {link}: {n} overflow episodes")
        for (flow, sub), c in v["flows"].items():
            print(
                f"    flow {flow} subflow {sub}: lost a packet in {c['hit']} "
                f"({_share(c['hit'], n)}), "
                f"a back-to-back pair's second in {c['hit_by_pair']} "
                f"({_share(c['hit_by_pair'], n)}); short data packets {c['short']} of "
                f"{c['packets']} ({c['short'] / max(c['packets'], 1):.2%})"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("dirs", nargs="+", type=Path, help="capture directories with packets.parquet")
    ap.add_argument("--after", type=float, default=3.0, help="seconds left out at the start")
    ap.add_argument("--gap", type=float, default=0.5, help="seconds between episodes, at least")
    ap.add_argument("--sum", action="store_true", help="add the directories' episodes up")
    args = ap.parse_args(argv)
    total: dict[str, dict[str, Any]] = {}
    for d in args.dirs:
        log_file = d / "packets.parquet"
        if not log_file.is_file():
            ap.error(f"{log_file}: no queue log (capture with [capture] events = true)")
        res = episodes(pd.read_parquet(log_file, columns=COLUMNS), args.after, args.gap)
        if args.sum:
            total = add(total, res)
        else:
            show(str(d), res)
    if args.sum:
        show(f"{len(args.dirs)} runs", total)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
