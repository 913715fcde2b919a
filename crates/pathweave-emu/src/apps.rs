//! The applications at the ends of each flow: kernel TCP or MPTCP bulk senders, sized
//! transfers and on/off sources with their receivers, and UDP constant-rate sources with their
//! sinks. Each runs on its own thread, which first moves itself into its endpoint's network
//! namespace (a socket stays in the namespace it was created in, whatever thread uses it).

use crate::lab::Netns;
use crate::pattern::{fill, Hash, Verifier};
use crate::sys;
use crate::Clock;
use pathweave_sim::rng::{Purpose, Stream};
use pathweave_sim::tcp::Traffic;
use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The TCP port every receiver listens on (each receiver has a namespace of its own).
pub(crate) const TCP_PORT: u16 = 5001;
/// The UDP port of constant-rate sinks.
pub(crate) const UDP_PORT: u16 = 5002;
/// How often a blocked thread looks at the stop flag.
const TICK_NS: u64 = 20_000_000;
/// Application write and read size.
const CHUNK: usize = 64 * 1024;
/// IPv4 and UDP headers: a datagram of `size` bytes on the wire carries `size - 28`.
pub(crate) const UDP_OVERHEAD: u32 = 28;

/// What the endpoints of one flow share with the sampler and the orchestrator.
#[derive(Default)]
pub(crate) struct FlowState {
    /// Bytes delivered to the receiving application (a CBR sink counts datagrams' wire size).
    pub delivered: AtomicU64,
    /// Bytes the sending application handed to its socket.
    pub sent: AtomicU64,
    /// Datagrams sent (CBR).
    pub datagrams_sent: AtomicU64,
    /// Datagrams received (CBR).
    pub datagrams_received: AtomicU64,
    /// When the receiver had the whole transfer (ns since the epoch), `u64::MAX` until then.
    pub completed_ns: AtomicU64,
    /// The sender's socket while it is open, for sampling.
    pub socket: Mutex<Option<Arc<OwnedFd>>>,
    /// The sending thread's id, for its namespace's counters.
    pub sender_tid: AtomicI32,
    /// Bytes received that differ from what was sent.
    pub mismatches: AtomicU64,
    /// FNV-1a of the bytes sent and received (sized transfers).
    pub sent_hash: AtomicU64,
    pub received_hash: AtomicU64,
    /// Whether the receiver saw the end of the stream.
    pub eof: AtomicBool,
    /// The first failure of either end.
    pub error: Mutex<Option<String>>,
}

impl FlowState {
    pub(crate) fn new() -> FlowState {
        FlowState {
            completed_ns: AtomicU64::new(u64::MAX),
            ..FlowState::default()
        }
    }

    pub(crate) fn fail(&self, what: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(what);
        }
    }
}

/// One flow's application as the threads see it.
#[derive(Clone)]
pub(crate) struct AppSpec {
    pub index: usize,
    pub name: String,
    /// The namespaces of the two ends (the clones hold them while the threads run).
    pub sender_ns: Netns,
    pub receiver_ns: Netns,
    /// The receiver's address (subflow 0 connects to it).
    pub server: [u8; 4],
    /// The sender's address of subflow 0.
    pub client: [u8; 4],
    pub kind: AppKind,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub seed: u64,
}

#[derive(Clone)]
pub(crate) enum AppKind {
    Tcp {
        mptcp: bool,
        congestion: String,
        traffic: Traffic,
        /// The scenario's connection-level receive buffer (bytes), if it sets one.
        receive_buffer: Option<u64>,
    },
    Cbr {
        interval_ns: u64,
        size: u32,
    },
}

fn io_err(what: &str, e: std::io::Error) -> String {
    format!("{what}: {e}")
}

/// Sleep until `t` ns after the epoch; false if `stop` was set first.
fn sleep_until(clock: &Clock, t: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock.now_ns();
        if now >= t {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_nanos((t - now).min(TICK_NS)));
    }
}

/// The receiving side's setup, done before any sender starts: a listening socket.
pub(crate) fn listen(spec: &AppSpec) -> Result<OwnedFd, String> {
    spec.receiver_ns
        .enter()
        .map_err(|e| io_err("entering the receiver's namespace", e))?;
    match &spec.kind {
        AppKind::Tcp {
            mptcp,
            receive_buffer,
            ..
        } => {
            let fd = sys::stream_socket(*mptcp).map_err(|e| io_err("socket", e))?;
            if let Some(b) = receive_buffer {
                // Accepted sockets inherit it. Linux doubles the value for its own overhead
                // and advertises about half of the doubled space, so the window stays near
                // the scenario's buffer; autotuning is off for this socket.
                let b = i32::try_from(*b).unwrap_or(i32::MAX);
                sys::setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, b)
                    .map_err(|e| io_err("setsockopt SO_RCVBUF", e))?;
            }
            sys::bind(fd.as_raw_fd(), spec.server, TCP_PORT).map_err(|e| io_err("bind", e))?;
            sys::listen(fd.as_raw_fd(), 8).map_err(|e| io_err("listen", e))?;
            Ok(fd)
        }
        AppKind::Cbr { .. } => {
            let fd = sys::udp_socket().map_err(|e| io_err("socket", e))?;
            sys::bind(fd.as_raw_fd(), spec.server, UDP_PORT).map_err(|e| io_err("bind", e))?;
            Ok(fd)
        }
    }
}

/// The receiving application: runs until `stop`.
pub(crate) fn receive(
    spec: AppSpec,
    fd: OwnedFd,
    state: Arc<FlowState>,
    clock: Clock,
    stop: Arc<AtomicBool>,
) {
    let r = match spec.kind {
        AppKind::Tcp { traffic, .. } => tcp_receive(&spec, fd, &state, &clock, &stop, traffic),
        AppKind::Cbr { size, .. } => udp_receive(fd, &state, &stop, size),
    };
    if let Err(e) = r {
        state.fail(format!("flow {}: receiver: {e}", spec.name));
    }
}

