"""Independent copies of one scenario side by side in a single file.

An emulated run takes real time, and one run of a scenario is one sample of a noisy
quantity. ``replicate(doc, n)`` returns a scenario with ``n`` copies of every link and every
flow, each copy on its own links (names suffixed ``_r0`` … ``_r{n-1}``). The copies share no
link, so they do not interact: in the simulator each link has its own random stream, in the
emulator each copy's packets cross only that copy's emulated links. One emulated run of the
replicated file therefore yields ``n`` samples in the wall time of one, as long as the total
load stays inside the emulator's real-time limit (``pathweave emulate`` refuses it otherwise).

    doc = pathweave._core.toml_loads(text, "headline.toml")
    three = pathweave.parse(tomli_w.dumps(replicate(doc, 3)), "headline x3")

``replica_of("mp_r2")`` gives back ``("mp", 2)``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

__all__ = ["MAX_COPIES", "replica_of", "replicate"]

MAX_COPIES = 64
_SUFFIX = re.compile(r"^(?P<base>.*)_r(?P<copy>\d+)$")


def _rename_path(path: list[str], copy_index: int) -> list[str]:
    # "~name" crosses a link in its reverse direction; the marker stays in front.
    return [f"{hop}_r{copy_index}" for hop in path]


def replicate(doc: dict[str, Any], copies: int) -> dict[str, Any]:
    """``doc`` (a parsed scenario table) with ``copies`` independent copies of its links and
    flows. Top-level settings (duration, seed, sampling, ``[tcp]``) are shared. Raises
    ``ValueError`` for a number of copies outside 1 … ``MAX_COPIES``."""
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= MAX_COPIES:
        raise ValueError(f"copies: {copies!r}: give a whole number from 1 to {MAX_COPIES}")
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k not in ("link", "flow")}
    links: list[dict[str, Any]] = []
    flows: list[dict[str, Any]] = []
    for r in range(copies):
        for link in doc.get("link", []):
            lk = copy.deepcopy(link)
            lk["name"] = f"{link['name']}_r{r}"
            links.append(lk)
        for flow in doc.get("flow", []):
            f = copy.deepcopy(flow)
            f["name"] = f"{flow['name']}_r{r}"
            if "group" in f:
                f["group"] = f"{flow['group']}_r{r}"
            if "path" in f:
                f["path"] = _rename_path(f["path"], r)
            for sub in f.get("subflows", []):
                sub["path"] = _rename_path(sub["path"], r)
            flows.append(f)
    out["link"] = links
    out["flow"] = flows
    return out


def replica_of(name: str) -> tuple[str, int]:
    """The original name and copy index of a replicated link or flow name. Raises
    ``ValueError`` for a name without a copy suffix."""
    m = _SUFFIX.match(name)
    if m is None:
        raise ValueError(f"{name!r} is not a replicated name (NAME_rK)")
    return m["base"], int(m["copy"])
