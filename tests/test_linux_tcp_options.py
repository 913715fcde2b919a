"""Two of the linux profile's settings, each against the rule it models (docs/simulator.md).

`cwnd_validation`: a window grows only while it is in use, as Linux decides it
(`tcp_cwnd_validate`, `tcp_is_cwnd_limited`). The bounds come from Linux's rule, not from the
code's output: a flow held to a flight of F segments by its receiver's buffer stays in slow
start (no loss) and its window stops growing once it reaches twice the largest flight, 2F, give
or take one ACK's growth (at most `abc_limit` = 2 segments).

`rto = "linux"`: the retransmission timer as Linux runs it (below)."""

from __future__ import annotations

import pytest

import pathweave

MSS = 1000
FLIGHT = 20  # segments the receive buffer lets out

SCENARIO = """
name = "cwnd-validation"
duration = "3s"
seed = 1
sample_interval = "50ms"

[tcp]
{tcp}

[[link]]
name = "fat"
rate = "100Mbps"
delay = "10ms"
queue = {{ type = "droptail", limit = "1000pkt" }}

[[flow]]
name = "held"
path = ["fat"]
receive_buffer = "{buffer}B"
{flow}
"""


def _run(tcp: str = "", flow: str = "") -> pathweave.Result:
    text = SCENARIO.format(tcp=tcp, flow=flow, buffer=FLIGHT * MSS)
    return pathweave.run(pathweave.parse(text, "cwnd-validation.toml"))


def _largest_window(res: pathweave.Result) -> float:
    return float(res.subflow_series["cwnd_bytes"].max())


def test_a_window_held_back_by_the_receiver_stops_at_twice_its_flight() -> None:
    res = _run(tcp="cwnd_validation = true")
    assert int(res.flows["loss_events"].sum()) == 0
    largest = _largest_window(res)
    assert largest <= (2 * FLIGHT + 2) * MSS, largest
    # It did grow to the flight the receiver allows: validation holds it, it does not freeze it.
    assert largest >= FLIGHT * MSS, largest


def test_without_validation_the_same_window_keeps_growing() -> None:
    # The default: every ACK of new data grows the window, used or not; 3 s of slow start at
    # 20 segments a round trip (about 20 ms) is far beyond 2F.
    largest = _largest_window(_run())
    assert largest > 10 * FLIGHT * MSS, largest


def test_the_linux_profile_validates_and_a_key_beside_it_wins() -> None:
    assert _largest_window(_run(tcp='profile = "linux"')) <= (2 * FLIGHT + 2) * MSS
    off = _run(tcp='profile = "linux"\ncwnd_validation = false')
    assert _largest_window(off) > 10 * FLIGHT * MSS
    # A flow's own key wins over [tcp]'s.
    on = _run(tcp="cwnd_validation = false", flow="cwnd_validation = true")
    assert _largest_window(on) <= (2 * FLIGHT + 2) * MSS


def test_validation_leaves_a_backlogged_flow_alone() -> None:
    # Nothing holds the flow back: the window is always in use and the run is the same, byte
    # for byte, with and without validation.
    text = SCENARIO.replace('receive_buffer = "{buffer}B"\n', "")
    a = pathweave.run(pathweave.parse(text.format(tcp="", flow=""), "a.toml"))
    b = pathweave.run(pathweave.parse(text.format(tcp="cwnd_validation = true", flow=""), "b.toml"))
    assert a.flows.drop(columns=["name"]).equals(b.flows.drop(columns=["name"]))
    assert a.subflow_series.equals(b.subflow_series)


@pytest.mark.parametrize("value", ["1", '"yes"'])
def test_a_value_that_is_not_a_boolean_is_refused(value: str) -> None:
    with pytest.raises(pathweave.ScenarioError, match="cwnd_validation"):
        _run(tcp=f"cwnd_validation = {value}")


def test_a_quic_flow_refuses_it() -> None:
    with pytest.raises(pathweave.ScenarioError, match="cwnd_validation"):
        _run(flow='transport = "quic"\ncwnd_validation = true')


# `rto = "linux"`: Linux's retransmission timer (docs/simulator.md). One flow alone on a path
# whose round trip (2 x 100 ms plus up to 120 ms of queue) exceeds min_rto, its drop-tail queue
# overflowing at each sawtooth peak. The duplicate ACKs of a drop come up to one round trip
# after the last new ACK, and the fast retransmission's ACK one round trip later; under
# RFC 6298 the timer, restarted by that last new ACK and about SRTT long, can expire first, so
# some overflows end in a timeout; Linux's timer (SRTT + min_rto, restarted by the fast
# retransmission) gives the fast retransmission a whole round trip and more.
SAWTOOTH = """
name = "rto"
duration = "60s"
seed = 1

[tcp]
recovery = "sack"
{tcp}

[[link]]
name = "l"
rate = "2Mbps"
delay = "100ms"
queue = {{ type = "droptail", limit = "20pkt" }}

[[flow]]
name = "reno"
path = ["l"]
"""


def _timeouts(tcp: str) -> tuple[int, int]:
    res = pathweave.run(pathweave.parse(SAWTOOTH.format(tcp=tcp), "rto.toml"))
    return int(res.flows["timeouts"].iloc[0]), int(res.flows["loss_events"].iloc[0])


def test_under_the_rfc_timer_some_overflows_end_in_a_timeout() -> None:
    timeouts, events = _timeouts("")
    assert events >= 5
    assert timeouts >= 2, (timeouts, events)


def test_linux_timer_lets_fast_recovery_finish() -> None:
    timeouts, events = _timeouts('rto = "linux"')
    assert events >= 5
    assert timeouts == 0, (timeouts, events)


def test_an_unknown_rto_rule_is_refused() -> None:
    with pytest.raises(pathweave.ScenarioError, match=r'rto.*allowed: "rfc6298", "linux"'):
        _timeouts('rto = "bsd"')
