"""The coupled algorithms on the kernel: `pathweave emulate` runs lia, olia, balia,
fully-coupled and bmc on pathweave-kernel's BPF controllers (loaded privately for each run)
over real MPTCP, and the simulator predicts what they do.

Real-time tests (root, BTF, MPTCP, a build with the BPF controllers). The default run takes one
seed per scenario (about five minutes); the full forms, three seeds each, are marked slow.
Thresholds are the ones the controllers are specified by (RFC 6356's goals, the headline's
bounds); where one seed of a short run cannot meet a bound on its own the single-seed form
says why and by how much, from the simulator's own spread over seeds.
"""

from __future__ import annotations

import functools
import math
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import tomli_w

import pathweave
from pathweave import _core
from pathweave.compare import variants
from pathweave.emulate import EmulatedResult, emulate
from test_emulate import (  # noqa: F401 (nothing_left_behind: an autouse fixture)
    WHY_NOT,
    _one_link,
    _scenario,
    nothing_left_behind,
)

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
KERNEL_SCENARIOS = SCENARIOS / "kernel"
COUPLED = ["lia", "olia", "balia", "fully-coupled"]
SIM_SEEDS = [1, 2, 3, 4, 5]
ONE_SEED = [1]
THREE_SEEDS = [1, 2, 3]


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


@pytest.fixture(autouse=True)
def no_controller_left_behind():
    """Every run's private controllers are unregistered when it ends."""
    before = _available()
    yield
    assert _available() == before


@functools.cache
def _copy(name: str, seconds: float) -> Path:
    """A scenario of the repository with its duration set, written once per session."""
    src = SCENARIOS / name if (SCENARIOS / name).exists() else KERNEL_SCENARIOS / name
    doc = tomllib.loads(src.read_text(encoding="utf-8"))
    doc["duration"] = f"{seconds}s"
    out = Path(_tmpdir()) / f"{Path(name).stem}-{seconds}s.toml"
    out.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return out


@functools.cache
def _tmpdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="pw-kernel-emulate-")


@functools.cache
def _emulated(name: str, seconds: float, algorithm: str, seed: int) -> EmulatedResult:
    sc = variants(_copy(name, seconds), "mp", [algorithm])[algorithm]
    res = emulate(sc, seed)
    rep = res.emulation
    print(
        f"{name} {algorithm} seed {seed}: {rep['kernel_algorithms']} "
        f"p99 lateness {rep['lateness']['p99_ms']:.3f} ms, reliable {rep['reliable']}"
    )
    return res


# The kernel's controllers follow the out-of-tree MPTCP kernel's arithmetic, so the simulator
# runs the same: `arithmetic = "linux"` where the algorithm has it.
LINUX_ARITHMETIC = {"lia", "olia", "balia"}


@functools.cache
def _simulated(name: str, seconds: float, algorithm: str, seed: int) -> pathweave.Result:
    doc = tomllib.loads(_copy(name, seconds).read_text(encoding="utf-8"))
    for f in doc["flow"]:
        if f["name"] == "mp":
            f["algorithm"] = algorithm
            if algorithm in LINUX_ARITHMETIC:
                f["arithmetic"] = "linux"
    sc = pathweave.parse(tomli_w.dumps(doc), f"{name} ({algorithm}, linux arithmetic)")
    return pathweave.run(sc, seed=seed)


def _goodput(res: pathweave.Result, flow: str) -> float:
    f = res.flows
    return float(f.loc[f["name"] == flow, "goodput_bps"].sum())


def _share_ratio(res: pathweave.Result) -> float:
    """The connection's goodput over the mean of the other flows' (compare's share_ratio)."""
    f = res.flows
    others = f.loc[f["name"] != "mp", "goodput_bps"]
    return _goodput(res, "mp") / float(others.mean())


HEADLINE_S = 30

# Measured, not modelled: over real MPTCP the fully coupled connection gets 0.68-0.78x the
# Reno flow where the simulator predicts about 1.1x. Its decrease takes half the *total*
# window from one subflow, so a subflow often sits at one or two packets; a loss there waits
# for a timeout, and meanwhile the receiver holds everything the other subflow delivers out of
# order (the MPTCP receiver's OFO queue took 17,191 packets in one 30 s run and in 19-30 % of
# the 100 ms samples the connection delivered nothing, against 1.3 % in the simulator, whose
# connection-level reassembly sees far shorter stalls). See docs/kernel.md.
FULLY_COUPLED_MISS = pytest.mark.xfail(
    strict=False,
    reason="fully coupled over real MPTCP: connection-level head-of-line blocking behind "
    "subflows at one or two packets, which the simulator does not reproduce",
)


