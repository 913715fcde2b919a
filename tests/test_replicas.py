"""pathweave.replicas: independent copies of a scenario in one file."""

from __future__ import annotations

import textwrap

import pytest
import tomli_w

import pathweave
from pathweave import _core
from pathweave.replicas import MAX_COPIES, replica_of, replicate

# No random element (drop-tail queues, no loss model), so a run is the same whatever the seed
# and a copy that shared nothing with the others must behave exactly like the original.
TEXT = textwrap.dedent(
    """
    name = "two-flows"
    duration = "5s"
    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = { type = "droptail", limit = "20pkt" }
    [[link]]
    name = "acc{i}"
    count = 2
    rate = "100Mbps"
    delay = "{n} ms"
    [[flow]]
    name = "mp"
    algorithm = "lia"
    subflows = [ { path = ["acc0", "bottleneck"] }, { path = ["acc1", "bottleneck"] } ]
    [[flow]]
    name = "back"
    group = "reverse"
    algorithm = "reno"
    path = ["~bottleneck"]
    """
)


def _doc() -> dict:  # type: ignore[type-arg]
    return _core.toml_loads(TEXT, "two-flows.toml")


def test_copies_rename_links_flows_paths_and_groups() -> None:
    out = replicate(_doc(), 2)
    assert [lk["name"] for lk in out["link"]] == [
        "bottleneck_r0",
        "acc{i}_r0",
        "bottleneck_r1",
        "acc{i}_r1",
    ]
    assert [f["name"] for f in out["flow"]] == ["mp_r0", "back_r0", "mp_r1", "back_r1"]
    assert out["flow"][2]["subflows"][1]["path"] == ["acc1_r1", "bottleneck_r1"]
    assert out["flow"][3]["path"] == ["~bottleneck_r1"]  # the reverse marker stays in front
    assert out["flow"][3]["group"] == "reverse_r1"
    assert out["duration"] == "5s"
    assert replica_of("back_r1") == ("back", 1)
    assert replica_of("a_r0_r12") == ("a_r0", 12)


@pytest.mark.parametrize("copies", [0, -1, MAX_COPIES + 1, 2.0, True, "3"])
def test_a_bad_number_of_copies_is_refused(copies: object) -> None:
    with pytest.raises(ValueError, match="copies"):
        replicate(_doc(), copies)  # type: ignore[arg-type]


def test_a_name_without_a_copy_suffix_is_refused() -> None:
    with pytest.raises(ValueError, match="not a replicated name"):
        replica_of("mp")


def test_each_copy_runs_exactly_like_the_original() -> None:
    """Copies share no link: in a run without randomness every copy's flows and links give
    the original's figures exactly."""
    one = pathweave.run(pathweave.parse(TEXT, "one"))
    three = pathweave.run(pathweave.parse(tomli_w.dumps(replicate(_doc(), 3)), "three"))
    cols = ["delivered_bytes", "packets_sent", "retransmits", "loss_events"]
    base = one.flows[cols].to_numpy()
    assert base[:, 0].min() > 0
    for k in range(3):
        rows = three.flows[three.flows["name"].str.endswith(f"_r{k}")]
        assert (rows[cols].to_numpy() == base).all(), k
    links = three.links.set_index(["name", "direction"])
    for k in range(3):
        got = links.loc[(f"bottleneck_r{k}", "forward"), "delivered_packets"]
        assert (
            got
            == one.links.set_index(["name", "direction"]).loc[
                ("bottleneck", "forward"), "delivered_packets"
            ]
        )
