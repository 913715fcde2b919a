//! Loss recovery under random loss: Reno against NewReno on windows with several losses, and,
//! for every recovery algorithm (SACK with and without proportional rate reduction), a sized
//! transfer that delivers exactly its bytes (nothing lost, nothing twice to the application)
//! with packets conserved (checked by `run`) and the same run from the same seed.

mod common;
use common::*;
use proptest::prelude::*;

/// A bulk flow and a sized transfer over one lossy link of 10 ms; `ack_loss` also drops ACKs.
fn transfer(
    recovery: &str,
    loss: f64,
    ack_loss: bool,
    rate_mbps: u32,
    buffer: u32,
    size_kb: u32,
) -> String {
    let reverse_loss = if ack_loss { loss } else { 0.0 };
    // "sack-prr": SACK recovery with proportional rate reduction (RFC 6937).
    let (recovery, prr) = match recovery.strip_suffix("-prr") {
        Some(r) => (r, true),
        None => (recovery, false),
    };
    format!(
        r#"
duration = "120s"
[tcp]
recovery = "{recovery}"
prr = {prr}
[[link]]
name = "l"
rate = "{rate_mbps}Mbps"
delay = "10ms"
loss = {loss}
reverse_loss = {reverse_loss}
queue = {{ type = "droptail", limit = "{buffer}pkt" }}
[[flow]]
name = "bulk"
path = ["l"]
[[flow]]
name = "t"
path = ["l"]
traffic = {{ type = "transfer", size = "{size_kb}KB" }}
"#
    )
}

/// Reno (RFC 5681 §3.2) leaves fast recovery on the first new ACK, so a second hole in the
/// same window cannot be repaired by another fast retransmit (the ACKs stay below `recover`)
/// and waits for the timer; NewReno repairs it on the partial ACK (Fall and Floyd, "Simulation-
/// based comparisons of Tahoe, Reno and SACK TCP", 1996). Over a path whose windows often
/// hold two or more losses Reno therefore times out far more often and delivers less; every
/// byte still arrives once.
#[test]
fn reno_times_out_on_a_second_loss_in_a_window_where_newreno_does_not() {
    let text = |recovery| transfer(recovery, 0.005, false, 100, 10000, 1000);
    let reno = run(&scenario(&text("reno")), Some(3));
    let nr = run(&scenario(&text("newreno")), Some(3));
    for r in [&reno, &nr] {
        assert_eq!(r.flows.delivered_bytes[1], 1_000_000);
    }
    let (t_reno, t_nr) = (reno.flows.timeouts[0], nr.flows.timeouts[0]);
    assert!(
        t_reno >= 2 * t_nr.max(5),
        "timeouts: Reno {t_reno}, NewReno {t_nr}"
    );
    assert!(
        reno.flows.goodput_bps[0] < nr.flows.goodput_bps[0],
        "goodput: Reno {}, NewReno {}",
        reno.flows.goodput_bps[0],
        nr.flows.goodput_bps[0]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_recovery_delivers_a_transfer_exactly_once(
        recovery in prop::sample::select(vec!["reno", "newreno", "sack", "sack-prr"]),
        loss in 0.0f64..0.05,
        rate_mbps in 1u32..20,
        buffer in 5u32..100,
        size_kb in 10u32..400,
        seed in 1u64..1000,
    ) {
        let sc = scenario(&transfer(recovery, loss, true, rate_mbps, buffer, size_kb));
        let a = run(&sc, Some(seed));
        prop_assert_eq!(a.flows.delivered_bytes[1], u64::from(size_kb) * 1000);
        prop_assert!(a.flows.completion_s[1].is_finite());
        let b = run(&sc, Some(seed));
        prop_assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    }
}
