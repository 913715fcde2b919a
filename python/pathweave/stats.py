"""Means and confidence intervals over replications.

The interval is Student's t: ``mean ± t(1 - a/2, n - 1) · s / √n``, with ``s`` the sample
standard deviation (``ddof = 1``) and the quantile from ``scipy.stats.t.ppf``. Samples that
are NaN (a metric a run could not measure, such as the RTT of a flow that sent nothing) are
left out and ``n`` counts the others. With ``n = 1`` there is no interval: the half-width is
NaN, never zero. With ``n = 0`` the mean is NaN too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SUMMARY_COLUMNS", "Interval", "mean_ci", "summarise", "t_quantile", "wide"]

SUMMARY_COLUMNS = ("metric", "n", "mean", "std", "half_width", "low", "high")
"""The columns ``summarise`` adds after the grouping columns."""


@dataclass(frozen=True)
class Interval:
    """A sample mean with its confidence interval ``mean ± half_width``."""

    mean: float
    half_width: float
    """NaN when the interval is undefined (fewer than two samples)."""
    n: int
    std: float
    """Sample standard deviation (ddof = 1); NaN for fewer than two samples."""
    confidence: float = 0.95

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in the interval (False when it is undefined)."""
        return self.low <= x <= self.high

    def __str__(self) -> str:
        if math.isnan(self.half_width):
            return f"{self.mean:.6g} (n = {self.n})"
        return f"{self.mean:.6g} ± {self.half_width:.3g} (n = {self.n})"


def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student t quantile: ``t.ppf((1 + confidence) / 2, df)``."""
    from scipy.stats import t

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    return float(t.ppf((1 + confidence) / 2, df))


def mean_ci(values: Iterable[float], confidence: float = 0.95) -> Interval:
    """The mean of ``values`` (NaNs left out) with its Student t confidence interval."""
    xs = [float(v) for v in values]
    xs = [x for x in xs if not math.isnan(x)]
    n = len(xs)
    if n == 0:
        return Interval(math.nan, math.nan, 0, math.nan, confidence)
    mean = math.fsum(xs) / n
    if n == 1:
        return Interval(mean, math.nan, 1, math.nan, confidence)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(confidence, n - 1) * std / math.sqrt(n)
    return Interval(mean, half, n, std, confidence)


def summarise(
    frame: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str],
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean and confidence interval of each of ``metrics`` within each group of ``by``.

    Long form: one row per group and metric, with the columns ``by`` then
    ``SUMMARY_COLUMNS``. Groups keep their order of first appearance.
    """
    import pandas as pd

    rows = []
    groups = frame.groupby(list(by), sort=False, dropna=False) if by else [((), frame)]
    for keys, group in groups:
        keys = keys if isinstance(keys, tuple) else (keys,)
        for metric in metrics:
            ci = mean_ci(group[metric].to_numpy(dtype=float), confidence)
            rows.append(
                {
                    **dict(zip(by, keys, strict=True)),
                    "metric": metric,
                    "n": ci.n,
                    "mean": ci.mean,
                    "std": ci.std,
                    "half_width": ci.half_width,
                    "low": ci.low,
                    "high": ci.high,
                }
            )
    return pd.DataFrame(rows, columns=[*by, *SUMMARY_COLUMNS])


def wide(summary: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """A ``summarise`` table with one row per group and, per metric, the columns
    ``<metric>_mean``, ``<metric>_ci`` (half-width), ``<metric>_low``, ``<metric>_high``;
    ``n`` is the largest sample count of the row."""
    import pandas as pd

    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for record in summary.to_dict("records"):
        key = tuple(record[b] for b in by)
        row = rows.setdefault(key, {**{b: record[b] for b in by}, "n": 0})
        m = record["metric"]
        row["n"] = max(int(row["n"]), int(record["n"]))  # type: ignore[call-overload]
        row[f"{m}_mean"] = record["mean"]
        row[f"{m}_ci"] = record["half_width"]
        row[f"{m}_low"] = record["low"]
        row[f"{m}_high"] = record["high"]
    return pd.DataFrame(list(rows.values()))
