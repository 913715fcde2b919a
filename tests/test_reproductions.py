"""The quick form of each registered paper reproduction, asserting the published shape.

Each test runs an experiment's reduced sweep and checks the verdicts of the published values
that the reduced form covers and that the full form matches; values reported as misses (with
their reasons) in the README are not asserted here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pathweave import repro
from pathweave.repro import fairness


def _verdicts(experiment_id: str, out: Path) -> dict[str, str]:
    outcome = repro.run_experiment(repro.get(experiment_id), out, quick=True, jobs=1)
    table = outcome.comparison
    return dict(zip(table["label"], table["verdict"], strict=True))


def test_lia_two_links_quick_shows_the_published_shape(tmp_path: Path) -> None:
    v = _verdicts("lia-two-links", tmp_path)
    # Fig. 2 and Fig. 3: slopes differ with the capacity, not with the delay (RTT
    # compensation), in the RFC arithmetic.
    assert v["Fig. 2: the 10 Mbps subflow's cwnd grows faster (LIA spec)"] == "match"
    assert v["Fig. 3: equal slopes despite 50 vs 100 ms (LIA spec)"] == "match"
    # RFC 6356 goal 1 in every scenario with cross traffic.
    for s in ("S1", "S2", "S3"):
        assert v[f"{s} goal 1: MPTCP ≥ 0.9 x better TCP (LIA spec)"] == "match", s
    # Scenario 2's MPTCP sum within 20 % of the paper's 5.73 Mbps.
    assert v["S2 MPTCP sum (LIA spec)"] == "match"
    # The linux-profile runs stand beside the paper's values, each with a verdict, and with
    # the emulator's packets and the kernel's timing noise their mean over seeds is within
    # 15 % of the kernel's measured mean for every flow of every scenario (docs/kernel.md).
    for s in ("S1", "S2", "S3"):
        for what in ("MPTCP sum", "TCP on A", "TCP on B"):
            tag = "(LIA linux, linux profile)"
            assert v[f"{s} {what} {tag}"] in ("match", "miss")
            assert v[f"{s} {what}: the kernel's pw_lia, measured {tag}"] == "match", (s, what)


@pytest.mark.parametrize("experiment_id", [e.id for e in repro.experiments()])
def test_every_registered_experiment_names_its_source_and_scenarios(experiment_id: str) -> None:
    e = repro.get(experiment_id)
    assert e.source
    assert e.scenarios
    assert e.published


def test_bmc_weighted_aimd_quick_gives_ratio_d_for_mid_n(tmp_path: Path) -> None:
    v = _verdicts("bmc-weighted-aimd", tmp_path)
    # Fig. 5.10: the AIMD/TCP ratio is about D for N in [8, 48] (D = 1/2 in the quick form).
    for n in (8, 16, 32, 48):
        assert v[f"Fig. 5.10: ratio, N = {n}, D = 0.50"] == "match", n


def _quick(experiment_id: str, out: Path) -> tuple[dict[str, str], pd.DataFrame]:
    outcome = repro.run_experiment(repro.get(experiment_id), out, quick=True, jobs=1)
    table = outcome.comparison
    summary = pd.read_csv(outcome.directory / "summary.csv")
    return dict(zip(table["label"], table["verdict"], strict=True)), summary


def _mean(summary: pd.DataFrame, metric: str, **where: str) -> float:
    rows = summary[summary["metric"] == metric]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    assert len(rows) == 1, (metric, where)
    return float(rows["mean"].iloc[0])


def test_fairness_shared_quick_shows_the_published_shape(tmp_path: Path) -> None:
    v, summary = _quick("fairness-shared", tmp_path)
    alg, rate, delay = "flow[0].algorithm", "link[0].rate", "link[0].delay"
    # Fig. 3a: Reno on every path takes 2/3 of the bottleneck and leaves 1/3; the coupled
    # algorithms split it about 1/2 : 1/2.
    for rho in (20, 100):
        for who in ("multi", "single"):
            for name in ("Reno per path", "RP-MP-v2", "MPTCP (lia)"):
                label = f"Fig. 3a {name}: {who} share of alpha, rho = {rho} Mbps"
                assert v[label] == "match", label
    for rho in ("20Mbps", "100Mbps"):
        at = {rate: rho, delay: "10ms"}
        reno = _mean(summary, "multi_share", **{alg: "reno"}, **at)
        for coupled in ("rpmp-v2", "lia", "mptcp-bytes"):
            assert reno > _mean(summary, "multi_share", **{alg: coupled}, **at) + 0.08, coupled
    # Fig. 3c: MPTCP's multipath flow ahead by about 7 Mbit/s at 1 ms and 100 Mbit/s.
    assert v["Fig. 3c MPTCP (lia): B0 - B1 about +7 Mbps, delay 1 ms, rho = 100 Mbps"] == "match"


def test_fairness_disjoint_quick_shows_the_published_shape(tmp_path: Path) -> None:
    v, summary = _quick("fairness-disjoint", tmp_path)
    alg, beta = "flow[0].algorithm", "link[1].rate"
    # Reno on every path: the link-centric allocation.
    for b in (10, 30, 70, 100):
        assert v[f"Fig. 4 Reno per path: single about rho(beta)/2, rho(beta) = {b} Mbps"] == "match"
        label = f"Fig. 4 Reno per path: multi about rho(alpha) + rho(beta)/2, rho(beta) = {b} Mbps"
        assert v[label] == "match", label
    # RP-MP-v2: on the network-centric line up to 30 Mbit/s, crossing between 10 and 70.
    assert v["Fig. 4 RP-MP-v2: multi on the network-centric line, rho(beta) = 30 Mbps"] == "match"
    for name, c, side, b in (
        ("RP-MP-v2", 30, "above", 10),
        ("RP-MP-v2", 30, "below", 70),
        ("MPTCP (lia)", 70, "above", 30),
    ):
        who = "multi >= single" if side == "above" else "single >= multi"
        label = (
            f"Fig. 4 {name}: crossing (about {c} Mbps) {side} {b}: {who} at rho(beta) = {b} Mbps"
        )
        assert v[label] == "match", label
    # The crossing's direction: every coupled algorithm's lead shrinks from 10 to 100 Mbit/s,
    # and RP-MP-v2 crosses earlier than MPTCP; Reno's lead (rho(alpha)) stays.
    diff = {
        (a, b): _mean(summary, "diff_mbps", **{alg: a, beta: f"{b}Mbps"})
        for a in ("reno", "rpmp-v2", "lia", "mptcp-bytes")
        for b in (10, 30, 70, 100)
    }
    for a in ("rpmp-v2", "lia", "mptcp-bytes"):
        assert diff[(a, 10)] > 5.0 > diff[(a, 100)], a
    assert diff[("rpmp-v2", 30)] < diff[("lia", 30)]
    assert min(diff[("reno", b)] for b in (10, 30, 70, 100)) > 10.0
    # Goal 1 for the coupled algorithms at every point of the quick sweep.
    for a in ("RP-MP-v2", "MPTCP (lia)", "MPTCP (mptcp-bytes)"):
        for b in (10, 30, 70, 100):
            label = f"Fig. 4 {a}: goal 1, multi >= 0.9 x best path's share, rho(beta) = {b} Mbps"
            assert v[label] == "match", label


def test_fairness_definitions_give_the_papers_allocations() -> None:
    # §V-B (Scenario 2): 1/3 each sub-flow, 1/2 each flow; network-centric = link-centric flow.
    top = fairness.shared_topology(30.0)
    assert fairness.link_centric_subflow(top) == {"multi": [10.0, 10.0], "single": [10.0]}
    assert fairness.link_centric_flow(top) == {"multi": [7.5, 7.5], "single": [15.0]}
    assert fairness.network_centric_flow(top) == pytest.approx({"multi": 15.0, "single": 15.0})
    # §V-C (Scenario 3): link-centric B00 = rho(a), B01 = B10 = rho(b)/2; network-centric
    # B00 = rho(a), B01 = max(0, (rho(b) - B00)/2), B10 = rho(b) - B01 (Fig. 2(c): rho(b) = 4).
    for ra in (0.0, 1.0, 2.0, 4.0, 6.0):
        top = fairness.disjoint_topology(ra, 4.0)
        assert fairness.link_centric_subflow(top) == {"multi": [ra, 2.0], "single": [2.0]}
        assert fairness.link_centric_flow(top) == {"multi": [ra, 2.0], "single": [2.0]}
        b01 = max(0.0, (4.0 - ra) / 2)
        assert fairness.network_centric_flow(top) == pytest.approx(
            {"multi": ra + b01, "single": 4.0 - b01}, abs=1e-6
        )


def test_datacenter_permutation_quick_shows_the_published_shape(tmp_path: Path) -> None:
    v, summary = _quick("datacenter-permutation", tmp_path)
    # k = 8: TCP over ECMP about half the host rate and within 10 % of the single-path
    # max-min allocation; LIA with 8 subflows at least 0.85 of the host rate and fairer.
    assert v["TCP over ECMP: about half the host rate, k = 8 (Fig. 2, §4)"] == "match"
    assert v["TCP within 10 % of the single-path max-min reference, k = 8"] == "match"
    assert v["LIA, 8 subflows: at least 0.85 of the host rate, k = 8"] == "match"
    label = "Jain's index across hosts higher for LIA with 8 subflows than for TCP, k = 8 (change)"
    assert v[label] == "match"
    # The multipath optimum gives every host its link rate (full bisection), and the hash
    # collisions hold the single-path allocation well below it.
    alg = "traffic.algorithm"
    assert _mean(summary, "optimum_reference", **{alg: "lia"}) == pytest.approx(1.0, abs=1e-6)
    assert _mean(summary, "single_path_reference", **{alg: "reno"}) < 0.75
