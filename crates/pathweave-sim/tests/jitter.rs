//! `jitter` on a link: timing noise that makes runs differing only in their seed differ, as
//! runs on a real stack do, while the same seed still gives the same run.

mod common;
use common::*;

/// Two Reno flows through one 10 Mbit/s drop-tail bottleneck, 20 s.
fn two_flows(jitter: &str) -> String {
    dumbbell(
        2,
        "10Mbps",
        "20ms",
        r#"{ type = "droptail", limit = "40pkt" }"#,
        "1ms",
        20,
    )
    .replace(
        "name = \"bn\"\nrate = \"10Mbps\"",
        &format!("name = \"bn\"\nrate = \"10Mbps\"\njitter = \"{jitter}\""),
    )
}

fn goodputs(jitter: &str, seed: u64) -> Vec<f64> {
    run(&scenario(&two_flows(jitter)), Some(seed))
        .flows
        .goodput_bps
}

#[test]
fn jitter_makes_seeds_differ_and_a_seed_repeat_itself() {
    // Without jitter nothing in the run is random: every seed gives the same goodputs.
    let still: Vec<Vec<f64>> = (1..=4).map(|k| goodputs("0us", k)).collect();
    assert!(still.windows(2).all(|w| w[0] == w[1]), "{still:?}");
    // With 400 us of jitter on a link whose packets take 1.2 ms to send, the two flows' ACKs
    // and so their packets' turns at the drop-tail queue shift from seed to seed, and its
    // overflows fall on other packets.
    let noisy: Vec<Vec<f64>> = (1..=4).map(|k| goodputs("400us", k)).collect();
    let distinct = noisy
        .iter()
        .enumerate()
        .filter(|(i, g)| noisy[..*i].iter().all(|h| h != *g))
        .count();
    assert!(distinct >= 3, "{noisy:?}");
    assert_eq!(goodputs("400us", 2), noisy[1]);
    // The noise moves no bytes in or out: the two flows share the link about as before.
    for g in &noisy {
        let sum: f64 = g.iter().sum();
        let still_sum: f64 = still[0].iter().sum();
        assert!(
            (sum - still_sum).abs() < 0.05 * still_sum,
            "{sum} vs {still_sum}"
        );
    }
}
