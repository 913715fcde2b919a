"""bench/compare.py: alternating runs of simulator builds, summarised per build.

The builds here are stand-in scripts that print the `run` example's JSON with a wall time
taken from a list, so the expected minima, medians and ratios follow from those lists.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.compare import RunError, compare, main, report, us_per_packet  # noqa: E402


def fake_binary(tmp: Path, name: str, walls: list[float], packets: int = 1_000_000) -> Path:
    """A script that prints `run --json` output with the next wall time of `walls` on each
    call, and appends its name and arguments to `calls.log`."""
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
