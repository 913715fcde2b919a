//! `pathweave quic serve | send`: the command line, shared by the Python package (through its
//! extension) and anything else that links this crate.
// A command line reads the clock for its samples.
#![allow(clippy::disallowed_methods)]

use crate::endpoint::{self, Receiver, ReceiverLive, SenderLive};
use crate::probe::{self, Recorder};
use crate::{cert, Amount, QuicError, ReceiveOptions, SendOptions, Settings};
use pathweave_cc::cc::multipath::Arithmetic;
use pathweave_sim::quantity::parse_with_units;
use pathweave_sim::results::Results;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The usage text.
pub const USAGE: &str = "\
usage: pathweave quic serve --listen ADDR:PORT [--cert-out FILE] [--transfers N] [--mtu BYTES]
       pathweave quic send --to ADDR:PORT --from ADDR[,ADDR...] --algorithm NAME
                           (--bytes SIZE | --duration TIME) (--fingerprint HEX | --cert FILE)
                           [--arithmetic spec|linux] [--initial-window SEGMENTS] [--mtu BYTES]
                           [--connect-timeout TIME] [--path-idle-timeout TIME]
                           [--interval TIME] [--seed N] [--out DIR]

serve  accepts transfers over multipath QUIC, checks each (byte count and SHA-256) and prints
       one line per transfer; its self-signed certificate's fingerprint is printed first.
send   opens one QUIC path per --from address (path 0 first) to the receiver, runs the
       congestion controller NAME coupled over them, sends SIZE bytes or for TIME, and prints
       a table per path; --out DIR writes the same tables as `pathweave run`.";

/// What a finished command hands back: its exit status and, for `send`, the tables.
pub struct Finished {
    /// Process exit status.
    pub code: i32,
    /// The tables of a `send`.
    pub results: Option<Results>,
}

impl Finished {
    fn code(code: i32) -> Finished {
        Finished {
            code,
            results: None,
        }
    }
}

/// Runs `pathweave quic ARGS…`; `stop` ends it early (exit 130).
pub fn main(args: &[String], stop: &AtomicBool) -> Finished {
    let r = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..], stop).map(|()| None),
        Some("send") => send(&args[1..], stop).map(Some),
        Some("-h") | Some("--help") | None => {
            println!("{USAGE}");
            return Finished::code(if args.is_empty() { 2 } else { 0 });
        }
        Some(other) => Err(QuicError::Usage(format!(
            "unknown command {other:?} (allowed: serve, send)"
        ))),
    };
    match r {
        Ok(results) => Finished { code: 0, results },
        Err(e) => {
            eprintln!("pathweave quic: {e}");
            Finished::code(e.exit_code())
        }
    }
}

/// `--name value` pairs, each name at most once, from the allowed set.
struct Args<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Args<'a> {
    fn parse(args: &'a [String], allowed: &[&str]) -> Result<Args<'a>, QuicError> {
        let mut pairs = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (name, inline) = match a.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v)),
                _ => (a.as_str(), None),
            };
            if !allowed.contains(&name) {
                return Err(QuicError::Usage(format!(
                    "unknown option {name:?} (allowed: {})",
                    allowed.join(", ")
                )));
            }
            let value = match inline {
                Some(v) => v,
                None => it
                    .next()
                    .map(String::as_str)
                    .ok_or_else(|| QuicError::Usage(format!("{name} needs a value")))?,
            };
            if pairs.iter().any(|(n, _)| *n == name) {
                return Err(QuicError::Usage(format!("{name} given twice")));
            }
            pairs.push((name, value));
        }
        Ok(Args { pairs })
    }

    fn get(&self, name: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    fn need(&self, name: &str) -> Result<&'a str, QuicError> {
        self.get(name)
            .ok_or_else(|| QuicError::Usage(format!("{name} is required")))
    }
}

fn socket_addr(name: &str, v: &str) -> Result<SocketAddr, QuicError> {
    v.parse().map_err(|_| {
        QuicError::Usage(format!(
            "{name} {v:?}: expected ADDRESS:PORT (e.g. 198.19.0.1:4433 or [2001:db8::1]:4433)"
        ))
    })
}

fn duration(name: &str, v: &str) -> Result<Duration, QuicError> {
    let s = parse_with_units(v, &[("s", 1.0), ("ms", 1e-3), ("min", 60.0)])
        .map_err(|e| QuicError::Usage(format!("{name} {v:?}: {e} (e.g. 10s, 500ms)")))?;
    if !(s.is_finite() && s > 0.0 && s < 1e7) {
        return Err(QuicError::Usage(format!(
            "{name} {v:?}: must be a positive time"
        )));
    }
    Ok(Duration::from_secs_f64(s))
}

fn integer(name: &str, v: &str, lo: u64, hi: u64) -> Result<u64, QuicError> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(QuicError::Usage(format!(
            "{name} {v:?}: expected an integer from {lo} to {hi}"
        ))),
    }
}