def _coupled_params() -> list:  # type: ignore[type-arg]
    return [*COUPLED[:3], pytest.param("fully-coupled", marks=FULLY_COUPLED_MISS)]


def _check_headline(algorithm: str, seeds: list[int]) -> None:
    """The mp/Reno ratio emulated (mean over ``seeds``) against its bounds and against the
    simulator's mean over five seeds (the same arithmetic as the kernel)."""
    emu = [_share_ratio(_emulated("headline.toml", HEADLINE_S, algorithm, s)) for s in seeds]
    sim = [_share_ratio(_simulated("headline.toml", HEADLINE_S, algorithm, s)) for s in SIM_SEEDS]
    e, s = float(np.mean(emu)), float(np.mean(sim))
    print(
        f"headline {algorithm}: emulated {np.round(emu, 2)} (mean {e:.2f}), "
        f"simulated {np.round(sim, 2)} (mean {s:.2f})"
    )
    if algorithm == "uncoupled":
        assert e >= 1.5, "per-subflow Reno takes two shares"
        return
    assert 0.7 <= e <= 1.35, f"{algorithm}: {e:.2f}x the Reno flow"
    assert abs(e - s) <= 0.2, f"{algorithm}: emulated {e:.2f}, simulated {s:.2f}"


@kernel_realtime
@pytest.mark.parametrize("algorithm", ["uncoupled", *_coupled_params()])
def test_headline_on_linux(algorithm: str) -> None:
    """One seed of 30 s: a coupled connection gets 0.7x to 1.35x the Reno flow, per-subflow
    Reno at least 1.5x, and each coupled ratio is within 0.2 of the simulator's."""
    _check_headline(algorithm, ONE_SEED)


@kernel_realtime
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["uncoupled", *_coupled_params()])
def test_headline_on_linux_three_seeds(algorithm: str) -> None:
    _check_headline(algorithm, THREE_SEEDS)


SHARED_S = 30


def _rfc6356(res: pathweave.Result) -> tuple[float, float, float]:
    """Goal 1: the connection over the Reno flow on the better path. Goal 2: each subflow over
    the Reno flow on its path (the larger of the two). And the share ratio."""
    reno = {"a": _goodput(res, "reno-a"), "b": _goodput(res, "reno-b")}
    mp = _goodput(res, "mp")
    subs = res.subflows[res.subflows["flow"] == 0].sort_values("subflow")
    tput = subs["throughput_bps"].to_numpy()
    goal1 = mp / max(reno.values())
    goal2 = max(tput[0] / reno["a"], tput[1] / reno["b"])
    return goal1, goal2, _share_ratio(res)


def _check_rfc6356(algorithm: str, seeds: list[int], goal1_floor: float) -> None:
    name = "two-paths-shared.toml"
    emu = np.array([_rfc6356(_emulated(name, SHARED_S, algorithm, s)) for s in seeds])
    sim = np.array([_rfc6356(_simulated(name, SHARED_S, algorithm, s)) for s in SIM_SEEDS])
    e, s = emu.mean(axis=0), sim.mean(axis=0)
    print(
        f"two-paths-shared {algorithm}: goal 1 {e[0]:.2f} (sim {s[0]:.2f}), goal 2 {e[1]:.2f} "
        f"(sim {s[1]:.2f}), share ratio {e[2]:.2f} (sim {s[2]:.2f})"
    )
    assert e[0] >= goal1_floor, f"goal 1: {e[0]:.2f}x the better path's Reno flow"
    assert e[1] <= 1.1, f"goal 2: a subflow took {e[1]:.2f}x the Reno flow on its path"
    assert abs(e[2] - s[2]) <= 0.2, f"share ratio emulated {e[2]:.2f}, simulated {s[2]:.2f}"


@kernel_realtime
@pytest.mark.parametrize("algorithm", _coupled_params())
def test_rfc6356_goals_on_two_disjoint_shared_paths(algorithm: str) -> None:
    """One seed of 30 s. Goal 2 (no subflow above 1.1x the Reno flow on its path) and the
    agreement with the simulator are asserted as specified; goal 1 with a floor of 0.8 instead
    of 0.9, because one 30 s seed varies by that much in the simulator itself (seeds 1 to 3
    give 0.90 to 1.16 for the same algorithm). The three-seed form asserts 0.9."""
    _check_rfc6356(algorithm, ONE_SEED, goal1_floor=0.8)


