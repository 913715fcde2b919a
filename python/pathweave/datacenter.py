"""Flow-level references for scenarios over a generated fabric (``[topology]``).

``reference(scenario)`` computes the max-min fair rates of the scenario's congestion-controlled
flows with every flow active and long-running, at the links' rates at time zero:

* ``single_path_bps``: each connection on the path of its first subflow, as single-path TCP
  over ECMP would be (progressive filling: raise every unfrozen rate together until a link
  fills, freeze the connections through it, repeat);
* ``subflows_bps``: each connection over the paths its subflows were hashed onto, its rate the
  sum over them (multipath max-min, below);
* ``multipath_bps``: each connection over every equal-cost shortest path between its hosts
  (the multipath optimum MPTCP with enough subflows approaches, Raiciu et al., SIGCOMM 2011).

Multipath max-min fairness is computed as a sequence of linear programs (the water-filling of
Nace et al., "Max-min fairness and its applications to routing and load-balancing in
communication networks: a tutorial", IEEE Communications Surveys 2008, §IV): maximise t such
that every unfrozen connection gets at least t and every frozen one its frozen rate, over the
path rates y_p >= 0 within the link capacities. The connections whose constraint has a
positive dual price cannot all exceed t in any feasible allocation (the dual bounds their
price-weighted sum by t), so they are frozen at t; at least one is, since the prices sum to
one. Repeat until every connection is frozen. HiGHS's interior-point solver
(``scipy.optimize.linprog``) solves each program, without crossover to a vertex: the interior
point's prices are strictly complementary, positive for every connection that is held to t in
all optimal solutions, so each program freezes a whole level rather than one connection of it.
Flows from hand-written paths take part with their subflows' paths in all three.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse
from scipy.optimize import OptimizeWarning, linprog

from pathweave._core import Scenario

__all__ = [
    "SUMMARY_PATH_LIMIT",
    "Reference",
    "equal_cost_routes",
    "max_min_multipath",
    "max_min_single_path",
    "multipath_optimum",
    "reference",
    "single_path_reference",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# A link counts as full when its spare capacity is below this share of it.
_FULL = 1e-9
# A connection's dual price counts as positive above this (the prices sum to 1).
_PRICED = 1e-6


@dataclass(frozen=True)
class Reference:
    """Max-min fair rates per congestion-controlled flow, in bit/s (see the module)."""

    flows: list[str]
    single_path_bps: FloatArray
    subflows_bps: FloatArray
    multipath_bps: FloatArray

    def table(self) -> pd.DataFrame:
        """One row per flow: ``flow``, ``single_path_bps``, ``subflows_bps``,
        ``multipath_bps``."""
        return pd.DataFrame(
            {
                "flow": self.flows,
                "single_path_bps": self.single_path_bps,
                "subflows_bps": self.subflows_bps,
                "multipath_bps": self.multipath_bps,
            }
        )


def _routes(scenario: Scenario, equal_cost: bool) -> tuple[IntArray, IntArray, IntArray]:
    flows, starts, dirs = scenario.flow_routes(equal_cost)
    return (
        np.asarray(flows, dtype=np.int64),
        np.asarray(starts, dtype=np.int64),
        np.asarray(dirs, dtype=np.int64),
    )


# `pathweave run` prints the reference beside the goodput only up to this many equal-cost
# routes over all connections: the multipath optimum's linear programs took 2.9 s for 2,048
# (FatTree k = 8, permutation) and did not finish in four minutes for 65,536 (k = 16).
SUMMARY_PATH_LIMIT = 5_000


def equal_cost_routes(scenario: Scenario) -> int:
    """How many routes the multipath optimum weighs: every connection's equal-cost paths."""
    _, starts, _ = scenario.flow_routes(True)
    return max(len(starts) - 1, 0)


def _incidence(starts: IntArray, dirs: IntArray, directions: int) -> sparse.csr_array:
    """Link directions by routes, 1 where the route crosses the direction."""
    routes = len(starts) - 1
    cols = np.repeat(np.arange(routes), np.diff(starts))
    data = np.ones(len(dirs))
    return sparse.csr_array((data, (dirs, cols)), shape=(directions, routes))


