"""Parameter sweeps: a scenario's ``[sweep]`` table expanded into points, run in parallel
and cached, so that a rerun skips finished work and an interrupted sweep resumes.

A sweep file is an ordinary scenario with one more table::

    [sweep]
    seeds = 3                          # seeds 1, 2, 3; or a list: seeds = [4, 8, 15]
    [sweep.grid]                       # the cartesian product of these lists
    "flow[0].count" = [2, 4, 8]
    "link[0].queue.max_p" = [0.05, 0.1]
    [sweep.zip]                        # optional: lists of one length, varied together
    "flow[1].weights" = [[0.25, 0.75], [0.5, 0.5]]   # (one more dimension of the grid)
    "flow[1].name" = ["quarter", "half"]
    [sweep.set]                        # optional: edits applied to every point
    duration = "20s"

Keys are paths into the TOML document: table keys joined by dots, array entries by index
(``flow[0]`` is the first ``[[flow]]``). Each point is resolved by editing the parsed
document and serialising it back, so the simulator's own validator checks every point before
anything runs, and its errors are reported against the sweep key that caused them.

Invariants:

* A run is identified by the SHA-256 of its fully resolved scenario text, its seed and the
  pathweave version (``task_key``). Its results live in ``<cache>/<key>/``, which appears by
  a single rename once every file in it is written: an entry is complete or absent, never
  partial. Comments and formatting of the file do not change keys; any change to a value that
  reaches the simulator does, for that point alone.
* The parent process writes the cache; workers (local processes or Dask) only simulate and
  return columns. A cluster's workers therefore need no access to the cache directory.
* Results are read back in plan order (point-major, then seed), whatever order they finished
  in, so serial, process-pool and Dask runs give identical tables.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w

from pathweave import _core
from pathweave._core import PathweaveError, Scenario, ScenarioError, Simulation
from pathweave.api import TABLES, Result, _advance, _atomic_directory, parse

if TYPE_CHECKING:
    import pandas as pd
    from dask.distributed import Client
    from rich.progress import Progress as RichProgress

__all__ = [
    "Failure",
    "Plan",
    "Point",
    "RunRecord",
    "Sweep",
    "SweepError",
    "SweepResult",
    "Task",
    "default_jobs",
    "load_plan",
    "param_columns",
    "plan",
    "run_sweep",
    "set_path",
    "task_key",
    "with_params",
    "write_sweep",
]

SWEEP_TABLE = "sweep"
"""The top-level table of a scenario file that describes its sweep."""

MAX_SEEDS = 10_000
"""The most seeds one sweep runs per point."""
MAX_POINTS = 100_000
"""The most points one sweep expands to (each is validated before any run)."""
MAX_RUNS = 1_000_000
"""The most runs (points times seeds) one sweep holds."""

WORKER_START_TIMEOUT_S = 120.0
"""How long local worker processes may take to start before a sweep gives up on them."""

_CACHE_FORMAT = 1
# Leftovers of writes that were killed midway are removed once this old (seconds). Younger
# ones may belong to another sweep writing into the same cache right now.
_STALE_PARTIAL_S = 3600.0
_PATH_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)")


class SweepError(PathweaveError):
    """A ``[sweep]`` table, one of its keys or one of its points is invalid; ``str()`` names
    the file and the sweep key."""


@dataclass(frozen=True)
class Sweep:
    """What to vary: ``grid`` (key → list of values; the points are the cartesian product),
    ``seeds`` (a count N for seeds 1…N, or the seeds themselves; None for the scenario's own
    seed), ``set`` (key → one value, applied to every point) and ``zipped`` (key → list, all
    lists of one length: their i-th values go together, one more dimension of the product,
    after the grid's; the ``[sweep.zip]`` table)."""

    grid: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    seeds: int | Sequence[int] | None = None
    set: Mapping[str, Any] = field(default_factory=dict)
    zipped: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: Mapping[str, Any], where: str = "<string>") -> Sweep:
        """The sweep described by a scenario's ``[sweep]`` table."""
        unknown = sorted(set(table) - {"seeds", "grid", "set", "zip"})
        if unknown:
            raise SweepError(
                f"{where}: sweep.{unknown[0]}: unknown field (allowed here: seeds, grid, zip, set)"
            )
        grid = table.get("grid", {})
        fixed = table.get("set", {})
        zipped = table.get("zip", {})
        for name, value in (("grid", grid), ("set", fixed), ("zip", zipped)):
            if not isinstance(value, dict):
                raise SweepError(f"{where}: sweep.{name} must be a table of key = value")
        sweep = cls(grid=grid, seeds=table.get("seeds"), set=fixed, zipped=zipped)
        sweep.check(where)
        return sweep

    def check(self, where: str = "<string>") -> None:
        """Raise ``SweepError`` unless every part is well formed (values are not checked
        here: the simulator checks them point by point)."""
        # Every key is a well-formed path (parsed once, here) outside the sweep table.
        for table, entries in (("grid", self.grid), ("zip", self.zipped), ("set", self.set)):
            for key in entries:
                if _parse_path(key, f"{where}: sweep.{table}.{_quote(key)}")[0][0] == SWEEP_TABLE:
                    raise SweepError(
                        f"{where}: sweep.{table}.{_quote(key)}: a sweep cannot vary or set its "
                        "own table; give the seeds as sweep.seeds"
                    )
        for table, entries in (("grid", self.grid), ("zip", self.zipped)):
            for key, values in entries.items():
                if (
                    isinstance(values, str | bytes)
                    or not isinstance(values, Sequence)
                    or not values
                ):
                    raise SweepError(
                        f"{where}: sweep.{table}.{_quote(key)} = {show_value(values)}: must be a "
                        "non-empty list of values"
                    )
        lengths = {key: len(values) for key, values in self.zipped.items()}
        if len(set(lengths.values())) > 1:
            first = next(iter(lengths))
            odd = next(k for k, n in lengths.items() if n != lengths[first])
            raise SweepError(
                f"{where}: sweep.zip.{_quote(odd)} has {lengths[odd]} values but "
                f"sweep.zip.{_quote(first)} has {lengths[first]}: the lists of sweep.zip go "
                "together and must have one length"
            )
        for key in self.zipped:
            if key in self.grid:
                raise SweepError(
                    f"{where}: sweep.zip.{_quote(key)}: also in sweep.grid; a key is varied "
                    "in one of them"
                )
        self.seed_list(where)

    def seed_list(self, where: str = "<string>", default: int = 1) -> tuple[int, ...]:
        """The seeds to run: 1…N for a count N, the list as given, or ``(default,)``."""
        seeds = self.seeds
        if seeds is None:
            return (default,)
        if isinstance(seeds, bool):
            pass
        elif isinstance(seeds, int):
            if 1 <= seeds <= MAX_SEEDS:
                return tuple(range(1, seeds + 1))
        elif (
            isinstance(seeds, Sequence)
            and not isinstance(seeds, str | bytes)
            and seeds
            and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
        ):
            out = tuple(int(s) for s in seeds)
            if (
                len(out) <= MAX_SEEDS
                and all(0 <= s < 2**64 for s in out)
                and len(set(out)) == len(out)
            ):
                return out
        raise SweepError(
            f"{where}: sweep.seeds = {show_value(seeds)}: must be a count from 1 to "
            f"{MAX_SEEDS:,} or a list of at most {MAX_SEEDS:,} distinct seeds from 0 to 2**64 - 1"
        )

    def to_table(self) -> dict[str, Any]:
        """The ``[sweep]`` table that describes this sweep."""
        table: dict[str, Any] = {}
        if self.seeds is not None:
            table["seeds"] = self.seeds if isinstance(self.seeds, int) else list(self.seeds)
        if self.grid:
            table["grid"] = {k: list(v) for k, v in self.grid.items()}
        if self.zipped:
            table["zip"] = {k: list(v) for k, v in self.zipped.items()}
        if self.set:
            table["set"] = dict(self.set)
        return table

    def varied(self) -> list[str]:
        """The keys a point's ``params`` hold: the grid's, then the zipped ones."""
        return [*self.grid, *self.zipped]

    def size(self) -> int:
        """How many points ``combinations()`` gives, computed without building them."""
        rows = len(next(iter(self.zipped.values()))) if self.zipped else 1
        return math.prod(len(v) for v in self.grid.values()) * rows

    def combinations(self) -> list[tuple[Any, ...]]:
        """Every point's values, in the order of ``varied()``: the cartesian product of the
        grid's lists and, as its last dimension, the rows of the zipped lists."""
        rows = list(zip(*self.zipped.values(), strict=True)) if self.zipped else [()]
        return [
            (*g, *row)
            for g in itertools.product(*(self.grid[k] for k in self.grid))
            for row in rows
        ]


