"""Generated fabrics from Python: the validate summary, the flow-level max-min references
(against hand-computed values), a packet-level FatTree permutation beside its multipath
optimum, and bad input refused with one line and exit code 2."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pathweave
from conftest import run_cli, write_scenario
from pathweave import datacenter
from pathweave.datacenter import (
    max_min_multipath,
    max_min_single_path,
    multipath_optimum,
    reference,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "datacenter" / "fat-tree-permutation.toml"


def _fat_tree(k: int, traffic: str = 'pattern = "permutation"', extra: str = "") -> str:
    return textwrap.dedent(
        f"""
        duration = "1s"
        [topology]
        type = "fat-tree"
        k = {k}
        link_rate = "100Mbps"
        {extra}
        [traffic]
        {traffic}
        """
    )


def _csr(routes: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.concatenate([[0], np.cumsum([len(r) for r in routes])]).astype(np.int64)
    return starts, np.asarray([d for r in routes for d in r], dtype=np.int64)


def test_two_flows_on_one_link_get_half_each() -> None:
    starts, dirs = _csr([[0], [0]])
    rates = max_min_single_path(starts, dirs, np.array([10.0]))
    np.testing.assert_allclose(rates, [5.0, 5.0])


def test_progressive_filling_gives_the_spare_capacity_to_the_unconstrained_flow() -> None:
    # A crosses link 0 (10); B crosses links 0 and 1 (4): B is held to 4, A takes the 6 left.
    starts, dirs = _csr([[0], [0, 1]])
    rates = max_min_single_path(starts, dirs, np.array([10.0, 4.0]))
    np.testing.assert_allclose(rates, [6.0, 4.0])


def test_multipath_max_min_shares_two_links_among_three_connections() -> None:
    # Connection 0 may use link 0 or link 1, connection 1 only link 0, connection 2 only link
    # 1; both links carry 10, so all three get 20/3.
    starts, dirs = _csr([[0], [1], [0], [1]])
    conn = np.array([0, 0, 1, 2])
    rates = max_min_multipath(conn, starts, dirs, np.array([10.0, 10.0]), 3)
    np.testing.assert_allclose(rates, [20 / 3] * 3, rtol=1e-6)


def test_multipath_max_min_freezes_in_levels() -> None:
    # Link 0 (2) is shared by connections 0 and 1; connection 1 may also use link 1 (10),
    # which connection 2 uses alone. Max-min: 0 gets 2 (link 0 alone is its only path),
    # leaving 1 and 2 to share link 1 at 5 each.
    starts, dirs = _csr([[0], [0], [1], [1]])
    conn = np.array([0, 1, 1, 2])
    rates = max_min_multipath(conn, starts, dirs, np.array([2.0, 10.0]), 3)
    np.testing.assert_allclose(rates, [2.0, 5.0, 5.0], rtol=1e-6)


def test_the_bottleneck_bound_in_two_levels_routed_by_a_program() -> None:
    # Links 0 (2), 1 (10), 2 (10). Connection 0 over [0, 1] or [0, 2], connection 1 over
    # [0, 1], connection 2 over [2]. Link 0 holds 0 and 1 to 1 each, link 2 holds 2 to 10.
    # Split evenly, connection 0 would put 0.5 on link 2 (10.5 > 10); sent over link 1 it
    # fits: max-min is 1, 1, 10.
    starts, dirs = _csr([[0, 1], [0, 2], [0, 1], [2]])
    conn = np.array([0, 0, 1, 2])
    rates = max_min_multipath(conn, starts, dirs, np.array([2.0, 10.0, 10.0]), 3)
    np.testing.assert_allclose(rates, [1.0, 1.0, 10.0], rtol=1e-6)


def test_a_bottleneck_bound_the_routes_cannot_carry_falls_back_to_the_programs() -> None:
    # Connection 0 over [0, 1] or [0, 2] (link 0: 10, its own); connections 1 and 2 over
    # links 1 and 2 (2 each). The bound gives 0 its link's 10, but it can only get through
    # links 1 and 2, which the three share: 4/3 each.
    starts, dirs = _csr([[0, 1], [0, 2], [1], [2]])
    conn = np.array([0, 0, 1, 2])
    rates = max_min_multipath(conn, starts, dirs, np.array([10.0, 2.0, 2.0]), 3)
    np.testing.assert_allclose(rates, [4 / 3] * 3, rtol=1e-6)


def test_one_route_per_connection_is_progressive_filling() -> None:
    # All-to-all over one hashed path each: multipath max-min over single routes is the
    # single-path allocation (the programs alone were 0.45 % off on this one).
    sc = pathweave.parse(_fat_tree(4, 'pattern = "all-to-all"\nseed = 2'))
    ref = reference(sc)
    assert len(ref.flows) == 240
    np.testing.assert_allclose(ref.subflows_bps, ref.single_path_bps, rtol=1e-9)


def test_hashed_subflows_reference_survives_many_levels() -> None:
    # Three hashed subflows per connection: the programs run through a dozen levels, whose
    # rounding made a later one infeasible before the frozen rates' hair could widen.
    sc = pathweave.parse(
        _fat_tree(8, 'pattern = "permutation"\nalgorithm = "lia"\nsubflows = 3', "").replace(
            'duration = "1s"', 'duration = "1s"\nseed = 2'
        )
    )
    ref = reference(sc)
    # More routes, a max-min allocation no worse for the worst off (leximin order).
    assert ref.subflows_bps.min() >= ref.single_path_bps.min() * (1 - 1e-6)
    assert ref.subflows_bps.min() <= ref.multipath_bps.min() * (1 + 1e-6)
    assert np.all(ref.subflows_bps <= 100e6 * (1 + 1e-6))
    assert ref.subflows_bps.mean() < 0.9 * ref.multipath_bps.mean()


def _count_programs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    solve = datacenter.linprog

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return solve(*args, **kwargs)

    monkeypatch.setattr(datacenter, "linprog", counted)
    return calls


def test_fat_tree_permutation_needs_no_program(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_programs(monkeypatch)
    sc = pathweave.parse(_fat_tree(8, 'pattern = "permutation"\nalgorithm = "lia"'))
    np.testing.assert_allclose(multipath_optimum(sc), 100e6, rtol=1e-12)
    assert calls[0] == 0


def test_water_filling_freezes_connections_held_by_their_own_links(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without the bound, the programs alone: every connection is held by its host links, so
    # the first level freezes all 128 (the prices alone froze 124 and then one per program).
    monkeypatch.setattr(datacenter, "_routable", lambda *args: False)
    calls = _count_programs(monkeypatch)
    sc = pathweave.parse(_fat_tree(8, 'pattern = "permutation"\nalgorithm = "lia"'))
    np.testing.assert_allclose(multipath_optimum(sc), 100e6, rtol=1e-6)
    assert calls[0] == 1


def test_fat_tree_k16_permutation_multipath_optimum_is_the_host_rate() -> None:
    # Full bisection (Al-Fares et al. 2008; Raiciu et al. 2011): 1,024 connections of 64
    # equal-cost paths each (62,162 routes: pairs within a pod have fewer), computed.
    sc = pathweave.parse(_fat_tree(16, 'pattern = "permutation"\nalgorithm = "lia"'))
    t0 = time.perf_counter()
    rates = multipath_optimum(sc)
    print(f"multipath optimum, FatTree k = 16 permutation: {time.perf_counter() - t0:.2f} s")
    assert len(rates) == 1024
    np.testing.assert_allclose(rates, 100e6, rtol=1e-12)


@pytest.mark.slow
def test_fat_tree_k16_water_filling_agrees_with_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The programs alone over all 62,162 routes (one level, about 15 s of CPU).
    monkeypatch.setattr(datacenter, "_routable", lambda *args: False)
    sc = pathweave.parse(_fat_tree(16, 'pattern = "permutation"\nalgorithm = "lia"'))
    t0 = time.perf_counter()
    rates = multipath_optimum(sc)
    print(f"water-filling, FatTree k = 16 permutation: {time.perf_counter() - t0:.2f} s")
    np.testing.assert_allclose(rates, 100e6, rtol=1e-6)


def test_fat_tree_permutation_multipath_optimum_is_the_link_rate() -> None:
    sc = pathweave.parse(_fat_tree(4, 'pattern = "permutation"\nalgorithm = "lia"'))
    ref = reference(sc)
    assert len(ref.flows) == 16
    # Full bisection: every host can send at its link rate over all equal-cost paths.
    np.testing.assert_allclose(ref.multipath_bps, 100e6, rtol=1e-6)
    assert np.all(ref.single_path_bps <= 100e6 * (1 + 1e-9))
    assert np.all(ref.subflows_bps >= ref.single_path_bps * (1 - 1e-9))


def test_random_traffic_reference_caps_receivers_by_their_link() -> None:
    # Random destinations: a host receiving from m senders splits its 100 Mbit/s m ways (and
    # nothing else is tighter in a full-bisection FatTree with multipath routing).
    sc = pathweave.parse(_fat_tree(4, 'pattern = "random"\nseed = 5'))
    ref = reference(sc)
    dests = [name.split("-")[1] for name in ref.flows]
    fan_in = np.array([dests.count(d) for d in dests])
    np.testing.assert_allclose(ref.multipath_bps, 100e6 / fan_in, rtol=1e-6)


def test_validate_prints_the_fabric_and_notes_crowded_subflows(tmp_path: Path) -> None:
    path = write_scenario(
        tmp_path, _fat_tree(4, 'pattern = "permutation"\nalgorithm = "lia"\nsubflows = 8')
    )
    proc = run_cli("validate", path)
    assert proc.returncode == 0, proc.stderr
    assert "topology: fat-tree k=4: 16 hosts, 20 switches, 48 links" in proc.stdout
    assert "48 links, 16 flows" in proc.stdout
    # 8 subflows exceed every pair's paths (at most 4 in a k = 4 FatTree).
    assert "note: 16 flows have more subflows than equal-cost paths" in proc.stderr


def test_bcube_and_vl2_counts_from_their_definitions(tmp_path: Path) -> None:
    bcube = pathweave.parse(
        'duration = "1s"\n[topology]\ntype = "bcube"\nn = 3\nk = 2\nlink_rate = "1Gbps"\n'
        '[traffic]\npattern = "random"\n'
    )
    # n^(k+1) = 27 servers, (k+1)·n^k = 27 switches, (k+1)·n^(k+1) = 81 links.
    topo = bcube.topology
    assert topo is not None
    assert (topo["hosts"], topo["switches"], topo["links"]) == (27, 27, 81)
    vl2 = pathweave.parse(
        'duration = "1s"\n[topology]\ntype = "vl2"\nda = 8\ndi = 6\nhosts_per_tor = 4\n'
        'link_rate = "1Gbps"\n[traffic]\npattern = "permutation"\n'
    )
    # 12 ToRs of 4 hosts; 12 + 6 + 4 switches; 48 + 24 + 24 links.
    topo = vl2.topology
    assert topo is not None
    assert (topo["hosts"], topo["switches"], topo["links"]) == (48, 22, 96)


def test_fat_tree_permutation_runs_within_its_multipath_optimum(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", EXAMPLE, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "flow-level reference" in proc.stdout
    assert "multipath optimum" in proc.stdout
    result = pathweave.run(EXAMPLE)
    ref = reference(result.scenario)
    goodput = result.flows.set_index("name")["goodput_bps"].reindex(ref.flows).to_numpy()
    assert np.all(goodput > 0)
    # Packet-level goodput cannot beat the fluid optimum but for start-up rounding.
    assert np.all(goodput <= ref.multipath_bps * 1.03), (goodput, ref.multipath_bps)
    # The subflows table shows the hashed paths through the generated links.
    assert result.subflows["path"].str.contains("host").all()


BAD = [
    pytest.param(_fat_tree(5), "topology.k", "must be even", id="odd-k"),
    pytest.param(_fat_tree(0), "topology.k", "", id="k-below-2"),
    pytest.param(_fat_tree(4, 'pattern = "ring"'), "traffic.pattern", "allowed", id="pattern"),
    pytest.param(
        _fat_tree(4, 'pattern = "permutation"')
        + '[[flow]]\nname = "x"\nfrom = "host0"\nto = "host99"\n',
        "flow[0].to",
        "no host is called 'host99'",
        id="unknown-host",
    ),
    pytest.param(
        'duration = "1s"\n[[link]]\nname = "l"\nrate = "1Mbps"\ndelay = "1ms"\n'
        '[[flow]]\nname = "x"\nfrom = "host0"\nto = "host1"\n',
        "flow[0].from",
        "has none",
        id="from-without-topology",
    ),
    pytest.param(
        _fat_tree(4, 'pattern = "permutation"')
        + '[[flow]]\nname = "x"\nfrom = "host0"\nto = "host1"\npath = ["host0-edge0_0"]\n',
        "flow[0].path",
        "not both",
        id="path-and-from",
    ),
]


@pytest.mark.parametrize(("text", "field", "needle"), BAD)
def test_bad_datacenter_input_exits_2_with_one_line(
    tmp_path: Path, text: str, field: str, needle: str
) -> None:
    path = write_scenario(tmp_path, text, "bad.toml")
    proc = run_cli("validate", path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{path}: {field}" in lines[0]
    assert needle in lines[0]
