"""Multipath QUIC under `pathweave emulate`: flows with ``transport = "quic"`` run as real
multipath QUIC connections (pathweave-quic, iroh-quinn) whose paths go through the emulated
links, each path's controller pathweave-cc's own, coupled over the paths inside the sender,
beside kernel TCP Reno flows. The simulator's model of the same endpoint runs the same files.

Real-time tests (root, namespaces, TUN; no BPF controllers needed: the coupled control runs in
the QUIC sender). As in test_kernel_emulate, each scenario runs as ``COPIES`` independent
copies side by side in one run, and thresholds are asserted on the mean over the copies, in
the steady state after ``WARMUP_S``. The checks under ``make test-real`` are one of each kind
(about four minutes); the rest of the algorithms and the agreement with the simulator are
marked ``slow``.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tomli_w

import pathweave
from pathweave._core import EmulationRefused
from pathweave.emulate import EmulatedResult, emulate
from pathweave.replicas import replicate
from test_emulate import (  # noqa: F401 (nothing_left_behind: an autouse fixture)
    WHY_NOT,
    nothing_left_behind,
)
from test_kernel_emulate import (
    COPIES,
    KERNEL_SCENARIOS,
    SCENARIOS,
    _keeps_verdict,
    _on_time,
    _per_copy,
    _rfc6356,
    _share_ratio,
    _weight_b,
)

SIM_SEEDS = [1, 2, 3]
PW = [sys.executable, "-m", "pathweave"]


def quic_realtime(test):  # type: ignore[no-untyped-def]
    """Real time: root, namespaces, TUN; marked `emulation`."""
    skip = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
    return pytest.mark.emulation(skip(test))


def _quic_doc(
    name: str, seconds: float, algorithm: str, single_path: bool = False
) -> dict[str, Any]:
    """A scenario of the repository in ``COPIES`` copies, with its duration set and the flow
    named "mp" as a QUIC connection on ``algorithm`` (with ``single_path``, over its first
    path alone). The TCP flows keep the Linux-like settings of the kernel tests (limited
    transmit; with SACK, PRR and SACKs kept across a timeout), which a QUIC flow ignores."""
    src = SCENARIOS / name if (SCENARIOS / name).exists() else KERNEL_SCENARIOS / name
    doc = tomllib.loads(src.read_text(encoding="utf-8"))
    doc["duration"] = f"{seconds}s"
    tcp = doc.setdefault("tcp", {})
    tcp["limited_transmit"] = True
    if tcp.get("recovery") == "sack":
        tcp["prr"] = True
        tcp["keep_sack_on_rto"] = True
    for f in doc["flow"]:
        if f["name"] == "mp":
            f["algorithm"] = algorithm
            f["transport"] = "quic"
            if single_path:
                f["path"] = f.pop("subflows")[0]["path"]
    return replicate(doc, COPIES)


@_keeps_verdict
def _emulated(
    name: str, seconds: float, algorithm: str, single_path: bool = False
) -> EmulatedResult:
    doc = _quic_doc(name, seconds, algorithm, single_path)
    sc = pathweave.parse(tomli_w.dumps(doc), f"{name} x{COPIES} (QUIC {algorithm})")

    def run() -> EmulatedResult:
        res = emulate(sc, 1)
        rep = res.emulation
        print(
            f"{name} QUIC {algorithm}: p99 lateness {rep['lateness']['p99_ms']:.3f} ms, "
            f"p99 intake wait {rep['intake_wait']['p99_ms']:.3f} ms, reliable {rep['reliable']}"
        )
        return res

    return _on_time(f"{name} QUIC {algorithm}", run)


@functools.cache
def _simulated(
    name: str, seconds: float, algorithm: str, seed: int, single_path: bool = False
) -> pathweave.Result:
    doc = _quic_doc(name, seconds, algorithm, single_path)
    sc = pathweave.parse(tomli_w.dumps(doc), f"{name} x{COPIES} (QUIC {algorithm})")
    return pathweave.run(sc, seed=seed)


def _samples(
    name: str,
    seconds: float,
    algorithm: str,
    metric: Callable[[dict[str, Any]], Any],
    single_path: bool = False,
) -> tuple[Any, Any]:
    """``metric`` of every copy: emulated (one run) and simulated (every seed)."""
    emu = np.array([metric(c) for c in _per_copy(_emulated(name, seconds, algorithm, single_path))])
    sim = np.array(
        [
            metric(c)
            for s in SIM_SEEDS
            for c in _per_copy(_simulated(name, seconds, algorithm, s, single_path))
        ]
    )
    return emu, sim


HEADLINE_S = 30


# --- QUIC's own recovery against TCP's ---------------------------------------------------


@quic_realtime
def test_a_single_path_quic_reno_flow_shares_fairly_with_kernel_reno() -> None:
    """Calibration: one single-path QUIC flow with ``reno`` against one kernel TCP Reno flow on
    the headline's bottleneck gets 0.8-1.25x the TCP flow (QUIC's own loss recovery, pacing
    and ACK policy are not unfair in themselves)."""
    emu, sim = _samples("headline.toml", HEADLINE_S, "reno", _share_ratio, single_path=True)
    print(f"headline single-path QUIC reno: {np.round(emu, 2)} (sim {sim.mean():.2f})")
    assert 0.8 <= emu.mean() <= 1.25, emu


# --- the headline ------------------------------------------------------------------------

HEADLINE_CI = ["lia"]
HEADLINE_SLOW = ["olia", "balia", "kelly-voice", "fully-coupled"]


def _headline(algorithm: str) -> tuple[Any, Any]:
    emu, sim = _samples("headline.toml", HEADLINE_S, algorithm, _share_ratio)
    print(f"headline QUIC {algorithm}: {np.round(emu, 2)} mean {emu.mean():.2f}", end=" ")
    print(f"(sim {sim.mean():.2f})")
    return emu, sim


@quic_realtime
@pytest.mark.parametrize(
    "algorithm",
    [*HEADLINE_CI, *(pytest.param(a, marks=pytest.mark.slow) for a in HEADLINE_SLOW)],
)
def test_headline_coupled_quic_takes_about_one_share(algorithm: str) -> None:
    """Headline with "mp" on QUIC: a coupled connection gets 0.7-1.35x the Reno flow (mean over
    the copies of 30 s)."""
    emu, _ = _headline(algorithm)
    assert 0.7 <= emu.mean() <= 1.35, emu


@quic_realtime
@pytest.mark.slow
def test_headline_uncoupled_quic_takes_two_shares() -> None:
    """Uncoupled Reno on two paths takes at least 1.5x the Reno flow."""
    emu, _ = _headline("uncoupled")
    assert emu.mean() >= 1.5, emu


@quic_realtime
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["lia", "olia", "balia"])
def test_headline_ratio_agrees_with_the_simulator(algorithm: str) -> None:
    """The simulator's model of the QUIC endpoint predicts the emulated ratio within 0.2."""
    emu, sim = _headline(algorithm)
    assert abs(emu.mean() - sim.mean()) <= 0.2, (emu.mean(), sim.mean())


