"""What a reproduction is: scenario files, a sweep (full and quick), how to reduce each run to
the reported metrics, what to plot, and the published values with their tolerances.

An ``Experiment`` is plain data plus two functions; ``pathweave.repro.runner`` does the rest
(running, statistics, verdicts, files). Verdicts compare the mean over replications with the
published value; the confidence interval is reported beside it, not used to widen the
tolerance, so a noisy result cannot pass for a good one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pathweave._core import PathweaveError
from pathweave.sweep import Sweep

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from pathweave.sweep import Plan, RunRecord, SweepResult

__all__ = [
    "Absolute",
    "AtLeast",
    "AtMost",
    "Between",
    "Experiment",
    "ExperimentData",
    "ExperimentError",
    "Published",
    "Relative",
    "Tolerance",
]

_ID = re.compile(r"[a-z0-9][a-z0-9-]*")


class ExperimentError(PathweaveError):
    """An experiment definition is inconsistent (a bug in the definition, not a miss)."""


class Tolerance(Protocol):
    """How far ours may be from the published value."""

    def accepts(self, ours: float, published: float) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Relative:
    """``|ours - published| ≤ fraction · |published|``."""

    fraction: float

    def accepts(self, ours: float, published: float) -> bool:
        return abs(ours - published) <= self.fraction * abs(published)

    def describe(self) -> str:
        return f"± {self.fraction * 100:g} %"


@dataclass(frozen=True)
class Absolute:
    """``|ours - published| ≤ amount``."""

    amount: float

    def accepts(self, ours: float, published: float) -> bool:
        return abs(ours - published) <= self.amount

    def describe(self) -> str:
        return f"± {self.amount:g}"


@dataclass(frozen=True)
class Between:
    """``low ≤ ours ≤ high``, whatever the published value (e.g. a ratio in [0.8, 1.25])."""

    low: float
    high: float

    def accepts(self, ours: float, published: float) -> bool:
        return self.low <= ours <= self.high

    def describe(self) -> str:
        return f"within [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class AtLeast:
    """``ours ≥ bound`` (e.g. MPTCP-Westwood/OLIA > 1.25)."""

    bound: float

    def accepts(self, ours: float, published: float) -> bool:
        return ours >= self.bound

    def describe(self) -> str:
        return f"≥ {self.bound:g}"


@dataclass(frozen=True)
class AtMost:
    """``ours ≤ bound``."""

    bound: float

    def accepts(self, ours: float, published: float) -> bool:
        return ours <= self.bound

    def describe(self) -> str:
        return f"≤ {self.bound:g}"


@dataclass(frozen=True)
class Published:
    """One published number and the tolerance ours must meet.

    ``where`` selects the point by its sweep parameters (grid keys, and ``scenario`` for an
    experiment of several files); it must select exactly one point of the full sweep. A
    quick run that lacks the point leaves the value out of its table. ``reason`` is shown
    for a miss: the known cause, if there is one (else "outside tolerance").

    With ``baseline`` (a second selection, by the same rules) ours is the difference of the
    two points' means, ``where`` minus ``baseline``: a shape across points, such as a metric
    that must not fall from one point to the next."""

    metric: str
    value: float
    tolerance: Tolerance
    where: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    """What the number is, e.g. "Fig. 5.10, N = 8"."""
    reason: str | None = None
    baseline: Mapping[str, Any] | None = None

    def verdict(self, ours: float) -> tuple[str, str]:
        """``("match", "")`` or ``("miss", reason)``."""
        if math.isnan(ours):
            return "miss", "no result for this point"
        if self.tolerance.accepts(ours, self.value):
            return "match", ""
        return "miss", self.reason or "outside tolerance"


@dataclass(frozen=True)
class Experiment:
    """A reproduction. See ``docs/reproduce.md`` for how to add one."""

    id: str
    """Lower-case words joined by hyphens; the directory of its results."""
    title: str
    description: str
    """What it shows and where it comes from (the paper and figure, or "not from the
    papers")."""
    setup: str
    """The setup as the report shows it: topology, parameters, which were chosen."""
    scenarios: tuple[str, ...]
    """Scenario files, relative to the scenarios directory (or absolute)."""
    sweep: Sweep
    """The full sweep: the paper's points and replications."""
    quick: Sweep
    """A reduced form (shorter, fewer points and seeds) that still shows the shape."""
    metrics: Callable[[RunRecord], Mapping[str, float]]
    """One run's reported metrics by name."""
    published: Sequence[Published]
    plot: Callable[[ExperimentData], Mapping[str, Figure]] | None = None
    """Figures by file stem, drawn from the results."""
    source: str = ""
    """The paper (authors, title, year, section) and figure, or why there is none."""

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id):
            raise ExperimentError(
                f"experiment id {self.id!r}: use lower-case letters, digits and hyphens"
            )
        if not self.scenarios:
            raise ExperimentError(f"{self.id}: no scenario files")
        allowed = set(self.sweep.varied()) | ({"scenario"} if len(self.scenarios) > 1 else set())
        for pub in self.published:
            unknown = sorted((set(pub.where) | set(pub.baseline or {})) - allowed)
            if unknown:
                raise ExperimentError(
                    f"{self.id}: published value {pub.label or pub.metric!r} selects by "
                    f"{unknown[0]!r}, which the full sweep does not vary"
                )


@dataclass
class ExperimentData:
    """Everything an experiment's ``plot`` may draw from."""

    experiment: Experiment
    quick: bool
    plan: Plan
    result: SweepResult
    runs: pd.DataFrame
    """One row per run: ``point``, ``seed``, ``key``, the parameters, then each metric."""
    summary: pd.DataFrame
    """One row per point and metric: ``point``, the parameters, then
    ``pathweave.stats.SUMMARY_COLUMNS``."""
    comparison: pd.DataFrame
    """The comparison table (see ``pathweave.repro.runner.COMPARISON_COLUMNS``)."""

    def metric(self, name: str) -> pd.DataFrame:
        """The summary rows of one metric, in point order."""
        rows = self.summary[self.summary["metric"] == name]
        return rows.sort_values("point", kind="stable").reset_index(drop=True)