@dataclass(frozen=True)
class Point:
    """One combination of grid values, resolved to a complete scenario."""

    index: int
    params: dict[str, Any]
    """The grid values of this point (plus ``scenario``, the file's stem, when a plan has
    several files)."""
    text: str
    """The resolved scenario as TOML: what the simulator runs and the cache key hashes."""
    label: str
    """The file the point came from, for messages."""
    scenario: Scenario = field(compare=False, repr=False)

    def describe(self) -> str:
        """``key = value, …`` for messages and tables."""
        return ", ".join(f"{k} = {show_value(v)}" for k, v in self.params.items()) or "(base)"


@dataclass(frozen=True)
class Task:
    """One run: a point with one seed."""

    point: Point
    seed: int
    key: str


@dataclass(frozen=True)
class Plan:
    """Every point of a sweep, validated, and the seeds each is run with."""

    sources: tuple[str, ...]
    sweep: Sweep
    points: tuple[Point, ...]
    seeds: tuple[int, ...]

    @property
    def tasks(self) -> list[Task]:
        """Every run, point-major then seed."""
        version = core_fingerprint()
        return [
            Task(p, seed, task_key(p.text, seed, version))
            for p in self.points
            for seed in self.seeds
        ]

    @property
    def param_names(self) -> list[str]:
        """The names in each point's ``params``, in order."""
        return list(self.points[0].params) if self.points else []


