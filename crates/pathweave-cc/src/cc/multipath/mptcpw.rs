//! Multipath TCP Westwood: MPTCPW (Le, Hong, Huh, "Coordinated TCP Westwood congestion control for
//! multiple paths over wireless networks", ICOIN 2012) and wMPTCPW (Nuha, Hendrawan, Yulianto, EMS
//! 2010), as restated in Le, "Improving the Performance of Multipath Congestion Control over
//! Wireless Networks", 2013 §II.C (`reference/ALGORITHMS.md` §8). Per path r, windows in packets,
//! `x_i = w_i/RTT_i`, `B_r` the path's Westwood+ bandwidth estimate and `RTT_min,r` its smallest
//! RTT:
//!
//! * **MPTCPW** increase per ACK: `w_r += min(δ_r/w_r, 1/w_r)` with
//!   `δ_r = w_r^γ·max_s{w_s^(2−γ)/RTT_s²}/(Σ_i x_i)²` ([`delta`], [`mptcpw_increase_per_ack`]);
//!   γ ∈ [0, 2] trades flappiness for congestion balance, MPTCPW uses γ = 1 (then the
//!   increase is LIA's, `min(max_s(w_s/RTT_s²)/X², 1/w_r)`).
//! * **wMPTCPW** increase per ACK: `w_r += θ/w_r` with `θ = max_s(B_s²)/(Σ_i B_i)²`
//!   ([`wmptcpw_theta`]), one θ for the whole connection. Before any path has an estimate
//!   (`Σ B = 0`) θ is `1/n²`, the value equal estimates give (the paper is silent). A path
//!   without an estimate while others have one counts as `B = 0`, as the formula has it: with
//!   one path estimated θ is 1 (each subflow grows as NewReno) until the others report, within
//!   their first `max(RTT, 50 ms)` of ACKs.
//! * **Decrease**, both: `w_r ← B_r × RTT_min,r`.
//!
//! The paper gives the decrease's value but not when it applies or what ssthresh becomes; this
//! follows the Westwood+ base ([`WestwoodPlus`](crate::cc::WestwoodPlus), Linux
//! `tcp_westwood.c`): NewReno halving while recovery lasts, then at its end
//! `cwnd = ssthresh = max(⌊B_r·RTT_min,r/MSS⌋, 2)` segments; on a timeout
//! `ssthresh = max(⌊B_r·RTT_min,r/MSS⌋, 2)` segments, `cwnd = 1·MSS`, `RTT_min,r` reset. Slow
//! start is NewReno's, uncoupled. B_r and RTT_min,r are estimated per path exactly as
//! Westwood+ does ([`BandwidthEstimator`]: samples over `max(RTT, 50 ms)`, two 7/8 filters).
//! The coupled sums run over the usable paths with their effective windows (ssthresh in
//! recovery) and smoothed RTTs. With one usable path δ = θ = 1 and the controller is
//! Westwood+ exactly.
//!
//! Invariants: `cwnd ≥ 1·MSS`; `ssthresh ≥ 2·MSS` once set; no growth while in recovery; the
//! per-ACK increase never exceeds NewReno's (MPTCPW's `min(·, 1/w_r)`; θ ≤ 1 for wMPTCPW).

use crate::cc::multipath::config::{check_range, Algorithm, ConfigError, Counting, WindowConfig};
use crate::cc::multipath::subflow::{ensure_slot, is_coupled, sample, usable, Subflow};
use crate::cc::multipath::{MultipathController, PathSample, Paths};
use crate::cc::westwood::{BandwidthEstimator, WestwoodState};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

/// MPTCPW's δ_r for path `r`: `w_r^γ·max_s{w_s^(2−γ)/RTT_s²}/(Σ_i w_i/RTT_i)²` (Le, Hong,
/// Huh 2012, as restated in Le, §II.C). Homogeneous of degree 0 in the window unit; 0 for a
/// missing path or empty sums.
pub fn delta(paths: &[PathSample], r: usize, gamma: f64) -> f64 {
    let ok = |s: &&PathSample| s.window > 0.0 && s.rtt > 0.0;
    let Some(me) = paths.get(r).filter(ok) else {
        return 0.0;
    };
    let best = paths
        .iter()
        .filter(ok)
        .map(|s| s.window.powf(2.0 - gamma) / (s.rtt * s.rtt))
        .fold(0.0, f64::max);
    let rate_sum: f64 = paths.iter().filter(ok).map(|s| s.window / s.rtt).sum();
    let d = me.window.powf(gamma) * best / (rate_sum * rate_sum);
    if d.is_finite() {
        d
    } else {
        0.0
    }
}

