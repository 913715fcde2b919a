"""pathweave: multipath congestion control — a packet-level simulator and its analysis.

>>> import pathweave
>>> result = pathweave.run("scenarios/dumbbell.toml", seed=1)   # doctest: +SKIP
>>> result.flows[["name", "goodput_bps"]]                       # doctest: +SKIP
>>> result.write("results/dumbbell")                            # doctest: +SKIP

``run`` takes a scenario file or a ``Scenario`` (from ``load``/``parse``) and returns a
``Result`` of pandas DataFrames. Errors derive from ``PathweaveError``; a bad scenario raises
``ScenarioError``, whose ``file``, ``field``, ``value`` and ``message`` say what is wrong.
``Simulation`` runs a scenario step by step. The simulator itself is Rust (``pathweave._core``).

Sweeps (``pathweave.sweep``): ``load_plan`` expands a scenario's ``[sweep]`` table (or a
``Sweep``) into validated points; ``run_sweep`` runs them on local processes or a Dask
cluster, caching every run. ``pathweave.stats`` gives means with Student t intervals and
``pathweave.repro`` the reproductions of the papers' experiments (``pathweave reproduce``).
"""

from pathweave._core import PathweaveError, Scenario, ScenarioError, Simulation, __version__
from pathweave.api import Progress, Result, load, parse, run
from pathweave.sweep import Sweep, SweepError, load_plan, run_sweep

__all__ = [
    "PathweaveError",
    "Progress",
    "Result",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "Sweep",
    "SweepError",
    "__version__",
    "load",
    "load_plan",
    "parse",
    "run",
    "run_sweep",
]
