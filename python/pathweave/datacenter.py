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

Multipath max-min fairness first tries the bottleneck bound. Call a link direction
*mandatory* for a connection when every one of its routes crosses it (a host's own links, for
a connection between hosts). Any allocation the routes can carry keeps, on every direction,
the sum of the rates of the connections for which it is mandatory within its capacity; those
constraints alone define a larger set, whose max-min fair allocation (the leximin maximum) is
progressive filling with each connection on its mandatory directions as if they were one
path. If the routes can carry that allocation, it is also the max-min fair allocation of the
smaller set: nothing there is leximin-better, since nothing in the larger set is. The check
is constructive: each connection's bound split evenly over its routes, if that fits within
every capacity (to 1e-9 of it), else one linear program (maximise s such that every
connection gets at least s times its bound; carried when s >= 1 - 1e-7). A permutation on a
full-bisection FatTree (Al-Fares et al., SIGCOMM 2008) takes this path: the bound is the host
rate, and the even split over the (k/2)^2 paths between pods loads no switch link beyond it.

Otherwise it is computed as a sequence of linear programs (the water-filling of Nace et al.,
"Max-min fairness and its applications to routing and load-balancing in communication
networks: a tutorial", IEEE Communications Surveys 2008, §IV): maximise t such that every
unfrozen connection gets at least t and every frozen one its frozen rate, over the path rates
y_p >= 0 within the link capacities. The connections whose constraint has a positive dual
price cannot all exceed t in any feasible allocation (the dual bounds their price-weighted sum
by t), so they are frozen at t; at least one is, since the prices sum to one. So is every
connection with a mandatory direction that the level fills (its frozen sharers at their
rates, its unfrozen ones at t, within 1e-7 of the capacity): none of them can exceed t either.
Repeat until every connection is frozen. HiGHS's interior-point solver
(``scipy.optimize.linprog``) solves each program, without crossover to a vertex: the interior
point's prices are strictly complementary, positive for every connection that is held to t in
all optimal solutions, so each program freezes a whole level rather than one connection of it
(within its tolerance: prices of held connections can fall below the threshold, which the
mandatory-direction test catches where a single direction holds them). A frozen rate is kept
as a lower bound a hair below it (1e-7, widened to 1e-6 and 1e-5 if the program is otherwise
infeasible, as the interior point's levels, each within about 1e-8, can add up).
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
# The routes carry the bottleneck bound when a program gives every connection at least this
# share less than one of it; a direction counts as full at a level within this share of its
# capacity (the hair the frozen rates are given).
_ROUTABLE = 1e-7
# How far below its frozen rate a frozen connection may be held in the later programs: the
# first that leaves the program feasible (the interior point's levels are within about 1e-8 of
# the true ones; over many levels that can add up to more than the first hair).
_HAIRS = (1e-7, 1e-6, 1e-5)


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
# routes over all connections. The multipath optimum of a FatTree permutation takes the
# bottleneck bound without a program (0.1 s for 62,162 routes, k = 16), but the hashed
# subflows' reference needs one where collisions leave the even split short: at k = 16 with
# 8 subflows per connection (7,606 distinct routes) a single program of about 14 s of CPU.
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
    route ``r`` with ``connection[r] == c`` (its rate the sum over them): the bottleneck bound
    when the routes carry it, else a sequence of linear programs (see the module)."""
    routes = len(starts) - 1
    cap = np.asarray(capacity_bps, dtype=np.float64)
    scale = float(np.max(cap)) if len(cap) and np.max(cap) > 0 else 1.0
    cap = cap / scale
    a = _incidence(starts, dirs, len(cap))
    # Connections by routes.
    member = sparse.csr_array(
        (np.ones(routes), (connection, np.arange(routes))), shape=(connections, routes)
    )
    mandatory = _mandatory(member, a)
    bound = _bottleneck_bound(member, mandatory, cap)
    if bound is not None and _routable(bound, connection, a, member, cap):
        return bound * scale
    return _water_fill(a, member, mandatory, cap) * scale


def _mandatory(member: sparse.csr_array, a: sparse.csr_array) -> sparse.csr_array:
    """Connections by link directions, 1 where every route of the connection crosses the
    direction (none for a connection without routes)."""
    crossings = sparse.coo_array(member @ (a > 0).astype(np.float64).T)
    routes = np.asarray(member.sum(axis=1)).ravel()
    every = crossings.data == routes[crossings.row]
    return sparse.csr_array(
        (np.ones(int(every.sum())), (crossings.row[every], crossings.col[every])),
        shape=crossings.shape,
    )


def _bottleneck_bound(
    member: sparse.csr_array, mandatory: sparse.csr_array, cap: FloatArray
) -> FloatArray | None:
    """Max-min rates with each connection held only by the directions all its routes cross
    (progressive filling, as if those were its one path); None when a connection with routes
    has no such direction (its bound is infinite). Connections without routes get 0."""
    routed = np.flatnonzero(np.asarray(member.sum(axis=1)).ravel() > 0)
    rows = sparse.csr_array(mandatory[routed])
    rows.sort_indices()
    if np.any(np.diff(rows.indptr) == 0):
        return None
    bound = np.zeros(member.shape[0])
    bound[routed] = max_min_single_path(
        rows.indptr.astype(np.int64), rows.indices.astype(np.int64), cap
    )
    return bound


def _routable(
    bound: FloatArray,
    connection: IntArray,
    a: sparse.csr_array,
    member: sparse.csr_array,
    cap: FloatArray,
) -> bool:
    """Whether the routes carry every connection's ``bound`` within the capacities: split
    evenly over each connection's routes if that fits, else by a linear program."""
    routes_of = np.asarray(member.sum(axis=1)).ravel()
    even = bound[connection] / routes_of[connection]
    if np.all(a @ even <= cap * (1 + _FULL)):
        return True
    # Maximise s such that every connection gets at least s times its bound.
    used = np.flatnonzero(np.asarray(a.sum(axis=1)).ravel() > 0)
    routed = np.flatnonzero(routes_of > 0)
    a_ub = sparse.vstack(
        [
            sparse.hstack([a[used], sparse.csr_array((len(used), 1))]),
            sparse.hstack([-member[routed], sparse.csr_array(bound[routed][:, None])]),
        ]
    )
    b_ub = np.concatenate([cap[used], np.zeros(len(routed))])
    bounds = [(0.0, None)] * a.shape[1] + [(0.0, 1.0)]
    res = _solve(a_ub, b_ub, bounds)
    return bool(res.x[-1] >= 1 - _ROUTABLE)


def _solve(a_ub: Any, b_ub: FloatArray, bounds: Any, feasible: bool = True) -> Any:
    """Maximise the last variable subject to ``a_ub @ x <= b_ub`` within ``bounds``:
    HiGHS's interior point without crossover (see the module), or its simplex when the
    interior point does not certify optimality. An infeasible program is an error when it
    should be ``feasible``, else None."""
    c = np.zeros(a_ub.shape[1])
    c[-1] = -1.0
    # HiGHS takes sparse matrices; scipy-stubs types A_ub as dense only.
    matrix = cast(Any, sparse.csc_array(a_ub))
    with warnings.catch_warnings():
        # run_crossover is passed to HiGHS as it is, with a warning that it is unknown.
        warnings.simplefilter("ignore", OptimizeWarning)
        res = linprog(
            c,
            A_ub=matrix,
            b_ub=b_ub,
            bounds=bounds,
            method="highs-ipm",
            options=cast(Any, {"run_crossover": "off"}),
        )
    if res.status != 0:
        # The interior point did not certify optimality: a vertex solution instead, whose
        # prices freeze at least one connection.
        res = linprog(c, A_ub=matrix, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status == 2 and not feasible:
        return None
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"the max-min program failed: {res.message}")
    return res


def _water_fill(
    a: sparse.csr_array, member: sparse.csr_array, mandatory: sparse.csr_array, cap: FloatArray
) -> FloatArray:
    """Max-min rates by the sequence of linear programs of the module's docstring."""
    connections = member.shape[0]
    used = np.flatnonzero(np.asarray(a.sum(axis=1)).ravel() > 0)
    link_rows = sparse.hstack([a[used], sparse.csr_array((len(used), 1))])
    cap = cap[used]
    # Connections without routes get nothing and take no part.
    routed = np.flatnonzero(np.asarray(member.sum(axis=1)).ravel() > 0)
    take = -member[routed]
    # Directions by routed connections, 1 where the direction holds every route of it.
    sharers = sparse.csr_array(mandatory[routed][:, used].T)
    rate = np.zeros(len(routed))
    active = np.ones(len(routed), dtype=bool)
    while active.any():
        # Variables: the route rates, then t. Rows: links, then connections: t - sum <= 0
        # for the active ones, -sum <= -rate for the frozen ones (a hair below the frozen
        # rate, so rounding in earlier solutions stays feasible; a wider one if it does not).
        t_col = sparse.csr_array(active.astype(np.float64)[:, None])
        a_ub = sparse.vstack([link_rows, sparse.hstack([take, t_col])])
        for hair in _HAIRS:
            b_ub = np.concatenate([cap, np.where(active, 0.0, -rate * (1 - hair))])
            res = _solve(a_ub, b_ub, (0, None), feasible=hair == _HAIRS[-1])
            if res is not None:
                break
        t = float(res.x[-1])
        prices = -np.asarray(res.ineqlin.marginals)[len(used) :]
        saturated = active & (prices > _PRICED)
        # A direction that every route of some connections crosses and that their rates,
        # the active ones at t, fill: none of them can exceed t.
        load = sharers @ np.where(active, t, rate)
        full = (load >= cap * (1 - _ROUTABLE)) & (sharers @ active.astype(np.float64) > 0)
        saturated |= active & (sharers.T @ full.astype(np.float64) > 0)
        if not saturated.any():
            saturated = active & (prices >= prices[active].max())
        rate[saturated] = t
        active &= ~saturated
    out = np.zeros(connections)
    out[routed] = rate
    return out


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
    progressive filling only, without the linear programs of the hashed subflows' reference
    (see ``SUMMARY_PATH_LIMIT``)."""
    cap = np.asarray(scenario.link_direction_rates_bps, dtype=np.float64)
    flows, starts, dirs = _routes(scenario, equal_cost=False)
    return _single_path(flows, starts, dirs, cap)


def multipath_optimum(scenario: Scenario) -> FloatArray:
    """``reference(scenario).multipath_bps`` alone: over every equal-cost route, by the
    bottleneck bound when the routes carry it (a permutation on a full-bisection FatTree:
    0.1 s at k = 16), else by the linear programs (see the module)."""
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