@kernel_realtime
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", _coupled_params())
def test_rfc6356_goals_on_two_disjoint_shared_paths_three_seeds(algorithm: str) -> None:
    _check_rfc6356(algorithm, THREE_SEEDS, goal1_floor=0.9)


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
                "paths alone: the simulator gives 76 % of the sum for this scenario",
            ),
        ),
    ],
)
def test_two_disjoint_paths_alone_are_both_used(algorithm: str) -> None:
    """A connection alone on 10 + 20 Mbit/s gets at least 90 % of the sum as goodput."""
    res = _emulated("two-paths-alone.toml", 15, algorithm, 1)
    sim = _simulated("two-paths-alone.toml", 15, algorithm, 1)
    share, sim_share = _goodput(res, "mp") / 30e6, _goodput(sim, "mp") / 30e6
    print(f"two-paths-alone {algorithm}: {share:.3f} of 30 Mbit/s (sim {sim_share:.3f})")
    assert share >= 0.9


def _weight_b(res: pathweave.Result, after_s: float) -> tuple[float, float]:
    """The BMC connection's weight on path b: mean after ``after_s`` and at the end."""
    ss = res.subflow_series
    b = ss[(ss["flow"] == 0) & (ss["subflow"] == 1)]
    late = b[b["time_s"] > after_s]["weight"]
    return float(late.mean()), float(b["weight"].iloc[-1])


@kernel_realtime
def test_bmc_moves_weight_away_from_cross_traffic_as_simulated() -> None:
    """Reno cross traffic on path a: within a few 2 s periods the manager moves weight to b,
    and keeps it there, in the kernel as in the simulator (mean weight on b over the last
    two thirds above 0.6 in both)."""
    emu = _emulated("bmc-cross-traffic.toml", 30, "bmc", 1)
    sim = _simulated("bmc-cross-traffic.toml", 30, "bmc", 1)
    (e_mean, e_end), (s_mean, s_end) = _weight_b(emu, 10.0), _weight_b(sim, 10.0)
    print(
        f"bmc weight on b after 10 s: emulated mean {e_mean:.3f} (end {e_end:.3f}), "
        f"simulated mean {s_mean:.3f} (end {s_end:.3f}); "
        f"{emu.emulation['weight_updates']} weight updates written"
    )
    assert emu.emulation["weight_updates"] >= 5
    assert s_mean > 0.6, "the simulator's prediction for this scenario"
    assert e_mean > 0.6
    assert not math.isnan(e_end)


@kernel_realtime
def test_one_subflow_of_each_controller_matches_reno(tmp_path: Path) -> None:
    """One path, 20 Mbit/s, 20 ms, a BDP of drop-tail buffer: a one-subflow MPTCP connection on
    each pw_* controller gets goodput within 5 % of kernel Reno (with one subflow every
    coupled increase is Reno's, RFC 6356 §3), and halves its window on loss: each new
    ssthresh is about half the window sampled just before (RFC 5681; the window may have
    grown a little between the 100 ms sample and the loss)."""

    def halvings(res: EmulatedResult) -> list[float]:
        ss = res.subflow_series
        ss = ss[(ss["flow"] == 0) & (ss["subflow"] == 0)]
        th = ss["ssthresh_bytes"].to_numpy()
        cw = ss["cwnd_bytes"].to_numpy()
        return [
            float(th[i] / cw[i - 1])
            for i in range(1, len(th))
            if not math.isnan(th[i]) and (math.isnan(th[i - 1]) or th[i] < th[i - 1])
        ]

    def goodput(algorithm: str) -> float:
        flow = f'[[flow]]\nname = "mp"\nalgorithm = "{algorithm}"\npath = ["l"]'
        res = emulate(_scenario(tmp_path, _one_link(20, flow, "10s"), f"{algorithm}.toml"))
        assert res.emulation["kernel_algorithms"][0].endswith(
            {"reno": "reno", "fully-coupled": "_coupled"}.get(algorithm, f"_{algorithm}")
        )
        ratios = halvings(res)
        print(f"{algorithm}: new ssthresh over the window before, {np.round(ratios, 2)}")
        assert ratios, f"{algorithm}: no congestion event in 10 s"
        assert 0.4 <= float(np.median(ratios)) <= 0.6, (algorithm, ratios)
        s = res.flow_series
        return float(s[s["time_s"] > 2.0]["rate_bps"].mean())

    reno = goodput("reno")
    rows = {a: goodput(a) for a in [*COUPLED, "bmc"]}
    print(
        f"one subflow, steady goodput: reno {reno / 1e6:.2f} Mbit/s, "
        + ", ".join(f"{a} {g / 1e6:.2f}" for a, g in rows.items())
    )
    for a, g in rows.items():
        assert abs(g - reno) <= 0.05 * reno, (a, g, reno)
