//! Multipath QUIC endpoints (`transport = "quic"`): pathweave-quic's receiver and sender, in
//! this process, over UDP through the emulated links. One QUIC path per scenario subflow: the
//! sender's socket for path `k` is bound to subflow `k`'s address, so the namespace's source
//! routes send it through subflow `k`'s device, as they do an MPTCP subflow. The flow's
//! controller is pathweave-cc's own, coupled over the paths inside the sender (not a kernel
//! controller), and BMC's proportion manager runs inside it.
//!
//! The receiver acknowledges every path on whichever path it sends next (quinn's lowest open
//! path id), so acknowledgements of every path come back over subflow 0's reverse route.
//!
//! Samples come from the sender's own state: the controller's window, threshold and
//! algorithm state per path, quinn's RTT estimate and its counts of packets sent and lost.

use super::{
    io_err, namespace_sysctls, spawn_receiver, spawn_sender, Ends, FlowCounters, FlowState,
    NamespaceNeeds, PathChange, SubflowReading, Transport,
};
use crate::lab::Lab;
use crate::{Clock, EmuError};
use pathweave_quic::cert::Identity;
use pathweave_quic::endpoint::{Receiver, ReceiverLive, SenderLive};
use pathweave_quic::{Amount, QuicError, ReceiveOptions, SendOptions, Settings};
use pathweave_quic::{PathId, PathStats};
use pathweave_sim::scenario::Control;
use pathweave_sim::tcp::Traffic;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The UDP port of QUIC receivers (each receiver has a namespace of its own).
const QUIC_PORT: u16 = 5003;
/// IPv4 and UDP headers around a QUIC packet.
const IP_UDP: u32 = 28;

/// The wire size of a full QUIC packet of a flow with TCP segments of `mss + header` bytes:
/// the same, but not below QUIC's 1200-byte UDP payload (RFC 9000 §14), as the simulator's
/// model sizes it (`pathweave_sim::quic::max_udp_payload`).
pub(crate) fn wire_size(mss: u32, header: u32) -> u32 {
    pathweave_sim::quic::max_udp_payload(mss, header) + IP_UDP
}

/// A multipath QUIC flow.
pub(crate) struct Quic {
    algorithm: String,
    control: Control,
    traffic: Traffic,
    settings: Settings,
    identity: Mutex<Option<Identity>>,
    fingerprint: String,
    sender: Arc<SenderLive>,
    receiver: Arc<ReceiverLive>,
    /// Paths that open after the connection (`deferred`), and every path change.
    deferred: Vec<usize>,
    changes: Vec<PathChange>,
    /// The last reading of each path (kept once a path is gone), its counters summed over
    /// the path's openings.
    last: Vec<SubflowReading>,
    /// Per path: the quinn path that last carried it, and the counters of its earlier
    /// openings (a path that leaves and joins again is a new quinn path, counting from 0).
    current: Vec<Option<PathId>>,
    earlier: Vec<SubflowReading>,
}

impl Quic {
    /// The flow's QUIC endpoints: `n` paths, of which `deferred` open later, with path
    /// `changes`; the controller `control` (scenario name `algorithm`), full packets of `wire`
    /// bytes on the wire.
    pub(crate) fn new(
        algorithm: &str,
        control: &Control,
        traffic: Traffic,
        n: usize,
        (deferred, changes): (Vec<usize>, Vec<PathChange>),
        wire: u32,
    ) -> Result<Quic, String> {
        let identity = Identity::generate().map_err(|e| e.to_string())?;
        let settings = Settings {
            mtu: Some((wire - IP_UDP) as u16),
            max_paths: n.max(1) as u32,
            ..Settings::default()
        };
        Ok(Quic {
            algorithm: algorithm.to_string(),
            control: control.clone(),
            traffic,
            settings,
            fingerprint: identity.fingerprint(),
            identity: Mutex::new(Some(identity)),
            sender: Arc::new(SenderLive::default()),
            receiver: Arc::new(ReceiverLive::default()),
            deferred,
            changes,
            last: vec![SubflowReading::default(); n],
            current: vec![None; n],
            earlier: vec![SubflowReading::default(); n],
        })
    }

