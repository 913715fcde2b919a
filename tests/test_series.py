"""The time series: what ``[series]`` records, and ``run(..., out=DIR)`` streaming them into
their files while the simulator runs — the same files as an unstreamed write, never a partial
directory, and memory that does not grow with simulated time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import pathweave
from conftest import write_scenario
from pathweave import api

# A two-path LIA connection, a Reno flow and a CBR flow over three links: every series has
# rows, and NaN appears in each kind of column.
MIXED = textwrap.dedent(
    """
    name = "mixed"
    duration = "20s"
    seed = 3
    sample_interval = "20ms"

    [[link]]
    name = "a"
    rate = "10Mbps"
    delay = "10ms"
    queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1 }

    [[link]]
    name = "b"
    rate = "8Mbps"
    delay = "20ms"

    [[link]]
    name = "c"
    rate = "100Mbps"
    delay = "1ms"

    [[flow]]
    name = "mp"
    algorithm = "lia"
    subflows = [{ path = ["c", "a"] }, { path = ["b"] }]

    [[flow]]
    name = "reno"
    path = ["a"]
    start = "1s"

    [[flow]]
    name = "udp"
    path = ["~c", "b"]
    traffic = { type = "cbr", rate = "1Mbps" }
    """
)


def with_series(series: str) -> str:
    """MIXED with a ``[series]`` table."""
    return MIXED + "\n" + textwrap.dedent(series)


@pytest.fixture(scope="module")
def full() -> pathweave.Result:
    return pathweave.run(pathweave.parse(MIXED, "mixed.toml"))


# --- what is recorded --------------------------------------------------------------------


def test_by_default_every_flow_link_and_column_is_recorded(full: pathweave.Result) -> None:
    assert set(full.flow_series["flow"]) == {0, 1, 2}
    assert set(full.subflow_series["flow"]) == {0, 1}
    # Every link direction a path crosses forward: a, b, c forward and c reverse.
    assert set(full.link_series["link"]) == {0, 2, 4, 5}
    assert len(full.subflow_series.columns) == 13
    assert len(full.link_series.columns) == 7


def test_a_selection_records_exactly_the_chosen_rows_and_columns(
    full: pathweave.Result,
) -> None:
    sc = pathweave.parse(
        with_series(
            """
            [series]
            flows = ["mp", "udp"]
            links = ["~c", "a"]
            columns = ["cwnd_bytes", "subflow_series.alpha", "queue_packets"]
            """
        )
    )
    r = pathweave.run(sc)
    expected = full.flow_series[full.flow_series["flow"].isin([0, 2])]
    assert list(r.flow_series.columns) == ["time_s", "flow", "cwnd_bytes"]
    pd.testing.assert_frame_equal(
        r.flow_series, expected[["time_s", "flow", "cwnd_bytes"]].reset_index(drop=True)
    )
    sub = full.subflow_series[full.subflow_series["flow"] == 0]
    cols = ["time_s", "flow", "subflow", "cwnd_bytes", "alpha"]
    assert list(r.subflow_series.columns) == cols
    pd.testing.assert_frame_equal(r.subflow_series, sub[cols].reset_index(drop=True))
    links = full.link_series[full.link_series["link"].isin([0, 5])]
    cols = ["time_s", "link", "queue_packets"]
    assert list(r.link_series.columns) == cols
    pd.testing.assert_frame_equal(r.link_series, links[cols].reset_index(drop=True))
    # Nothing else changes.
    for name in ("flows", "subflows", "links", "fairness"):
        pd.testing.assert_frame_equal(getattr(r, name), getattr(full, name))
    assert r.stats == full.stats


def test_series_false_records_nothing_and_changes_nothing_else(full: pathweave.Result) -> None:
    r = pathweave.run(pathweave.parse("series = false\n" + MIXED))
    assert len(r.flow_series) == len(r.subflow_series) == len(r.link_series) == 0
    assert list(r.flow_series.columns) == ["time_s", "flow"]
    pd.testing.assert_frame_equal(r.flows, full.flows)
    assert r.stats == full.stats


def test_unrecorded_columns_are_absent_from_the_written_files(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, with_series('[series]\ncolumns = ["link_series"]\n'))
    out = tmp_path / "out"
    pathweave.run(path, out=out)
    assert pq.read_schema(out / "link_series.parquet").names[:3] == [
        "time_s",
        "link",
        "queue_packets",
    ]
    assert pq.read_schema(out / "flow_series.parquet").names == ["time_s", "flow"]
    assert pq.read_metadata(out / "flow_series.parquet").num_rows == 0


@pytest.mark.parametrize(
    ("series", "field", "value", "wanted"),
    [
        ('[series]\nlinks = ["a", "z"]', "series.links[1]", '"z"', "no link is called 'z'"),
        ('[series]\nflows = ["nope"]', "series.flows[0]", '"nope"', "no flow is called 'nope'"),
        ('[series]\ncolumns = ["cwnd"]', "series.columns[0]", '"cwnd"', "unknown column"),
        ('[series]\ncolumns = ["flow"]', "series.columns[0]", '"flow"', "key column"),
        ("[series]\ncolumns = []", "series.columns", "[]", "series = false"),
        ('[series]\nlink = ["a"]', "series.link", '["a"]', "unknown field"),
    ],
)
def test_bad_series_values_name_the_field_and_value(
    series: str, field: str, value: str, wanted: str
) -> None:
    with pytest.raises(pathweave.ScenarioError) as info:
        pathweave.parse(with_series(series), "bad.toml")
    e = info.value
    assert (e.file, e.field, e.value) == ("bad.toml", field, value)
    assert wanted in str(e.message)


def test_a_bad_series_key_type_is_refused() -> None:
    with pytest.raises(pathweave.ScenarioError) as info:
        pathweave.parse('series = "off"\n' + MIXED, "bad.toml")
    assert info.value.field == "series"
    assert "true or false" in str(info.value.message)


# --- streaming ---------------------------------------------------------------------------


@pytest.fixture
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small chunks and row groups, so a short run streams many of each."""
    monkeypatch.setattr(api, "_ROW_GROUP_ROWS", 500)
    monkeypatch.setattr(api, "_CHUNK_ROWS", 300)


