"""Run scenarios and hold their results.

``run`` drives a native ``Simulation`` in chunks of simulated time. Each chunk runs in Rust
with the interpreter released; between chunks Python reports progress and notices Ctrl-C.
Chunks are sized to take about a tenth of a second of wall time, whatever the scenario.

``Result`` turns the columns that cross from Rust into pandas DataFrames and writes them to
a directory atomically: into a hidden sibling first, renamed into place only once complete.
``run(..., out=DIR)`` writes that way too, but streams the time series into their files while
the simulator runs (Parquet row groups or CSV rows), so memory stays flat however long the
simulated time; the ``Result`` it returns reads its series back from ``DIR`` when they are
first used.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pathweave import _core
from pathweave._core import PathweaveError, Scenario, Simulation
from pathweave.capture import CAPTURE_MARKER, CaptureWriter, is_capture_file

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from rich.progress import Progress as RichProgress

# numpy and pandas are imported where results are built, not here: `pathweave validate` and
# error paths of the command line then start in a fraction of the time.

__all__ = [
    "SERIES",
    "TABLES",
    "Progress",
    "Result",
    "check_output_directory",
    "load",
    "parse",
    "run",
]

TABLES = (
    "flows",
    "subflows",
    "links",
    "flow_series",
    "subflow_series",
    "link_series",
    "fairness",
)
"""The tables of a result, in the order they are written."""

SERIES = ("flow_series", "subflow_series", "link_series")
"""The time-series tables: sampled every ``sample_interval``, streamed by ``run(out=...)``."""

Format = Literal["parquet", "csv"]

# Wall time each chunk of simulated time should take: short enough for a lively progress bar
# and a prompt Ctrl-C, long enough that the per-chunk overhead does not matter.
_CHUNK_WALL_S = 0.1
# Wall time before a progress bar appears: short runs finish without one.
_PROGRESS_DELAY_S = 2.0
# Rows gathered before a streamed time series writes a Parquet row group: big enough for
# efficient files, small enough (a few MB) that memory stays flat.
_ROW_GROUP_ROWS = 1 << 14
# The most time-series rows a chunk of a streamed run may sample: its simulated time is
# capped to fit, however fast the simulator runs.
_CHUNK_ROWS = 1 << 14


ENV_MAX_SCENARIO_BYTES = "PATHWEAVE_MAX_SCENARIO_BYTES"
"""Environment variable: the largest scenario or sweep file read, in bytes (default 4 MiB)."""
DEFAULT_MAX_SCENARIO_BYTES = 4 * 1024 * 1024


def max_scenario_bytes() -> int:
    """The largest scenario file read: ``$PATHWEAVE_MAX_SCENARIO_BYTES``, else 4 MiB. Raises
    ``PathweaveError`` for a value that is not a whole number of bytes."""
    text = os.environ.get(ENV_MAX_SCENARIO_BYTES)
    if text is None or not text.strip():
        return DEFAULT_MAX_SCENARIO_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value < 2**63:
        raise PathweaveError(
            f"{ENV_MAX_SCENARIO_BYTES}={text!r}: must be a whole number of bytes, "
            "from 1 to 2**63 - 1"
        )
    return value


def load(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario file. Raises ``ScenarioError``, also for a path that is
    not a regular file or a file larger than ``max_scenario_bytes()``."""
    return _core.load_scenario(path, max_scenario_bytes())


def read_scenario_text(path: str | os.PathLike[str]) -> str:
    """The text of a scenario (or sweep) file, with the checks of ``load``: a regular file of
    at most ``max_scenario_bytes()`` of UTF-8. Raises ``ScenarioError`` naming the file."""
    return _core.read_scenario_text(path, max_scenario_bytes())


def parse(
    text: str, label: str = "<string>", base_dir: str | os.PathLike[str] | None = None
) -> Scenario:
    """Validate scenario text; ``label`` names it in error messages. Relative trace paths
    (``rate = { trace = "FILE" }``) are resolved against ``base_dir``, by default the current
    directory. Raises ``ScenarioError``."""
    return _core.parse_scenario(text, label, base_dir)


