//! The huge-page allocator (`pathweave_sim::hugepages`), installed as this binary's global
//! allocator. A plain `main` rather than the test harness: the harness runs each test on a
//! thread of its own, whose small blocks come from one of glibc's per-thread arenas, while a
//! simulation (in the `run` binary or the Python module) allocates on the main thread's heap.
//!
//! What it checks, from the kernel's own account of the process's mappings
//! (`/proc/self/smaps`, whose `VmFlags` show `hg` for memory advised `MADV_HUGEPAGE`):
//! nothing is advised before a many-flow simulation is built; building one enables the
//! allocator; after that the heap that small blocks come from and the interior of a large
//! block are advised. Where the kernel has no transparent huge pages it prints why and stops.
#![allow(clippy::disallowed_methods)]

mod common;

use pathweave_sim::hugepages::{self, HugePages};
use pathweave_sim::{Scenario, Simulation};

#[global_allocator]
static ALLOC: HugePages = HugePages;

/// The `VmFlags` of the mapping that holds `addr`.
fn vm_flags(addr: usize) -> Vec<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("reading /proc/self/smaps");
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = lo <= addr && addr < hi;
                continue;
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.split_whitespace().map(str::to_owned).collect();
            }
        }
    }
    panic!("no mapping holds {addr:#x}")
}

fn advised(addr: usize) -> bool {
    vm_flags(addr).iter().any(|f| f == "hg")
}

/// A dumbbell of `n` flows, each on its own access link (built, never run).
fn dumbbell(n: usize) -> Scenario {
    let queue = r#"{ type = "droptail", limit = "100pkt" }"#;
    common::scenario(&common::dumbbell(n, "1Gbps", "10ms", queue, "1ms", 60))
}

fn main() {
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    let usable = match &mode {
        Ok(m) => !m.contains("[never]"),
        Err(_) => false,
    };
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || !usable {
        println!(
            "skipped: needs glibc Linux with transparent huge pages not set to never \
             (/sys/kernel/mm/transparent_hugepage/enabled: {:?})",
            mode.map(|m| m.trim().to_owned()).map_err(|e| e.to_string())
        );
        return;
    }

    // A small run leaves the allocator off, and so the heap unadvised.
    let small = Simulation::new(&dumbbell(8), None);
    assert!(!hugepages::enabled(), "an 8-flow run enabled huge pages");
    let early: Vec<Box<[u8; 512]>> = (0..4096).map(|_| Box::new([1u8; 512])).collect();
    let early_addr = early.last().map(|b| b.as_ptr() as usize).unwrap_or(0);
    assert!(
        !advised(early_addr),
        "the heap was advised before any many-flow run"
    );
    drop(small);

    // Building a run of MIN_FLOWS flows enables it.
    let many = Simulation::new(&dumbbell(hugepages::MIN_FLOWS), None);
    assert!(
        hugepages::enabled(),
        "a run of {} flows left huge pages off",
        hugepages::MIN_FLOWS
    );
    drop(many);

    // The heap grows into advised memory from now on. Blocks first fill what the dropped
    // runs freed, which may predate the advice; 96 MB of them go well past the heap's end
    // and its 32 MB padding, and every block in the whole 2 MB ranges between the end before
    // and the end after (but the last, which the break may cut) must lie in advised memory.
    let heap_end = || {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("reading /proc/self/maps");
        maps.lines()
            .filter(|l| l.ends_with("[heap]"))
            .filter_map(|l| l.split('-').nth(1)?.split(' ').next())
            .filter_map(|hi| usize::from_str_radix(hi, 16).ok())
            .max()
            .expect("a [heap] mapping")
    };
    const HUGE: usize = 2 << 20;
    let before = heap_end();
    let blocks: Vec<Box<[u8; 1024]>> = (0..98_304).map(|_| Box::new([2u8; 1024])).collect();
    let after = heap_end();
    let (lo, hi) = (
        (before + HUGE - 1) & !(HUGE - 1),
        (after & !(HUGE - 1)) - HUGE,
    );
    assert!(
        hi >= lo + 16 * HUGE,
        "the heap grew from {before:#x} to {after:#x} only"
    );
    let grown: Vec<usize> = blocks
        .iter()
        .map(|b| b.as_ptr() as usize)
        .filter(|&a| lo <= a && a < hi)
        .collect();
    assert!(
        grown.len() > 16_384,
        "{} blocks in the grown heap",
        grown.len()
    );
    for &a in grown.iter().step_by(1024) {
        assert!(
            advised(a),
            "the heap at {a:#x}, grown after enabling, is not advised"
        );
    }

    // A large block's interior is advised.
    let large = vec![3u8; 48 << 20];
    let inside = large.as_ptr() as usize + (24 << 20);
    assert!(
        advised(inside),
        "the interior of a 48 MB block is not advised"
    );

    // The data is what was written (the advice changes no contents).
    assert!(blocks.iter().all(|b| b.iter().all(|&x| x == 2)));
    assert!(large.iter().all(|&x| x == 3));
    assert!(early.iter().all(|b| b.iter().all(|&x| x == 1)));

    let status = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let huge = status
        .lines()
        .find(|l| l.starts_with("AnonHugePages:"))
        .unwrap_or("AnonHugePages: unknown");
    println!("huge pages: ok ({huge})");
}
