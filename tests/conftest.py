"""Shared fixtures: small scenarios written into each test's temporary directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
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
# that ran (passed, failed, known misses or skipped for lateness) were skipped for lateness,
# provided that the host left this machine's CPU alone through the session (see QUIET_HOST).
# PATHWEAVE_REALTIME_AGAIN=FILE (a summary an earlier session wrote) runs again only the checks
# that session skipped for lateness, and counts and judges the two sessions as one: each check
# has its newer outcome. A host that takes the CPU for a spell makes every check in the spell
# late; a later try, after other work, measures the emulator instead of the spell.

# The share of the session's wall time that the hypervisor may take from this machine
# (`steal` in /proc/stat, both CPUs) for the late share to be judged. A lateness skip already
# needs the host to have taken at least 0.5 % of every run's wall time (tests/test_emulate.py,
# HOST_BUSY); the sessions with a quiet host took 0.1-0.3 %, and the CI sessions where a third
# to a half of the checks were late took 4-14 % (one run) and 2-70 % per run (another), in
# spells that covered the whole session; the local CI run that passed took 2.0 %, up to 9.5 %
# per run in a spell. The bound is HOST_BUSY itself: a session is quiet when the host took less
# of it than makes one run busy. A spell does not have to cover the session to make a quarter
# of the checks late (at 2 % over a third of a session the session's share is 0.7 %), so a
# session above the bound is printed but not judged: its late share measures the host. A run
# late on a quiet host is a failed check, not a skip, so an emulator that cannot keep time
# still fails there, and on a quiet host the limit still holds.
QUIET_HOST = 0.005
_session_start: tuple[float, float] | None = None


def steal_s() -> float:
    """CPU time the hypervisor gave to others while this machine wanted it (``steal`` in
    /proc/stat, all CPUs), in seconds; 0 where the kernel does not report it."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def session_host_share() -> float:
    """The share of this session's wall time so far that the host took from this machine."""
    if _session_start is None:
        return 0.0
    steal0, t0 = _session_start
    return (steal_s() - steal0) / max(time.monotonic() - t0, 1e-9)


# Every lateness skip says that its runs were late and gives their p99 lateness
# (tests/test_emulate.py, `skip_if_host_busy`).
LATE_SKIP = re.compile(r"\blate\b.*p99 lateness", re.DOTALL)

# Each real-time check's outcome: "passed", "late", "skipped", "known miss" or "failed", with
# its text.
_realtime: dict[str, tuple[str, str]] = {}
# The earlier session's outcomes under PATHWEAVE_REALTIME_AGAIN, for the checks not run again.
_earlier: dict[str, tuple[str, str]] = {}
_again = False


def _again_from() -> dict[str, tuple[str, str]] | None:
    """The outcomes in the summary PATHWEAVE_REALTIME_AGAIN names, or None when it is unset."""
    value = os.environ.get("PATHWEAVE_REALTIME_AGAIN")
    if not value:
        return None
    try:
        outcomes = json.loads(Path(value).read_text())["outcomes"]
        return {str(k): (str(v[0]), str(v[1])) for k, v in outcomes.items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        raise pytest.UsageError(
            f"PATHWEAVE_REALTIME_AGAIN={value!r}: not a real-time summary that "
            f"PATHWEAVE_REALTIME_SUMMARY wrote ({e})"
        ) from e


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under PATHWEAVE_REALTIME_AGAIN, deselects every check but those skipped for lateness."""
    if not _again:
        return
    again = {nodeid for nodeid, (kind, _) in _earlier.items() if kind == "late"}
    keep = [item for item in items if item.nodeid in again]
    dropped = [item for item in items if item.nodeid not in again]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


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


def _outcomes() -> dict[str, tuple[str, str]]:
    """Every check's outcome: this session's, or the earlier one's for a check not run again."""
    return {**_earlier, **_realtime}


def _realtime_by_kind() -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {
        "passed": [],
        "late": [],
        "skipped": [],
        "known miss": [],
        "failed": [],
    }
    for nodeid, (kind, text) in _outcomes().items():
        kinds[kind].append(f"{nodeid}: {text}" if text else nodeid)
    return kinds


def realtime_summary() -> tuple[str, float]:
    """The summary line, and the share of the checks that ran that were skipped for lateness."""
    n = {k: len(v) for k, v in _realtime_by_kind().items()}
    line = f"real-time checks: {n['passed']} passed, {n['late']} skipped for lateness"
    if n["skipped"]:
        reasons = sorted({text for kind, text in _outcomes().values() if kind == "skipped"})
        line += f", {n['skipped']} skipped: {'; '.join(reasons)}"
    if n["known miss"]:
        line += f", {n['known miss']} known misses (xfail)"
    if n["failed"]:
        line += f", {n['failed']} failed"
    if _again:
        again = sum(kind == "late" for kind, _ in _earlier.values())
        line += f" ({again} of them run again after an earlier session skipped them for lateness)"
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


def _late_verdict() -> tuple[float, float, bool]:
    """The late share, the session's host share (taken once, at the first call after the
    tests) and whether the late share fails the session: over the limit with a quiet host."""
    global _verdict
    if _verdict is None:
        late_share, host_share = realtime_summary()[1], session_host_share()
        limit = _max_late_share()
        over = limit is not None and late_share > limit and host_share < QUIET_HOST
        _verdict = (late_share, host_share, over)
    return _verdict


_verdict: tuple[float, float, bool] | None = None


def pytest_configure(config: pytest.Config) -> None:
    _max_late_share()  # a bad limit is refused before any test runs
    global _session_start
    _session_start = (steal_s(), time.monotonic())
    global _again
    earlier = _again_from()
    _again = earlier is not None
    _earlier.clear()
    _earlier.update(earlier or {})


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _outcomes():
        return
    tr = terminalreporter
    tr.section("real-time checks")
    kinds = _realtime_by_kind()
    for line in kinds["late"]:
        tr.write_line(f"skipped for lateness: {line}")
    line = realtime_summary()[0]
    late_share, host_share, over = _late_verdict()
    tr.write_line(f"{line}; the host took {host_share:.1%} of this machine's CPU meanwhile")
    limit = _max_late_share()
    if limit is not None and late_share > limit:
        if over:
            tr.write_line(
                f"real-time checks: {late_share:.0%} were skipped for lateness, more than the "
                f"{limit:.0%} allowed (PATHWEAVE_REALTIME_MAX_LATE), while the host left "
                "the CPU alone: the emulator did not keep time for enough of them"
            )
        else:
            tr.write_line(
                f"real-time checks: {late_share:.0%} were skipped for lateness, more than the "
                f"{limit:.0%} allowed (PATHWEAVE_REALTIME_MAX_LATE), but the host took "
                f"{host_share:.1%} of this machine's CPU through the session (at least "
                f"{QUIET_HOST:.1%}): the late share measures the host and is not judged"
            )
    out = os.environ.get("PATHWEAVE_REALTIME_SUMMARY")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(
            json.dumps(
                {
                    **kinds,
                    "summary": line,
                    "late_share": late_share,
                    "host_share": host_share,
                    "late_share_failed": over,
                    "outcomes": {k: list(v) for k, v in sorted(_outcomes().items())},
                },
                indent=1,
            )
            + "\n"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fails a session whose real-time checks were skipped for lateness beyond the limit while
    the host was quiet (see QUIET_HOST), or, under PATHWEAVE_REALTIME_AGAIN, one whose earlier
    session had a failure."""
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return
    failed_before = _again and any(kind == "failed" for kind, _ in _earlier.values())
    if failed_before or (_outcomes() and _late_verdict()[2]):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
