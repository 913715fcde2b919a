//! Kernel TCP and MPTCP endpoints: bulk senders, sized transfers and on/off sources with their
//! receivers, each end a socket of the kernel's, and their sampling.
//!
//! The scenario's TCP settings become the namespaces' sysctls and the routes' options
//! (docs/emulation.md); an MPTCP connection's subflows come from the sender's path-manager
//! endpoints, one per scenario path, added and removed as subflows join and leave.
//!
//! Single-path flows read `TCP_INFO`; MPTCP connections read `MPTCP_TCPINFO` and
//! `MPTCP_SUBFLOW_ADDRS`, and each subflow is matched to its scenario path by its local
//! address. A flow's loss-recovery counters come from its sender namespace's TCP MIB
//! (`/proc/<tid>/net/netstat`): every namespace holds one flow's sender, so those are the flow's.

use super::{
    io_err, namespace_sysctls, spawn_receiver, spawn_sender, Ends, FlowCounters, FlowState,
    NamespaceNeeds, PathChange, SubflowReading, Transport, TICK_NS,
};
use crate::lab::Lab;
use crate::pattern::{fill, Hash, Verifier};
use crate::sys::{self, TCP_INFO_LEN};
use crate::{Clock, EmuError};
use pathweave_sim::rng::{Purpose, Stream};
use pathweave_sim::scenario::{FlowSpec, TcpSettings};
use pathweave_sim::tcp::{Recovery, Traffic};
use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The TCP port every receiver listens on (each receiver has a namespace of its own).
const TCP_PORT: u16 = 5001;
/// Application write and read size.
const CHUNK: usize = 64 * 1024;

/// The sender's socket while it is open, shared by the sending thread and the sampler.
type SharedSocket = Arc<Mutex<Option<Arc<OwnedFd>>>>;

/// What the sending and receiving threads of a kernel flow run.
#[derive(Clone, Debug)]
struct App {
    mptcp: bool,
    /// The kernel congestion control of the sender's socket (and every subflow it opens).
    congestion: String,
    traffic: Traffic,
    /// The scenario's connection-level receive buffer (bytes), if it sets one.
    receive_buffer: Option<u64>,
}

/// A kernel TCP or MPTCP flow.
pub(crate) struct Kernel {
    app: App,
    /// `mss + header`: the devices' MTU.
    mtu: u32,
    initial_window: u32,
    /// The routes' `rto_min` (ns).
    min_rto_ns: u64,
    /// ACK every segment: the receiver's routes' `quickack`.
    quickack: bool,
    sack: bool,
    /// Subflows (k ≥ 1) whose path-manager endpoint exists from the start.
    initial_endpoints: Vec<usize>,
    changes: Vec<PathChange>,
    socket: SharedSocket,
    subs: Vec<KernelSubflow>,
    /// The namespace's loss-recovery counters at the last reading.
    netstat: Netstat,
    scratch: Vec<u8>,
}

/// What sampling keeps of one subflow.
#[derive(Clone, Copy, Debug, Default)]
struct KernelSubflow {
    last: TcpInfo,
    /// ssthresh reductions seen between samples.
    reductions: u64,
    last_ssthresh: Option<u32>,
}

impl Kernel {
    /// Flow `f` with TCP settings `cfg`, as an MPTCP connection if `mptcp`, on kernel
    /// congestion control `congestion`.
    pub(crate) fn new(
        f: &FlowSpec,
        cfg: &TcpSettings,
        traffic: Traffic,
        mptcp: bool,
        congestion: String,
    ) -> Kernel {
        let (initial_endpoints, changes) = if mptcp {
            super::plan_paths(f)
        } else {
            (Vec::new(), Vec::new())
        };
        Kernel {
            app: App {
                mptcp,
                congestion,
                traffic,
                receive_buffer: cfg.receive_buffer,
            },
            mtu: cfg.mss + cfg.header,
            initial_window: cfg.initial_window,
            min_rto_ns: cfg.min_rto.0,
            quickack: cfg.delayed_ack.is_none(),
            sack: cfg.recovery == Recovery::Sack,
            initial_endpoints,
            changes,
            socket: SharedSocket::default(),
            subs: vec![KernelSubflow::default(); f.subflows.len()],
            netstat: Netstat::default(),
            scratch: Vec::new(),
        }
    }

