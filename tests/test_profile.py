"""`[tcp] profile = "linux"`: one key for every setting the simulator has for doing what the
Linux kernel does (docs/scenarios.md, "The linux profile"), with the documented precedence.
Each check compares a scenario using the profile with the same scenario written out key by
key, as the table in the docs states it, so the expectation does not come from the code."""

from __future__ import annotations

import pandas as pd
import pytest

import pathweave
from conftest import run_cli, write_scenario

BASE = """
name = "profile"
duration = "4s"
seed = 3

[tcp]
recovery = "sack"
{tcp}

[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
queue = {{ type = "droptail", limit = "30pkt" }}

[[link]]
name = "b"
rate = "10Mbps"
delay = "30ms"
queue = {{ type = "droptail", limit = "30pkt" }}

[[flow]]
name = "mp"
algorithm = "{algorithm}"
{flow}
subflows = [ {{ path = ["a"] }}, {{ path = ["b"] }} ]

[[flow]]
name = "tcp"
path = ["a"]
"""

# The docs' table, written out.
LINUX_KEYS = """
limited_transmit = true
prr = true
keep_sack_on_rto = true
mptcp_options = true
scheduler = "linux"
handshakes = true
"""


def _flows(tcp: str = "", flow: str = "", algorithm: str = "lia") -> pd.DataFrame:
    text = BASE.format(tcp=tcp, flow=flow, algorithm=algorithm)
    res = pathweave.run(pathweave.parse(text, "profile.toml"))
    return res.flows[["name", "delivered_bytes", "retransmits", "loss_events"]]


def test_the_linux_profile_is_its_keys_and_the_linux_arithmetic() -> None:
    profiled = _flows(tcp='profile = "linux"')
    written = _flows(tcp=LINUX_KEYS, flow='arithmetic = "linux"')
    pd.testing.assert_frame_equal(profiled, written)
    # And it is not the simulator's defaults.
    assert not _flows().equals(profiled)


def test_a_key_written_beside_the_profile_wins() -> None:
    mixed = _flows(tcp='profile = "linux"\nscheduler = "minrtt"')
    written = _flows(
        tcp=LINUX_KEYS.replace('scheduler = "linux"', 'scheduler = "minrtt"'),
        flow='arithmetic = "linux"',
    )
    pd.testing.assert_frame_equal(mixed, written)


def test_a_flows_own_arithmetic_and_profile_win_over_tcps() -> None:
    spec = _flows(tcp='profile = "linux"', flow='arithmetic = "spec"')
    pd.testing.assert_frame_equal(spec, _flows(tcp=LINUX_KEYS))
    # A flow's profile = "default" puts its six keys back; the other flow keeps [tcp]'s.
    back = _flows(tcp='profile = "linux"', flow='profile = "default"')
    pd.testing.assert_frame_equal(
        back,
        _flows(
            tcp=LINUX_KEYS,
            flow="limited_transmit = false\nprr = false\nkeep_sack_on_rto = false\n"
            'mptcp_options = false\nscheduler = "minrtt"\nhandshakes = false',
        ),
    )


@pytest.mark.parametrize("algorithm", ["olia", "balia", "fully-coupled", "wvegas", "uncoupled"])
def test_the_profile_gives_the_linux_arithmetic_only_where_the_algorithm_has_it(
    algorithm: str,
) -> None:
    profiled = _flows(tcp='profile = "linux"', algorithm=algorithm)
    try:
        pathweave.parse(
            BASE.format(tcp="", flow='arithmetic = "linux"', algorithm=algorithm), "p.toml"
        )
        has_linux = True
    except pathweave.ScenarioError:
        has_linux = False
    written = _flows(
        tcp=LINUX_KEYS, flow='arithmetic = "linux"' if has_linux else "", algorithm=algorithm
    )
    pd.testing.assert_frame_equal(profiled, written)


def test_without_a_profile_nothing_changes() -> None:
    pd.testing.assert_frame_equal(_flows(tcp='profile = "default"'), _flows())


@pytest.mark.parametrize("value", ['"linus"', "1", '"Linux"'])
def test_an_unknown_profile_is_one_line_and_exit_2(tmp_path, value: str) -> None:  # type: ignore[no-untyped-def]
    path = write_scenario(tmp_path, BASE.format(tcp=f"profile = {value}", flow="", algorithm="lia"))
    proc = run_cli("validate", path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "tcp.profile" in lines[0], lines[0]
