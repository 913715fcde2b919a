"""Figure helpers for experiment definitions: Agg figures without pyplot's global state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["new_figure"]


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib ``Figure`` drawn with Agg (no pyplot, no display). ``kwargs`` go to
    ``Figure`` (``figsize``, …); the layout is "constrained" unless given."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kwargs.setdefault("layout", "constrained")
    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig
