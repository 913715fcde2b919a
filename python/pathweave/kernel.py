"""``pathweave kernel load | unload | status | bmc-manager``: the BPF congestion controllers.

The work is done inside the extension, by the same Rust command line as the standalone
``pathweave-kernel`` binary (crates/pathweave-kernel, ``cli``): a package built where the BPF
toolchain was present carries the controllers and loads them with no other build step. A
package built without them says so, and how to get them, with exit code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pathweave import _core

__all__ = ["has_controllers", "run"]


def has_controllers() -> bool:
    """Whether this installation was built with the BPF controllers."""
    return bool(_core.KERNEL_HAS_BPF)


def run(argv: Sequence[str]) -> int:
    """Runs ``pathweave kernel ARGV...``; returns its exit code."""
    # The command writes to the process's own descriptors: what Python has buffered goes first.
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.kernel_main(list(argv))
