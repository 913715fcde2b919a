"""bench/compare.py: alternating runs of simulator builds, summarised per build.

The builds here are stand-in scripts that print the `run` example's JSON with a wall time
taken from a list, so the expected minima, medians and ratios follow from those lists.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.compare import (  # noqa: E402
    RunError,
    compare,
    main,
    report,
    side_by_side,
    us_per_packet,
)


def fake_binary(
    tmp: Path, name: str, walls: list[float], packets: int = 1_000_000, hold_s: float = 0.0
) -> Path:
    """A script that prints `run --json` output with the next wall time of `walls` on each
    call, and appends its name and arguments to `calls.log`; with ``hold_s``, it also sleeps
    that long and logs to `spans.log` its name, the CPUs it may use and when it started and
    ended."""
    state = tmp / f"{name}.count"
    state.write_text("0")
    script = tmp / name
    script.write_text(
        f"""#!{sys.executable}
import json, sys
from pathlib import Path
state = Path({str(state)!r})
k = int(state.read_text())
state.write_text(str(k + 1))
with open({str(tmp / "calls.log")!r}, "a") as f:
    f.write({name!r} + " " + " ".join(sys.argv[1:]) + "\\n")
if {hold_s!r} > 0:
    import os, time
    t0 = time.time()
    time.sleep({hold_s!r})
    with open({str(tmp / "spans.log")!r}, "a") as f:
        cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))))
        f.write(f"{name} {{cpus}} {{t0}} {{time.time()}}\\n")
walls = {walls!r}
print(json.dumps({{"wall_s": walls[k], "bottleneck_packets": {packets}}}))
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_rounds_alternate_and_the_summary_follows_the_runs(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    # 1,000,000 packets: a wall time of w seconds is w µs per packet.
    a = fake_binary(tmp_path, "a", [1.0, 3.0, 2.0, 5.0])
    b = fake_binary(tmp_path, "b", [0.5, 0.75, 2.0, 0.25])
    series = compare(scenario, [str(a), str(b)], rounds=4)
    assert series[0].us_per_packet == pytest.approx([1.0, 3.0, 2.0, 5.0])
    assert (series[0].minimum, series[0].median) == pytest.approx((1.0, 2.5))
    assert (series[1].minimum, series[1].median) == pytest.approx((0.25, 0.625))
    calls = [line.split()[0] for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert all(
        line.split()[1:] == [str(scenario), "--json"]
        for line in (tmp_path / "calls.log").read_text().splitlines()
    )
    # The median ratio to the first binary: 0.625 / 2.5.
    assert "0.250" in report(series).splitlines()[2].split()[3]


def test_bad_output_and_failures_are_named(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="wall_s and bottleneck_packets"):
        us_per_packet("not json", "x")
    with pytest.raises(RunError, match="no bottleneck packets"):
        us_per_packet(json.dumps({"wall_s": 1.0, "bottleneck_packets": 0}), "x")
    failing = tmp_path / "fails"
    failing.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    failing.chmod(0o755)
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    with pytest.raises(RunError, match="exited with 3: broken"):
        compare(scenario, [str(failing)], rounds=1)


def test_command_line_checks_its_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = fake_binary(tmp_path, "a", [1.0, 2.0])
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.toml"), str(a)])
    assert "no scenario file" in capsys.readouterr().err
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    with pytest.raises(SystemExit):
        main([str(scenario), str(a), "--rounds", "0"])
    assert "--rounds must be at least 1" in capsys.readouterr().err
    out = tmp_path / "runs.json"
    assert main([str(scenario), str(a), "--rounds", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert rows == [{"binary": str(a), "us_per_packet": pytest.approx([1.0, 2.0])}]


needs_two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="side by side needs two CPUs to pin the runs to"
)


@needs_two_cpus
def test_side_by_side_runs_both_at_once_on_swapped_cpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    a = fake_binary(tmp_path, "a", [1.0, 2.0, 4.0], hold_s=0.4)
    b = fake_binary(tmp_path, "b", [1.5, 1.0, 2.0], hold_s=0.4)
    series, ratios = side_by_side(scenario, [str(a), str(b)], rounds=3)
    assert series[1].us_per_packet == pytest.approx([1.5, 1.0, 2.0])
    assert ratios == pytest.approx([1.5, 0.5, 0.5])
    spans = [line.split() for line in (tmp_path / "spans.log").read_text().splitlines()]
    by_round: dict[str, list[tuple[str, float, float]]] = {"a": [], "b": []}
    for name, cpus, t0, t1 in spans:
        by_round[name].append((cpus, float(t0), float(t1)))
    cpu0, cpu1 = (str(c) for c in sorted(os.sched_getaffinity(0))[:2])
    assert [c for c, _, _ in by_round["a"]] == [cpu0, cpu1, cpu0]
    assert [c for c, _, _ in by_round["b"]] == [cpu1, cpu0, cpu1]
    for (_, a0, a1), (_, b0, b1) in zip(by_round["a"], by_round["b"], strict=True):
        assert max(a0, b0) < min(a1, b1), "the two runs of a round did not overlap"
    out = tmp_path / "runs.json"
    argv = [str(scenario), str(a), str(b), "--side-by-side", "--rounds", "1"]
    for f in (tmp_path / "a.count", tmp_path / "b.count"):
        f.write_text("0")
    assert main([*argv, "--json", str(out)]) == 0
    assert "median 1.500 (range 1.500-1.500, 1 rounds)" in capsys.readouterr().out
    assert json.loads(out.read_text())[1]["ratio_to_first_per_round"] == pytest.approx([1.5])


@needs_two_cpus
def test_side_by_side_stops_the_other_run_when_one_fails(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    failing = tmp_path / "fails"
    # Fails once the other run has started (and written its process id).
    failing.write_text("#!/bin/sh\nsleep 1\necho broken >&2\nexit 3\n")
    failing.chmod(0o755)
    pid_file = tmp_path / "slow.pid"
    slow = tmp_path / "slow"
    slow.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 30\n")
    slow.chmod(0o755)
    with pytest.raises(RunError, match="exited with 3: broken"):
        side_by_side(scenario, [str(failing), str(slow)], rounds=1)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_side_by_side_takes_exactly_two_binaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    a = fake_binary(tmp_path, "a", [1.0])
    with pytest.raises(SystemExit):
        main([str(scenario), str(a), "--side-by-side"])
    assert "exactly two binaries, got 1" in capsys.readouterr().err
