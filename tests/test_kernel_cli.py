"""``pathweave kernel``: runs the pathweave-kernel binary, or says why it cannot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pathweave import kernel


def kernel_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pathweave kernel ARGS``."""
    return subprocess.run(
        [sys.executable, "-m", "pathweave", "kernel", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def test_a_missing_binary_exits_2_saying_what_to_build(tmp_path: Path) -> None:
    proc = kernel_cli("status", env={kernel.ENV: str(tmp_path / "absent")})
    assert proc.returncode == 2
    assert "no BPF congestion controllers" in proc.stderr
    assert "make kernel" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(kernel.find_binary() is None, reason="pathweave-kernel is not built here")
def test_arguments_reach_the_binary_and_its_exit_code_comes_back() -> None:
    proc = kernel_cli("frobnicate")
    assert proc.returncode == 2
    assert "allowed: load, unload, status, bmc-manager" in proc.stderr
    help_ = kernel_cli("--help")
    assert help_.returncode == 0
    assert "bmc-manager" in help_.stdout
