//! Helpers shared by the simulation tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

use pathweave_sim::{Results, Scenario, Simulation};

/// Parse a scenario from TOML text, panicking with the validation message on error.
pub fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "<test>", "test").unwrap_or_else(|e| panic!("{e}"))
}

/// Run to the end, check packet conservation and return the results.
pub fn run(sc: &Scenario, seed: Option<u64>) -> Results {
    let mut sim = Simulation::new(sc, seed);
    sim.run();
    sim.check_conservation().unwrap_or_else(|e| panic!("{e}"));
    sim.results()
}

/// Row of the link table for `name` in the forward direction.
pub fn link_row(r: &Results, name: &str) -> usize {
    (0..r.links.name.len())
        .find(|&i| r.links.name[i] == name && r.links.direction[i] == "forward")
        .expect("link present")
}

/// Index of the flow called `name`.
pub fn flow_row(r: &Results, name: &str) -> usize {
    r.flows
        .name
        .iter()
        .position(|n| n == name)
        .expect("flow present")
}

/// A dumbbell: `n` flows on their own 1 Gbps access links of `access_delay(i)` into one
/// bottleneck of `rate`/`delay` with the given queue table.
pub fn dumbbell(
    n: usize,
    rate: &str,
    delay: &str,
    queue: &str,
    access_delay: &str,
    secs: u32,
) -> String {
    format!(
        r#"
duration = "{secs}s"
[[link]]
name = "bn"
rate = "{rate}"
delay = "{delay}"
queue = {queue}
[[link]]
name = "acc{{i}}"
count = {n}
rate = "1Gbps"
delay = "{access_delay}"
queue = {{ type = "droptail", limit = "10000pkt" }}
[[flow]]
name = "f{{i}}"
count = {n}
path = ["acc{{i}}", "bn"]
start = "{{i}}*13 ms"
"#
    )
}

/// `dumbbell` with 4 flows on a 20 Mbps RED bottleneck, sampled every 100 ms, for `secs`.
pub fn small_red_dumbbell(secs: u32) -> String {
    dumbbell(
        4,
        "20Mbps",
        "10ms",
        r#"{ type = "red", limit = "60pkt", min_th = 5, max_th = 15 }"#,
        "{n} ms",
        secs,
    )
    .replace(
        &format!("duration = \"{secs}s\""),
        &format!("duration = \"{secs}s\"\nsample_interval = \"100ms\""),
    )
}
