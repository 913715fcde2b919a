"""Means and Student t confidence intervals over replications."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from pathweave.stats import Interval, mean_ci, summarise, t_quantile, wide


def test_hand_computed_interval() -> None:
    # 1..5: mean 3, s² = 10/4 = 2.5, s/√n = √0.5; t(0.975, 4) = 2.776445105 (tables).
    ci = mean_ci([1, 2, 3, 4, 5])
    assert ci.n == 5
    assert ci.mean == 3.0
    assert ci.std == pytest.approx(math.sqrt(2.5))
    assert ci.half_width == pytest.approx(2.776445105 * math.sqrt(0.5), rel=1e-9)
    assert ci.half_width == pytest.approx(1.963243, abs=1e-6)
    assert (ci.low, ci.high) == pytest.approx((3 - 1.963243, 3 + 1.963243), abs=1e-6)
    assert ci.contains(3.0)
    assert not ci.contains(5.0)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 31])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_interval_matches_scipy(n: int, confidence: float) -> None:
    rng = np.random.default_rng(n)
    sample = rng.normal(10.0, 3.0, size=n)
    low, high = scipy_stats.t.interval(
        confidence, n - 1, loc=sample.mean(), scale=scipy_stats.sem(sample)
    )
    ci = mean_ci(sample, confidence)
    assert ci.mean == pytest.approx(sample.mean(), rel=1e-12)
    assert (ci.low, ci.high) == pytest.approx((low, high), rel=1e-12)


def test_quantile_is_scipys() -> None:
    assert t_quantile(0.95, 2) == pytest.approx(4.302652729911275)
    assert t_quantile(0.95, 1) == pytest.approx(12.706204736174707)
    with pytest.raises(ValueError, match="confidence"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_quantile(0.95, 0)


def test_one_sample_has_no_interval() -> None:
    ci = mean_ci([4.2])
    assert (ci.mean, ci.n) == (4.2, 1)
    assert math.isnan(ci.half_width)
    assert math.isnan(ci.std)
    assert math.isnan(ci.low)
    assert math.isnan(ci.high)
    assert not ci.contains(4.2)
    assert str(ci) == "4.2 (n = 1)"


def test_no_samples_and_nans() -> None:
    empty = mean_ci([])
    assert empty.n == 0
    assert math.isnan(empty.mean)
    assert math.isnan(empty.half_width)
    # NaNs are left out and not counted.
    ci = mean_ci([1.0, math.nan, 3.0])
    assert (ci.n, ci.mean) == (2, 2.0)
    only_nan = mean_ci([math.nan])
    assert only_nan.n == 0
    assert math.isnan(only_nan.mean)


def test_identical_samples_have_zero_width() -> None:
    ci = mean_ci([7.0, 7.0, 7.0])
    assert (ci.mean, ci.half_width, ci.low, ci.high) == (7.0, 0.0, 7.0, 7.0)


def test_summarise_long_and_wide() -> None:
    frame = pd.DataFrame(
        {
            "point": [0, 0, 0, 1],
            "p": [0.1, 0.1, 0.1, 0.2],
            "goodput": [1.0, 2.0, 3.0, 5.0],
            "loss": [0.5, 0.5, math.nan, 0.25],
        }
    )
    long = summarise(frame, ["point", "p"], ["goodput", "loss"])
    assert list(long.columns) == [
        "point",
        "p",
        "metric",
        "n",
        "mean",
        "std",
        "half_width",
        "low",
        "high",
    ]
    assert list(zip(long["point"], long["metric"], long["n"], strict=True)) == [
        (0, "goodput", 3),
        (0, "loss", 2),
        (1, "goodput", 1),
        (1, "loss", 1),
    ]
    first = long.iloc[0]
    expected = Interval(2.0, t_quantile(0.95, 2) * 1.0 / math.sqrt(3), 3, 1.0)
    assert first["half_width"] == pytest.approx(expected.half_width)
    assert math.isnan(long.iloc[2]["half_width"])  # n = 1
    table = wide(long, ["point", "p"])
    assert list(table.columns) == [
        "point",
        "p",
        "n",
        "goodput_mean",
        "goodput_ci",
        "goodput_low",
        "goodput_high",
        "loss_mean",
        "loss_ci",
        "loss_low",
        "loss_high",
    ]
    assert list(table["n"]) == [3, 1]
    assert table["loss_mean"].tolist() == [0.5, 0.25]
