//! The command line `pathweave kernel load | unload | status | bmc-manager` (and
//! `reference-reno`), shared by the `pathweave-kernel` binary and the Python package's
//! extension, which calls [`main`] with the arguments after `pathweave kernel`: one loader,
//! reached from both.

use crate::{KernelError, Prefix};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const USAGE: &str = "\
usage: pathweave kernel COMMAND [--prefix P]

commands:
  load          load pw_lia, pw_olia, pw_balia, pw_coupled, pw_bmc and pw_kv and pin them
                under /sys/fs/bpf/pathweave/P so they stay registered (root)
  unload        remove the pins; the controllers unregister when no socket uses them (root)
  status        list what is loaded: controllers, connections per controller, counters (root)
  bmc-manager   run BMC's proportion manager for pw_bmc connections (root)
                [--period SECONDS (default 1)] [--k K (default 0.5)]
                [--tolerance T (default 0)] [--duration SECONDS (default: until killed)]
  reference-reno  register pwref_reno, the kernel's Reno behind a BPF struct_ops table,
                so the BPF run-time statistics can time it (root; for make bench-kernel)
                [--duration SECONDS (default: until standard input closes)]

options:
  --prefix P    names P_lia … P_kv (1 to 7 of a-z0-9, default pw)
";

/// Runs the command line `args` (without the program name) and returns its exit code: 0
/// success, 1 a failure while loading or running, 2 bad input or a machine (or a build) that
/// cannot run BPF congestion control. Errors are printed on stderr as
/// `pathweave kernel: error: …`. `stop` ends `bmc-manager` and `reference-reno --duration`
/// at their next check (every 100 ms); `rebuild` completes the message of a build without the
/// BPF programs with how to get them.
pub fn main(args: &[String], stop: &AtomicBool, rebuild: &str) -> i32 {
    match run(args, stop) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{}", message(&e, rebuild));
            e.exit_code()
        }
    }
}

/// The line printed for error `e`; a build without the BPF programs adds `rebuild`.
pub fn message(e: &KernelError, rebuild: &str) -> String {
    match e {
        KernelError::NoBpfBuild => format!("pathweave kernel: error: {e}; {rebuild}"),
        e => format!("pathweave kernel: error: {e}"),
    }
}

#[cfg_attr(not(feature = "bpf"), allow(dead_code))]
/// Sleeps for `d`, in steps of at most 100 ms; false if `stop` was set meanwhile.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    const STEP: Duration = Duration::from_millis(100);
    let mut left = d;
    while !left.is_zero() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let step = left.min(STEP);
        std::thread::sleep(step);
        left -= step;
    }
    !stop.load(Ordering::Relaxed)
}

struct Options {
    prefix: Option<Prefix>,
    period: f64,
    k: f64,
    tolerance: f64,
    duration: Option<f64>,
}

fn number(flag: &str, v: Option<&String>, lo: f64, hi: f64) -> Result<f64, KernelError> {
    let v = v.ok_or_else(|| KernelError::BadArgument(format!("{flag} needs a value")))?;
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= lo && x <= hi => Ok(x),
        _ => Err(KernelError::BadArgument(format!(
            "{flag} {v:?} is not valid: give a number from {lo} to {hi}"
        ))),
    }
}

fn parse(args: &[String]) -> Result<Options, KernelError> {
    let mut o = Options {
        prefix: None,
        period: 1.0,
        k: 0.5,
        tolerance: 0.0,
        duration: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prefix" => {
                let v = it
                    .next()
                    .ok_or_else(|| KernelError::BadArgument("--prefix needs a value".into()))?;
                o.prefix = Some(Prefix::new(v)?);
            }
            "--period" => o.period = number(a, it.next(), 0.01, 3600.0)?,
            "--k" => o.k = number(a, it.next(), 1e-6, 3.999)?,
            "--tolerance" => o.tolerance = number(a, it.next(), 0.0, 10.0)?,
            "--duration" => o.duration = Some(number(a, it.next(), 0.0, 1e9)?),
            other => {
                return Err(KernelError::BadArgument(format!(
                    "unknown option {other:?}; allowed: --prefix, --period, --k, --tolerance, \
                     --duration"
                )))
            }
        }
    }
    Ok(o)
}