    /// The current per-subflow `tcp_info` of the sender's socket, by scenario subflow index.
    fn tcp_infos(&mut self, ends: &Ends) -> Vec<(usize, TcpInfo)> {
        let sock = self.socket.lock().ok().and_then(|s| s.clone());
        let Some(sock) = sock else {
            return Vec::new();
        };
        let fd = sock.as_raw_fd();
        if self.app.mptcp {
            match sys::mptcp_subflows(fd, crate::MAX_SUBFLOWS * 2, &mut self.scratch) {
                Ok(list) => list
                    .into_iter()
                    .filter_map(|(addr, raw)| {
                        let k = ends.client.iter().position(|a| *a == addr)?;
                        Some((k, TcpInfo::parse(&raw)))
                    })
                    .collect(),
                Err(_) => Vec::new(),
            }
        } else {
            let mut raw = [0u8; TCP_INFO_LEN];
            match sys::tcp_info(fd, &mut raw) {
                Ok(len) => vec![(0, TcpInfo::parse(&raw[..len]))],
                Err(_) => Vec::new(),
            }
        }
    }

    /// Refresh the loss-recovery counters from the sender's namespace.
    fn read_netstat(&mut self, state: &FlowState) {
        let tid = state.sender_tid.load(Ordering::Relaxed);
        if tid > 0 {
            if let Some(n) = Netstat::read(tid) {
                self.netstat = n;
            }
        }
    }
}

/// The `ip` command that adds (`join`) or deletes subflow `k`'s path-manager endpoint.
fn endpoint_command(ends: &Ends, k: usize, join: bool) -> String {
    if join {
        format!(
            "mptcp endpoint add {} dev {} id {} subflow",
            super::dotted(ends.client[k]),
            ends.devices[k],
            k + 1
        )
    } else {
        format!("mptcp endpoint delete id {}", k + 1)
    }
}

impl Transport for Kernel {
    fn needs(&self, ends: &Ends) -> NamespaceNeeds {
        // The sender's socket sets its congestion control itself (`connect`), before it
        // connects; an MPTCP connection keeps the name and gives it to every subflow it
        // opens, the first and those the path manager adds later. The namespace's default
        // stays the kernel's: a default of the run's own BPF controller would hold it
        // registered for as long as the namespace exists (which, for a namespace named under
        // /run/netns and then killed, is until `pathweave emulate --cleanup`).
        let mut sender_commands = Vec::new();
        let mut receiver_commands = Vec::new();
        if self.app.mptcp {
            let n = ends.devices.len();
            let limits = format!("mptcp limits set subflows {} add_addr_accepted 0", n - 1);
            sender_commands.push(limits.clone());
            receiver_commands.push(limits);
            for &k in &self.initial_endpoints {
                sender_commands.push(endpoint_command(ends, k, true));
            }
        }
        NamespaceNeeds {
            sysctls: namespace_sysctls(self.sack),
            mtu: self.mtu,
            sender_route_options: format!(
                " initcwnd {} rto_min {}ms",
                self.initial_window,
                (self.min_rto_ns / 1_000_000).max(1)
            ),
            receiver_route_options: if self.quickack { " quickack 1" } else { "" }.to_string(),
            sender_commands,
            receiver_commands,
        }
    }

    fn path_changes(&self) -> Vec<PathChange> {
        self.changes.clone()
    }