fn settings(a: &Args<'_>) -> Result<Settings, QuicError> {
    let mut s = Settings::default();
    if let Some(v) = a.get("--mtu") {
        s.mtu = Some(integer("--mtu", v, 1200, 65_527)? as u16);
    }
    if let Some(v) = a.get("--path-idle-timeout") {
        s.path_idle_timeout = duration("--path-idle-timeout", v)?;
        s.idle_timeout = s.idle_timeout.max(s.path_idle_timeout);
    }
    s.validate()?;
    Ok(s)
}

fn serve(args: &[String], stop: &AtomicBool) -> Result<(), QuicError> {
    let a = Args::parse(args, &["--listen", "--cert-out", "--transfers", "--mtu"])?;
    let opts = ReceiveOptions {
        listen: socket_addr("--listen", a.need("--listen")?)?,
        settings: settings(&a)?,
        transfers: a
            .get("--transfers")
            .map(|v| integer("--transfers", v, 1, u64::MAX))
            .transpose()?,
    };
    let receiver = Receiver::bind(opts)?;
    if let Some(path) = a.get("--cert-out") {
        write_new(path, receiver.cert_pem())?;
    }
    let addr = receiver.local_addr()?;
    println!(
        "pathweave quic serve: listening on {addr} (UDP); certificate sha256 {}",
        receiver.fingerprint()
    );
    let _ = std::io::stdout().flush();
    let live = Arc::new(ReceiverLive::default());
    receiver.run(&live, stop, |r| {
        let rate = if r.seconds > 0.0 {
            r.bytes as f64 * 8.0 / r.seconds / 1e6
        } else {
            0.0
        };
        match &r.error {
            None => println!(
                "received {} bytes from {} over {} path(s) in {:.2} s ({rate:.1} Mbit/s), sha256 {}",
                r.bytes, r.peer, r.paths, r.seconds, r.sha256
            ),
            Some(e) => println!(
                "transfer from {} failed after {} bytes: {e}",
                r.peer, r.bytes
            ),
        }
        let _ = std::io::stdout().flush();
    })?;
    if stop.load(Ordering::Relaxed) {
        return Err(QuicError::Stopped);
    }
    Ok(())
}

/// Writes `text` to a new file (refusing to overwrite anything but an earlier certificate).
fn write_new(path: &str, text: &str) -> Result<(), QuicError> {
    let p = std::path::Path::new(path);
    if p.exists() {
        let old = std::fs::read_to_string(p).unwrap_or_default();
        if !old.starts_with("-----BEGIN CERTIFICATE-----") {
            return Err(QuicError::Usage(format!(
                "--cert-out {path}: the file exists and is not a certificate; not overwriting it"
            )));
        }
    }
    let tmp = p.with_extension("tmp-pathweave");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, p))
        .map_err(|e| QuicError::Usage(format!("--cert-out {path}: {e}")))
}

