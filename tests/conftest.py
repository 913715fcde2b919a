"""Shared fixtures: small scenarios written into each test's temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings

# Reproducible property tests that leave no example database in the work tree.
settings.register_profile("pathweave", database=None, derandomize=True, deadline=None)
settings.load_profile("pathweave")

# Two Reno flows with different RTTs through a RED bottleneck: RED's random early drops make
# the outcome depend on the seed, and five simulated seconds run in a few milliseconds.
SMALL = textwrap.dedent(
    """
    name = "small"
    description = "two Reno flows over a RED bottleneck"
    duration = "5s"
    seed = 7
    sample_interval = "50ms"

    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1, w_q = 0.002 }

    [[link]]
    name = "access{i}"
    count = 2
    rate = "100Mbps"
    delay = "{n} ms"

    [[flow]]
    name = "reno{i}"
    count = 2
    path = ["access{i}", "bottleneck"]
    start = "{i}00ms"
    """
)


def write_scenario(directory: Path, text: str, filename: str = "scenario.toml") -> Path:
    """Write scenario ``text`` to ``directory/filename`` and return the path."""
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def small_scenario(tmp_path: Path) -> Path:
    """The path of the SMALL scenario, written into the test's temporary directory."""
    return write_scenario(tmp_path, SMALL, "small.toml")


# SMALL with a [sweep] table: 2 x 2 points x 3 seeds = 12 runs of a few milliseconds each.
SWEEP = SMALL + textwrap.dedent(
    """
    [sweep]
    seeds = 3

    [sweep.grid]
    "link[0].rate" = ["5Mbps", "10Mbps"]
    "flow[0].count" = [1, 2]
    """
)


@pytest.fixture
def sweep_scenario(tmp_path: Path) -> Path:
    """The path of the SWEEP scenario, written into the test's temporary directory."""
    return write_scenario(tmp_path, SWEEP, "sweep.toml")


def run_cli(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pathweave ARGS`` as a user would and capture its output."""
    environ = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pathweave", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=timeout,
        check=False,
    )