# --- RFC 6356's goals where the kernel misses ----------------------------------------------

SHARED_S = 30


def _shared(algorithm: str) -> tuple[Any, Any]:
    emu, sim = _samples("two-paths-shared.toml", SHARED_S, algorithm, _rfc6356)
    e, s = emu.mean(axis=0), sim.mean(axis=0)
    print(
        f"two-paths-shared QUIC {algorithm}: goal 1 {np.round(emu[:, 0], 2)} mean {e[0]:.2f} "
        f"(sim {s[0]:.2f}), goal 2 {e[1]:.2f} (sim {s[1]:.2f}), share ratio {e[2]:.2f} "
        f"(sim {s[2]:.2f})"
    )
    return e, s


SHARED_CI = ["lia"]
SHARED_SLOW = ["olia", "balia"]
SHARED_ALGORITHMS = [*SHARED_CI, *(pytest.param(a, marks=pytest.mark.slow) for a in SHARED_SLOW)]


@quic_realtime
@pytest.mark.parametrize("algorithm", SHARED_ALGORITHMS)
def test_rfc6356_goals_on_two_disjoint_shared_paths(algorithm: str) -> None:
    """Goal 1 (the connection gets at least 0.9x the Reno flow on its better path) and goal 2
    (no subflow above 1.1x the Reno flow on its path), mean over the copies of 30 s: where
    Linux MPTCP's sending side misses goal 1, a sending side that pulls data into window space
    meets it."""
    e, _ = _shared(algorithm)
    assert e[0] >= 0.9, f"goal 1: {e[0]:.2f}x the better path's Reno flow"
    assert e[1] <= 1.1, f"goal 2: a subflow took {e[1]:.2f}x the Reno flow on its path"


