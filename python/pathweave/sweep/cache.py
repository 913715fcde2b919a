"""The run cache: one directory per run, named by its task key, written whole or not at all,
and ``run_sweep``, which runs what the cache does not hold and reads every run back from it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathweave import _core
from pathweave.api import TABLES, Result, _atomic_directory
from pathweave.sweep.executors import SweepBar, execute
from pathweave.sweep.plan import Plan, Point, Task, show_value

if TYPE_CHECKING:
    import pandas as pd
    from dask.distributed import Client

_CACHE_FORMAT = 1
# Leftovers of writes that were killed midway are removed once this old (seconds). Younger
# ones may belong to another sweep writing into the same cache right now.
_STALE_PARTIAL_S = 3600.0


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
    bar = SweepBar(description, len(done), len(done) - len(pending)) if progress else None
    try:
        for task, outcome in execute(pending, jobs, dask):
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
