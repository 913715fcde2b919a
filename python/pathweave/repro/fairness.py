"""The three fairness definitions of Becke, Dreibholz, Adhari & Rathgeb, "On the Fairness of
Transport Protocols in a Multi-Path Environment" (IEEE ICC 2012, §IV and §V), as the ideal
allocations they give on a topology. The reproductions ``fairness-shared`` and
``fairness-disjoint`` draw them as lines beside the measured curves, as the paper's Fig. 2 does.

A topology is a set of links with capacities and a set of flows, each a list of sub-flows,
each sub-flow the list of links it crosses (``Topology``). Capacities are in any unit (the
experiments pass the payload capacity in Mbit/s); the allocations come back in the same unit.

* **Link-centric sub-flow fairness** (§IV-A): on each link ``l`` every one of the ``m``
  sub-flows crossing it gets ``rho(l)/m``; a sub-flow gets the smallest such share along its
  path. Flow fairness as the single-path Internet knows it, applied to sub-flows.
* **Link-centric flow fairness** (§IV-B): on each link every one of the ``n`` flows crossing
  it gets ``rho(l)/n``, shared equally among that flow's sub-flows on the link; a sub-flow gets
  the smallest such share along its path.
* **Network-centric flow fairness** (§IV-C, generalised as in §V-C): the flows are fair as
  wholes across the network. For flows that all share the same paths it is
  ``sum(rho(P_i))/n`` each; for the paper's Scenario 3 it is the paper's
  ``B_0^0 = rho(alpha)``, ``B_0^1 = max(0, (rho(beta) - B_0^0)/2)``,
  ``B_1^0 = rho(beta) - B_0^1``. In general it is computed here as the max-min fair
  allocation of the flows' totals when each flow may split its traffic freely over its
  sub-flows (progressive filling with linear programs), which gives both formulas.

The link-centric definitions, like the paper's, do not hand a sub-flow's unused share on one
link to others (a sub-flow limited elsewhere keeps its nominal share): for the paper's
topologies, where every sub-flow has one bottleneck, that makes no difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Topology",
    "disjoint_topology",
    "link_centric_flow",
    "link_centric_subflow",
    "network_centric_flow",
    "shared_topology",
    "totals",
]

_EPS = 1e-9


@dataclass(frozen=True)
class Topology:
    """Links with capacities and flows as lists of sub-flow paths (lists of link names)."""

    capacity: Mapping[str, float]
    flows: Mapping[str, Sequence[Sequence[str]]]

    def __post_init__(self) -> None:
        for name, subflows in self.flows.items():
            if not subflows:
                raise ValueError(f"flow {name!r} has no sub-flows")
            for path in subflows:
                if not path:
                    raise ValueError(f"flow {name!r} has a sub-flow without links")
                for link in path:
                    if link not in self.capacity:
                        raise ValueError(f"flow {name!r} crosses unknown link {link!r}")
        for link, c in self.capacity.items():
            if not c >= 0:
                raise ValueError(f"link {link!r}: capacity {c!r} must be >= 0")


def link_centric_subflow(top: Topology) -> dict[str, list[float]]:
    """Per flow, each sub-flow's share under link-centric sub-flow fairness (§IV-A)."""
    crossing: dict[str, int] = dict.fromkeys(top.capacity, 0)
    for subflows in top.flows.values():
        for path in subflows:
            for link in set(path):
                crossing[link] += 1
    return {
        name: [min(top.capacity[link] / crossing[link] for link in path) for path in subflows]
        for name, subflows in top.flows.items()
    }


def link_centric_flow(top: Topology) -> dict[str, list[float]]:
    """Per flow, each sub-flow's share under link-centric flow fairness (§IV-B)."""
    flows_on: dict[str, int] = dict.fromkeys(top.capacity, 0)
    for subflows in top.flows.values():
        for link in {link for path in subflows for link in path}:
            flows_on[link] += 1
    out: dict[str, list[float]] = {}
    for name, subflows in top.flows.items():
        shares = []
        for path in subflows:
            per_link = []
            for link in path:
                mine = sum(1 for p in subflows if link in p)
                per_link.append(top.capacity[link] / flows_on[link] / mine)
            shares.append(min(per_link))
        out[name] = shares
    return out