    fn listen(&self, ends: &Ends) -> Result<Option<OwnedFd>, String> {
        let fd = sys::stream_socket(self.app.mptcp).map_err(|e| io_err("socket", e))?;
        if let Some(b) = self.app.receive_buffer {
            // Accepted sockets inherit it. Linux doubles the value for its own overhead
            // and advertises about half of the doubled space, so the window stays near
            // the scenario's buffer; autotuning is off for this socket.
            let b = i32::try_from(b).unwrap_or(i32::MAX);
            sys::setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, b)
                .map_err(|e| io_err("setsockopt SO_RCVBUF", e))?;
        }
        sys::bind(fd.as_raw_fd(), ends.server, TCP_PORT).map_err(|e| io_err("bind", e))?;
        sys::listen(fd.as_raw_fd(), 8).map_err(|e| io_err("listen", e))?;
        Ok(Some(fd))
    }

    fn start_receiver(
        &self,
        ends: &Ends,
        listener: OwnedFd,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        let traffic = self.app.traffic;
        spawn_receiver(ends, state, clock, stop, move |ends, state, clock, stop| {
            receive(ends, listener, state, clock, stop, traffic)
        })
    }

    fn start_sender(
        &self,
        ends: &Ends,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        let (app, socket) = (self.app.clone(), self.socket.clone());
        spawn_sender(ends, state, clock, stop, move |ends, state, clock, stop| {
            send(ends, &app, &socket, state, clock, stop)
        })
    }

    fn change_path(&self, lab: &Lab, ends: &Ends, k: usize, join: bool) -> Result<(), EmuError> {
        lab.batch(&ends.sender_ns, &[endpoint_command(ends, k, join)])
    }

    fn has_subflows(&self) -> bool {
        true
    }

    fn read(&mut self, ends: &Ends, state: &FlowState) -> Vec<(usize, SubflowReading)> {
        let infos = self.tcp_infos(ends);
        let readings = infos
            .into_iter()
            .map(|(k, info)| {
                let sub = &mut self.subs[k];
                if let Some(prev) = sub.last_ssthresh {
                    if info.snd_ssthresh < prev {
                        sub.reductions += 1;
                    }
                }
                if info.snd_ssthresh < 0x7fff_ffff {
                    sub.last_ssthresh = Some(info.snd_ssthresh);
                }
                sub.last = info;
                let reading = SubflowReading {
                    cwnd_bytes: info.cwnd_bytes(),
                    ssthresh_bytes: info.ssthresh_bytes(),
                    srtt_s: info.srtt_s(),
                    acked_bytes: info.bytes_acked,
                    packets_sent: info.data_segs_out as u64,
                    retransmits: info.total_retrans as u64,
                    timeouts: info.total_rto as u64,
                    // Reductions seen between samples (a lower bound), or RTO episodes if more.
                    loss_events: sub.reductions.max(info.total_rto_recoveries as u64),
                    metrics: None,
                };
                (k, reading)
            })
            .collect();
        self.read_netstat(state);
        readings
    }

    fn finish(&mut self, state: &FlowState) {
        self.read_netstat(state);
    }

    fn counters(&self, _state: &FlowState) -> FlowCounters {
        let (mut c, mut rto_episodes) = (FlowCounters::default(), 0u64);
        for info in self.subs.iter().map(|s| s.last) {
            c.retransmits += info.total_retrans as u64;
            c.timeouts += info.total_rto as u64;
            rto_episodes += info.total_rto_recoveries as u64;
            c.packets_sent += info.data_segs_out as u64;
        }
        let n = self.netstat;
        c.timeouts = c.timeouts.max(n.timeouts);
        c.loss_events = n.reno_recovery + n.sack_recovery + rto_episodes;
        c
    }
}

