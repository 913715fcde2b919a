"""The scenarios shipped with pathweave: the experiments' scenario files and the examples.

They are package data (``pathweave/scenarios``; ``scenarios/`` at the repository root links
there), so an installed pathweave finds them from any directory. ``$PATHWEAVE_SCENARIOS``
names another directory to use instead. A scenario is named by its path below that directory without
``.toml`` (``headline``, ``lia-two-links/s1``); a directory of scenarios by its path
(``lia-two-links``).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ENV_SCENARIOS",
    "CatalogError",
    "ShippedScenario",
    "copy_scenario",
    "find",
    "scenarios",
    "scenarios_dir",
]

ENV_SCENARIOS = "PATHWEAVE_SCENARIOS"
"""Environment variable: a scenarios directory to use instead of the shipped one."""

_PACKAGED = Path(__file__).resolve().parent / "scenarios"


class CatalogError(ValueError):
    """A scenario name that is not shipped, or a copy that cannot be made; ``str()`` says
    which and what is allowed."""


@dataclass(frozen=True)
class ShippedScenario:
    """One shipped scenario file."""

    name: str
    """Its path below the scenarios directory, without ``.toml``."""
    path: Path
    summary: str
    """The first line of its leading comment, or ``""``."""


def scenarios_dir() -> Path:
    """The directory scenarios are read from: ``$PATHWEAVE_SCENARIOS`` if set, else the
    package's own."""
    env = os.environ.get(ENV_SCENARIOS)
    return Path(env) if env else _PACKAGED


def scenarios(root: Path | None = None) -> list[ShippedScenario]:
    """Every scenario file below ``root`` (default: ``scenarios_dir()``), sorted by name."""
    root = scenarios_dir() if root is None else root
    found = []
    for path in sorted(root.rglob("*.toml")):
        name = path.relative_to(root).with_suffix("").as_posix()
        found.append(ShippedScenario(name, path, _summary(path)))
    return found


def find(name: str, root: Path | None = None) -> Path:
    """The file (``NAME.toml``) or directory (``NAME``) called ``name``."""
    root = scenarios_dir() if root is None else root
    clean = name.strip().removesuffix(".toml").strip("/")
    parts = Path(clean).parts
    if clean and ".." not in parts and not Path(clean).is_absolute():
        for candidate in (root / f"{clean}.toml", root / clean):
            if candidate.is_file() or (candidate.is_dir() and any(candidate.rglob("*.toml"))):
                return candidate
    raise CatalogError(
        f"no scenario or scenario directory named {name!r} in {root}; "
        "'pathweave scenarios list' shows the names"
    )


def copy_scenario(name: str, dest: str | os.PathLike[str], root: Path | None = None) -> list[Path]:
    """Copy the scenario (or directory of scenarios) ``name`` into the directory ``dest``,
    created if missing; return the files written. Existing files are never overwritten."""
    source = find(name, root)
    target_dir = Path(dest)
    if target_dir.exists() and not target_dir.is_dir():
        raise CatalogError(f"{target_dir}: not a directory")
    if source.is_file():
        pairs = [(source, target_dir / source.name)]
    else:
        pairs = [
            (p, target_dir / source.name / p.relative_to(source))
            for p in sorted(source.rglob("*.toml"))
        ]
    clashes = [t for _, t in pairs if t.exists()]
    if clashes:
        raise CatalogError(
            f"{clashes[0]} already exists; copy into another directory or remove it first"
        )
    for src, target in pairs:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return [t for _, t in pairs]


def _summary(path: Path) -> str:
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline().strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return first.lstrip("#").strip() if first.startswith("#") else ""
