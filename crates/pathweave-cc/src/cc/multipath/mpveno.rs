//! MPVeno, multipath TCP Veno (T.-A. Le, "Improving the performance of multipath congestion
//! control over wireless networks", Le, 2013 §III.B,
//! Algorithm 2; `reference/ALGORITHMS.md` §7). Per path r, with windows in packets:
//!
//! * backlog `N_r = (w_r/baseRTT_r − w_r/RTT_r)·baseRTT_r` ([`backlog`]), with `baseRTT_r` the
//!   smallest RTT sample ever and `RTT_r` the smallest of the last round, as Veno
//!   ([`Veno`](crate::cc::Veno));
//! * rate share `θ_r = x_r/Σ_i x_i`, `x = w/srtt` ([`rate_share`]); threshold
//!   `max(1, θ_r·β)` ([`threshold`]);
//! * congestion avoidance, per acknowledged packet: if `N_r < max(1, θ_r·β)`,
//!   `w_r += a_r/w_r + α_r/w_r`, OLIA's two terms ([`olia::increase_per_ack`] with
//!   [`olia::epsilon`]: `a_r/w_r = (w_r/rtt_r²)/(Σ_p w_p/rtt_p)²`, α_r = OLIA's ε_r); otherwise
//!   the same increase "whenever receiving two new ACKs". As Linux Veno (the single-path base)
//!   alternates per window, the increase applies in every other window of acknowledged bytes,
//!   i.e. at half the rate on average ([`increase_per_ack`] gives that average);
//! * loss: `w_r −= w_r/5` if `N_r < max(1, θ_r·β)`, else `w_r −= w_r/2` ([`loss_decrease`]);
//!   `ssthresh = max(that, 2·MSS)`, `cwnd = ssthresh`, decided by the `N_r` and `θ_r` of the
//!   last ACK outside recovery (before Veno has three RTT samples `N_r` counts as 0).
//!
//! The paper gives no slow start or timeout rule; they are the bases' (OLIA's, i.e. NewReno's,
//! which Veno keeps too): uncoupled slow start `+min(bytes_acked, L·MSS)`, timeout
//! `ssthresh = max(½·cwnd, 2·MSS)` (held on a repeated timeout) and `cwnd = 1·MSS`. OLIA's sets
//! and ℓ_r (bytes acknowledged between losses) are kept as in `olia.rs` (`spec` arithmetic,
//! effective windows in the sums). With one usable path θ = 1 and ε = 0, and the controller is
//! exactly [`Veno`](crate::cc::Veno) with threshold `max(1, β)` (OLIA with one path is
//! NewReno). β defaults to 3 packets as in Veno (ALGORITHMS.md §7; the paper's experiments use
//! β from 1 to 6).
//!
//! Invariants: `cwnd ≥ 1·MSS`; `ssthresh ≥ 2·MSS` once set; no growth while in recovery; the
//! rate shares of the usable paths sum to one.

use crate::cc::multipath::config::{Algorithm, ConfigError, Counting, WindowConfig};
use crate::cc::multipath::olia::{self, LossMarkers, OliaSample};
use crate::cc::multipath::subflow::{ensure_slot, is_coupled, rtt_secs, usable, Subflow};
use crate::cc::multipath::{MultipathController, PathSample, Paths};
use crate::cc::veno::{check_positive, VenoState, DEFAULT_BETA, MAX_BETA};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

pub use crate::cc::veno::backlog;

/// θ_r = x_r / Σ_i x_i with x = window/rtt (Le, §III.B); 1 when the rates do not sum to a
/// positive number (a lone or unmeasured path).
pub fn rate_share(paths: &[PathSample], r: usize) -> f64 {
    let rate = |s: &PathSample| {
        if s.rtt > 0.0 && s.window > 0.0 {
            s.window / s.rtt
        } else {
            0.0
        }
    };
    let total: f64 = paths.iter().map(rate).sum();
    match paths.get(r) {
        Some(s) if total > 0.0 && total.is_finite() => rate(s) / total,
        _ => 1.0,
    }
}

/// The backlog threshold of Algorithm 2: `max(1, θ_r·β)` packets ("guarantees that the
/// backlog threshold always is at least one packet").
pub fn threshold(theta: f64, beta: f64) -> f64 {
    (theta * beta).max(1.0)
}

/// Whether Algorithm 2 takes its congestive branch: `N_r ≥ max(1, θ_r·β)`.
pub fn is_congestive(backlog: f64, threshold: f64) -> bool {
    backlog >= threshold
}