fn tcp_receive(
    spec: &AppSpec,
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
    let mut verifier = Verifier::new(spec.seed);
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

fn udp_receive(fd: OwnedFd, state: &FlowState, stop: &AtomicBool, size: u32) -> Result<(), String> {
    let sock = UdpSocket::from(fd);
    sock.set_read_timeout(Some(std::time::Duration::from_nanos(TICK_NS)))
        .map_err(|e| io_err("socket", e))?;
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(_) => {
                state.datagrams_received.fetch_add(1, Ordering::Relaxed);
                state.delivered.fetch_add(size as u64, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(io_err("recv", e)),
        }
    }
    Ok(())
}

/// The sending application: runs until `stop`.
pub(crate) fn send(spec: AppSpec, state: Arc<FlowState>, clock: Clock, stop: Arc<AtomicBool>) {
    let r = spec
        .sender_ns
        .enter()
        .map_err(|e| io_err("entering the sender's namespace", e))
        .and_then(|()| {
            state.sender_tid.store(sys::gettid(), Ordering::Relaxed);
            if !sleep_until(&clock, spec.start_ns, &stop) {
                return Ok(());
            }
            match spec.kind.clone() {
                AppKind::Tcp {
                    mptcp,
                    congestion,
                    traffic,
                    ..
                } => tcp_send(&spec, &state, &clock, &stop, mptcp, &congestion, traffic),
                AppKind::Cbr { interval_ns, size } => {
                    udp_send(&spec, &state, &clock, &stop, interval_ns, size)
                }
            }
        });
    if let Err(e) = r {
        state.fail(format!("flow {}: sender: {e}", spec.name));
    }
    // Keep the thread (and so the namespace's counters) reachable until the run ends.
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_nanos(TICK_NS));
    }
}

fn connect(
    spec: &AppSpec,
    clock: &Clock,
    stop: &AtomicBool,
    mptcp: bool,
    congestion: &str,
) -> Result<Option<OwnedFd>, String> {
    let fd = sys::stream_socket(mptcp).map_err(|e| io_err("socket", e))?;
    // The sender's socket is closed only when the run ends or its process dies, when the
    // links stop too: a graceful close could never finish, and the socket would stay an
    // orphan for minutes, holding its namespace and its congestion control (a run's own BPF
    // controllers included). Abort instead. A sized transfer ends with shutdown, not close.
    sys::set_linger(fd.as_raw_fd(), true).map_err(|e| io_err("setsockopt SO_LINGER", e))?;
    sys::set_congestion(fd.as_raw_fd(), congestion)
        .map_err(|e| io_err(&format!("congestion control {congestion:?}"), e))?;
    sys::bind(fd.as_raw_fd(), spec.client, 0).map_err(|e| io_err("bind", e))?;
    sys::connect_start(fd.as_raw_fd(), spec.server, TCP_PORT).map_err(|e| io_err("connect", e))?;
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

fn tcp_send(
    spec: &AppSpec,
    state: &FlowState,
    clock: &Clock,
    stop: &AtomicBool,
    mptcp: bool,
    congestion: &str,
    traffic: Traffic,
) -> Result<(), String> {
    let Some(fd) = connect(spec, clock, stop, mptcp, congestion)? else {
        return Ok(());
    };
    let fd = Arc::new(fd);
    if let Ok(mut s) = state.socket.lock() {
        *s = Some(fd.clone());
    }
    let raw = fd.as_raw_fd();
    let mut buf = vec![0u8; CHUNK];
    let mut offset = 0u64;
    let mut hash = Hash::default();
    let limit = match traffic {
        Traffic::Transfer(n) => n,
        _ => u64::MAX,
    };
    let mut rng = Stream::new(spec.seed, Purpose::Flow, spec.index);
    // On/off sources start on; `switch_at` is the end of the current period.
    let mut on = true;
    let mut switch_at = match traffic {
        Traffic::OnOff { on: p, .. } => spec.start_ns + period_ns(p, &mut rng),
        _ => u64::MAX,
    };
    let stop_at = spec.stop_ns.unwrap_or(u64::MAX);
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
        fill(spec.seed, offset, &mut buf[..n]);
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

fn udp_send(
    spec: &AppSpec,
    state: &FlowState,
    clock: &Clock,
    stop: &AtomicBool,
    interval_ns: u64,
    size: u32,
) -> Result<(), String> {
    let fd = sys::udp_socket().map_err(|e| io_err("socket", e))?;
    sys::bind(fd.as_raw_fd(), spec.client, 0).map_err(|e| io_err("bind", e))?;
    let sock = UdpSocket::from(fd);
    let server = std::net::SocketAddrV4::new(spec.server.into(), UDP_PORT);
    sock.connect(server).map_err(|e| io_err("connect", e))?;
    let payload = vec![0u8; (size - UDP_OVERHEAD) as usize];
    let stop_at = spec.stop_ns.unwrap_or(u64::MAX);
    let mut next = spec.start_ns;
    let mut sent = 0u64;
    while next < stop_at {
        if !sleep_until(clock, next, stop) {
            break;
        }
        // Blocking send: a full device queue holds the source back rather than losing data
        // in the sending host.
        match sock.send(&payload) {
            Ok(_) => {
                sent += 1;
                state.datagrams_sent.store(sent, Ordering::Relaxed);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => return Err(io_err("send", e)),
        }
        next += interval_ns;
    }
    Ok(())
}
