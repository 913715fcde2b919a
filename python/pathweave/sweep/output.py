"""A sweep's output directory: the tables of every run stacked, per-group metrics, their
summary with confidence intervals, and ``sweep.json``; every file written atomically.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathweave import _core
from pathweave.sweep.cache import RunRecord, SweepResult, with_params
from pathweave.sweep.plan import Plan

if TYPE_CHECKING:
    import pandas as pd

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