/// The receiving application: accepts one connection and reads it until `stop`, checking
/// every byte against the sender's stream.
fn receive(
    ends: &Ends,
    listener: OwnedFd,
    state: &FlowState,
    clock: &Clock,
    stop: &AtomicBool,
    traffic: Traffic,
) -> Result<(), String> {
    let listener = TcpListener::from(listener);
    listener
        .set_nonblocking(true)
        .map_err(|e| io_err("listener", e))?;
    let conn = loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                sys::wait_fd(listener.as_raw_fd(), libc::POLLIN, TICK_NS)
                    .map_err(|e| io_err("poll", e))?;
            }
            Err(e) => return Err(io_err("accept", e)),
        }
    };
    let mut conn: TcpStream = conn;
    conn.set_nonblocking(true)
        .map_err(|e| io_err("connection", e))?;
    // Aborted when closed, as the sender's, unless the stream ended while the links still run.
    sys::set_linger(conn.as_raw_fd(), true).map_err(|e| io_err("setsockopt SO_LINGER", e))?;
    let size = match traffic {
        Traffic::Transfer(n) => Some(n),
        _ => None,
    };
    let mut verifier = Verifier::new(ends.seed);
    let mut buf = vec![0u8; CHUNK];
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut buf) {
            Ok(0) => {
                state.eof.store(true, Ordering::Relaxed);
                // The sender has finished: close gracefully while the links carry the FIN.
                sys::set_linger(conn.as_raw_fd(), false)
                    .map_err(|e| io_err("setsockopt SO_LINGER", e))?;
                break;
            }
            Ok(n) => {
                verifier.check(&buf[..n]);
                let total = state.delivered.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
                if size.is_some_and(|s| total >= s) {
                    state
                        .completed_ns
                        .fetch_min(clock.now_ns(), Ordering::Relaxed);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                sys::wait_fd(conn.as_raw_fd(), libc::POLLIN, TICK_NS)
                    .map_err(|e| io_err("poll", e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("read", e)),
        }
    }
    state
        .mismatches
        .store(verifier.mismatches, Ordering::Relaxed);
    state
        .received_hash
        .store(verifier.hash.value(), Ordering::Relaxed);
    Ok(())
}

fn connect(
    ends: &Ends,
    app: &App,
    clock: &Clock,
    stop: &AtomicBool,
) -> Result<Option<OwnedFd>, String> {
    let fd = sys::stream_socket(app.mptcp).map_err(|e| io_err("socket", e))?;
    // The sender's socket is closed only when the run ends or its process dies, when the
    // links stop too: a graceful close could never finish, and the socket would stay an
    // orphan for minutes, holding its namespace and its congestion control (a run's own BPF
    // controllers included). Abort instead. A sized transfer ends with shutdown, not close.
    sys::set_linger(fd.as_raw_fd(), true).map_err(|e| io_err("setsockopt SO_LINGER", e))?;
    let congestion = &app.congestion;
    sys::set_congestion(fd.as_raw_fd(), congestion)
        .map_err(|e| io_err(&format!("congestion control {congestion:?}"), e))?;
    sys::bind(fd.as_raw_fd(), ends.client[0], 0).map_err(|e| io_err("bind", e))?;
    sys::connect_start(fd.as_raw_fd(), ends.server, TCP_PORT).map_err(|e| io_err("connect", e))?;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let ev =
            sys::wait_fd(fd.as_raw_fd(), libc::POLLOUT, TICK_NS).map_err(|e| io_err("poll", e))?;
        if ev != 0 {
            break;
        }
    }
    if let Some(e) = sys::socket_error(fd.as_raw_fd()).map_err(|e| io_err("connect", e))? {
        return Err(format!(
            "connect at {:.3} s: {e}",
            clock.now_ns() as f64 / 1e9
        ));
    }
    Ok(Some(fd))
}

/// The sending application, from the flow's start: connects, then writes the flow's stream
/// (all of it, its size, or in on/off periods) until its stop or the run's.
fn send(
    ends: &Ends,
    app: &App,
    socket: &SharedSocket,
    state: &FlowState,
    clock: &Clock,
    stop: &AtomicBool,
) -> Result<(), String> {
    let Some(fd) = connect(ends, app, clock, stop)? else {
        return Ok(());
    };
    let fd = Arc::new(fd);
    if let Ok(mut s) = socket.lock() {
        *s = Some(fd.clone());
    }
    let traffic = app.traffic;
    let raw = fd.as_raw_fd();
    let mut buf = vec![0u8; CHUNK];
    let mut offset = 0u64;
    let mut hash = Hash::default();
    let limit = match traffic {
        Traffic::Transfer(n) => n,
        _ => u64::MAX,
    };
    let mut rng = Stream::new(ends.seed, Purpose::Flow, ends.index);
    // On/off sources start on; `switch_at` is the end of the current period.
    let mut on = true;
    let mut switch_at = match traffic {
        Traffic::OnOff { on: p, .. } => ends.start_ns + period_ns(p, &mut rng),
        _ => u64::MAX,
    };
    let stop_at = ends.stop_ns.unwrap_or(u64::MAX);
    while offset < limit && !stop.load(Ordering::Relaxed) {
        let now = clock.now_ns();
        if now >= stop_at {
            break;
        }
        if now >= switch_at {
            if let Traffic::OnOff { on: p_on, off } = traffic {
                on = !on;
                switch_at = now + period_ns(if on { p_on } else { off }, &mut rng);
            }
            continue;
        }
        if !on {
            std::thread::sleep(std::time::Duration::from_nanos(
                (switch_at.min(stop_at) - now).min(TICK_NS),
            ));
            continue;
        }
        let n = (limit - offset).min(CHUNK as u64) as usize;
        fill(ends.seed, offset, &mut buf[..n]);
        match sys::send_some(raw, &buf[..n]) {
            Ok(0) => {
                let wait = TICK_NS
                    .min(stop_at.saturating_sub(now))
                    .min(switch_at - now);
                sys::wait_fd(raw, libc::POLLOUT, wait.max(1)).map_err(|e| io_err("poll", e))?;
            }
            Ok(w) => {
                hash.update(&buf[..w]);
                offset += w as u64;
                state.sent.store(offset, Ordering::Relaxed);
            }
            Err(e) => return Err(io_err("write", e)),
        }
    }
    state.sent_hash.store(hash.value(), Ordering::Relaxed);
    // End of data: a FIN after the last byte (the connection stays open for sampling).
    let stream = TcpStream::from(
        fd.try_clone()
            .map_err(|e| io_err("duplicating the socket", e))?,
    );
    let _ = stream.shutdown(Shutdown::Write);
    Ok(())
}