def max_min_single_path(starts: IntArray, dirs: IntArray, capacity_bps: FloatArray) -> FloatArray:
    """Max-min fair rates of connections with one route each (route ``r``'s link directions
    at ``dirs[starts[r]:starts[r + 1]]``), by progressive filling."""
    routes = len(starts) - 1
    a = _incidence(starts, dirs, len(capacity_bps))
    rates = np.zeros(routes)
    active = np.ones(routes, dtype=bool)
    cap = np.asarray(capacity_bps, dtype=np.float64)
    while active.any():
        crossing = a @ active.astype(np.float64)
        spare = cap - a @ rates
        used = crossing > 0
        step = float(np.min(spare[used] / crossing[used]))
        rates[active] += step
        spare = cap - a @ rates
        full = used & (spare <= _FULL * cap)
        # Connections through a full link stop growing.
        blocked = (a.T @ full.astype(np.float64)) > 0
        frozen_now = active & blocked
        if not frozen_now.any():  # rounding: freeze those through the fullest link
            fullest = np.flatnonzero(used)[np.argmin(spare[used] / cap[used])]
            frozen_now = active & (a.T @ (np.arange(len(cap)) == fullest).astype(float) > 0)
        active &= ~frozen_now
    return rates


def max_min_multipath(
    connection: IntArray,
    starts: IntArray,
    dirs: IntArray,
    capacity_bps: FloatArray,
    connections: int,
) -> FloatArray:
    """Max-min fair rates of ``connections`` connections, connection ``c`` sending over every
    route ``r`` with ``connection[r] == c`` (its rate the sum over them), by a sequence of
    linear programs (see the module)."""
    routes = len(starts) - 1
    scale = float(np.max(capacity_bps))
    a = _incidence(starts, dirs, len(capacity_bps))
    used = np.flatnonzero(a.sum(axis=1) > 0)
    link_rows = a[used]
    cap = np.asarray(capacity_bps, dtype=np.float64)[used] / scale
    # Connections by routes.
    member = sparse.csr_array(
        (np.ones(routes), (connection, np.arange(routes))), shape=(connections, routes)
    )
    rate = np.zeros(connections)
    active = np.ones(connections, dtype=bool)
    # Connections without routes get nothing.
    active &= np.asarray(member.sum(axis=1)).ravel() > 0
    while active.any():
        act = np.flatnonzero(active)
        frozen = np.flatnonzero(~active & (np.asarray(member.sum(axis=1)).ravel() > 0))
        # Variables: the route rates, then t. Rows: links, active connections (t - sum <= 0),
        # frozen connections (-sum <= -rate).
        t_col = sparse.csr_array(np.ones((len(act), 1)))
        rows = [
            sparse.hstack([link_rows, sparse.csr_array((len(used), 1))]),
            sparse.hstack([-member[act], t_col]),
        ]
        rhs = [cap, np.zeros(len(act))]
        if len(frozen):
            rows.append(sparse.hstack([-member[frozen], sparse.csr_array((len(frozen), 1))]))
            # A hair below the frozen rate, so rounding in earlier solutions stays feasible.
            rhs.append(-rate[frozen] * (1 - 1e-7))
        c = np.zeros(routes + 1)
        c[-1] = -1.0
        # HiGHS takes sparse matrices; scipy-stubs types A_ub as dense only.
        a_ub = cast(Any, sparse.vstack(rows).tocsc())
        b_ub = np.concatenate(rhs)
        with warnings.catch_warnings():
            # run_crossover is passed to HiGHS as it is, with a warning that it is unknown.
            warnings.simplefilter("ignore", OptimizeWarning)
            res = linprog(
                c,
                A_ub=a_ub,
                b_ub=b_ub,
                bounds=(0, None),
                method="highs-ipm",
                options=cast(Any, {"run_crossover": "off"}),
            )
        if res.status != 0:
            # The interior point did not certify optimality: a vertex solution instead, whose
            # prices freeze at least one connection.
            res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
        if res.status != 0 or res.x is None:
            raise RuntimeError(f"the max-min program failed: {res.message}")
        t = float(res.x[-1])
        prices = -np.asarray(res.ineqlin.marginals)[len(used) : len(used) + len(act)]
        saturated = prices > _PRICED
        if not saturated.any():
            saturated = prices >= prices.max()
        rate[act[saturated]] = t
        active[act[saturated]] = False
    return rate * scale


