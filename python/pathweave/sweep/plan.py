"""Sweep plans: a ``[sweep]`` table (``Sweep``) expanded into validated points (``Point``),
each run with every seed (``Task``, identified by ``task_key``); together a ``Plan``.

Each point is resolved by editing the parsed scenario document and serialising it back, so the
simulator's own validator checks every point before anything runs, and its errors are reported
against the sweep key that caused them.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from pathweave import _core
from pathweave._core import PathweaveError, Scenario, ScenarioError
from pathweave.api import absolute_trace_paths, parse, read_scenario_text

SWEEP_TABLE = "sweep"
"""The top-level table of a scenario file that describes its sweep."""
SEED_KEY = "seed"
"""The scenario's seed: a sweep gives its seeds in ``sweep.seeds``, never as a parameter."""

MAX_SEEDS = 10_000
"""The most seeds one sweep runs per point."""
MAX_POINTS = 100_000
"""The most points one sweep expands to (each is validated before any run)."""
MAX_RUNS = 1_000_000
"""The most runs (points times seeds) one sweep holds."""

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
            for key, values in entries.items():
                first = _parse_path(key, f"{where}: sweep.{table}.{_quote(key)}")[0][0]
                if first == SWEEP_TABLE:
                    raise SweepError(
                        f"{where}: sweep.{table}.{_quote(key)}: a sweep cannot vary or set its "
                        "own table; give the seeds as sweep.seeds"
                    )
                if first == SEED_KEY:
                    # Each run's seed is the task's (sweep.seeds), not the scenario's.
                    raise SweepError(
                        f"{where}: sweep.{table}.{_quote(key)} = {show_value(values)}: a sweep "
                        "cannot vary or set the seed; give the seeds as sweep.seeds (a count N "
                        "for seeds 1 to N, or a list such as seeds = [1, 2, 3])"
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
                and all(0 <= s < 2**63 for s in out)
                and len(set(out)) == len(out)
            ):
                return out
        raise SweepError(
            f"{where}: sweep.seeds = {show_value(seeds)}: must be a count from 1 to "
            f"{MAX_SEEDS:,} or a list of at most {MAX_SEEDS:,} distinct seeds from 0 to 2**63 - 1"
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
            Task(p, seed, task_key(p.text + trace_fingerprint(p.scenario), seed, version))
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


def trace_fingerprint(scenario: Scenario) -> str:
    """A digest of the trace files ``scenario`` replays ("" for none), so that a cached run
    is not reused after a trace file changed under the same name."""
    files = scenario.trace_files
    if not files:
        return ""
    parts = [f"{f}\0{_file_digest(f, *_stat_key(f))}" for f in files]
    return "\0traces\0" + "\0".join(parts)


def _stat_key(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=64)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """SHA-256 of a file, remembered while its modification time and size stay the same."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
        label, _, table, _ = bases[0]
        sweep = Sweep.from_table(table, label) if table is not None else Sweep()
    else:
        sweep.check(bases[0][0])
    # Without sweep.seeds, the (first) scenario's own seed, once, as the simulator reads it
    # (`run` uses the same one).
    seeds = sweep.seed_list(bases[0][0], default=bases[0][3])
    n_points = len(bases) * sweep.size()
    if n_points > MAX_POINTS or n_points * len(seeds) > MAX_RUNS:
        raise SweepError(
            f"{bases[0][0]}: the sweep has {n_points:,} points x {len(seeds):,} seeds; at most "
            f"{MAX_POINTS:,} points and {MAX_RUNS:,} runs are allowed: split it into several "
            "sweeps (they can share one cache)"
        )
    keys = sweep.varied()
    points: list[Point] = []
    for label, doc, _, _ in bases:
        for values in sweep.combinations():
            params: dict[str, Any] = {}
            if len(bases) > 1:
                params["scenario"] = Path(label).stem
            params.update(zip(keys, values, strict=True))
            points.append(_resolve(len(points), label, doc, sweep, params))
    return Plan(tuple(str(s) for s in sources), sweep, tuple(points), seeds)


def _read_base(path: Path) -> tuple[str, dict[str, Any], dict[str, Any] | None, int]:
    """``(label, document without [sweep], the [sweep] table or None, the scenario's seed)``,
    the document checked by the simulator. Raises ``ScenarioError`` for a file that is not
    valid."""
    label = str(path)
    text = read_scenario_text(path)  # a regular file within the size limit; else ScenarioError
    doc = _core.toml_loads(text, label)  # the simulator's parser; raises ScenarioError
    # Trace files are named relative to the scenario file: the points' text names them
    # absolutely, so that it runs the same from any directory and in any worker.
    absolute_trace_paths(doc, path.parent)
    table = doc.pop(SWEEP_TABLE, None)
    if table is not None and not isinstance(table, dict):
        raise SweepError(f"{label}: sweep = {show_value(table)}: must be a table")
    # A scenario without a name is named after its file; fixing it in the document keeps
    # the resolved text (and so the cache key) independent of where the file lives.
    doc = {"name": path.stem, **doc}
    # Check the base alone, so an error in the file itself is reported as such.
    try:
        scenario = parse(text, label, path.parent)
    except ScenarioError as e:
        if e.field != SWEEP_TABLE:
            raise
        scenario = parse(_dumps(doc, label), label)  # an older core that does not know [sweep]
    return label, doc, table, scenario.seed


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
    absolute_trace_paths(doc, Path(label).parent)  # a trace the sweep itself names
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