@quic_realtime
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["lia", "olia", "balia"])
def test_shared_paths_share_ratio_agrees_with_the_simulator(algorithm: str) -> None:
    """The connection-to-Reno ratio on two shared paths is within 0.2 of the model's."""
    e, s = _shared(algorithm)
    assert abs(e[2] - s[2]) <= 0.2, f"share ratio emulated {e[2]:.2f}, simulated {s[2]:.2f}"


@quic_realtime
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["lia", "olia", "balia"])
def test_two_disjoint_paths_alone_are_both_used(algorithm: str) -> None:
    """Alone on 10 + 20 Mbit/s, a QUIC connection gets at least 90 % of the sum as goodput
    (mean over the copies of 15 s; stream data is 1167 of each 1228 bytes on the wire, so
    95 % is the most it can get)."""

    def share(copy: dict[str, Any]) -> float:
        return float(copy["goodput"]["mp"]) / 30e6

    emu, sim = _samples("two-paths-alone.toml", 15, algorithm, share)
    print(
        f"two-paths-alone QUIC {algorithm}: {np.round(emu, 3)} of 30 Mbit/s (sim {sim.mean():.3f})"
    )
    assert emu.mean() >= 0.9, emu


# --- outages -------------------------------------------------------------------------------


def _two_paths(tmp_path: Path, event: str, duration: str = "40s") -> Path:
    text = f"""
        name = "quic-outage"
        duration = "{duration}"
        sample_interval = "100ms"
        [[link]]
        name = "a"
        rate = "20Mbps"
        delay = "10ms"
        queue = {{ type = "droptail", limit = "60pkt" }}
        [[link]]
        name = "b"
        rate = "20Mbps"
        delay = "10ms"
        queue = {{ type = "droptail", limit = "60pkt" }}
        {event}
        [[flow]]
        name = "mp"
        algorithm = "lia"
        transport = "quic"
        traffic = {{ type = "transfer", size = "20MB" }}
        subflows = [ {{ path = ["a"] }}, {{ path = ["b"] }} ]
    """
    path = tmp_path / "outage.toml"
    path.write_text("\n".join(line.strip() for line in text.splitlines()), encoding="utf-8")
    return path


def _transfer(res: EmulatedResult) -> dict[str, Any]:
    (check,) = res.emulation["transfers"]
    return dict(check)


@quic_realtime
def test_a_transfer_survives_a_five_second_outage_of_one_path(tmp_path: Path) -> None:
    """20 MB over two paths with path b down from 2 s to 7 s: the transfer completes and the
    receiver's byte count and hash match the sender's; path b carried data before and after
    the outage."""
    f = _two_paths(tmp_path, '[[link.event]]\nat = "2s"\ndown = "5s"', duration="20s")
    sc = pathweave.load(f)
    res = _on_time("QUIC outage", lambda: emulate(sc, 1))
    t = _transfer(res)
    print(f"outage: {t}, completion {res.flows['completion_s'][0]:.2f} s")
    assert t["complete"], t
    assert t["sent_bytes"] == t["received_bytes"] == 20_000_000, t
    assert t["sent_fnv1a64"] == t["received_fnv1a64"], t
    ss = res.subflow_series
    b = ss[ss["subflow"] == 1]
    assert (b[b["time_s"] < 2]["rate_bps"] > 0).any()
    assert (b[b["time_s"] > 7.5]["rate_bps"] > 0).any() or res.flows["completion_s"][0] < 8