@functools.lru_cache(maxsize=1)
def core_fingerprint() -> str:
    """The version and a digest of the compiled simulator, so that rebuilding the core after a
    change to the simulator or an algorithm invalidates cached runs even without a version
    bump."""
    digest = hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:16]
    return f"{_core.__version__}+{digest}"


def task_key(text: str, seed: int, version: str) -> str:
    """The cache key of one run: SHA-256 of the resolved scenario text, seed and version."""
    h = hashlib.sha256()
    for part in ("pathweave-run", text, str(seed), version):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


# --- resolving points -----------------------------------------------------------------------


def load_plan(path: str | os.PathLike[str], sweep: Sweep | None = None) -> Plan:
    """The plan of a sweep file. ``sweep`` replaces the file's own ``[sweep]`` table."""
    return plan([path], sweep)


def plan(sources: Sequence[str | os.PathLike[str]], sweep: Sweep | None = None) -> Plan:
    """Expand one or more scenario files by a sweep into validated points.

    With ``sweep`` None, the (single) file's own ``[sweep]`` table is used. With several
    files each point's ``params`` start with ``scenario`` (the file's stem), and the grid
    applies to every file. Raises ``ScenarioError`` for a bad file and ``SweepError`` for a
    bad sweep or point.
    """
    if not sources:
        raise SweepError("a sweep needs at least one scenario file")
    bases = [_read_base(Path(s)) for s in sources]
    if sweep is None:
        if len(bases) != 1:
            raise SweepError("with several scenario files, give the sweep explicitly")
        label, _, table = bases[0]
        sweep = Sweep.from_table(table, label) if table is not None else Sweep()
    else:
        sweep.check(bases[0][0])
    seeds = sweep.seed_list(bases[0][0])
    n_points = len(bases) * sweep.size()
    if n_points > MAX_POINTS or n_points * len(seeds) > MAX_RUNS:
        raise SweepError(
            f"{bases[0][0]}: the sweep has {n_points:,} points x {len(seeds):,} seeds; at most "
            f"{MAX_POINTS:,} points and {MAX_RUNS:,} runs are allowed: split it into several "
            "sweeps (they can share one cache)"
        )
    keys = sweep.varied()
    points: list[Point] = []
    for label, doc, _ in bases:
        for values in sweep.combinations():
            params: dict[str, Any] = {}
            if len(bases) > 1:
                params["scenario"] = Path(label).stem
            params.update(zip(keys, values, strict=True))
            points.append(_resolve(len(points), label, doc, sweep, params))
    return Plan(tuple(str(s) for s in sources), sweep, tuple(points), seeds)


