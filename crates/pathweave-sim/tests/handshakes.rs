//! `handshakes = true`: a subflow's first data waits for its handshake, and a joining subflow
//! for the connection's establishment and its own MP_JOIN exchange.

mod common;
use common::*;
use pathweave_cc::{Duration, Instant};
use pathweave_sim::topology;

/// Two disjoint paths of an access link and a bottleneck each; times in ms.
const PATHS: &str = r#"
duration = "20s"
[tcp]
HANDSHAKES
[[link]]
name = "acc0"
rate = "100Mbps"
delay = "2ms"
queue = { type = "droptail", limit = "1000pkt" }
[[link]]
name = "bn0"
rate = "20Mbps"
delay = "10ms"
queue = { type = "droptail", limit = "1000pkt" }
[[link]]
name = "acc1"
rate = "100Mbps"
delay = "3ms"
queue = { type = "droptail", limit = "1000pkt" }
[[link]]
name = "bn1"
rate = "10Mbps"
delay = "25ms"
queue = { type = "droptail", limit = "1000pkt" }
[[flow]]
name = "f"
algorithm = "ALG"
start = "START"
traffic = TRAFFIC
SUBFLOWS
"#;

fn text(handshakes: bool, alg: &str, start: &str, traffic: &str, subflows: &str) -> String {
    PATHS
        .replace(
            "HANDSHAKES",
            if handshakes { "handshakes = true" } else { "" },
        )
        .replace("ALG", alg)
        .replace("START", start)
        .replace("TRAFFIC", traffic)
        .replace("SUBFLOWS", subflows)
}

const TWO: &str = r#"subflows = [ { path = ["acc0", "bn0"] }, { path = ["acc1", "bn1"] } ]"#;

/// Serialising `bytes` at `bps`, in ns rounded up (as the links do).
fn tx(bytes: u64, bps: u64) -> u64 {
    (bytes * 8 * 1_000_000_000).div_ceil(bps)
}

/// The round trips of a 40-byte handshake segment over the two paths of `PATHS`, in ns.
fn round_trips() -> (u64, u64) {
    let r0 = 2 * (2_000_000 + 10_000_000 + tx(40, 100_000_000) + tx(40, 20_000_000));
    let r1 = 2 * (3_000_000 + 25_000_000 + tx(40, 100_000_000) + tx(40, 10_000_000));
    (r0, r1)
}

#[test]
fn round_trips_add_every_link_delay_and_serialisation_both_ways() {
    let sc = scenario(&text(true, "lia", "1s", "\"bulk\"", TWO));
    let f = &sc.flows[0];
    // A 40-byte handshake segment over each path, out and back.
    let (r0, r1) = round_trips();
    assert_eq!(
        topology::handshake_rtt(&sc, &f.subflows[0], 40),
        Duration(r0)
    );
    assert_eq!(
        topology::handshake_rtt(&sc, &f.subflows[1], 40),
        Duration(r1)
    );
    // The first subflow sends one round trip after the start; the join is opened when the
    // connection is established (two round trips of the first path) and sends after its own
    // two.
    let start = 1_000_000_000;
    let joins = topology::handshake_joins(&sc, &f.subflows, f.start, 40);
    assert_eq!(
        joins,
        vec![Instant(start + r0), Instant(start + 2 * r0 + 2 * r1)]
    );
    // A subflow that starts after the establishment runs its exchange from its own start.
    let late = text(
        true,
        "lia",
        "1s",
        "\"bulk\"",
        r#"subflows = [ { path = ["acc0", "bn0"] }, { path = ["acc1", "bn1"], start = "3s" } ]"#,
    );
    let sc = scenario(&late);
    let f = &sc.flows[0];
    let joins = topology::handshake_joins(&sc, &f.subflows, f.start, 40);
    assert_eq!(joins[1], Instant(3_000_000_000 + 2 * r1));
}

#[test]
fn a_handshake_delays_a_lone_transfer_by_exactly_one_round_trip() {
    // Nothing else on the path and no loss: the whole transfer shifts by the handshake.
    let one = r#"path = ["acc0", "bn0"]"#;
    let traffic = "{ type = \"transfer\", size = \"2MB\" }";
    let without = run(&scenario(&text(false, "reno", "1s", traffic, one)), Some(1));
    let with = run(&scenario(&text(true, "reno", "1s", traffic, one)), Some(1));
    let (r0, _) = round_trips();
    let (a, b) = (without.flows.completion_s[0], with.flows.completion_s[0]);
    assert!(a.is_finite() && b.is_finite(), "both transfers complete");
    assert!(
        ((b - a) - r0 as f64 * 1e-9).abs() < 1e-9,
        "completion {a} s without and {b} s with handshakes; the round trip is {r0} ns"
    );
    assert_eq!(without.flows.delivered_bytes, with.flows.delivered_bytes);
}

#[test]
fn a_join_waits_for_the_connection_to_be_established() {
    // The connection stops offering data before the join could send (establishment at
    // 2 R0 = 48 ms, the join's exchange 2 R1 = 112 ms more): the second subflow sends nothing
    // with handshakes, and does without.
    let stop = r#""bulk"
stop = "1.1s""#;
    let with = run(&scenario(&text(true, "lia", "1s", stop, TWO)), Some(1));
    let without = run(&scenario(&text(false, "lia", "1s", stop, TWO)), Some(1));
    assert_eq!(with.subflows.packets_sent[1], 0);
    assert!(without.subflows.packets_sent[1] > 0);
    assert!(with.subflows.packets_sent[0] > 0);
}

#[test]
fn handshakes_is_a_boolean() {
    let bad =
        text(true, "lia", "1s", "\"bulk\"", TWO).replace("handshakes = true", "handshakes = 1");
    let e = pathweave_sim::Scenario::parse(&bad, "<test>", "test").expect_err("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("tcp.handshakes") && msg.contains("true or false"),
        "{msg}"
    );
}

#[test]
fn the_handshake_is_each_subflows_first_rtt_sample() {
    // Runs that end before any data segment's ACK can return (the first subflow's data leaves
    // at 1 s + R0 and its ACK needs at least R0 more; the join's at 1 s + 2 R0 + 2 R1): the
    // only sample a subflow can have is its handshake's, so its mean smoothed RTT over its
    // active time is that round trip exactly, and without handshakes it has none.
    let (r0, r1) = round_trips();
    let start = 1_000_000_000u64;
    let end = |t: u64| format!("duration = \"{}ns\"", t);
    let text_until = |handshakes: bool, t: u64| {
        text(handshakes, "lia", "1s", "\"bulk\"", TWO).replace("duration = \"20s\"", &end(t))
    };
    let first = run(&scenario(&text_until(true, start + r0 + r0 / 2)), Some(1));
    assert!(
        first.subflows.packets_sent[0] > 0,
        "the first subflow has sent"
    );
    let close = |a: f64, ns: u64| (a - ns as f64 * 1e-9).abs() < 1e-12;
    assert!(close(first.subflows.mean_srtt_s[0], r0));
    let both = run(
        &scenario(&text_until(true, start + 2 * r0 + 2 * r1 + r1 / 2)),
        Some(1),
    );
    assert!(both.subflows.packets_sent[1] > 0, "the join has sent");
    assert!(close(both.subflows.mean_srtt_s[1], r1));
    let without = run(&scenario(&text_until(false, start + r0 / 2)), Some(1));
    assert!(without.subflows.packets_sent[0] > 0);
    assert!(without.subflows.mean_srtt_s[0].is_nan());
}
