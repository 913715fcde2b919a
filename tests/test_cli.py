"""The ``pathweave`` command, run as a user would: ``python -m pathweave`` in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pathweave
from conftest import SWEEP, write_scenario
from pathweave import cli


def pathweave_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pathweave ARGS`` and capture its output."""
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pathweave", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


GOOD = textwrap.dedent(
    """
    name = "good"
    duration = "3s"
    sample_interval = "100ms"

    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12 }

    [[link]]
    name = "access"
    rate = "100Mbps"
    delay = "1ms"

    [[flow]]
    name = "bulk{i}"
    count = 2
    path = ["access", "bottleneck"]

    [[flow]]
    name = "udp"
    path = ["bottleneck"]
    traffic = { type = "cbr", rate = "1Mbps" }
    """
)

# Each malformed scenario, with the pieces its error message must contain: the field's path
# and the bad value as written (or, for absent fields and bad syntax, what says so).
MALFORMED = [
    pytest.param(
        """
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["duration", "missing"],
        id="missing-duration",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].rate", "missing"],
        id="link-without-rate",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "-5Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].rate", '"-5Mbps"'],
        id="negative-rate",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "0Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].rate", '"0Mbps"'],
        id="zero-rate",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "5parsecs"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].rate", '"5parsecs"', "unknown unit"],
        id="unknown-unit",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = 5
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].rate", "= 5", "integer"],
        id="rate-of-wrong-type",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l", "nowhere"]
        """,
        ["flow[0].path[1]", '"nowhere"'],
        id="path-through-unknown-link",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = []
        """,
        ["flow[0].path", "[]"],
        id="empty-path",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[link]]
        name = "l"
        rate = "2Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[1].name", '"l"', "duplicate"],
        id="duplicate-link-names",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["flow[1].name", '"f"', "duplicate"],
        id="duplicate-flow-names",
    ),
    pytest.param(
        """
        duration = "0s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["duration", '"0s"'],
        id="zero-duration",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        algorithm = "cubicx"
        path = ["l"]
        """,
        ["flow[0].algorithm", '"cubicx"', "reno"],
        id="unknown-algorithm",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        count = 3
        path = ["l"]
        """,
        ["flow[0].count", "= 3", "{i}"],
        id="count-without-index-in-name",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        queue = { type = "red", min_th = 20, max_th = 10 }
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].queue.max_th", "= 10", "min_th"],
        id="red-min-above-max",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        colour = "blue"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].colour", '"blue"', "unknown field"],
        id="unknown-field",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        queue = { type = "codel" }
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].queue.type", '"codel"', "droptail"],
        id="unknown-queue-type",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        start = "2s"
        """,
        ["flow[0].start", '"2s"', "end"],
        id="start-after-end",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps
        delay = "1ms"
        """,
        ["not valid TOML", "line 5", 'rate = "1Mbps'],
        id="invalid-toml",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        loss = -0.1
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].loss", "-0.1", "probability"],
        id="negative-loss-probability",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "-1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["link[0].delay", '"-1ms"', "negative"],
        id="negative-delay",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        """,
        ["flow", "missing"],
        id="no-flows",
    ),
    pytest.param(
        """
        duration = "1s"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        start = "0.5s"
        stop = "0.2s"
        """,
        ["flow[0].stop", '"0.2s"', "after start"],
        id="stop-before-start",
    ),
    pytest.param(
        """
        duration = "1é"
        [[link]]
        name = "l"
        rate = "1Mbps"
        delay = "1ms"
        [[flow]]
        name = "f"
        path = ["l"]
        """,
        ["duration", '"1é"'],
        id="non-ascii-quantity",
    ),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED)
def test_malformed_scenario_exits_2_with_a_clear_message(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    scenario = write_scenario(tmp_path, textwrap.dedent(text), "bad.toml")
    out = tmp_path / "out"
    proc = pathweave_cli("run", scenario, "--out", out, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(scenario) in proc.stderr
    for piece in expected:
        assert piece in proc.stderr, f"{piece!r} not in {proc.stderr!r}"
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]  # nothing created
    # validate agrees, with the same message.
    check = pathweave_cli("validate", scenario, cwd=tmp_path)
    assert (check.returncode, check.stderr) == (2, proc.stderr)


def test_missing_file_exits_2(tmp_path: Path) -> None:
    proc = pathweave_cli("run", tmp_path / "absent.toml", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "absent.toml" in proc.stderr
    assert "cannot read" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_good_scenario_writes_every_file_and_a_summary(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    out = tmp_path / "out"
    proc = pathweave_cli("run", scenario, "--out", out, "--seed", "4", "--plot", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "fairness.parquet",
        "flow_series.parquet",
        "flows.parquet",
        "link_series.parquet",
        "links.parquet",
        "run.json",
        "run.png",
        "subflow_series.parquet",
        "subflows.parquet",
    ]
    manifest = json.loads((out / "run.json").read_text())
    assert (manifest["scenario"], manifest["seed"], manifest["format"]) == ("good", 4, "parquet")
    # The summary names every flow and group, the bottleneck, and the run's speed.
    for text in ("bulk0", "bulk1", "udp", "goodput Mbps", "Jain's index", "bottleneck"):
        assert text in proc.stdout, text
    assert "events/s" in proc.stdout
    assert str(out) in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml", "out"]


def test_csv_format_and_default_output_directory(tmp_path: Path) -> None:
    write_scenario(tmp_path, GOOD, "good.toml")
    proc = pathweave_cli("run", "good.toml", "--format", "csv", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout, proc.stderr) == ("", "")
    out = tmp_path / "results" / "good"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{name}.csv" for name in pathweave.api.TABLES] + ["run.json"]
    )
    assert (out / "flows.csv").read_text().startswith("name,group,algorithm,")


def test_rerun_replaces_previous_results(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    out = tmp_path / "out"
    assert pathweave_cli("run", scenario, "--out", out, "--format", "csv").returncode == 0
    assert pathweave_cli("run", scenario, "--out", out, "--quiet").returncode == 0
    assert not (out / "flows.csv").exists()
    assert (out / "flows.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml", "out"]


@pytest.mark.parametrize("stranger", ["notes.txt", "good.toml"])
def test_results_beside_files_of_the_user_are_refused_and_left_alone(
    tmp_path: Path, stranger: str
) -> None:
    """Writing replaces the whole directory, so earlier results next to anything pathweave
    did not write (the user's notes, or the very scenario being run) are refused."""
    out = tmp_path / "out"
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    assert pathweave_cli("run", scenario, "--out", out, "--quiet").returncode == 0
    (out / stranger).write_text(GOOD)
    before = sorted(p.name for p in out.iterdir())
    proc = pathweave_cli(
        "run", out / stranger if stranger.endswith(".toml") else scenario, "--out", out
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert stranger in proc.stderr, proc.stderr
    assert "did not write" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == before
    assert (out / stranger).read_text() == GOOD


def test_plot_of_a_run_that_records_no_series(tmp_path: Path) -> None:
    """``[series]`` may leave out what the plot draws; the panels then say so."""
    scenario = write_scenario(tmp_path, "series = false\n" + GOOD, "quiet.toml")
    proc = pathweave_cli("run", scenario, "--plot", "--out", tmp_path / "out", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "run.png").stat().st_size > 0


def test_a_failed_run_leaves_no_directory_it_created(tmp_path: Path) -> None:
    def fail(_: object) -> None:
        raise RuntimeError("stopped by the test")

    target = tmp_path / "deep" / "er" / "out"
    sc = pathweave.parse(GOOD.replace('duration = "3s"', 'duration = "600s"'), "good.toml")
    with pytest.raises(RuntimeError, match="stopped by the test"):
        pathweave.run(sc, out=target, on_progress=fail)
    assert list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    blocker = tmp_path / "taken"
    blocker.write_text("not a directory")
    proc = pathweave_cli("run", scenario, "--out", blocker)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "not a directory" in proc.stderr
    assert blocker.read_text() == "not a directory"


def test_out_that_cannot_be_created_is_refused_before_running(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    blocker = tmp_path / "taken"
    blocker.write_text("a file, so nothing can be made below it")
    proc = pathweave_cli("run", scenario, "--out", blocker / "results")
    assert proc.returncode == 2
    assert proc.stderr.startswith("pathweave: --out: "), proc.stderr
    assert "Traceback" not in proc.stderr
    assert "simulated" not in proc.stdout  # refused before the run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml", "taken"]


@pytest.mark.parametrize(
    ("command", "flag"),
    [("sweep", "--out"), ("reproduce", "--out"), ("reproduce", "--cache")],
)
def test_a_cache_that_cannot_be_created_is_bad_input(
    tmp_path: Path, command: str, flag: str
) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    if command == "sweep":
        args: list[str | Path] = ["sweep", write_scenario(tmp_path, SWEEP, "sweep.toml")]
    else:
        args = ["reproduce", "reno-square-root", "--quick"]
    if flag == "--cache":
        args += ["--out", tmp_path / "out"]
    proc = pathweave_cli(*args, flag, blocker / "sub", "--quiet")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"pathweave: {flag}: cannot create the cache"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_out_holding_other_data_is_refused_before_running(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    out = tmp_path / "notes"
    out.mkdir()
    (out / "todo.txt").write_text("keep me")
    proc = pathweave_cli("run", scenario, "--out", out)
    assert proc.returncode == 2
    assert "no run.json" in proc.stderr
    assert (out / "todo.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml", "notes"]


def test_interrupt_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    # Long enough (several seconds) to be interrupted mid-run.
    text = GOOD.replace('"3s"', '"3000s"').replace('"100ms"', '"10s"')
    text = text.replace('rate = "10Mbps"', 'rate = "100Mbps"')
    scenario = write_scenario(tmp_path, text, "long.toml")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pathweave", "run", str(scenario), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2.0)  # past start-up, well inside the run
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr
    assert stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml"]


@pytest.mark.parametrize(
    "seed", ["-1", "x", str(2**63)], ids=["negative", "word", "beyond-a-toml-integer"]
)
def test_bad_seed_is_a_usage_error(tmp_path: Path, seed: str) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    proc = pathweave_cli("run", scenario, "--seed", seed, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "--seed" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_validate_accepts_a_good_scenario(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    proc = pathweave_cli("validate", scenario)
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout
    assert "3 flows" in proc.stdout


def test_version() -> None:
    proc = pathweave_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"pathweave {pathweave.__version__}"


@pytest.mark.parametrize("command", ["run", "validate", "compare", "sweep", "reproduce"])
def test_help_shows_no_doubled_percent_signs(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "%%" not in out
    if command == "sweep":
        assert "95 % confidence interval" in " ".join(out.split())
