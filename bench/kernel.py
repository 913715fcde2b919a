"""Benchmark: the CPU cost per ACK of pathweave's BPF controllers against the kernel's Reno.

One connection sends over emulated links for a few seconds of real time while the kernel's
BPF run-time statistics are on (`kernel.bpf_stats_enabled = 1`): every call of a struct_ops
program adds its run time and one to its count. The figures are read while the run goes
(`bpftool prog show --json`, polled). Printed per case: calls of each callback, `cong_avoid`
calls (one per ACK that opens the window in congestion avoidance or slow start), nanoseconds
per `cong_avoid` call, the same less the fixed cost of a timed call, and nanoseconds per
`cong_avoid` call over every callback of the controller.

Cases, on the same emulated links (20 Mbit/s, 10 ms, drop-tail one BDP):

* ``kernel Reno`` — a plain TCP flow on `pwref_reno` (`pathweave kernel reference-reno`),
  which forwards to the kernel's own Reno functions, so the statistics time kernel Reno's
  increase; its empty `in_ack_event`, called on every ACK, times the fixed cost of one
  timed struct_ops call (trampoline and the statistics' two clock reads), which is taken off
  every case's `cong_avoid` figure;
* ``pw_lia, 1 subflow`` — an MPTCP connection with one subflow on `pw_lia`: registration,
  the map lookup and spin lock of its connection entry, then Reno's increase (the same kernel
  function, called as a kfunc), since a subflow alone has no sibling to couple with;
* ``pw_lia, 2 subflows`` — the coupled path: map lookup, spin lock, the siblings' copy and
  LIA's alpha.

    python bench/kernel.py [--seconds 8] [--json OUT]

Needs root, BTF and the extension built with the BPF controllers (`make setup` where the
BPF toolchain is installed: clang, bpftool, libbpf-dev, libelf-dev).
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


def scenario_text(subflows: int, seconds: float, algorithm: str = "lia") -> str:
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
algorithm = "{algorithm}"
subflows = [ {paths} ]
"""


def _bpftool() -> str:
    found = shutil.which("bpftool") or (
        "/usr/sbin/bpftool" if Path("/usr/sbin/bpftool").exists() else None
    )
    if found is None:
        sys.exit("bench/kernel.py: bpftool is needed (apt-get install bpftool)")
    return found


def _pw_callbacks(suffix: str) -> dict[str, str]:
    """Program name -> callback, for the pw controllers ``*_<suffix>``. The kernel cuts names
    to 15 characters (cong_avoid_pw_l); bpftool shows the full one where the BTF has it."""
    names = {f"{cb}_pw_{suffix}": cb for cb in CALLBACKS}
    return names | {n[:15]: cb for n, cb in names.items()}


# pwref_reno's programs (crates/pathweave-kernel/src/bpf/reno_ref.bpf.c).
REFERENCE = {
    "ref_ssthresh": "ssthresh",
    "ref_cong_avoid": "cong_avoid",
    "ref_undo_cwnd": "undo_cwnd",
    "ref_in_ack_event": "in_ack_event",
}


