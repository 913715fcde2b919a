//! Run a scenario file without Python and report the engine's speed; the benchmark drives
//! this binary so its peak memory is the simulator's alone.
//!
//! `cargo run --release -p pathweave-sim --example run -- FILE [--seed N] [--json] [--link NAME]`
#![allow(clippy::disallowed_methods)] // a benchmark reads the wall clock

use pathweave_sim::{Scenario, Simulation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut file = None;
    let mut seed = None;
    let mut json = false;
    let mut link = "bottleneck".to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--seed" => seed = it.next().and_then(|s| s.parse().ok()),
            "--link" => link = it.next().cloned().unwrap_or_default(),
            _ if file.is_none() => file = Some(a.clone()),
            _ => {
                eprintln!("unexpected argument '{a}'");
                std::process::exit(2);
            }
        }
    }
    let Some(path) = file else {
        eprintln!("usage: run FILE [--seed N] [--json] [--link NAME]");
        std::process::exit(2);
    };
    let sc = match Scenario::load(std::path::Path::new(&path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let t0 = std::time::Instant::now();
    let mut sim = Simulation::new(&sc, seed);
    sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let r = sim.results();
    if let Err(e) = sim.check_conservation() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let bn = (0..r.links.name.len())
        .find(|&i| r.links.name[i] == link && r.links.direction[i] == "forward");
    let bn_pkts = bn.map_or(0, |i| r.links.delivered_packets[i]);
    let total: f64 = r.flows.goodput_bps.iter().sum();
    let jain = pathweave_sim::results::jain_index(&r.flows.goodput_bps);
    if json {
        println!(
            "{{\"flows\": {}, \"wall_s\": {wall:.6}, \"events\": {}, \"bottleneck_packets\": {bn_pkts}, \
             \"aggregate_goodput_bps\": {total:.1}, \"jain\": {jain:.6}, \"peak_packets\": {}, \"goodput_bps\": {:?}}}",
            r.flows.name.len(),
            r.stats.events,
            r.stats.peak_packets,
            r.flows.goodput_bps
        );
        return;
    }
    for i in 0..r.flows.name.len() {
        println!(
            "{:>12} goodput {:8.3} Mbps  loss-event rate {:.5}  timeouts {:3}  mean cwnd {:6.1} pkt  srtt {:.4} s",
            r.flows.name[i],
            r.flows.goodput_bps[i] / 1e6,
            r.flows.loss_event_rate[i],
            r.flows.timeouts[i],
            r.flows.mean_cwnd_bytes[i] / 1000.0,
            r.flows.mean_srtt_s[i]
        );
    }
    for g in &r.fairness {
        println!(
            "group {}: {} flows, total {:.3} Mbps, Jain {:.4}",
            g.group,
            g.flows,
            g.total_goodput_bps / 1e6,
            g.jain
        );
    }
    if let Some(i) = bn {
        println!(
            "{link}: {} packets, utilisation {:.4}, drops: overflow {} early {} forced {}",
            bn_pkts,
            r.links.utilization[i],
            r.links.drops_overflow[i],
            r.links.drops_early[i],
            r.links.drops_forced[i]
        );
        println!(
            "{link} packets per wall-clock second: {:.0}",
            bn_pkts as f64 / wall
        );
    }
    println!(
        "wall {wall:.3} s, {} events, {:.2} M events/s, peak packets {}",
        r.stats.events,
        r.stats.events as f64 / wall / 1e6,
        r.stats.peak_packets
    );
}
