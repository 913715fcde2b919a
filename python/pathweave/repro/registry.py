"""The registry of experiments.

Every module in ``pathweave.repro.experiments`` that defines ``EXPERIMENT`` (or a sequence
``EXPERIMENTS``) is registered the first time the registry is read, so adding a
reproduction is adding one file there (and its scenarios). Modules elsewhere, such as a
user's own experiments, are named in the environment variable ``PATHWEAVE_EXPERIMENTS``
(comma-separated module names) or call ``register`` themselves.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from types import ModuleType

from pathweave.repro.experiment import Experiment, ExperimentError

__all__ = ["ENV_MODULES", "UnknownExperiment", "experiments", "get", "register", "unregister"]

ENV_MODULES = "PATHWEAVE_EXPERIMENTS"
"""Environment variable naming extra modules of experiments, comma-separated."""

_REGISTRY: dict[str, Experiment] = {}
_discovered = False


class UnknownExperiment(KeyError):
    """No experiment has this id."""

    def __init__(self, experiment_id: str) -> None:
        super().__init__(experiment_id)
        self.experiment_id = experiment_id

    def __str__(self) -> str:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        return f"unknown experiment {self.experiment_id!r}; known: {known}"


def register(experiment: Experiment, *, replace: bool = False) -> Experiment:
    """Add ``experiment``; an id already taken is an error unless ``replace``."""
    _discover()
    if experiment.id in _REGISTRY and not replace and _REGISTRY[experiment.id] is not experiment:
        raise ExperimentError(f"experiment {experiment.id!r} is already registered")
    _REGISTRY[experiment.id] = experiment
    return experiment


def unregister(experiment_id: str) -> None:
    """Remove an experiment (tests use this to clean up)."""
    _REGISTRY.pop(experiment_id, None)


def get(experiment_id: str) -> Experiment:
    """The experiment with this id; raises ``UnknownExperiment``."""
    _discover()
    try:
        return _REGISTRY[experiment_id]
    except KeyError:
        raise UnknownExperiment(experiment_id) from None


def experiments() -> list[Experiment]:
    """Every registered experiment, by id."""
    _discover()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    # importlib, not `import … as`: the name `experiments` on pathweave.repro is this
    # module's function, not the subpackage.
    package = importlib.import_module("pathweave.repro.experiments")

    names = [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    names += [n.strip() for n in os.environ.get(ENV_MODULES, "").split(",") if n.strip()]
    for name in names:
        _register_module(importlib.import_module(name))


def _register_module(module: ModuleType) -> None:
    found = list(getattr(module, "EXPERIMENTS", ()))
    if hasattr(module, "EXPERIMENT"):
        found.append(module.EXPERIMENT)
    for experiment in found:
        if not isinstance(experiment, Experiment):
            raise ExperimentError(f"{module.__name__}: {experiment!r} is not an Experiment")
        if experiment.id in _REGISTRY and _REGISTRY[experiment.id] is not experiment:
            raise ExperimentError(
                f"{module.__name__}: experiment {experiment.id!r} is already registered"
            )
        _REGISTRY[experiment.id] = experiment