@quic_realtime
@pytest.mark.slow
def test_a_path_that_dies_for_good_is_abandoned_and_the_other_finishes(tmp_path: Path) -> None:
    """Path b goes down for good at 2 s: after its idle timeout (10 s) it is abandoned, its
    data in flight is resent on path a, and the 20 MB arrive intact."""
    f = _two_paths(tmp_path, '[[link.event]]\nat = "2s"\ndown = "100s"', duration="40s")
    sc = pathweave.load(f)
    res = _on_time("QUIC path lost", lambda: emulate(sc, 1))
    t = _transfer(res)
    print(f"path lost: {t}, completion {res.flows['completion_s'][0]:.2f} s")
    assert t["complete"], t
    assert t["sent_bytes"] == t["received_bytes"] == 20_000_000, t
    assert t["sent_fnv1a64"] == t["received_fnv1a64"], t


# --- path changes ---------------------------------------------------------------------------


def _path_b_between(tmp_path: Path, join: float, leave: float) -> pathweave.Scenario:
    text = (
        _two_paths(tmp_path, "", duration="12s")
        .read_text(encoding="utf-8")
        .replace('traffic = { type = "transfer", size = "20MB" }\n', "")
        .replace(
            '{ path = ["b"] }',
            f'{{ path = ["b"], start = "{join}s", stop = "{leave}s" }}',
        )
    )
    return pathweave.parse(text, "quic-path-changes")


@quic_realtime
def test_a_path_that_joins_late_and_leaves_early_carries_data_only_in_between(
    tmp_path: Path,
) -> None:
    """Path b joins at 3 s and leaves at 7 s, as its subflow's `start` and `stop` say: it
    carries data between (acknowledged bytes on b), none before it joins and none once its
    close has had a second to finish, in the emulator as in the simulator's model."""
    sc = _path_b_between(tmp_path, 3.0, 7.0)
    emu = _on_time("QUIC path changes", lambda: emulate(sc, 1))
    sim = pathweave.run(sc, seed=1)
    for name, res in (("emulated", emu), ("simulated", sim)):
        ss = res.subflow_series
        b = ss[ss["subflow"] == 1]
        before = b[b["time_s"] <= 2.9]["rate_bps"].sum()
        during = b[(b["time_s"] > 3.5) & (b["time_s"] <= 7.0)]["rate_bps"]
        after = b[b["time_s"] > 8.0]["rate_bps"].sum()
        print(
            f"{name}: path b rate before {before:.0f}, during mean {during.mean() / 1e6:.2f} "
            f"Mbit/s, after {after:.0f}"
        )
        assert before == 0, (name, b[b["time_s"] <= 2.9])
        assert during.mean() > 2e6, (name, during)
        assert after == 0, (name, b[b["time_s"] > 8.0])
    # The subflows table counts path b's bytes of its whole life.
    acked = emu.subflows["acked_bytes"].tolist()
    assert acked[1] > 2e6 / 8 * 3, acked


def test_a_quic_flow_whose_first_path_leaves_is_refused(tmp_path: Path) -> None:
    text = (
        _two_paths(tmp_path, "", duration="5s")
        .read_text(encoding="utf-8")
        .replace('{ path = ["a"] }', '{ path = ["a"], stop = "2s" }')
    )
    with pytest.raises(EmulationRefused, match="first path carries its handshake"):
        emulate(pathweave.parse(text, "first-path-leaves"))


# --- quic serve and quic send inside the emulator's namespaces ----------------------------


