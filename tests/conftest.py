"""Shared fixtures: small scenarios written into each test's temporary directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Reproducible property tests that leave no example database in the work tree.
settings.register_profile("pathweave", database=None, derandomize=True, deadline=None)
settings.load_profile("pathweave")

# Two Reno flows with different RTTs through a RED bottleneck: RED's random early drops make
# the outcome depend on the seed, and five simulated seconds run in a few milliseconds.
SMALL = textwrap.dedent(
    """
    name = "small"
    description = "two Reno flows over a RED bottleneck"
    duration = "5s"
    seed = 7
    sample_interval = "50ms"

    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1, w_q = 0.002 }

    [[link]]
    name = "access{i}"
    count = 2
    rate = "100Mbps"
    delay = "{n} ms"

    [[flow]]
    name = "reno{i}"
    count = 2
    path = ["access{i}", "bottleneck"]
    start = "{i}00ms"
    """
)


def write_scenario(directory: Path, text: str, filename: str = "scenario.toml") -> Path:
    """Write scenario ``text`` to ``directory/filename`` and return the path."""
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def small_scenario(tmp_path: Path) -> Path:
    """The path of the SMALL scenario, written into the test's temporary directory."""
    return write_scenario(tmp_path, SMALL, "small.toml")


# SMALL with a [sweep] table: 2 x 2 points x 3 seeds = 12 runs of a few milliseconds each.
SWEEP = SMALL + textwrap.dedent(
    """
    [sweep]
    seeds = 3

    [sweep.grid]
    "link[0].rate" = ["5Mbps", "10Mbps"]
    "flow[0].count" = [1, 2]
    """
)


@pytest.fixture
def sweep_scenario(tmp_path: Path) -> Path:
    """The path of the SWEEP scenario, written into the test's temporary directory."""
    return write_scenario(tmp_path, SWEEP, "sweep.toml")


def run_cli(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pathweave ARGS`` as a user would and capture its output."""
    environ = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pathweave", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=timeout,
        check=False,
    )


# ---------------------------------------------------------------------------------------------
# Real-time checks (tests marked `emulation`): a run the emulator could not keep on time in any
# of its tries is skipped as a measurement of a busy machine, not hidden. At the end of the
# session each such skip is listed with its lateness figures, followed by one summary line:
#     real-time checks: N passed, M skipped for lateness[, K skipped: reason]
#                       [, X known misses (xfail)][, F failed]
# PATHWEAVE_REALTIME_SUMMARY=FILE also writes the counts and the lines as JSON, and
# PATHWEAVE_REALTIME_MAX_LATE=0.25 fails the session when more than that share of the checks
# that ran (passed, failed, known misses or skipped for lateness) were skipped for lateness.

# Every lateness skip says that its runs were late and gives their p99 lateness
# (tests/test_emulate.py, `skip_if_host_busy`).
LATE_SKIP = re.compile(r"\blate\b.*p99 lateness", re.DOTALL)

# Each real-time check's outcome: "passed", "late", "skipped", "known miss" or "failed", with
# its text.
_realtime: dict[str, tuple[str, str]] = {}


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Sort each real-time check by its outcome; a failure in any phase is the outcome. A
    known miss (``xfail``) that failed as expected is its own kind; one that passed counts as
    passed."""
    if "emulation" not in report.keywords:
        return
    if report.failed:
        _realtime[report.nodeid] = ("failed", "")
    elif report.skipped and hasattr(report, "wasxfail"):
        _realtime[report.nodeid] = ("known miss", "")
    elif report.skipped:
        reason = _skip_reason(report)
        _realtime[report.nodeid] = ("late" if LATE_SKIP.search(reason) else "skipped", reason)
    elif report.when == "call":
        _realtime.setdefault(report.nodeid, ("passed", ""))


def _realtime_by_kind() -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {
        "passed": [],
        "late": [],
        "skipped": [],
        "known miss": [],
        "failed": [],
    }
    for nodeid, (kind, text) in _realtime.items():
        kinds[kind].append(f"{nodeid}: {text}" if text else nodeid)
    return kinds


def realtime_summary() -> tuple[str, float]:
    """The summary line, and the share of the checks that ran that were skipped for lateness."""
    n = {k: len(v) for k, v in _realtime_by_kind().items()}
    line = f"real-time checks: {n['passed']} passed, {n['late']} skipped for lateness"
    if n["skipped"]:
        reasons = sorted({text for kind, text in _realtime.values() if kind == "skipped"})
        line += f", {n['skipped']} skipped: {'; '.join(reasons)}"
    if n["known miss"]:
        line += f", {n['known miss']} known misses (xfail)"
    if n["failed"]:
        line += f", {n['failed']} failed"
    ran = n["passed"] + n["late"] + n["known miss"] + n["failed"]
    return line, (n["late"] / ran if ran else 0.0)


def _max_late_share() -> float | None:
    value = os.environ.get("PATHWEAVE_REALTIME_MAX_LATE")
    if not value:
        return None
    try:
        share = float(value)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise pytest.UsageError(
            f"PATHWEAVE_REALTIME_MAX_LATE={value!r} is not allowed: give a share from 0 to 1"
        )
    return share


def pytest_configure(config: pytest.Config) -> None:
    _max_late_share()  # a bad limit is refused before any test runs


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _realtime:
        return
    tr = terminalreporter
    tr.section("real-time checks")
    kinds = _realtime_by_kind()
    for line in kinds["late"]:
        tr.write_line(f"skipped for lateness: {line}")
    line, late_share = realtime_summary()
    tr.write_line(line)
    limit = _max_late_share()
    if limit is not None and late_share > limit:
        tr.write_line(
            f"real-time checks: {late_share:.0%} were skipped for lateness, more than the "
            f"{limit:.0%} allowed (PATHWEAVE_REALTIME_MAX_LATE): the machine could not keep "
            "time for enough of them to judge the emulator"
        )
    out = os.environ.get("PATHWEAVE_REALTIME_SUMMARY")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(
            json.dumps({**kinds, "summary": line, "late_share": late_share}, indent=1) + "\n"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fails a session whose real-time checks were skipped for lateness beyond the limit."""
    limit = _max_late_share()
    if limit is None or exitstatus != 0:
        return
    if realtime_summary()[1] > limit:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