TRACE_KEYS = ("trace", "reverse_trace")
"""The keys of a link's ``rate`` table that name trace files."""


def absolute_trace_paths(doc: dict[str, Any], base_dir: str | os.PathLike[str]) -> None:
    """Make the relative trace paths of a scenario document (``link[*].rate.trace`` and
    ``reverse_trace``) absolute against ``base_dir``, in place, so that the text written from
    the document names the same files from any directory (sweep points, compared variants)."""
    links = doc.get("link")
    if not isinstance(links, list):
        return
    for link in links:
        rate = link.get("rate") if isinstance(link, dict) else None
        if not isinstance(rate, dict):
            continue
        for key in TRACE_KEYS:
            name = rate.get(key)
            if isinstance(name, str) and name and not os.path.isabs(name):
                rate[key] = os.path.join(os.path.abspath(base_dir), name)


@dataclass(frozen=True)
class Progress:
    """How far a run has got, as passed to an ``on_progress`` callback."""

    now_s: float
    """Simulated time reached."""
    end_s: float
    """Simulated time at which the run ends."""
    events: int
    """Events processed so far."""
    wall_s: float
    """Wall time since the run started."""

    @property
    def fraction(self) -> float:
        """Share of the run done, from 0 to 1."""
        return self.now_s / self.end_s if self.end_s > 0 else 1.0


def run(
    scenario: str | os.PathLike[str] | Scenario,
    seed: int | None = None,
    progress: bool = False,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    out: str | os.PathLike[str] | None = None,
    format: Format = "parquet",
    plot: bool = False,
    pcap: str | os.PathLike[str] | None = None,
) -> Result:
    """Run a scenario to its end and return its results.

    ``scenario`` is a ``Scenario`` or the path of a scenario file. ``seed`` overrides the
    scenario's own seed. With ``progress=True`` a progress bar appears on stderr once the run
    has taken more than about two seconds. ``on_progress`` is called after every chunk of
    simulated time (a few times a second). Raises ``ScenarioError`` for a bad scenario file and
    ``PathweaveError`` if the simulator fails its packet-conservation check.

    With ``out``, the results are also written to that directory in ``format`` (with
    ``plot``, ``run.png`` too), as ``Result.write`` writes them, but the time series are
    written while the run goes instead of being held in memory: memory stays flat however
    long the simulated time. The directory appears only once complete (the run writes into a
    hidden sibling and renames it; a failed or interrupted run leaves ``out`` as it was), and
    ``out`` must be absent, empty or hold earlier results (and be neither a symbolic link nor
    the current directory). The returned ``Result`` reads its
    time series back from ``out`` when they are first used.

    With ``pcap``, the run is captured into that directory (docs/capture.md): a pcapng file
    per captured link direction and, if ``[capture]`` asks for it, the queue log
    ``packets.parquet``, as the scenario's ``[capture]`` table says (every link direction
    with the defaults without one). Without ``pcap``, a scenario with ``[capture]`` run with
    ``out`` is captured into ``out/capture``. The capture directory, too, appears only once
    the run is complete, and must be absent, empty or hold an earlier capture.
    """
    if not isinstance(scenario, Scenario):
        scenario = load(scenario)
    if out is not None and format not in ("parquet", "csv"):
        raise ValueError(f"format must be 'parquet' or 'csv', not {format!r}")
    with ExitStack() as stack:
        tmp, capture_dir = _output_directories(stack, scenario, out, pcap)
        sim = Simulation(scenario, seed)
        capture = None if capture_dir is None else CaptureWriter(sim, scenario, capture_dir)
        try:
            result = _run_to_end(sim, scenario, tmp, format, progress, on_progress, capture)
            if capture is not None:
                result.capture = capture.finish()
            if tmp is not None:
                result._write_files(tmp, format, plot=plot, series=False)
        except BaseException:
            if capture is not None:
                capture.abort()
            raise
    if out is not None:
        result._series_moved(Path(out))
    return result


