//! Loss recovery under random loss: Reno against NewReno on windows with several losses, and,
//! for every recovery algorithm (SACK with and without proportional rate reduction, and with
//! the SACKs kept across timeouts), a sized
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
    // "sack-prr": SACK recovery with proportional rate reduction (RFC 6937); "sack-keep":
    // SACK recovery that keeps the SACKs across a timeout (Linux).
    let (recovery, prr, keep) = match recovery {
        "sack-prr" => ("sack", true, false),
        "sack-keep" => ("sack", true, true),
        r => (r, false, false),
    };
    format!(
        r#"
duration = "120s"
[tcp]
recovery = "{recovery}"
prr = {prr}
keep_sack_on_rto = {keep}
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
        recovery in prop::sample::select(vec!["reno", "newreno", "sack", "sack-prr", "sack-keep"]),
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

/// Two SACK flows on a 20 Mbit/s RED link, ten seeds: every dropped segment needs one
/// retransmission, and with the SACKs kept across a timeout (as Linux does) little more goes
/// out: only segments that were in flight, neither lost nor SACKed yet, when the timer fired.
/// Without (RFC 2018 §8) each timeout goes back N over everything outstanding, the segments the
/// receiver already holds included, so retransmissions exceed drops by far more.
#[test]
fn keeping_sacks_across_timeouts_resends_little_beyond_the_drops() {
    let text = |keep: bool| {
        format!(
            r#"
duration = "30s"
[tcp]
recovery = "sack"
prr = true
limited_transmit = true
keep_sack_on_rto = {keep}
[[link]]
name = "b"
rate = "20Mbps"
delay = "10ms"
queue = {{ type = "red", limit = "100pkt", min_th = 10, max_th = 30, max_p = 0.1, w_q = 0.002, gentle = true }}
[[link]]
name = "access{{i}}"
count = 2
rate = "100Mbps"
delay = "2ms"
queue = {{ type = "droptail", limit = "1000pkt" }}
[[flow]]
name = "r{{i}}"
count = 2
path = ["access{{i}}", "b"]
start = "{{i}} ms"
"#
        )
    };
    let totals = |keep: bool| {
        let sc = scenario(&text(keep));
        let (mut retx, mut drops, mut timeouts) = (0u64, 0u64, 0u64);
        for seed in 1..=10 {
            let r = run(&sc, Some(seed));
            retx += r.flows.retransmits.iter().sum::<u64>();
            drops += r.flows.drops.iter().sum::<u64>();
            timeouts += r.flows.timeouts.iter().sum::<u64>();
        }
        (retx, drops, timeouts)
    };
    let (retx_keep, drops_keep, to_keep) = totals(true);
    let (retx_forget, drops_forget, to_forget) = totals(false);
    // Both see timeouts, so both had SACKs outstanding to keep or forget.
    assert!(
        to_keep >= 10 && to_forget >= 10,
        "timeouts {to_keep}, {to_forget}"
    );
    // (A drop near the end may not be repaired yet, hence saturating.)
    assert!(
        retx_keep.saturating_sub(drops_keep) * 50 <= drops_keep,
        "kept: {retx_keep} retransmissions for {drops_keep} drops"
    );
    assert!(
        retx_forget.saturating_sub(drops_forget) * 5 >= drops_forget,
        "forgotten: {retx_forget} retransmissions for {drops_forget} drops"
    );
}