fn period_ns(p: pathweave_sim::tcp::Period, rng: &mut Stream) -> u64 {
    let mean = p.mean.0 as f64;
    let d = if p.exponential {
        rng.exponential(mean)
    } else {
        mean
    };
    d.max(1.0) as u64
}

/// The `tcp_info` fields pathweave reads (offsets in `struct tcp_info`, linux/tcp.h).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct TcpInfo {
    snd_mss: u32,
    rtt_us: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    total_retrans: u32,
    bytes_acked: u64,
    data_segs_out: u32,
    total_rto: u16,
    total_rto_recoveries: u16,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_ne_bytes([s[0], s[1]]))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
    })
}

impl TcpInfo {
    /// Decode the first `len` bytes of a `struct tcp_info`.
    fn parse(b: &[u8]) -> TcpInfo {
        TcpInfo {
            snd_mss: u32_at(b, 16),
            rtt_us: u32_at(b, 68),
            snd_ssthresh: u32_at(b, 76),
            snd_cwnd: u32_at(b, 80),
            total_retrans: u32_at(b, 100),
            bytes_acked: u64_at(b, 120),
            data_segs_out: u32_at(b, 156),
            total_rto: u16_at(b, 240),
            total_rto_recoveries: u16_at(b, 242),
        }
    }
    fn cwnd_bytes(&self) -> f64 {
        self.snd_cwnd as f64 * self.snd_mss as f64
    }
    /// ssthresh in bytes; NaN while the kernel's is "infinite" (TCP_INFINITE_SSTHRESH).
    fn ssthresh_bytes(&self) -> f64 {
        if self.snd_ssthresh >= 0x7fff_ffff {
            f64::NAN
        } else {
            self.snd_ssthresh as f64 * self.snd_mss as f64
        }
    }
    fn srtt_s(&self) -> f64 {
        if self.rtt_us == 0 {
            f64::NAN
        } else {
            self.rtt_us as f64 * 1e-6
        }
    }
}

/// The TCP MIB counters of one namespace that count loss recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Netstat {
    /// Fast recoveries without SACK (`TCPRenoRecovery`).
    reno_recovery: u64,
    /// Fast recoveries with SACK (`TCPSackRecovery`).
    sack_recovery: u64,
    /// Retransmission timeouts (`TCPTimeouts`).
    timeouts: u64,
}

impl Netstat {
    fn read(tid: i32) -> Option<Netstat> {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/net/netstat")).ok()?;
        Some(Netstat::parse(&text))
    }

