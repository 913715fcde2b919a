"""`pathweave compare`: one scenario run once per algorithm of one flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathweave import cli
from pathweave.compare import compare

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
    code = cli.main(
        [
            "compare",
            *(str(short_headline), "--flow", "mp", "--algorithms", "uncoupled,lia"),
            *("--out", str(out)),
        ]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["compare.csv", "compare.png"]
    assert (out / "compare.png").stat().st_size > 10_000


def test_unknown_flow_or_algorithm_is_bad_input(
    short_headline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["compare", str(short_headline), "--flow", "nope"]) == 2
    assert "no [[flow]] is named 'nope'" in capsys.readouterr().err
    assert (
        cli.main(["compare", str(short_headline), "--flow", "mp", "--algorithms", "lia,cubicx"])
        == 2
    )
    err = capsys.readouterr().err
    assert "flow[0].algorithm" in err
    assert "cubicx" in err


def test_pathweave_compare_command_replaces_its_own_output(
    short_headline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["compare", str(short_headline), "--flow", "mp", "--algorithms", "lia", "--out"]
    assert cli.main([*argv, str(out)]) == 0
    first = (out / "compare.csv").read_text()
    assert "lia" in capsys.readouterr().out
    # A second run replaces the earlier comparison; same seed, same table.
    assert cli.main([*argv, str(out), "--seed", "1", "--quiet"]) == 0
    assert (out / "compare.csv").read_text() == first
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("algorithms", "message"),
    [(",", "no algorithms to compare"), ("lia,olia,lia", "more than once: lia")],
)
def test_bad_algorithm_lists_are_bad_input(
    short_headline: Path, capsys: pytest.CaptureFixture[str], algorithms: str, message: str
) -> None:
    argv = ["compare", str(short_headline), "--flow", "mp", "--algorithms", algorithms]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_missing_scenario_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", str(tmp_path / "none.toml"), "--flow", "mp"]) == 2
    assert "cannot read the file" in capsys.readouterr().err


def test_out_that_is_not_a_comparison_is_refused_before_running(
    short_headline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("precious")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, why in ((keep, "no compare.csv"), (a_file, "not a directory")):
        argv = ["compare", str(short_headline), "--flow", "mp", "--out", str(out)]
        assert cli.main(argv) == 2
        assert why in capsys.readouterr().err
    assert (keep / "notes.txt").read_text() == "precious"
    assert a_file.read_text() == "x"


def test_bad_seed_is_an_argument_error(short_headline: Path) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", str(short_headline), "--flow", "mp", "--seed", "-1"])
    assert e.value.code == 2


def test_a_counted_flow_is_refused_before_running(capsys: pytest.CaptureFixture[str]) -> None:
    dumbbell = ROOT / "scenarios" / "dumbbell.toml"
    assert cli.main(["compare", str(dumbbell), "--flow", "reno{i}", "--algorithms", "lia"]) == 2
    assert "stamped out 8 times" in capsys.readouterr().err


def test_kelly_voice_and_fully_coupled_are_two_algorithms(short_headline: Path) -> None:
    # Two algorithms go by "fully coupled": Wischik et al.'s (NSDI 2011, 1/w_total per packet)
    # and Kelly & Voice's ((w_r/rtt_r²)/(Σ w/rtt)² per packet). Both take about one share of
    # the shared bottleneck (RFC 6356 goal 2), and they are different controllers.
    c = compare(short_headline, "mp", ["kelly-voice", "fully-coupled"], seed=1)
    table = c.table().set_index("algorithm")
    for alg in ("kelly-voice", "fully-coupled"):
        assert 0.75 <= table.loc[alg, "share_ratio"] <= 1.33, alg
    assert (
        table.loc["kelly-voice", "flow_goodput_bps"]
        != table.loc["fully-coupled", "flow_goodput_bps"]
    )


def test_variants_beside_the_kernel_take_the_linux_profile(tmp_path: Path) -> None:
    """`variants(..., profile="linux")` (what `--engine sim,emulate` uses) runs as the scenario
    with `[tcp] profile = "linux"` written in; a scenario that names a profile keeps its own."""
    import pathweave
    from pathweave.compare import variants

    text = HEADLINE.read_text().replace('duration = "100s"', 'duration = "3s"')
    plain_path = tmp_path / "plain.toml"
    plain_path.write_text(text)
    written = text.replace("[tcp]\n", '[tcp]\nprofile = "linux"\n', 1)
    assert written != text
    profiled = pathweave.run(pathweave.parse(written, "written.toml"), seed=1).flows

    (sc,) = variants(plain_path, "mp", ["lia"], profile="linux").values()
    assert pathweave.run(sc, seed=1).flows.equals(profiled)
    (sc,) = variants(plain_path, "mp", ["lia"]).values()
    assert not pathweave.run(sc, seed=1).flows.equals(profiled)
    own_path = tmp_path / "own.toml"
    own_path.write_text(text.replace("[tcp]\n", '[tcp]\nprofile = "default"\n', 1))
    (own,) = variants(own_path, "mp", ["lia"], profile="linux").values()
    (none,) = variants(plain_path, "mp", ["lia"]).values()
    assert pathweave.run(own, seed=1).flows.equals(pathweave.run(none, seed=1).flows)
