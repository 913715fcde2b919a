"""The ``pathweave`` command, run as a user would: ``python -m pathweave`` in a subprocess."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
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


def test_names_that_change_alike_get_their_own_default_directories(tmp_path: Path) -> None:
    # "my run" and "my_run" were both written to results/my_run, the second over the first.
    for name in ("my run", "my_run", "my:run"):
        text = GOOD.replace('name = "good"', f"name = {name!r}")
        write_scenario(tmp_path, text, "s.toml")
        assert pathweave_cli("run", "s.toml", "--quiet", cwd=tmp_path).returncode == 0
    dirs = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(dirs) == 3, dirs
    assert "my_run" in dirs  # a name that is already safe stays as it is
    assert all(d.startswith("my_run") for d in dirs)


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


def _long(tmp_path: Path) -> Path:
    """GOOD made to run for minutes, so that it is stopped well inside the run."""
    text = GOOD.replace('"3s"', '"100000s"').replace('"100ms"', '"10s"')
    text = text.replace('rate = "10Mbps"', 'rate = "100Mbps"')
    return write_scenario(tmp_path, text, "long.toml")


def _stop_partway(
    args: list[str | Path], sig: signal.Signals, started: Callable[[], bool]
) -> tuple[int, str, str]:
    """Start ``pathweave ARGS``, send ``sig`` once ``started()`` holds (and a little after),
    and return its exit code, stdout and stderr."""
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pathweave", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not started():
            assert proc.poll() is None, "it ended before it could be stopped"
            assert time.monotonic() < deadline, "it did not start within a minute"
            time.sleep(0.05)
        time.sleep(0.5)  # inside the run
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stdout, stderr


STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(".*"))


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: s.name)
def test_a_signal_during_an_import_stops_the_command_after_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
) -> None:
    # Raised inside an import, the interrupt could be swallowed by importlib's own callbacks
    # and the run went on; it must arrive, once the import is done.
    name = f"pw_slow_import_{sig.name.lower()}"
    (tmp_path / f"{name}.py").write_text(
        "import os, signal, time\n"
        f"os.kill(os.getpid(), signal.{sig.name})\n"
        "for _ in range(20):\n"
        "    time.sleep(0.01)  # longer than one redelivery\n"
        "COMPLETE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    imported = []

    def import_then_wait() -> None:
        with cli._signals_as_interrupt():
            imported.append(__import__(name).COMPLETE)
            for _ in range(500):
                time.sleep(0.01)
        pytest.fail("the signal was lost")

    try:
        with pytest.raises(KeyboardInterrupt):
            import_then_wait()
    finally:
        sys.modules.pop(name, None)
    assert imported == [True]


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: s.name)
def test_a_stopped_run_exits_130_and_writes_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    # Ctrl-C, kill and a closed terminal alike: the partial directory goes, a message says so.
    scenario = _long(tmp_path)
    out = tmp_path / "out"

    def started() -> bool:
        return any(p.name.startswith(".out.partial-") for p in tmp_path.iterdir())

    code, stdout, stderr = _stop_partway(["run", scenario, "--out", out], sig, started)
    assert code == 130, stderr
    assert stderr == "pathweave: interrupted; nothing was written\n"
    assert stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.toml"]


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: s.name)
def test_a_stopped_sweep_exits_130_and_leaves_no_partial_files(
    tmp_path: Path, sig: signal.Signals
) -> None:
    scenario = _long(tmp_path)
    out = tmp_path / "out"
    args: list[str | Path] = ["sweep", scenario, "--jobs", "1", "--out", out]
    code, stdout, stderr = _stop_partway(args, sig, (out / "cache").is_dir)
    assert code == 130, stderr
    assert "interrupted; 0 of 1 runs are kept" in stderr
    assert "Traceback" not in stderr
    assert stdout == ""
    assert _hidden(tmp_path) == []
    assert sorted(p.name for p in out.iterdir()) == ["cache"]


# Runs the command line with one stage made to receive a signal: "write" (a run's or an
# emulation's results being written), "summary" (printed once they are written) or "emulate"
# (the emulation itself; it needs no root, as the emulator is replaced by the simulator or by
# the signal).
STOPPED_AT = textwrap.dedent(
    """
    import os, signal, sys, time
    import pathweave.api, pathweave.emulate
    from pathweave import cli

    sig, stage, argv = getattr(signal, sys.argv[1]), sys.argv[2], sys.argv[3:]

    def stop(*args, **kwargs):
        os.kill(os.getpid(), sig)
        time.sleep(30)  # the signal comes first
        sys.exit("not stopped")

    pathweave.emulate.check = lambda *args, **kwargs: None
    if stage == "emulate":
        pathweave.emulate.emulate = stop
    else:
        # emulate() writes its results as run() does: a simulation stands in for the run.
        pathweave.emulate.emulate = lambda scenario, out=None, format="parquet", plot=False, \
            pcap=None, **kwargs: pathweave.api.run(scenario, out=out, format=format, plot=plot)
    if stage == "write":
        pathweave.api.Result._write_files = stop
    if stage == "summary":
        cli._summary = stop
    sys.exit(cli.main(argv))
    """
)


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize(
    ("command", "stage", "message"),
    [
        ("run", "write", "pathweave: interrupted; nothing was written"),
        # emulate() writes the results itself once the run has ended, its namespaces gone.
        (
            "emulate",
            "write",
            "pathweave: emulation interrupted; its namespaces and devices were removed, "
            "nothing written",
        ),
        (
            "emulate",
            "emulate",
            "pathweave: emulation interrupted; its namespaces and devices were removed, "
            "nothing written",
        ),
        # Once the results are written the message says where, and they stay.
        ("run", "summary", "pathweave: interrupted after writing to {out}"),
    ],
    ids=["run-writing", "emulate-writing", "emulate-running", "run-summary"],
)
def test_a_signal_at_any_stage_is_an_interrupt(
    tmp_path: Path, sig: signal.Signals, command: str, stage: str, message: str
) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", STOPPED_AT, sig.name, stage, command, scenario, "--out", out],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == message.format(out=out) + "\n"
    if stage == "summary":
        assert (out / "run.json").is_file()
    else:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml"]


def _good_to(tmp_path: Path, command: str, stdout: int) -> subprocess.CompletedProcess[str]:
    """``pathweave COMMAND good.toml`` (``run`` into ``tmp_path/out``) with standard output on
    descriptor ``stdout``."""
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    args = [command, str(scenario)] + (["--out", str(tmp_path / "out")] if command == "run" else [])
    return subprocess.run(
        [sys.executable, "-m", "pathweave", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_failed_write_to_stdout_is_one_line_and_loses_nothing(
    tmp_path: Path, command: str
) -> None:
    with open("/dev/full", "w") as full:
        proc = _good_to(tmp_path, command, full.fileno())
    assert proc.returncode == 1
    assert proc.stderr == (
        f"pathweave: cannot write to standard output: {os.strerror(errno.ENOSPC)}\n"
    )
    if command == "run":
        assert (tmp_path / "out" / "run.json").is_file()  # the results are written all the same


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path: Path, command: str) -> None:
    # As `pathweave ... | head -1` once head has exited: no traceback, a failing exit code.
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _good_to(tmp_path, command, write)
    finally:
        os.close(write)
    assert proc.returncode == 1
    assert proc.stderr == ""


@pytest.mark.parametrize("kind", ["to-results", "dangling"])
def test_out_that_is_a_symbolic_link_is_refused_before_running(tmp_path: Path, kind: str) -> None:
    scenario = write_scenario(tmp_path, GOOD, "good.toml")
    earlier = tmp_path / "earlier"
    if kind == "to-results":
        assert pathweave_cli("run", scenario, "--out", earlier, "--quiet").returncode == 0
    link = tmp_path / "latest"
    link.symlink_to(earlier)
    files = sorted(p.name for p in earlier.iterdir()) if kind == "to-results" else []
    proc = pathweave_cli("run", scenario, "--out", link)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"pathweave: --out: {link} is a symbolic link (to {earlier}); the results replace the "
        "whole directory, which would replace the link itself, so give the path it points to "
        f"({earlier}) or another directory\n"
    )
    assert proc.stdout == ""  # refused before the run
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["good.toml", "latest", *(["earlier"] if kind == "to-results" else [])]
    )
    if kind == "to-results":
        assert sorted(p.name for p in earlier.iterdir()) == files


@pytest.mark.parametrize("command", ["run", "compare"])
def test_out_that_is_the_current_directory_is_refused_before_running(
    tmp_path: Path, command: str
) -> None:
    one = 'name = "bulk{i}"\ncount = 2'
    assert one in GOOD
    scenario = write_scenario(tmp_path, GOOD.replace(one, 'name = "bulk"'), "good.toml")
    work = tmp_path / "work"
    work.mkdir()
    extra = ["--flow", "bulk"] if command == "compare" else []
    proc = pathweave_cli(command, scenario, *extra, "--out", ".", cwd=work)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("pathweave: --out: . is the current directory; "), proc.stderr
    assert "give a directory inside it" in proc.stderr
    assert proc.stdout == ""
    assert list(work.iterdir()) == []


def test_reproduce_into_a_directory_of_other_files_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    proc = pathweave_cli("reproduce", "all", "--quick", "--out", out)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"pathweave: --out: {out} exists and does not hold reproductions (no report.html); "
        "choose another directory or remove it\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "keep me"


def test_reproduce_accepts_earlier_reproductions(tmp_path: Path) -> None:
    known = {"reno-square-root"}
    assert cli._reproduce_out_problem(tmp_path / "absent", known) is None
    assert cli._reproduce_out_problem(tmp_path, known) is None  # empty
    (tmp_path / "cache").mkdir()
    (tmp_path / "reno-square-root").mkdir()
    assert cli._reproduce_out_problem(tmp_path, known) is None
    (tmp_path / "other").mkdir()
    assert "no report.html" in str(cli._reproduce_out_problem(tmp_path, known))
    (tmp_path / "report.html").write_text("<html></html>")
    assert cli._reproduce_out_problem(tmp_path, known) is None


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