def _read_base(path: Path) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """``(label, document without [sweep], the [sweep] table or None)``, the document
    checked by the simulator. Raises ``ScenarioError`` for a file that is not valid."""
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        _core.load_scenario(path)  # raises the simulator's own "cannot read" error
        raise
    doc = _core.toml_loads(text, label)  # the simulator's parser; raises ScenarioError
    table = doc.pop(SWEEP_TABLE, None)
    if table is not None and not isinstance(table, dict):
        raise SweepError(f"{label}: sweep = {show_value(table)}: must be a table")
    # A scenario without a name is named after its file; fixing it in the document keeps
    # the resolved text (and so the cache key) independent of where the file lives.
    doc = {"name": path.stem, **doc}
    # Check the base alone, so an error in the file itself is reported as such.
    try:
        parse(text, label)
    except ScenarioError as e:
        if e.field != SWEEP_TABLE:
            raise
        parse(_dumps(doc, label), label)  # an older core that does not know [sweep]
    return label, doc, table


def _resolve(
    index: int, label: str, base: dict[str, Any], sweep: Sweep, params: dict[str, Any]
) -> Point:
    """Point ``index``: ``base`` with the sweep's fixed edits and the grid values of
    ``params`` (which may also hold ``scenario``, the file's stem)."""
    values = {k: v for k, v in params.items() if k in sweep.grid or k in sweep.zipped}
    doc = _deep_copy(base)
    for key, value in sweep.set.items():
        set_path(doc, key, value, f"{label}: sweep.set.{_quote(key)}")
    for key, value in values.items():
        table = "grid" if key in sweep.grid else "zip"
        set_path(doc, key, value, f"{label}: sweep.{table}.{_quote(key)}")
    text = _dumps(doc, label)
    try:
        scenario = parse(text, label)
    except ScenarioError as e:
        raise _point_error(e, label, index, sweep, values) from None
    return Point(index, params, text, label, scenario)


def _point_error(
    e: ScenarioError, label: str, index: int, sweep: Sweep, values: dict[str, Any]
) -> SweepError:
    """The simulator's complaint about a point, said against the sweep key(s) behind it."""
    problem = e.message or str(e)
    where = f"{e.field} = {e.value}: {problem}" if e.value is not None else f"{e.field}: {problem}"
    culprits = [
        ("grid" if k in sweep.grid else "zip", k, v)
        for k, v in values.items()
        if _covers(k, e.field)
    ]
    culprits += [("set", k, v) for k, v in sweep.set.items() if _covers(k, e.field)]
    point = ", ".join(f"{k} = {show_value(v)}" for k, v in values.items())
    if culprits:
        kind, key, value = culprits[0]
        at = f" (point {index}: {point})" if point else ""
        return SweepError(
            f"{label}: sweep.{kind}.{_quote(key)} = {show_value(value)}{at} is not valid: {where}"
        )
    return SweepError(
        f"{label}: sweep point {index} ({point or 'the base scenario'}) is not valid: {where}"
    )


def _covers(key: str, fld: str | None) -> bool:
    """Whether the error at ``fld`` lies in (or contains) what the sweep key ``key`` set."""
    if fld is None:
        return False
    return fld == key or fld.startswith((key + ".", key + "[")) or key.startswith(fld + ".")


def set_path(doc: dict[str, Any], key: str, value: Any, where: str | None = None) -> None:
    """Set ``key`` (``a.b[2].c``) in the TOML document ``doc`` to ``value``.

    Missing tables on the way are created; array entries must exist. Raises ``SweepError``
    naming ``where`` (default: the key)."""
    where = where or key
    segments = _parse_path(key, where)
    node: Any = doc
    done = ""
    for n, (name, indices) in enumerate(segments):
        last = n == len(segments) - 1
        if not isinstance(node, dict):
            raise SweepError(f"{where}: {done} is not a table, so it has no field {name!r}")
        done = f"{done}.{name}" if done else name
        if last and not indices:
            node[name] = value
            return
        if name not in node:
            if indices:
                raise SweepError(f"{where}: the scenario has no {name!r} array")
            node[name] = {}
        node = node[name]
        for m, i in enumerate(indices):
            if not isinstance(node, list):
                raise SweepError(f"{where}: {done} is not an array")
            if i >= len(node):
                raise SweepError(
                    f"{where}: {done}[{i}] does not exist: {done} has {len(node)} "
                    f"entr{'y' if len(node) == 1 else 'ies'}"
                )
            if last and m == len(indices) - 1:
                node[i] = value
                return
            node = node[i]
            done = f"{done}[{i}]"


