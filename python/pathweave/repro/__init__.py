"""Reproductions of the papers' experiments: ``pathweave reproduce``.

An experiment (``Experiment``) is scenario files under ``scenarios/<id>/`` plus a small
definition in ``pathweave/repro/experiments/<id>.py``: its sweep (full and quick), how one
run reduces to the reported metrics, its figures, and the published values with their
tolerances (``Published`` with ``Relative``, ``Absolute``, ``Between``, ``AtLeast`` or
``AtMost``). ``run_experiment`` runs one and writes its results; ``pathweave.report`` gathers
them into one HTML page. See ``docs/reproduce.md``.
"""

# The subpackage of experiment definitions is imported before the function `experiments` is
# bound below: importing a subpackage for the first time sets it as an attribute of its parent,
# which would otherwise replace the function once the registry discovers the definitions.
import pathweave.repro.experiments as _definitions  # noqa: F401
from pathweave.repro.experiment import (
    Absolute,
    AtLeast,
    AtMost,
    Between,
    Experiment,
    ExperimentData,
    ExperimentError,
    Published,
    Relative,
    Tolerance,
)
from pathweave.repro.figures import new_figure
from pathweave.repro.registry import UnknownExperiment, experiments, get, register, unregister
from pathweave.repro.runner import Outcome, run_experiment, scenarios_dir

__all__ = [
    "Absolute",
    "AtLeast",
    "AtMost",
    "Between",
    "Experiment",
    "ExperimentData",
    "ExperimentError",
    "Outcome",
    "Published",
    "Relative",
    "Tolerance",
    "UnknownExperiment",
    "experiments",
    "get",
    "new_figure",
    "register",
    "run_experiment",
    "scenarios_dir",
    "unregister",
]
