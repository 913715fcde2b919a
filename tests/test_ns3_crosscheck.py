"""Cross-check against ns-3.44: the BMC dumbbell with 8 Reno flows in both simulators.

Slow (it builds a C++ program against the PyPI ns3 wheel and runs ns-3 for 100 simulated
seconds, about half a minute): run with ``pytest -m slow`` or ``make slow``. Both simulators
use SACK recovery and 42-byte headers (see bench/ns3/README.md for why); the tolerances are the
project's: aggregate goodput within 5 % and Jain's index within 0.05.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import pathweave

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.dumbbell import scenario_text  # noqa: E402
from bench.ns3.run_ns3 import run_ns3  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build the ns-3 program")
def test_dumbbell_matches_ns3_within_tolerance() -> None:
    ours = pathweave.run(pathweave.parse(scenario_text(8, 100.0), "dumbbell8.toml"), seed=1)
    ns3 = run_ns3(flows=8, duration_s=100.0, seed=1, sack=True)
    goodput = float(ours.flows["goodput_bps"].sum())
    jain = float(ours.fairness["jain"].iloc[0])
    assert abs(goodput / ns3["aggregate_goodput_bps"] - 1) <= 0.05, (goodput, ns3)
    assert abs(jain - ns3["jain_index"]) <= 0.05, (jain, ns3["jain_index"])
