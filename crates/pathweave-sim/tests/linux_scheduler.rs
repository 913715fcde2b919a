//! Linux MPTCP's sending side (`[tcp] scheduler = "linux"`): data handed to a subflow's own
//! queue ahead of its window, bounded by send buffers, and resent at the data level when the
//! data ACK stops moving.

mod common;
use common::*;
use proptest::prelude::*;

/// A connection over a 10 Mbit/s path "a" and a 5 Mbit/s path "b", with `scheduler`, a link
/// event on "b", the connection's traffic and the links' loss rate.
fn two_paths(scheduler: &str, b_event: &str, traffic: &str, loss: f64, buffer: u32) -> String {
    format!(
        r#"
duration = "30s"
[tcp]
recovery = "sack"
scheduler = "{scheduler}"
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
loss = {loss}
queue = {{ type = "droptail", limit = "{buffer}pkt" }}
[[link]]
name = "b"
rate = "5Mbps"
delay = "30ms"
loss = {loss}
queue = {{ type = "droptail", limit = "{buffer}pkt" }}
{b_event}
[[flow]]
name = "mp"
algorithm = "reno"
{traffic}
subflows = [ {{ path = ["a"] }}, {{ path = ["b"] }} ]
"#
    )
}

/// Path "b" goes down one second into a 2 MB transfer and stays down. What was handed to its
/// subflow, sent or queued, can only arrive through the other one: Linux's connection-level
/// timer resends the oldest unacknowledged data on a subflow with nothing outstanding
/// (`__mptcp_retrans`), so the transfer completes. The simulator's own schedulers hand data
/// only to window space and resend at the data level only for a subflow that leaves, so the
/// same transfer stays stuck behind the segments outstanding on "b".
#[test]
fn a_dead_path_does_not_hold_a_transfer_forever() {
    let down = "[[link.event]]\nat = \"1s\"\ndown = \"100s\"";
    let traffic = "traffic = { type = \"transfer\", size = \"2000000B\" }";
    let linux = run(
        &scenario(&two_paths("linux", down, traffic, 0.0, 50)),
        Some(1),
    );
    assert_eq!(linux.flows.delivered_bytes[0], 2_000_000);
    let done = linux.flows.completion_s[0];
    assert!(done.is_finite() && done < 30.0, "completion at {done}");
    let pull = run(
        &scenario(&two_paths("minrtt", down, traffic, 0.0, 50)),
        Some(1),
    );
    assert!(
        !pull.flows.completion_s[0].is_finite(),
        "without data-level retransmission the transfer waits for the path"
    );
    assert!(pull.flows.delivered_bytes[0] < 2_000_000);
}

/// A plain TCP connection has no MPTCP level, so `scheduler = "linux"` leaves a single-path
/// Reno flow exactly as it is under the default scheduler.
#[test]
fn a_plain_tcp_flow_is_not_queued_ahead() {
    let text = |scheduler: &str| {
        format!(
            r#"
duration = "20s"
[tcp]
scheduler = "{scheduler}"
[[link]]
name = "l"
rate = "10Mbps"
delay = "20ms"
loss = 0.005
queue = {{ type = "droptail", limit = "30pkt" }}
[[flow]]
name = "reno"
path = ["l"]
"#
        )
    };
    let a = run(&scenario(&text("linux")), Some(3));
    let b = run(&scenario(&text("minrtt")), Some(3));
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(format!("{:?}", a.subflows), format!("{:?}", b.subflows));
}

/// The unknown scheduler is refused with the ones there are.
#[test]
fn an_unknown_scheduler_names_the_allowed_ones() {
    let text = two_paths("blest", "", "", 0.0, 50);
    let err = pathweave_sim::Scenario::parse(&text, "<test>", "test")
        .expect_err("refused")
        .to_string();
    assert!(err.contains("tcp.scheduler"), "{err}");
    assert!(err.contains("\"linux\""), "{err}");
}

/// `push_fragments` belongs to Linux MPTCP's sending side: written beside another scheduler it
/// is refused, naming what it needs.
#[test]
fn push_fragments_needs_the_linux_scheduler() {
    let text = two_paths("minrtt", "", "", 0.0, 50).replace(
        "recovery = \"sack\"",
        "recovery = \"sack\"\npush_fragments = true",
    );
    let err = pathweave_sim::Scenario::parse(&text, "<test>", "test")
        .expect_err("refused")
        .to_string();
    assert!(err.contains("tcp.push_fragments"), "{err}");
    assert!(err.contains("scheduler = \"linux\""), "{err}");
}

/// The dead path again, with pushes of page fragments: the data resent at the data level goes
/// out with the lengths it was first sent with, so the transfer still arrives byte for byte.
#[test]
fn a_dead_path_does_not_hold_a_transfer_pushed_in_fragments() {
    for size in [2_000_000u32, 1_234_567] {
        let down = "[[link.event]]\nat = \"1s\"\ndown = \"100s\"";
        let traffic = format!("traffic = {{ type = \"transfer\", size = \"{size}B\" }}");
        let text = two_paths("linux", down, &traffic, 0.0, 50).replace(
            "recovery = \"sack\"",
            "recovery = \"sack\"\npush_fragments = true",
        );
        let res = run(&scenario(&text), Some(1));
        assert_eq!(res.flows.delivered_bytes[0], u64::from(size));
        let done = res.flows.completion_s[0];
        assert!(done.is_finite() && done < 30.0, "completion at {done}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Pushed in page fragments, with short segments where pushes end, a sized transfer still
    /// arrives exactly once, byte for byte, and completes; the same seed gives the same run.
    #[test]
    fn a_transfer_pushed_in_fragments_arrives_exactly_once(
        loss in 0.0f64..0.03,
        buffer in 5u32..80,
        size in 1u32..3_000_000,
        seed in 1u64..1000,
        outage_ms in prop::option::of((0u32..3000, 1u32..5000)),
    ) {
        let traffic = format!("traffic = {{ type = \"transfer\", size = \"{size}B\" }}");
        // Sometimes path "b" goes down for a while: its data is resent on "a".
        let event = outage_ms.map_or(String::new(), |(at, down)| {
            format!("[[link.event]]\nat = \"{at}ms\"\ndown = \"{down}ms\"")
        });
        let text = two_paths("linux", &event, &traffic, loss, buffer)
            .replace("recovery = \"sack\"", "recovery = \"sack\"\npush_fragments = true");
        let sc = scenario(&text);
        let a = run(&sc, Some(seed));
        prop_assert_eq!(a.flows.delivered_bytes[0], u64::from(size));
        prop_assert!(a.flows.completion_s[0].is_finite());
        let b = run(&sc, Some(seed));
        prop_assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    }

    /// Whatever the scheduler, a two-subflow transfer over lossy paths arrives exactly once and
    /// completes, and the same seed gives the same run.
    #[test]
    fn every_scheduler_delivers_a_transfer_exactly_once(
        scheduler in prop::sample::select(vec!["minrtt", "roundrobin", "linux"]),
        loss in 0.0f64..0.03,
        buffer in 5u32..80,
        size_kb in 10u32..3000,
        seed in 1u64..1000,
    ) {
        let traffic = format!("traffic = {{ type = \"transfer\", size = \"{size_kb}KB\" }}");
        let sc = scenario(&two_paths(scheduler, "", &traffic, loss, buffer));
        let a = run(&sc, Some(seed));
        prop_assert_eq!(a.flows.delivered_bytes[0], u64::from(size_kb) * 1000);
        prop_assert!(a.flows.completion_s[0].is_finite());
        let b = run(&sc, Some(seed));
        prop_assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    }
}
