//! pathweave-emu: run a pathweave scenario over real Linux TCP, MPTCP and UDP, with every link
//! emulated in real time by the simulator's own link, queue and loss code.
//!
//! Each flow gets two network namespaces (sender and receiver), labelled
//! `pwemu-<run id>-<flow>s` / `…r` and held by the emulator's file descriptors alone ([`lab`]);
//! each of its paths gets one TUN device at either end. The emulator process holds every TUN
//! descriptor and carries each packet through exactly the link directions of its route
//! ([`driver`]): data forward, acknowledgements over the reverse directions, as in the
//! simulator. Addresses come from the benchmarking range 198.18.0.0/15: senders' path addresses
//! from 198.18.0.0/16, receivers from 198.19.0.0/16. Nothing is routed out of the namespaces
//! and the root namespace gets no address, route or device.
//!
//! [`emulate`] checks the scenario and the machine ([`check_scenario`], [`check_environment`]),
//! builds the test bed, runs it in real time, samples the kernel's own congestion state
//! (`TCP_INFO`, `MPTCP_TCPINFO`, `MPTCP_SUBFLOW_ADDRS`) and returns the same [`Results`] as a
//! simulation, plus a [`Report`] on the emulator's own timing. The namespaces, their devices,
//! the run's BPF controllers and its child processes live only as long as its process,
//! however that ends; [`cleanup_leftovers`] removes namespaces left mounted under /run/netns
//! (by a killed run that named them for debugging, or by older versions).

pub mod capture;
mod controllers;
mod driver;
mod endpoint;
pub mod lab;
pub mod pattern;
mod run;
mod sys;

pub use controllers::LOADS_CONTROLLERS;
pub use driver::DriverStats;
pub use lab::{cleanup_leftovers, leftovers, PREFIX};
pub use run::emulate;

use pathweave_sim::scenario::{FlowKind, Scenario};

/// Why an emulation did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The scenario cannot be emulated (too large, an algorithm the kernel lacks, …).
    #[error("{0}")]
    Refused(String),
    /// The machine lacks something the emulator needs (root, `/dev/net/tun`, MPTCP).
    #[error("{0}")]
    Environment(String),
    /// Building the test bed failed.
    #[error("setting up the test bed: {0}")]
    Setup(String),
    /// The run failed part-way (an endpoint or a device failed).
    #[error("{0}")]
    Failed(String),
    /// Stopped on request (Ctrl-C, SIGTERM) before the end.
    #[error("interrupted")]
    Interrupted,
}

impl EmuError {
    /// The process exit code for this error: 2 for a refusal (bad input or a machine that
    /// cannot emulate), 1 for a failure, 130 for an interruption.
    pub fn exit_code(&self) -> i32 {
        match self {
            EmuError::Refused(_) | EmuError::Environment(_) => 2,
            EmuError::Interrupted => 130,
            _ => 1,
        }
    }
}

/// Flows one emulator holds at most (two application threads each).
pub const MAX_FLOWS: usize = 64;
/// Subflows of one MPTCP connection at most (the kernel's `MPTCP_PM_ADDR_MAX`).
pub const MAX_SUBFLOWS: usize = 8;
/// Offered load one emulator core carries in real time at most: the sum over flows of the
/// slowest link rate on each flow's path.
pub const MAX_LOAD_BPS: u64 = 1_000_000_000;
/// Largest packet (TUN MTU) the emulator carries.
pub const MAX_MTU: u32 = 9000;

/// How to run an emulation.
#[derive(Clone, Debug)]
pub struct Options {
    /// Overrides the scenario's seed (the links' random streams).
    pub seed: Option<u64>,
    /// The load limit (default [`MAX_LOAD_BPS`]).
    pub max_load_bps: u64,
    /// The kernel congestion control that runs what the scenario runs as Reno (single-path
    /// `reno` and `newreno` flows, uncoupled subflows) instead of the kernel's `reno`: e.g.
    /// `cubic`, or `pwref_reno` for measuring. It must be registered when the run starts.
    pub reno_congestion: Option<String>,
    /// Flows, by name, whose applications run outside the emulator: the run builds their
    /// namespaces, addresses, routes and links, names the namespaces under /run/netns, says
    /// on stderr where they are, and starts nothing in them (see `endpoint/external.rs`).
    pub external: Vec<String>,
    /// Capture the packets the links carry (see [`capture`]).
    pub capture: Option<CaptureRequest>,
}

