//! UDP constant-rate endpoints: a source that sends datagrams of the flow's size (on the
//! wire) at its rate, and a sink that counts them. There is no congestion state to sample:
//! the flow's series carry its delivery rate only, and it has no subflow rows.

use super::{
    io_err, namespace_sysctls, sleep_until, spawn_receiver, spawn_sender, Ends, FlowCounters,
    FlowState, NamespaceNeeds, SubflowReading, Transport, TICK_NS,
};
use crate::sys;
use crate::Clock;
use pathweave_cc::{Bandwidth, Bytes};
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The UDP port of constant-rate sinks.
const UDP_PORT: u16 = 5002;
/// IPv4 and UDP headers: a datagram of `size` bytes on the wire carries `size - 28`.
pub(crate) const UDP_OVERHEAD: u32 = 28;

/// A constant-rate flow.
pub(crate) struct Cbr {
    /// Time between datagrams.
    interval_ns: u64,
    /// Datagram size on the wire.
    size: u32,
    /// Datagrams sent and received, shared with the threads.
    datagrams: Arc<Datagrams>,
}

#[derive(Default)]
struct Datagrams {
    sent: AtomicU64,
    received: AtomicU64,
}

impl Cbr {
    /// Datagrams of `size` bytes on the wire at `rate`.
    pub(crate) fn new(rate: Bandwidth, size: u32) -> Cbr {
        Cbr {
            interval_ns: rate
                .transmission_time(Bytes(size as u64))
                .map_or(1_000_000_000, |d| d.0.max(1)),
            size,
            datagrams: Arc::default(),
        }
    }
}

impl Transport for Cbr {
    fn needs(&self, _ends: &Ends) -> NamespaceNeeds {
        NamespaceNeeds {
            sysctls: namespace_sysctls(true),
            mtu: self.size,
            sender_route_options: String::new(),
            receiver_route_options: String::new(),
            sender_commands: Vec::new(),
            receiver_commands: Vec::new(),
        }
    }

    fn listen(&self, ends: &Ends) -> Result<Option<OwnedFd>, String> {
        let fd = sys::udp_socket().map_err(|e| io_err("socket", e))?;
        sys::bind(fd.as_raw_fd(), ends.server, UDP_PORT).map_err(|e| io_err("bind", e))?;
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
        let (size, datagrams) = (self.size, self.datagrams.clone());
        spawn_receiver(ends, state, clock, stop, move |_, state, _, stop| {
            receive(listener, state, &datagrams, stop, size)
        })
    }

    fn start_sender(
        &self,
        ends: &Ends,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        let (interval_ns, size, datagrams) = (self.interval_ns, self.size, self.datagrams.clone());
        spawn_sender(ends, state, clock, stop, move |ends, _, clock, stop| {
            send(ends, &datagrams, clock, stop, interval_ns, size)
        })
    }

    fn has_subflows(&self) -> bool {
        false
    }

    fn read(&mut self, _ends: &Ends, _state: &FlowState) -> Vec<(usize, SubflowReading)> {
        Vec::new()
    }

    fn finish(&mut self, _state: &FlowState) {}

    fn counters(&self, _state: &FlowState) -> FlowCounters {
        FlowCounters {
            packets_sent: self.datagrams.sent.load(Ordering::Relaxed),
            ..FlowCounters::default()
        }
    }
}

/// The sink: counts datagrams until `stop`.
fn receive(
    fd: OwnedFd,
    state: &FlowState,
    datagrams: &Datagrams,
    stop: &AtomicBool,
    size: u32,
) -> Result<(), String> {
    let sock = UdpSocket::from(fd);
    sock.set_read_timeout(Some(std::time::Duration::from_nanos(TICK_NS)))
        .map_err(|e| io_err("socket", e))?;
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(_) => {
                datagrams.received.fetch_add(1, Ordering::Relaxed);
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

/// The source, from the flow's start: one datagram every `interval_ns` until its stop or
/// the run's.
fn send(
    ends: &Ends,
    datagrams: &Datagrams,
    clock: &Clock,
    stop: &AtomicBool,
    interval_ns: u64,
    size: u32,
) -> Result<(), String> {
    let fd = sys::udp_socket().map_err(|e| io_err("socket", e))?;
    sys::bind(fd.as_raw_fd(), ends.client[0], 0).map_err(|e| io_err("bind", e))?;
    let sock = UdpSocket::from(fd);
    let server = std::net::SocketAddrV4::new(ends.server.into(), UDP_PORT);
    sock.connect(server).map_err(|e| io_err("connect", e))?;
    let payload = vec![0u8; (size - UDP_OVERHEAD) as usize];
    let stop_at = ends.stop_ns.unwrap_or(u64::MAX);
    let mut next = ends.start_ns;
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
                datagrams.sent.store(sent, Ordering::Relaxed);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => return Err(io_err("send", e)),
        }
        next += interval_ns;
    }
    Ok(())
}
