//! The congestion-control interface and the built-in single-path controllers.
//!
//! The transport owns what it measures (RTT, bytes in flight, loss detection and the recovery
//! state machine); the controller owns its window. With each event the transport lends a
//! read-only [`PathView`] of the path. Multipath controllers ([`multipath`]) receive the same
//! events with a path id and a view of every subflow.
//!
//! Call order per ACK that newly acknowledges data: [`Controller::on_ack`]; then, if that ACK
//! ends loss recovery, [`Controller::on_recovery_end`]. A loss detected by duplicate ACKs or
//! SACK gives [`Controller::on_congestion_event`] once per recovery episode; a timeout gives
//! [`Controller::on_rto`]. While the transport is in loss recovery it still reports ACKs
//! (with `in_recovery` set) so controllers that count acknowledged bytes can, but a
//! controller must not grow its window from them (RFC 5681 §3.2, RFC 6582).

pub mod aimd;
pub mod multipath;
pub mod reno;
pub mod veno;
pub mod westwood;

pub use aimd::{Aimd, AimdConfig, AimdShape};
pub use reno::{NewReno, RenoConfig};
pub use veno::{Veno, VenoConfig};
pub use westwood::{BandwidthEstimator, WestwoodConfig, WestwoodPlus};

use crate::units::{Bytes, Duration, Instant};

/// Identifies one path (subflow) of a connection; single-path transports use `PathId(0)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathId(pub u32);

/// Per-path facts the transport measures. `Copy`, so snapshots are cheap.
#[derive(Clone, Copy, Debug)]
pub struct PathView {
    /// Which path this is.
    pub id: PathId,
    /// Maximum segment size (payload bytes per full packet).
    pub mss: Bytes,
    /// Smoothed RTT; `None` until the first sample.
    pub srtt: Option<Duration>,
    /// Smallest RTT sample seen.
    pub min_rtt: Option<Duration>,
    /// Most recent RTT sample.
    pub latest_rtt: Option<Duration>,
    /// Payload bytes sent and not yet acknowledged (cumulatively or by SACK).
    pub in_flight: Bytes,
    /// Whether the path is established and may carry data (kernel: `mptcp_sk_can_send`).
    pub can_send: bool,
}

impl PathView {
    /// A view of a fresh path with the given segment size.
    pub fn new(id: PathId, mss: Bytes) -> Self {
        PathView {
            id,
            mss,
            srtt: None,
            min_rtt: None,
            latest_rtt: None,
            in_flight: Bytes::ZERO,
            can_send: true,
        }
    }
}

/// One acknowledgement that newly acknowledges data.
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// When the ACK arrived.
    pub now: Instant,
    /// Payload bytes newly acknowledged by this ACK (cumulatively or by SACK).
    pub bytes_acked: Bytes,
    /// The RTT sample this ACK gave, if any (Karn's rule already applied).
    pub rtt: Option<Duration>,
    /// Whether the transport is in loss recovery: the window must not grow.
    pub in_recovery: bool,
    /// Whether the window was in use when this ACK came, as Linux's `tcp_is_cwnd_limited`
    /// decides it (the last transmission found the flight at the window, or in slow start
    /// the window is below twice the largest flight of the current window): when false, the
    /// window must not grow. Every controller skips its increase, slow start and congestion
    /// avoidance alike, as each Linux `cong_avoid` returns at its start, and keeps what it
    /// measures on every ACK (RTT, delivered bytes). A transport that does not validate its
    /// window passes true.
    pub cwnd_limited: bool,
}

/// What signalled congestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Packet loss, detected by duplicate ACKs or SACK.
    Loss,
    /// An ECN congestion-experienced mark.
    Ecn,
}

/// The start of a loss-recovery episode (fast retransmit).
#[derive(Clone, Copy, Debug)]
pub struct CongestionEvent {
    /// When the loss was detected.
    pub now: Instant,
    /// What signalled it.
    pub cause: Cause,
}

/// A retransmission timeout.
#[derive(Clone, Copy, Debug)]
pub struct Rto {
    /// When the timer fired.
    pub now: Instant,
    /// Whether the segment had already been retransmitted by a timeout: RFC 5681 §3.1 then
    /// holds ssthresh constant.
    pub repeated: bool,
}

/// A snapshot of a controller's state for traces. New fields may appear.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Metrics {
    /// Congestion window.
    pub cwnd: Bytes,
    /// Slow-start threshold, `None` while it is still infinite.
    pub ssthresh: Option<Bytes>,
    /// A coupling factor where the algorithm has one: LIA's α (RFC 6356 §3, the same for every
    /// path of a connection), Balia's α_r = max_k x_k / x_r, the MPTCP-in-bytes α, MPTCPW's δ_r,
    /// wMPTCPW's θ.
    pub alpha: Option<f64>,
    /// OLIA's ε_r, the opportunistic share of the increase (sums to zero over the paths).
    pub epsilon: Option<f64>,
    /// A per-path weight: wVegas's rate share, EWTCP's increase weight a, RP-MP's rate share,
    /// MPVeno's rate share θ_r.
    pub weight: Option<f64>,
    /// A per-path score: BMC's T_wr = (R/D)·T_J, the subflow's throughput over the last
    /// proportion-manager period with its weight D and RTT R deducted (BMC §3.2, eq. 3.7).
    pub score: Option<f64>,
    /// Veno's backlog estimate N = w·(RTT − baseRTT)/RTT in packets (Veno, MPVeno's N_r).
    pub backlog: Option<f64>,
    /// Westwood+'s bandwidth estimate BWE in bits per second (Westwood+, MPTCPW, wMPTCPW).
    pub bandwidth_bps: Option<f64>,
}