/// Where and what to capture.
#[derive(Clone, Debug)]
pub struct CaptureRequest {
    /// The directory the files go into (it exists).
    pub dir: std::path::PathBuf,
    /// What to capture: the scenario's `[capture]`, or every link direction.
    pub spec: pathweave_sim::capture::CaptureSpec,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: None,
            max_load_bps: MAX_LOAD_BPS,
            reno_congestion: None,
            external: Vec::new(),
            capture: None,
        }
    }
}

impl Options {
    /// Whether flow `f`'s applications run outside the emulator.
    pub(crate) fn is_external(&self, f: &pathweave_sim::scenario::FlowSpec) -> bool {
        self.external.contains(&f.name)
    }
}

/// How the kernel runs scenario algorithm `name`, if it can: `reno` for single-path Reno and
/// uncoupled multipath; `PREFIX_lia`, `PREFIX_olia`, `PREFIX_balia`, `PREFIX_coupled`,
/// `PREFIX_bmc` and `PREFIX_kv` (pathweave-kernel's BPF controllers) for the coupled
/// algorithms, shown here with the prefix `pw`. A run that loads its own controllers uses a
/// prefix of its own.
pub fn kernel_algorithm(name: &str) -> Option<String> {
    match name {
        "reno" | "newreno" | "uncoupled" => Some("reno".to_string()),
        _ => controllers::coupled_suffix(name)
            .map(|s| format!("{}_{s}", controllers::PRELOADED_PREFIX)),
    }
}

/// Whether scenario algorithm `name` can run here: Reno always; a coupled algorithm where
/// this build loads the BPF controllers itself (the machine is checked later), or where
/// `pathweave kernel load` registered its controller already.
fn runs_here(name: &str, available: &[String]) -> bool {
    match kernel_algorithm(name) {
        Some(k) if k == "reno" => true,
        Some(k) => controllers::LOADS_CONTROLLERS || available.contains(&k),
        None => false,
    }
}

/// The congestion controls the running kernel offers.
pub fn available_algorithms() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_else(|_| vec!["reno".to_string()])
}

/// Whether flow `f` runs as an MPTCP connection: a multipath algorithm or several paths.
pub(crate) fn is_multipath(f: &pathweave_sim::scenario::FlowSpec) -> bool {
    f.runs_as_mptcp() && !is_quic(f)
}

/// Whether flow `f` runs over multipath QUIC (`transport = "quic"`) rather than kernel TCP.
pub(crate) fn is_quic(f: &pathweave_sim::scenario::FlowSpec) -> bool {
    matches!(&f.kind, FlowKind::Tcp { cfg, .. } if cfg.transport == pathweave_sim::scenario::Transport::Quic)
}

/// Paths a QUIC flow may have in the emulator.
pub const MAX_QUIC_PATHS: usize = 8;

/// Why QUIC flow `f` cannot be emulated, if it cannot.
fn quic_refusal(f: &pathweave_sim::scenario::FlowSpec) -> Option<String> {
    let FlowKind::Tcp { cfg, traffic, .. } = &f.kind else {
        return None;
    };
    if matches!(traffic, pathweave_sim::tcp::Traffic::OnOff { .. }) {
        return Some(
            "on/off traffic over QUIC is not emulated (bulk and sized transfers are)".to_string(),
        );
    }
    if f.subflows.len() > MAX_QUIC_PATHS {
        return Some(format!(
            "{} subflows; a QUIC connection here has at most {MAX_QUIC_PATHS} paths",
            f.subflows.len()
        ));
    }
    let first = &f.subflows[0];
    if first.stop.is_some() || first.start.is_some_and(|t| t > f.start) {
        return Some(
            "the first subflow joins or leaves on its own; a QUIC connection's first path \
             carries its handshake and lives as long as the connection"
                .to_string(),
        );
    }
    let wire = endpoint::quic_wire_size(cfg.mss, cfg.header);
    if wire > MAX_MTU {
        return Some(format!(
            "mss + header gives {wire}-byte QUIC packets; emulated packets are at most {MAX_MTU} B"
        ));
    }
    None
}

