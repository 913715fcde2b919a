"""``pathweave quic serve | send``: transfers over multipath QUIC with pathweave's controllers.

The work is done inside the extension by crate ``pathweave-quic`` (its ``cli``): ``serve``
accepts and checks transfers; ``send`` opens one QUIC path per local address, runs the named
congestion controller coupled over them, prints a table per path and, with ``--out DIR``,
writes the same tables as ``pathweave run`` (``flows``, ``subflows`` and the series; no links)
with a ``run.json`` whose ``engine`` is ``"quic"``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pathweave import _core
from pathweave.api import TABLES, _atomic_directory, _frame, check_output_directory

__all__ = ["run", "write"]


def _option(argv: Sequence[str], name: str) -> str | None:
    """The value of ``name`` in ``argv`` (``--name VALUE`` or ``--name=VALUE``), if given."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def write(raw: _core._Results, out: Path) -> Path:
    """Write a ``send``'s tables and ``run.json`` to ``out`` (atomically, as a run's)."""
    with _atomic_directory(out) as tmp:
        for name in TABLES:
            frame = _frame(raw[name]) if name in raw else pd.DataFrame()  # type: ignore[literal-required]
            frame.to_parquet(tmp / f"{name}.parquet", engine="pyarrow", index=False)
        manifest = {
            "scenario": raw["scenario"],
            "engine": "quic",
            "seed": raw["seed"],
            "pathweave_version": _core.__version__,
            "format": "parquet",
            "tables": {name: f"{name}.parquet" for name in TABLES},
            "stats": dict(raw["stats"]),
        }
        text = json.dumps(manifest, indent=2, allow_nan=True)
        (tmp / "run.json").write_text(text + "\n", encoding="utf-8")
    return out


def run(argv: Sequence[str]) -> int:
    """Runs ``pathweave quic ARGV...``; returns its exit code."""
    out = _option(argv, "--out")
    if out is not None:
        try:
            check_output_directory(Path(out))
        except OSError as e:
            print(f"pathweave quic: --out: {e}", file=sys.stderr)
            return 2
    # The command writes to the process's own descriptors: what Python has buffered goes first.
    sys.stdout.flush()
    sys.stderr.flush()
    code, raw = _core.quic_main(list(argv))
    if code == 0 and raw is not None and out is not None:
        try:
            write(raw, Path(out))
        except OSError as e:
            print(f"pathweave quic: cannot write results to {out}: {e}", file=sys.stderr)
            return 1
        print(f"tables written to {out}")
    return int(code)