def _run_to_end(
    sim: Simulation,
    scenario: Scenario,
    tmp: Path | None,
    format: Format,
    progress: bool,
    on_progress: Callable[[Progress], None] | None,
    capture: CaptureWriter | None,
) -> Result:
    """Drive ``sim`` to its end, streaming its time series into ``tmp`` if given and the
    capture's queue log as it goes; check conservation and gather the results."""
    if tmp is None:
        after = None if capture is None else capture.chunk
        wall_s = _drive(sim, progress, on_progress, after)
        sim.check_conservation()
        return Result(scenario, sim.results(), wall_s)
    with _SeriesWriter(tmp, format) as series:

        def after_chunk() -> None:
            series.write(sim.take_series())
            if capture is not None:
                capture.chunk()

        wall_s = _drive(sim, progress, on_progress, after_chunk)
        series.write(sim.take_series())
    sim.check_conservation()
    return Result(scenario, sim.results(), wall_s, series=series.files(tmp))


def _drive(
    sim: Simulation,
    progress: bool,
    on_progress: Callable[[Progress], None] | None,
    after_chunk: Callable[[], None] | None = None,
) -> float:
    """Advance ``sim`` to its end, reporting progress and calling ``after_chunk`` after every
    chunk of simulated time; returns the wall time taken."""
    bar = _LazyProgressBar() if progress else None
    max_step = math.inf
    if after_chunk is not None:
        # A chunk's time series must stay small however fast the simulator runs.
        rows = max(sim.scenario.series_rows_per_sample, 1)
        max_step = max(_CHUNK_ROWS // rows, 1) * sim.scenario.sample_interval_s
    start = time.perf_counter()
    try:
        for p in _advance(sim, start, max_step):
            if after_chunk is not None:
                after_chunk()
            if bar is not None:
                bar.update(p)
            if on_progress is not None:
                on_progress(p)
    finally:
        if bar is not None:
            bar.close()
    return time.perf_counter() - start


def _advance(sim: Simulation, start: float, max_step: float = math.inf) -> Iterator[Progress]:
    """Advance ``sim`` to its end in chunks of at most ``max_step`` simulated seconds,
    yielding progress after each."""
    end = sim.end_s
    # Begin small; the step then adapts to the simulator's speed on this scenario.
    step = min(max(end / 1000, 1e-6), max_step)
    while not sim.finished:
        target = sim.now_s + step
        t0 = time.perf_counter()
        # The last chunk asks for "the end" itself, so float rounding cannot stop it short.
        sim.advance(math.inf if target >= end else target)
        took = time.perf_counter() - t0
        factor = _CHUNK_WALL_S / took if took > 0 else 4.0
        step = min(max(step * min(max(factor, 0.25), 4.0), 1e-6), end, max_step)
        yield Progress(sim.now_s, end, sim.events, time.perf_counter() - start)


class _LazyProgressBar:
    """A rich progress bar on stderr that only appears once a run has lasted a while."""

    def __init__(self, delay_s: float = _PROGRESS_DELAY_S) -> None:
        self._delay_s = delay_s
        self._bar: RichProgress | None = None
        self._task: Any = None

    def update(self, p: Progress) -> None:
        if self._bar is None:
            if p.wall_s < self._delay_s:
                return
            self._start(p)
        assert self._bar is not None
        self._bar.update(self._task, completed=p.now_s, wall=p.wall_s)

    def _start(self, p: Progress) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress

        # Narrow enough for an 80-column terminal.
        self._bar = RichProgress(
            TextColumn("simulating"),
            BarColumn(bar_width=24),
            TaskProgressColumn(),
            TextColumn(
                "{task.completed:.0f}/{task.total:.0f} s, {task.fields[wall]:.0f} s wall, eta"
            ),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._task = self._bar.add_task("run", total=p.end_s, wall=p.wall_s)
        self._bar.update(self._task, completed=p.now_s)  # before the first frame is drawn
        self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _column(column: tuple[str, bytearray] | list[str]) -> np.ndarray[Any, Any] | list[str]:
    """One column as it crossed from Rust, as numpy array (numbers) or list (strings)."""
    import numpy as np

    if isinstance(column, tuple):
        dtype, data = column
        # The bytearray is writable and owned by nobody else, so the array shares it: no copy.
        return np.frombuffer(data, dtype=np.dtype(dtype))
    return column


def _frame(table: dict[str, tuple[str, bytearray] | list[str]]) -> pd.DataFrame:
    """A table as it crossed from Rust, as a DataFrame with the same column order."""
    import pandas as pd

    return pd.DataFrame({name: _column(col) for name, col in table.items()})


@dataclass(frozen=True)
class _SeriesFile:
    """A time-series table written to a file, to be read back on first use."""

    path: Path
    format: Format
    dtypes: dict[str, str]
    """Column dtypes, so a CSV file reads back as the table was (Parquet keeps them)."""

    def read(self) -> pd.DataFrame:
        import pandas as pd

        if self.format == "parquet":
            return pd.read_parquet(self.path, engine="pyarrow")
        return pd.read_csv(self.path, dtype=self.dtypes)


class _SeriesWriter:
    """Writes the time series into ``directory`` chunk by chunk, as ``Result.write`` would
    write them whole: the same columns, types and values; Parquet files get a row group per
    ``_ROW_GROUP_ROWS`` rows or so, CSV files their rows appended.

    A context manager: leaving it flushes and closes every file; leaving it on an error only
    closes them (the files are incomplete, and the caller discards them).
    """

    def __init__(self, directory: Path, format: Format) -> None:
        self._directory = directory
        self._format: Format = format
        self._dtypes: dict[str, dict[str, str]] = {}
        self._parquet: dict[str, Any] = {}  # name -> pyarrow.parquet.ParquetWriter
        self._pending: dict[str, list[Any]] = {name: [] for name in SERIES}  # pyarrow Tables
        self._pending_rows: dict[str, int] = dict.fromkeys(SERIES, 0)
        self._csv: dict[str, TextIO] = {}

    def __enter__(self) -> _SeriesWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
            return
        # Nothing more to write, and the error being raised must not be masked by another.
        for f in [*self._parquet.values(), *self._csv.values()]:
            with suppress(Exception):
                f.close()
        self._parquet.clear()
        self._csv.clear()

    def path(self, name: str) -> Path:
        return self._directory / f"{name}.{self._format}"

    def write(self, chunk: _core._Series) -> None:
        """Append one chunk of every series (as ``Simulation.take_series()`` returns it)."""
        for name in SERIES:
            frame = _frame(chunk[name])  # type: ignore[literal-required]
            self._dtypes.setdefault(name, {str(c): str(t) for c, t in frame.dtypes.items()})
            if self._format == "parquet":
                self._write_parquet(name, frame)
            else:
                self._write_csv(name, frame)

    def _write_parquet(self, name: str, frame: pd.DataFrame) -> None:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        # As DataFrame.to_parquet converts it, so the schema (pandas metadata included) is
        # the one an unstreamed write gives.
        table = pa.Table.from_pandas(frame, preserve_index=False)
        if name not in self._parquet:
            self._parquet[name] = pq.ParquetWriter(self.path(name), table.schema)
        if table.num_rows == 0:
            return
        self._pending[name].append(table)
        self._pending_rows[name] += table.num_rows
        if self._pending_rows[name] >= _ROW_GROUP_ROWS:
            self._flush(name)

    def _flush(self, name: str) -> None:
        import pyarrow as pa

        if self._pending_rows[name] == 0:
            return
        table = pa.concat_tables(self._pending[name])
        self._parquet[name].write_table(table, row_group_size=table.num_rows)
        self._pending[name] = []
        self._pending_rows[name] = 0

    def _write_csv(self, name: str, frame: pd.DataFrame) -> None:
        f = self._csv.get(name)
        first = f is None
        if f is None:
            # As DataFrame.to_csv opens a path: newline="" keeps its line endings.
            f = self._csv[name] = self.path(name).open("w", encoding="utf-8", newline="")
        frame.to_csv(f, header=first, index=False)

    def files(self, directory: Path) -> dict[str, _SeriesFile]:
        """Where each series is once ``directory`` holds the written files."""
        return {
            name: _SeriesFile(
                directory / f"{name}.{self._format}", self._format, self._dtypes[name]
            )
            for name in SERIES
        }

    def close(self) -> None:
        for name in list(self._parquet):
            self._flush(name)
            self._parquet.pop(name).close()
        for name in list(self._csv):
            self._csv.pop(name).close()


class Result:
    """The results of one run.

    Tables (pandas DataFrames; column names carry their unit):

    * ``flows``: one row per flow, in scenario order;
    * ``subflows``: one row per subflow of each TCP flow (``flow``, ``subflow``, ``path``,
      ``throughput_bps`` of acknowledged payload, losses, mean cwnd and srtt);
    * ``links``: one row per link direction (row ``2·k`` is link ``k`` forward, ``2·k + 1``
      reverse);
    * ``flow_series``: one row per flow per sample; ``flow`` is the row of ``flows``;
    * ``subflow_series``: one row per joined TCP subflow per sample;
    * ``link_series``: one row per sampled link direction per sample; ``link`` is the row of
      ``links``;
    * ``fairness``: per group: ``group``, ``flows``, ``total_goodput_bps``, ``jain``.

    The scenario's ``[series]`` chooses which flows, link directions and columns the three
    series hold (by default all). A result of ``run(..., out=DIR)`` reads its series from the
    files in ``DIR`` the first time each is used.
    """

    def __init__(
        self,
        scenario: Scenario,
        raw: _core._Results,
        wall_time_s: float,
        *,
        series: dict[str, _SeriesFile] | None = None,
    ) -> None:
        self.scenario = scenario
        """The scenario that was run."""
        self.scenario_name: str = raw["scenario"]
        self.seed: int = raw["seed"]
        self.wall_time_s = wall_time_s
        """Wall time of the run in seconds (not part of the written tables)."""
        self.stats: dict[str, int | float] = dict(raw["stats"])
        """Run-wide counters: ``simulated_s``, ``events``, ``packets_created``, …"""
        self.flows = _frame(raw["flows"])
        self.subflows = _frame(raw["subflows"])
        self.links = _frame(raw["links"])
        self.fairness = _frame(raw["fairness"])
        self.capture: dict[str, Any] | None = None
        """What the run's capture wrote (``capture.json``), if it was captured."""
        # The series in memory, or (streamed by `run(out=...)`) the files to read them from.
        self._series: dict[str, pd.DataFrame] = {}
        self._series_files: dict[str, _SeriesFile] = dict(series or {})
        if series is None:
            for name in SERIES:
                self._series[name] = _frame(raw[name])  # type: ignore[literal-required]

    def _series_table(self, name: str) -> pd.DataFrame:
        frame = self._series.get(name)
        if frame is None:
            frame = self._series[name] = self._series_files[name].read()
        return frame

    def _series_moved(self, directory: Path) -> None:
        """The streamed series files are now in ``directory``."""
        self._series_files = {
            name: replace(f, path=directory / f.path.name) for name, f in self._series_files.items()
        }

    @property
    def flow_series(self) -> pd.DataFrame:
        """One row per recorded flow per sample (see the class description)."""
        return self._series_table("flow_series")

    @flow_series.setter
    def flow_series(self, frame: pd.DataFrame) -> None:
        self._series["flow_series"] = frame

    @property
    def subflow_series(self) -> pd.DataFrame:
        """One row per joined subflow of a recorded TCP flow per sample."""
        return self._series_table("subflow_series")

    @subflow_series.setter
    def subflow_series(self, frame: pd.DataFrame) -> None:
        self._series["subflow_series"] = frame

    @property
    def link_series(self) -> pd.DataFrame:
        """One row per recorded link direction per sample."""
        return self._series_table("link_series")

    @link_series.setter
    def link_series(self, frame: pd.DataFrame) -> None:
        self._series["link_series"] = frame

    def __repr__(self) -> str:
        return (
            f"Result(scenario={self.scenario_name!r}, seed={self.seed}, "
            f"flows={len(self.flows)}, simulated_s={self.stats['simulated_s']})"
        )

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name, in the order of ``TABLES``."""
        return {name: getattr(self, name) for name in TABLES}

    @property
    def events_per_s(self) -> float:
        """Events processed per second of wall time."""
        return self.stats["events"] / self.wall_time_s if self.wall_time_s > 0 else math.inf

    def manifest(self, format: Format = "parquet") -> dict[str, Any]:
        """What ``run.json`` holds. Only ``wall_time_s`` differs between identical runs."""
        out: dict[str, Any] = {
            "scenario": self.scenario_name,
            "description": self.scenario.description,
            "source": self.scenario.source,
            "seed": self.seed,
            "pathweave_version": _core.__version__,
            "format": format,
            "tables": {name: f"{name}.{format}" for name in TABLES},
            "stats": self.stats,
            "wall_time_s": self.wall_time_s,
        }
        if self.capture is not None:
            # Where the capture went is the caller's choice (`--pcap` or `capture/`); what it
            # holds, and whether a limit cut it short, is part of the run.
            out["capture"] = {
                "files": [f["name"] for f in self.capture["files"]],
                "truncated_files": [f["name"] for f in self.capture["files"] if f["truncated"]],
                "packet_log_rows": self.capture["packet_log_rows"],
                "packet_log_truncated": self.capture["packet_log_truncated"],
            }
        return out

    def write(
        self,
        out_dir: str | os.PathLike[str],
        format: Format = "parquet",
        *,
        plot: bool = False,
    ) -> Path:
        """Write every table, ``run.json`` and (with ``plot``) ``run.png`` to ``out_dir``.

        Atomic: the files are written into a hidden sibling directory that is renamed to
        ``out_dir`` only once complete, so ``out_dir`` is never left half-written. An existing
        ``out_dir`` is replaced, and only after the new one is complete; to protect other data
        it must be empty or hold earlier results (a ``run.json``), else ``FileExistsError``.
        Returns ``out_dir``.
        """
        if format not in ("parquet", "csv"):
            raise ValueError(f"format must be 'parquet' or 'csv', not {format!r}")
        target = Path(out_dir)
        with _atomic_directory(target) as tmp:
            self._write_files(tmp, format, plot=plot, series=True)
        return target

    def _write_files(self, directory: Path, format: Format, *, plot: bool, series: bool) -> None:
        """Write the tables (without the time series unless ``series``), the plot and
        ``run.json`` into ``directory``; ``run.json`` last."""
        for name in TABLES:
            path = directory / f"{name}.{format}"
            if name in SERIES:
                if not series:
                    continue
                # Streamed and not read back: copy the file rather than read it.
                streamed = self._series_files.get(name)
                if name not in self._series and streamed is not None and streamed.format == format:
                    shutil.copyfile(streamed.path, path)
                    continue
            frame: pd.DataFrame = getattr(self, name)
            if format == "parquet":
                frame.to_parquet(path, engine="pyarrow", index=False)
            else:
                frame.to_csv(path, index=False)
        if plot:
            from pathweave.plot import plot_run

            plot_run(self, directory / "run.png", packets=True)
        text = json.dumps(self.manifest(format), indent=2, allow_nan=True)
        (directory / "run.json").write_text(text + "\n", encoding="utf-8")


# What pathweave writes into a results directory, by the file that marks it: a run's (or an
# emulation's) tables, plot and manifest; a comparison's table and plot.
_RESULT_FILES: dict[str, frozenset[str]] = {
    "run.json": frozenset(
        {f"{t}.{ext}" for t in TABLES for ext in ("parquet", "csv")} | {"run.json", "run.png"}
    ),
    "compare.csv": frozenset({"compare.csv", "compare.png"}),
}


def check_output_directory(target: Path, marker: str = "run.json") -> None:
    """Raise (``OSError``) unless ``target`` may receive results: absent, or a directory that
    is empty or holds earlier results (the file ``marker``, ``run.json`` for a run, and
    nothing but the files such results consist of), in a directory that can be written.
    Writing replaces the whole directory, so anything else there would be lost, a symbolic
    link would itself be replaced and the current directory would be pulled from under the
    process: both are refused. This check creates nothing."""
    if target.is_symlink():
        # Replacing the directory would replace the link, not what it points to.
        raise FileExistsError(
            f"{target} is a symbolic link (to {os.readlink(target)}); the results replace the "
            f"whole directory, which would replace the link itself, so give the path it points "
            f"to ({os.path.realpath(target)}) or another directory"
        )
    if os.path.realpath(target) == os.path.realpath(os.getcwd()):
        raise FileExistsError(
            f"{target} is the current directory; the results replace the whole directory, "
            "which cannot be the one the command runs in, so give a directory inside it (such "
            "as results/NAME) or another directory"
        )
    if target.exists():
        if not target.is_dir():
            raise NotADirectoryError(f"{target} exists and is not a directory")
        names = sorted(p.name for p in target.iterdir())
        if names and marker not in names:
            raise FileExistsError(
                f"{target} exists and does not hold pathweave results (no {marker}); writing "
                "would replace it, so choose another directory or remove it"
            )
        ours = _RESULT_FILES.get(marker, frozenset({marker}))
        if marker == CAPTURE_MARKER:
            foreign = [n for n in names if not is_capture_file(n)]
        else:
            # A run's results may hold its capture, in `capture/`.
            foreign = [n for n in names if n not in ours and n != "capture"]
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise FileExistsError(
                f"{target} holds earlier results but also {shown}, which pathweave did not "
                "write; writing would replace the whole directory, so choose another "
                "directory or move them out"
            )
    # The results are written beside the target and renamed: the nearest existing ancestor
    # must be a writable directory (missing ones are created only when the results are).
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise NotADirectoryError(f"{parent} is not a directory, so {target} cannot be created")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{target.name}.probe-", dir=parent))
    except OSError as e:
        raise PermissionError(
            f"{target} cannot be created: {parent} cannot be written ({e.strerror})"
        ) from None


def _output_directories(
    stack: ExitStack,
    scenario: Scenario,
    out: str | os.PathLike[str] | None,
    pcap: str | os.PathLike[str] | None,
) -> tuple[Path | None, Path | None]:
    """The temporary results directory for ``out`` and the capture directory (``pcap``, or
    ``capture/`` inside the results when the scenario has ``[capture]``), entered on
    ``stack``: each appears under its name only once the run is complete."""
    tmp = None if out is None else stack.enter_context(_atomic_directory(Path(out)))
    capture_dir: Path | None = None
    if pcap is not None:
        capture_dir = stack.enter_context(_atomic_directory(Path(pcap), marker=CAPTURE_MARKER))
    elif tmp is not None and scenario.has_capture:
        capture_dir = tmp / "capture"
        capture_dir.mkdir()
    return tmp, capture_dir


@contextmanager
def _atomic_directory(target: Path, marker: str = "run.json") -> Iterator[Path]:
    """Yield an empty directory beside ``target``; on success it replaces ``target``.

    On failure the partial directory is removed and ``target`` is left as it was.
    """
    check_output_directory(target, marker)
    parent = target.parent
    # The ancestors made here go again if the results are not written.
    made = [p for p in (parent, *parent.parents) if not p.exists()]
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".{target.name}.partial-{uuid.uuid4().hex[:12]}"
    try:
        tmp.mkdir()  # with the usual permissions (umask applies), unlike tempfile.mkdtemp
        yield tmp
        _replace_directory(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for p in made:  # deepest first
            try:
                p.rmdir()
            except OSError:
                break
        raise


def _replace_directory(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``, moving an existing ``target`` aside first."""
    if not target.exists():
        new.rename(target)
        return
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
    target.rename(old)
    try:
        new.rename(target)
    except BaseException:
        old.rename(target)  # put the previous results back
        raise
    shutil.rmtree(old, ignore_errors=True)
