"""`pathweave compare`: one scenario run once per algorithm of one flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathweave.compare import compare, main

ROOT = Path(__file__).resolve().parent.parent
HEADLINE = ROOT / "scenarios" / "headline.toml"


@pytest.fixture(scope="module")
def short_headline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = HEADLINE.read_text().replace('duration = "100s"', 'duration = "40s"')
    path = tmp_path_factory.mktemp("compare") / "headline.toml"
    path.write_text(text)
    return path


def test_uncoupled_takes_about_two_shares_and_coupled_about_one(short_headline: Path) -> None:
    c = compare(short_headline, "mp", ["uncoupled", "lia", "olia", "balia"], seed=1)
    table = c.table().set_index("algorithm")
    # Two independent Reno subflows against one Reno flow: about 2 shares (RFC 6356 §1).
    assert table.loc["uncoupled", "share_ratio"] > 1.6
    # Coupled: about one share (RFC 6356 goal 2), within the issue's [0.75, 1.33].
    for alg in ("lia", "olia", "balia"):
        assert 0.75 <= table.loc[alg, "share_ratio"] <= 1.33, alg
    # The subflow columns add up to the connection's acknowledged throughput.
    assert {"subflow0_throughput_bps", "subflow1_throughput_bps"} <= set(table.columns)


def test_cli_writes_table_and_plot(short_headline: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(
        [str(short_headline), "--flow", "mp", "--algorithms", "uncoupled,lia", "--out", str(out)]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["compare.csv", "compare.png"]
    assert (out / "compare.png").stat().st_size > 10_000


def test_unknown_flow_or_algorithm_is_bad_input(
    short_headline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(short_headline), "--flow", "nope"]) == 2
    assert "no [[flow]] is named 'nope'" in capsys.readouterr().err
    assert main([str(short_headline), "--flow", "mp", "--algorithms", "lia,cubicx"]) == 2
    err = capsys.readouterr().err
    assert "flow[0].algorithm" in err
    assert "cubicx" in err
