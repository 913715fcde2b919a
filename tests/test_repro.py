"""Reproductions: the registry, verdicts (which must be able to fail), the files of an
experiment, and ``pathweave reproduce`` end to end."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pandas as pd
import pytest

import pathweave
from conftest import SMALL, run_cli, write_scenario
from pathweave import repro
from pathweave.repro import (
    Absolute,
    AtLeast,
    AtMost,
    Between,
    Experiment,
    ExperimentData,
    ExperimentError,
    Published,
    Relative,
)
from pathweave.repro.runner import COMPARISON_COLUMNS
from pathweave.repro.status import render_status
from pathweave.sweep import RunRecord, Sweep

REPO = Path(__file__).resolve().parents[1]

TEST_ID = "test-wrong-value"


def _metrics(run: RunRecord) -> Mapping[str, float]:
    return {
        "goodput_bps": float(run.flows["goodput_bps"].sum()),
        "flows": float(len(run.flows)),
    }


def _plot(data: ExperimentData) -> dict[str, object]:
    fig = repro.new_figure(figsize=(4, 3))
    ax = fig.subplots()
    rows = data.metric("goodput_bps")
    ax.bar(rows["point"], rows["mean"])
    return {"goodput": fig}


def _experiment(scenario: Path, published: list[Published] | None = None) -> Experiment:
    return Experiment(
        id=TEST_ID,
        title="A test-only experiment <with markup>",
        description="Registered by a test fixture; one published value is deliberately wrong.",
        setup="Two Reno flows over a RED bottleneck; 1 or 2 flows; 2 seeds.",
        scenarios=(str(scenario),),
        sweep=Sweep(grid={"flow[0].count": [1, 2]}, seeds=2),
        quick=Sweep(grid={"flow[0].count": [1]}, seeds=1, set={"duration": "2s"}),
        metrics=_metrics,
        published=published
        if published is not None
        else [
            Published("flows", 1.0, Absolute(0), {"flow[0].count": 1}, "one flow"),
            Published(
                "goodput_bps",
                1e12,
                Relative(0.1),
                {"flow[0].count": 1},
                "a terabit (wrong on purpose)",
                reason="deliberately wrong: the link carries 10 Mbps",
            ),
            Published("goodput_bps", 1.0, Relative(0.1), {"flow[0].count": 2}, "one bit/s"),
        ],
        plot=_plot,  # type: ignore[arg-type]
        source="none: a test",
    )


@pytest.fixture
def test_experiment(tmp_path: Path) -> Iterator[Experiment]:
    """A test-only experiment, registered for the test and removed after it."""
    scenario = write_scenario(tmp_path, SMALL, "small.toml")
    experiment = repro.register(_experiment(scenario))
    yield experiment
    repro.unregister(TEST_ID)


def test_registry_finds_the_shipped_experiments() -> None:
    ids = [e.id for e in repro.experiments()]
    assert "reno-square-root" in ids
    assert ids == sorted(ids)
    reno = repro.get("reno-square-root")
    assert "not an experiment of the papers" in reno.description
    with pytest.raises(repro.UnknownExperiment) as info:
        repro.get("no-such-thing")
    assert "known: " in str(info.value)
    assert "reno-square-root" in str(info.value)


def test_register_refuses_a_taken_id(test_experiment: Experiment, tmp_path: Path) -> None:
    other = _experiment(tmp_path / "small.toml")
    with pytest.raises(ExperimentError, match="already registered"):
        repro.register(other)
    assert repro.register(other, replace=True) is other
    assert repro.get(TEST_ID) is other


def test_a_wrong_published_value_is_a_miss(test_experiment: Experiment, tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = repro.run_experiment(test_experiment, out, jobs=1)
    table = outcome.comparison
    assert list(table.columns) == list(COMPARISON_COLUMNS)
    assert list(table["verdict"]) == ["match", "miss", "miss"]
    assert list(table["reason"]) == [
        "",
        "deliberately wrong: the link carries 10 Mbps",
        "outside tolerance",
    ]
    assert (outcome.matches, outcome.misses, outcome.not_covered) == (1, 2, 0)
    assert list(table["n"]) == [2, 2, 2]
    row = table.iloc[1]
    assert row["ci_low"] <= row["ours"] <= row["ci_high"]
    assert 0 < row["ours"] < 10e6
    assert row["tolerance"] == "± 10 %"
    # The files of the experiment.
    directory = out / TEST_ID
    assert outcome.directory == directory
    assert sorted(p.name for p in directory.iterdir()) == [
        "comparison.csv",
        "experiment.json",
        "fairness.parquet",
        "figures",
        "flows.parquet",
        "links.parquet",
        "metrics.parquet",
        "subflows.parquet",
        "summary.csv",
    ]
    assert sorted(p.name for p in (directory / "figures").iterdir()) == [
        "goodput.pdf",
        "goodput.png",
    ]
    assert (directory / "figures" / "goodput.png").read_bytes().startswith(b"\x89PNG")
    assert (directory / "figures" / "goodput.pdf").read_bytes().startswith(b"%PDF")
    csv = pd.read_csv(directory / "comparison.csv")
    assert list(csv["verdict"]) == ["match", "miss", "miss"]
    manifest = json.loads((directory / "experiment.json").read_text())
    assert manifest["id"] == TEST_ID
    assert (manifest["mode"], manifest["seeds"], manifest["points"]) == ("full", [1, 2], 2)
    assert (manifest["runs"], manifest["ran"], manifest["cached"]) == (4, 4, 0)
    assert (manifest["matches"], manifest["misses"]) == (1, 2)
    assert manifest["pathweave_version"] == pathweave.__version__
    assert manifest["figures"] == ["goodput"]
    assert manifest["wall_time_s"] > 0
    metrics = pd.read_parquet(directory / "metrics.parquet")
    assert list(metrics.columns) == [
        "point",
        "seed",
        "key",
        "flow[0].count",
        "goodput_bps",
        "flows",
    ]
    flows = pd.read_parquet(directory / "flows.parquet")
    assert len(flows) == 2 * (1 + 2)
    # Nothing else was left beside it.
    assert sorted(p.name for p in out.iterdir()) == ["cache", TEST_ID]


def test_quick_runs_a_subset_with_no_interval_for_one_seed(
    test_experiment: Experiment, tmp_path: Path
) -> None:
    outcome = repro.run_experiment(test_experiment, tmp_path / "out", quick=True, jobs=1)
    table = outcome.comparison
    assert list(table["label"]) == ["one flow", "a terabit (wrong on purpose)"]
    assert outcome.not_covered == 1  # the value at two flows lies outside the quick sweep
    assert list(table["n"]) == [1, 1]
    assert table["ci_half_width"].isna().all()
    assert table["ci_low"].isna().all()
    manifest = json.loads((outcome.directory / "experiment.json").read_text())
    assert (manifest["mode"], manifest["not_covered"]) == ("quick", 1)


def test_rerun_replaces_the_directory_and_uses_the_cache(
    test_experiment: Experiment, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    repro.run_experiment(test_experiment, out, jobs=1)
    (out / TEST_ID / "figures" / "stale.png").write_bytes(b"old")
    again = repro.run_experiment(test_experiment, out, jobs=1)
    assert (again.result.ran, again.result.cached) == (0, 4)
    assert not (out / TEST_ID / "figures" / "stale.png").exists()
    # A directory that does not hold an experiment is not replaced.
    (out / TEST_ID / "experiment.json").unlink()
    with pytest.raises(FileExistsError, match=r"no experiment\.json"):
        repro.run_experiment(test_experiment, out, jobs=1)
    assert (out / TEST_ID / "comparison.csv").exists()


@pytest.mark.parametrize(
    ("tolerance", "ours", "published", "accepted", "text"),
    [
        (Relative(0.25), 1.25, 1.0, True, "± 25 %"),
        (Relative(0.25), 1.2501, 1.0, False, "± 25 %"),
        (Relative(0.25), -1.2, -1.0, True, "± 25 %"),
        (Absolute(0.05), 0.54, 0.5, True, "± 0.05"),
        (Absolute(0.05), 0.56, 0.5, False, "± 0.05"),
        (Between(0.8, 1.25), 0.8, 1.0, True, "within [0.8, 1.25]"),
        (Between(0.8, 1.25), 1.3, 1.0, False, "within [0.8, 1.25]"),
        (AtLeast(1.25), 1.3, 1.0, True, "≥ 1.25"),
        (AtLeast(1.25), 1.2, 1.0, False, "≥ 1.25"),
        (AtMost(0.0), 0.0, 0.0, True, "≤ 0"),
        (AtMost(0.0), 0.1, 0.0, False, "≤ 0"),
    ],
)
def test_tolerances(
    tolerance: repro.Tolerance, ours: float, published: float, accepted: bool, text: str
) -> None:
    assert tolerance.accepts(ours, published) is accepted
    assert tolerance.describe() == text
    pub = Published("m", published, tolerance, reason=None)
    assert pub.verdict(ours) == (("match", "") if accepted else ("miss", "outside tolerance"))
    assert pub.verdict(math.nan) == ("miss", "no result for this point")


def test_a_published_difference_compares_two_points(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, SMALL, "small.toml")
    count = "flow[0].count"
    experiment = _experiment(
        scenario,
        [
            # Two flows minus one flow: exactly one more.
            Published("flows", 1.0, Absolute(0), {count: 2}, "one more", baseline={count: 1}),
            Published("flows", 0.0, AtMost(0.0), {count: 2}, "none more", baseline={count: 1}),
        ],
    )
    outcome = repro.run_experiment(experiment, tmp_path / "out", jobs=1)
    table = outcome.comparison
    assert list(table["verdict"]) == ["match", "miss"]
    assert list(table["ours"]) == [1.0, 1.0]
    assert list(table["n"]) == [2, 2]
    # Both points hold the same count in every seed: no spread, so a zero-width interval.
    assert list(table["ci_half_width"]) == [0.0, 0.0]
    assert table["params"].iloc[0] == "flow[0].count = 2 minus flow[0].count = 1"
    # The quick sweep lacks the two-flow point: neither difference is covered.
    quick = repro.run_experiment(experiment, tmp_path / "quick", quick=True, jobs=1)
    assert (len(quick.comparison), quick.not_covered) == (0, 2)
    with pytest.raises(ExperimentError, match="does not vary"):
        _experiment(
            scenario, [Published("flows", 1, Absolute(0), {count: 2}, baseline={"duration": 1})]
        )


def test_definition_errors(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, SMALL, "small.toml")
    with pytest.raises(ExperimentError, match="lower-case"):
        Experiment(**{**_experiment(scenario).__dict__, "id": "Bad_Id"})
    with pytest.raises(ExperimentError, match="does not vary"):
        _experiment(scenario, [Published("flows", 1, Absolute(0), {"duration": "5s"})])
    two = _experiment(scenario, [Published("flows", 1, Absolute(0), {})])
    with pytest.raises(ExperimentError, match="selects 2 points"):
        repro.run_experiment(two, tmp_path / "out", jobs=1)
    none = _experiment(scenario, [Published("flows", 1, Absolute(0), {"flow[0].count": 5})])
    with pytest.raises(ExperimentError, match="selects no point"):
        repro.run_experiment(none, tmp_path / "out", jobs=1)
    missing = _experiment(tmp_path / "absent.toml")
    with pytest.raises(ExperimentError, match=r"absent\.toml not found"):
        repro.run_experiment(missing, tmp_path / "out", jobs=1)


# --- the command ----------------------------------------------------------------------------

MODULE = """
from pathlib import Path

