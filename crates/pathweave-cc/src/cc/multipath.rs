//! The multipath controller interface: the same events as [`Controller`], each naming the
//! path it concerns and lending a read-only view of every path of the connection — the Rust
//! counterpart of the kernel's `mptcp_for_each_sk` walk, with no back-pointers. A coupled
//! algorithm sees every subflow's events, so it holds every sibling's window itself.
//!
//! [`Uncoupled`] lifts any single-path controller to one independent instance per path. The
//! coupled algorithms live one per file below this module; [`AnyMultipathController`] names
//! them all and [`MultipathConfig`] builds one from a scenario's algorithm name.
//!
//! Event order the controllers expect, per path: `on_path_added` first; then, for each ACK
//! that newly acknowledges data, `on_ack` (with `in_recovery` set while the transport is in
//! loss recovery) and, if that ACK ends recovery, `on_recovery_end`; `on_congestion_event`
//! once when a recovery episode starts; `on_rto` when the timer fires; `on_path_removed` last.
//! Every call passes the views of all paths, indexed by [`PathId`].

pub mod any;
pub mod balia;
pub mod bmc;
pub mod config;
pub mod coupled;
pub mod kelly_voice;
pub mod lia;
pub mod mptcpw;
pub mod mpveno;
pub mod olia;
#[cfg(test)]
mod properties;
pub mod rpmp;
pub(crate) mod subflow;
#[cfg(test)]
mod test_support;
pub mod wvegas;

pub use any::{AnyMultipathController, MultipathConfig};
pub use balia::{Balia, BaliaConfig};
pub use bmc::{Bmc, BmcConfig, InitialWeights, PerPath, Period, WeightMove};
pub use config::{Algorithm, Arithmetic, ConfigError, Counting, WindowConfig};
pub use coupled::{Ewtcp, EwtcpConfig, FullyCoupled, FullyCoupledConfig};
pub use kelly_voice::{KellyVoice, KellyVoiceConfig};
pub use lia::{Lia, LiaConfig};
pub use mptcpw::{Mptcpw, MptcpwConfig, MptcpwVariant};
pub use mpveno::{MpVeno, MpVenoConfig};
pub use olia::{Olia, OliaConfig};
pub use rpmp::{MptcpBytes, MptcpBytesConfig, RpMpConfig, RpMpDecrease, RpMpV2, SlowStart};
pub use wvegas::{WVegas, WVegasConfig};

use crate::cc::{Ack, CongestionEvent, Controller, Metrics, PathId, PathView, Rto};
use crate::units::{Bytes, Instant};

/// One path as the real-valued coupling formulas read it. The formulas are homogeneous in the
/// window unit, so `window` may be in packets (as the test vectors are) or bytes (as the
/// controllers pass it); `rtt` is the smoothed RTT in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathSample {
    /// Congestion window (packets or bytes, the same unit for every path).
    pub window: f64,
    /// Smoothed round-trip time in seconds, above zero.
    pub rtt: f64,
}

/// One path as the Linux kernel's integer code reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSample {
    /// `snd_cwnd`: the window in packets.
    pub cwnd: u64,
    /// `srtt_us`: eight times the smoothed RTT in microseconds (Linux ≥ 3.15).
    pub srtt_us: u64,
}

/// Views of every path of one connection, indexed by [`PathId`].
#[derive(Clone, Copy, Debug)]
pub struct Paths<'a>(pub &'a [PathView]);

impl<'a> Paths<'a> {
    /// The view of path `p`.
    pub fn get(&self, p: PathId) -> Option<&'a PathView> {
        self.0.get(p.0 as usize)
    }
    /// The paths that may carry data and have an RTT estimate: the ones coupled sums use.
    pub fn usable(&self) -> impl Iterator<Item = &'a PathView> + 'a {
        self.0.iter().filter(|v| v.can_send && v.srtt.is_some())
    }
}

/// A congestion controller for all paths of one connection.
pub trait MultipathController {
    /// A path joined the connection.
    fn on_path_added(&mut self, p: PathId, now: Instant, mss: Bytes);
    /// A path left the connection.
    fn on_path_removed(&mut self, p: PathId);
    /// An ACK on path `p` newly acknowledged data.
    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>);
    /// [`MultipathController::on_ack`], then the window it leaves path `p` (other paths'
    /// windows may have moved too): one call where the controller sits behind an enum.
    fn on_ack_window(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) -> Bytes {
        self.on_ack(p, ack, paths);
        self.window(p)
    }
    /// Loss recovery starts on path `p`.
    fn on_congestion_event(&mut self, p: PathId, ev: &CongestionEvent, paths: &Paths<'_>);
    /// Loss recovery on path `p` ended with a full ACK.
    fn on_recovery_end(&mut self, _p: PathId, _now: Instant, _paths: &Paths<'_>) {}
    /// The retransmission timer of path `p` fired.
    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>);
    /// Bytes path `p` may have in flight.
    fn window(&self, p: PathId) -> Bytes;
    /// A snapshot of path `p` for traces.
    fn metrics(&self, p: PathId) -> Metrics;
    /// The slow-start threshold of path `p`, `None` while infinite (or for an unknown path).
    fn ssthresh(&self, p: PathId) -> Option<Bytes> {
        self.metrics(p).ssthresh
    }
    /// Whether path `p` is in slow start (`cwnd < ssthresh`).
    fn in_slow_start(&self, p: PathId) -> bool {
        self.ssthresh(p).is_none_or(|s| self.window(p) < s)
    }
}

