"""The coupled algorithms on the kernel: `pathweave emulate` runs lia, olia, balia,
fully-coupled, bmc and kelly-voice on pathweave-kernel's BPF controllers (loaded privately for
each run) over real MPTCP, and the simulator predicts what they do.

Real-time tests (root, BTF, MPTCP, a build with the BPF controllers), about seven minutes.
Each scenario runs as five independent copies side by side in one file
(`pathweave.replicas`): one emulated run gives five samples (the specification asks for three
seeds; with three copies a mean moved by about 0.1 from run to run, enough to cross a 0.2
agreement bound by chance: LIA's share ratio came out at 1.41 once against 1.10-1.22 in six
other runs), in the wall time of one. The simulator runs the same replicated file with five
seeds (25 samples). Thresholds are the ones the controllers are specified by (RFC 6356's
goals, the headline's bounds), asserted on the mean over the copies.

Both engines run the same TCP: the scenarios turn on limited transmit (RFC 3042), which Linux
always does and the simulator does only when asked. Without it the simulator's subflows, at
windows of a few packets, wait for timeouts where Linux's do not (OLIA on the headline: 1.07x
the Reno flow without it against 0.99x with it, over the same fifteen samples). And both
run Linux MPTCP's sending side (`scheduler = "linux"`): data queued on each subflow ahead of
its window, which is what makes fully coupled control, and OLIA and LIA on the shared paths,
fall short on the kernel.
"""

from __future__ import annotations

import functools
import json
import math
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w

import pathweave
from pathweave import _core
from pathweave.emulate import EmulatedResult, emulate
from pathweave.replicas import replica_of, replicate
from test_emulate import (  # noqa: F401 (nothing_left_behind: an autouse fixture)
    WHY_NOT,
    _one_link,
    _scenario,
    decrease_ratios,
    kept_time,
    nothing_left_behind,
    repeat_while_late,
)

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
KERNEL_SCENARIOS = SCENARIOS / "kernel"
COUPLED = ["lia", "olia", "balia", "fully-coupled"]
# Kelly-Voice (pw_kv) runs in the one-subflow test and on the headline.
HEADLINE = (*COUPLED, "kelly-voice")
COPIES = 5
SIM_SEEDS = [1, 2, 3, 4, 5]
# How long a run's private controllers may stay registered, and their programs loaded, after
# it returns: a controller unregisters when the run drops its link, and its programs are freed
# with the last socket that used them, which the run aborts when it ends (a gracefully closed
# socket over stopped links would hold them for one to two minutes).
UNREGISTER_WITHIN_S = 5.0
BPFTOOL = shutil.which("bpftool") or "/usr/sbin/bpftool"


def _why_not_kernel() -> str | None:
    if WHY_NOT is not None:
        return WHY_NOT
    if not _core.EMULATE_LOADS_CONTROLLERS:
        return "this build of the extension has no BPF controllers (no BPF toolchain at build time)"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
    return None


WHY_NOT_KERNEL = _why_not_kernel()
if WHY_NOT_KERNEL is not None:
    print(f"test_kernel_emulate: skipped: {WHY_NOT_KERNEL}", file=sys.stderr)


def kernel_realtime(test):  # type: ignore[no-untyped-def]
    """Real time over the kernel's controllers: root, BTF, the BPF build; marked `emulation`."""
    skip = pytest.mark.skipif(WHY_NOT_KERNEL is not None, reason=WHY_NOT_KERNEL or "")
    return pytest.mark.emulation(skip(test))


def _available() -> set[str]:
    text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    return set(text.split())


