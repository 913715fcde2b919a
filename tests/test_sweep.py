"""Sweeps: expanding [sweep] tables into validated points, running them serially, on a process
pool and on Dask with identical results, caching by content, and resuming after a kill."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import pathweave
from conftest import (
    SMALL,
    SWEEP,
    run_cli,
    write_scenario,
)
from pathweave import sweep as sweep_mod
from pathweave.sweep import (
    MAX_POINTS,
    MAX_RUNS,
    MAX_SEEDS,
    Sweep,
    SweepError,
    core_fingerprint,
    executors,
    load_plan,
    plan,
    run_sweep,
    set_path,
    show_value,
    task_key,
)

# --- expanding ------------------------------------------------------------------------------


def test_grid_is_the_cartesian_product_in_order(sweep_scenario: Path) -> None:
    p = load_plan(sweep_scenario)
    assert p.seeds == (1, 2, 3)
    assert p.param_names == ["link[0].rate", "flow[0].count"]
    assert [pt.params for pt in p.points] == [
        {"link[0].rate": "5Mbps", "flow[0].count": 1},
        {"link[0].rate": "5Mbps", "flow[0].count": 2},
        {"link[0].rate": "10Mbps", "flow[0].count": 1},
        {"link[0].rate": "10Mbps", "flow[0].count": 2},
    ]
    assert [pt.index for pt in p.points] == [0, 1, 2, 3]
    assert [len(pt.scenario.flow_names) for pt in p.points] == [1, 2, 1, 2]
    # Every point is a complete scenario without the [sweep] table, named as the file was.
    for pt in p.points:
        assert "[sweep" not in pt.text
        assert pathweave.parse(pt.text, "x.toml").name == "small"
    tasks = p.tasks
    assert len(tasks) == 12
    assert [(t.point.index, t.seed) for t in tasks[:4]] == [(0, 1), (0, 2), (0, 3), (1, 1)]
    assert len({t.key for t in tasks}) == 12


def test_zipped_keys_vary_together_as_the_last_dimension(tmp_path: Path) -> None:
    text = SWEEP + textwrap.dedent(
        """
        [sweep.zip]
        "link[0].delay" = ["5ms", "20ms"]
        "link[0].queue.min_th" = [2, 8]
        """
    )
    p = load_plan(write_scenario(tmp_path, text, "zip.toml"))
    assert p.param_names == [
        "link[0].rate",
        "flow[0].count",
        "link[0].delay",
        "link[0].queue.min_th",
    ]
    assert len(p.points) == 2 * 2 * 2
    rows = [(pt.params["link[0].delay"], pt.params["link[0].queue.min_th"]) for pt in p.points]
    assert rows == [("5ms", 2), ("20ms", 8)] * 4  # never ("5ms", 8): the lists are tied
    assert [pt.params["flow[0].count"] for pt in p.points[:4]] == [1, 1, 2, 2]
    first = pathweave._core.toml_loads(p.points[1].text)
    assert first["link"][0]["delay"] == "20ms"
    assert first["link"][0]["queue"]["min_th"] == 8
    # The table round-trips.
    assert Sweep.from_table(p.sweep.to_table()) == p.sweep


def test_values_show_as_toml() -> None:
    assert show_value({"type": "red", "min_th": "auto", "gentle": True, "a b": [1, 2.5]}) == (
        '{ type = "red", min_th = "auto", gentle = true, "a b" = [1, 2.5] }'
    )
    # What it shows parses back to the same value.
    doc = pathweave._core.toml_loads("x = " + show_value({"q": {"limit": "50pkt"}, "n": [1]}))
    assert doc == {"x": {"q": {"limit": "50pkt"}, "n": [1]}}


def test_bad_zip_tables(tmp_path: Path) -> None:
    for body, message in [
        ('"link[0].delay" = ["5ms", "20ms"]\n"flow[0].count" = [1]\n', "has 1 values but"),
        ('"flow[0].count" = [1, 2]\n', "also in sweep.grid"),
        ('"link[0].delay" = []\n', "non-empty list"),
        ('"link[0].delay" = ["5ms", "-1ms"]\n', 'sweep.zip."link[0].delay" = "-1ms"'),
    ]:
        text = SWEEP + "\n[sweep.zip]\n" + body
        with pytest.raises(SweepError, match=re.escape(message)):
            load_plan(write_scenario(tmp_path, text, "t.toml"))


def test_unnamed_scenario_takes_the_file_name(tmp_path: Path) -> None:
    text = SWEEP.replace('name = "small"\n', "", 1)
    a = load_plan(write_scenario(tmp_path, text, "alpha.toml"))
    assert a.points[0].scenario.name == "alpha"
    assert 'name = "alpha"' in a.points[0].text


def test_comments_and_layout_do_not_change_keys(tmp_path: Path) -> None:
    plain = load_plan(write_scenario(tmp_path, SWEEP, "a.toml"))
    noisy = SWEEP.replace('duration = "5s"', 'duration   =   "5s"   # five seconds')
    commented = load_plan(write_scenario(tmp_path, "# a comment\n" + noisy, "a2.toml"))
    assert [t.key for t in plain.tasks] == [t.key for t in commented.tasks]


def test_keys_depend_on_text_seed_and_version() -> None:
    base = task_key("text", 1, "0.1.0")
    assert base == task_key("text", 1, "0.1.0")
    assert len({base, task_key("text2", 1, "0.1.0"), task_key("text", 2, "0.1.0")}) == 3
    assert task_key("text", 1, "0.2.0") != base


@pytest.mark.parametrize(
    ("seeds", "expected"),
    [(None, (1,)), (1, (1,)), (4, (1, 2, 3, 4)), ([9, 3], (9, 3))],
)
def test_seed_forms(seeds: Any, expected: tuple[int, ...]) -> None:
    assert Sweep(seeds=seeds).seed_list() == expected


@pytest.mark.parametrize("seeds", [0, -2, [], [1, 1], [1.5], "3", True, [-1]])
def test_bad_seeds_are_refused(seeds: Any) -> None:
    with pytest.raises(SweepError, match=r"sweep\.seeds"):
        Sweep(seeds=seeds).seed_list("f.toml")


def test_set_path_edits_tables_and_arrays() -> None:
    doc: dict[str, Any] = {"link": [{"name": "a", "queue": {"type": "red"}}], "flow": [{}]}
    set_path(doc, "link[0].queue.max_p", 0.2)
    set_path(doc, "tcp.recovery", "sack")  # a missing table is created
    set_path(doc, "duration", "9s")
    set_path(doc, "flow[0].path", ["a"])
    set_path(doc, "flow[0].path[0]", "b")
    assert doc == {
        "link": [{"name": "a", "queue": {"type": "red", "max_p": 0.2}}],
        "flow": [{"path": ["b"]}],
        "tcp": {"recovery": "sack"},
        "duration": "9s",
    }


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("link[5].rate", r"link\[5\] does not exist: link has 1 entry"),
        ("route[0].x", "no 'route' array"),
        ("duration.x", "duration is not a table"),
        ("link[0].name[0]", "link\\[0\\].name is not an array"),
        ("link..rate", "not a path into the scenario"),
        ("", "not a path into the scenario"),
    ],
)
def test_set_path_errors_name_the_key(key: str, message: str) -> None:
    doc: dict[str, Any] = {"duration": "1s", "link": [{"name": "l"}]}
    with pytest.raises(SweepError, match=message) as info:
        set_path(doc, key, 1, f"f.toml: sweep.grid.{key}")
    assert str(info.value).startswith(f"f.toml: sweep.grid.{key}")


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        (
            '"link[0].queue.max_p" = [0.1, 2.0]',
            [
                'sweep.grid."link[0].queue.max_p" = 2.0',
                "point 1",
                "between 0 and 1",
            ],
        ),
        (
            '"link[0].colour" = ["red"]',
            ['sweep.grid."link[0].colour" = "red"', "unknown field"],
        ),
        ('"flow[0].count" = [2, 0]', ['sweep.grid."flow[0].count" = 0', "point 1"]),
        ('"link[9].rate" = ["1Mbps"]', ['sweep.grid."link[9].rate"', "does not exist"]),
        ('"duration" = "10s"', ["sweep.grid.duration", "non-empty list"]),
        ('"duration" = []', ["sweep.grid.duration", "non-empty list"]),
        ('"duration" = [-1]', ["sweep.grid.duration = -1", "duration"]),
    ],
)
def test_invalid_points_are_reported_against_their_sweep_key(
    tmp_path: Path, grid: str, expected: list[str]
) -> None:
    text = SMALL + f"\n[sweep.grid]\n{grid}\n"
    path = write_scenario(tmp_path, text, "bad.toml")
    with pytest.raises(SweepError) as info:
        load_plan(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    for piece in expected:
        assert piece in message, f"{piece!r} not in {message!r}"
    assert isinstance(info.value, pathweave.PathweaveError)


def test_bad_sweep_tables(tmp_path: Path) -> None:
    for text, message in [
        (SMALL + "[sweep]\nrepeat = 2\n", "sweep.repeat: unknown field"),
        ("sweep = 3\n" + SMALL, "sweep = 3: must be a table"),
        (SMALL + "[sweep]\ngrid = 3\n", "sweep.grid must be a table"),
        (SMALL + "[sweep]\nseeds = 0\n", "sweep.seeds = 0"),
        # Bounded before anything is built: a billion seeds would fill the memory first.
        (SMALL + "[sweep]\nseeds = 1000000000\n", "count from 1 to 10,000"),
        (SMALL + '[sweep.grid]\n"sweep.seeds" = [1, 2]\n', "cannot vary or set its own table"),
        (SMALL + '[sweep.set]\n"sweep.grid" = 1\n', "cannot vary or set its own table"),
    ]:
        with pytest.raises(SweepError, match=message):
            load_plan(write_scenario(tmp_path, text, "t.toml"))


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ('[sweep.grid]\n"seed" = [1, 2]\n', "sweep.grid.seed = [1, 2]"),
        ('[sweep.zip]\nseed = [1, 2]\nduration = ["1s", "2s"]\n', "sweep.zip.seed = [1, 2]"),
        ("[sweep.set]\nseed = 5\n", "sweep.set.seed = 5"),
    ],
    ids=["grid", "zip", "set"],
)
def test_the_seed_is_not_a_sweep_parameter(tmp_path: Path, table: str, field: str) -> None:
    # Each run's seed is its task's, so an edit of the scenario's seed would be ignored.
    path = write_scenario(tmp_path, SMALL + "\n" + table, "seed.toml")
    with pytest.raises(SweepError) as info:
        load_plan(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}: "), message
    assert "sweep.seeds" in message
    # `validate` and `sweep` share the check: both refuse before anything is run or written.
    for command in (["validate"], ["sweep", "--jobs", "1", "--out", tmp_path / "out"]):
        proc = run_cli(*command, path)
        assert proc.returncode == 2, proc.stderr
        assert field in proc.stderr
        assert "sweep.seeds" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("seed", ['"7"', "7.0", '"3 + 4"'])
def test_the_scenario_seed_is_read_as_the_simulator_reads_it(tmp_path: Path, seed: str) -> None:
    # Without sweep.seeds a sweep runs the scenario's own seed once, the one `run` uses.
    path = write_scenario(tmp_path, SMALL.replace("seed = 7", f"seed = {seed}"), "seed.toml")
    assert pathweave.load(path).seed == 7
    assert load_plan(path).seeds == (7,)
    proc = run_cli("sweep", path, "--jobs", "1", "--quiet", "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert manifest["seeds"] == [7]


def test_sweeps_beyond_the_size_limits_are_refused_before_expanding(tmp_path: Path) -> None:
    # 6 keys x 10 values = 10**6 points, over MAX_POINTS: refused at once, not after
    # validating a million scenarios (the check counts the points without building them).
    ten = ", ".join(f'"{n}s"' for n in range(1, 11))
    grid = "".join(f'"flow[0].key{k}" = [{ten}]\n' for k in range(6))
    start = time.monotonic()
    with pytest.raises(SweepError, match=r"1,000,000 points x 1 seeds; at most 100,000 points"):
        load_plan(write_scenario(tmp_path, SMALL + "\n[sweep.grid]\n" + grid, "points.toml"))
    assert time.monotonic() - start < 5
    # 200 points, each within the limits, but 200 x 10,000 seeds is over MAX_RUNS.
    many = ", ".join(f'"{n}ms"' for n in range(1, 201))
    text = SMALL + f'\n[sweep]\nseeds = {MAX_SEEDS}\n[sweep.grid]\n"flow[0].key" = [{many}]\n'
    assert MAX_POINTS >= 200
    assert 200 * MAX_SEEDS > MAX_RUNS
    with pytest.raises(SweepError, match=r"200 points x 10,000 seeds.*1,000,000 runs"):
        load_plan(write_scenario(tmp_path, text, "runs.toml"))


def test_an_invalid_base_file_is_a_scenario_error(tmp_path: Path) -> None:
    bad = write_scenario(tmp_path, SWEEP.replace('"10ms"', '"-10ms"', 1), "bad.toml")
    with pytest.raises(pathweave.ScenarioError) as info:
        load_plan(bad)
    assert info.value.field == "link[0].delay"
    syntax = write_scenario(tmp_path, SWEEP + "\nbroken = \n", "syntax.toml")
    with pytest.raises(pathweave.ScenarioError, match="not valid TOML"):
        load_plan(syntax)


def test_multi_line_inline_tables_read_as_the_simulator_reads_them(tmp_path: Path) -> None:
    # TOML 1.1 lets an inline table span lines; the simulator accepts it, so sweeps must too.
    one_line = (
        'queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1, '
        "w_q = 0.002 }"
    )
    assert one_line in SMALL
    spread = one_line.replace("{ ", "{\n  ").replace(", ", ",\n  ")
    text = SMALL.replace(one_line, spread) + "\n[sweep]\nseeds = 1\n"
    p = load_plan(write_scenario(tmp_path, text, "spread.toml"))
    flat = load_plan(write_scenario(tmp_path, SMALL + "\n[sweep]\nseeds = 1\n", "flat.toml"))
    assert [pt.text for pt in p.points] == [pt.text for pt in flat.points]


def test_toml_loads_gives_plain_python_values() -> None:
    doc = pathweave._core.toml_loads('a = 1\nb = 2.5\nc = "x"\nd = [true, {e = 1979-05-27}]\n')
    assert doc == {"a": 1, "b": 2.5, "c": "x", "d": [True, {"e": "1979-05-27"}]}
    with pytest.raises(pathweave.ScenarioError, match=r"t\.toml: not valid TOML") as info:
        pathweave._core.toml_loads("a = ", "t.toml")
    assert info.value.file == "t.toml"


def test_set_applies_to_every_point_and_several_files_add_a_scenario_param(
    tmp_path: Path,
) -> None:
    a = write_scenario(tmp_path, SMALL, "a.toml")
    b = write_scenario(tmp_path, SMALL.replace('name = "small"', 'name = "other"'), "b.toml")
    p = plan([a, b], Sweep(grid={"flow[0].count": [1, 2]}, set={"duration": "2s"}, seeds=2))
    assert [pt.params for pt in p.points] == [
        {"scenario": "a", "flow[0].count": 1},
        {"scenario": "a", "flow[0].count": 2},
        {"scenario": "b", "flow[0].count": 1},
        {"scenario": "b", "flow[0].count": 2},
    ]
    assert {pt.scenario.duration_s for pt in p.points} == {2.0}
    assert [pt.scenario.name for pt in p.points] == ["small", "small", "other", "other"]


# --- running --------------------------------------------------------------------------------


def _flows(result: sweep_mod.SweepResult) -> pd.DataFrame:
    return result.frame("flows").drop(columns=["key"])


@pytest.fixture(scope="module")
def dask_client() -> Any:
    distributed = pytest.importorskip("dask.distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_serial_pool_and_dask_give_identical_results(
    sweep_scenario: Path, tmp_path: Path, dask_client: Any
) -> None:
    p = load_plan(sweep_scenario)
    serial = run_sweep(p, tmp_path / "serial", jobs=1)
    pool = run_sweep(p, tmp_path / "pool", jobs=2)
    dask = run_sweep(p, tmp_path / "dask", dask=dask_client)
    for result in (serial, pool, dask):
        assert result.complete
        assert (result.ran, result.cached) == (12, 0)
        assert [(r.point.index, r.seed) for r in result.runs] == [
            (t.point.index, t.seed) for t in p.tasks
        ]
    reference = _flows(serial)
    assert len(reference) == 3 * (1 + 2 + 1 + 2)
    pd.testing.assert_frame_equal(_flows(pool), reference)
    pd.testing.assert_frame_equal(_flows(dask), reference)
    # The seeds really differ, and so do the points.
    goodput = reference.groupby(["point", "seed"])["goodput_bps"].sum()
    assert goodput.nunique() == 12
    # Every cache holds the same files, byte for byte.
    for name in ("flows.parquet", "link_series.parquet"):
        for run in serial.runs:
            data = (run.path / name).read_bytes()
            assert data == (tmp_path / "pool" / run.key / name).read_bytes()
            assert data == (tmp_path / "dask" / run.key / name).read_bytes()


def test_rerun_uses_the_cache_and_force_redoes_it(sweep_scenario: Path, tmp_path: Path) -> None:
    p = load_plan(sweep_scenario)
    cache = tmp_path / "cache"
    first = run_sweep(p, cache, jobs=1)
    mtimes = {r.key: (r.path / "run.json").stat().st_mtime_ns for r in first.runs}
    second = run_sweep(p, cache, jobs=1)
    assert (second.ran, second.cached) == (0, 12)
    assert all(r.cached for r in second.runs)
    assert {r.key: (r.path / "run.json").stat().st_mtime_ns for r in second.runs} == mtimes
    pd.testing.assert_frame_equal(second.frame("flows"), first.frame("flows"))
    forced = run_sweep(p, cache, jobs=1, force=True)
    assert (forced.ran, forced.cached) == (12, 0)
    assert all((r.path / "run.json").stat().st_mtime_ns != mtimes[r.key] for r in forced.runs)
    assert sorted(x.name for x in cache.iterdir()) == sorted(mtimes)  # nothing else left


def test_changing_one_point_invalidates_only_that_point(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = load_plan(write_scenario(tmp_path, SWEEP, "sweep.toml"))
    run_sweep(before, cache, jobs=1)
    entries = {p.name: (p / "run.json").stat().st_mtime_ns for p in cache.iterdir()}
    # Change the second rate value: points 2 and 3 (rate 10 Mbps) become 20 Mbps.
    changed = SWEEP.replace('["5Mbps", "10Mbps"]', '["5Mbps", "20Mbps"]')
    after = load_plan(write_scenario(tmp_path, changed, "sweep.toml"))
    old_keys = {t.point.index: t.key for t in before.tasks if t.seed == 1}
    new_keys = {t.point.index: t.key for t in after.tasks if t.seed == 1}
    assert [old_keys[i] == new_keys[i] for i in range(4)] == [True, True, False, False]
    result = run_sweep(after, cache, jobs=1)
    assert (result.ran, result.cached) == (6, 6)
    assert [r.cached for r in result.runs] == [True] * 6 + [False] * 6
    # The unchanged points' entries were not touched; the changed ones are new entries.
    for run in result.runs[:6]:
        assert (run.path / "run.json").stat().st_mtime_ns == entries[run.key]
    new = {p.name for p in cache.iterdir()} - set(entries)
    assert new == {r.key for r in result.runs[6:]}
    # A change of one seed list entry invalidates that seed alone.
    reseeded = changed.replace("seeds = 3", "seeds = [1, 2, 4]")
    third = run_sweep(load_plan(write_scenario(tmp_path, reseeded, "sweep.toml")), cache, jobs=1)
    assert (third.ran, third.cached) == (4, 8)
    assert [r.seed for r in third.runs if not r.cached] == [4, 4, 4, 4]


def test_cache_entries_record_what_was_run(sweep_scenario: Path, tmp_path: Path) -> None:
    p = load_plan(sweep_scenario)
    result = run_sweep(p, tmp_path / "cache", jobs=1)
    run = result.runs[5]
    manifest = run.manifest
    assert manifest["key"] == run.key
    assert (manifest["point"], manifest["seed"]) == (1, 3)
    assert manifest["params"] == {"link[0].rate": "5Mbps", "flow[0].count": 2}
    assert manifest["scenario_text"] == run.point.text
    assert manifest["pathweave_version"] == pathweave.__version__
    # The key covers the text, the seed, the version and the compiled core's digest.
    assert task_key(manifest["scenario_text"], 3, core_fingerprint()) == run.key
    assert core_fingerprint().startswith(f"{pathweave.__version__}+")
    assert sorted(x.name for x in run.path.iterdir()) == sorted(
        [f"{t}.parquet" for t in pathweave.api.TABLES] + ["run.json"]
    )
    # The same run through pathweave.run gives the same table.
    direct = pathweave.run(pathweave.parse(run.point.text, "x.toml"), seed=3)
    pd.testing.assert_frame_equal(run.flows, direct.flows, check_dtype=False)


def test_a_failing_run_is_reported_and_the_others_finish(
    sweep_scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = executors._simulate

    def flaky(text: str, label: str, seed: int) -> Any:
        return "PathweaveError: boom" if seed == 2 and "5Mbps" in text else real(text, label, seed)

    monkeypatch.setattr(executors, "_simulate", flaky)
    p = load_plan(sweep_scenario)
    result = run_sweep(p, tmp_path / "cache", jobs=1)
    assert not result.complete
    assert [(f.task.point.index, f.task.seed) for f in result.failures] == [(0, 2), (1, 2)]
    assert [f.message for f in result.failures] == ["PathweaveError: boom"] * 2
    assert (len(result.runs), result.ran) == (10, 10)
    monkeypatch.setattr(executors, "_simulate", real)
    again = run_sweep(p, tmp_path / "cache", jobs=1)  # the failed runs are retried
    assert (again.complete, again.ran, again.cached) == (True, 2, 10)


def test_stale_partial_entries_are_cleaned_and_ignored(
    sweep_scenario: Path, tmp_path: Path
) -> None:
    p = load_plan(sweep_scenario)
    cache = tmp_path / "cache"
    cache.mkdir()
    key = p.tasks[0].key
    old = cache / f".{key}.partial-deadbeef0000"
    old.mkdir()
    (old / "flows.parquet").write_text("half written")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    young = cache / f".{key}.partial-cafe00000000"
    young.mkdir()
    broken = cache / p.tasks[1].key  # an entry without run.json is not an entry
    broken.mkdir()
    result = run_sweep(p, cache, jobs=1)
    assert (result.ran, result.cached) == (12, 0)
    assert not old.exists()
    assert young.exists()  # perhaps another sweep's write in progress
    assert (broken / "run.json").is_file()


# --- the command ----------------------------------------------------------------------------


def test_sweep_command_writes_tables_and_a_summary(sweep_scenario: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("sweep", sweep_scenario, "--out", out, "--jobs", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress bar on a pipe
    assert sorted(p.name for p in out.iterdir()) == [
        "cache",
        "fairness.parquet",
        "flows.parquet",
        "links.parquet",
        "metrics.parquet",
        "subflows.parquet",
        "summary.csv",
        "summary.parquet",
        "sweep.json",
    ]
    for piece in ("mean ± 95 % CI", "link[0].rate", "goodput", "12 runs simulated"):
        assert piece in proc.stdout, piece
    flows = pd.read_parquet(out / "flows.parquet")
    assert list(flows.columns[:5]) == ["point", "seed", "key", "link[0].rate", "flow[0].count"]
    assert len(flows) == 18
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 4  # one group per point
    assert list(summary.columns[:5]) == ["point", "link[0].rate", "flow[0].count", "group", "n"]
    assert set(summary["n"]) == {3}
    assert (summary["total_goodput_bps_ci"] > 0).all()
    # The summary's mean is the mean of the runs' group totals.
    metrics = pd.read_parquet(out / "metrics.parquet")
    point0 = metrics[metrics["point"] == 0]["total_goodput_bps"].mean()
    assert summary.loc[0, "total_goodput_bps_mean"] == pytest.approx(point0)
    manifest = json.loads((out / "sweep.json").read_text())
    assert (manifest["ran"], manifest["cached"], manifest["runs"]) == (12, 0, 12)
    assert manifest["seeds"] == [1, 2, 3]
    assert manifest["sweep"]["grid"] == {
        "link[0].rate": ["5Mbps", "10Mbps"],
        "flow[0].count": [1, 2],
    }
    assert [len(p["keys"]) for p in manifest["points"]] == [3, 3, 3, 3]
    again = run_cli("sweep", sweep_scenario, "--out", out, "--quiet", cwd=tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert json.loads((out / "sweep.json").read_text())["cached"] == 12


def test_sweep_command_default_out_and_separate_cache(sweep_scenario: Path, tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    proc = run_cli(
        "sweep", sweep_scenario, "--cache", cache, "--jobs", "1", "--quiet", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "results" / "sweeps" / "small"
    assert (out / "sweep.json").is_file()
    assert not (out / "cache").exists()
    assert len(list(cache.iterdir())) == 12


def test_sweep_command_rejects_bad_input(tmp_path: Path) -> None:
    bad = write_scenario(tmp_path, SMALL + '\n[sweep.grid]\n"link[0].rate" = ["-1Mbps"]\n')
    proc = run_cli("sweep", bad, "--out", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert 'sweep.grid."link[0].rate" = "-1Mbps"' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
    check = run_cli("validate", bad)
    assert (check.returncode, check.stderr) == (2, proc.stderr)
    good = write_scenario(tmp_path, SWEEP, "good.toml")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep")
    refused = run_cli("sweep", good, "--out", notes)
    assert refused.returncode == 2
    assert "no sweep.json" in refused.stderr
    assert sorted(p.name for p in notes.iterdir()) == ["todo.txt"]
    usage = run_cli("sweep", good, "--jobs", "0")
    assert usage.returncode == 2
    assert "--jobs" in usage.stderr
    both = run_cli("sweep", good, "--jobs", "2", "--dask", "tcp://127.0.0.1:1")
    assert both.returncode == 2
    assert "not allowed with" in both.stderr


def test_commands_that_run_once_check_the_sweep_table_and_say_they_run_it_once(
    tmp_path: Path,
) -> None:
    # A bad grid value is bad input for `run`, `compare` and `emulate` too, as for `validate`.
    one = '\n[[flow]]\nname = "one"\npath = ["bottleneck"]\n'
    bad = write_scenario(tmp_path, SMALL + one + '\n[sweep.grid]\n"link[0].rate" = ["-1Mbps"]\n')
    for command in (["run"], ["compare", "--flow", "one"], ["emulate"]):
        proc = run_cli(*command, bad, "--out", tmp_path / "out", cwd=tmp_path)
        assert proc.returncode == 2, (command, proc.stderr)
        assert 'sweep.grid."link[0].rate" = "-1Mbps"' in proc.stderr, command
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "out").exists()
    # A good one is noted: the command runs the scenario as written, once.
    good = write_scenario(tmp_path, SWEEP, "good.toml")
    proc = run_cli("run", good, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "[sweep] table (4 points x 3 seeds); run runs the scenario as written" in proc.stderr
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["seed"] == pathweave.load(good).seed
    quiet = run_cli("run", good, "--out", tmp_path / "out", "--quiet")
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_validate_checks_every_point(sweep_scenario: Path) -> None:
    proc = run_cli("validate", sweep_scenario)
    assert proc.returncode == 0, proc.stderr
    assert "sweep of 4 points x 3 seeds" in proc.stdout


def test_sweep_command_on_a_dask_scheduler(sweep_scenario: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=":0",
    ) as cluster:
        proc = run_cli(
            "sweep", sweep_scenario, "--out", tmp_path / "dask", "--dask", cluster.scheduler_address
        )
        assert proc.returncode == 0, proc.stderr
    local = run_cli("sweep", sweep_scenario, "--out", tmp_path / "local", "--jobs", "1")
    assert local.returncode == 0, local.stderr
    a = pd.read_parquet(tmp_path / "dask" / "flows.parquet")
    b = pd.read_parquet(tmp_path / "local" / "flows.parquet")
    pd.testing.assert_frame_equal(a, b)


def test_unreachable_dask_scheduler_is_a_clear_error(sweep_scenario: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "sweep",
        sweep_scenario,
        "--out",
        tmp_path / "o",
        "--dask",
        "tcp://127.0.0.1:9",
        env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"},
    )
    assert proc.returncode == 1
    assert "cannot connect to the Dask scheduler at tcp://127.0.0.1:9" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- interruption ---------------------------------------------------------------------------

# Ten runs of about half a second each, so that the seven or so still to run after the third
# has finished leave seconds to interrupt in (at 40 s simulated, about a tenth of a second
# each, the last runs once finished before the signal arrived on a busy machine).
LONG = SMALL.replace('"10Mbps"', '"100Mbps"').replace('"5s"', '"200s"') + textwrap.dedent(
    """
    [sweep]
    seeds = 10
    """
).replace('sample_interval = "50ms"', 'sample_interval = "1s"')


def _finished_entries(cache: Path) -> list[Path]:
    """Entries renamed into place. One is written under a hidden ``.<key>.partial-*`` name
    first, holding its run.json before the rename; an interrupt rightly discards that one."""
    return [p for p in cache.iterdir() if not p.name.startswith(".") and (p / "run.json").is_file()]


@pytest.mark.parametrize(
    ("sig", "jobs"),
    [(signal.SIGKILL, "1"), (signal.SIGKILL, "2"), (signal.SIGINT, "2")],
    ids=["sigkill-serial", "sigkill-pool", "sigint-pool"],
)
def test_an_interrupted_sweep_resumes_without_losing_or_repeating_runs(
    tmp_path: Path, sig: signal.Signals, jobs: str
) -> None:
    scenario = write_scenario(tmp_path, LONG, "long.toml")
    out = tmp_path / "out"
    cache = out / "cache"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pathweave",
            "sweep",
            str(scenario),
            "--out",
            str(out),
            "--jobs",
            jobs,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = _finished_entries(cache) if cache.exists() else []
        if len(done) >= 3 or proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.fail("the sweep finished before it could be interrupted; make LONG longer")
    if sig == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert "interrupted;" in stderr
        assert "rerun the same command to resume" in stderr
        assert "Traceback" not in stderr
    else:
        assert proc.returncode == -signal.SIGKILL
    kept = {
        p.name: (p / "run.json").stat().st_mtime_ns
        for p in cache.iterdir()
        if not p.name.startswith(".")
    }
    assert 3 <= len(kept) < 10
    assert all((cache / k / "run.json").is_file() for k in kept)  # no visible partial entry
    assert not (out / "sweep.json").exists()
    rerun = run_cli("sweep", scenario, "--out", out, "--jobs", jobs, "--quiet")
    assert rerun.returncode == 0, rerun.stderr
    manifest = json.loads((out / "sweep.json").read_text())
    assert (manifest["cached"], manifest["ran"]) == (len(kept), 10 - len(kept))
    entries = sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))
    assert entries == sorted(manifest["points"][0]["keys"])
    for key, mtime in kept.items():
        assert (cache / key / "run.json").stat().st_mtime_ns == mtime  # not run again
    flows = pd.read_parquet(out / "flows.parquet")
    assert sorted(flows.groupby("seed").size().items()) == [(s, 2) for s in range(1, 11)]


def test_every_shipped_scenario_and_sweep_is_valid() -> None:
    root = Path(__file__).resolve().parents[1] / "scenarios"
    files = sorted(root.rglob("*.toml"))
    assert len(files) >= 3
    for path in files:
        p = load_plan(path)  # a plain scenario is a sweep of one point
        assert p.points, path
    example = load_plan(root / "sweeps" / "red-dumbbell.toml")
    assert (len(example.points), len(example.seeds)) == (12, 3)


def test_a_script_without_the_main_guard_fails_instead_of_hanging(tmp_path: Path) -> None:
    # Spawned workers import the script again; unguarded, each starts a sweep of its own while
    # it is imported, dies and is replaced. The sweep must give up with the reason.
    scenario = write_scenario(tmp_path, SMALL, "small.toml")
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import pathweave
            from pathweave import sweep
            from pathweave.sweep import executors
            executors.WORKER_START_TIMEOUT_S = 3.0
            plan = pathweave.load_plan({str(scenario)!r}, sweep.Sweep(seeds=2))
            pathweave.run_sweep(plan, {str(tmp_path / "cache")!r}, jobs=2)
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    # The reason is the error's last line; on a busy machine the interpreter's shutdown may
    # add a resource-tracker warning after it.
    lines = proc.stderr.strip().splitlines()
    reason = next((line for line in reversed(lines) if "did not start within" in line), "")
    assert "did not start within 3 s" in reason, proc.stderr
    assert 'if __name__ == "__main__":' in reason
    assert not list((tmp_path / "cache").glob("*/run.json"))  # nothing ran


def test_without_seeds_a_sweep_runs_the_scenarios_own_seed_once(tmp_path: Path) -> None:
    assert "seed = 7\n" in SMALL
    text = SMALL.replace("seed = 7\n", "seed = 11\n")
    text += '\n[sweep]\ngrid = { "flow[0].count" = [1, 2] }\n'
    assert load_plan(write_scenario(tmp_path, text, "own.toml")).seeds == (11,)
    plain = write_scenario(tmp_path, SMALL.replace("seed = 7\n", ""), "plain.toml")
    assert load_plan(plain).seeds == (1,)  # no seed in the file: the default, 1
