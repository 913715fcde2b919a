//! The scale benchmarks (`bench/scenarios/dumbbell-10k.toml`, `dumbbell-10k-scaled.toml`,
//! `dumbbell-10k-dense.toml`, `multipath-1k.toml`) at a size a test run affords: they
//! complete, conserve packets network-wide and per flow, and no link delivers more than its
//! rate allows.

mod common;
use common::*;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// A benchmark scenario with its counts and duration reduced.
fn reduced(file: &str, from: &str, to: &str, secs: u32) -> pathweave_sim::Scenario {
    let duration = format!("duration = \"{secs}s\"");
    edited(file, &[(from, to), ("duration = \"100s\"", &duration)])
}

/// A benchmark scenario with each `(from, to)` replaced; every `from` must occur.
fn edited(file: &str, edits: &[(&str, &str)]) -> pathweave_sim::Scenario {
    let path = format!("{ROOT}/bench/scenarios/{file}");
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    for (from, to) in edits {
        assert!(text.contains(from), "{file} no longer holds {from}");
        text = text.replace(from, to);
    }
    scenario(&text)
}

/// Packets created = delivered + dropped + lost on the wire + still in links.
fn conserved(r: &pathweave_sim::Results) {
    let s = &r.stats;
    assert_eq!(
        s.packets_created,
        s.packets_delivered + s.packets_dropped + s.packets_lost_on_wire + s.packets_in_flight
    );
}

/// Every link direction delivered at most rate × time bits (plus one packet in transmission
/// at the start of the run).
fn within_capacity(r: &pathweave_sim::Results) {
    for i in 0..r.links.name.len() {
        let bits = r.links.delivered_bytes[i] as f64 * 8.0;
        let cap = r.links.rate_bps[i] * r.stats.simulated_s + 1500.0 * 8.0;
        assert!(
            bits <= cap,
            "{} {}: {bits} > {cap}",
            r.links.name[i],
            r.links.direction[i]
        );
    }
}

#[test]
fn a_thousand_flow_dumbbell_completes_and_conserves_packets() {
    let sc = reduced("dumbbell-10k.toml", "count = 10000", "count = 1000", 5);
    assert_eq!(sc.flows.len(), 1000);
    let r = run(&sc, None); // checks conservation, network-wide and per flow
    assert_eq!(r.stats.simulated_s, 5.0);
    conserved(&r);
    within_capacity(&r);
    let bn = link_row(&r, "bottleneck");
    assert!(
        r.links.delivered_packets[bn] > 10_000,
        "{}",
        r.links.delivered_packets[bn]
    );
}

/// The scaled dumbbell at a tenth of its flows and of its bottleneck (still 1 Mbps per flow).
#[test]
fn a_thousand_flow_scaled_dumbbell_completes_and_conserves_packets() {
    let sc = edited(
        "dumbbell-10k-scaled.toml",
        &[
            ("count = 10000", "count = 1000"),
            ("rate = \"10Gbps\"", "rate = \"1Gbps\""),
            ("duration = \"20s\"", "duration = \"5s\""),
        ],
    );
    assert_eq!(sc.flows.len(), 1000);
    let r = run(&sc, None);
    conserved(&r);
    within_capacity(&r);
    let bn = link_row(&r, "bottleneck");
    assert_eq!(r.links.rate_bps[bn], 1e9);
    // Far more than the 6 kbps-per-flow dumbbell could carry in the same time (60 Mbps).
    assert!(
        r.links.delivered_bytes[bn] as f64 * 8.0 > 60e6 * 5.0,
        "{}",
        r.links.delivered_bytes[bn]
    );
}

/// The dense dumbbell at a tenth of its flows and of its bottleneck, with the receivers'
/// delays spread over the same 0-2.7 ms: every flow carries data, within its share.
#[test]
fn a_thousand_flow_dense_dumbbell_completes_and_conserves_packets() {
    let sc = edited(
        "dumbbell-10k-dense.toml",
        &[
            ("count = 10000", "count = 1000"),
            ("rate = \"10Gbps\"", "rate = \"1Gbps\""),
            ("{n}*8/30000 ms", "{n}*8/3000 ms"),
            ("duration = \"5s\"", "duration = \"2s\""),
        ],
    );
    assert_eq!(sc.flows.len(), 1000);
    let r = run(&sc, None);
    conserved(&r);
    within_capacity(&r);
    let bn = link_row(&r, "bottleneck");
    // At least half of what 1 Gbps carries in one second of the two.
    assert!(
        r.links.delivered_bytes[bn] as f64 * 8.0 > 0.5e9,
        "{}",
        r.links.delivered_bytes[bn]
    );
    // Each flow starts within the first 0.1 s and has 1.9 s to deliver: none is left out.
    let idle = r.flows.goodput_bps.iter().filter(|&&g| g <= 0.0).count();
    assert_eq!(idle, 0, "flows with no goodput");
}

#[test]
fn a_hundred_connection_multipath_dumbbell_completes_and_conserves_packets() {
    let sc = reduced("multipath-1k.toml", "count = 1000", "count = 100", 5);
    assert_eq!(sc.flows.len(), 100);
    let r = run(&sc, None);
    assert_eq!(r.subflows.flow.len(), 200);
    conserved(&r);
    within_capacity(&r);
    for name in ["bottleneck", "bottleneck2"] {
        let l = link_row(&r, name);
        assert!(r.links.delivered_packets[l] > 10_000, "{name}");
    }
}
