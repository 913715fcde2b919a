//! The network of a scenario as every engine builds it — the discrete-event simulator and the
//! real-time emulator (`pathweave-emu`) alike: the link directions with their random streams,
//! each subflow's data and acknowledgement routes, the timeline of link changes, and the link
//! tables and series the results report. One definition, so the two engines' networks and
//! link figures cannot drift apart.

use crate::event::{ComponentId, Kind, Scheduler};
use crate::link::LinkDir;
use crate::results::{jain_index, FlowTable, GroupFairness, LinkSeries, LinkTable};
use crate::rng::{LazyStream, Purpose};
use crate::scenario::{Columns, LinkChange, Scenario, SubflowSpec};
use pathweave_cc::{Bytes, Duration, Instant};
use std::collections::BTreeMap;

/// Every link direction of `scenario`: direction `2·k` is link `k` forward, `2·k + 1` its
/// reverse, each with its own random stream under `seed`.
pub fn build_links(scenario: &Scenario, seed: u64) -> Vec<LinkDir> {
    let mut links = Vec::with_capacity(2 * scenario.links.len());
    for (k, l) in scenario.links.iter().enumerate() {
        for (d, spec) in [&l.forward, &l.reverse].into_iter().enumerate() {
            let i = 2 * k + d;
            links.push(LinkDir::new(
                spec,
                ComponentId::new(Kind::Link, i),
                LazyStream::new(seed, Purpose::Link, i),
            ));
        }
    }
    links
}

/// A subflow's data route (the link directions of its path, in order) and its ACK route (the
/// opposite directions, in reverse order).
pub fn subflow_routes(sf: &SubflowSpec) -> (Vec<u32>, Vec<u32>) {
    let fwd = sf
        .path
        .iter()
        .map(|h| (2 * h.link + h.reverse as usize) as u32)
        .collect();
    let rev = sf
        .path
        .iter()
        .rev()
        .map(|h| (2 * h.link + !h.reverse as usize) as u32)
        .collect();
    (fwd, rev)
}

/// The round trip of a handshake segment of `size` bytes over `sf`'s path as the links are at
/// time zero: every link direction's delay and transmission time, out and back, without
/// queueing (the handshake's segments are not simulated).
pub fn handshake_rtt(scenario: &Scenario, sf: &SubflowSpec, size: u32) -> Duration {
    let mut t = Duration::ZERO;
    for h in &sf.path {
        let l = &scenario.links[h.link];
        for spec in [&l.forward, &l.reverse] {
            t = t
                + spec.delay
                + spec
                    .rate
                    .transmission_time(Bytes(size as u64))
                    .unwrap_or_default();
        }
    }
    t
}

/// When each subflow of a TCP flow starting at `start` sends its first data if handshakes are
/// modelled, given each subflow's own start (`None`: the flow's). As Linux MPTCP (kernel 6.x,
/// in-kernel path manager, measured with `ss` on the emulated paths: the joining subflow's
/// first data left three round trips after the first subflow's):
/// * the first subflow sends with the third segment of its SYN, SYN-ACK, ACK exchange, one
///   round trip `R₀` after its start;
/// * the path manager opens further subflows once the connection is fully established, when
///   the first data-level acknowledgement arrives, `2·R₀` after the start; a joining subflow
///   then exchanges SYN and SYN-ACK with MP_JOIN and may send data only once its third ACK is
///   acknowledged (RFC 8684 §3.2), two round trips `R_j` of its own path, or from its own
///   start, if that is later than the connection's establishment.
///
/// A single-path flow is its first subflow.
pub fn handshake_joins(
    scenario: &Scenario,
    subflows: &[SubflowSpec],
    start: Instant,
    size: u32,
) -> Vec<Instant> {
    let Some(first) = subflows.first() else {
        return Vec::new();
    };
    let r0 = handshake_rtt(scenario, first, size);
    let own = |sf: &SubflowSpec| sf.start.unwrap_or(start);
    let established = own(first) + r0 + r0;
    subflows
        .iter()
        .enumerate()
        .map(|(j, sf)| {
            if j == 0 {
                own(sf) + r0
            } else {
                let rj = handshake_rtt(scenario, sf, size);
                own(sf).max(established) + rj + rj
            }
        })
        .collect()
}

/// A subflow's path as the results name it: link names joined by ">", "~" marking a reverse
/// traversal.
pub fn path_label(scenario: &Scenario, sf: &SubflowSpec) -> String {
    let names: Vec<String> = sf
        .path
        .iter()
        .map(|h| {
            let name = &scenario.links[h.link].name;
            if h.reverse {
                format!("~{name}")
            } else {
                name.clone()
            }
        })
        .collect();
    names.join(">")
}