    /// Parse `/proc/net/netstat`: pairs of lines, names then values, per protocol prefix.
    fn parse(text: &str) -> Netstat {
        let mut n = Netstat::default();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.chunks(2) {
            let [names, values] = pair else { continue };
            if !names.starts_with("TcpExt:") {
                continue;
            }
            for (k, v) in names
                .split_whitespace()
                .zip(values.split_whitespace())
                .skip(1)
            {
                let v: u64 = v.parse().unwrap_or(0);
                match k {
                    "TCPRenoRecovery" => n.reno_recovery = v,
                    "TCPSackRecovery" => n.sack_recovery = v,
                    "TCPTimeouts" => n.timeouts = v,
                    _ => {}
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathweave_sim::scenario::{FlowKind, Scenario};

    fn kernel_flow(flow: &str) -> Kernel {
        let text = format!(
            "duration = \"5s\"\n[[link]]\nname = \"a\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\n\
             [[link]]\nname = \"b\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\n[[flow]]\n{flow}"
        );
        let s = Scenario::parse(&text, "t.toml", "t").unwrap_or_else(|e| panic!("{e}"));
        let f = &s.flows[0];
        let FlowKind::Tcp { cfg, traffic, .. } = &f.kind else {
            panic!("not a TCP flow")
        };
        Kernel::new(f, cfg, *traffic, f.runs_as_mptcp(), "reno".to_string())
    }

    #[test]
    fn subflows_that_join_late_or_leave_are_path_changes_in_scenario_order() {
        let k = kernel_flow(
            "name = \"mp\"\nalgorithm = \"uncoupled\"\nstart = \"1s\"\nsubflows = [ \
             { path = [\"a\"] }, { path = [\"b\"], start = \"3s\", stop = \"4s\" }, \
             { path = [\"a\"], start = \"1s\", stop = \"2s\" } ]\n",
        );
        // Subflow 2 starts with the connection: its endpoint exists from the start.
        assert_eq!(k.initial_endpoints, vec![2]);
        let change = |at: u64, k: usize, join: bool| PathChange { at, k, join };
        assert_eq!(
            k.path_changes(),
            vec![
                change(3_000_000_000, 1, true),
                change(4_000_000_000, 1, false),
                change(2_000_000_000, 2, false),
            ]
        );
    }

    #[test]
    fn a_single_path_flow_has_no_path_manager_work() {
        let k = kernel_flow("name = \"x\"\nalgorithm = \"reno\"\npath = [\"a\"]\n");
        assert!(!k.app.mptcp);
        assert!(k.initial_endpoints.is_empty() && k.path_changes().is_empty());
    }

    #[test]
    fn netstat_counters_are_found_by_name() {
        let text = "TcpExt: SyncookiesSent TCPRenoRecovery TCPSackRecovery TCPTimeouts\n\
                    TcpExt: 0 3 4 5\n\
                    IpExt: InNoRoutes TCPTimeouts\n\
                    IpExt: 9 9\n";
        let n = Netstat::parse(text);
        assert_eq!(
            n,
            Netstat {
                reno_recovery: 3,
                sack_recovery: 4,
                timeouts: 5
            }
        );
    }

    #[test]
    fn tcp_info_fields_at_their_uapi_offsets() {
        // Offsets from struct tcp_info in include/uapi/linux/tcp.h: 8 bytes of u8 fields,
        // then u32 rto, ato, snd_mss (16), …, rtt (68), rttvar, snd_ssthresh (76),
        // snd_cwnd (80), …, total_retrans (100), u64 pacing_rate (104), max_pacing_rate,
        // bytes_acked (120), …, data_segs_out (156), …, total_rto (u16, 240).
        let mut b = [0u8; TCP_INFO_LEN];
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[68..72].copy_from_slice(&20_500u32.to_ne_bytes());
        b[76..80].copy_from_slice(&0x7fff_ffffu32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[120..128].copy_from_slice(&123_456u64.to_ne_bytes());
        b[240..242].copy_from_slice(&2u16.to_ne_bytes());
        let i = TcpInfo::parse(&b);
        assert_eq!(i.cwnd_bytes(), 14_480.0);
        assert!(i.ssthresh_bytes().is_nan());
        assert!((i.srtt_s() - 0.0205).abs() < 1e-12);
        assert_eq!(i.bytes_acked, 123_456);
        assert_eq!(i.total_rto, 2);
        // A short (older kernel) record reads the missing fields as zero.
        assert_eq!(TcpInfo::parse(&b[..104]).bytes_acked, 0);
    }
}