/// Independent copies of one single-path controller, one per path.
#[derive(Clone, Debug)]
pub struct Uncoupled<C> {
    prototype: C,
    paths: Vec<Option<C>>,
}

impl<C: Controller + Clone> Uncoupled<C> {
    /// Each new path starts as a copy of `prototype`.
    pub fn new(prototype: C) -> Self {
        Uncoupled {
            prototype,
            paths: Vec::new(),
        }
    }

    fn path(&mut self, p: PathId) -> Option<&mut C> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    /// Where the first path's controller lives (it is held apart from `self`), for a host
    /// that wants to hint its cache before reading the controller's metrics. Only an address:
    /// nothing is read through it here.
    pub fn paths_addr(&self) -> *const u8 {
        self.paths.as_ptr().cast()
    }
}

fn view(paths: &Paths<'_>, p: PathId) -> PathView {
    // A transport always passes its own path; a missing one is a caller bug that we tolerate
    // by handing the controller an empty view rather than panicking mid-simulation.
    paths
        .get(p)
        .copied()
        .unwrap_or_else(|| PathView::new(p, Bytes(1)))
}

impl<C: Controller + Clone> MultipathController for Uncoupled<C> {
    fn on_path_added(&mut self, p: PathId, _now: Instant, _mss: Bytes) {
        let i = p.0 as usize;
        if self.paths.len() <= i {
            self.paths.resize(i + 1, None);
        }
        self.paths[i] = Some(self.prototype.clone());
    }
    fn on_path_removed(&mut self, p: PathId) {
        if let Some(slot) = self.paths.get_mut(p.0 as usize) {
            *slot = None;
        }
    }
    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let v = view(paths, p);
        if let Some(c) = self.path(p) {
            c.on_ack(ack, &v);
        }
    }
    fn on_ack_window(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) -> Bytes {
        let v = view(paths, p);
        match self.path(p) {
            Some(c) => c.on_ack_window(ack, &v),
            None => Bytes::ZERO,
        }
    }
    fn on_congestion_event(&mut self, p: PathId, ev: &CongestionEvent, paths: &Paths<'_>) {
        let v = view(paths, p);
        if let Some(c) = self.path(p) {
            c.on_congestion_event(ev, &v);
        }
    }
    fn on_recovery_end(&mut self, p: PathId, now: Instant, paths: &Paths<'_>) {
        let v = view(paths, p);
        if let Some(c) = self.path(p) {
            c.on_recovery_end(now, &v);
        }
    }
    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let v = view(paths, p);
        if let Some(c) = self.path(p) {
            c.on_rto(rto, &v);
        }
    }
    fn window(&self, p: PathId) -> Bytes {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or(Bytes::ZERO, C::window)
    }
    fn metrics(&self, p: PathId) -> Metrics {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, C::metrics)
    }
    fn ssthresh(&self, p: PathId) -> Option<Bytes> {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .and_then(C::ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{Cause, NewReno, RenoConfig};
    use crate::units::Duration;

    #[test]
    fn uncoupled_paths_evolve_independently() {
        let mss = Bytes(1000);
        let mut mp = Uncoupled::new(NewReno::new(RenoConfig::new(mss, 2)));
        mp.on_path_added(PathId(0), Instant::ZERO, mss);
        mp.on_path_added(PathId(1), Instant::ZERO, mss);
        let mut views = [PathView::new(PathId(0), mss), PathView::new(PathId(1), mss)];
        for v in &mut views {
            v.srtt = Some(Duration::from_millis(10));
        }
        let paths = Paths(&views);
        let ack = Ack {
            now: Instant::ZERO,
            bytes_acked: mss,
            rtt: None,
            in_recovery: false,
            cwnd_limited: true,
        };
        mp.on_ack(PathId(0), &ack, &paths);
        assert_eq!(mp.window(PathId(0)), Bytes(3000));
        assert_eq!(mp.window(PathId(1)), Bytes(2000));
        let ev = CongestionEvent {
            now: Instant::ZERO,
            cause: Cause::Loss,
        };
        mp.on_congestion_event(PathId(1), &ev, &paths);
        assert_eq!(mp.window(PathId(1)), Bytes(2000)); // floor of 2 segments
        assert_eq!(mp.window(PathId(0)), Bytes(3000));
        mp.on_path_removed(PathId(0));
        assert_eq!(mp.window(PathId(0)), Bytes::ZERO);
        assert_eq!(paths.usable().count(), 2);
    }
}