@pytest.mark.usefixtures("small_row_groups")
@pytest.mark.parametrize("format", ["parquet", "csv"])
def test_streamed_files_hold_what_an_unstreamed_write_holds(
    tmp_path: Path, format: api.Format
) -> None:
    path = write_scenario(tmp_path, MIXED, "mixed.toml")
    streamed = pathweave.run(path, out=tmp_path / "streamed", format=format)
    whole = pathweave.run(path)
    whole.write(tmp_path / "whole", format=format)
    for name in api.TABLES:
        a = tmp_path / "streamed" / f"{name}.{format}"
        b = tmp_path / "whole" / f"{name}.{format}"
        if format == "csv":
            assert a.read_bytes() == b.read_bytes(), name
        else:
            ta, tb = pq.read_table(a), pq.read_table(b)
            assert ta.equals(tb, check_metadata=True), name
            assert ta.schema.metadata == tb.schema.metadata, name
    if format == "parquet":
        # It was streamed: row groups of about _ROW_GROUP_ROWS rows, not one.
        assert pq.ParquetFile(tmp_path / "streamed" / "subflow_series.parquet").num_row_groups > 3
    a_json = json.loads((tmp_path / "streamed" / "run.json").read_text())
    b_json = json.loads((tmp_path / "whole" / "run.json").read_text())
    a_json.pop("wall_time_s"), b_json.pop("wall_time_s")
    assert a_json == b_json
    # The returned result reads its series back from the files, equal to the in-memory ones.
    for name in api.SERIES:
        pd.testing.assert_frame_equal(getattr(streamed, name), getattr(whole, name))
    pd.testing.assert_frame_equal(streamed.flows, whole.flows)


@pytest.mark.usefixtures("small_row_groups")
def test_a_streamed_result_can_be_written_again(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, MIXED, "mixed.toml")
    streamed = pathweave.run(path, out=tmp_path / "streamed")
    streamed.write(tmp_path / "copy")
    streamed.write(tmp_path / "as-csv", format="csv")
    pathweave.run(path).write(tmp_path / "whole", format="csv")
    for name in api.TABLES:
        assert pq.read_table(tmp_path / "copy" / f"{name}.parquet").equals(
            pq.read_table(tmp_path / "streamed" / f"{name}.parquet")
        )
        assert (tmp_path / "as-csv" / f"{name}.csv").read_bytes() == (
            tmp_path / "whole" / f"{name}.csv"
        ).read_bytes()


