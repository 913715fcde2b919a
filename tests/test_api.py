"""The Python API: running scenarios, the shape of results, determinism, atomic output and
the GIL being released while the simulator runs."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pathweave
from conftest import SMALL, write_scenario
from pathweave import _core

FLOW_COLUMNS = {
    "name": "str",
    "group": "str",
    "algorithm": "str",
    "start_s": "float64",
    "end_s": "float64",
    "delivered_bytes": "uint64",
    "goodput_bps": "float64",
    "throughput_bps": "float64",
    "packets_sent": "uint64",
    "retransmits": "uint64",
    "timeouts": "uint64",
    "loss_events": "uint64",
    "loss_event_rate": "float64",
    "drops": "uint64",
    "mean_cwnd_bytes": "float64",
    "mean_srtt_s": "float64",
    "completion_s": "float64",
}
LINK_COLUMNS = {
    "name": "str",
    "direction": "str",
    "rate_bps": "float64",
    "arrivals": "uint64",
    "delivered_packets": "uint64",
    "delivered_bytes": "uint64",
    "utilization": "float64",
    "drops_overflow": "uint64",
    "drops_early": "uint64",
    "drops_forced": "uint64",
    "drops_wire": "uint64",
}
FLOW_SERIES_COLUMNS = {
    "time_s": "float64",
    "flow": "uint32",
    "cwnd_bytes": "float64",
    "ssthresh_bytes": "float64",
    "srtt_s": "float64",
    "rate_bps": "float64",
}
SUBFLOW_COLUMNS = {
    "flow": "uint32",
    "subflow": "uint32",
    "path": "str",
    "acked_bytes": "uint64",
    "throughput_bps": "float64",
    "packets_sent": "uint64",
    "retransmits": "uint64",
    "drops": "uint64",
    "timeouts": "uint64",
    "loss_events": "uint64",
    "loss_event_rate": "float64",
    "mean_cwnd_bytes": "float64",
    "mean_srtt_s": "float64",
}
SUBFLOW_SERIES_COLUMNS = {
    "time_s": "float64",
    "flow": "uint32",
    "subflow": "uint32",
    "cwnd_bytes": "float64",
    "ssthresh_bytes": "float64",
    "srtt_s": "float64",
    "rate_bps": "float64",
    "alpha": "float64",
    "epsilon": "float64",
    "weight": "float64",
    "score": "float64",
    "backlog_packets": "float64",
    "bandwidth_estimate_bps": "float64",
}
LINK_SERIES_COLUMNS = {
    "time_s": "float64",
    "link": "uint32",
    "queue_packets": "uint32",
    "queue_bytes": "uint64",
    "red_average": "float64",
    "drops": "uint64",
    "wire_losses": "uint64",
}
FAIRNESS_COLUMNS = {
    "group": "str",
    "flows": "uint64",
    "total_goodput_bps": "float64",
    "jain": "float64",
}
TABLE_FILES = [f"{name}.{{fmt}}" for name in pathweave.api.TABLES]


def _check_columns(frame: pd.DataFrame, expected: dict[str, str]) -> None:
    assert list(frame.columns) == list(expected)
    for column, kind in expected.items():
        if kind == "str":
            assert pd.api.types.is_string_dtype(frame[column]), column
        else:
            assert frame[column].dtype == np.dtype(kind), column


@pytest.fixture
def result(small_scenario: Path) -> pathweave.Result:
    return pathweave.run(small_scenario)


def test_load_exposes_the_scenario(small_scenario: Path) -> None:
    scenario = pathweave.load(small_scenario)
    assert scenario.name == "small"
    assert scenario.description == "two Reno flows over a RED bottleneck"
    assert scenario.duration_s == 5.0
    assert scenario.seed == 7
    assert scenario.sample_interval_s == pytest.approx(0.05)
    assert scenario.flow_names == ["reno0", "reno1"]
    assert scenario.link_names == ["bottleneck", "access0", "access1"]
    assert scenario.flow_mss_bytes == [1000, 1000]
    assert scenario.source == str(small_scenario)


def test_parse_names_an_unnamed_scenario_after_its_label() -> None:
    text = SMALL.replace('name = "small"\n', "", 1)
    assert pathweave.parse(text, "dir/my_case.toml").name == "my_case"
    assert pathweave.parse(text).name == "unnamed"


def test_run_returns_typed_tables(result: pathweave.Result) -> None:
    _check_columns(result.flows, FLOW_COLUMNS)
    _check_columns(result.links, LINK_COLUMNS)
    _check_columns(result.flow_series, FLOW_SERIES_COLUMNS)
    _check_columns(result.subflows, SUBFLOW_COLUMNS)
    _check_columns(result.subflow_series, SUBFLOW_SERIES_COLUMNS)
    _check_columns(result.link_series, LINK_SERIES_COLUMNS)
    _check_columns(result.fairness, FAIRNESS_COLUMNS)
    assert result.scenario_name == "small"
    assert result.seed == 7
    assert list(result.flows["name"]) == ["reno0", "reno1"]
    assert list(result.links["direction"]) == ["forward", "reverse"] * 3
    assert (result.flows["goodput_bps"] > 0).all()
    # 100 samples of 50 ms, one row per flow per sample.
    assert len(result.flow_series) == 2 * 100
    assert set(result.flow_series["flow"]) == {0, 1}
    # Single-path flows have one subflow each, on the flow's path.
    assert list(result.subflows["flow"]) == [0, 1]
    assert list(result.subflows["path"]) == ["access0>bottleneck", "access1>bottleneck"]
    # A subflow is sampled once it has joined, i.e. from its flow's start on.
    starts = result.flows["start_s"].to_numpy()
    sub = result.subflow_series
    assert (sub["time_s"].to_numpy() >= starts[sub["flow"].to_numpy()]).all()
    assert len(sub) == sum(
        int(((result.flow_series["flow"] == f) & (result.flow_series["time_s"] >= s)).sum())
        for f, s in enumerate(starts)
    )
    # The sampled link directions are the forward directions of the data paths.
    sampled = sorted(set(result.link_series["link"]))
    assert [result.links["name"].iloc[k] for k in sampled] == ["bottleneck", "access0", "access1"]
    assert list(result.fairness["group"]) == ["reno"]
    assert 0.5 <= result.fairness["jain"].iloc[0] <= 1.0
    assert result.stats["simulated_s"] == 5.0
    assert result.stats["events"] > 0


def test_result_columns_are_writable_arrays(result: pathweave.Result) -> None:
    # Columns share the bytearray that crossed from Rust; they must still behave normally.
    result.flows.loc[0, "goodput_bps"] = 1.0
    assert result.flows["goodput_bps"].iloc[0] == 1.0


def test_run_accepts_a_scenario_object_and_a_path_string(small_scenario: Path) -> None:
    by_object = pathweave.run(pathweave.load(small_scenario), seed=3)
    by_string = pathweave.run(str(small_scenario), seed=3)
    pd.testing.assert_frame_equal(by_object.flows, by_string.flows)


def test_progress_callback_reaches_the_end(small_scenario: Path) -> None:
    seen: list[pathweave.Progress] = []
    pathweave.run(small_scenario, on_progress=seen.append)
    assert seen
    assert [p.now_s for p in seen] == sorted(p.now_s for p in seen)
    assert seen[-1].now_s == seen[-1].end_s == 5.0
    assert seen[-1].fraction == 1.0


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_same_seed_writes_byte_identical_files(
    small_scenario: Path, tmp_path: Path, fmt: str
) -> None:
    first = pathweave.run(small_scenario, seed=11).write(tmp_path / "first", format=fmt)
    second = pathweave.run(small_scenario, seed=11).write(tmp_path / "second", format=fmt)
    files = [name.format(fmt=fmt) for name in TABLE_FILES]
    assert sorted(p.name for p in first.iterdir()) == sorted([*files, "run.json"])
    for name in files:
        data = (first / name).read_bytes()
        assert data == (second / name).read_bytes(), name
        assert b"wall_time" not in data, name
    # run.json differs in the wall time alone.
    one = json.loads((first / "run.json").read_text())
    two = json.loads((second / "run.json").read_text())
    assert one.pop("wall_time_s") > 0
    assert two.pop("wall_time_s") > 0
    assert one == two
    assert one["seed"] == 11
    assert one["scenario"] == "small"
    assert one["description"] == "two Reno flows over a RED bottleneck"
    assert one["source"] == str(small_scenario)
    assert one["pathweave_version"] == pathweave.__version__
    assert one["stats"]["simulated_s"] == 5.0


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_different_seeds_write_different_files(
    small_scenario: Path, tmp_path: Path, fmt: str
) -> None:
    a = pathweave.run(small_scenario, seed=1).write(tmp_path / "a", format=fmt)
    b = pathweave.run(small_scenario, seed=2).write(tmp_path / "b", format=fmt)
    name = f"flows.{fmt}"
    assert (a / name).read_bytes() != (b / name).read_bytes()


def test_written_tables_read_back_equal(result: pathweave.Result, tmp_path: Path) -> None:
    out = result.write(tmp_path / "out")
    for name, frame in result.tables().items():
        back = pd.read_parquet(out / f"{name}.parquet", engine="pyarrow")
        pd.testing.assert_frame_equal(back, frame, check_dtype=False)
        assert list(back.dtypes.astype(str)) == list(frame.dtypes.astype(str)), name


def test_write_replaces_an_existing_directory(result: pathweave.Result, tmp_path: Path) -> None:
    root = tmp_path / "results"
    out = root / "out"
    out.mkdir(parents=True)
    (out / "run.json").write_text("{}")
    (out / "flows.parquet").write_text("from an earlier run in the other format")
    result.write(out, format="csv")
    assert not (out / "flows.parquet").exists()
    assert (out / "flows.csv").exists()
    assert sorted(p.name for p in root.iterdir()) == ["out"]  # nothing left beside it
    # Beside anything pathweave did not write, earlier results are refused and kept.
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"notes\.txt, which pathweave did not write"):
        result.write(out, format="csv")
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "flows.csv").exists()


def test_output_that_is_a_symbolic_link_is_refused_before_running(
    small_scenario: Path, tmp_path: Path
) -> None:
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "run.json").write_text("{}")
    link = tmp_path / "latest"
    link.symlink_to(earlier)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    before = sorted(p.name for p in tmp_path.iterdir())
    for out, points_to in ((link, earlier), (dangling, tmp_path / "nowhere")):
        with pytest.raises(FileExistsError, match="is a symbolic link") as info:
            pathweave.run(small_scenario, out=out)
        # Says why, and what to give instead.
        assert "would replace the link itself" in str(info.value)
        assert f"give the path it points to ({points_to})" in str(info.value)
    # The links, what they point to and their directory are as they were.
    assert link.is_symlink()
    assert link.resolve() == earlier
    assert dangling.is_symlink()
    assert not dangling.exists()
    assert sorted(p.name for p in earlier.iterdir()) == ["run.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("out", [".", "", "sub/..", "./"])
def test_output_that_is_the_current_directory_is_refused(
    small_scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    # Empty (or holding only the way back to it), it would pass every other check; replacing
    # it would pull the directory from under the command.
    work = tmp_path / "work"
    work.mkdir()
    inside = [p for p in Path(out).parts if p != ".."]
    for name in inside:
        (work / name).mkdir()
    monkeypatch.chdir(work)
    with pytest.raises(FileExistsError, match="is the current directory"):
        pathweave.api.check_output_directory(Path(out))
    with pytest.raises(FileExistsError, match="is the current directory"):
        pathweave.run(small_scenario, out=out)
    assert sorted(p.name for p in work.iterdir()) == inside
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml", "work"]


def test_write_refuses_a_directory_of_other_data(result: pathweave.Result, tmp_path: Path) -> None:
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("precious")
    with pytest.raises(FileExistsError, match=r"no run\.json"):
        result.write(out)
    assert sorted(p.name for p in out.iterdir()) == ["chapter1.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml", "thesis"]
    # An empty directory is fine.
    (tmp_path / "empty").mkdir()
    assert (result.write(tmp_path / "empty") / "run.json").exists()


def test_failed_write_leaves_no_trace_and_keeps_old_results(
    result: pathweave.Result, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "results"
    out = root / "out"
    out.mkdir(parents=True)
    (out / "run.json").write_text("{}")
    written: list[str] = []

    def fail_on_second_table(self: pd.DataFrame, path: Path, **kwargs: object) -> None:
        written.append(str(path))
        if len(written) == 2:
            raise OSError("disk full")
        Path(path).write_text("partial")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", fail_on_second_table)
    with pytest.raises(OSError, match="disk full"):
        result.write(out)
    assert sorted(p.name for p in out.iterdir()) == ["run.json"]
    assert (out / "run.json").read_text() == "{}"
    assert sorted(p.name for p in root.iterdir()) == ["out"]
    # A fresh directory that fails is never created at all.
    written.clear()
    with pytest.raises(OSError, match="disk full"):
        result.write(root / "fresh")
    assert sorted(p.name for p in root.iterdir()) == ["out"]


def test_write_rejects_an_unknown_format(result: pathweave.Result, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format"):
        result.write(tmp_path / "out", format="xlsx")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_plot_run_writes_png_and_pdf(result: pathweave.Result, tmp_path: Path) -> None:
    from pathweave.plot import plot_run

    png = plot_run(result, tmp_path / "run.png", pdf=True, packets=True)
    assert png.read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "run.pdf").read_bytes().startswith(b"%PDF")


def test_simulation_advances_in_steps(small_scenario: Path) -> None:
    sim = pathweave.Simulation(pathweave.load(small_scenario), seed=5)
    assert (sim.now_s, sim.end_s, sim.finished, sim.events, sim.seed) == (0.0, 5.0, False, 0, 5)
    sim.advance(1.5)
    assert sim.now_s == 1.5
    events = sim.events
    assert events > 0
    sim.advance(1.0)  # going back in time does nothing
    assert (sim.now_s, sim.events) == (1.5, events)
    partial = sim.results()
    assert partial["stats"]["simulated_s"] == 1.5
    sim.advance(math.inf)
    assert sim.finished
    assert sim.now_s == 5.0
    sim.check_conservation()
    # Stepping gives the same run as one call.
    stepped = sim.results()
    whole = pathweave.run(small_scenario, seed=5)
    assert stepped["stats"] == whole.stats


@pytest.mark.parametrize("until", [-1.0, math.nan], ids=["negative", "nan"])
def test_advance_rejects_bad_times(small_scenario: Path, until: float) -> None:
    sim = pathweave.Simulation(pathweave.load(small_scenario))
    with pytest.raises(ValueError, match="until_s"):
        sim.advance(until)


@pytest.mark.parametrize("seed", [-1, 2**64, "3"], ids=["negative", "too-big", "string"])
def test_simulation_rejects_bad_seeds(small_scenario: Path, seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        pathweave.Simulation(pathweave.load(small_scenario), seed=seed)  # type: ignore[arg-type]


def test_scenario_error_carries_its_parts(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, SMALL.replace('"10Mbps"', '"-5Mbps"'), "bad.toml")
    with pytest.raises(pathweave.ScenarioError) as info:
        pathweave.load(path)
    e = info.value
    assert isinstance(e, pathweave.PathweaveError)
    assert (e.file, e.field, e.value) == (str(path), "link[0].rate", '"-5Mbps"')
    assert e.message == "a rate must be positive (at least 1bps)"
    assert str(e) == f'{path}: link[0].rate = "-5Mbps": a rate must be positive (at least 1bps)'


RED_QUEUE = (
    'queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1, w_q = 0.002 }'
)


@pytest.mark.parametrize(
    ("queue", "field", "value"),
    [
        # Only min_th given, above the default max_th (15): min_th is at fault.
        ('{ type = "red", limit = "50pkt", min_th = 20 }', "min_th", "20"),
        # Only max_th given, below the default min_th (5): max_th is at fault.
        ('{ type = "red", max_th = 3 }', "max_th", "3"),
        ('{ type = "red", min_th = 20, max_th = 10 }', "max_th", "10"),
        ('{ type = "red", min_th = -1, max_th = 10 }', "min_th", "-1"),
        # "auto" max_th is three times min_th, so a zero min_th leaves no room.
        ('{ type = "red", min_th = 0, max_th = "auto" }', "min_th", "0"),
    ],
    ids=["min-only", "max-only", "both", "negative-min", "auto-max"],
)
def test_red_threshold_errors_name_the_field_at_fault(queue: str, field: str, value: str) -> None:
    assert RED_QUEUE in SMALL
    text = SMALL.replace(RED_QUEUE, f"queue = {queue}")
    with pytest.raises(pathweave.ScenarioError) as info:
        pathweave.parse(text, "x.toml")
    e = info.value
    assert (e.field, e.value) == (f"link[0].queue.{field}", value)
    assert str(e).startswith(f"x.toml: link[0].queue.{field} = {value}: "), str(e)
    assert e.message is not None
    assert "min_th < max_th" in e.message
    assert f"{field} must be" in e.message


@pytest.mark.parametrize(
    "recorded",
    ["series = false", "[series]\nflows = []\nlinks = []"],
    ids=["series-false", "empty-series"],
)
def test_the_samples_are_bounded_even_when_nothing_is_recorded(recorded: str) -> None:
    # The sampler fires every sample_interval whatever is recorded: at most 10**7 samples,
    # so the shortest interval for SMALL's 5 s is 500 ns.
    duration_ns = 5 * 10**9
    assert 'duration = "5s"' in SMALL
    shortest = duration_ns // 10**7

    def scenario(interval_ns: int) -> str:
        text = SMALL.replace('sample_interval = "50ms"', f'sample_interval = "{interval_ns}ns"')
        if recorded.startswith("["):
            return text + "\n" + recorded + "\n"
        return text.replace('name = "small"', f'name = "small"\n{recorded}')

    start = time.monotonic()
    with pytest.raises(pathweave.ScenarioError) as info:
        pathweave.parse(scenario(shortest - 1), "x.toml")
    assert time.monotonic() - start < 5
    e = info.value
    assert (e.field, e.value) == ("sample_interval", f'"{shortest - 1}ns"')
    assert e.message is not None
    assert f"at least duration / {10**7}" in e.message
    assert f"{shortest}ns" in e.message
    with pytest.raises(pathweave.ScenarioError, match="sample_interval"):
        pathweave.parse(scenario(1), "x.toml")
    assert pathweave.parse(scenario(shortest), "x.toml").sample_interval_s == pytest.approx(
        shortest * 1e-9
    )


def test_scenario_error_parts_absent_are_none(tmp_path: Path) -> None:
    with pytest.raises(pathweave.ScenarioError) as missing:
        pathweave.parse(SMALL.replace('duration = "5s"\n', ""), "x.toml")
    assert (missing.value.field, missing.value.value) == ("duration", None)
    with pytest.raises(pathweave.ScenarioError) as syntax:
        pathweave.parse("duration = ", "x.toml")
    assert (syntax.value.file, syntax.value.field, syntax.value.value) == ("x.toml", None, None)
    with pytest.raises(pathweave.ScenarioError) as unreadable:
        pathweave.load(tmp_path / "absent.toml")
    assert unreadable.value.field is None
    assert "cannot read" in str(unreadable.value)


def test_exception_classes_live_in_the_core_module() -> None:
    assert issubclass(pathweave.ScenarioError, pathweave.PathweaveError)
    assert issubclass(pathweave.PathweaveError, Exception)
    assert pathweave.ScenarioError is _core.ScenarioError
    assert pathweave.ScenarioError.__module__ == "pathweave._core"


def test_advance_releases_the_gil(tmp_path: Path) -> None:
    # About a million packets: long enough (a few tenths of a second) to watch.
    text = SMALL.replace('"10Mbps"', '"100Mbps"').replace('"5s"', '"100s"')
    text = text.replace('sample_interval = "50ms"', 'sample_interval = "1s"')
    sim = pathweave.Simulation(pathweave.load(write_scenario(tmp_path, text)))
    span: list[float] = []

    def work() -> None:
        span.append(time.perf_counter())
        sim.advance(math.inf)
        span.append(time.perf_counter())

    worker = threading.Thread(target=work)
    ticks: list[float] = []
    worker.start()
    while worker.is_alive():
        for _ in range(100):
            pass
        ticks.append(time.perf_counter())
    worker.join()
    assert sim.finished
    begin, end = span
    assert end - begin > 0.05, "the run was too short to tell"
    # Had advance() held the GIL, this thread could not have run while it was busy.
    during = [t for t in ticks if begin + 0.01 < t < end - 0.01]
    assert len(during) > 100


# Scenario values as a careless or adversarial user might write them: numbers of any size or
# sign (NaN and infinity included), with or without a unit, or arbitrary short strings.
_NUMBER = st.one_of(st.integers(-(10**20), 10**20), st.floats()).map(repr)
_UNIT = st.sampled_from(["", "bps", "Mbps", "s", "ms", " ms", "ns", "pkt", "B", "MB", "parsecs"])
_TEXT = st.text(
    st.characters(exclude_characters='"\\', exclude_categories=["Cs", "Cc"]), max_size=8
)
_VALUE = st.one_of(
    _NUMBER,
    st.builds(lambda n, u: f'"{n}{u}"', _NUMBER, _UNIT),
    _TEXT.map(lambda t: f'"{t}"'),
)
_TEMPLATE = """
duration = {duration}
[[link]]
name = "l"
rate = {rate}
delay = {delay}
queue = {{ type = "droptail", limit = {limit} }}
[[flow]]
name = "f"
path = ["l"]
start = {start}
mss = {mss}
"""


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(duration=_VALUE, rate=_VALUE, delay=_VALUE, limit=_VALUE, start=_VALUE, mss=_VALUE)
def test_any_values_give_a_scenario_or_a_scenario_error(**values: str) -> None:
    text = _TEMPLATE.format(**values)
    try:
        scenario = pathweave.parse(text, "fuzz.toml")
    except pathweave.ScenarioError as e:
        message = str(e)
    else:
        message = ""
    if message:
        assert message.startswith("fuzz.toml: ")
        return
    # A scenario that validates must also build and run.
    sim = pathweave.Simulation(scenario)
    sim.advance(min(scenario.duration_s, 0.01))
    sim.check_conservation()
    assert sim.results()["stats"]["simulated_s"] == sim.now_s


HEADLINE = Path(__file__).resolve().parent.parent / "scenarios" / "headline.toml"


def _headline_with(algorithm: str, extra: str = "") -> str:
    """The headline scenario, shortened, with the multipath flow's algorithm replaced."""
    text = HEADLINE.read_text().replace('duration = "100s"', 'duration = "5s"')
    return text.replace('algorithm = "lia"', f'algorithm = "{algorithm}"\n{extra}', 1)


@pytest.mark.parametrize("arith", ["", 'arithmetic = "linux"', 'counting = "per-ack-event"'])
def test_kelly_voice_is_selectable_by_name(arith: str) -> None:
    res = pathweave.run(pathweave.parse(_headline_with("kelly-voice", arith)), seed=1)
    assert list(res.flows["algorithm"]) == ["kelly-voice", "reno"]
    assert res.flows["goodput_bps"].iloc[0] > 0


def test_a_misspelt_kelly_voice_names_the_field_and_the_choices() -> None:
    with pytest.raises(pathweave.ScenarioError) as info:
        pathweave.parse(_headline_with("kelly_voice"))
    assert "flow[0].algorithm" in str(info.value)
    assert "kelly-voice" in str(info.value)
