"""Benchmark: the CPU cost per ACK of pathweave's BPF controllers in the kernel.

One MPTCP connection sends over emulated links for a few seconds of real time while the
kernel's BPF run-time statistics are on (`kernel.bpf_stats_enabled = 1`): every call of a
struct_ops program adds its run time and one to its count. The figures are read from the
run's own private controllers while it runs (`bpftool prog show --json`, polled). Printed per
case: calls of each callback, `cong_avoid` calls (one per ACK that opens the window in
congestion avoidance or slow start), and nanoseconds per `cong_avoid` call and per ACK over
every callback of the controller.

Cases, on the same emulated links (20 Mbit/s, 10 ms, drop-tail one BDP):

* ``pw_lia, 2 subflows`` — the coupled path: map lookup, spin lock, the siblings' copy and
  LIA's alpha;
* ``pw_lia, 1 subflow`` — a registered subflow alone in its connection, which runs Reno's
  increase (`tcp_reno_cong_avoid`, the kernel's own function, called as a kfunc) after the
  same map access: the cost of kernel Reno plus pathweave's bookkeeping.

The kernel's built-in reno is not a BPF program, so the run-time statistics cannot time it
directly; the one-subflow case bounds it from above. The statistics' two clock reads per call
(tens of nanoseconds on a VM) are in every figure alike.

    python bench/kernel.py [--seconds 8] [--json OUT]

Needs root, BTF and the extension built with the BPF controllers (`make setup` where clang,
bpftool and libbpf-dev are installed).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
CALLBACKS = ("init", "release", "ssthresh", "cong_avoid", "set_state", "cwnd_event", "undo_cwnd")


def scenario_text(subflows: int, seconds: float) -> str:
    paths = ", ".join(f'{{ path = ["l{k}"] }}' for k in range(subflows))
    links = "\n".join(
        f"""
[[link]]
name = "l{k}"
rate = "20Mbps"
delay = "10ms"
queue = {{ type = "droptail", limit = "34pkt" }}
"""
        for k in range(subflows)
    )
    return f"""
name = "kernel-bench-{subflows}"
duration = "{seconds}s"
sample_interval = "500ms"
[tcp]
recovery = "sack"
{links}
[[flow]]
name = "mp"
algorithm = "lia"
subflows = [ {paths} ]
"""


def _bpftool() -> str:
    found = shutil.which("bpftool") or (
        "/usr/sbin/bpftool" if Path("/usr/sbin/bpftool").exists() else None
    )
    if found is None:
        sys.exit("bench/kernel.py: bpftool is needed (apt-get install bpftool)")
    return found


def _programs(bpftool: str, suffix: str) -> dict[int, tuple[str, int, int]]:
    """Program id -> (callback, run count, run time ns) for pw controllers ``*_<suffix>``."""
    out = subprocess.run([bpftool, "prog", "show", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        return {}
    found = {}
    for p in json.loads(out.stdout or "[]"):
        name = p.get("name", "")
        for cb in CALLBACKS:
            # Names are cut to 15 characters by the kernel: cong_avoid_pw_l.
            full = f"{cb}_pw_{suffix}"
            if p.get("type") == "struct_ops" and full.startswith(name) and name.startswith(cb):
                found[p["id"]] = (cb, int(p.get("run_cnt", 0)), int(p.get("run_time_ns", 0)))
    return found


def measure(subflows: int, seconds: float, bpftool: str) -> dict[str, Any]:
    from pathweave.emulate import emulate

    before = set(_programs(bpftool, "lia"))
    last: dict[int, tuple[str, int, int]] = {}
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            for pid, v in _programs(bpftool, "lia").items():
                if pid not in before:
                    last[pid] = v
            done.wait(0.2)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.toml"
            path.write_text(scenario_text(subflows, seconds))
            res = emulate(path)
    finally:
        done.set()
        t.join()
    per_cb: dict[str, list[int]] = {cb: [0, 0] for cb in CALLBACKS}
    for cb, cnt, ns in last.values():
        per_cb[cb][0] += cnt
        per_cb[cb][1] += ns
    ca_calls, ca_ns = per_cb["cong_avoid"]
    total_ns = sum(ns for _, ns in per_cb.values())
    return {
        "case": f"pw_lia, {subflows} subflow{'s' if subflows > 1 else ''}",
        "goodput_mbps": float(res.flows["goodput_bps"][0]) / 1e6,
        "calls": {cb: v[0] for cb, v in per_cb.items()},
        "cong_avoid_calls": ca_calls,
        "ns_per_cong_avoid": ca_ns / ca_calls if ca_calls else float("nan"),
        "ns_per_ack_all_callbacks": total_ns / ca_calls if ca_calls else float("nan"),
        "reliable": bool(res.emulation["reliable"]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    from pathweave import _core

    if not _core.EMULATE_LOADS_CONTROLLERS:
        print(
            "bench/kernel.py: this build has no BPF controllers; run `make setup` with the "
            "BPF toolchain installed (clang, bpftool, libbpf-dev)",
            file=sys.stderr,
        )
        return 2
    bpftool = _bpftool()
    try:
        old = STATS.read_text().strip()
        STATS.write_text("1")
    except OSError as e:
        print(
            f"bench/kernel.py: cannot enable BPF run-time statistics ({STATS}): {e}; run as root",
            file=sys.stderr,
        )
        return 2
    try:
        rows = [measure(n, args.seconds, bpftool) for n in (2, 1)]
    finally:
        STATS.write_text(old)
    print(
        f"pathweave-kernel CPU cost per ACK ({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, kernel {platform.release()}, {args.seconds:g} s per case)"
    )
    print(
        f"{'case':<22} {'goodput':>9} {'cong_avoid':>11} {'ns/cong_avoid':>14} {'ns/ACK, all':>12}"
    )
    for r in rows:
        print(
            f"{r['case']:<22} {r['goodput_mbps']:8.2f}M {r['cong_avoid_calls']:>11} "
            f"{r['ns_per_cong_avoid']:>14.1f} {r['ns_per_ack_all_callbacks']:>12.1f}"
            + ("" if r["reliable"] else "  (emulation unreliable)")
        )
    for r in rows:
        calls = ", ".join(f"{k} {v}" for k, v in r["calls"].items() if v)
        print(f"  {r['case']}: {calls}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
