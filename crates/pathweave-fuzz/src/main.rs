//! Fuzz harness for the scenario parser and the network builder.
//!
//! Every input is a scenario file's text, derived deterministically from `(seed, index)`: even
//! indices are generated from the file format's structure (links, queues, loss, flows,
//! controllers, sweeps, with valid and invalid values mixed), odd indices are byte mutations of
//! the repository's own scenario files (bit flips, inserted and deleted bytes, interesting
//! numbers, lines spliced from other files). Each input is parsed and, when valid, built into a
//! simulation (no events are run).
//!
//! An input fails when it panics, takes longer than `--max-ms` (1 s) of CPU time, or makes the
//! live heap exceed `--max-mb` (256 MB). Time is the CPU time of the thread that parses, so a
//! machine busy with other work does not pass for a hang; a watchdog thread reports an input
//! still running past the limit at once, so a loop that never ends is caught too. A failing input is written to `--crashes` and the harness exits
//! non-zero; `--only N` reruns one index.

// A harness measures wall time by design; the simulator's ban on reading clocks is for the
// sans-IO code it exercises.
#![allow(clippy::disallowed_methods)]

mod alloc;
mod generate;
mod mutate;

use pathweave_sim::{Scenario, Simulation};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

struct Options {
    runs: u64,
    seed: u64,
    only: Option<u64>,
    max_ms: u64,
    max_mb: u64,
    corpus: PathBuf,
    crashes: PathBuf,
}