/// MPVeno's average increase per acknowledged packet on path `r`: OLIA's
/// `a_r/w_r + α_r/w_r` (with `eps` = α_r), halved in the congestive state (Algorithm 2,
/// "whenever receiving two new ACKs").
pub fn increase_per_ack(paths: &[OliaSample], r: usize, eps: f64, congestive: bool) -> f64 {
    let inc = olia::increase_per_ack(paths, r, eps);
    if congestive {
        inc / 2.0
    } else {
        inc
    }
}

/// Algorithm 2's decrease: `w/5` ("random error") or `w/2` ("network congestion").
pub fn loss_decrease(window: f64, congestive: bool) -> f64 {
    if congestive {
        window / 2.0
    } else {
        window / 5.0
    }
}

/// MPVeno's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MpVenoConfig {
    window: WindowConfig,
    counting: Counting,
    beta: f64,
}

impl Default for MpVenoConfig {
    /// β = 3 packets, counting per packet, the default slow start.
    fn default() -> Self {
        MpVenoConfig {
            window: WindowConfig::default(),
            counting: Counting::PerPacket,
            beta: DEFAULT_BETA,
        }
    }
}

impl MpVenoConfig {
    /// β = 3 packets, counting per packet, the default slow start.
    pub fn new() -> Self {
        MpVenoConfig::default()
    }
    /// The shared slow start and initial window.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// Per-packet (default) or per-ACK-event counting of the coupled increase.
    pub fn counting(mut self, c: Counting) -> Self {
        self.counting = c;
        self
    }
    /// Veno's backlog threshold β in packets (above 0, at most 10^6; default 3).
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }
    /// β in force.
    pub fn beta_value(&self) -> f64 {
        self.beta
    }
    /// The counting in force.
    pub fn counting_mode(&self) -> Counting {
        self.counting
    }
    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.window.validate()?;
        check_positive(
            Algorithm::MpVeno.name(),
            "beta",
            self.beta,
            MAX_BETA,
            "above 0 and at most 10^6 packets",
        )
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<MpVeno, ConfigError> {
        self.validate()?;
        Ok(MpVeno {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
            rates: Vec::new(),
        })
    }
}

/// One path's MPVeno state: the window, Veno's estimate and OLIA's inter-loss markers.
#[derive(Clone, Debug)]
struct MpVenoPath {
    sf: Subflow,
    veno: VenoState,
    acked: u64,
    markers: LossMarkers,
    /// Whether the last congestion-avoidance ACK used the coupled rule.
    coupled: bool,
    theta: Option<f64>,
    epsilon: Option<f64>,
}

/// MPVeno over all paths of one connection.
#[derive(Clone, Debug)]
pub struct MpVeno {
    cfg: MpVenoConfig,
    paths: Vec<Option<MpVenoPath>>,
    samples: Vec<OliaSample>,
    rates: Vec<PathSample>,
}

impl MpVeno {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &MpVenoConfig {
        &self.cfg
    }

    fn slot(&mut self, p: PathId) -> Option<&mut MpVenoPath> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    /// Fills the samples of the usable paths; returns the position of `p` among them.
    fn collect(&mut self, p: PathId, paths: &Paths<'_>) -> Option<usize> {
        self.samples.clear();
        self.rates.clear();
        let mut me = None;
        for (i, slot) in self.paths.iter().enumerate() {
            let (Some(st), Some(v)) = (slot.as_ref(), paths.0.get(i)) else {
                continue;
            };
            if !usable(v) {
                continue;
            }
            if i == p.0 as usize {
                me = Some(self.samples.len());
            }
            // Sums over effective windows (ssthresh in recovery), as OLIA's.
            let window = st.sf.effective_window() as f64;
            let rtt = rtt_secs(v);
            self.samples.push(OliaSample {
                window,
                rtt,
                loss_interval: st.markers.interval() as f64,
            });
            self.rates.push(PathSample { window, rtt });
        }
        me
    }

    /// θ_r, ε_r and OLIA's full increase per packet for path `p` (in 1/bytes), or the
    /// one-path values (θ = 1, no ε) when `p` is not coupled.
    fn coupling(&mut self, p: PathId, coupled: bool, paths: &Paths<'_>) -> (f64, Option<f64>, f64) {
        if !coupled {
            return (1.0, None, 0.0);
        }
        let Some(r) = self.collect(p, paths) else {
            return (1.0, None, 0.0);
        };
        let theta = rate_share(&self.rates, r);
        // OLIA's ε_r with n = the number of usable paths, and a_r/w_r + ε_r/w_r.
        let eps = olia::epsilon(&self.samples, r, self.samples.len());
        let inc = olia::increase_per_ack(&self.samples, r, eps);
        (theta, Some(eps), inc)
    }