/// MPTCPW's increase per acknowledged packet on path `r`: `min(δ_r/w_r, 1/w_r)`, in packets
/// when windows are in packets.
pub fn mptcpw_increase_per_ack(paths: &[PathSample], r: usize, gamma: f64) -> f64 {
    match paths.get(r) {
        Some(s) if s.window > 0.0 => delta(paths, r, gamma).min(1.0) / s.window,
        _ => 0.0,
    }
}

/// wMPTCPW's θ = `max_s(B_s²)/(Σ_i B_i)²` over the given bandwidth estimates (any one unit);
/// `1/n²` when they sum to zero, 1 for an empty list.
pub fn wmptcpw_theta(bandwidths: &[f64]) -> f64 {
    let valid = |b: &&f64| b.is_finite() && **b > 0.0;
    let total: f64 = bandwidths.iter().filter(valid).sum();
    let max = bandwidths.iter().filter(valid).copied().fold(0.0, f64::max);
    if total > 0.0 && total.is_finite() {
        (max / total).powi(2)
    } else if bandwidths.is_empty() {
        1.0
    } else {
        1.0 / (bandwidths.len() as f64).powi(2)
    }
}

/// Which of the two multipath Westwood designs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MptcpwVariant {
    /// MPTCPW (Le et al. 2012): `min(δ_r/w_r, 1/w_r)` with trade-off γ.
    #[default]
    Mptcpw,
    /// wMPTCPW (Nuha et al. 2010): `θ/w_r`, θ = max B²/(ΣB)².
    Weighted,
}

/// The parameters of MPTCPW and wMPTCPW.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MptcpwConfig {
    window: WindowConfig,
    counting: Counting,
    variant: MptcpwVariant,
    gamma: f64,
}

impl Default for MptcpwConfig {
    /// MPTCPW with γ = 1, counting per packet, the default slow start.
    fn default() -> Self {
        MptcpwConfig {
            window: WindowConfig::default(),
            counting: Counting::PerPacket,
            variant: MptcpwVariant::Mptcpw,
            gamma: 1.0,
        }
    }
}

impl MptcpwConfig {
    /// MPTCPW with γ = 1.
    pub fn new() -> Self {
        MptcpwConfig::default()
    }
    /// wMPTCPW.
    pub fn weighted() -> Self {
        MptcpwConfig::default().variant(MptcpwVariant::Weighted)
    }
    /// The design: MPTCPW or wMPTCPW.
    pub fn variant(mut self, v: MptcpwVariant) -> Self {
        self.variant = v;
        self
    }
    /// MPTCPW's trade-off γ, 0 to 2 (default 1); wMPTCPW has no γ and ignores it.
    pub fn gamma(mut self, gamma: f64) -> Self {
        self.gamma = gamma;
        self
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
    /// γ in force.
    pub fn gamma_value(&self) -> f64 {
        self.gamma
    }
    /// The design in force.
    pub fn variant_kind(&self) -> MptcpwVariant {
        self.variant
    }
    /// The counting in force.
    pub fn counting_mode(&self) -> Counting {
        self.counting
    }
    /// `mptcpw` or `wmptcpw`.
    pub fn algorithm(&self) -> Algorithm {
        match self.variant {
            MptcpwVariant::Mptcpw => Algorithm::Mptcpw,
            MptcpwVariant::Weighted => Algorithm::WMptcpw,
        }
    }
    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.window.validate()?;
        // Le, §II.C: "γ ∈ [0, 2]".
        check_range(
            self.algorithm().name(),
            "gamma",
            self.gamma,
            0.0,
            2.0,
            "0 to 2",
        )
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<Mptcpw, ConfigError> {
        self.validate()?;
        Ok(Mptcpw {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
            rates: Vec::new(),
        })
    }
}

/// One path: the window and its Westwood+ estimate.
#[derive(Clone, Debug)]
struct WestwoodPath {
    sf: Subflow,
    ww: WestwoodState,
    /// The last δ_r (MPTCPW) or θ (wMPTCPW) the increase used.
    coupling: Option<f64>,
}

/// MPTCPW or wMPTCPW over all paths of one connection.
#[derive(Clone, Debug)]
pub struct Mptcpw {
    cfg: MptcpwConfig,
    paths: Vec<Option<WestwoodPath>>,
    samples: Vec<PathSample>,
    rates: Vec<f64>,
}

impl Mptcpw {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &MptcpwConfig {
        &self.cfg
    }

