"""bench/quic.py --quick: one 3-second run of each case (multipath QUIC and kernel MPTCP, over
shaped veth pairs and through the emulator) prints a row per case with a positive goodput and
a finite CPU time per packet, and leaves no namespace behind. Root only; about a minute.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "quic.py"
CASES = ("veth QUIC", "veth MPTCP", "emulated QUIC", "emulated MPTCP")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.platform != "linux" or os.geteuid() != 0,
        reason="needs root on Linux (network namespaces, tc, TUN devices)",
    ),
]


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_quick_run_prints_every_case() -> None:
    bench = subprocess.Popen(
        [sys.executable, str(BENCH), "--quick", "--runs", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = bench.communicate(timeout=600)
    finally:
        if bench.poll() is None:
            bench.terminate()  # it removes what it made on SIGTERM
            bench.communicate(timeout=60)
    # Its namespaces are named after its process id.
    assert not {n for n in _namespaces() if n.startswith(f"pwqb{bench.pid}")}
    if bench.returncode == 2:
        pytest.skip(err.strip())
    assert bench.returncode == 0, out + err
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("case "))
    columns = [c.strip() for c in header.split("  ") if c.strip()]
    rows = {}
    for line in lines:
        if line.startswith(CASES):
            cells = [c.strip() for c in line.split("  ") if c.strip()]
            rows[cells[0]] = dict(zip(columns, cells, strict=True))
    for case in CASES:
        row = next((v for k, v in rows.items() if k.startswith(case)), None)
        assert row is not None, (case, out)
        assert float(row["goodput Mbit/s"].split()[0]) > 0, row
        for col in ("machine µs/pkt", "processes µs/pkt"):
            us = float(row[col].split()[0])
            assert math.isfinite(us), (col, row)
            assert us > 0, (col, row)