def _parse_path(key: str, where: str) -> list[tuple[str, list[int]]]:
    segments: list[tuple[str, list[int]]] = []
    for part in key.split("."):
        m = _PATH_SEGMENT.fullmatch(part)
        if m is None:
            raise SweepError(
                f"{where}: not a path into the scenario (use names joined by dots, with [N] "
                'for array entries, such as "link[0].queue.max_p")'
            )
        segments.append((m.group(1), [int(i) for i in re.findall(r"\d+", m.group(2))]))
    return segments


def _dumps(doc: dict[str, Any], label: str) -> str:
    try:
        return tomli_w.dumps(doc)
    except (TypeError, ValueError) as e:
        raise SweepError(f"{label}: a sweep value cannot be written as TOML: {e}") from None


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _quote(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def show_value(value: Any) -> str:
    """A value as it would be written in TOML."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_quote(k)} = {show_value(v)}" for k, v in value.items()) + " }"
    return str(value)


# --- running --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """A run that raised instead of finishing."""

    task: Task
    message: str


class RunRecord:
    """A finished run, read back from the cache. Tables load on first use."""

    def __init__(self, task: Task, path: Path, cached: bool) -> None:
        self.task = task
        self.path = path
        """The cache entry: one Parquet file per table and ``run.json``."""
        self.cached = cached
        """True if the run was found in the cache, False if this sweep ran it."""
        self._tables: dict[str, pd.DataFrame] = {}
        self._manifest: dict[str, Any] | None = None

    @property
    def point(self) -> Point:
        return self.task.point

    @property
    def params(self) -> dict[str, Any]:
        return self.task.point.params

    @property
    def seed(self) -> int:
        return self.task.seed

    @property
    def key(self) -> str:
        return self.task.key

    @property
    def manifest(self) -> dict[str, Any]:
        """The entry's ``run.json``."""
        if self._manifest is None:
            self._manifest = json.loads((self.path / "run.json").read_text(encoding="utf-8"))
        return self._manifest

    def table(self, name: str) -> pd.DataFrame:
        """One of the tables of ``pathweave.Result`` (``flows``, ``links``, …)."""
        if name not in TABLES:
            raise ValueError(f"no table {name!r}; the tables are {', '.join(TABLES)}")
        if name not in self._tables:
            import pandas as pd

            self._tables[name] = pd.read_parquet(self.path / f"{name}.parquet", engine="pyarrow")
        return self._tables[name]

    @property
    def flows(self) -> pd.DataFrame:
        return self.table("flows")

    @property
    def subflows(self) -> pd.DataFrame:
        return self.table("subflows")

    @property
    def links(self) -> pd.DataFrame:
        return self.table("links")

    @property
    def fairness(self) -> pd.DataFrame:
        return self.table("fairness")

    @property
    def flow_series(self) -> pd.DataFrame:
        return self.table("flow_series")

    @property
    def subflow_series(self) -> pd.DataFrame:
        return self.table("subflow_series")

    @property
    def link_series(self) -> pd.DataFrame:
        return self.table("link_series")

    def __repr__(self) -> str:
        return f"RunRecord(point={self.point.index}, seed={self.seed}, key={self.key[:12]})"


@dataclass
class SweepResult:
    """What ``run_sweep`` did: every run in plan order, and what could not be run."""

    plan: Plan
    runs: list[RunRecord]
    failures: list[Failure]
    ran: int
    """Runs simulated by this call."""
    cached: int
    """Runs found in the cache."""
    wall_time_s: float
    cache_dir: Path

    @property
    def complete(self) -> bool:
        return not self.failures

    def frame(self, table: str = "flows") -> pd.DataFrame:
        """One table of every run stacked, led by ``point``, ``seed``, ``key`` and the
        point's parameters (values that are not scalars as their TOML text)."""
        import pandas as pd

        frames = []
        for run in self.runs:
            frames.append(with_params(run.table(table), run))
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)


def with_params(frame: pd.DataFrame, run: RunRecord) -> pd.DataFrame:
    """``frame`` led by the columns ``point``, ``seed``, ``key`` and the run's parameters.

    A parameter whose name is already a column of ``frame`` becomes ``sweep:<name>``."""
    lead: dict[str, Any] = {"point": run.point.index, "seed": run.seed, "key": run.key}
    for name, value in run.params.items():
        column = name if name not in frame.columns and name not in lead else f"sweep:{name}"
        lead[column] = value if _is_scalar(value) else show_value(value)
    out = frame.copy()
    for i, (name, value) in enumerate(lead.items()):
        out.insert(i, name, [value] * len(frame))
    return out


