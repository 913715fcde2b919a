//! The time series can be moved out of a running simulation chunk by chunk; the chunks add
//! up to exactly the series of an uninterrupted run, and the tables are unaffected.

mod common;
use common::*;
use pathweave_cc::Duration;
use pathweave_sim::results::SeriesChunk;
use pathweave_sim::Simulation;

fn append(all: &mut SeriesChunk, c: SeriesChunk) {
    all.flows.time_s.extend(c.flows.time_s);
    all.flows.flow.extend(c.flows.flow);
    all.flows.cwnd_bytes.extend(c.flows.cwnd_bytes);
    all.flows.ssthresh_bytes.extend(c.flows.ssthresh_bytes);
    all.flows.srtt_s.extend(c.flows.srtt_s);
    all.flows.rate_bps.extend(c.flows.rate_bps);
    all.links.time_s.extend(c.links.time_s);
    all.links.link.extend(c.links.link);
    all.links.queue_packets.extend(c.links.queue_packets);
    all.links.queue_bytes.extend(c.links.queue_bytes);
    all.links.red_average.extend(c.links.red_average);
    all.links.drops.extend(c.links.drops);
    all.links.wire_losses.extend(c.links.wire_losses);
    all.subflows.time_s.extend(c.subflows.time_s);
    all.subflows.cwnd_bytes.extend(c.subflows.cwnd_bytes);
    all.subflows.rate_bps.extend(c.subflows.rate_bps);
}

/// Run to the end in one-second steps, moving the series out after each step.
fn run_streaming(sc: &pathweave_sim::Scenario) -> (SeriesChunk, pathweave_sim::Results) {
    let mut sim = Simulation::new(sc, None);
    let mut all = SeriesChunk::default();
    while !sim.finished() {
        sim.run_until(sim.now() + Duration::from_secs(1));
        append(&mut all, sim.take_series());
    }
    sim.check_conservation().unwrap_or_else(|e| panic!("{e}"));
    (all, sim.into_results())
}

#[test]
fn series_taken_in_chunks_add_up_to_the_series_of_one_run() {
    let sc = scenario(&small_red_dumbbell(20));
    let whole = run(&sc, None);
    let (chunks, rest) = run_streaming(&sc);
    assert!(whole.flow_series.time_s.len() >= 4 * 199);
    // Debug formatting prints every float exactly and NaN as NaN (which `==` would reject).
    assert_eq!(
        format!("{:?}", chunks.flows),
        format!("{:?}", whole.flow_series)
    );
    assert_eq!(
        format!("{:?}", chunks.links),
        format!("{:?}", whole.link_series)
    );
    assert_eq!(chunks.subflows.time_s, whole.subflow_series.time_s);
    assert_eq!(chunks.subflows.cwnd_bytes, whole.subflow_series.cwnd_bytes);
    assert_eq!(chunks.subflows.rate_bps, whole.subflow_series.rate_bps);
    // Everything was taken: the final results hold no rows, and the tables are unchanged.
    assert!(rest.flow_series.time_s.is_empty() && rest.link_series.time_s.is_empty());
    assert_eq!(format!("{:?}", rest.flows), format!("{:?}", whole.flows));
    assert_eq!(format!("{:?}", rest.links), format!("{:?}", whole.links));
}