fn run(args: &[String], stop: &AtomicBool) -> Result<(), KernelError> {
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return Err(KernelError::BadArgument("a command is needed".into()));
    };
    match cmd.as_str() {
        "-h" | "--help" => {
            print!("{USAGE}");
            return Ok(());
        }
        "--version" => {
            println!(
                "pathweave-kernel {} (BPF programs version {}{})",
                env!("CARGO_PKG_VERSION"),
                crate::PROGRAM_VERSION,
                if crate::HAS_BPF { "" } else { ", not built" }
            );
            return Ok(());
        }
        "load" | "unload" | "status" | "bmc-manager" | "reference-reno" => {}
        other => {
            return Err(KernelError::BadArgument(format!(
                "unknown command {other:?}; allowed: load, unload, status, bmc-manager, \
             reference-reno"
            )))
        }
    }
    let opts = parse(&args[1..])?;
    commands::run(cmd, &opts, stop)
}

#[cfg(not(feature = "bpf"))]
mod commands {
    use super::Options;
    use crate::KernelError;
    use std::sync::atomic::AtomicBool;

    pub(super) fn run(_cmd: &str, _opts: &Options, _stop: &AtomicBool) -> Result<(), KernelError> {
        Err(KernelError::NoBpfBuild)
    }
}

#[cfg(feature = "bpf")]
mod commands {
    use super::{sleep_unless_stopped, Options};
    use crate::bmc::{Manager, ManagerConfig, PeriodRule};
    use crate::loader::{self, Loaded, Pinned};
    use crate::names::Algorithm;
    use crate::{KernelError, Prefix};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    pub(super) fn run(cmd: &str, opts: &Options, stop: &AtomicBool) -> Result<(), KernelError> {
        let prefix = opts.prefix.clone().unwrap_or_default();
        match cmd {
            "load" => {
                let mut l = Loaded::load(&prefix)?;
                // A pin that fails undoes the others; `l` then drops and unregisters.
                let dir = l.pin()?;
                let names: Vec<String> = Algorithm::ALL.iter().map(|a| prefix.name(*a)).collect();
                println!(
                    "loaded {} (pinned under {})",
                    names.join(", "),
                    dir.display()
                );
                println!(
                    "use one per socket (setsockopt TCP_CONGESTION) or per namespace \
                     (sysctl net.ipv4.tcp_congestion_control={})",
                    prefix.name(Algorithm::Lia)
                );
                Ok(())
            }
            "unload" => {
                let removed = loader::unload(&prefix)?;
                let names: Vec<String> = removed.iter().map(|a| prefix.name(*a)).collect();
                if names.is_empty() {
                    // What an earlier load left: some of its maps, or an empty directory.
                    println!(
                        "no controller was pinned under {}; removed what was left there",
                        prefix.pin_dir().display()
                    );
                } else {
                    println!("unloaded {}", names.join(", "));
                }
                Ok(())
            }
            "status" => status(opts.prefix.as_ref()),
            "bmc-manager" => bmc_manager(&prefix, opts, stop),
            "reference-reno" => reference_reno(opts, stop),
            _ => unreachable!("commands are checked before"),
        }
    }

    /// Lists every load it can read; a directory under the pin root that is not one is
    /// reported on stderr with how to remove it, and makes the exit code 1.
    fn status(only: Option<&Prefix>) -> Result<(), KernelError> {
        let loader::Status { prefixes, broken } = loader::status(only)?;
        if prefixes.is_empty() && broken.is_empty() {
            println!("no pathweave controllers are loaded");
            return Ok(());
        }
        print_status(prefixes);
        if broken.is_empty() {
            return Ok(());
        }
        for b in &broken {
            let dir = std::path::Path::new(crate::names::PIN_ROOT).join(&b.name);
            let remove = match Prefix::new(&b.name) {
                Ok(p) => format!("`pathweave kernel unload --prefix {p}`"),
                Err(_) => format!("`rm -r {}`", dir.display()),
            };
            eprintln!(
                "pathweave kernel: prefix {:?}: {} is not a readable load: {}; if it is left \
                 over, remove it with {remove}",
                b.name,
                dir.display(),
                b.error
            );
        }
        Err(KernelError::BrokenPins(
            broken
                .iter()
                .map(|b| b.name.clone())
                .collect::<Vec<_>>()
                .join(", "),
        ))
    }