/// The slowest link rate on each flow's path, summed over flows (bit/s).
pub fn offered_load_bps(s: &Scenario) -> u64 {
    s.flows
        .iter()
        .map(|f| {
            let path_rate = f
                .subflows
                .iter()
                .map(|sf| {
                    sf.path
                        .iter()
                        .map(|h| {
                            let l = &s.links[h.link];
                            let d = if h.reverse { &l.reverse } else { &l.forward };
                            d.rate.bps()
                        })
                        .min()
                        .unwrap_or(0)
                })
                .sum::<u64>();
            match &f.kind {
                FlowKind::Cbr { rate, .. } => rate.bps().min(path_rate),
                FlowKind::Tcp { .. } => path_rate,
            }
        })
        .sum()
}

/// Check that `s` can be emulated, before touching the machine: its size against the limits,
/// every algorithm against the kernel's, every TCP setting against what the kernel can run
/// (`header`, `ack_size`, `delayed_ack`, `recovery`, `scheduler`, `min_rto`, `counting`),
/// packet sizes against the TUN MTU range.
pub fn check_scenario(s: &Scenario, opts: &Options) -> Result<(), EmuError> {
    let src = &s.source;
    if s.flows.len() > MAX_FLOWS {
        return Err(EmuError::Refused(format!(
            "{src}: {} flows; the emulator holds at most {MAX_FLOWS} flows in real time",
            s.flows.len()
        )));
    }
    let load = offered_load_bps(s);
    if load > opts.max_load_bps {
        return Err(EmuError::Refused(format!(
            "{src}: the flows' paths carry up to {:.1} Mbit/s in total; one emulator core \
             carries at most {:.1} Mbit/s in real time (total link rate limit)",
            load as f64 / 1e6,
            opts.max_load_bps as f64 / 1e6
        )));
    }
    let available = available_algorithms();
    if let Some(cc) = &opts.reno_congestion {
        if !available.contains(cc) {
            return Err(EmuError::Refused(format!(
                "{src}: the congestion control {cc:?} given to run Reno flows is not \
                 registered in this kernel; registered: {}",
                available.join(", ")
            )));
        }
    }
    for name in &opts.external {
        if !s.flows.iter().any(|f| f.name == *name) {
            let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
            return Err(EmuError::Refused(format!(
                "{src}: --external {name}: no flow of that name; the flows are: {}",
                names.join(", ")
            )));
        }
    }
    for f in &s.flows {
        let name = &f.name;
        if opts.is_external(f) {
            // Its applications, not the scenario, decide what it sends.
            continue;
        }
        if is_quic(f) {
            if let Some(why) = quic_refusal(f) {
                return Err(EmuError::Refused(format!("{src}: flow {name}: {why}")));
            }
            continue;
        }
        match &f.kind {
            FlowKind::Tcp { control, cfg, .. } => {
                let algo = control.name.as_str();
                if !runs_here(algo, &available) {
                    let runnable: Vec<&str> = ["reno", "uncoupled"]
                        .into_iter()
                        .chain(controllers::COUPLED.iter().map(|(n, _)| *n))
                        .filter(|a| runs_here(a, &available))
                        .collect();
                    let why = match kernel_algorithm(algo) {
                        Some(k) => format!(
                            "its kernel controller {k:?} is not loaded and this build cannot \
                             load it (load it with `pathweave kernel load`, or build with the \
                             BPF toolchain: `make kernel-deps setup`)"
                        ),
                        None => "it has no kernel implementation".to_string(),
                    };
                    return Err(EmuError::Refused(format!(
                        "{src}: flow {name}: algorithm {algo:?} cannot be emulated: {why}; \
                         this build runs: {} (kernel congestion controls: {})",
                        runnable.join(", "),
                        available.join(", ")
                    )));
                }
                if let Some(why) =
                    controllers::bmc_config(&f.kind).and_then(controllers::bmc_unsupported)
                {
                    return Err(EmuError::Refused(format!(
                        "{src}: flow {name}: algorithm \"bmc\" cannot be emulated: {why}"
                    )));
                }
                if is_multipath(f) && f.subflows.len() > MAX_SUBFLOWS {
                    return Err(EmuError::Refused(format!(
                        "{src}: flow {name}: {} subflows; an MPTCP connection has at most \
                         {MAX_SUBFLOWS}",
                        f.subflows.len()
                    )));
                }
                if f.subflows[0].stop.is_some() || f.subflows[0].start.is_some_and(|t| t > f.start)
                {
                    return Err(EmuError::Refused(format!(
                        "{src}: flow {name}: the first subflow joins or leaves on its own; an \
                         MPTCP connection's initial subflow lives as long as the connection"
                    )));
                }
                if let Some(why) = unrepresentable_setting(f, cfg, control) {
                    return Err(EmuError::Refused(format!("{src}: flow {name}: {why}")));
                }
                let mtu = cfg.mss + cfg.header;
                if !(576..=MAX_MTU).contains(&mtu) {
                    return Err(EmuError::Refused(format!(
                        "{src}: flow {name}: mss + header = {mtu} B; emulated packets must be \
                         576 to {MAX_MTU} B"
                    )));
                }
            }
            FlowKind::Cbr { size, .. } => {
                if !(endpoint::UDP_OVERHEAD + 1..=MAX_MTU).contains(size) {
                    return Err(EmuError::Refused(format!(
                        "{src}: flow {name}: datagrams of {size} B; emulated datagrams are {} \
                         to {MAX_MTU} B on the wire",
                        endpoint::UDP_OVERHEAD + 1
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Header bytes of an emulated data segment and of a pure ACK: IPv4 and TCP, 20 each, with
/// TCP timestamps off (see `endpoint.rs`).
pub const KERNEL_HEADER_BYTES: u32 = 40;

/// A TCP setting of flow `f` that the kernel cannot run as the scenario says, if there is
/// one: what it is, its value, and what the emulator runs instead. Settings the emulator
/// maps (docs/emulation.md) pass: `mss` and `header` become the TUN MTU, `initial_window`
/// and `min_rto` the routes' `initcwnd` and `rto_min`, ACK-every-segment `quickack`, the
/// recovery `tcp_sack`, MPTCP's option bytes (`mptcp_options`) the subflows' own.
fn unrepresentable_setting(
    f: &pathweave_sim::scenario::FlowSpec,
    cfg: &pathweave_sim::scenario::TcpSettings,
    spec: &pathweave_sim::scenario::ControlSpec,
) -> Option<String> {
    use pathweave_cc::cc::multipath::{Arithmetic, Counting};
    use pathweave_sim::scenario::{MPTCP_DSS_ACK_BYTES, MPTCP_DSS_DATA_BYTES};
    use pathweave_sim::tcp::{Recovery, SchedulerKind};
    let mptcp = is_multipath(f);
    // A flow that runs as MPTCP with `mptcp_options` holds settings with the option's bytes
    // taken out of `mss` and added to `header` and `ack_size`: compare what was written.
    let (dss_data, dss_ack) = if mptcp && cfg.mptcp_options {
        (MPTCP_DSS_DATA_BYTES, MPTCP_DSS_ACK_BYTES)
    } else {
        (0, 0)
    };
    let header = cfg.header.saturating_sub(dss_data);
    if header != KERNEL_HEADER_BYTES {
        let mss = cfg.mss + dss_data;
        return Some(format!(
            "header = \"{header}B\" cannot be emulated: the kernel's data segments carry \
             {KERNEL_HEADER_BYTES} bytes of IPv4 and TCP headers (TCP timestamps off), and the \
             TUN MTU is mss + header, so the kernel would send {} bytes of payload per segment \
             instead of mss = {mss}; the emulator runs header = \"{KERNEL_HEADER_BYTES}B\" \
             only (the default)",
            (mss + header).saturating_sub(KERNEL_HEADER_BYTES)
        ));
    }
    let ack_size = cfg.ack_size.saturating_sub(dss_ack);
    if ack_size != KERNEL_HEADER_BYTES {
        return Some(format!(
            "ack_size = \"{ack_size}B\" cannot be emulated: the kernel's ACKs are its own, \
             {KERNEL_HEADER_BYTES} bytes of IPv4 and TCP headers without options; the emulator \
             runs ack_size = \"{KERNEL_HEADER_BYTES}B\" only (the default)"
        ));
    }
    if let Some(d) = cfg.delayed_ack {
        return Some(format!(
            "delayed_ack = \"{}ms\" cannot be emulated: the kernel's delayed-ACK timer is its \
             own (40 to 200 ms, adapted to the flow) and cannot be set; the emulator runs \
             ACK-every-segment only (delayed_ack unset or false, the default), as the \
             receivers' routes' quickack",
            d.0 as f64 / 1e6
        ));
    }
    if cfg.recovery == Recovery::Reno {
        return Some(
            "recovery = \"reno\" cannot be emulated: Linux has no Reno fast recovery (its \
             first new ACK does not end recovery); the emulator runs recovery = \"newreno\" \
             (SACK off) or \"sack\""
                .to_string(),
        );
    }
    if mptcp && cfg.scheduler == SchedulerKind::RoundRobin {
        return Some(
            "scheduler = \"roundrobin\" cannot be emulated: an MPTCP connection runs the \
             kernel's default scheduler; the emulator runs scheduler = \"minrtt\" (the \
             default) or \"linux\", both on the kernel's own"
                .to_string(),
        );
    }
    let rto = cfg.min_rto.0;
    if rto < 1_000_000 || rto % 1_000_000 != 0 {
        return Some(format!(
            "min_rto = \"{}ms\" cannot be emulated: the kernel takes a route's rto_min in \
             whole milliseconds; give a whole number of milliseconds, at least \"1ms\"",
            rto as f64 / 1e6
        ));
    }
    // The coupled controllers have only the Linux arithmetic, under which LIA, OLIA, Balia
    // and Kelly–Voice (pw_kv, on OLIA's counter) count per ACK event, and fully coupled
    // control's increase counts the packets each ACK covers. Left unset, these run the
    // kernel's (run.json's kernel_arithmetic); written out as something else, they are refused.
    let lia_like = matches!(spec.name.as_str(), "lia" | "olia" | "balia" | "kelly-voice");
    let (key, value, runs) = if lia_like && spec.written_arithmetic == Some(Arithmetic::Spec) {
        (
            "arithmetic",
            Arithmetic::Spec.name(),
            Arithmetic::Linux.name(),
        )
    } else if lia_like && spec.written_counting == Some(Counting::PerPacket) {
        (
            "counting",
            Counting::PerPacket.name(),
            Counting::PerAckEvent.name(),
        )
    } else if spec.name == "fully-coupled" && spec.written_counting == Some(Counting::PerAckEvent) {
        (
            "counting",
            Counting::PerAckEvent.name(),
            Counting::PerPacket.name(),
        )
    } else {
        return None;
    };
    Some(format!(
        "{key} = \"{value}\" cannot be emulated: pathweave's BPF controllers have only Linux's \
         arithmetic and its counting; the emulator runs {key} = \"{runs}\" only (or {key} \
         unset)"
    ))
}

/// Check that this machine can emulate: root (CAP_NET_ADMIN), `/dev/net/tun`, iproute2 and,
/// when `mptcp`, MPTCP enabled.
pub fn check_environment(mptcp: bool) -> Result<(), EmuError> {
    let missing: Vec<&str> = [
        (sys::CAP_NET_ADMIN, "CAP_NET_ADMIN"),
        (sys::CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .into_iter()
    .filter(|&(cap, _)| !sys::has_cap(cap))
    .map(|(_, name)| name)
    .collect();
    if sys::euid() != 0 || !missing.is_empty() {
        let lacking = if missing.is_empty() {
            "not running as root".to_string()
        } else {
            format!("this process lacks {}", missing.join(" and "))
        };
        return Err(EmuError::Environment(format!(
            "emulation needs root: configuring network namespaces and TUN devices takes \
             CAP_NET_ADMIN, and creating and entering the namespaces CAP_SYS_ADMIN \
             ({lacking}); run it as root with both"
        )));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(EmuError::Environment(
            "/dev/net/tun is missing: the kernel's TUN driver (CONFIG_TUN, module `tun`) is \
             needed; try `modprobe tun`"
                .to_string(),
        ));
    }
    if mptcp {
        let enabled = std::fs::read_to_string("/proc/sys/net/mptcp/enabled")
            .map(|s| s.trim() == "1")
            .unwrap_or(false);
        if !enabled {
            return Err(EmuError::Environment(
                "MPTCP is disabled: the scenario has multipath flows and net.mptcp.enabled is \
                 not 1 (sysctl -w net.mptcp.enabled=1; the kernel needs CONFIG_MPTCP)"
                    .to_string(),
            ));
        }
    }
    if sys::command("ip", None)
        .arg("-V")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        return Err(EmuError::Environment(
            "`ip` (iproute2) is not installed; Debian: apt-get install iproute2".to_string(),
        ));
    }
    Ok(())
}

/// The real-time clock of one run: nanoseconds since its epoch on `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    epoch: u64,
}

impl Clock {
    pub(crate) fn start() -> Clock {
        Clock {
            epoch: sys::monotonic_ns(),
        }
    }
    pub(crate) fn now_ns(&self) -> u64 {
        sys::monotonic_ns().saturating_sub(self.epoch)
    }
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }
}

/// Percentiles of the emulator's lateness (release time minus planned time), in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lateness {
    /// Packets measured.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl Lateness {
    /// The percentiles of a histogram of nanoseconds.
    pub(crate) fn of(h: &hdrhistogram::Histogram<u64>) -> Lateness {
        Lateness {
            count: h.len(),
            mean_ns: if h.is_empty() { 0.0 } else { h.mean() },
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// What a sized transfer's two ends saw.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferCheck {
    /// Flow index.
    pub flow: usize,
    /// Bytes the sender wrote.
    pub sent_bytes: u64,
    /// Bytes the receiver read.
    pub received_bytes: u64,
    /// FNV-1a 64 of the bytes written.
    pub sent_hash: u64,
    /// FNV-1a 64 of the bytes read.
    pub received_hash: u64,
    /// Received bytes that differ from the sent stream.
    pub mismatched_bytes: u64,
    /// Whether the receiver saw the end of the stream.
    pub complete: bool,
}

/// The emulator's account of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The run id in the namespaces' names.
    pub run_id: String,
    /// The names of the namespaces the run made.
    pub namespaces: Vec<String>,
    /// Those of them whose name under /run/netns (given with `PATHWEAVE_NAME_NAMESPACES=1`)
    /// could not be removed at the end (also reported on stderr); empty when every one was
    /// removed, and always without names. `pathweave emulate --cleanup` removes them once
    /// this process has ended.
    pub namespaces_left: Vec<String>,
    /// Kernel congestion control per flow ("" for CBR flows).
    pub kernel_algorithms: Vec<String>,
    /// The prefix of the BPF controllers the run used: its own (loaded for the run and gone
    /// with it), `pw` (loaded beforehand), or "" when every flow ran the kernel's own.
    pub controllers_prefix: String,
    /// BMC weight changes the run's proportion manager wrote to the kernel.
    pub weight_updates: u64,
    /// The run's own BPF controllers' counters at its end, by name (`pathweave kernel
    /// status` shows the same): how many subflows registered, ran Reno and why, how many
    /// connection entries were deleted or reclaimed. Empty when the run loaded none.
    pub controller_counters: Vec<(String, u64)>,
    /// Release lateness of every packet written to its destination.
    pub lateness: Lateness,
    /// Per packet read, an upper bound of its wait in the TUN device before the emulator read
    /// it (the read time minus the last time the device was seen empty).
    pub intake_wait: Lateness,
    /// The p99 lateness a reliable run stays within: a tenth of the smallest link delay.
    pub lateness_limit_ns: u64,
    /// Packets the emulator dropped because it fell behind (no buffer, a device refused).
    pub emulator_drops: u64,
    /// Packets the TUN devices dropped before the emulator read them.
    pub device_drops: u64,
    /// Whether the link thread ran at real-time (SCHED_FIFO) priority.
    pub realtime: bool,
    /// CPU time of the link thread over the run (s), user and kernel (see
    /// `DriverStats::cpu_ns`); over the packets it carried, its cost per packet.
    pub link_thread_cpu_s: f64,
    /// Packets the link thread read from the devices.
    pub packets_read: u64,
    /// Whether the timing and drop figures make the run trustworthy.
    pub reliable: bool,
    /// Why not, if not.
    pub unreliable_because: Vec<String>,
    /// Sized transfers, checked byte for byte.
    pub transfers: Vec<TransferCheck>,
    /// Wall-clock length of the run (s).
    pub wall_s: f64,
}

/// An emulated run: the same tables as a simulation, and the emulator's own account.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Results in the simulator's schema.
    pub results: pathweave_sim::Results,
    /// Timing, drops and transfer checks.
    pub report: Report,
    /// What the capture wrote, if the run was captured.
    pub capture: Option<capture::CaptureOutput>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(body: &str) -> Scenario {
        let text = format!(
            "duration = \"5s\"\n[[link]]\nname = \"a\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\n\
             [[link]]\nname = \"b\"\nrate = \"30Mbps\"\ndelay = \"10ms\"\n{body}"
        );
        Scenario::parse(&text, "t.toml", "t").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn offered_load_sums_each_paths_slowest_link() {
        // Flow 1: min(10, 30) = 10 on its one path; flow 2: 10 + 30 over two paths;
        // the CBR flow offers 5 of its path's 30.
        let s = scenario(
            "[[flow]]\nname = \"x\"\nalgorithm = \"reno\"\npath = [\"a\", \"b\"]\n\
             [[flow]]\nname = \"mp\"\nalgorithm = \"uncoupled\"\n\
             subflows = [ { path = [\"a\"] }, { path = [\"b\"] } ]\n\
             [[flow]]\nname = \"u\"\npath = [\"b\"]\n\
             traffic = { type = \"cbr\", rate = \"5Mbps\", size = \"1000B\" }\n",
        );
        assert_eq!(offered_load_bps(&s), 10_000_000 + 40_000_000 + 5_000_000);
    }

    #[test]
    fn limits_and_unknown_algorithms_are_refused_by_name() {
        let s = scenario("[[flow]]\nname = \"x\"\nalgorithm = \"reno\"\npath = [\"b\"]\n");
        let tight = Options {
            max_load_bps: 20_000_000,
            ..Options::default()
        };
        let e = check_scenario(&s, &tight).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("30.0 Mbit/s in total"), "{e}");
        let v = scenario("[[flow]]\nname = \"v\"\nalgorithm = \"veno\"\npath = [\"a\"]\n");
        let e = check_scenario(&v, &Options::default()).unwrap_err();
        assert!(e.to_string().contains("\"veno\" cannot be emulated"), "{e}");
        assert!(
            e.to_string().contains("this build runs: reno, uncoupled"),
            "{e}"
        );
    }

    #[test]
    fn the_kernel_runs_reno_for_reno_and_uncoupled() {
        assert_eq!(kernel_algorithm("reno").as_deref(), Some("reno"));
        assert_eq!(kernel_algorithm("uncoupled").as_deref(), Some("reno"));
        assert_eq!(kernel_algorithm("lia").as_deref(), Some("pw_lia"));
        assert_eq!(
            kernel_algorithm("fully-coupled").as_deref(),
            Some("pw_coupled")
        );
        assert_eq!(kernel_algorithm("kelly-voice").as_deref(), Some("pw_kv"));
        assert_eq!(kernel_algorithm("veno"), None);
    }

    #[test]
    fn coupled_algorithms_run_where_this_build_can_load_them() {
        let s = scenario(
            "[[flow]]\nname = \"mp\"\nalgorithm = \"lia\"\n\
             subflows = [ { path = [\"a\"] }, { path = [\"b\"] } ]\n",
        );
        let r = check_scenario(&s, &Options::default());
        let preloaded = available_algorithms().iter().any(|a| a == "pw_lia");
        if LOADS_CONTROLLERS || preloaded {
            assert!(r.is_ok(), "{r:?}");
        } else {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("\"pw_lia\" is not loaded"), "{e}");
            assert!(e.contains("pathweave kernel load"), "{e}");
        }
    }

    /// A two-path flow (`lia` where this build runs it, else `uncoupled`) with `tcp` as its
    /// [tcp] table and `extra` as more keys of the flow.
    fn mp_with(tcp: &str, extra: &str) -> Scenario {
        let algo = if runs_here("lia", &available_algorithms()) {
            "lia"
        } else {
            "uncoupled"
        };
        scenario(&format!(
            "[tcp]\n{tcp}\n[[flow]]\nname = \"mp\"\nalgorithm = \"{algo}\"\n{extra}\n\
             subflows = [ {{ path = [\"a\"] }}, {{ path = [\"b\"] }} ]\n"
        ))
    }

    fn refusal(s: &Scenario) -> String {
        let e = check_scenario(s, &Options::default()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        e.to_string()
    }

    #[test]
    fn settings_the_kernel_cannot_run_are_refused_naming_them() {
        for (tcp, names, allowed) in [
            (
                "header = \"60B\"",
                "header = \"60B\"",
                "header = \"40B\" only",
            ),
            (
                "ack_size = \"100B\"",
                "ack_size = \"100B\"",
                "ack_size = \"40B\" only",
            ),
            (
                "delayed_ack = \"40ms\"",
                "delayed_ack = \"40ms\"",
                "ACK-every-segment only",
            ),
            (
                "delayed_ack = true",
                "delayed_ack = \"100ms\"",
                "ACK-every-segment",
            ),
            (
                "recovery = \"reno\"",
                "recovery = \"reno\"",
                "recovery = \"newreno\" (SACK off) or \"sack\"",
            ),
            (
                "scheduler = \"roundrobin\"",
                "scheduler = \"roundrobin\"",
                "\"minrtt\" (the default) or \"linux\"",
            ),
            (
                "min_rto = \"100us\"",
                "min_rto = \"0.1ms\"",
                "at least \"1ms\"",
            ),
            (
                "min_rto = \"1500us\"",
                "min_rto = \"1.5ms\"",
                "whole number",
            ),
        ] {
            let msg = refusal(&mp_with(tcp, ""));
            assert!(msg.contains("flow mp: "), "{tcp}: {msg}");
            assert!(msg.contains(names), "{tcp}: {msg}");
            assert!(msg.contains("cannot be emulated"), "{tcp}: {msg}");
            assert!(msg.contains(allowed), "{tcp}: {msg}");
        }
        let msg = refusal(&mp_with("header = \"60B\"", ""));
        assert!(
            msg.contains("1020 bytes of payload per segment instead of mss = 1000"),
            "{msg}"
        );
    }

    #[test]
    fn settings_the_emulator_maps_pass() {
        // What the repository's emulated scenarios set: the default header and ACK size
        // written out, whole milliseconds of min_rto, NewReno or SACK, the Linux scheduler,
        // MPTCP's option bytes (taken out of mss and added to header and ack_size).
        for tcp in [
            "header = \"40B\"\nack_size = \"40B\"\nmin_rto = \"200ms\"\nrecovery = \"newreno\"",
            "recovery = \"sack\"\nmptcp_options = true\nscheduler = \"linux\"\nhandshakes = true",
            "delayed_ack = false\nmin_rto = \"1ms\"\nscheduler = \"minrtt\"",
        ] {
            let r = check_scenario(&mp_with(tcp, ""), &Options::default());
            assert!(r.is_ok(), "{tcp}: {r:?}");
        }
        // A single-path flow has no MPTCP scheduler to differ.
        let s =
            scenario("[tcp]\nscheduler = \"roundrobin\"\n[[flow]]\nname = \"x\"\npath = [\"a\"]\n");
        assert!(check_scenario(&s, &Options::default()).is_ok());
    }

    #[test]
    fn per_packet_counting_with_the_linux_arithmetic_is_refused() {
        if !runs_here("lia", &available_algorithms()) {
            println!("skipped: this build does not run lia (no BPF controllers)");
            return;
        }
        let s = mp_with("", "arithmetic = \"linux\"\ncounting = \"per-packet\"");
        let msg = refusal(&s);
        assert!(msg.contains("counting = \"per-packet\""), "{msg}");
        assert!(msg.contains("\"per-ack-event\" only"), "{msg}");
        for extra in ["arithmetic = \"linux\"", ""] {
            let r = check_scenario(&mp_with("", extra), &Options::default());
            assert!(r.is_ok(), "{extra}: {r:?}");
        }
    }

    #[test]
    fn kelly_voice_runs_the_kernels_arithmetic_only() {
        if !runs_here("kelly-voice", &available_algorithms()) {
            println!("skipped: this build does not run kelly-voice (no BPF controllers)");
            return;
        }
        let kv = |extra: &str| {
            scenario(&format!(
                "[[flow]]\nname = \"mp\"\nalgorithm = \"kelly-voice\"\n{extra}\n\
                 subflows = [ {{ path = [\"a\"] }}, {{ path = [\"b\"] }} ]\n"
            ))
        };
        for (extra, names, runs) in [
            (
                "arithmetic = \"spec\"",
                "arithmetic = \"spec\"",
                "arithmetic = \"linux\" only",
            ),
            (
                "arithmetic = \"linux\"\ncounting = \"per-packet\"",
                "counting = \"per-packet\"",
                "counting = \"per-ack-event\" only",
            ),
        ] {
            let msg = refusal(&kv(extra));
            assert!(msg.contains(names) && msg.contains(runs), "{extra}: {msg}");
        }
        for extra in ["", "arithmetic = \"linux\"", "counting = \"per-ack-event\""] {
            let r = check_scenario(&kv(extra), &Options::default());
            assert!(r.is_ok(), "{extra}: {r:?}");
        }
    }

    #[test]
    fn bmc_with_flowshares_other_than_one_is_refused() {
        let s = scenario(
            "[[flow]]\nname = \"b\"\nalgorithm = \"bmc\"\nflowshares = 2\n\
             subflows = [ { path = [\"a\"] }, { path = [\"b\"] } ]\n",
        );
        let e = check_scenario(&s, &Options::default()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("algorithm \"bmc\" cannot be emulated"),
            "{msg}"
        );
        if LOADS_CONTROLLERS {
            assert!(msg.contains("flowshares = 2"), "{msg}");
        }
    }
}