    /// Puts path `p` in a vector's state: window, threshold, ℓ, baseRTT and last-round RTT.
    #[cfg(test)]
    pub(crate) fn force(
        &mut self,
        p: usize,
        cwnd: u64,
        loss_interval: u64,
        base: crate::units::Duration,
        rtt: crate::units::Duration,
    ) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, cwnd);
            st.markers = LossMarkers::with_interval(loss_interval);
            st.acked = loss_interval;
            st.veno.rtts.force(base, rtt);
        }
    }

    /// Path `p`'s window state (tests read the credit).
    #[cfg(test)]
    pub(crate) fn subflow(&self, p: usize) -> Option<&Subflow> {
        Some(&self.paths.get(p)?.as_ref()?.sf)
    }
}

impl MultipathController for MpVeno {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = Some(MpVenoPath {
            sf: Subflow::new(mss, &self.cfg.window),
            veno: VenoState::default(),
            acked: 0,
            markers: LossMarkers::default(),
            coupled: false,
            theta: None,
            epsilon: None,
        });
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(slot) = self.paths.get_mut(p.0 as usize) {
            *slot = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let in_flight = paths.get(p).map_or(Bytes::ZERO, |v| v.in_flight);
        let (beta, abc) = (self.cfg.beta, self.cfg.window.abc_segments());
        let per_event = self.cfg.counting == Counting::PerAckEvent;
        let bytes = ack.bytes_acked.0;
        let Some(st) = self.slot(p) else {
            return;
        };
        st.acked = st.acked.saturating_add(bytes);
        st.markers.advance_to(st.acked); // OLIA (spec): ℓ counts every acknowledged byte since the loss
        st.veno.observe(ack, in_flight); // RTT samples in recovery too (tcp_veno_pkts_acked)
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let (theta, eps, inc) = self.coupling(p, coupled, paths);
        let Some(st) = self.slot(p) else {
            return;
        };
        st.theta = Some(theta);
        if eps.is_some() {
            st.epsilon = eps;
        }
        // Algorithm 2: n_backlog_r compared with max(1, θ_r·β).
        let active = st
            .veno
            .assess(st.sf.cwnd, st.sf.mss, threshold(theta, beta));
        if st.sf.in_slow_start() {
            st.sf.slow_start(bytes, abc); // slow start of the bases, uncoupled
            return;
        }
        if st.coupled != coupled {
            st.coupled = coupled;
            st.veno.restart_count();
        }
        st.sf.use_rule(coupled);
        let mss = st.sf.mss;
        if !coupled {
            // One usable path: θ = 1, ε = 0, OLIA is Reno, so MPVeno is Veno.
            st.veno.avoid(&mut st.sf.cwnd, mss, bytes, active);
            return;
        }
        if bytes == 0 {
            return;
        }
        // Algorithm 2, congestive branch: "whenever receiving two new ACKs", here every other
        // window of acknowledged bytes, as Linux Veno's alternate rounds.
        let on = !(active && st.veno.congestive()) || st.veno.gate(st.sf.cwnd, bytes);
        if on {
            let counted = st.sf.counted_bytes(bytes, per_event) as f64;
            // w_r += a_r/w_r + α_r/w_r per packet (in 1/bytes here, times MSS per packet).
            st.sf.grow(inc * mss as f64 * counted, mss);
        }
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, _paths: &Paths<'_>) {
        let Some(st) = self.slot(p) else {
            return;
        };
        // Algorithm 2, Decrease: w_r − w_r/5 (random error) or w_r − w_r/2 (congestion).
        let ss = st.veno.loss_ssthresh(st.sf.cwnd, st.sf.mss);
        if !st.sf.in_recovery {
            st.markers.shift(); // OLIA: set_state(Recovery)
        }
        st.sf.enter_recovery(ss);
        st.veno.restart_count();
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(st) = self.slot(p) {
            st.sf.in_recovery = false;
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, _paths: &Paths<'_>) {
        let Some(st) = self.slot(p) else {
            return;
        };
        // The paper is silent on timeouts: the bases' (OLIA's and Veno's NewReno) rule.
        let ss = (!rto.repeated).then(|| st.sf.reno_ssthresh());
        if !rto.repeated && !st.sf.in_recovery {
            st.markers.shift(); // OLIA: set_state(Loss), first timeout only
        }
        st.sf.timeout(ss);
        st.veno.restart_count();
    }

    fn window(&self, p: PathId) -> Bytes {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or(Bytes::ZERO, |st| Bytes(st.sf.cwnd))
    }

    fn metrics(&self, p: PathId) -> Metrics {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, |st| Metrics {
                backlog: st.veno.backlog(),
                weight: st.theta,
                epsilon: st.epsilon,
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
