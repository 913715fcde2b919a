//! Run a scenario file without Python and report the engine's speed; the benchmark drives
//! this binary so its peak memory is the simulator's alone.
//!
//! `cargo run --release -p pathweave-sim --example run -- FILE [--seed N] [--json]
//! [--link NAME[,NAME...]] [--series-out DIR] [--pcap DIR]`
//!
//! With `--pcap`, the run captures into DIR as the scenario's `[capture]` asks (every link
//! direction without one) and prints what it wrote on stderr.
//!
//! Bottleneck packets are those the named links (default: the link named "bottleneck")
//! delivered in their forward direction, summed over the links. Link packets are the
//! packets every link direction delivered (data and ACKs), summed over all of them: one per
//! hop a packet completes, so a packet over a route of n links counts n times. Host-link
//! packets are those of the generated links that end at a host (`host...-...`), both ways.
//! `wall_s` and `cpu_s` (the thread's time on a CPU, `null` where Linux's schedstat is
//! missing) cover building the simulation and running it, not reading the scenario.
//!
//! The run advances one simulated second at a time and moves the time series sampled in that
//! second out of the simulator: with `--series-out` they are appended to `flow_series.csv`,
//! `subflow_series.csv` and `link_series.csv` in DIR, otherwise only counted. Either way the
//! simulator's memory stays flat in simulated time. A column the scenario's `[series]` leaves
//! out is written as an empty field.
#![allow(clippy::disallowed_methods)] // a benchmark reads the wall clock

use pathweave_cc::Duration;
use pathweave_sim::capture::CaptureSpec;
use pathweave_sim::results::SeriesChunk;
use pathweave_sim::{Scenario, Simulation};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The simulator's allocator, as in the Python module (huge pages for many-flow runs).
#[global_allocator]
static ALLOC: pathweave_sim::hugepages::HugePages = pathweave_sim::hugepages::HugePages;

/// CSV files the time series are streamed into.
struct SeriesFiles {
    flows: BufWriter<File>,
    subflows: BufWriter<File>,
    links: BufWriter<File>,
}

impl SeriesFiles {
    fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let open = |name: &str, header: &str| -> std::io::Result<BufWriter<File>> {
            let mut w = BufWriter::new(File::create(dir.join(name))?);
            writeln!(w, "{header}")?;
            Ok(w)
        };
        Ok(SeriesFiles {
            flows: open(
                "flow_series.csv",
                "time_s,flow,cwnd_bytes,ssthresh_bytes,srtt_s,rate_bps",
            )?,
            subflows: open(
                "subflow_series.csv",
                "time_s,flow,subflow,cwnd_bytes,ssthresh_bytes,srtt_s,rate_bps",
            )?,
            links: open(
                "link_series.csv",
                "time_s,link,queue_packets,queue_bytes,red_average,drops,wire_losses",
            )?,
        })
    }

    fn write(&mut self, c: &SeriesChunk) -> std::io::Result<()> {
        let f = &c.flows;
        for k in 0..f.time_s.len() {
            writeln!(
                self.flows,
                "{},{},{},{},{},{}",
                f.time_s[k],
                f.flow[k],
                cell(&f.cwnd_bytes, k),
                cell(&f.ssthresh_bytes, k),
                cell(&f.srtt_s, k),
                cell(&f.rate_bps, k)
            )?;
        }
        let s = &c.subflows;
        for k in 0..s.time_s.len() {
            writeln!(
                self.subflows,
                "{},{},{},{},{},{},{}",
                s.time_s[k],
                s.flow[k],
                s.subflow[k],
                cell(&s.cwnd_bytes, k),
                cell(&s.ssthresh_bytes, k),
                cell(&s.srtt_s, k),
                cell(&s.rate_bps, k)
            )?;
        }
        let l = &c.links;
        for k in 0..l.time_s.len() {
            writeln!(
                self.links,
                "{},{},{},{},{},{},{}",
                l.time_s[k],
                l.link[k],
                cell(&l.queue_packets, k),
                cell(&l.queue_bytes, k),
                cell(&l.red_average, k),
                cell(&l.drops, k),
                cell(&l.wire_losses, k)
            )?;
        }
        Ok(())
    }
}

