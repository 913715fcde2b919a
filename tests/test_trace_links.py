"""Links driven by Mahimahi traces (``rate = { trace = "FILE" }``) through the CLI and the API:
relative paths resolved beside the scenario file, the mean rate in the links table, sweeps
that find their traces from any directory, and every bad trace refused with exit status 2 and
one line, before anything is written."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import pathweave
from pathweave.emulate import emulate
from pathweave.sweep import load_plan
from test_cli import pathweave_cli
from test_emulate import (  # noqa: F401 (nothing_left_behind: an autouse fixture)
    WHY_NOT,
    nothing_left_behind,
)
from test_kernel_emulate import _on_time

# One delivery opportunity of 1504 bytes per millisecond: 12.032 Mbit/s.
EVERY_MS = "".join(f"{m}\n" for m in range(1, 1001))
EVERY_MS_BPS = 1504 * 8 * 1000

SCENARIO = textwrap.dedent(
    """
    name = "traced"
    duration = "2s"
    sample_interval = "100ms"

    [[link]]
    name = "cell"
    rate = { trace = "TRACE" }
    delay = "10ms"
    queue = { type = "droptail", limit = "100pkt" }

    [[flow]]
    name = "f"
    path = ["cell"]
    """
)


def _scenario(directory: Path, trace: str, extra: str = "") -> Path:
    path = directory / "s.toml"
    path.write_text(SCENARIO.replace("TRACE", trace) + extra, encoding="utf-8")
    return path


def test_a_relative_trace_is_found_beside_the_scenario_from_any_directory(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "ms.trace").write_text(EVERY_MS)
    scenario = _scenario(tmp_path, "traces/ms.trace")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    proc = pathweave_cli("run", scenario, "--out", out, "--format", "csv", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    links = pd.read_csv(out / "links.csv")
    assert set(links["rate_bps"]) == {EVERY_MS_BPS}
    # Text parsed without a file resolves against the directory it is given.
    text = scenario.read_text()
    sc = pathweave.parse(text, "s.toml", base_dir=tmp_path)
    assert sc.trace_files == [str(tmp_path / "traces" / "ms.trace")]
    with pytest.raises(pathweave.ScenarioError, match="cannot read the file"):
        pathweave.parse(text, "s.toml", base_dir=elsewhere)


def test_a_sweep_over_a_trace_link_runs_from_another_directory(tmp_path: Path) -> None:
    (tmp_path / "ms.trace").write_text(EVERY_MS)
    sweep = '\n[sweep]\nseeds = 1\n[sweep.grid]\n"link[0].delay" = ["5ms", "20ms"]\n'
    scenario = _scenario(tmp_path, "ms.trace", sweep)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = pathweave_cli("sweep", scenario, "--out", tmp_path / "out", "--quiet", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    # A cached run is not reused once the trace changes under the same name.
    before = [t.key for t in load_plan(scenario).tasks]
    (tmp_path / "ms.trace").write_text(EVERY_MS.replace("1000\n", "1000\n1000\n"))
    after = [t.key for t in load_plan(scenario).tasks]
    assert not set(before) & set(after)


def _empty(d: Path) -> str:
    (d / "t.trace").write_text("")
    return "t.trace"


def _not_a_number(d: Path) -> str:
    (d / "t.trace").write_text("1\n2\n3.5\n")
    return "t.trace"


def _decreasing(d: Path) -> str:
    (d / "t.trace").write_text("10\n20\n15\n")
    return "t.trace"


def _zero_period(d: Path) -> str:
    (d / "t.trace").write_text("0\n0\n")
    return "t.trace"


def _fifo(d: Path) -> str:
    os.mkfifo(d / "t.trace")
    return "t.trace"


def _oversized(d: Path) -> str:
    with (d / "t.trace").open("wb") as f:
        f.truncate(100_000_001)  # sparse: over the limit by its size, nothing to read
    return "t.trace"


def _missing(d: Path) -> str:
    return "absent.trace"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_empty, "the trace is empty"),
        (_not_a_number, 'line 3: "3.5" is not a non-negative integer number of milliseconds'),
        (_decreasing, "line 3: 15 ms is before the 20 ms of line 2"),
        (_zero_period, "the last timestamp is 0 ms"),
        (_fifo, "a named pipe, not a regular file"),
        (_oversized, "100000001 bytes; trace files are limited to 100000000 bytes"),
        (_missing, "cannot read the file"),
    ],
    ids=["empty", "not-a-number", "decreasing", "zero-period", "fifo", "oversized", "missing"],
)
def test_a_bad_trace_exits_2_with_one_line(
    tmp_path: Path, make: Callable[[Path], str], why: str
) -> None:
    name = make(tmp_path)
    scenario = _scenario(tmp_path, name)
    listing = sorted(p.name for p in tmp_path.iterdir())
    for argv in (["run", scenario, "--out", tmp_path / "out"], ["validate", scenario]):
        proc = pathweave_cli(*argv, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"{scenario}: link[0].rate.trace = "), lines[0]
        assert str(tmp_path / name) in lines[0]
        assert why in lines[0]
        assert sorted(p.name for p in tmp_path.iterdir()) == listing  # nothing written


# --- the same trace in real time ---------------------------------------------------------

# A hand-written trace in Mahimahi's format with a one-second cycle: 300 ms at two
# opportunities a millisecond, 300 ms at one every other millisecond, 400 ms at one a
# millisecond: 1,150 opportunities a second, 13.84 Mbit/s on average.
CYCLE_OPPORTUNITIES = 600 + 150 + 400
CYCLE = "".join(
    [f"{m}\n{m}\n" for m in range(1, 301)]
    + [f"{m}\n" for m in range(302, 601, 2)]
    + [f"{m}\n" for m in range(601, 1001)]
)
CYCLE_BPS = CYCLE_OPPORTUNITIES * 1504 * 8


def test_the_hand_written_cycle_has_the_stated_capacity() -> None:
    stamps = [int(x) for x in CYCLE.split()]
    assert len(stamps) == CYCLE_OPPORTUNITIES
    assert stamps[-1] == 1000  # the period


@pytest.mark.emulation
@pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
def test_a_trace_link_in_real_time_agrees_with_the_simulator(tmp_path: Path) -> None:
    """One TCP Reno flow for 20 s over a link driven by the cycle above (10 ms each way,
    100-packet buffer): under the emulator, which replays the trace in real time with the
    simulator's link code, the flow reaches at least 60 % of the trace's capacity and its
    goodput is within 10 % of the simulator's."""
    (tmp_path / "cycle.trace").write_text(CYCLE, encoding="utf-8")
    scenario = _scenario(tmp_path, "cycle.trace").read_text(encoding="utf-8")
    sc = pathweave.parse(
        scenario.replace('duration = "2s"', 'duration = "20s"'), "cycle", base_dir=tmp_path
    )
    emulated = _on_time("trace link", lambda: emulate(sc, 1))
    simulated = pathweave.run(sc, seed=1)
    emu = float(emulated.flows["goodput_bps"][0])
    sim = float(simulated.flows["goodput_bps"][0])
    print(
        f"trace link: capacity {CYCLE_BPS / 1e6:.2f} Mbit/s, goodput emulated "
        f"{emu / 1e6:.3f}, simulated {sim / 1e6:.3f} Mbit/s"
    )
    assert emu >= 0.6 * CYCLE_BPS
    assert abs(emu - sim) <= 0.1 * sim
