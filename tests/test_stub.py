"""The type stub ``pathweave/_core.pyi`` must describe the compiled module exactly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_core_stub_matches_the_extension_module(tmp_path: Path) -> None:
    pytest.importorskip("mypy.stubtest", reason="mypy is in the 'test' extra")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "pathweave._core"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # keeps mypy's cache out of the work tree
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