    /// Path `p`'s bandwidth estimator, if the path exists.
    pub fn estimator(&self, p: PathId) -> Option<&BandwidthEstimator> {
        let st = self.paths.get(p.0 as usize)?.as_ref()?;
        Some(&st.ww.est)
    }

    fn slot(&mut self, p: PathId) -> Option<&mut WestwoodPath> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    /// The coupled increase per acknowledged packet of path `p` (in 1/bytes) and the δ_r or
    /// θ it used; `None` if `p` is not among the usable paths.
    fn increase(&mut self, p: PathId, paths: &Paths<'_>) -> Option<(f64, f64)> {
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
            self.samples.push(sample(st.sf.effective_window(), v));
            self.rates.push(st.ww.est.bytes_per_sec());
        }
        let r = me?;
        Some(match self.cfg.variant {
            MptcpwVariant::Mptcpw => {
                let g = self.cfg.gamma;
                // min(δ_r/w_r, 1/w_r), δ_r = w_r^γ·max_s(w_s^(2−γ)/RTT_s²)/(Σ x_i)².
                let inc = mptcpw_increase_per_ack(&self.samples, r, g);
                (inc, delta(&self.samples, r, g))
            }
            MptcpwVariant::Weighted => {
                // θ/w_r, θ = max_s(B_s²)/(Σ B_i)².
                let theta = wmptcpw_theta(&self.rates);
                let w = self.samples.get(r).map_or(0.0, |s| s.window);
                (if w > 0.0 { theta / w } else { 0.0 }, theta)
            }
        })
    }

    /// Puts path `p` in congestion avoidance at `cwnd` with a bandwidth estimate and RTTmin.
    #[cfg(test)]
    pub(crate) fn force(
        &mut self,
        p: usize,
        cwnd: u64,
        bytes_per_sec: f64,
        rtt_min: crate::units::Duration,
    ) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, cwnd);
            st.ww.est.force(bytes_per_sec, rtt_min);
        }
    }

    /// Path `p`'s growth not yet applied, in bytes.
    #[cfg(test)]
    pub(crate) fn credit(&self, p: usize) -> f64 {
        self.paths
            .get(p)
            .and_then(Option::as_ref)
            .map_or(0.0, |st| st.sf.credit())
    }
}

impl MultipathController for Mptcpw {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = Some(WestwoodPath {
            sf: Subflow::new(mss, &self.cfg.window),
            ww: WestwoodState::default(),
            coupling: None,
        });
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(slot) = self.paths.get_mut(p.0 as usize) {
            *slot = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let abc = self.cfg.window.abc_segments();
        let per_event = self.cfg.counting == Counting::PerAckEvent;
        let bytes = ack.bytes_acked.0;
        let Some(st) = self.slot(p) else {
            return;
        };
        st.ww.est.on_ack(ack.now, ack.bytes_acked, ack.rtt); // tcp_westwood_ack, every ACK
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        if st.sf.in_slow_start() {
            st.sf.slow_start(bytes, abc); // the Westwood+ base: NewReno slow start
            return;
        }
        st.sf.use_rule(coupled);
        if !coupled {
            st.sf.reno_increase(bytes); // one usable path: δ = θ = 1, Westwood+ (Reno growth)
            return;
        }
        if bytes == 0 {
            return;
        }
        let Some((inc, coupling)) = self.increase(p, paths) else {
            return;
        };
        let Some(st) = self.slot(p) else {
            return;
        };
        st.coupling = Some(coupling);
        let mss = st.sf.mss;
        let counted = st.sf.counted_bytes(bytes, per_event) as f64;
        st.sf.grow(inc * mss as f64 * counted, mss);
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, _paths: &Paths<'_>) {
        if let Some(st) = self.slot(p) {
            // Westwood+ base: tcp_reno_ssthresh while recovery lasts.
            st.ww.on_loss(&mut st.sf);
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(st) = self.slot(p) {
            // Decrease: w_r ← B_r × RTT_min,r, applied at CA_EVENT_COMPLETE_CWR as Westwood+.
            st.ww.on_recovery_end(&mut st.sf);
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, _paths: &Paths<'_>) {
        if let Some(st) = self.slot(p) {
            st.ww.on_timeout(&mut st.sf, rto.repeated);
        }
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
                alpha: st.coupling,
                bandwidth_bps: st.ww.est.bits_per_sec(),
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
