"""Run an experiment: sweep, reduce, summarise, compare with the published values, plot and
write everything into ``<out>/<id>/``.

Files of one experiment (the directory is replaced as a whole, atomically):

* ``experiment.json``: the definition's text, the mode, seeds, counts, wall time, version,
  the comparison and the figure names; ``report.html`` is built from these;
* ``comparison.csv``: one row per published value (``COMPARISON_COLUMNS``);
* ``summary.csv``: mean and 95 % interval of every metric at every point;
* ``metrics.parquet``: every metric of every run;
* ``flows.parquet``, ``subflows.parquet``, ``links.parquet``, ``fairness.parquet``: the raw
  tables of every run, led by ``point``, ``seed``, ``key`` and the parameters (the time series
  of each run stay in its cache entry);
* ``figures/<name>.png`` and ``.pdf``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pathweave import _core
from pathweave.api import _replace_directory
from pathweave.catalog import ENV_SCENARIOS, scenarios_dir
from pathweave.repro.experiment import Experiment, ExperimentData, ExperimentError, Published
from pathweave.stats import summarise
from pathweave.sweep import (
    Plan,
    Point,
    SweepResult,
    manifest_json,
    metrics_frame,
    param_columns,
    plan,
    run_sweep,
    write_tables,
)

if TYPE_CHECKING:
    import pandas as pd
    from dask.distributed import Client

__all__ = [
    "COMPARISON_COLUMNS",
    "ENV_SCENARIOS",
    "Outcome",
    "check_target",
    "compare",
    "run_experiment",
    "scenarios_dir",
]


COMPARISON_COLUMNS = (
    "label",
    "metric",
    "point",
    "params",
    "ours",
    "ci_low",
    "ci_high",
    "ci_half_width",
    "n",
    "published",
    "tolerance",
    "verdict",
    "reason",
)
"""The columns of ``comparison.csv``."""

_MANIFEST = "experiment.json"


@dataclass
class Outcome:
    """What ``run_experiment`` produced."""

    experiment: Experiment
    directory: Path
    result: SweepResult
    comparison: pd.DataFrame
    not_covered: int
    """Published values whose point the (quick) sweep did not run."""
    wall_time_s: float

    @property
    def matches(self) -> int:
        return int((self.comparison["verdict"] == "match").sum())

    @property
    def misses(self) -> int:
        return int((self.comparison["verdict"] == "miss").sum())


def scenario_paths(experiment: Experiment, root: Path | None = None) -> list[Path]:
    root = scenarios_dir() if root is None else root
    paths = [Path(s) if Path(s).is_absolute() else root / s for s in experiment.scenarios]
    for p in paths:
        if not p.is_file():
            raise ExperimentError(
                f"{experiment.id}: scenario file {p} not found ({ENV_SCENARIOS}, if set, "
                "names the directory holding the scenarios; unset, the scenarios shipped with "
                "pathweave are used)"
            )
    return paths


def run_experiment(
    experiment: Experiment,
    out: str | os.PathLike[str],
    *,
    quick: bool = False,
    cache_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    dask: str | Client | None = None,
    force: bool = False,
    progress: bool = False,
) -> Outcome:
    """Run ``experiment`` and write its results into ``out/<id>/``.

    The cache defaults to ``out/cache``. A miss is a result, not an error; failed runs are
    in ``Outcome.result.failures`` and their published values are misses.
    """
    start = time.perf_counter()
    root = Path(out)
    target = root / experiment.id
    check_target(target)
    sweep = experiment.quick if quick else experiment.sweep
    the_plan = plan(scenario_paths(experiment), sweep)
    result = run_sweep(
        the_plan,
        root / "cache" if cache_dir is None else Path(cache_dir),
        jobs=jobs,
        dask=dask,
        force=force,
        progress=progress,
        description=experiment.id,
    )
    runs = metrics_frame(result, experiment.metrics)
    params = param_columns(runs, the_plan)
    metric_names = [c for c in runs.columns if c not in {"point", "seed", "key", *params}]
    if len(runs):
        summary = summarise(runs, ["point", *params], metric_names)
    else:
        summary = _empty_summary(the_plan)
    comparison, not_covered = compare(experiment.published, the_plan, summary, quick=quick)
    data = ExperimentData(experiment, quick, the_plan, result, runs, summary, comparison)
    figures = dict(experiment.plot(data)) if experiment.plot is not None and len(runs) else {}
    with _replacing(target) as tmp:
        fig_dir = tmp / "figures"
        fig_dir.mkdir()
        for name, fig in figures.items():
            fig.savefig(fig_dir / f"{name}.png", dpi=120)
            fig.savefig(fig_dir / f"{name}.pdf")
        comparison.to_csv(tmp / "comparison.csv", index=False)
        summary.to_csv(tmp / "summary.csv", index=False)
        runs.to_parquet(tmp / "metrics.parquet", index=False)
        write_tables(result, tmp)
        wall = time.perf_counter() - start
        manifest = _manifest(experiment, quick, result, comparison, not_covered, figures, wall)
        (tmp / _MANIFEST).write_text(manifest_json(manifest), encoding="utf-8")
    return Outcome(experiment, target, result, comparison, not_covered, wall)


def compare(
    published: Sequence[Published],
    the_plan: Plan,
    summary: pd.DataFrame,
    *,
    quick: bool = False,
) -> tuple[pd.DataFrame, int]:
    """The comparison table and the number of published values the plan does not cover."""
    import pandas as pd

    rows = []
    not_covered = 0
    for pub in published:
        point = _select(pub, pub.where, the_plan, quick)
        base = _select(pub, pub.baseline, the_plan, quick) if pub.baseline is not None else None
        if point is None or (pub.baseline is not None and base is None):
            not_covered += 1
            continue
        row = _summary_row(pub, point, summary)
        ours = float(row["mean"]) if row is not None else math.nan
        half = float(row["half_width"]) if row is not None else math.nan
        n = int(row["n"]) if row is not None else 0
        low = float(row["low"]) if row is not None else math.nan
        high = float(row["high"]) if row is not None else math.nan
        params = point.describe()
        if base is not None:
            # The difference of two means: the half-widths add in quadrature (independent
            # runs), which is a little wider than Welch's interval.
            brow = _summary_row(pub, base, summary)
            ours -= float(brow["mean"]) if brow is not None else math.nan
            half = math.hypot(half, float(brow["half_width"])) if brow is not None else math.nan
            n = min(n, int(brow["n"])) if brow is not None else 0
            low, high = ours - half, ours + half
            params = f"{params} minus {base.describe()}"
        verdict, reason = pub.verdict(ours)
        rows.append(
            {
                "label": pub.label or pub.metric,
                "metric": pub.metric,
                "point": point.index,
                "params": params,
                "ours": ours,
                "ci_low": low,
                "ci_high": high,
                "ci_half_width": half,
                "n": n,
                "published": pub.value,
                "tolerance": pub.tolerance.describe(),
                "verdict": verdict,
                "reason": reason,
            }
        )
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS)), not_covered


def _select(pub: Published, where: Mapping[str, Any], the_plan: Plan, quick: bool) -> Point | None:
    """The one point ``where`` selects; None if a quick plan lacks it."""
    points = [
        p
        for p in the_plan.points
        if all(k in p.params and p.params[k] == v for k, v in where.items())
    ]
    if not points:
        if quick:
            return None
        raise ExperimentError(
            f"published value {pub.label or pub.metric!r} ({_where(where)}) selects no point "
            "of the sweep"
        )
    if len(points) > 1:
        raise ExperimentError(
            f"published value {pub.label or pub.metric!r} ({_where(where)}) selects "
            f"{len(points)} points; make its `where` select one"
        )
    return points[0]


def _summary_row(pub: Published, point: Point, summary: pd.DataFrame) -> pd.Series | None:
    match = summary[(summary["point"] == point.index) & (summary["metric"] == pub.metric)]
    if match.empty and pub.metric not in set(summary["metric"]) and len(summary):
        raise ExperimentError(f"published value {pub.label!r}: no metric {pub.metric!r}")
    return match.iloc[0] if not match.empty else None


def _where(where: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v!r}" for k, v in where.items()) or "no selection"


def _empty_summary(the_plan: Plan) -> pd.DataFrame:
    import pandas as pd

    from pathweave.stats import SUMMARY_COLUMNS

    return pd.DataFrame(columns=["point", *the_plan.param_names, *SUMMARY_COLUMNS])


def _manifest(
    experiment: Experiment,
    quick: bool,
    result: SweepResult,
    comparison: pd.DataFrame,
    not_covered: int,
    figures: dict[str, Any],
    wall: float,
) -> dict[str, Any]:
    the_plan = result.plan
    records = json.loads(comparison.to_json(orient="records"))
    return {
        "id": experiment.id,
        "title": experiment.title,
        "description": experiment.description,
        "source": experiment.source,
        "setup": experiment.setup,
        "mode": "quick" if quick else "full",
        "scenarios": list(the_plan.sources),
        "sweep": the_plan.sweep.to_table(),
        "seeds": list(the_plan.seeds),
        "points": len(the_plan.points),
        "runs": len(result.runs) + len(result.failures),
        "ran": result.ran,
        "cached": result.cached,
        "failed": [
            {"point": f.task.point.index, "seed": f.task.seed, "error": f.message}
            for f in result.failures
        ],
        "pathweave_version": _core.__version__,
        "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "sweep_wall_time_s": result.wall_time_s,
        "wall_time_s": wall,
        "figures": sorted(figures),
        "comparison": records,
        "matches": int((comparison["verdict"] == "match").sum()),
        "misses": int((comparison["verdict"] == "miss").sum()),
        "not_covered": not_covered,
    }


def check_target(target: Path) -> None:
    """Refuse to replace a directory that does not hold an experiment's results."""
    if not target.exists():
        return
    if not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a directory")
    if (target / _MANIFEST).is_file() or not any(target.iterdir()):
        return
    raise FileExistsError(
        f"{target} exists and does not hold experiment results (no {_MANIFEST}); choose "
        "another --out or remove it"
    )


@contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """An empty sibling directory that replaces ``target`` once the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    try:
        yield tmp
        check_target(target)
        _replace_directory(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
