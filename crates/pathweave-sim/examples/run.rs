//! Run a scenario file and print its per-flow table and the engine's speed.
//! `cargo run --release -p pathweave-sim --example run -- FILE [SEED]`
#![allow(clippy::disallowed_methods)] // a benchmark reads the wall clock

use pathweave_sim::{Scenario, Simulation};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: run FILE [SEED]");
        std::process::exit(2);
    };
    let sc = match Scenario::load(std::path::Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let seed = args.get(2).and_then(|s| s.parse().ok());
    let t0 = std::time::Instant::now();
    let mut sim = Simulation::new(&sc, seed);
    sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let r = sim.results();
    if let Err(e) = sim.check_conservation() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    for i in 0..r.flows.name.len() {
        println!(
            "{:>12} goodput {:8.3} Mbps  loss-ev-rate {:.5}  timeouts {:4}  cwnd {:8.0}  srtt {:.4}",
            r.flows.name[i],
            r.flows.goodput_bps[i] / 1e6,
            r.flows.loss_event_rate[i],
            r.flows.timeouts[i],
            r.flows.mean_cwnd_bytes[i],
            r.flows.mean_srtt_s[i]
        );
        println!(
            "             drops/pkt {:.5}  retx {}",
            r.flows.drops[i] as f64 / r.flows.packets_sent[i] as f64,
            r.flows.retransmits[i]
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
    for i in 0..r.links.name.len() {
        if r.links.direction[i] == "forward" && r.links.name[i] == "bottleneck" {
            println!(
                "bottleneck: {} pkts, util {:.4}, drops overflow {} early {} forced {}",
                r.links.delivered_packets[i],
                r.links.utilization[i],
                r.links.drops_overflow[i],
                r.links.drops_early[i],
                r.links.drops_forced[i]
            );
            println!(
                "bottleneck packets per wall second: {:.0}",
                r.links.delivered_packets[i] as f64 / wall
            );
        }
    }
    println!(
        "wall {:.3}s, events {}, {:.2} M events/s, peak packets {}",
        wall,
        r.stats.events,
        r.stats.events as f64 / wall / 1e6,
        r.stats.peak_packets
    );
}
