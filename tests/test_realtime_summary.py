"""The real-time checks' summary and its second try (tests/conftest.py): a stand-in session of
four checks marked `emulation`, some of which skip as late, run with the project's conftest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

STAND_IN = """
import os

import pytest

pytestmark = pytest.mark.emulation
LATE = set(os.environ.get("STAND_IN_LATE", "").split(","))
FAIL = set(os.environ.get("STAND_IN_FAIL", "").split(","))


@pytest.mark.parametrize("name", ["a", "b", "c", "d"])
def test_check(name):
    if name in LATE:
        pytest.skip(
            f"{name}: every one of 1 runs was late (p99 lateness 3.000 ms) while the host "
            "took 20.0% of the CPU from this machine"
        )
    assert name not in FAIL
"""


# The stand-in session's host share (conftest.session_host_share) comes from the test, not
# from this machine's steal counter, which a busy host moves.
HOST_SHARE = """

def session_host_share():
    return float(os.environ["STAND_IN_HOST_SHARE"])
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    conftest = (Path(__file__).parent / "conftest.py").read_text()
    (tmp_path / "conftest.py").write_text(conftest + HOST_SHARE)
    (tmp_path / "test_stand_in.py").write_text(STAND_IN)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    emulation: stand-in\n")
    return tmp_path


def session(
    where: Path,
    summary: str,
    late: str = "",
    fail: str = "",
    again: str | None = None,
    host_share: float = 0.002,
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STAND_IN_HOST_SHARE": str(host_share),
        "STAND_IN_LATE": late,
        "STAND_IN_FAIL": fail,
        "PATHWEAVE_REALTIME_SUMMARY": str(where / summary),
        "PATHWEAVE_REALTIME_MAX_LATE": "0.25",
    }
    env.pop("PATHWEAVE_REALTIME_AGAIN", None)
    if again is not None:
        env["PATHWEAVE_REALTIME_AGAIN"] = str(where / again)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(where)],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_second_try_of_the_late_checks_is_judged_with_the_first(stand_in: Path) -> None:
    first = session(stand_in, "first.json", late="a,b")
    # Two of four late: 50 % against 25 % allowed.
    assert first.returncode == 1, first.stdout
    summary = json.loads((stand_in / "first.json").read_text())
    assert summary["late_share"] == 0.5
    assert {k for k, (kind, _) in summary["outcomes"].items() if kind == "late"} == {
        "test_stand_in.py::test_check[a]",
        "test_stand_in.py::test_check[b]",
    }

    # Only the two late checks run again; one is on time now: 1 of 4 late, within 25 %.
    second = session(stand_in, "second.json", late="b", again="first.json")
    assert second.returncode == 0, second.stdout
    assert "1 passed, 1 skipped, 2 deselected" in second.stdout
    assert "real-time checks: 3 passed, 1 skipped for lateness (2 of them run again" in (
        second.stdout
    )
    assert json.loads((stand_in / "second.json").read_text())["late_share"] == 0.25

    # Still both late: still 50 %.
    third = session(stand_in, "third.json", late="a,b", again="first.json")
    assert third.returncode == 1, third.stdout


def test_a_second_try_fails_on_a_failure_of_the_first(stand_in: Path) -> None:
    first = session(stand_in, "first.json", late="a", fail="c")
    assert first.returncode == 1
    second = session(stand_in, "second.json", again="first.json")
    assert "1 passed, 3 deselected" in second.stdout
    assert second.returncode == 1, second.stdout


def test_a_second_try_with_nothing_late_runs_nothing(stand_in: Path) -> None:
    assert session(stand_in, "first.json").returncode == 0
    second = session(stand_in, "second.json", again="first.json")
    assert second.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, second.stdout


def test_a_summary_that_is_not_one_is_refused(stand_in: Path) -> None:
    (stand_in / "bad.json").write_text('{"late": []}')
    bad = session(stand_in, "second.json", again="bad.json")
    assert bad.returncode == pytest.ExitCode.USAGE_ERROR
    assert "PATHWEAVE_REALTIME_AGAIN=" in bad.stderr
    assert "not a real-time summary" in bad.stderr


def test_the_late_share_is_judged_only_when_the_host_was_quiet(stand_in: Path) -> None:
    # Half late while the host took 5 % of the CPU through the session: reported, not judged.
    busy = session(stand_in, "busy.json", late="a,b", host_share=0.05)
    assert busy.returncode == 0, busy.stdout
    assert "the host took 5.0% of this machine's CPU meanwhile" in busy.stdout
    assert "measures the host and is not judged" in busy.stdout
    summary = json.loads((stand_in / "busy.json").read_text())
    assert (summary["late_share"], summary["host_share"]) == (0.5, 0.05)
    assert summary["late_share_failed"] is False
    # The same just under the quiet-host bound (conftest.QUIET_HOST, 0.5 %): judged, fails.
    quiet = session(stand_in, "quiet.json", late="a,b", host_share=0.0049)
    assert quiet.returncode == 1, quiet.stdout
    assert "while the host left the CPU alone" in quiet.stdout
    assert json.loads((stand_in / "quiet.json").read_text())["late_share_failed"] is True
    # A failed check fails the session whatever the host did.
    failed = session(stand_in, "failed.json", late="a,b", fail="c", host_share=0.05)
    assert failed.returncode == 1, failed.stdout
