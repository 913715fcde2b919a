//! Memory flat in simulated time: a run ten times longer that moves its time series out as it
//! goes needs no more memory. (That the chunks add up to the series of an uninterrupted run is
//! checked in `series_chunks.rs`.)

mod common;
use common::*;
use pathweave_cc::Duration;
use pathweave_sim::Simulation;

/// Run to the end in one-second steps, moving the series out after each step and dropping
/// them (a real driver would write them out); returns the rows seen and the final results.
fn run_streaming(sc: &pathweave_sim::Scenario) -> (usize, pathweave_sim::Results) {
    let mut sim = Simulation::new(sc, None);
    let mut rows = 0;
    while !sim.finished() {
        sim.run_until(sim.now() + Duration::from_secs(1));
        let c = sim.take_series();
        rows += c.flows.time_s.len() + c.subflows.time_s.len() + c.links.time_s.len();
    }
    sim.check_conservation().unwrap_or_else(|e| panic!("{e}"));
    (rows, sim.into_results())
}

/// This process's peak resident set (VmHWM) in KiB.
#[cfg(target_os = "linux")]
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Peak memory of a 100 s run and of a 1000 s run of the same scenario, both moving their
/// series out as they go: the long run must not raise the peak by more than 2 MB. This file
/// holds this one test, so the peak is this test's own. For scale: kept in memory, the long run's series alone would be about
/// 1000 s × 10 samples/s × (4 flows × 48 B + 4 subflows × 104 B + 4 links × 48 B) ≈ 8 MB.
#[cfg(target_os = "linux")]
#[test]
fn peak_memory_does_not_grow_with_simulated_time() {
    let short = scenario(&small_red_dumbbell(100));
    let long = scenario(&small_red_dumbbell(1000));
    let (rows_short, r) = run_streaming(&short);
    assert_eq!(r.stats.simulated_s, 100.0);
    let after_short = peak_rss_kib();
    let (rows_long, r) = run_streaming(&long);
    assert_eq!(r.stats.simulated_s, 1000.0);
    assert!(
        rows_long >= 9 * rows_short,
        "{rows_short} then {rows_long} rows"
    );
    let after_long = peak_rss_kib();
    assert!(after_short > 0);
    assert!(
        after_long <= after_short + 2048,
        "peak RSS grew from {after_short} KiB (100 s) to {after_long} KiB (1000 s)"
    );
}
