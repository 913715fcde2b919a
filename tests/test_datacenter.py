"""Generated fabrics from Python: the validate summary, the flow-level max-min references
(against hand-computed values), a packet-level FatTree permutation beside its multipath
optimum, and bad input refused with one line and exit code 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

import pathweave
from conftest import run_cli, write_scenario
from pathweave.datacenter import max_min_multipath, max_min_single_path, reference

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