def _controller_programs() -> set[int]:
    """Ids of the loaded BPF programs of pathweave's controllers (any prefix: the programs are
    named after pw.bpf.c's functions, cong_avoid_pw_lia and so on)."""
    out = subprocess.run([BPFTOOL, "prog", "show", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return {
        p["id"]
        for p in json.loads(out.stdout or "[]")
        if p.get("type") == "struct_ops" and "_pw_" in p.get("name", "")
    }


@pytest.fixture(autouse=True)
def no_controller_left_behind():
    """Every run's private controllers are unregistered, and their programs unloaded, soon
    after it ends."""
    if WHY_NOT_KERNEL is not None:
        yield
        return
    before = _available()
    programs = _controller_programs()
    yield

    def left() -> tuple[set[str], set[int]]:
        return _available() ^ before, _controller_programs() - programs

    deadline = time.monotonic() + UNREGISTER_WITHIN_S
    while left() != (set(), set()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left() == (set(), set())


def _doc(name: str, seconds: float, algorithm: str) -> dict[str, Any]:
    """A scenario of the repository in ``COPIES`` copies, with its duration set, the flow named
    "mp" on ``algorithm``, and ``[tcp] profile = "linux"``: the simulator does what Linux does
    (limited transmit; with SACK recovery, proportional rate reduction and the SACKs kept
    across a timeout; MPTCP's option bytes; Linux MPTCP's sending side and handshakes) and
    runs the coupled controllers with the kernel controllers' arithmetic (that of the
    out-of-tree MPTCP kernel) where the algorithm has it. The emulator runs the kernels' own
    stacks whatever the profile says."""
    src = SCENARIOS / name if (SCENARIOS / name).exists() else KERNEL_SCENARIOS / name
    doc = tomllib.loads(src.read_text(encoding="utf-8"))
    doc["duration"] = f"{seconds}s"
    doc.setdefault("tcp", {})["profile"] = "linux"
    for f in doc["flow"]:
        if f["name"] == "mp":
            f["algorithm"] = algorithm
    return replicate(doc, COPIES)


# Runs before a late run is accepted as a verdict on the machine, and the pause before each
# further one.
ON_TIME_RUNS = 3
LATE_PAUSE_S = 30.0


def _on_time(label: str, run: Callable[[], EmulatedResult]) -> EmulatedResult:
    """The result of `run`, which must be one the emulator kept on time: a run it could not
    keep on time measures the machine, not the controllers. The host of a 2-vCPU VM has busy
    spells (seen right after large builds, and in one CI run for about seven minutes, with
    p99 lateness of 0.24-2.7 ms against the usual 0.15), so a late run is repeated after a
    pause, up to ``ON_TIME_RUNS`` runs in all; every run's figures are printed, with the CPU
    time the hypervisor took meanwhile, and a last late run fails the test."""
    done = repeat_while_late(run, lambda r: not r.reliable, label, ON_TIME_RUNS, LATE_PAUSE_S)
    return kept_time(done, label)


def _keeps_verdict(fn: Callable[..., EmulatedResult]) -> Callable[..., EmulatedResult]:
    """``functools.cache`` that keeps a skip or a failed check as well as a result: several
    tests read one emulation, and a run that could not be kept on time would otherwise be
    repeated, pauses and all, by each of them (the three tests of the two shared paths took
    157 s each for one algorithm in a CI run on a busy host, all on one verdict)."""
    verdicts: dict[tuple[Any, ...], tuple[bool, Any]] = {}

    @functools.wraps(fn)
    def cached(*args: Any) -> EmulatedResult:
        if args not in verdicts:
            try:
                verdicts[args] = (True, fn(*args))
            except (pytest.skip.Exception, AssertionError) as e:
                verdicts[args] = (False, e)
        ok, value = verdicts[args]
        if ok:
            return value  # type: ignore[no-any-return]
        raise value

    return cached


def test_a_kept_verdict_is_given_to_every_reader() -> None:
    """`_keeps_verdict`: a result, a skip and a failed check are each reached once per
    argument and handed to every later call."""
    calls: list[str] = []

    @_keeps_verdict
    def verdict(kind: str) -> Any:
        calls.append(kind)
        if kind == "skip":
            pytest.skip("host busy")
        assert kind == "result", kind
        return kind

    for _ in range(2):
        assert verdict("result") == "result"
        with pytest.raises(pytest.skip.Exception, match="host busy"):
            verdict("skip")
        with pytest.raises(AssertionError, match="late"):
            verdict("late")
    assert calls == ["result", "skip", "late"]


@_keeps_verdict
def _emulated(name: str, seconds: float, algorithm: str) -> EmulatedResult:
    doc = _doc(name, seconds, algorithm)
    sc = pathweave.parse(tomli_w.dumps(doc), f"{name} x{COPIES} ({algorithm})")

    def run() -> EmulatedResult:
        res = emulate(sc, 1)
        rep = res.emulation
        counters = rep["controller_counters"]
        print(
            f"{name} {algorithm}: {sorted(set(rep['kernel_algorithms']))} "
            f"p99 lateness {rep['lateness']['p99_ms']:.3f} ms, "
            f"p99 intake wait {rep['intake_wait']['p99_ms']:.3f} ms, "
            f"reliable {rep['reliable']}; "
            f"controllers {', '.join(f'{k} {v}' for k, v in counters.items() if v)}"
        )
        return res

    res = _on_time(f"{name} {algorithm}", run)
    rep = res.emulation
    if rep["controllers_prefix"]:
        # Both subflows of every copy's connection took a slot in the coupled state.
        counters = rep["controller_counters"]
        assert counters["subflows registered"] >= 2 * COPIES, counters
        assert counters["subflows beyond 8 (Reno)"] == 0, counters
    return res


@functools.cache
def _simulated(name: str, seconds: float, algorithm: str, seed: int) -> pathweave.Result:
    doc = _doc(name, seconds, algorithm)
    sc = pathweave.parse(tomli_w.dumps(doc), f"{name} x{COPIES} ({algorithm}, linux arithmetic)")
    return pathweave.run(sc, seed=seed)


# Rates are compared in the steady state, after the first slow start and its losses: the
# engines start differently. The simulator's receive window is unlimited unless a scenario sets
# one, so its first slow start overshoots far further than Linux's (whose receiver opens its
# window as data arrives): up to 356 segments outstanding, round trips up to 0.7 s and
# timeouts in the first second on the headline, which then weigh on a 30 s average. Balia's
# simulated headline ratio is 0.99 over the whole run and 1.13 after the first 5 s (ten seeds);
# over Linux the start matters less (whole-run and steady ratios 0.05 apart at most, measured).
WARMUP_S = 5.0


def _per_copy(res: pathweave.Result) -> list[dict[str, Any]]:
    """Per copy, after ``WARMUP_S``: each flow's mean goodput by original name, and the "mp"
    connection's subflow rates in subflow order."""
    fs = res.flow_series
    fs = fs[fs["time_s"] > WARMUP_S]
    ss = res.subflow_series
    ss = ss[ss["time_s"] > WARMUP_S]
    out: list[dict[str, Any]] = [{"goodput": {}, "subflows": []} for _ in range(COPIES)]
    for index, name in enumerate(res.flows["name"]):
        base, k = replica_of(str(name))
        out[k]["goodput"][base] = float(fs[fs["flow"] == index]["rate_bps"].mean())
        if base == "mp":
            mine = ss[ss["flow"] == index]
            out[k]["subflows"] = [
                float(mine[mine["subflow"] == j]["rate_bps"].mean())
                for j in sorted(set(mine["subflow"]))
            ]
    return out


def _share_ratio(copy: dict[str, Any]) -> float:
    """The connection's goodput over the mean of the other flows' (compare's share_ratio)."""
    others = [g for name, g in copy["goodput"].items() if name != "mp"]
    return copy["goodput"]["mp"] / float(np.mean(others))


def _samples(name: str, seconds: float, algorithm: str, metric: Any) -> tuple[Any, Any]:
    """``metric`` of every copy: emulated (one run) and simulated (every seed)."""
    emu = np.array([metric(c) for c in _per_copy(_emulated(name, seconds, algorithm))])
    sim = np.array(
        [metric(c) for s in SIM_SEEDS for c in _per_copy(_simulated(name, seconds, algorithm, s))]
    )
    return emu, sim


HEADLINE_S = 30


def _marked(misses: dict[str, str], algorithms: tuple[str, ...] = tuple(COUPLED)) -> list:  # type: ignore[type-arg]
    return [
        pytest.param(a, marks=pytest.mark.xfail(strict=False, reason=misses[a]))
        if a in misses
        else a
        for a in algorithms
    ]


# Over real MPTCP the fully coupled connection gets 0.61-0.80x the Reno flow. Its decrease
# takes half the *total* window from one subflow, so a subflow's window is often cut to one or
# two packets while Linux MPTCP has already queued hundreds of kilobytes on it (`ss -tm`:
# 100-500 kB not sent behind a window of 1-6 packets); the data ACK stalls behind them, the
# connection's send buffer (the sum of the subflows', 0.8-1.5 MB) fills and the other subflow
# runs dry. The simulator pulling data into window space predicted 1.05-1.09x; with Linux's
# sending side (`scheduler = "linux"`) and handshakes (both set by `_doc`) it predicts 0.60x,
# the same stall: the kernel's run means were 0.75-0.80 in five runs, 0.61 and 0.71 in two, so
# the test is at its own 0.7 bound and the agreement at its 0.2 bound. Alone on two paths the
# model's stalls go deeper (0.58 of the sum against the kernel's 0.71-0.83). See
# docs/kernel.md.
FULLY_COUPLED_MISS = (
    "fully coupled over real MPTCP: head-of-line blocking behind the send queue of a subflow "
    "cut to one or two packets; the simulator with Linux's sending side reproduces it (0.60x "
    "the Reno flow against the kernel's 0.61-0.80x over seven runs), at both bounds"
)


def _headline(algorithm: str) -> tuple[float, float]:
    """The mp/Reno ratio on the headline, mean over the copies: emulated, simulated."""
    emu, sim = _samples("headline.toml", HEADLINE_S, algorithm, _share_ratio)
    e, s = float(emu.mean()), float(sim.mean())
    print(
        f"headline {algorithm}: emulated {np.round(emu, 2)} (mean {e:.2f}), "
        f"simulated mean {s:.2f} (sd {sim.std():.2f}, {len(sim)} samples)"
    )
    return e, s


# Kelly-Voice's share of the headline, from its design: per ACK on path r it adds
# (w_r/rtt_r²)/(Σ_k w_k/rtt_k)² and a loss on r halves w_r (reference/ALGORITHMS.md §1.5), so at
# a loss rate p every path it uses settles where (1/(rtt_r·S))² = p/2, at a total rate
# S = √(2/p)/rtt_r: one Reno flow's at the same RTT and loss rate (Kelly and Voice 2005, the
# connection takes one TCP's share). The headline's subflows and Reno flow cross one RED queue
# at equal RTTs, so the design gives 1.0x the Reno flow, inside the coupled bound. The simulator
# gives 0.96 (linux arithmetic) and 0.94 (spec) pulling data into window space, and 0.84 and
# 0.88 with Linux's sending side (`_doc`; 25 samples each): the send-queue stalls of OLIA and
# fully coupled control (below), deeper than OLIA's as Kelly-Voice's increase, quadratic in a
# path's share, keeps the smaller subflow's window small. The kernel gave 0.85, 0.79, 0.92 and
# 0.83 in four runs (copies 0.65-1.12).
@kernel_realtime
@pytest.mark.parametrize(
    "algorithm", ["uncoupled", *_marked({"fully-coupled": FULLY_COUPLED_MISS}, HEADLINE)]
)
def test_headline_on_linux(algorithm: str) -> None:
    """Five copies of 30 s: a coupled connection gets 0.7x to 1.35x the Reno flow, per-subflow
    Reno at least 1.5x."""
    e, _ = _headline(algorithm)
    if algorithm == "uncoupled":
        assert e >= 1.5, "per-subflow Reno takes two shares"
        return
    assert 0.7 <= e <= 1.35, f"{algorithm}: {e:.2f}x the Reno flow"


# With Linux's sending side but every subflow sending from time zero, the simulator stalled
# OLIA and Balia behind their send queues more than the kernel (headline: OLIA 0.77 against
# 0.91-0.96 emulated, Balia 0.83 against 0.97-1.12): its joining subflow grew beside the first
# one to about 90 segments in the first slow start and kept a send buffer sized for that,
# where the kernel's joins three round trips later and meets the first losses at about 16.
# With the handshakes simulated (`handshakes`, set by `_doc`) OLIA gives 0.90 and Balia 1.04,
# within 0.15 of every kernel run recorded (eight each). See docs/kernel.md, "Handshakes".
HEADLINE_AGREEMENT_MISSES = {
    "fully-coupled": FULLY_COUPLED_MISS,
}
# Uncoupled Reno subflows sit at the bound: emulated means of 2.06, 1.78, 1.73, 2.01, 1.98 and
# 1.96 in six runs (per-copy standard deviation about 0.2), against 1.94-1.98 simulated. The one
# systematic difference found, MPTCP's DSS option taking 24 bytes of each subflow segment's
# payload in the fixed MTU, is now simulated too (`mptcp_options`, set by `_doc`); what is
# left is the spread of the 30 s copies on the kernel (five copies: 2.01, against 1.98).
UNCOUPLED_AGREEMENT_MISS = (
    "30 s copies of uncoupled subflows over MPTCP spread widely (three-copy run means 1.73-2.06, "
    "per-copy sd about 0.2), which puts the emulated ratio at the 0.2 bound around the "
    "simulated 1.94-1.98"
)


@kernel_realtime
@pytest.mark.parametrize(
    "algorithm",
    [
        pytest.param(
            "uncoupled", marks=pytest.mark.xfail(strict=False, reason=UNCOUPLED_AGREEMENT_MISS)
        ),
        *_marked(HEADLINE_AGREEMENT_MISSES, HEADLINE),
    ],
)
def test_headline_ratio_agrees_with_the_simulator(algorithm: str) -> None:
    """The mean mp/Reno ratio emulated is within 0.2 of the simulator's."""
    e, s = _headline(algorithm)
    assert abs(e - s) <= 0.2, f"{algorithm}: emulated {e:.2f}, simulated {s:.2f}"


SHARED_S = 30


def _rfc6356(copy: dict[str, Any]) -> tuple[float, float, float]:
    """Goal 1: the connection over the Reno flow on the better path. Goal 2: each subflow over
    the Reno flow on its path (the larger of the two). And the share ratio."""
    g = copy["goodput"]
    reno = (g["reno-a"], g["reno-b"])
    tput = copy["subflows"]
    goal1 = g["mp"] / max(reno)
    goal2 = max(tput[0] / reno[0], tput[1] / reno[1])
    return goal1, goal2, _share_ratio(copy)


def _shared(algorithm: str) -> tuple[Any, Any]:
    """Goal 1, goal 2 and the share ratio on two-paths-shared, mean over the copies, emulated
    and simulated."""
    emu, sim = _samples("two-paths-shared.toml", SHARED_S, algorithm, _rfc6356)
    e, s = emu.mean(axis=0), sim.mean(axis=0)
    print(
        f"two-paths-shared {algorithm}: goal 1 {np.round(emu[:, 0], 2)} mean {e[0]:.2f} "
        f"(sim {s[0]:.2f}), goal 2 {e[1]:.2f} (sim {s[1]:.2f}), "
        f"share ratio {e[2]:.2f} (sim {s[2]:.2f})"
    )
    return e, s


# Goal 1 on two shared paths (30 s copies, steady state): the kernel's LIA 0.80-0.99 and OLIA
# 0.73-0.90 over several runs of three copies; five copies gave LIA 0.90, OLIA 0.82. The
# simulator pulling data into window space met it (0.92, 0.93); with Linux's sending side and
# handshakes it gives LIA 0.93 and OLIA 0.76 (fifteen samples; 0.90 and 0.75 over 25): the
# subflow on the faster path, whose window the coupled increase keeps small beside its Reno
# flow, holds a send queue the connection stalls behind, so the connection falls short of
# the better path's Reno flow, OLIA's by more. LIA's kernel runs fall on both sides of the
# bound. See docs/kernel.md.
SEND_QUEUE_GOAL1_MISS = (
    "Linux MPTCP queues data on each subflow ahead of its window, so the connection stalls "
    "behind a subflow's queue; the simulator with Linux's sending side misses goal 1 here too "
    "({sim}x simulated against {emu}x on the kernel over several runs)"
)
GOAL1_MISSES = {
    "lia": SEND_QUEUE_GOAL1_MISS.format(sim="0.90-0.93", emu="0.80-1.17"),
    "olia": SEND_QUEUE_GOAL1_MISS.format(sim="0.76", emu="0.73-0.90"),
    "balia": "Balia gives up some of goal 1 for friendliness and responsiveness (Peng et al. "
    "2016): the simulator gives 0.87x the better path's Reno flow here with Linux's sending "
    "side; the kernel 0.84-1.03x over eight runs",
    "fully-coupled": "fully coupled over real MPTCP: head-of-line blocking behind the send "
    "queue of a subflow cut to one or two packets (see the headline); 0.50x simulated",
}
# The share ratio on the shared paths: OLIA 0.92 and Balia 1.06 simulated are within 0.2 of
# every kernel run recorded (OLIA 0.84-1.09, Balia 1.06-1.24, ten runs each); fully coupled
# control's 0.61 is not always (kernel 0.67-0.86 over eleven runs): its stalls are deeper in the
# model here as alone on two paths, cause not found.
AGREEMENT_MISSES = {
    "fully-coupled": "with Linux's sending side the simulator's fully coupled control stalls "
    "behind its send queues more than the kernel's (0.61 simulated against 0.67-0.86 over eleven "
    "runs); cause of the difference not found",
}


@kernel_realtime
@pytest.mark.parametrize("algorithm", COUPLED)
def test_rfc6356_goal2_on_two_disjoint_shared_paths(algorithm: str) -> None:
    """Goal 2, do no harm: no subflow takes more than 1.1x the Reno flow on its path (mean
    over five copies of 30 s)."""
    e, _ = _shared(algorithm)
    assert e[1] <= 1.1, f"goal 2: a subflow took {e[1]:.2f}x the Reno flow on its path"


@kernel_realtime
@pytest.mark.parametrize("algorithm", _marked(GOAL1_MISSES))
def test_rfc6356_goal1_on_two_disjoint_shared_paths(algorithm: str) -> None:
    """Goal 1, improve throughput: the connection gets at least 0.9x the Reno flow on its
    better path."""
    e, _ = _shared(algorithm)
    assert e[0] >= 0.9, f"goal 1: {e[0]:.2f}x the better path's Reno flow"


@kernel_realtime
@pytest.mark.parametrize("algorithm", _marked(AGREEMENT_MISSES))
def test_shared_paths_share_ratio_agrees_with_the_simulator(algorithm: str) -> None:
    """The connection-to-Reno ratio on two disjoint shared paths is within 0.2 of the
    simulator's."""
    e, s = _shared(algorithm)
    assert abs(e[2] - s[2]) <= 0.2, f"share ratio emulated {e[2]:.2f}, simulated {s[2]:.2f}"


@kernel_realtime
@pytest.mark.parametrize(
    "algorithm",
    [
        "lia",
        "olia",
        "balia",
        pytest.param(
            "fully-coupled",
            marks=pytest.mark.xfail(
                strict=False,
                reason="fully coupled control puts its whole window on the less congested "
                "path (Kelly and Voice 2005; Wischik et al. 2011) and so does not fill two "
                "paths alone: the kernel fills 69-83 % of the sum, the simulator 74-79 % "
                "pulling data into window space and 58 % with Linux's sending side",
            ),
        ),
    ],
)
def test_two_disjoint_paths_alone_are_both_used(algorithm: str) -> None:
    """A connection alone on 10 + 20 Mbit/s gets at least 90 % of the sum as goodput (mean
    over five copies of 15 s)."""

    def share(copy: dict[str, Any]) -> float:
        return copy["goodput"]["mp"] / 30e6

    emu, sim = _samples("two-paths-alone.toml", 15, algorithm, share)
    print(f"two-paths-alone {algorithm}: {np.round(emu, 3)} of 30 Mbit/s (sim {sim.mean():.3f})")
    assert emu.mean() >= 0.9


def _weight_b(res: pathweave.Result, after_s: float) -> list[tuple[float, float]]:
    """Per copy, the BMC connection's weight on path b: mean after ``after_s`` and at the end."""
    ss = res.subflow_series
    names = list(res.flows["name"])
    out = []
    for k in range(COPIES):
        b = ss[(ss["flow"] == names.index(f"mp_r{k}")) & (ss["subflow"] == 1)]
        late = b[b["time_s"] > after_s]["weight"]
        out.append((float(late.mean()), float(b["weight"].iloc[-1])))
    return out


@kernel_realtime
def test_bmc_moves_weight_away_from_cross_traffic_as_simulated() -> None:
    """Reno cross traffic on path a: within a few 2 s periods the manager moves weight to b,
    and keeps it there, in the kernel as in the simulator (mean weight on b over the last
    two thirds above 0.6 in every copy, in both engines)."""
    emu = _weight_b(_emulated("bmc-cross-traffic.toml", 30, "bmc"), 10.0)
    sim = _weight_b(_simulated("bmc-cross-traffic.toml", 30, "bmc", 1), 10.0)
    updates = _emulated("bmc-cross-traffic.toml", 30, "bmc").emulation["weight_updates"]
    print(
        f"bmc weight on b after 10 s (mean, end) per copy: emulated {np.round(emu, 3).tolist()}, "
        f"simulated {np.round(sim, 3).tolist()}; {updates} weight updates written"
    )
    assert updates >= 5 * COPIES
    assert all(m > 0.6 for m, _ in sim), "the simulator's prediction for this scenario"
    assert all(m > 0.6 for m, _ in emu)
    assert not any(math.isnan(end) for _, end in emu)


ONE_SUBFLOW = ["reno", *COUPLED, "bmc", "kelly-voice"]


@kernel_realtime
def test_one_subflow_of_each_controller_matches_reno(tmp_path: Path) -> None:
    """One path, 20 Mbit/s, 20 ms, a BDP of drop-tail buffer: a one-subflow MPTCP connection on
    each pw_* controller gets goodput within 5 % of kernel Reno (with one subflow every
    coupled increase is Reno's, RFC 6356 §3), and halves its window on loss: each new
    ssthresh is about half the window sampled just before (RFC 5681; the window may have
    grown a little between the 100 ms sample and the loss). The end of the first slow start
    is left out: there the window doubles every 40 ms round trip, so the sample up to 100 ms
    before the loss can be a fraction of the window the loss halved. The seven connections run
    side by side in one run, each on its own copy of the link (`pathweave.replicas`)."""
    flow = '[[flow]]\nname = "mp"\nalgorithm = "reno"\npath = ["l"]'
    # 14 s: after the first slow start a Reno sawtooth on this link takes about 4 s.
    text = textwrap.dedent(_one_link(20, flow, "14s"))
    doc = replicate(tomllib.loads(text), len(ONE_SUBFLOW))
    for k, algorithm in enumerate(ONE_SUBFLOW):
        doc["flow"][k]["algorithm"] = algorithm
    path = tmp_path / "one-subflow.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    res = _on_time("one subflow", lambda: emulate(path))
    kernel = res.emulation["kernel_algorithms"]
    s = res.flow_series
    steady = {}
    for k, algorithm in enumerate(ONE_SUBFLOW):
        want = {"reno": "reno", "fully-coupled": "_coupled", "kelly-voice": "_kv"}.get(
            algorithm, f"_{algorithm}"
        )
        assert kernel[k].endswith(want), (algorithm, kernel[k])
        ratios = decrease_ratios(res, k)
        print(f"{algorithm}: new ssthresh over the window before, {np.round(ratios, 2)}")
        assert ratios, f"{algorithm}: no congestion event after slow start in 14 s"
        assert 0.4 <= float(np.median(ratios)) <= 0.6, (algorithm, ratios)
        steady[algorithm] = float(s[(s["flow"] == k) & (s["time_s"] > 2.0)]["rate_bps"].mean())
    reno = steady.pop("reno")
    print(
        f"one subflow, steady goodput: reno {reno / 1e6:.2f} Mbit/s, "
        + ", ".join(f"{a} {g / 1e6:.2f}" for a, g in steady.items())
    )
    for a, g in steady.items():
        assert abs(g - reno) <= 0.05 * reno, (a, g, reno)
