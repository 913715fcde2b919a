//! The machine's memory system as the many-flow runs meet it: random reads of whole cache
//! lines spread over a buffer far larger than the caches, as `K` independent chains of
//! dependent reads. One chain gives the latency of a miss (TLB miss included); many chains
//! give the time per miss when the core keeps several in flight, the throughput a run whose
//! records have left the caches is bound by however early it prefetches. Prints one JSON
//! line per chain count.
//!
//! `cargo run --release -p pathweave-sim --example mem_latency -- [--huge] [MEGABYTES] [READS]`
//! (defaults 256 and 4,000,000). With `--huge` the buffer asks for transparent huge pages, as
//! the simulator's many-flow runs do (see `pathweave_sim::hugepages`), so that comparing the
//! two separates the cost of the page walk from that of the miss itself.
#![allow(clippy::disallowed_methods)] // a benchmark reads the wall clock

use std::io::Write;

#[global_allocator]
static ALLOC: pathweave_sim::hugepages::HugePages = pathweave_sim::hugepages::HugePages;

/// One cache line: the index of the next line in its chain, and padding.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line {
    next: u64,
    _pad: [u64; 7],
}

/// The `i`-th argument as a positive number, or `default` if absent.
fn arg(args: &[String], i: usize, name: &str, default: u64) -> Result<u64, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => match s.parse::<u64>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!("{name} must be a positive whole number, got {s:?}")),
        },
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let asked_huge = args.first().is_some_and(|a| a == "--huge");
    if asked_huge {
        args.remove(0);
    }
    let parsed = (|| {
        if args.len() > 2 {
            return Err(format!(
                "expected [--huge] and at most MEGABYTES and READS, got {:?}",
                args
            ));
        }
        let megabytes = arg(&args, 0, "MEGABYTES", 256)?;
        if megabytes > 65_536 {
            return Err(format!("MEGABYTES must be at most 65536, got {megabytes}"));
        }
        Ok((megabytes, arg(&args, 1, "READS", 4_000_000)?))
    })();
    let (megabytes, reads) = match parsed {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mem_latency: {e}");
            std::process::exit(2);
        }
    };
    // Enabled before the buffer is allocated, so that its pages are first touched after the
    // advice. False where the kernel or the C library cannot give huge pages.
    let huge = asked_huge && pathweave_sim::hugepages::enable();
    if asked_huge && !huge {
        eprintln!("mem_latency: huge pages are not available here; measuring with small pages");
    }
    let n = (megabytes as usize).saturating_mul(1 << 20) / 64;
    // A random cyclic order of all lines (Fisher–Yates with xorshift), so that each read
    // lands on a line the hardware prefetchers cannot guess.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut order: Vec<u64> = (0..n as u64).collect();
    for i in (1..n).rev() {
        let j = (rand() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let mut lines = vec![
        Line {
            next: 0,
            _pad: [0; 7]
        };
        n
    ];
    for k in 0..n {
        lines[order[k] as usize].next = order[(k + 1) % n];
    }
    for chains in [1usize, 2, 4, 8, 16, 32] {
        let mut at: Vec<u64> = (0..chains).map(|c| order[c * (n / chains)]).collect();
        let steps = (reads / chains as u64).max(1);
        let t0 = std::time::Instant::now();
        for _ in 0..steps {
            for p in at.iter_mut() {
                *p = lines[*p as usize].next;
            }
        }
        let ns = t0.elapsed().as_secs_f64() * 1e9 / (steps * chains as u64) as f64;
        let checksum: u64 = at.iter().sum();
        let line = format!(
            "{{\"megabytes\": {megabytes}, \"huge_pages\": {huge}, \"chains\": {chains}, \"ns_per_read\": {ns:.1}, \"checksum\": {checksum}}}"
        );
        // A closed pipe (the reader took what it wanted) ends the run quietly.
        if writeln!(std::io::stdout(), "{line}").is_err() {
            return;
        }
    }
}
