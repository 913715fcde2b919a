//! Run a scenario file and print every result (tables, time series, counters) in full
//! precision, one field per line, so two builds of the engine can be compared with `diff`.
//!
//! `cargo run --release -p pathweave-sim --example dump -- FILE [--seed N]`

use pathweave_sim::{Scenario, Simulation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut file = None;
    let mut seed = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => seed = it.next().and_then(|s| s.parse().ok()),
            _ if file.is_none() => file = Some(a.clone()),
            _ => {
                eprintln!("unexpected argument '{a}'");
                std::process::exit(2);
            }
        }
    }
    let Some(path) = file else {
        eprintln!("usage: dump FILE [--seed N]");
        std::process::exit(2);
    };
    let sc = match Scenario::load(std::path::Path::new(&path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut sim = Simulation::new(&sc, seed);
    sim.run();
    if let Err(e) = sim.check_conservation() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    // `{:#?}` prints every f64 in its shortest round-trip form, so equal text means equal bits.
    println!("{:#?}", sim.into_results());
}
