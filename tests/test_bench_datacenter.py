"""bench/datacenter.py: the FatTree scenarios it runs, and its cost ratios per link packet
from rounds of the dumbbell followed by the FatTree.

The simulator here is a stand-in script that prints the `run` example's JSON with wall and
CPU times chosen by the scenario file's name and the call's number, so the expected ratios
follow from those numbers.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

import pathweave

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import datacenter  # noqa: E402


def fake_run(tmp: Path, times: dict[str, list[tuple[float, float]]], packets: int) -> Path:
    """A script answering `run FILE --json`: the k-th call for a file named `name` reports
    wall and CPU times `times[name][k]` and `packets` link packets; calls go to `calls.log`."""
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
    f.write(name + "\\n")
wall, cpu = {times!r}[name][k]
print(json.dumps({{"wall_s": wall, "cpu_s": cpu, "link_packets": {packets},
                  "host_link_packets": {packets} // 3, "events": {packets},
                  "peak_rss_kb": 2048}}))
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_ratios_pair_each_dumbbell_run_with_the_fat_tree_run_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1,000,000 link packets: w seconds are w µs per link packet. The machine slows down in
    # the second round; the paired ratios stay 3, 4 and 5 (wall) and 2, 2 and 4 (CPU).
    times = {
        "eight": [(0.1, 0.1), (0.2, 0.2), (0.1, 0.05)],
        "big": [(0.3, 0.2), (0.8, 0.4), (0.5, 0.2)],
    }
    monkeypatch.setattr(datacenter, "RUN", fake_run(tmp_path, times, 1_000_000))
    m = datacenter.paired(tmp_path / "eight.toml", tmp_path / "big.toml", rounds=3)
    assert m["wall_ratios"] == pytest.approx([3.0, 4.0, 5.0])
    assert m["cpu_ratios"] == pytest.approx([2.0, 2.0, 4.0])
    calls = (tmp_path / "calls.log").read_text().split()
    assert calls == ["eight", "big"] * 3
    s = datacenter.summary(m)
    assert s["wall_ratio"] == pytest.approx(4.0)
    assert s["wall_ratio_range"] == pytest.approx([3.0, 5.0])
    assert s["cpu_ratio"] == pytest.approx(2.0)
    assert s["cpu_ratio_range"] == pytest.approx([2.0, 4.0])
    assert s["cpu_us_per_packet"] == pytest.approx(0.2)
    assert s["ref_cpu_us_per_packet"] == pytest.approx(0.1)
    assert s["peak_rss_mb"] == 2.0
    assert s["host_link_packets"] == 333_333


def test_the_fat_trees_are_permutations_of_eight_subflow_lia_connections() -> None:
    sc = pathweave.parse(datacenter.fat_tree(8, 8, 0.25))
    assert sc.topology is not None
    assert (sc.topology["hosts"], sc.topology["links"]) == (128, 384)
    assert len(sc.flow_names) == 128
    text = datacenter.fat_tree(16, 8)
    assert 'duration = "1s"' in text
    assert 'link_rate = "1Gbps"' in text
    assert 'algorithm = "lia"' in text
    assert "subflows = 8" in text


def test_the_dumbbell_keeps_its_shape_at_another_duration() -> None:
    text = datacenter.dumbbell_text(50)
    assert 'duration = "50s"' in text
    assert text.replace('duration = "50s"', 'duration = "100s"') == (
        datacenter.DUMBBELL.read_text()
    )