def network_centric_flow(top: Topology) -> dict[str, float]:
    """Per flow, its total under network-centric flow fairness (§IV-C, §V-C): the max-min fair
    totals when every flow may split its traffic over its sub-flows as it likes. (The split
    itself is not unique, so only totals are returned.)"""
    import numpy as np
    from scipy.optimize import linprog

    names = list(top.flows)
    links = list(top.capacity)
    # Variables: one rate per sub-flow, then the common level t.
    index: list[tuple[int, Sequence[str]]] = [
        (f, path) for f, name in enumerate(names) for path in top.flows[name]
    ]
    nvar = len(index) + 1
    a_cap = np.zeros((len(links), nvar))
    for j, (_, path) in enumerate(index):
        for link in set(path):
            a_cap[links.index(link), j] = 1.0
    b_cap = np.array([top.capacity[link] for link in links], dtype=float)

    def flow_row(f: int) -> np.ndarray:
        row = np.zeros(nvar)
        for j, (g, _) in enumerate(index):
            if g == f:
                row[j] = 1.0
        return row

    fixed: dict[int, float] = {}
    while len(fixed) < len(names):
        free = [f for f in range(len(names)) if f not in fixed]
        # Maximise t with every free flow >= t and every fixed flow >= its level.
        rows, rhs = [a_cap], [b_cap]
        for f in free:
            r = -flow_row(f)
            r[-1] = 1.0
            rows.append(r[None, :])
            rhs.append(np.zeros(1))
        for f, level in fixed.items():
            rows.append(-flow_row(f)[None, :])
            rhs.append(np.array([-level + _EPS]))
        cost = np.zeros(nvar)
        cost[-1] = -1.0
        res = linprog(cost, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs), bounds=(0, None))
        if not res.success or res.x is None:
            raise ValueError(f"network-centric allocation: {res.message}")
        level = float(res.x[-1])
        # Freeze the free flows that cannot rise above the level while the others keep it.
        frozen = []
        for f in free:
            rows2, rhs2 = [a_cap], [b_cap]
            for g in free:
                if g != f:
                    rows2.append(-flow_row(g)[None, :])
                    rhs2.append(np.array([-level + _EPS]))
            for g, lv in fixed.items():
                rows2.append(-flow_row(g)[None, :])
                rhs2.append(np.array([-lv + _EPS]))
            obj = -flow_row(f)
            obj[-1] = 0.0
            res2 = linprog(obj, A_ub=np.vstack(rows2), b_ub=np.concatenate(rhs2), bounds=(0, None))
            best = -float(res2.fun) if res2.success and res2.fun is not None else level
            if best <= level + 1e-7 * max(1.0, level):
                frozen.append(f)
        for f in frozen or free:
            fixed[f] = level
    # Round off the solver's last digits (the levels are sums of capacities over counts).
    return {name: float(f"{fixed[f]:.9g}") for f, name in enumerate(names)}


def totals(allocation: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Per flow, the sum of its sub-flows' shares."""
    return {name: float(sum(shares)) for name, shares in allocation.items()}


def shared_topology(rho_alpha: float) -> Topology:
    """The paper's Scenario 2 (Fig. 1(b)): the multipath flow ``multi`` with two sub-flows and
    the single-path flow ``single``, all through the one bottleneck alpha."""
    return Topology(
        capacity={"alpha": rho_alpha},
        flows={"multi": [["alpha"], ["alpha"]], "single": [["alpha"]]},
    )


def disjoint_topology(rho_alpha: float, rho_beta: float) -> Topology:
    """The paper's Scenario 3 (Fig. 1(c)): ``multi`` over the disjoint paths alpha and beta,
    ``single`` over beta."""
    return Topology(
        capacity={"alpha": rho_alpha, "beta": rho_beta},
        flows={"multi": [["alpha"], ["beta"]], "single": [["beta"]]},
    )