def _programs(bpftool: str, names: dict[str, str]) -> dict[int, tuple[str, int, int]]:
    """Program id -> (callback, run count, run time ns) for struct_ops programs in ``names``."""
    out = subprocess.run([bpftool, "prog", "show", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        return {}
    found = {}
    for p in json.loads(out.stdout or "[]"):
        cb = names.get(p.get("name", ""))
        if p.get("type") == "struct_ops" and cb is not None:
            found[p["id"]] = (cb, int(p.get("run_cnt", 0)), int(p.get("run_time_ns", 0)))
    return found


def measure(
    case: str,
    text: str,
    names: dict[str, str],
    bpftool: str,
    reno_congestion: str | None = None,
    exclude: set[int] | None = None,
) -> dict[str, Any]:
    """Emulates scenario ``text`` while polling the statistics of the programs in ``names``,
    leaving out the program ids in ``exclude`` (by default those loaded before the run: the
    run's controllers are its own); returns the per-callback totals."""
    from pathweave.emulate import emulate

    # Programs of earlier loads can stay loaded for a while after they unregister.
    before = set(_programs(bpftool, names)) if exclude is None else exclude
    last: dict[int, tuple[str, int, int]] = {}
    done = threading.Event()

    def read() -> None:
        for pid, v in _programs(bpftool, names).items():
            if pid not in before:
                last[pid] = v

    def poll() -> None:
        while not done.is_set():
            read()
            done.wait(0.2)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench.toml"
            path.write_text(text)
            res = emulate(path, reno_congestion=reno_congestion)
    finally:
        done.set()
        t.join()
    read()  # once more, for programs that outlive the run (the reference Reno)
    per_cb: dict[str, list[int]] = {}
    for cb, cnt, ns in last.values():
        acc = per_cb.setdefault(cb, [0, 0])
        acc[0] += cnt
        acc[1] += ns
    ca_calls, ca_ns = per_cb.get("cong_avoid", [0, 0])
    # in_ack_event is the reference's measuring probe, not part of a controller's work.
    work_ns = sum(ns for cb, (_, ns) in per_cb.items() if cb != "in_ack_event")
    probe_calls, probe_ns = per_cb.get("in_ack_event", [0, 0])
    return {
        "case": case,
        "kernel_congestion": res.emulation["kernel_algorithms"][0],
        "goodput_mbps": float(res.flows["goodput_bps"][0]) / 1e6,
        "calls": {cb: v[0] for cb, v in per_cb.items()},
        "cong_avoid_calls": ca_calls,
        "ns_per_cong_avoid": ca_ns / ca_calls if ca_calls else float("nan"),
        "ns_per_ack_all_callbacks": work_ns / ca_calls if ca_calls else float("nan"),
        "ns_per_empty_call": probe_ns / probe_calls if probe_calls else None,
        "reliable": bool(res.emulation["reliable"]),
    }


class _ReferenceReno:
    """``pathweave kernel reference-reno`` for the length of a ``with`` block."""

    def __enter__(self) -> _ReferenceReno:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pathweave", "kernel", "reference-reno"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "pwref_reno":
            self.proc.kill()
            err = self.proc.communicate()[1]
            sys.exit(f"bench/kernel.py: pathweave kernel reference-reno failed: {err.strip()}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


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
        earlier = set(_programs(bpftool, REFERENCE))
        with _ReferenceReno():
            reno = measure(
                "kernel Reno",
                scenario_text(1, args.seconds, "reno"),
                REFERENCE,
                bpftool,
                reno_congestion="pwref_reno",
                exclude=earlier,
            )
        rows = [reno] + [
            measure(
                f"pw_lia, {n} subflow{'s' if n > 1 else ''}",
                scenario_text(n, args.seconds),
                _pw_callbacks("lia"),
                bpftool,
            )
            for n in (1, 2)
        ]
    finally:
        STATS.write_text(old)
    fixed = reno["ns_per_empty_call"] or 0.0
    for r in rows:
        r["ns_per_cong_avoid_less_fixed"] = r["ns_per_cong_avoid"] - fixed
    print(
        f"pathweave-kernel CPU cost per ACK ({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, kernel {platform.release()}, {args.seconds:g} s per case)"
    )
    print(
        f"fixed cost of one timed struct_ops call (pwref_reno's empty in_ack_event, "
        f"{reno['calls'].get('in_ack_event', 0)} calls): {fixed:.1f} ns"
    )
    print(
        f"{'case':<20} {'goodput':>9} {'cong_avoid':>11} {'ns/cong_avoid':>14} "
        f"{'less fixed':>11} {'ns/ACK, all':>12}"
    )
    for r in rows:
        print(
            f"{r['case']:<20} {r['goodput_mbps']:8.2f}M {r['cong_avoid_calls']:>11} "
            f"{r['ns_per_cong_avoid']:>14.1f} {r['ns_per_cong_avoid_less_fixed']:>11.1f} "
            f"{r['ns_per_ack_all_callbacks']:>12.1f}"
            + ("" if r["reliable"] else "  (emulation unreliable)")
        )
    for r in rows:
        calls = ", ".join(f"{k} {v}" for k, v in sorted(r["calls"].items()) if v)
        print(f"  {r['case']} ({r['kernel_congestion']}): {calls}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
