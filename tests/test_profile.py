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
cwnd_validation = true
rto = "linux"
mptcp_options = true
scheduler = "linux"
push_fragments = true
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
    # push_fragments is the linux scheduler's: from the profile, beside another scheduler, it
    # does nothing; written there it would be refused (below).
    written = _flows(
        tcp=LINUX_KEYS.replace('scheduler = "linux"', 'scheduler = "minrtt"').replace(
            "push_fragments = true", ""
        ),
        flow='arithmetic = "linux"',
    )
    pd.testing.assert_frame_equal(mixed, written)
    off = _flows(tcp='profile = "linux"\npush_fragments = false')
    pd.testing.assert_frame_equal(
        off,
        _flows(
            tcp=LINUX_KEYS.replace("push_fragments = true", "push_fragments = false"),
            flow='arithmetic = "linux"',
        ),
    )


def test_a_flows_own_arithmetic_and_profile_win_over_tcps() -> None:
    spec = _flows(tcp='profile = "linux"', flow='arithmetic = "spec"')
    pd.testing.assert_frame_equal(spec, _flows(tcp=LINUX_KEYS))
    # A flow's profile = "default" puts its keys back; the other flow keeps [tcp]'s.
    back = _flows(tcp='profile = "linux"', flow='profile = "default"')
    pd.testing.assert_frame_equal(
        back,
        _flows(
            tcp=LINUX_KEYS,
            flow="limited_transmit = false\nprr = false\nkeep_sack_on_rto = false\n"
            'mptcp_options = false\nscheduler = "minrtt"\npush_fragments = false\n'
            "handshakes = false",
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


# BASE without its TCP flow, the connection over QUIC.
QUIC_ONLY = BASE.split('[[flow]]\nname = "tcp"')[0].replace(
    'algorithm = "{algorithm}"', 'algorithm = "{algorithm}"\ntransport = "quic"'
)


def _quic(tcp: str = "", flow: str = "") -> pd.DataFrame:
    text = QUIC_ONLY.format(tcp=tcp, flow=flow, algorithm="lia")
    res = pathweave.run(pathweave.parse(text, "profile-quic.toml"))
    return res.flows[["name", "delivered_bytes", "retransmits", "loss_events"]]


def test_the_tcp_tables_profile_leaves_a_quic_flow_on_the_spec_arithmetic() -> None:
    """`[tcp]`'s profile describes the kernel's TCP: a QUIC flow under it takes the one key
    of it a QUIC flow reads from `[tcp]` (`handshakes`) and not the linux arithmetic; a
    profile written on the QUIC flow itself gives it `handshakes` and the linux arithmetic, as
    writing the two would (and the two arithmetics differ here)."""
    pd.testing.assert_frame_equal(_quic(tcp='profile = "linux"'), _quic(tcp="handshakes = true"))
    linux = _quic(flow='arithmetic = "linux"\nhandshakes = true')
    pd.testing.assert_frame_equal(_quic(flow='profile = "linux"'), linux)
    assert not linux.equals(_quic(flow="handshakes = true"))


def test_the_profile_without_sack_recovery_runs_its_other_keys() -> None:
    """PRR and the kept SACKs work on the SACK scoreboard: under NewReno recovery the profile
    is not refused for them and runs as its four other keys written out; written by hand
    without SACK recovery they are still refused."""
    text = BASE.replace('recovery = "sack"\n', "")
    others = "\n".join(
        line
        for line in LINUX_KEYS.strip().splitlines()
        if line.split()[0] not in ("prr", "keep_sack_on_rto")
    )

    def flows(tcp: str, flow: str = "") -> pd.DataFrame:
        sc = pathweave.parse(text.format(tcp=tcp, flow=flow, algorithm="lia"), "p.toml")
        return pathweave.run(sc).flows[["name", "delivered_bytes", "retransmits", "loss_events"]]

    profiled = flows('profile = "linux"')
    pd.testing.assert_frame_equal(profiled, flows(others, 'arithmetic = "linux"'))
    assert not profiled.equals(flows(""))
    with pytest.raises(pathweave.ScenarioError, match='prr = true needs recovery = "sack"'):
        pathweave.parse(text.format(tcp="prr = true", flow="", algorithm="lia"), "p.toml")


def test_push_fragments_written_beside_another_scheduler_is_one_line_and_exit_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = BASE.format(tcp='scheduler = "minrtt"\npush_fragments = true', flow="", algorithm="lia")
    proc = run_cli("validate", write_scenario(tmp_path, text))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "tcp.push_fragments" in lines[0], lines[0]
    assert 'scheduler = "linux"' in lines[0], lines[0]


# Linux MPTCP pushes a subflow whole page fragments of 32,728 bytes (a 32 kB page less the
# fragment's 40-byte header), and the subflow cuts them into segments of its MSS: a push of two
# whole fragments from a fragment's start (a burst is 65,428 bytes) ends with a segment of
# 2 x 32,728 mod MSS bytes. With the 1,436-byte payload of a 1500-byte MPTCP packet (40 bytes
# of headers, 24 of DSS option) that is 836 bytes, the tail the kernel's captures show
# (docs/kernel.md, "Drop-tail links").
FRAGMENTS = """
name = "fragments"
duration = "20s"

[tcp]
profile = "linux"
recovery = "sack"
mss = "1460B"
header = "40B"
ack_size = "40B"
{tcp}

[capture]
links = ["A", "B"]
events = true

[[link]]
name = "A"
rate = "10Mbps"
delay = "50ms"
queue = {{ type = "droptail", limit = "83pkt" }}

[[link]]
name = "B"
rate = "5Mbps"
delay = "50ms"
queue = {{ type = "droptail", limit = "42pkt" }}

[[flow]]
name = "mptcp"
algorithm = "lia"
subflows = [ {{ path = ["A"] }}, {{ path = ["B"] }} ]

[[flow]]
name = "tcpA"
algorithm = "reno"
path = ["A"]
"""


def _data_payloads(tmp_path, tcp: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    out = tmp_path / tcp.replace(" ", "").replace("=", "-")
    pathweave.run(pathweave.parse(FRAGMENTS.format(tcp=tcp), "fragments.toml"), pcap=out)
    log = pd.read_parquet(out / "packets.parquet")
    data = log[(log.event == "dequeue") & (log.direction == "forward")]
    return data.assign(payload=data.bytes - 40 - (data.flow == 0) * 24)


def test_pushes_of_page_fragments_end_in_the_kernels_short_segments(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mss = 1460 - 24
    data = _data_payloads(tmp_path, "")
    mp, reno = data[data.flow == 0], data[data.flow == 1]
    assert mp.payload.max() == mss
    assert (reno.payload == 1460).all()
    short = mp[mp.payload < mss]
    assert 0.002 < len(short) / len(mp) < 0.1, len(short) / len(mp)
    # Every push starts at a fragment's start (the receive window, the only stop inside a
    # fragment, is unlimited here) and ends at the end of a fragment; a push that finds the
    # subflow's last short segment still queued fills it first, so segments are cut from the
    # start of such a chain of pushes, n fragments before: the last segment holds n x 32,728
    # mod MSS bytes. Chains are mostly 1-5 fragments here, a few run to dozens; n <= 64 gives
    # 64 of the 359 multiples of 4 below the MSS.
    tails = {(n * 32_728) % mss for n in range(1, 65)}
    assert set(short.payload) <= tails, short.payload.value_counts()
    assert 836 in set(short.payload)
    # Whole segments without it.
    whole = _data_payloads(tmp_path, "push_fragments = false")
    assert (whole[whole.flow == 0].payload == mss).all()


# lia-two-links S2 as the emulator runs it (1460-byte segments, 40-byte headers and ACKs), its
# first two seconds: every flow's first slow start ends in one overflow of each link's queue.
S2_START = """
name = "s2-first-seconds"
duration = "2s"

[tcp]
profile = "linux"
recovery = "sack"
initial_window = 2
min_rto = "200ms"
mss = "1460B"
header = "40B"
ack_size = "40B"

[capture]
links = ["A", "B"]
events = true

[[link]]
name = "A"
rate = "10Mbps"
delay = "50ms"
queue = { type = "droptail", limit = "83pkt" }

[[link]]
name = "B"
rate = "5Mbps"
delay = "50ms"
queue = { type = "droptail", limit = "42pkt" }

[[flow]]
name = "mptcp"
algorithm = "lia"
subflows = [ { path = ["A"] }, { path = ["B"] } ]

[[flow]]
name = "tcpA"
algorithm = "reno"
path = ["A"]
start = "10ms"

[[flow]]
name = "tcpB"
algorithm = "reno"
path = ["B"]
start = "20ms"
"""

# The kernel's drops in those two seconds (`pathweave emulate` with pw_lia, queue logs of three
# runs, 2026-12-02 and 2026-12-03; docs/kernel.md): per link and flow, how many and when the
# first came. The three runs agree to one packet and 5 ms.
KERNEL_FIRST_DROPS = {
    ("A", 0): (104, 0.756, 0.761),
    ("A", 1): (65, 0.786, 0.791),
    ("B", 0): (16, 0.890, 0.891),
    ("B", 2): (70, 0.746, 0.747),
}


def test_the_first_slow_starts_overflow_the_queues_as_the_kernels_do(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Which packets the first overflow takes depends on how each connection's data reach the
    # links: with the handshake's RTT sample, Linux's scheduler spreads the MPTCP data by the
    # subflows' real pacing rates from the first push on (without it, a subflow the scheduler
    # ranked by a huge first estimate held the connection back and then got a 45-segment
    # burst, and the first drop on link A was the Reno flow's, 80 ms late).
    out = tmp_path / "s2"
    pathweave.run(pathweave.parse(S2_START, "s2.toml"), pcap=out)
    log = pd.read_parquet(out / "packets.parquet")
    drops = log[(log.event == "drop") & (log.direction == "forward")]
    seen = {key: (len(g), g.time_s.min()) for key, g in drops.groupby(["link", "flow"])}
    assert set(seen) == set(KERNEL_FIRST_DROPS), seen
    for key, (count, first_lo, first_hi) in KERNEL_FIRST_DROPS.items():
        n, first = seen[key]
        assert abs(n - count) <= max(2, count // 20), (key, n, count)
        assert first_lo - 0.005 <= first <= first_hi + 0.005, (key, first, first_lo, first_hi)