    /// Path `k`'s counters as quinn's path `id` has them now (`acked`, `sent`, `lost`,
    /// `persistent`, `congestion`), plus those of the path's earlier openings.
    fn counters_of(
        &mut self,
        k: usize,
        id: PathId,
        (acked, sent, lost, persistent, congestion): (u64, u64, u64, u64, u64),
    ) -> SubflowReading {
        if self.current[k].is_some_and(|c| c != id) {
            self.earlier[k] = self.last[k];
        }
        self.current[k] = Some(id);
        let e = self.earlier[k];
        SubflowReading {
            acked_bytes: e.acked_bytes + acked,
            packets_sent: e.packets_sent + sent,
            retransmits: e.retransmits + lost,
            timeouts: e.timeouts + persistent,
            loss_events: e.loss_events + congestion + persistent,
            ..self.last[k]
        }
    }

    fn wire(&self) -> u32 {
        u32::from(self.settings.mtu.unwrap_or(1200)) + IP_UDP
    }

    fn sync_delivered(&self, state: &FlowState) {
        state.delivered.store(
            self.receiver.delivered.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }
}

/// A path's cumulative counters for [`Quic::counters_of`]: acknowledged bytes, datagrams
/// sent, packets lost, persistent congestions and congestion events.
fn counted(s: &pathweave_quic::PathSnapshot, st: &PathStats) -> (u64, u64, u64, u64, u64) {
    (
        s.acked_bytes,
        st.udp_tx.datagrams,
        st.lost_packets,
        s.persistent_congestion,
        s.congestion_events,
    )
}

/// The first 64 bits of a SHA-256 (hex), for the transfer check's hash fields.
fn hash64(hex: &str) -> u64 {
    hex.get(..16)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}

fn v4(a: [u8; 4]) -> Ipv4Addr {
    Ipv4Addr::from(a)
}

impl Transport for Quic {
    fn needs(&self, _ends: &Ends) -> NamespaceNeeds {
        NamespaceNeeds {
            sysctls: namespace_sysctls(true),
            mtu: self.wire(),
            sender_route_options: String::new(),
            receiver_route_options: String::new(),
            sender_commands: Vec::new(),
            receiver_commands: Vec::new(),
        }
    }

    fn path_changes(&self) -> Vec<PathChange> {
        self.changes.clone()
    }

    fn change_path(&self, _lab: &Lab, _ends: &Ends, k: usize, join: bool) -> Result<(), EmuError> {
        self.sender.change_path(k, join);
        Ok(())
    }

    fn listen(&self, ends: &Ends) -> Result<Option<OwnedFd>, String> {
        let s = UdpSocket::bind(SocketAddr::new(IpAddr::V4(v4(ends.server)), QUIC_PORT))
            .map_err(|e| io_err("bind", e))?;
        Ok(Some(OwnedFd::from(s)))
    }

    fn start_receiver(
        &self,
        ends: &Ends,
        listener: OwnedFd,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        let identity = self.identity.lock().ok().and_then(|mut g| g.take());
        let settings = self.settings.clone();
        let live = Arc::clone(&self.receiver);
        spawn_receiver(ends, state, clock, stop, move |ends, state, clock, stop| {
            let identity = identity.ok_or("the receiver started twice")?;
            let opts = ReceiveOptions {
                listen: SocketAddr::new(IpAddr::V4(v4(ends.server)), QUIC_PORT),
                settings,
                transfers: None,
            };
            let receiver = Receiver::with_identity(UdpSocket::from(listener), opts, identity)
                .map_err(|e| e.to_string())?;
            receiver
                .run(&live, stop, |r| {
                    state
                        .delivered
                        .store(live.delivered.load(Ordering::Relaxed), Ordering::Relaxed);
                    state
                        .received_hash
                        .store(hash64(&r.sha256), Ordering::Relaxed);
                    match &r.error {
                        None => {
                            state.eof.store(true, Ordering::Relaxed);
                            state.completed_ns.store(clock.now_ns(), Ordering::Relaxed);
                        }
                        Some(e) => state.fail(format!("flow {}: receiver: {e}", ends.name)),
                    }
                })
                .map_err(|e| e.to_string())
        })
    }

