"""The lia-two-links scenarios (EUNICE 2012, §4) on drop-tail links: the simulator beside the
kernel.

For each of S1, S2 and S3 (`scenarios/lia-two-links/s{1,2,3}.toml`) with the emulator's packet
layout (40-byte headers and ACKs, 1460-byte segments: 1500-byte packets, the paper's MTU), it
prints the goodput of the MPTCP connection (sum of its subflows), the Reno flow on link A and
the Reno flow on link B, in Mbit/s:

* the simulator with its defaults, and with `[tcp] profile = "linux"` (one run each: without
  random elements the simulation does not depend on the seed), each with any extra `[tcp]`
  settings given with `--tcp KEY=VALUE` (repeatable) in further rows; with `--jitter TIME`
  every link gets that jitter (timing noise, docs/simulator.md) and `--seeds N` runs each row
  with seeds 1..N and prints their mean, with the standard deviation in the note;
* the kernel (`pathweave emulate`, LIA on pathweave's BPF controller `pw_lia` where the
  controllers load, otherwise the kernel's own coupled LIA is missing and the run says so),
  `--runs` times, each with its p99 lateness and whether the emulator judged it reliable.

Per flow it also prints the mean congestion window, loss events and retransmissions, which
tell a flow that loses more often from one that recovers worse. Needs root for the kernel
rows; without it (or with `--sim-only`) only the simulator's rows are printed.

    python bench/droptail_kernel.py [--scenarios s1 s2 s3] [--runs 3] [--seconds 85]
                                    [--tcp KEY=VALUE ...] [--jitter TIME] [--seeds N]
                                    [--sim-only] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios" / "lia-two-links"
# The paper's §4.3 averages, Mbit/s: MPTCP sum, TCP on A, TCP on B.
PUBLISHED = {"s1": (3.54, 3.13, 3.24), "s2": (5.73, 6.00, 3.19), "s3": (3.34, 3.56, 2.87)}
FLOWS = ("mptcp", "tcpA", "tcpB")


def document(
    stem: str, seconds: float, tcp: dict[str, Any], jitter: str | None = None
) -> dict[str, Any]:
    """The scenario with 40-byte headers and ACKs, 1460-byte segments, ``seconds`` long,
    ``tcp`` merged into its `[tcp]` table and, if given, ``jitter`` on every link."""
    doc = tomllib.loads((SCENARIOS / f"{stem}.toml").read_text(encoding="utf-8"))
    doc["duration"] = f"{seconds:g}s"
    doc["tcp"].update({"mss": "1460B", "header": "40B", "ack_size": "40B", **tcp})
    if jitter is not None:
        for link in doc["link"]:
            link["jitter"] = jitter
    return doc


def mean_row(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The mean of per-seed rows, and a note with the goodputs' standard deviations."""
    import numpy as np

    out = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
    sd = "/".join(f"{np.std([r[n] for r in rows], ddof=1):.2f}" for n in FLOWS)
    return out, f"mean of {len(rows)} seeds, sd {sd}"


# The first slow start's overshoot differs between the engines (the simulator's receive window
# is unlimited, Linux's opens as data arrives); rates after it are printed too.
WARM_UP_S = 10.0


def row(res: Any) -> dict[str, Any]:
    """Goodput per flow in Mbit/s (the connection's summed over its subflows), the mean rate
    after ``WARM_UP_S`` from the flow series, and per flow its loss events, retransmissions
    and timeouts."""
    flows = res.flows.set_index("name")
    series = res.flow_series
    late = series[series["time_s"] > WARM_UP_S]
    out: dict[str, Any] = {}
    for name in FLOWS:
        f = flows.loc[name]
        out[name] = float(f["goodput_bps"]) / 1e6
        index = list(flows.index).index(name)
        out[f"{name}_after_warm_up"] = float(late[late["flow"] == index]["rate_bps"].mean()) / 1e6
        out[f"{name}_loss_events"] = int(f["loss_events"])
        out[f"{name}_retransmits"] = int(f["retransmits"])
        out[f"{name}_timeouts"] = int(f["timeouts"])
    return out