/// Every scheduled link change as `(time, link, change)`, in time order (file order within
/// equal times).
pub fn timeline(scenario: &Scenario) -> Vec<(Instant, usize, LinkChange)> {
    let mut t: Vec<(Instant, usize, LinkChange)> = scenario
        .links
        .iter()
        .enumerate()
        .flat_map(|(k, l)| l.events.iter().map(move |e| (e.at, k, e.change)))
        .collect();
    t.sort_by_key(|e| e.0); // stable
    t
}

/// Apply `change` to both directions of link `k` at `now`.
pub fn apply_change(
    links: &mut [LinkDir],
    k: usize,
    change: LinkChange,
    now: Instant,
    sched: &mut Scheduler,
) {
    for l in &mut links[2 * k..2 * k + 2] {
        match change {
            LinkChange::Rate(r) => l.set_rate(r, now, sched),
            LinkChange::Delay(x) => l.set_delay(x, now, sched),
            LinkChange::Down => l.set_up(false, now, sched),
            LinkChange::Up => l.set_up(true, now, sched),
        }
    }
}

/// Append one sample at `now` of the link directions `sampled` to `series`, in the
/// `columns` chosen (see [`LINK_SERIES_COLUMNS`](crate::results::LINK_SERIES_COLUMNS)).
pub fn sample_links(
    links: &mut [LinkDir],
    sampled: &[u32],
    columns: Columns,
    now: Instant,
    series: &mut LinkSeries,
) {
    let t = now.as_secs_f64();
    // One allocation per column and sample instead of repeated doubling (a chunk moved out
    // by `take_series` starts empty).
    let n = sampled.len();
    series.time_s.reserve(n);
    series.link.reserve(n);
    let reserve = |k: usize| if columns.has(k) { n } else { 0 };
    series.queue_packets.reserve(reserve(0));
    series.queue_bytes.reserve(reserve(1));
    series.red_average.reserve(reserve(2));
    series.drops.reserve(reserve(3));
    series.wire_losses.reserve(reserve(4));
    for &l in sampled {
        let link = &mut links[l as usize];
        let (pkts, bytes) = link.queue_len(now);
        series.time_s.push(t);
        series.link.push(l);
        if columns.has(0) {
            series.queue_packets.push(pkts);
        }
        if columns.has(1) {
            series.queue_bytes.push(bytes.0);
        }
        if columns.has(2) {
            series
                .red_average
                .push(link.red_average().unwrap_or(f64::NAN));
        }
        // The drop counters alone: `stats()` would also walk the held packets for the
        // delivered bytes.
        let (congestive, wire) = link.drop_counts();
        if columns.has(3) {
            series.drops.push(congestive);
        }
        if columns.has(4) {
            series.wire_losses.push(wire);
        }
    }
}

/// The per-direction link table after `run_s` seconds.
pub fn link_table(scenario: &Scenario, links: &[LinkDir], run_s: f64) -> LinkTable {
    let mut lt = LinkTable::default();
    let run = run_s.max(1e-9);
    for (i, l) in links.iter().enumerate() {
        let spec = &scenario.links[i / 2];
        lt.name.push(spec.name.clone());
        lt.direction
            .push(if i % 2 == 0 { "forward" } else { "reverse" }.to_string());
        lt.rate_bps.push(l.rate().bps() as f64);
        let stats = l.stats();
        lt.arrivals.push(stats.arrivals);
        lt.delivered_packets.push(stats.delivered);
        lt.delivered_bytes.push(stats.delivered_bytes);
        lt.utilization
            .push(stats.delivered_bytes as f64 * 8.0 / (l.rate().bps() as f64 * run));
        lt.drops_overflow.push(stats.drops_overflow);
        lt.drops_early.push(stats.drops_early);
        lt.drops_forced.push(stats.drops_forced);
        lt.drops_wire.push(stats.drops_wire);
    }
    lt
}

/// Jain's index of goodput per group of the flow table, in group-name order.
pub fn fairness(ft: &FlowTable) -> Vec<GroupFairness> {
    let mut groups: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (g, x) in ft.group.iter().zip(&ft.goodput_bps) {
        groups.entry(g.as_str()).or_default().push(*x);
    }
    groups
        .into_iter()
        .map(|(g, xs)| GroupFairness {
            group: g.to_string(),
            flows: xs.len(),
            total_goodput_bps: xs.iter().sum(),
            jain: jain_index(&xs),
        })
        .collect()
}