@quic_realtime
def test_quic_serve_and_send_run_in_an_external_flows_namespaces(tmp_path: Path) -> None:
    """`pathweave emulate --external mp` builds flow mp's namespaces and links and starts
    nothing there; `pathweave quic serve` and `quic send` run in them (`ip netns exec`), the
    transfer goes through the emulated links on both paths and arrives intact, the sender's
    tables are written, and the emulator's own tables see the flow's packets on both links."""
    scenario = _two_paths(tmp_path, "", duration="25s")
    emu_out, send_out, cert = tmp_path / "emu", tmp_path / "send", tmp_path / "r.pem"
    emulator = subprocess.Popen(
        [*PW, "emulate", str(scenario), "--external", "mp", "--out", str(emu_out), "--quiet"],
        stderr=subprocess.PIPE,
        text=True,
    )
    server = None
    try:
        assert emulator.stderr is not None
        ends = None
        for line in emulator.stderr:
            m = re.match(
                r"pathweave: external flow mp: sender (\S+) (\S+) receiver (\S+) (\S+)$",
                line.strip(),
            )
            if m:
                ends = m.groups()
                break
        assert ends is not None, "the emulator did not say where flow mp is"
        snd_ns, clients, rcv_ns, server_addr = ends
        assert len(clients.split(",")) == 2, clients
        server = subprocess.Popen(
            [
                *("ip", "netns", "exec", rcv_ns, *PW, "quic", "serve"),
                *("--listen", f"{server_addr}:4433", "--cert-out", str(cert)),
                *("--transfers", "1"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        assert f"listening on {server_addr}:4433" in server.stdout.readline()
        sent = subprocess.run(
            [
                *("ip", "netns", "exec", snd_ns, *PW, "quic", "send"),
                *("--to", f"{server_addr}:4433", "--from", clients),
                *("--algorithm", "lia", "--bytes", "10MB", "--cert", str(cert)),
                *("--out", str(send_out)),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        served, _ = server.communicate(timeout=20)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "matches what was sent" in sent.stdout, sent.stdout
        assert re.search(r"received 10000000 bytes from \S+ over 2 path", served), served
        _, rest = emulator.communicate(timeout=60)
    finally:
        for p in (server, emulator):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert emulator.returncode == 0, rest
    subflows = pd.read_parquet(send_out / "subflows.parquet")
    assert len(subflows) == 2, subflows
    assert (subflows["acked_bytes"] > 0).all(), subflows
    # 10 MB of QUIC went through the emulated links, both of them.
    links = pd.read_parquet(emu_out / "links.parquet")
    fwd = links[links["direction"] == "forward"].set_index("name")["delivered_bytes"]
    print(f"emulated links, forward bytes: {fwd.to_dict()}")
    assert fwd.sum() >= 10_000_000, fwd
    assert (fwd > 1_000_000).all(), fwd
    flows = pd.read_parquet(emu_out / "flows.parquet")
    (row,) = flows.to_dict("records")
    assert row["algorithm"] == "external", row
    # IP bytes of the data routes over the run: the 10 MB and their headers.
    assert row["throughput_bps"] * 25 / 8 >= 10_000_000, row


def test_an_external_flow_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    scenario = _two_paths(tmp_path, "", duration="5s")
    r = subprocess.run(
        [*PW, "emulate", str(scenario), "--external", "nosuch", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    assert "--external nosuch: no flow of that name; the flows are: mp" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


# --- BMC -------------------------------------------------------------------------------------


@quic_realtime
@pytest.mark.slow
def test_bmc_moves_weight_away_from_the_path_with_cross_traffic() -> None:
    """Reno cross traffic on path a: BMC's proportion manager, inside the QUIC sender, moves
    weight to b and keeps it there, as the simulator predicts (mean weight on b over the last
    two thirds above 0.6 in every copy, in both engines)."""
    emu = _weight_b(_emulated("bmc-cross-traffic.toml", 30, "bmc"), 10.0)
    sim = _weight_b(_simulated("bmc-cross-traffic.toml", 30, "bmc", 1), 10.0)
    print(
        f"bmc weight on b after 10 s (mean, end) per copy, QUIC: emulated "
        f"{np.round(emu, 3).tolist()}, simulated {np.round(sim, 3).tolist()}"
    )
    assert all(m > 0.6 for m, _ in sim), "the simulator's prediction for this scenario"
    assert all(m > 0.6 for m, _ in emu)


# --- refusals --------------------------------------------------------------------------------


def test_on_off_traffic_over_quic_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "onoff.toml"
    path.write_text(
        'duration = "5s"\n[[link]]\nname = "l"\nrate = "10Mbps"\ndelay = "5ms"\n'
        '[[flow]]\nname = "q"\ntransport = "quic"\npath = ["l"]\n'
        'traffic = { type = "onoff", on = "1s", off = "1s" }\n',
        encoding="utf-8",
    )
    with pytest.raises(EmulationRefused, match="on/off traffic over QUIC"):
        emulate(pathweave.load(path))
