"""pathweave: multipath congestion control — a packet-level simulator and its analysis.

>>> import pathweave
>>> result = pathweave.run("scenarios/dumbbell.toml", seed=1)   # doctest: +SKIP
>>> result.flows[["name", "goodput_bps"]]                       # doctest: +SKIP
>>> result.write("results/dumbbell")                            # doctest: +SKIP

``run`` takes a scenario file or a ``Scenario`` (from ``load``/``parse``) and returns a
``Result`` of pandas DataFrames. Errors derive from ``PathweaveError``; a bad scenario raises
``ScenarioError``, whose ``file``, ``field``, ``value`` and ``message`` say what is wrong.
``Simulation`` runs a scenario step by step. The simulator itself is Rust (``pathweave._core``).
"""

from pathweave._core import PathweaveError, Scenario, ScenarioError, Simulation, __version__
from pathweave.api import Progress, Result, load, parse, run

__all__ = [
    "PathweaveError",
    "Progress",
    "Result",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "__version__",
    "load",
    "parse",
    "run",
]