    fn print_status(all: Vec<loader::PrefixStatus>) {
        for s in all {
            let version = s
                .stats
                .iter()
                .find(|(k, _)| *k == crate::maps::Stat::Version)
                .map_or(0, |(_, v)| *v);
            println!(
                "prefix {} (program version {version}): {} connections",
                s.prefix, s.connections
            );
            for (a, pinned, registered, n) in &s.algorithms {
                println!(
                    "  {:<12} {:<10} {:<14} {n} connections",
                    s.prefix.name(*a),
                    if *pinned { "pinned" } else { "not pinned" },
                    if *registered {
                        "registered"
                    } else {
                        "not registered"
                    },
                );
            }
            let width = s
                .stats
                .iter()
                .map(|(k, _)| k.name().len())
                .max()
                .unwrap_or(0);
            for (k, v) in &s.stats {
                println!("    {:<width$} {v}", k.name());
            }
        }
    }

    fn bmc_manager(prefix: &Prefix, opts: &Options, stop: &AtomicBool) -> Result<(), KernelError> {
        let pinned = Pinned::open(prefix)?;
        let mut m = Manager::new(ManagerConfig {
            k: opts.k,
            tolerance: opts.tolerance,
            period: PeriodRule::Fixed(opts.period),
        });
        let period = Duration::from_secs_f64(opts.period);
        let rounds = opts.duration.map(|d| (d / opts.period).ceil() as u64);
        let mut done = 0u64;
        println!(
            "BMC proportion manager on {} every {:.3} s (K = {})",
            prefix.name(Algorithm::Bmc),
            opts.period,
            opts.k
        );
        loop {
            let conns: Vec<_> = pinned
                .connections()?
                .into_iter()
                .filter(|c| c.algo == Algorithm::Bmc.id())
                .collect();
            for u in m.step(&conns, opts.period) {
                pinned.set_weights(u.id, &u.weights)?;
                let used: Vec<String> = u
                    .real
                    .iter()
                    .zip(u.weights)
                    .filter(|(_, f)| *f > 0)
                    .map(|(r, _)| format!("{r:.3}"))
                    .collect();
                println!("connection {}: weights {}", u.id, used.join(" "));
            }
            done += 1;
            if rounds.is_some_and(|r| done >= r) || !sleep_unless_stopped(period, stop) {
                return Ok(());
            }
        }
    }

    /// Keeps pwref_reno registered until the duration passes or standard input closes.
    fn reference_reno(opts: &Options, stop: &AtomicBool) -> Result<(), KernelError> {
        use crate::reference::{ReferenceReno, NAME};
        use std::io::Read;
        let reg = ReferenceReno::register()?;
        println!("{NAME}");
        match opts.duration {
            Some(d) => {
                eprintln!("pathweave kernel: {NAME} registered for {d} s");
                sleep_unless_stopped(Duration::from_secs_f64(d), stop);
            }
            None => {
                eprintln!("pathweave kernel: {NAME} registered until standard input closes");
                let mut sink = [0u8; 4096];
                let mut stdin = std::io::stdin().lock();
                while !matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {}
            }
        }
        drop(reg);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_build_without_the_bpf_programs_adds_how_to_get_them() {
        let m = message(&KernelError::NoBpfBuild, "then rebuild it");
        assert!(m.starts_with("pathweave kernel: error: "), "{m}");
        assert!(
            m.contains("no BPF programs") && m.contains("apt-get install"),
            "{m}"
        );
        assert!(m.ends_with("; then rebuild it"), "{m}");
        let m = message(
            &KernelError::BadArgument("--k needs a value".into()),
            "then rebuild it",
        );
        assert!(
            !m.contains("rebuild") && m.contains("--k needs a value"),
            "{m}"
        );
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the test measures how long a sleep took
    fn a_stop_cuts_a_sleep_short() {
        let stop = AtomicBool::new(true);
        let t = std::time::Instant::now();
        assert!(!sleep_unless_stopped(Duration::from_secs(5), &stop));
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(sleep_unless_stopped(
            Duration::from_millis(1),
            &AtomicBool::new(false)
        ));
    }
}
