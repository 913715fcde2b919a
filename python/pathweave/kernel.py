"""``pathweave kernel load | unload | status | bmc-manager``: the BPF congestion controllers.

The work is done by the Rust binary ``pathweave-kernel`` (crates/pathweave-kernel), which
holds the BPF programs and the libbpf loader; this module finds it and runs it with the
arguments as given, so its messages and exit codes are the command's. Where it was not built
(no BPF toolchain, or an installation of the Python package alone) the command says so and
exits 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["find_binary", "run"]

BINARY = "pathweave-kernel"
ENV = "PATHWEAVE_KERNEL_BIN"
EXIT_BAD_INPUT = 2


def find_binary() -> Path | None:
    """The ``pathweave-kernel`` binary: $PATHWEAVE_KERNEL_BIN, then PATH, then the build tree."""
    env = os.environ.get(ENV)
    if env:
        p = Path(env)
        return p if p.is_file() and os.access(p, os.X_OK) else None
    found = shutil.which(BINARY)
    if found:
        return Path(found)
    # An editable install (make setup): python/pathweave/kernel.py -> target/release/.
    built = Path(__file__).resolve().parents[2] / "target" / "release" / BINARY
    return built if built.is_file() else None


def run(argv: Sequence[str]) -> int:
    """Runs ``pathweave-kernel`` with ``argv``; returns its exit code."""
    binary = find_binary()
    if binary is None:
        where = f"${ENV} ({os.environ[ENV]})" if os.environ.get(ENV) else "PATH or target/release"
        print(
            f"pathweave kernel: error: the {BINARY} binary was not found in {where}; this "
            "installation has no BPF congestion controllers. Build them with `make kernel` "
            "(needs clang, bpftool, libbpf-dev, libelf-dev, zlib1g-dev and pkg-config).",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    return subprocess.call([str(binary), *argv])