impl Metrics {
    /// A snapshot with a window and a threshold and no algorithm-specific state.
    pub fn new(cwnd: Bytes, ssthresh: Option<Bytes>) -> Self {
        Metrics {
            cwnd,
            ssthresh,
            ..Metrics::default()
        }
    }
}

/// A single-path congestion controller.
pub trait Controller {
    /// An ACK newly acknowledged data.
    fn on_ack(&mut self, ack: &Ack, path: &PathView);
    /// [`Controller::on_ack`], then the window it leaves: one call where the controller sits
    /// behind an enum.
    fn on_ack_window(&mut self, ack: &Ack, path: &PathView) -> Bytes {
        self.on_ack(ack, path);
        self.window()
    }
    /// Loss recovery starts: set ssthresh and the window.
    fn on_congestion_event(&mut self, ev: &CongestionEvent, path: &PathView);
    /// Loss recovery ended with a full ACK (Linux `CA_EVENT_COMPLETE_CWR`).
    fn on_recovery_end(&mut self, _now: Instant, _path: &PathView) {}
    /// The retransmission timer fired.
    fn on_rto(&mut self, rto: &Rto, path: &PathView);
    /// Bytes the transport may have in flight.
    fn window(&self) -> Bytes;
    /// The slow-start threshold, `None` while infinite.
    fn ssthresh(&self) -> Option<Bytes>;
    /// A snapshot for traces.
    fn metrics(&self) -> Metrics {
        Metrics::new(self.window(), self.ssthresh())
    }
}

/// The built-in single-path controllers, dispatched statically.
#[derive(Clone, Debug)]
pub enum AnyController {
    /// TCP NewReno (RFC 5681 growth, RFC 6582 recovery is the transport's).
    NewReno(NewReno),
    /// Weighted AIMD(a, b); AIMD(D², ½) for a weight D (BMC §3.1).
    Aimd(Aimd),
    /// TCP Veno (Fu & Liew 2003; Linux `tcp_veno.c`).
    Veno(Veno),
    /// TCP Westwood+ (Grieco & Mascolo 2004; Linux `tcp_westwood.c`).
    WestwoodPlus(WestwoodPlus),
}

impl Controller for AnyController {
    fn on_ack(&mut self, ack: &Ack, path: &PathView) {
        match self {
            AnyController::NewReno(c) => c.on_ack(ack, path),
            AnyController::Aimd(c) => c.on_ack(ack, path),
            AnyController::Veno(c) => c.on_ack(ack, path),
            AnyController::WestwoodPlus(c) => c.on_ack(ack, path),
        }
    }
    fn on_ack_window(&mut self, ack: &Ack, path: &PathView) -> Bytes {
        match self {
            AnyController::NewReno(c) => c.on_ack_window(ack, path),
            AnyController::Aimd(c) => c.on_ack_window(ack, path),
            AnyController::Veno(c) => c.on_ack_window(ack, path),
            AnyController::WestwoodPlus(c) => c.on_ack_window(ack, path),
        }
    }
    fn on_congestion_event(&mut self, ev: &CongestionEvent, path: &PathView) {
        match self {
            AnyController::NewReno(c) => c.on_congestion_event(ev, path),
            AnyController::Aimd(c) => c.on_congestion_event(ev, path),
            AnyController::Veno(c) => c.on_congestion_event(ev, path),
            AnyController::WestwoodPlus(c) => c.on_congestion_event(ev, path),
        }
    }
    fn on_recovery_end(&mut self, now: Instant, path: &PathView) {
        match self {
            AnyController::NewReno(c) => c.on_recovery_end(now, path),
            AnyController::Aimd(c) => c.on_recovery_end(now, path),
            AnyController::Veno(c) => c.on_recovery_end(now, path),
            AnyController::WestwoodPlus(c) => c.on_recovery_end(now, path),
        }
    }
    fn on_rto(&mut self, rto: &Rto, path: &PathView) {
        match self {
            AnyController::NewReno(c) => c.on_rto(rto, path),
            AnyController::Aimd(c) => c.on_rto(rto, path),
            AnyController::Veno(c) => c.on_rto(rto, path),
            AnyController::WestwoodPlus(c) => c.on_rto(rto, path),
        }
    }
    fn window(&self) -> Bytes {
        match self {
            AnyController::NewReno(c) => c.window(),
            AnyController::Aimd(c) => c.window(),
            AnyController::Veno(c) => c.window(),
            AnyController::WestwoodPlus(c) => c.window(),
        }
    }
    fn ssthresh(&self) -> Option<Bytes> {
        match self {
            AnyController::NewReno(c) => c.ssthresh(),
            AnyController::Aimd(c) => c.ssthresh(),
            AnyController::Veno(c) => c.ssthresh(),
            AnyController::WestwoodPlus(c) => c.ssthresh(),
        }
    }
    fn metrics(&self) -> Metrics {
        match self {
            AnyController::NewReno(c) => c.metrics(),
            AnyController::Aimd(c) => c.metrics(),
            AnyController::Veno(c) => c.metrics(),
            AnyController::WestwoodPlus(c) => c.metrics(),
        }
    }
}
