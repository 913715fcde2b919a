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

The package is split by concern: ``plan`` (expanding and validating points), ``executors``
(where runs execute), ``cache`` (the run cache and ``run_sweep``) and ``output`` (a sweep's
output directory). Everything public is importable from ``pathweave.sweep``.
"""

from pathweave.sweep.cache import Failure, RunRecord, SweepResult, run_sweep, with_params
from pathweave.sweep.executors import WORKER_START_TIMEOUT_S, default_jobs
from pathweave.sweep.output import (
    GROUP_METRICS,
    RUN_TABLES,
    group_metrics,
    manifest_json,
    metrics_frame,
    param_columns,
    sweep_manifest,
    write_atomic,
    write_sweep,
    write_tables,
    write_text_atomic,
)
from pathweave.sweep.plan import (
    MAX_POINTS,
    MAX_RUNS,
    MAX_SEEDS,
    SWEEP_TABLE,
    Plan,
    Point,
    Sweep,
    SweepError,
    Task,
    core_fingerprint,
    load_plan,
    plan,
    set_path,
    show_value,
    task_key,
)

__all__ = [
    "GROUP_METRICS",
    "MAX_POINTS",
    "MAX_RUNS",
    "MAX_SEEDS",
    "RUN_TABLES",
    "SWEEP_TABLE",
    "WORKER_START_TIMEOUT_S",
    "Failure",
    "Plan",
    "Point",
    "RunRecord",
    "Sweep",
    "SweepError",
    "SweepResult",
    "Task",
    "core_fingerprint",
    "default_jobs",
    "group_metrics",
    "load_plan",
    "manifest_json",
    "metrics_frame",
    "param_columns",
    "plan",
    "run_sweep",
    "set_path",
    "show_value",
    "sweep_manifest",
    "task_key",
    "with_params",
    "write_atomic",
    "write_sweep",
    "write_tables",
    "write_text_atomic",
]
