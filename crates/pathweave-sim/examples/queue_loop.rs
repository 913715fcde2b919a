//! The bare event-queue loop the engine benchmark compares against: the scheduler alone,
//! popping one event and pushing one back for the same component a pseudo-random delay later,
//! with as many components pending as a scenario has. Prints events per second as JSON.
//!
//! `cargo run --release -p pathweave-sim --example queue_loop -- [COMPONENTS] [EVENTS]`
#![allow(clippy::disallowed_methods)] // a benchmark reads the wall clock

use pathweave_cc::{Duration, Instant};
use pathweave_sim::event::{ComponentId, Kind, Scheduler};

fn main() {
    let mut args = std::env::args().skip(1);
    let components: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(40);
    let events: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let mut s = Scheduler::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..components {
        s.push(Instant(next() % 1_000_000), ComponentId::new(Kind::Link, i));
    }
    let t0 = std::time::Instant::now();
    let mut checksum = 0u64;
    for _ in 0..events {
        let Some((t, c)) = s.pop_until(Instant::MAX) else {
            break;
        };
        checksum = checksum.wrapping_add(t.0 ^ c.0 as u64);
        // Delays of a link carrying 1000-byte packets at 10–100 Mbps plus up to 20 ms.
        let r = next();
        let dt = if r & 3 == 0 {
            r % 20_000_000
        } else {
            80_000 + r % 720_000
        };
        s.push(t + Duration(dt), c);
    }
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{{\"components\": {components}, \"events\": {}, \"wall_s\": {wall:.6}, \"events_per_s\": {:.0}, \"checksum\": {checksum}}}",
        s.events_processed(),
        s.events_processed() as f64 / wall
    );
}
