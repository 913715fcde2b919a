"""The shipped scenarios: found from any directory, listed and copied by name, and replaced
by ``$PATHWEAVE_SCENARIOS`` when it is set."""

from __future__ import annotations

from pathlib import Path

import pytest

from pathweave import catalog, cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(catalog.ENV_SCENARIOS, raising=False)


def test_every_scenario_of_the_repository_is_shipped() -> None:
    shipped = {s.name for s in catalog.scenarios()}
    in_tree = {
        p.relative_to(ROOT / "scenarios").with_suffix("").as_posix()
        for p in (ROOT / "scenarios").rglob("*.toml")
    }
    assert shipped == in_tree
    assert {"headline", "dumbbell", "lia-two-links/s1", "reno-square-root/reno"} <= shipped


def test_list_names_each_scenario_with_its_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["scenarios", "list"]) == 0
    out = capsys.readouterr().out
    assert "headline" in out
    assert "lia-two-links/s1" in out


def test_copy_gives_an_editable_file_that_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["scenarios", "copy", "headline", "."]) == 0
    assert capsys.readouterr().out.strip() == "headline.toml"
    copied = tmp_path / "headline.toml"
    assert copied.read_bytes() == (ROOT / "scenarios" / "headline.toml").read_bytes()
    assert cli.main(["validate", "headline.toml"]) == 0


def test_copy_of_a_directory_keeps_its_name(tmp_path: Path) -> None:
    written = catalog.copy_scenario("lia-two-links", tmp_path / "mine")
    assert (tmp_path / "mine" / "lia-two-links" / "s1.toml") in written
    assert len(written) == len(list((ROOT / "scenarios" / "lia-two-links").glob("*.toml")))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["scenarios", "copy", "no-such", "."], "no scenario or scenario directory named"),
        (["scenarios", "copy", "../pyproject", "."], "no scenario or scenario directory named"),
        (["scenarios", "copy", "headline", "headline.toml"], "already exists"),
    ],
    ids=["unknown", "outside", "exists"],
)
def test_a_bad_copy_is_bad_input_and_overwrites_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "headline.toml").write_text("mine\n")
    if argv[-1] == "headline.toml":
        argv = [*argv[:-1], "."]
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert (tmp_path / "headline.toml").read_text() == "mine\n"


def test_reproduce_finds_its_scenarios_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["reproduce", "reno-square-root", "--quick", "--quiet", "--jobs", "1"]) == 0
    assert (tmp_path / "results" / "reproduce" / "reno-square-root" / "comparison.csv").is_file()


def test_the_override_is_used_and_a_missing_file_names_the_experiment_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(catalog.ENV_SCENARIOS, str(tmp_path))
    assert catalog.scenarios_dir() == tmp_path
    argv = ["reproduce", "reno-square-root", "--quick", "--quiet", "--out", str(tmp_path / "o")]
    assert cli.main(argv) == cli.EXIT_FAILURE
    err = capsys.readouterr().err
    assert err.count("reno-square-root:") == 1, err
    assert str(tmp_path / "reno-square-root" / "reno.toml") in err


def test_an_empty_or_missing_override_is_named_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for where, state in ((tmp_path, ""), (tmp_path / "absent", ": no such directory")):
        monkeypatch.setenv(catalog.ENV_SCENARIOS, str(where))
        assert cli.main(["scenarios", "list"]) == cli.EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert f"(chosen by ${catalog.ENV_SCENARIOS}={where}){state}\n" in err, err