def _is_scalar(value: Any) -> bool:
    return isinstance(value, int | float | str | bool)


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def run_sweep(
    plan: Plan,
    cache_dir: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    dask: str | Client | None = None,
    force: bool = False,
    progress: bool = False,
    description: str = "sweep",
) -> SweepResult:
    """Run every task of ``plan`` that the cache does not hold, and return them all.

    ``jobs`` local processes (default: one per CPU; 1 runs in this process), or the Dask
    cluster at ``dask`` (a scheduler address such as ``tcp://host:8786``, or a ``Client``).
    ``force`` reruns cached tasks. A task that fails is reported in ``failures`` and the
    others still run. Ctrl-C stops the sweep; what finished stays cached.
    """
    cache = Path(cache_dir)  # created with the first entry written
    _remove_stale_partials(cache)
    tasks = plan.tasks
    start = time.perf_counter()
    done: dict[str, bool] = {}  # key → ran by this call
    pending: list[Task] = []
    for task in tasks:
        if task.key in done:
            continue  # two points that resolve to the same scenario share one run
        if not force and (cache / task.key / "run.json").is_file():
            done[task.key] = False
        else:
            done[task.key] = True
            pending.append(task)
    failures: list[Failure] = []
    bar = _SweepBar(description, len(done), len(done) - len(pending)) if progress else None
    try:
        for task, outcome in _execute(pending, jobs, dask):
            if isinstance(outcome, str):
                failures.append(Failure(task, outcome))
            else:
                _write_entry(cache, task, outcome)
            if bar is not None:
                bar.advance()
    finally:
        if bar is not None:
            bar.close()
    failed = {f.task.key for f in failures}
    runs = [RunRecord(t, cache / t.key, not done[t.key]) for t in tasks if t.key not in failed]
    ran = sum(1 for ran in done.values() if ran) - len(failed)
    return SweepResult(
        plan=plan,
        runs=runs,
        failures=failures,
        ran=ran,
        cached=sum(1 for ran in done.values() if not ran),
        wall_time_s=time.perf_counter() - start,
        cache_dir=cache,
    )


# What a worker hands back: the raw columns and the wall time, or an error message.
_Outcome = tuple["_core._Results", float] | str


def _simulate(text: str, label: str, seed: int) -> _Outcome:
    """Run one task (in a worker, or in this process). Never raises for a failed run."""
    try:
        sim = Simulation(parse(text, label), seed)
        start = time.perf_counter()
        for _ in _advance(sim, start):
            pass
        wall = time.perf_counter() - start
        sim.check_conservation()
        return sim.results(), wall
    except KeyboardInterrupt:
        raise
    except Exception as e:  # reported as a failed point; the sweep goes on
        return f"{type(e).__name__}: {e}"


def _execute(
    tasks: list[Task], jobs: int | None, dask: str | Client | None
) -> Iterator[tuple[Task, _Outcome]]:
    """Run ``tasks``, yielding each with its outcome as it finishes."""
    if not tasks:
        return
    if dask is not None:
        yield from _execute_dask(tasks, dask)
        return
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if jobs == 1 or len(tasks) == 1:
        for task in tasks:
            yield task, _simulate(task.point.text, task.point.label, task.seed)
        return
    yield from _execute_pool(tasks, min(jobs, len(tasks)))


def _pool_task(item: tuple[int, str, str, int]) -> tuple[int, _Outcome]:
    n, text, label, seed = item
    return n, _simulate(text, label, seed)


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_ready() -> bool:
    return True


def _execute_pool(tasks: list[Task], jobs: int) -> Iterator[tuple[Task, _Outcome]]:
    # "spawn": fresh interpreters, safe whatever threads this process runs (a progress bar,
    # Dask, a test runner), and the same on Linux and macOS.
    context = multiprocessing.get_context("spawn")
    pool = context.Pool(jobs, initializer=_ignore_sigint)
    items = [(n, t.point.text, t.point.label, t.seed) for n, t in enumerate(tasks)]
    try:
        # A worker that cannot start (a script without the __main__ guard starts a sweep
        # again while it is imported) dies and is replaced for ever; fail instead of hanging.
        try:
            pool.apply_async(_worker_ready).get(timeout=WORKER_START_TIMEOUT_S)
        except multiprocessing.TimeoutError:
            raise PathweaveError(
                f"the worker processes did not start within {WORKER_START_TIMEOUT_S:g} s. "
                "Each worker imports the calling script again, so a script that runs sweeps "
                "with more than one job must do so under 'if __name__ == \"__main__\":' "
                "(or use jobs=1)"
            ) from None
        for n, outcome in pool.imap_unordered(_pool_task, items, chunksize=1):
            yield tasks[n], outcome
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


