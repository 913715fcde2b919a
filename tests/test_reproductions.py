"""The quick form of each registered paper reproduction, asserting the published shape.

Each test runs an experiment's reduced sweep and checks the verdicts of the published values
that the reduced form covers and that the full form matches; values reported as misses (with
their reasons) in the README are not asserted here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pathweave import repro


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