/// Row `k` of a column, or nothing for a column the scenario's `[series]` leaves out.
fn cell<T: std::fmt::Display>(column: &[T], k: usize) -> String {
    column.get(k).map_or_else(String::new, |v| v.to_string())
}

/// This process's peak resident set in KiB (Linux `VmHWM`), or 0 where it is not known.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The CPU time this thread has run so far in seconds (Linux `schedstat`), or `None` where it
/// is not known. Unlike the wall time it leaves out the time spent waiting for a CPU that
/// other processes hold.
fn cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

fn rows(c: &SeriesChunk) -> usize {
    c.flows.time_s.len() + c.subflows.time_s.len() + c.links.time_s.len()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut file = None;
    let mut seed = None;
    let mut json = false;
    let mut link = None;
    let mut series_out = None;
    let mut pcap = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--seed" => seed = it.next().and_then(|s| s.parse().ok()),
            "--link" => match it.next() {
                Some(names) => link = Some(names.clone()),
                None => {
                    eprintln!("--link needs link names, separated by commas");
                    std::process::exit(2);
                }
            },
            "--series-out" => series_out = it.next().cloned(),
            "--pcap" => pcap = it.next().cloned(),
            _ if file.is_none() => file = Some(a.clone()),
            _ => {
                eprintln!("unexpected argument '{a}'");
                std::process::exit(2);
            }
        }
    }
    let Some(path) = file else {
        eprintln!("usage: run FILE [--seed N] [--json] [--link NAME[,NAME...]] [--series-out DIR] [--pcap DIR]");
        std::process::exit(2);
    };
    let sc = match Scenario::load(std::path::Path::new(&path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // Refuse an unknown bottleneck name before spending the run on it.
    for name in link.iter().flat_map(|names| names.split(',')) {
        if !sc.links.iter().any(|l| l.name == name) {
            let known: Vec<&str> = sc.links.iter().take(8).map(|l| l.name.as_str()).collect();
            let more = if sc.links.len() > 8 { ", …" } else { "" };
            eprintln!(
                "--link: the scenario has no link named {name:?} (it has {}{more})",
                known.join(", ")
            );
            std::process::exit(2);
        }
    }
    let t0 = std::time::Instant::now();
    let cpu0 = cpu_s();
    let mut files = match series_out
        .as_deref()
        .map(|d| SeriesFiles::create(Path::new(d)))
    {
        None => None,
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => {
            eprintln!("cannot create the series files: {e}");
            std::process::exit(2);
        }
    };
    let mut sim = Simulation::new(&sc, seed);
    if let Some(dir) = &pcap {
        let spec = sc
            .capture
            .clone()
            .unwrap_or_else(|| CaptureSpec::everything(sc.links.len()));
        let made = std::fs::create_dir_all(dir).map_err(|e| e.to_string());
        if let Err(e) = made.and_then(|()| sim.start_capture(&spec, Path::new(dir))) {
            eprintln!("--pcap {dir}: {e}");
            std::process::exit(2);
        }
    }
    let mut series_rows = 0;
    let mut log_rows = 0;
    while !sim.finished() {
        sim.run_until(sim.now() + Duration::from_secs(1));
        log_rows += sim.take_packet_log().len();
        for w in sim.take_capture_warnings() {
            eprintln!("{w}");
        }
        let chunk = sim.take_series();
        series_rows += rows(&chunk);
        if let Some(Err(e)) = files.as_mut().map(|f| f.write(&chunk)) {
            eprintln!("cannot write the series: {e}");
            std::process::exit(2);
        }
    }
    if pcap.is_some() {
        match sim.finish_capture() {
            Ok((summary, log, warnings)) => {
                log_rows += log.len();
                for w in warnings {
                    eprintln!("{w}");
                }
                let packets: u64 = summary.files.iter().map(|f| f.packets).sum();
                eprintln!(
                    "capture: {} files, {packets} packets, {log_rows} queue-log rows",
                    summary.files.len()
                );
            }
            Err(e) => {
                eprintln!("capture: {e}");
                std::process::exit(1);
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (cpu0, cpu_s()) {
        (Some(a), Some(b)) => format!("{:.6}", b - a),
        _ => "null".to_string(),
    };
    if let Err(e) = sim.check_conservation() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let r = sim.into_results();
    // The bottleneck links' forward directions: those named by `--link` (a multipath
    // scenario has one bottleneck per path), or the link named "bottleneck" if there is one.
    let forward = |name: &str| {
        (0..r.links.name.len())
            .find(|&i| r.links.name[i] == name && r.links.direction[i] == "forward")
    };
    let bn: Vec<usize> = match &link {
        Some(names) => names
            .split(',')
            .map(|name| forward(name).expect("checked against the scenario's links above"))
            .collect(),
        None => forward("bottleneck").into_iter().collect(),
    };
    let bn_pkts: u64 = bn.iter().map(|&i| r.links.delivered_packets[i]).sum();
    let link_pkts: u64 = r.links.delivered_packets.iter().sum();
    let host_pkts: u64 = (0..r.links.name.len())
        .filter(|&i| r.links.name[i].starts_with("host"))
        .map(|i| r.links.delivered_packets[i])
        .sum();
    let total: f64 = r.flows.goodput_bps.iter().sum();
    let jain = pathweave_sim::results::jain_index(&r.flows.goodput_bps);
    if json {
        emit(&format!(
            "{{\"flows\": {}, \"wall_s\": {wall:.6}, \"cpu_s\": {cpu}, \"events\": {}, \"bottleneck_packets\": {bn_pkts}, \"link_packets\": {link_pkts}, \"host_link_packets\": {host_pkts}, \
             \"aggregate_goodput_bps\": {total:.1}, \"jain\": {jain:.6}, \"peak_packets\": {}, \"series_rows\": {series_rows}, \"peak_rss_kb\": {}, \"goodput_bps\": {:?}}}\n",
            r.flows.name.len(),
            r.stats.events,
            r.stats.peak_packets,
            peak_rss_kib(),
            r.flows.goodput_bps
        ));
        return;
    }
    let mut out = String::new();
    for i in 0..r.flows.name.len() {
        let _ = writeln!(
            out,
            "{:>12} goodput {:8.3} Mbps  loss-event rate {:.5}  timeouts {:3}  mean cwnd {:6.1} pkt  srtt {:.4} s",
            r.flows.name[i],
            r.flows.goodput_bps[i] / 1e6,
            r.flows.loss_event_rate[i],
            r.flows.timeouts[i],
            r.flows.mean_cwnd_bytes[i] / 1000.0,
            r.flows.mean_srtt_s[i]
        );
    }
    for g in &r.fairness {
        let _ = writeln!(
            out,
            "group {}: {} flows, total {:.3} Mbps, Jain {:.4}",
            g.group,
            g.flows,
            g.total_goodput_bps / 1e6,
            g.jain
        );
    }
    for &i in &bn {
        let _ = writeln!(
            out,
            "{}: {} packets, utilisation {:.4}, drops: overflow {} early {} forced {}",
            r.links.name[i],
            r.links.delivered_packets[i],
            r.links.utilization[i],
            r.links.drops_overflow[i],
            r.links.drops_early[i],
            r.links.drops_forced[i]
        );
    }
    if !bn.is_empty() {
        let _ = writeln!(
            out,
            "bottleneck packets per wall-clock second: {:.0}",
            bn_pkts as f64 / wall
        );
    }
    let _ = writeln!(
        out,
        "wall {wall:.3} s, {} events, {:.2} M events/s, peak packets {}",
        r.stats.events,
        r.stats.events as f64 / wall / 1e6,
        r.stats.peak_packets
    );
    emit(&out);
}

/// Write the report to standard output; a closed output (`run ... | head`) ends the run with
/// a message, not a panic.
fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!("cannot write the report to standard output: {e}");
        std::process::exit(1);
    }
}