fn send(args: &[String], stop: &AtomicBool) -> Result<Results, QuicError> {
    let a = Args::parse(
        args,
        &[
            "--to",
            "--from",
            "--algorithm",
            "--bytes",
            "--duration",
            "--fingerprint",
            "--cert",
            "--arithmetic",
            "--initial-window",
            "--mtu",
            "--connect-timeout",
            "--path-idle-timeout",
            "--interval",
            "--seed",
            "--out",
        ],
    )?;
    let to = socket_addr("--to", a.need("--to")?)?;
    let from = a
        .need("--from")?
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<IpAddr>()
                .map_err(|_| QuicError::Usage(format!("--from {x:?}: expected an IP address")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let amount = match (a.get("--bytes"), a.get("--duration")) {
        (Some(b), None) => {
            let n = parse_with_units(
                b,
                &[
                    ("", 1.0),
                    ("B", 1.0),
                    ("kB", 1e3),
                    ("MB", 1e6),
                    ("GB", 1e9),
                    ("KiB", 1024.0),
                    ("MiB", 1048576.0),
                    ("GiB", 1073741824.0),
                ],
            )
            .map_err(|e| QuicError::Usage(format!("--bytes {b:?}: {e} (e.g. 20MB)")))?;
            if !(n.is_finite() && (1.0..1e15).contains(&n)) {
                return Err(QuicError::Usage(format!(
                    "--bytes {b:?}: must be at least one byte"
                )));
            }
            Amount::Bytes(n as u64)
        }
        (None, Some(d)) => Amount::Duration(duration("--duration", d)?),
        _ => {
            return Err(QuicError::Usage(
                "give exactly one of --bytes and --duration".to_string(),
            ))
        }
    };
    let fingerprint = match (a.get("--fingerprint"), a.get("--cert")) {
        (Some(f), None) => cert::parse_fingerprint(f)?,
        (None, Some(c)) => cert::fingerprint_of_file(std::path::Path::new(c))?,
        _ => {
            return Err(QuicError::Usage(
                "give exactly one of --fingerprint (as `quic serve` prints it) and --cert \
                 (the file `quic serve --cert-out` writes)"
                    .to_string(),
            ))
        }
    };
    let arithmetic = a
        .get("--arithmetic")
        .map(|v| {
            v.parse::<Arithmetic>()
                .map_err(|_| QuicError::Usage(format!("--arithmetic {v:?}: allowed spec, linux")))
        })
        .transpose()?;
    let iw = a
        .get("--initial-window")
        .map(|v| integer("--initial-window", v, 1, 1000))
        .transpose()?
        .unwrap_or(10) as u32;
    let s = settings(&a)?;
    let mss = u64::from(s.mtu.unwrap_or(1200));
    let algorithm = a.need("--algorithm")?;
    let control = crate::control(algorithm, mss, iw, arithmetic)?;
    let interval = a
        .get("--interval")
        .map(|v| duration("--interval", v))
        .transpose()?
        .unwrap_or(Duration::from_millis(100));
    let opts = SendOptions {
        to,
        from: from.clone(),
        algorithm: algorithm.to_string(),
        control,
        fingerprint,
        amount,
        settings: s,
        connect_timeout: a
            .get("--connect-timeout")
            .map(|v| duration("--connect-timeout", v))
            .transpose()?
            .unwrap_or(Duration::from_secs(5)),
        deferred: Vec::new(),
        seed: a
            .get("--seed")
            .map(|v| integer("--seed", v, 0, u64::MAX))
            .transpose()?
            .unwrap_or(1),
    };
    let (report, recorder) = send_sampled(&opts, interval, stop)?;
    let names: Vec<String> = from.iter().map(|ip| format!("{ip}>{to}")).collect();
    print_report(&opts, &report);
    if !report.intact() {
        return Err(QuicError::Transfer(format!(
            "the receiver got {} bytes (sha256 {}), not the {} sent (sha256 {})",
            report.received_bytes, report.received_sha256, report.sent_bytes, report.sent_sha256
        )));
    }
    Ok(probe::send_results(
        recorder, &report, algorithm, &names, opts.seed,
    ))
}

/// Sends with a sampler beside it every `interval`.
pub fn send_sampled(
    opts: &SendOptions,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<(endpoint::SendReport, Recorder), QuicError> {
    let live = Arc::new(SenderLive::default());
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let live = Arc::clone(&live);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut rec = Recorder::new(0);
            let t0 = Instant::now();
            let mut next = interval;
            while !done.load(Ordering::Relaxed) {
                let now = t0.elapsed();
                if now >= next {
                    let paths = live.sample();
                    if !paths.is_empty() {
                        let w = live.written.load(Ordering::Relaxed);
                        rec.sample(now.as_secs_f64(), w, &paths);
                    }
                    next += interval;
                }
                std::thread::sleep(Duration::from_millis(5).min(interval));
            }
            rec
        })
    };
    let r = endpoint::send(opts, &live, stop);
    done.store(true, Ordering::Relaxed);
    let rec = sampler.join().unwrap_or_default();
    r.map(|report| (report, rec))
}

fn print_report(opts: &SendOptions, r: &endpoint::SendReport) {
    let rate = if r.seconds > 0.0 {
        r.sent_bytes as f64 * 8.0 / r.seconds / 1e6
    } else {
        0.0
    };
    println!(
        "pathweave quic send: {} bytes to {} over {} path(s) with {} in {:.2} s: {rate:.1} Mbit/s",
        r.sent_bytes,
        opts.to,
        r.paths.len(),
        opts.algorithm,
        r.seconds
    );
    println!(
        "received: {} bytes, sha256 {} ({})",
        r.received_bytes,
        r.received_sha256,
        if r.intact() {
            "matches what was sent"
        } else {
            "DIFFERS from what was sent"
        }
    );
    println!(
        "{:<5} {:<40} {:>12} {:>10} {:>10} {:>8} {:>7}",
        "path", "from", "acked Mbit/s", "cwnd kB", "srtt ms", "lost", "events"
    );
    for p in &r.paths {
        let s = p.snapshot.unwrap_or_default();
        let st = p.stats.unwrap_or_default();
        let from = opts
            .from
            .get(p.path.index)
            .map_or_else(String::new, |a| a.to_string());
        println!(
            "{:<5} {:<40} {:>12.2} {:>10.1} {:>10.1} {:>8} {:>7}",
            p.path.index,
            format!("{from}{}", if s.open { "" } else { " (abandoned)" }),
            if r.seconds > 0.0 {
                s.acked_bytes as f64 * 8.0 / r.seconds / 1e6
            } else {
                0.0
            },
            s.cwnd as f64 / 1e3,
            s.srtt.map_or(f64::NAN, |x| x * 1e3),
            st.lost_packets,
            s.congestion_events + s.persistent_congestion
        );
    }
}
