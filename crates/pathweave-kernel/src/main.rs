//! `pathweave-kernel load | unload | status | bmc-manager` — also reached as
//! `pathweave kernel …` from the Python command. Exit codes: 0 success, 1 a failure while
//! loading or running, 2 bad input or a machine that cannot run BPF congestion control.

use pathweave_kernel::{KernelError, Prefix};
use std::process::ExitCode;

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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pathweave kernel: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
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

fn run(args: &[String]) -> Result<(), KernelError> {
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
                pathweave_kernel::PROGRAM_VERSION,
                if pathweave_kernel::HAS_BPF {
                    ""
                } else {
                    ", not built"
                }
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
    commands::run(cmd, &opts)
}

#[cfg(not(feature = "bpf"))]
mod commands {
    use super::Options;
    use pathweave_kernel::KernelError;

    pub(crate) fn run(_cmd: &str, _opts: &Options) -> Result<(), KernelError> {
        Err(KernelError::NoBpfBuild)
    }
}

#[cfg(feature = "bpf")]
mod commands {
    use super::Options;
    use pathweave_kernel::bmc::{Manager, ManagerConfig, PeriodRule};
    use pathweave_kernel::loader::{self, Loaded, Pinned};
    use pathweave_kernel::names::Algorithm;
    use pathweave_kernel::{KernelError, Prefix};
    use std::time::Duration;

    pub(crate) fn run(cmd: &str, opts: &Options) -> Result<(), KernelError> {
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
            "bmc-manager" => bmc_manager(&prefix, opts),
            "reference-reno" => reference_reno(opts),
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
            let dir = std::path::Path::new(pathweave_kernel::names::PIN_ROOT).join(&b.name);
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
                .find(|(k, _)| *k == pathweave_kernel::maps::Stat::Version)
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

    fn bmc_manager(prefix: &Prefix, opts: &Options) -> Result<(), KernelError> {
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
            if rounds.is_some_and(|r| done >= r) {
                return Ok(());
            }
            std::thread::sleep(period);
        }
    }

    /// Keeps pwref_reno registered until the duration passes or standard input closes.
    fn reference_reno(opts: &Options) -> Result<(), KernelError> {
        use pathweave_kernel::reference::{ReferenceReno, NAME};
        use std::io::Read;
        let reg = ReferenceReno::register()?;
        println!("{NAME}");
        match opts.duration {
            Some(d) => {
                eprintln!("pathweave kernel: {NAME} registered for {d} s");
                std::thread::sleep(Duration::from_secs_f64(d));
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