    fn start_sender(
        &self,
        ends: &Ends,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        let amount = match self.traffic {
            Traffic::Transfer(n) => Amount::Bytes(n),
            // Until the flow's stop or the run's end (the stop flag ends the transfer).
            _ => match ends.stop_ns {
                Some(s) => Amount::Duration(std::time::Duration::from_nanos(
                    s.saturating_sub(ends.start_ns).max(1),
                )),
                None => Amount::Duration(std::time::Duration::from_secs(365 * 86_400)),
            },
        };
        let opts = SendOptions {
            to: SocketAddr::new(IpAddr::V4(v4(ends.server)), QUIC_PORT),
            from: ends.client.iter().map(|a| IpAddr::V4(v4(*a))).collect(),
            algorithm: self.algorithm.clone(),
            control: self.control.clone(),
            fingerprint: self.fingerprint.clone(),
            amount,
            settings: self.settings.clone(),
            connect_timeout: std::time::Duration::from_secs(10),
            seed: ends.seed,
            deferred: self.deferred.clone(),
        };
        let live = Arc::clone(&self.sender);
        spawn_sender(ends, state, clock, stop, move |_, state, _, stop| {
            match pathweave_quic::endpoint::send(&opts, &live, stop) {
                Ok(report) => {
                    state.sent.store(report.sent_bytes, Ordering::Relaxed);
                    state
                        .sent_hash
                        .store(hash64(&report.sent_sha256), Ordering::Relaxed);
                    Ok(())
                }
                // The run ended first: a bulk flow ends so.
                Err(QuicError::Stopped) => {
                    state
                        .sent
                        .store(live.written.load(Ordering::Relaxed), Ordering::Relaxed);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        })
    }

    fn has_subflows(&self) -> bool {
        true
    }

    fn read(&mut self, _ends: &Ends, state: &FlowState) -> Vec<(usize, SubflowReading)> {
        self.sync_delivered(state);
        let mut out = Vec::new();
        for p in self.sender.sample() {
            let (Some(s), k) = (p.snapshot, p.path.index) else {
                continue;
            };
            if !s.open || k >= self.last.len() {
                continue;
            }
            let counted = counted(&s, &p.stats.unwrap_or_default());
            let r = SubflowReading {
                cwnd_bytes: s.cwnd as f64,
                ssthresh_bytes: s.ssthresh.map_or(f64::NAN, |x| x as f64),
                srtt_s: s.srtt.unwrap_or(f64::NAN),
                metrics: Some(s.metrics),
                ..self.counters_of(k, p.path.id, counted)
            };
            self.last[k] = r;
            out.push((k, r));
        }
        out
    }

    fn finish(&mut self, state: &FlowState) {
        self.sync_delivered(state);
        for p in self.sender.sample() {
            let k = p.path.index;
            if let (Some(s), Some(st)) = (p.snapshot, p.stats) {
                // Only the path's latest opening: the earlier ones are in `earlier`.
                if k < self.last.len() && self.current[k].is_none_or(|c| c == p.path.id) {
                    self.last[k] = self.counters_of(k, p.path.id, counted(&s, &st));
                }
            }
        }
    }

    fn counters(&self, _state: &FlowState) -> FlowCounters {
        self.last
            .iter()
            .fold(FlowCounters::default(), |c, r| FlowCounters {
                packets_sent: c.packets_sent + r.packets_sent,
                retransmits: c.retransmits + r.retransmits,
                timeouts: c.timeouts + r.timeouts,
                loss_events: c.loss_events + r.loss_events,
            })
    }
}
