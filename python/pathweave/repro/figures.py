"""Figure helpers for experiment definitions: Agg figures without pyplot's global state."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["error_bars", "new_figure"]


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib ``Figure`` drawn with Agg (no pyplot, no display). ``kwargs`` go to
    ``Figure`` (``figsize``, …); the layout is "constrained" unless given."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kwargs.setdefault("layout", "constrained")
    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def error_bars(
    ax: Axes, rows: pd.DataFrame, x: str = "rho", scale: float = 1.0, **style: Any
) -> None:
    """Plot an experiment metric's ``mean`` against column ``x`` with its 95 % interval
    (``half_width``) as error bars, both divided by ``scale``. A point without an interval
    (one seed) gets no bar. ``style`` goes to ``errorbar``; markers default to size 3 with
    caps of 2."""
    style.setdefault("ms", 3)
    style.setdefault("capsize", 2)
    yerr = [0.0 if math.isnan(h) else float(h) / scale for h in rows["half_width"]]
    ax.errorbar(rows[x], rows["mean"] / scale, yerr=yerr, **style)
