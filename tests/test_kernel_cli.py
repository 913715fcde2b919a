"""``pathweave kernel``: the BPF controllers' command line inside the extension.

The same Rust command line as the standalone ``pathweave-kernel`` binary; the package carries
the controllers when it was built where the BPF toolchain was present, and otherwise says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pathweave import _core, kernel


def kernel_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pathweave kernel ARGS``."""
    return subprocess.run(
        [sys.executable, "-m", "pathweave", "kernel", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _why_not_load() -> str | None:
    if not kernel.has_controllers():
        return "this build of the package has no BPF controllers"
    if sys.platform != "linux" or os.geteuid() != 0:
        return "loading BPF controllers needs root on Linux"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
    return None


WHY_NOT_LOAD = _why_not_load()


def test_the_package_says_whether_it_holds_the_controllers() -> None:
    """One build decision: the command line and the emulator both have the controllers, or
    neither; ``--version`` says which."""
    assert kernel.has_controllers() == _core.EMULATE_LOADS_CONTROLLERS
    proc = kernel_cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"pathweave-kernel {_core.__version__} ")
    assert ("not built" in proc.stdout) == (not kernel.has_controllers()), proc.stdout


def test_arguments_reach_the_command_and_its_exit_code_comes_back() -> None:
    proc = kernel_cli("frobnicate")
    assert proc.returncode == 2
    assert 'unknown command "frobnicate"' in proc.stderr
    assert "allowed: load, unload, status, bmc-manager" in proc.stderr
    assert "Traceback" not in proc.stderr
    help_ = kernel_cli("--help")
    assert help_.returncode == 0
    assert "bmc-manager" in help_.stdout
    assert "pw_kv" in help_.stdout
    bad = kernel_cli("bmc-manager", "--k", "nine")
    assert bad.returncode == 2
    assert "--k" in bad.stderr


@pytest.mark.skipif(kernel.has_controllers(), reason="this build has the BPF controllers")
def test_without_the_controllers_each_command_says_how_to_get_them() -> None:
    for cmd in ("load", "unload", "status", "bmc-manager"):
        proc = kernel_cli(cmd)
        assert proc.returncode == 2, (cmd, proc.stderr)
        assert "no BPF programs" in proc.stderr
        assert "apt-get install" in proc.stderr
        assert "reinstall the package" in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.skipif(WHY_NOT_LOAD is not None, reason=WHY_NOT_LOAD or "")
def test_the_package_loads_lists_and_unloads_its_controllers() -> None:
    """load, status and unload through the extension, under a prefix of the test's own; the
    controllers are registered exactly while loaded."""
    prefix = f"t{os.getpid() % 0xFFFFF:x}"
    names = [f"{prefix}_{a}" for a in ("lia", "olia", "balia", "coupled", "bmc", "kv")]
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    try:
        load = kernel_cli("load", "--prefix", prefix)
        assert load.returncode == 0, load.stderr
        assert all(n in available.read_text().split() for n in names)
        status = kernel_cli("status", "--prefix", prefix)
        assert status.returncode == 0, status.stderr
        for n in names:
            assert f"{n} " in status.stdout
            assert "registered" in status.stdout
    finally:
        unload = kernel_cli("unload", "--prefix", prefix)
    assert unload.returncode == 0, unload.stderr
    assert not set(names) & set(available.read_text().split())
    again = kernel_cli("status", "--prefix", prefix)
    assert again.returncode == 2
    assert "are loaded" in again.stderr