def reference(scenario: Scenario) -> Reference:
    """The flow-level max-min references of ``scenario``'s congestion-controlled flows (see
    the module); a scenario without ``[topology]`` has its subflows' paths only, so
    ``multipath_bps`` equals ``subflows_bps``."""
    names = scenario.flow_names
    cap = np.asarray(scenario.link_direction_rates_bps, dtype=np.float64)
    flows, starts, dirs = _routes(scenario, equal_cost=False)
    order = np.unique(flows)
    index = np.searchsorted(order, flows)
    connections = len(order)
    single = _single_path(flows, starts, dirs, cap)
    sub_conn, sub_starts, sub_dirs = _unique_routes(index, starts, dirs)
    subflows = max_min_multipath(sub_conn, sub_starts, sub_dirs, cap, connections)
    # Equal-cost paths are distinct by construction.
    eflows, estarts, edirs = _routes(scenario, equal_cost=True)
    multipath = max_min_multipath(np.searchsorted(order, eflows), estarts, edirs, cap, connections)
    return Reference(
        flows=[names[int(i)] for i in order],
        single_path_bps=single,
        subflows_bps=subflows,
        multipath_bps=multipath,
    )


def single_path_reference(scenario: Scenario) -> FloatArray:
    """``reference(scenario).single_path_bps`` alone, in the order of ``reference``'s flows:
    progressive filling only, without the linear programs, so it stays fast on fabrics whose
    multipath optimum is out of reach (a FatTree with k = 16 and more)."""
    cap = np.asarray(scenario.link_direction_rates_bps, dtype=np.float64)
    flows, starts, dirs = _routes(scenario, equal_cost=False)
    return _single_path(flows, starts, dirs, cap)


def multipath_optimum(scenario: Scenario) -> FloatArray:
    """``reference(scenario).multipath_bps`` alone (the linear programs over every
    equal-cost route; see ``SUMMARY_PATH_LIMIT`` for what that costs)."""
    cap = np.asarray(scenario.link_direction_rates_bps, dtype=np.float64)
    flows, _, _ = _routes(scenario, equal_cost=False)
    order = np.unique(flows)
    eflows, estarts, edirs = _routes(scenario, equal_cost=True)
    return max_min_multipath(np.searchsorted(order, eflows), estarts, edirs, cap, len(order))


def _single_path(flows: IntArray, starts: IntArray, dirs: IntArray, cap: FloatArray) -> FloatArray:
    """Max-min rates with each connection on its first route (its first subflow's path)."""
    first = np.concatenate([[True], flows[1:] != flows[:-1]]) if len(flows) else flows
    first_idx = np.flatnonzero(first)
    single_starts = np.concatenate([[0], np.cumsum(starts[first_idx + 1] - starts[first_idx])])
    single_dirs = (
        np.concatenate([dirs[starts[r] : starts[r + 1]] for r in first_idx])
        if len(first_idx)
        else dirs
    )
    return max_min_single_path(single_starts, single_dirs, cap)


def _unique_routes(
    connection: IntArray, starts: IntArray, dirs: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """The routes without repeats within a connection (subflows hashed onto one path)."""
    seen: set[tuple[int, ...]] = set()
    keep: list[int] = []
    for r in range(len(starts) - 1):
        key = (int(connection[r]), *dirs[starts[r] : starts[r + 1]].tolist())
        if key not in seen:
            seen.add(key)
            keep.append(r)
    if len(keep) == len(starts) - 1:
        return connection, starts, dirs
    kept = np.asarray(keep, dtype=np.int64)
    lengths = starts[kept + 1] - starts[kept]
    new_starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    new_dirs = np.concatenate([dirs[starts[r] : starts[r + 1]] for r in keep]).astype(np.int64)
    return connection[kept], new_starts, new_dirs
