"""The Python module's allocator asks for huge pages behind the heap of many-flow runs and
leaves small runs alone (``pathweave_sim::hugepages``; the mechanism itself is tested by
``crates/pathweave-sim/tests/hugepages.rs``). The kernel's account of the process's mappings
(``/proc/self/smaps``, where memory advised ``MADV_HUGEPAGE`` shows ``hg`` in ``VmFlags``)
is read by a fresh interpreter after it built and briefly ran a simulation."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

# Counts the mappings advised for huge pages after a run of N flows (argv[1]).
CHILD = """
import sys
from pathweave import _core
n = int(sys.argv[1])
text = f'''
name = "many"
duration = "1s"
[[link]]
name = "bottleneck"
rate = "1Gbps"
delay = "10ms"
queue = {{ type = "droptail", limit = "1000pkt" }}
[[link]]
name = "src{{i}}"
count = {n}
rate = "100Mbps"
delay = "1ms"
queue = {{ type = "droptail", limit = "100pkt" }}
[[flow]]
name = "f{{i}}"
count = {n}
algorithm = "reno"
path = ["src{{i}}", "bottleneck"]
start = "{{i}} us"
'''
sim = _core.Simulation(_core.parse_scenario(text, "many"), None)
sim.advance(0.05)
with open("/proc/self/smaps") as f:
    print(sum(1 for line in f if line.startswith("VmFlags:") and " hg" in line))
"""


def _advised_mappings(flows: int) -> int:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(flows)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    platform.system() != "Linux"
    or platform.libc_ver()[0] != "glibc"
    or not THP.exists()
    or "[never]" in THP.read_text(),
    reason="needs glibc Linux with transparent huge pages not set to never",
)
def test_a_many_flow_run_gets_huge_pages_and_a_small_one_does_not() -> None:
    assert _advised_mappings(8) == 0
    # MIN_FLOWS in crates/pathweave-sim/src/hugepages.rs.
    assert _advised_mappings(4096) >= 1
