//! Emulate a scenario and print its flows and the emulator's timing:
//! `cargo run --release -p pathweave-emu --example emulate -- FILE [SECONDS]`.

use std::sync::atomic::AtomicBool;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: emulate FILE [SECONDS]");
        std::process::exit(2);
    };
    let mut s = match pathweave_sim::Scenario::load(std::path::Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Some(secs) = args.get(2).and_then(|a| a.parse::<f64>().ok()) {
        s.duration = pathweave_cc::Duration((secs * 1e9) as u64);
    }
    let stop = AtomicBool::new(false);
    match pathweave_emu::emulate(&s, &pathweave_emu::Options::default(), &stop) {
        Ok(o) => {
            let f = &o.results.flows;
            for i in 0..f.name.len() {
                println!(
                    "{:<12} {:<10} goodput {:8.3} Mbps  retx {:6}  losses {:5}  cwnd {:9.0} B  srtt {:7.2} ms",
                    f.name[i],
                    f.algorithm[i],
                    f.goodput_bps[i] / 1e6,
                    f.retransmits[i],
                    f.loss_events[i],
                    f.mean_cwnd_bytes[i],
                    f.mean_srtt_s[i] * 1e3
                );
            }
            let sf = &o.results.subflows;
            for i in 0..sf.flow.len() {
                println!(
                    "  flow {} subflow {} {:<20} {:8.3} Mbps",
                    sf.flow[i],
                    sf.subflow[i],
                    sf.path[i],
                    sf.throughput_bps[i] / 1e6
                );
            }
            println!("{:#?}", o.report);
        }
        Err(e) => {
            eprintln!("pathweave emulate: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