def _execute_dask(tasks: list[Task], dask: str | Client) -> Iterator[tuple[Task, _Outcome]]:
    from dask.distributed import Client, as_completed

    own = not isinstance(dask, Client)
    try:
        # Dask's own setting bounds the wait: distributed.comm.timeouts.connect (30 s).
        client = Client(dask) if isinstance(dask, str) else dask  # type: ignore[no-untyped-call]
    except (OSError, ValueError) as e:  # unreachable, or not an address
        raise PathweaveError(f"cannot connect to the Dask scheduler at {dask}: {e}") from None
    # Named after the run for the dashboard; the suffix keeps a forced rerun from being
    # answered with a result the scheduler still holds under the same name.
    batch = uuid.uuid4().hex[:8]
    try:
        futures = {
            client.submit(
                _simulate,
                t.point.text,
                t.point.label,
                t.seed,
                key=f"pathweave-run-{t.key[:16]}-{batch}",
                pure=False,
            ): t
            for t in tasks
        }
        try:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                task = futures[future]
                try:
                    outcome: _Outcome = future.result()
                except Exception as e:  # a worker died or could not unpickle the task
                    outcome = f"{type(e).__name__}: {e}"
                yield task, outcome
        except BaseException:
            client.cancel(list(futures))  # type: ignore[no-untyped-call]
            raise
    finally:
        if own:
            client.close()  # type: ignore[no-untyped-call]


def _write_entry(cache: Path, task: Task, outcome: tuple[_core._Results, float]) -> None:
    """Write one run into ``cache/<key>``: complete or not at all."""
    raw, wall = outcome
    result = Result(task.point.scenario, raw, wall)
    entry = cache / task.key
    if entry.exists() and not (entry / "run.json").is_file():
        shutil.rmtree(entry)  # not written by us: an entry appears whole, with run.json
    with _atomic_directory(entry) as tmp:
        for name, frame in result.tables().items():
            frame.to_parquet(tmp / f"{name}.parquet", engine="pyarrow", index=False)
        manifest = {
            **result.manifest("parquet"),
            "cache_format": _CACHE_FORMAT,
            "key": task.key,
            "point": task.point.index,
            "params": task.point.params,
            "scenario_text": task.point.text,
        }
        text = json.dumps(manifest, indent=2, allow_nan=True, default=str)
        (tmp / "run.json").write_text(text + "\n", encoding="utf-8")


def _remove_stale_partials(cache: Path) -> None:
    now = time.time()
    for p in cache.glob(".*"):
        if ".partial-" not in p.name and ".old-" not in p.name:
            continue
        try:
            if now - p.stat().st_mtime > _STALE_PARTIAL_S:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