const USAGE: &str = "usage: pathweave-fuzz [--runs N] [--seed S] [--only INDEX] [--max-ms MS] \
                     [--max-mb MB] [--corpus DIR] [--crashes DIR]";

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        runs: 1_000_000,
        seed: 1,
        only: None,
        max_ms: 1000,
        max_mb: 256,
        corpus: PathBuf::from("scenarios"),
        crashes: PathBuf::from("target/fuzz-crashes"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag}: needs a value\n{USAGE}"))?;
        let number = || {
            value
                .replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("{flag} {value}: not a whole number\n{USAGE}"))
        };
        match flag.as_str() {
            "--runs" => o.runs = number()?,
            "--seed" => o.seed = number()?,
            "--only" => o.only = Some(number()?),
            "--max-ms" => o.max_ms = number()?,
            "--max-mb" => o.max_mb = number()?,
            "--corpus" => o.corpus = PathBuf::from(value),
            "--crashes" => o.crashes = PathBuf::from(value),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// The scenario files below `dir`, in a fixed order.
fn corpus(dir: &Path) -> Vec<Vec<u8>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(dir, &mut paths);
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// The input of `index`.
fn input(seed: u64, index: u64, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut rng = generate::rng(seed, index);
    if index % 2 == 0 || corpus.is_empty() {
        generate::scenario(&mut rng).into_bytes()
    } else {
        mutate::mutate(&mut rng, corpus)
    }
}

/// Parse and, if valid, build; whether the input was a valid scenario. Only a panic escapes
/// (as an `Err` from `catch_unwind`).
fn exercise(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    match Scenario::parse(&text, "fuzz.toml", "fuzz") {
        Ok(scenario) => {
            let sim = Simulation::new(&scenario, None);
            std::hint::black_box(&sim);
            true
        }
        Err(e) => {
            std::hint::black_box(e.to_string());
            false
        }
    }
}

fn save(dir: &Path, what: &str, index: u64, bytes: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join(format!("{what}-{index}.toml"));
    if let Err(e) = std::fs::write(&path, bytes) {
        eprintln!("pathweave-fuzz: cannot write {}: {e}", path.display());
    }
    path
}

fn main() -> ExitCode {
    let o = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pathweave-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    let corpus = corpus(&o.corpus);
    if corpus.is_empty() {
        eprintln!(
            "pathweave-fuzz: no scenario files under {} (run from the repository root or give \
             --corpus DIR)",
            o.corpus.display()
        );
        return ExitCode::from(2);
    }
    alloc::set_limit(o.max_mb.saturating_mul(1 << 20));
    // Panics are expected to be caught and reported here, once, with their input.
    std::panic::set_hook(Box::new(|_| {}));

    // A watchdog: an input still running after the limit (CPU time of the main thread) is saved
    // and the process exits.
    let current = Arc::new(Mutex::new((0u64, Vec::<u8>::new())));
    let started = Arc::new(AtomicU64::new(0)); // main thread's CPU ns + 1 at the input's start
    let done = Arc::new(AtomicBool::new(false));
    let cpu = alloc::CpuClock::this_thread();
    {
        let (current, started, done) = (current.clone(), started.clone(), done.clone());
        let (max_ms, crashes) = (o.max_ms, o.crashes.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let s = started.load(Ordering::Relaxed);
                let now = cpu.now().as_nanos() as u64 + 1;
                if s != 0 && now.saturating_sub(s) > max_ms.saturating_mul(1_000_000) {
                    let (index, bytes) = current.lock().map(|c| c.clone()).unwrap_or_default();
                    let path = save(&crashes, "hang", index, &bytes);
                    eprintln!(
                        "pathweave-fuzz: input {index} ran longer than {max_ms} ms of CPU; saved \
                         as {}",
                        path.display()
                    );
                    std::process::exit(1);
                }
            }
        });
    }

    let indices: Box<dyn Iterator<Item = u64>> = match o.only {
        Some(i) => Box::new(std::iter::once(i)),
        None => Box::new(0..o.runs),
    };
    let clock = std::time::Instant::now();
    let (mut ran, mut failures, mut valid) = (0u64, 0u64, 0u64);
    let mut slowest = (Duration::ZERO, 0u64);
    for index in indices {
        let bytes = input(o.seed, index, &corpus);
        if o.only.is_some() {
            // Rerunning one input: show it and what the reader says.
            let text = String::from_utf8_lossy(&bytes);
            println!("{text}");
            match Scenario::parse(&text, "fuzz.toml", "fuzz") {
                Ok(_) => println!("-- accepted"),
                Err(e) => println!("-- refused: {e}"),
            }
        }
        if let Ok(mut c) = current.lock() {
            c.0 = index;
            c.1.clone_from(&bytes);
        }
        alloc::reset_peak();
        let t0 = cpu.now();
        started.store(t0.as_nanos() as u64 + 1, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| exercise(&bytes)));
        started.store(0, Ordering::Relaxed);
        let took = cpu.now().saturating_sub(t0);
        if took > slowest.0 {
            slowest = (took, index);
        }
        ran += 1;
        let peak = alloc::peak();
        let problem = if outcome.is_err() {
            Some("panic")
        } else if took > Duration::from_millis(o.max_ms) {
            Some("slow")
        } else if alloc::exceeded() {
            Some("alloc")
        } else {
            None
        };
        if let Some(what) = problem {
            failures += 1;
            let path = save(&o.crashes, what, index, &bytes);
            eprintln!(
                "pathweave-fuzz: input {index}: {what} (peak heap {} MB); saved as {}",
                peak >> 20,
                path.display()
            );
            alloc::clear_exceeded();
        } else if matches!(outcome, Ok(true)) {
            valid += 1;
        }
        if ran % 100_000 == 0 {
            eprintln!(
                "pathweave-fuzz: {ran} inputs, {failures} failures, {:.0} inputs/s",
                ran as f64 / clock.elapsed().as_secs_f64()
            );
        }
    }
    done.store(true, Ordering::Relaxed);
    let secs = clock.elapsed().as_secs_f64();
    println!(
        "pathweave-fuzz: {ran} inputs ({valid} valid scenarios built) in {secs:.1} s, {:.0} \
         inputs/s; {failures} failures (panic, heap over {} MB, or over {} ms of CPU); slowest \
         input {} took {:.1} ms of CPU",
        ran as f64 / secs.max(1e-9),
        o.max_mb,
        o.max_ms,
        slowest.1,
        slowest.0.as_secs_f64() * 1e3
    );
    if failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input the harness once found failing (kept in pathweave-sim's
    /// `tests/fuzz-regressions/`) now stays within the harness's limits: no panic, at most
    /// 256 MB of live heap and one second of CPU.
    #[test]
    fn recorded_failures_stay_within_the_limits() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../pathweave-sim/tests/fuzz-regressions");
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("the regression directory exists")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        paths.sort();
        assert!(!paths.is_empty());
        let cpu = alloc::CpuClock::this_thread();
        for path in paths {
            let bytes = std::fs::read(&path).expect("readable");
            alloc::reset_peak();
            let before = alloc::peak();
            let t0 = cpu.now();
            let outcome = catch_unwind(AssertUnwindSafe(|| exercise(&bytes)));
            let took = cpu.now().saturating_sub(t0);
            assert!(outcome.is_ok(), "{}: panicked", path.display());
            let grew = alloc::peak().saturating_sub(before);
            assert!(
                grew < 256 << 20,
                "{}: peak heap grew by {grew} bytes",
                path.display()
            );
            assert!(
                took < Duration::from_secs(1),
                "{}: {took:?} of CPU",
                path.display()
            );
        }
    }
}