@pytest.mark.usefixtures("small_row_groups")
def test_an_interrupted_streamed_run_leaves_no_partial_result(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, MIXED, "mixed.toml")
    root = tmp_path / "results"
    root.mkdir()
    seen: list[float] = []

    def stop_halfway(p: pathweave.Progress) -> None:
        seen.append(p.now_s)
        # Series files are open and partly written at this point.
        partial = [d for d in root.iterdir() if d.name.startswith(".out.partial-")]
        assert partial
        assert (partial[0] / "flow_series.parquet").exists()
        if p.now_s > 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pathweave.run(path, out=root / "out", on_progress=stop_halfway)
    assert seen
    assert seen[-1] < 20
    assert list(root.iterdir()) == []
    # Earlier results are kept as they were.
    (root / "out").mkdir()
    (root / "out" / "run.json").write_text("{}")
    seen.clear()
    with pytest.raises(KeyboardInterrupt):
        pathweave.run(path, out=root / "out", on_progress=stop_halfway)
    assert sorted(p.name for p in root.iterdir()) == ["out"]
    assert sorted(p.name for p in (root / "out").iterdir()) == ["run.json"]


def test_a_failed_streamed_write_raises_its_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_scenario(tmp_path, MIXED, "mixed.toml")
    root = tmp_path / "results"
    root.mkdir()
    real = api._SeriesWriter.write
    calls: list[int] = []

    def full_disk(self: api._SeriesWriter, chunk: pathweave._core._Series) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        real(self, chunk)

    monkeypatch.setattr(api._SeriesWriter, "write", full_disk)
    with pytest.raises(OSError, match="disk full"):
        pathweave.run(path, out=root / "out")
    assert list(root.iterdir()) == []


def test_a_streamed_run_refuses_a_directory_of_other_data(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, MIXED, "mixed.toml")
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("...")
    with pytest.raises(FileExistsError):
        pathweave.run(path, out=out)
    assert sorted(p.name for p in out.iterdir()) == ["chapter1.tex"]


# --- memory ------------------------------------------------------------------------------

# Two Reno flows over a RED bottleneck, sampled every 10 ms: 7 series rows per sample, so
# 1000 simulated seconds give 700,000 rows, about 42 MB in the simulator's columns alone
# before any copy into Python, pandas or Parquet.
LONG = textwrap.dedent(
    """
    name = "long"
    duration = "{duration}s"
    sample_interval = "10ms"

    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = {{ type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1, w_q = 0.002 }}

    [[link]]
    name = "access{{i}}"
    count = 2
    rate = "100Mbps"
    delay = "{{n}} ms"

    [[flow]]
    name = "reno{{i}}"
    count = 2
    path = ["access{{i}}", "bottleneck"]
    """
)

# Runs the command line in a fresh interpreter and prints its own peak RSS (VmHWM, KiB).
PROBE = """
import sys
from pathweave.cli import main
assert main(["run", sys.argv[1], "--out", sys.argv[2], "--quiet"]) == 0
print(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])
"""


def peak_rss_kib(scenario: Path, out: Path) -> int:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(scenario), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's VmHWM")
def test_peak_memory_of_a_run_through_the_command_line_does_not_grow_with_duration(
    tmp_path: Path,
) -> None:
    peaks = {}
    for duration in (100, 1000):
        scenario = write_scenario(tmp_path, LONG.format(duration=duration), f"long{duration}.toml")
        out = tmp_path / f"out{duration}"
        peaks[duration] = peak_rss_kib(scenario, out)
        rows = sum(pq.read_metadata(out / f"{n}.parquet").num_rows for n in api.SERIES)
        assert rows == duration * 100 * 7
    # Held in memory, the longer run's series would add over 40 MB (and copies of them);
    # streamed, the peak is that of the short run within allocator noise.
    growth_mib = (peaks[1000] - peaks[100]) / 1024
    assert growth_mib < 16, peaks