class _SweepBar:
    """Runs done of the total, with the time left, on stderr."""

    def __init__(self, description: str, total: int, done: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar: RichProgress = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._task = self._bar.add_task(description, total=total, completed=done)
        self._bar.start()

    def advance(self) -> None:
        self._bar.advance(self._task)

    def close(self) -> None:
        self._bar.stop()


# --- summaries ------------------------------------------------------------------------------

RUN_TABLES = ("flows", "subflows", "links", "fairness")
"""The tables a sweep's output directory holds for every run (the time series stay in the
cache, one set per run)."""

GROUP_METRICS = (
    "total_goodput_bps",
    "mean_goodput_bps",
    "jain",
    "loss_event_rate",
    "retransmits",
    "timeouts",
    "mean_srtt_s",
)
"""The per-group metrics of ``group_metrics``, in order."""


def group_metrics(run: RunRecord) -> pd.DataFrame:
    """Per flow group of one run: total and mean goodput, Jain's index, mean loss-event rate,
    retransmits and timeouts (sums) and mean smoothed RTT."""
    import pandas as pd

    flows = run.flows
    fairness = run.fairness.set_index("group")
    rows = []
    for group, f in flows.groupby("group", sort=False):
        rows.append(
            {
                "group": group,
                "flows": len(f),
                "total_goodput_bps": float(f["goodput_bps"].sum()),
                "mean_goodput_bps": float(f["goodput_bps"].mean()),
                "jain": float(fairness["jain"].get(group, math.nan)),
                "loss_event_rate": float(f["loss_event_rate"].mean()),
                "retransmits": float(f["retransmits"].sum()),
                "timeouts": float(f["timeouts"].sum()),
                "mean_srtt_s": float(f["mean_srtt_s"].mean()),
            }
        )
    return pd.DataFrame(rows)


def metrics_frame(
    result: SweepResult, per_run: Callable[[RunRecord], pd.DataFrame | Mapping[str, float]]
) -> pd.DataFrame:
    """``per_run`` of every run, stacked and led by the run's point, seed, key and params."""
    import pandas as pd

    frames = []
    for run in result.runs:
        value = per_run(run)
        frame = value if isinstance(value, pd.DataFrame) else pd.DataFrame([dict(value)])
        frames.append(with_params(frame, run))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_sweep(result: SweepResult, out: str | os.PathLike[str]) -> pd.DataFrame:
    """Write a sweep's files into ``out`` and return its summary.

    ``flows``/``subflows``/``links``/``fairness.parquet`` (every run, led by point, seed,
    key and the parameters), ``metrics.parquet`` (``group_metrics`` of every run),
    ``summary.csv`` and ``summary.parquet`` (per point and flow group: ``n`` and, per
    metric, ``_mean``, ``_ci`` (95 % half-width), ``_low``, ``_high``) and ``sweep.json``.
    Each file is written atomically; the cache may live inside ``out``.
    """
    from pathweave.stats import summarise, wide

    target = Path(out)
    write_tables(result, target)
    metrics = metrics_frame(result, group_metrics)
    write_atomic(target / "metrics.parquet", lambda p: metrics.to_parquet(p, index=False))
    by = ["point", *param_columns(metrics, result.plan), "group"]
    summary = wide(summarise(metrics, by, GROUP_METRICS), by) if len(metrics) else metrics
    write_atomic(target / "summary.parquet", lambda p: summary.to_parquet(p, index=False))
    write_atomic(target / "summary.csv", lambda p: summary.to_csv(p, index=False))
    write_text_atomic(target / "sweep.json", manifest_json(sweep_manifest(result)))
    return summary


def param_columns(frame: pd.DataFrame, plan: Plan) -> list[str]:
    """The columns of ``frame`` (made by ``with_params``) that hold the plan's parameters."""
    return [f"sweep:{n}" if f"sweep:{n}" in frame.columns else n for n in plan.param_names]


def write_tables(result: SweepResult, out: Path, tables: Iterable[str] = RUN_TABLES) -> None:
    """Write ``<table>.parquet`` for every run stacked (``SweepResult.frame``), each file
    atomically."""
    for name in tables:
        frame = result.frame(name)
        write_atomic(out / f"{name}.parquet", functools.partial(_to_parquet, frame))


def _to_parquet(frame: pd.DataFrame, path: Path) -> None:
    frame.to_parquet(path, engine="pyarrow", index=False)


def write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` for a temporary file beside ``path``, then rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def sweep_manifest(result: SweepResult) -> dict[str, Any]:
    """What ``sweep.json`` holds: the sweep, its points and their runs, and what was done."""
    plan = result.plan
    keys: dict[int, list[str]] = {}
    for task in plan.tasks:
        keys.setdefault(task.point.index, []).append(task.key)
    return {
        "sources": list(plan.sources),
        "pathweave_version": _core.__version__,
        "sweep": plan.sweep.to_table(),
        "seeds": list(plan.seeds),
        "points": [
            {"point": p.index, "params": p.params, "keys": keys[p.index]} for p in plan.points
        ],
        "runs": len(result.runs) + len(result.failures),
        "ran": result.ran,
        "cached": result.cached,
        "failed": [
            {"point": f.task.point.index, "seed": f.task.seed, "error": f.message}
            for f in result.failures
        ],
        "cache": str(result.cache_dir),
        "wall_time_s": result.wall_time_s,
    }


def manifest_json(manifest: Mapping[str, Any]) -> str:
    return json.dumps(manifest, indent=2, allow_nan=True, default=str) + "\n"