def parse_setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE, e.g. delayed_ack=true")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return key.strip(), parsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scenarios", nargs="+", default=["s1", "s2", "s3"], choices=PUBLISHED)
    ap.add_argument("--runs", type=int, default=3, help="emulated runs per scenario")
    ap.add_argument("--seconds", type=float, default=85.0)
    ap.add_argument(
        "--tcp",
        type=parse_setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an extra [tcp] setting for further simulator rows (repeatable; TOML values)",
    )
    ap.add_argument("--jitter", metavar="TIME", help='jitter on every simulated link, e.g. "20us"')
    ap.add_argument("--seeds", type=int, default=1, help="simulated runs per row (seeds 1..N)")
    ap.add_argument("--sim-only", action="store_true", help="leave out the kernel's rows")
    ap.add_argument("--json", type=Path, metavar="OUT")
    args = ap.parse_args(argv)
    if args.runs < 0 or args.seconds <= 0 or args.seeds < 1:
        ap.error("--runs must be at least 0, --seeds at least 1 and --seconds positive")

    import pathweave

    kernel = not args.sim_only and os.geteuid() == 0
    if not args.sim_only and not kernel:
        print("not root: the kernel's rows are left out", file=sys.stderr)
    extra = dict(args.tcp)
    variants: list[tuple[str, dict[str, Any]]] = [
        ("sim defaults", {}),
        ("sim profile linux", {"profile": "linux"}),
    ]
    if extra:
        variants += [
            ("sim defaults + " + ", ".join(f"{k}={v}" for k, v in extra.items()), extra),
            (
                "sim profile linux + " + ", ".join(f"{k}={v}" for k, v in extra.items()),
                {"profile": "linux", **extra},
            ),
        ]
    rows: list[dict[str, Any]] = []
    print(
        f"{'scenario':<8} {'engine':<44} {'MPTCP':>6} {'TCP A':>6} {'TCP B':>6}  "
        f"{'loss events (mp/A/B)':>20} {'timeouts':>10} {'after 10 s':>16}  note"
    )

    def show(stem: str, label: str, r: dict[str, Any], note: str = "") -> None:
        r = {"scenario": stem, "engine": label, **r}
        rows.append(r)
        losses = "/".join(f"{r[f'{n}_loss_events']:.3g}" for n in FLOWS)
        timeouts = "/".join(f"{r[f'{n}_timeouts']:g}" for n in FLOWS)
        steady = "/".join(f"{r[f'{n}_after_warm_up']:.2f}" for n in FLOWS)
        print(
            f"{stem:<8} {label:<44} {r['mptcp']:>6.2f} {r['tcpA']:>6.2f} {r['tcpB']:>6.2f}  "
            f"{losses:>20} {timeouts:>10} {steady:>16}  {note}",
            flush=True,
        )

    for stem in args.scenarios:
        mp, a, b = PUBLISHED[stem]
        print(f"{stem:<8} {'published':<44} {mp:>6.2f} {a:>6.2f} {b:>6.2f}")
        for label, tcp in variants:
            doc = document(stem, args.seconds, tcp, args.jitter)
            sc = pathweave.parse(tomli_w.dumps(doc), f"{stem} ({label})")
            if args.jitter is not None:
                label += f", jitter {args.jitter}"
            if args.seeds == 1:
                show(stem, label, row(pathweave.run(sc)))
            else:
                runs = [row(pathweave.run(sc, seed=k + 1)) for k in range(args.seeds)]
                show(stem, label, *mean_row(runs))
        if not kernel:
            continue
        from pathweave.emulate import emulate

        doc = document(stem, args.seconds, {"profile": "linux"})
        sc = pathweave.parse(tomli_w.dumps(doc), f"{stem} (kernel)")
        for k in range(args.runs):
            res = emulate(sc, seed=k + 1)
            e = res.emulation
            note = (
                f"{'/'.join(sorted(set(e['kernel_algorithms'])))}, p99 lateness "
                f"{e['lateness']['p99_ms']:.3f} ms, reliable {e['reliable']}"
            )
            show(stem, f"kernel run {k + 1}", row(res), note)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
