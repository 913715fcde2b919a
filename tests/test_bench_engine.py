"""bench/engine.py's scale comparison: each ratio from rounds of an 8-flow run followed by
the large run, summarised by the median of the rounds' ratios and their range.

The simulator here is a stand-in script that prints the `run` example's JSON with a wall time
chosen by the scenario file's name and the call's number, so the expected ratios follow from
those numbers.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import engine  # noqa: E402


def fake_run(tmp: Path, walls: dict[str, list[float]], packets: int = 1_000_000) -> Path:
    """A script answering `run FILE --json --link L`: the k-th call for a file named `name`
    reports wall time `walls[name][k]`; every call is logged to `calls.log`."""
    script = tmp / "run"
    script.write_text(
        f"""#!{sys.executable}
import json, sys
from pathlib import Path
name = Path(sys.argv[1]).stem
state = Path({str(tmp)!r}) / (name + ".count")
k = int(state.read_text()) if state.exists() else 0
state.write_text(str(k + 1))
with open({str(tmp / "calls.log")!r}, "a") as f:
    f.write(name + " " + " ".join(sys.argv[2:]) + "\\n")
walls = {walls!r}
print(json.dumps({{"wall_s": walls[name][k], "bottleneck_packets": {packets},
                  "events": 6 * {packets}, "peak_rss_kb": 1024}}))
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_each_ratio_pairs_an_eight_flow_run_with_the_large_run_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1,000,000 packets: a wall time of w seconds is w µs per packet. The machine slows
    # down in the second round; the paired ratios stay 2, 2.5 and 3.
    monkeypatch.setattr(
        engine,
        "RUN",
        fake_run(tmp_path, {"eight": [0.3, 0.6, 0.2], "big": [0.6, 1.5, 0.6]}),
    )
    ref, big = tmp_path / "eight.toml", tmp_path / "big.toml"
    m = engine.paired(ref, big, "bottleneck,bottleneck2", pairs=3)
    assert m["ratios"] == pytest.approx([2.0, 2.5, 3.0])
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["eight", "big"] * 3
    assert calls[1].split()[1:] == ["--json", "--link", "bottleneck,bottleneck2"]
    assert calls[0].split()[1:] == ["--json", "--link", "bottleneck"]

    row = {
        "scenario": engine.MULTIPATH,
        "bottleneck_packets": 1_000_000,
        "events_per_packet": 6.0,
        "instructions_per_packet": None,
    }
    (s,) = engine.scale_rows([row], {engine.MULTIPATH: m})
    assert s["ratio_to_8_flows"] == pytest.approx(2.5)
    assert (s["ratio_min"], s["ratio_max"]) == pytest.approx((2.0, 3.0))
    assert s["ref_us_per_packet"] == pytest.approx(0.3)
    assert s["wall_us_per_packet"] == pytest.approx(0.6)
    assert s["pairs"] == 3
    # A run compared without its paired rounds is left out rather than shown unpaired.
    assert engine.scale_rows([row], {}) == []


def test_the_command_line_refuses_fewer_than_one_pair(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as e:
        engine.main(["--pairs", "0"])
    assert e.value.code == 2
    assert "--repeat and --pairs must be at least 1, got 3 and 0" in capsys.readouterr().err


def test_the_machine_is_read_from_the_kernels_files_and_unknown_where_they_are_missing(
    tmp_path: Path,
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Example CPU 9000\n\n"
        "processor\t: 1\nmodel name\t: Example CPU 9000\n"
    )
    cpus = tmp_path / "cpu"
    for i, (level, kind, size) in enumerate(
        [("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "2048K")]
    ):
        d = cpus / "cpu0" / "cache" / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    thp = tmp_path / "thp"
    thp.write_text("always [madvise] never\n")
    assert engine.machine(cpuinfo, cpus, thp) == {
        "cpu": "Example CPU 9000",
        "logical_cpus": "2",
        "caches": "L1d 48K, L1i 32K, L2 2048K",
        "transparent_huge_pages": "madvise",
    }
    missing = tmp_path / "missing"
    assert set(engine.machine(missing, missing, missing).values()) == {"unknown"}


def test_the_curves_largest_point_is_the_dense_dumbbell_itself() -> None:
    import tomllib

    dense = tomllib.loads((engine.SCENARIOS / "dumbbell-10k-dense.toml").read_text())
    point = tomllib.loads(engine.curve_text(10_000))
    for doc in (dense, point):
        del doc["name"], doc["description"]
    assert point == dense


def test_each_curve_point_keeps_the_per_flow_shape() -> None:
    import tomllib

    from pathweave._core import parse_scenario

    for flows in engine.CURVE_FLOWS:
        text = engine.curve_text(flows)
        doc = tomllib.loads(text)
        links = {link["name"]: link for link in doc["link"]}
        # 1 Mbit/s of bottleneck per flow.
        rate = links["bottleneck"]["rate"]
        mbps = int(rate[:-4]) * (1000 if rate.endswith("Gbps") else 1)
        assert mbps == flows
        # The RED buffer scales with the rate from 8,300 packets at 10 Gbit/s, but never
        # below the 8-flow dumbbell's 50 packets and thresholds of 5 and 15.
        red = links["bottleneck"]["queue"]
        assert int(red["limit"][:-3]) == max(round(0.83 * flows), 50)
        assert (red["min_th"], red["max_th"]) == pytest.approx(
            (max(0.083 * flows, 5), max(0.25 * flows, 15))
        )
        # The last receiver is 8/3 ms away at every size, as in scenarios/dumbbell.toml.
        assert links["dst{i}"]["delay"] == f"{{n}}*8/{3 * flows} ms"
        # Long enough for the packets asked for, at 1040 bytes a packet.
        seconds = float(doc["duration"][:-1])
        assert seconds * flows * 1e6 / 8320 >= engine.CURVE_PACKETS
        s = parse_scenario(text, f"curve {flows}")
        assert len(s.flow_names) == flows
        assert len(s.link_names) == 2 * flows + 1


def test_a_changed_dense_file_stops_the_curve_with_what_it_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (engine.SCENARIOS / "dumbbell-10k-dense.toml").read_text()
    (tmp_path / "dumbbell-10k-dense.toml").write_text(text.replace('"10Gbps"', '"20Gbps"'))
    monkeypatch.setattr(engine, "SCENARIOS", tmp_path)
    with pytest.raises(ValueError, match=r"expected 'rate = \"10Gbps\"' exactly once, found it 0"):
        engine.curve_text(100)
    with pytest.raises(ValueError, match="flows must be at least 1, got 0"):
        engine.curve_text(0)
