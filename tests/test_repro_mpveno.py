"""The quick forms of the MPVeno paper's reproductions (Le, "Improving the Performance of
Multipath Congestion Control over Wireless Networks", 2013), asserting the published shape.

Only values that match in the full form with a clear margin are asserted; the misses (loss
rates of mptcpw-balance, MPVeno's monotonicity in beta) and the values that match only
narrowly in the full form (Fig. 5(b) beyond 0.5 %, wMPTCPW on link 1) are not.
"""

from __future__ import annotations

from pathlib import Path

from pathweave import repro


def _verdicts(experiment_id: str, out: Path) -> dict[str, str]:
    outcome = repro.run_experiment(repro.get(experiment_id), out, quick=True, jobs=1)
    table = outcome.comparison
    return dict(zip(table["label"], table["verdict"], strict=True))


def test_mpveno_wireless_quick_shows_the_published_orderings(tmp_path: Path) -> None:
    v = _verdicts("mpveno-wireless", tmp_path)
    # Fig. 1: LIA and OLIA fall sharply with random loss.
    for name in ("LIA", "OLIA"):
        assert v[f"Fig. 1: {name} falls sharply, 1 % (our threshold: utilisation <= 0.5)"] == (
            "match"
        ), name
    # Fig. 5: MPVeno above OLIA and MPTCPW highest.
    for beta in (1, 3, 6):
        for loss in ("0.1 %", "1 %"):
            label = f"Fig. 5(a): MPVeno, beta = {beta} above OLIA at {loss}"
            assert v[label] == "match", label
        label = f"Fig. 5(b): MPVeno, beta = {beta} above OLIA at 0.1 %"
        assert v[label] == "match", label
    for fig in ("5(a)", "5(b)"):
        for loss in ("0.1 %", "1 %"):
            label = f"Fig. {fig}: MPTCPW highest at {loss}"
            assert v[label] == "match", label


def test_mpveno_fairness_quick_shares_equally_with_veno(tmp_path: Path) -> None:
    v = _verdicts("mpveno-fairness", tmp_path)
    assert v["Fig. 4(b): Veno's data sent / MPVeno's total"] == "match"
    assert v["Fig. 4(b): Veno's goodput / MPVeno's total"] == "match"


def test_mpveno_friendliness_quick_mpveno_fair_mptcpw_not(tmp_path: Path) -> None:
    v = _verdicts("mpveno-friendliness", tmp_path)
    for beta in (3, 6):
        assert v[f"Fig. 6(b): MPVeno, beta = {beta} / OLIA about equal (RED)"] == "match", beta
    assert v["Fig. 6(a): MPTCPW / OLIA clearly above 1 (RED)"] == "match"


def test_mptcpw_balance_quick_mptcpw_moves_to_link_2(tmp_path: Path) -> None:
    v = _verdicts("mptcpw-balance", tmp_path)
    assert v["Fig. 2(b): MPTCPW total / mean link-2 Westwood flow"] == "match"
    assert (
        v["Fig. 2(a): MPTCPW moves its traffic to link 2 (our threshold: share >= 0.5)"] == "match"
    )
    assert v["Fig. 2(c): wMPTCPW subflow / mean Westwood flow on link 2"] == "match"