from pathweave.repro import Absolute, Experiment, Published, Relative
from pathweave.sweep import Sweep


def metrics(run):
    return {"goodput_bps": float(run.flows["goodput_bps"].sum())}


EXPERIMENT = Experiment(
    id="cli-test",
    title="CLI test experiment",
    description="registered through PATHWEAVE_EXPERIMENTS",
    setup="small",
    scenarios=(str(Path(__file__).with_name("small.toml")),),
    sweep=Sweep(grid={"flow[0].count": [1, 2]}, seeds=2),
    quick=Sweep(grid={"flow[0].count": [2]}, seeds=2),
    metrics=metrics,
    published=[
        Published("goodput_bps", 1e12, Relative(0.1), {"flow[0].count": 2}, "wrong",
                  reason="wrong on purpose"),
    ],
)
"""


@pytest.fixture
def cli_experiment(tmp_path: Path) -> dict[str, str]:
    """Environment that registers the module ``cli_test_experiment`` in a subprocess."""
    write_scenario(tmp_path, SMALL, "small.toml")
    (tmp_path / "cli_test_experiment.py").write_text(textwrap.dedent(MODULE))
    return {"PYTHONPATH": str(tmp_path), "PATHWEAVE_EXPERIMENTS": "cli_test_experiment"}


def test_list_and_unknown_ids(tmp_path: Path, cli_experiment: dict[str, str]) -> None:
    listed = run_cli("reproduce", "--list", env=cli_experiment)
    assert listed.returncode == 0, listed.stderr
    for piece in ("reno-square-root", "cli-test", "5 x 3", "3 x 2", "2 x 2", "1 x 2"):
        assert piece in listed.stdout, piece
    unknown = run_cli("reproduce", "reno-square-root", "nope", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "unknown experiment 'nope'" in unknown.stderr
    assert "reno-square-root" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    nothing = run_cli("reproduce", cwd=tmp_path)
    assert nothing.returncode == 2
    assert "--list" in nothing.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli_test_experiment.py", "small.toml"]


def test_a_miss_exits_0_and_is_in_the_table_and_report(
    tmp_path: Path, cli_experiment: dict[str, str]
) -> None:
    out = tmp_path / "out"
    proc = run_cli("reproduce", "cli-test", "--out", out, "--jobs", "1", env=cli_experiment)
    assert proc.returncode == 0, proc.stderr
    assert "miss" in proc.stdout
    assert "wrong on purpose" in proc.stdout
    assert "cli-test: 0 match, 1 miss" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["cache", "cli-test", "report.html"]
    page = (out / "report.html").read_text()
    assert 'class="miss"' in page
    assert "wrong on purpose" in page
    # 'all' runs every registered experiment; --quick keeps this one short. Every shipped
    # experiment's quick form runs too: about a minute and a half on two cores, longer on a
    # busy host (the limit only guards against a hang).
    everything = run_cli(
        "reproduce",
        "all",
        "--quick",
        "--out",
        out,
        "--jobs",
        "2",
        "--quiet",
        env=cli_experiment,
        timeout=600,
    )
    assert everything.returncode == 0, everything.stderr
    assert (everything.stdout, everything.stderr) == ("", "")
    shipped = [e.id for e in repro.experiments()]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["cache", "cli-test", "report.html", *shipped]
    )
    # The status page in the docs is what the shipped experiments' quick results generate.
    shutil.rmtree(out / "cli-test")
    committed = (REPO / "docs" / "status.md").read_text(encoding="utf-8")
    assert render_status(out) == committed, (
        "docs/status.md is not what the quick reproductions generate: regenerate it with "
        "python -m pathweave.repro.status (docs/development.md)"
    )


def test_reproduce_reno_square_root_quick(tmp_path: Path) -> None:
    proc = run_cli("reproduce", "reno-square-root", "--quick", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "results" / "reproduce"
    assert sorted(p.name for p in out.iterdir()) == ["cache", "reno-square-root", "report.html"]
    directory = out / "reno-square-root"
    table = pd.read_csv(directory / "comparison.csv")
    assert list(table.columns) == list(COMPARISON_COLUMNS)
    assert list(table["params"]) == [
        "link[0].loss = 0.001",
        "link[0].loss = 0.003",
        "link[0].loss = 0.01",
    ]
    assert set(table["verdict"]) <= {"match", "miss"}
    assert (table["n"] == 2).all()
    # The square-root shape: goodput falls with p, within a factor of two of the model.
    assert table["ours"].is_monotonic_decreasing
    assert ((table["ours"] / table["published"]).between(0.5, 2.0)).all()
    for suffix in ("png", "pdf"):
        assert (directory / "figures" / f"goodput-vs-loss.{suffix}").stat().st_size > 1000
    manifest = json.loads((directory / "experiment.json").read_text())
    assert (manifest["mode"], manifest["runs"], manifest["not_covered"]) == ("quick", 6, 2)
    assert "reno-square-root" in proc.stdout
    assert "report:" in proc.stdout
    # A rerun takes everything from the cache.
    again = run_cli("reproduce", "reno-square-root", "--quick", "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads((directory / "experiment.json").read_text())["cached"] == 6


@pytest.mark.slow
def test_reproduce_reno_square_root_full_matches(tmp_path: Path) -> None:
    proc = run_cli("reproduce", "reno-square-root", "--out", tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "reno-square-root" / "comparison.csv")
    assert len(table) == 5
    assert (table["n"] == 3).all()
    assert list(table["verdict"]) == ["match"] * 5, table.to_string()
