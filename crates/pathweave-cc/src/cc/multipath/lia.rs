//! LIA, the Linked Increases Algorithm (RFC 6356; Raiciu, Handley, Wischik 2011), in two
//! arithmetics (`reference/ALGORITHMS.md` §1):
//!
//! * `spec` — RFC 6356 §3: in congestion avoidance each ACK on path i adds
//!   `min(α·bytes_acked·MSS_i/cwnd_total, bytes_acked·MSS_i/cwnd_i)` bytes, with
//!   `α = cwnd_total·max_i(cwnd_i/rtt_i²)/(Σ_i cwnd_i/rtt_i)²`, recomputed on every ACK from
//!   the effective windows of the usable paths.
//! * `linux` — `mptcp_coupled.c`: α in fixed point (2^32 over 2^10 squared), the best path
//!   picked from truncated `cwnd·2^32/srtt_us²` with ties to the last path, one packet per
//!   `T + 1` ACK events with `T = max(⌊2^12/α⌋, cwnd)`, α cached per connection and refreshed
//!   after slow-start ACKs, after each increment, on a timeout and on the first ACK after a
//!   state change; loss gives `max(⌊w/2⌋, 2)` packets.
//!
//! Slow start, fast recovery and timeouts are NewReno's (RFC 6356 §3 changes only congestion
//! avoidance). With one usable path the controller is NewReno, byte for byte.
//!
//! Invariants: the per-ACK increase never exceeds the Reno increase on the same path
//! (`1/w` per packet, RFC 6356 goal 2's cap); ssthresh ≥ 2·MSS; cwnd ≥ 1·MSS.

use crate::cc::multipath::config::{
    check_arithmetic, Algorithm, Arithmetic, ConfigError, Counting, WindowConfig,
};
use crate::cc::multipath::subflow::{
    ensure_slot, is_coupled, kernel_sample, sample, usable_paths, Subflow,
};
use crate::cc::multipath::{KernelSample, MultipathController, PathSample, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

/// The parameter a [`ConfigError`] names when the approximate maximum is asked for with the
/// linux arithmetic (a scenario's `maximum` key).
pub const APPROXIMATE_MAXIMUM: &str = "approximate maximum (1 = on)";

/// The path with the largest `w/rtt²` (the first of equals), the one α's numerator uses.
pub fn best_path(paths: &[PathSample]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, s) in paths.iter().enumerate() {
        let q = s.window / (s.rtt * s.rtt);
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((i, q));
        }
    }
    best.map(|(i, _)| i)
}

/// RFC 6356 §3: `α = W · max_i(w_i/rtt_i²) / (Σ_i w_i/rtt_i)²`. Dimensionless, so windows may
/// be in packets or bytes. `None` for no paths or a non-positive denominator.
pub fn alpha(paths: &[PathSample]) -> Option<f64> {
    let valid = |s: &PathSample| s.rtt > 0.0 && s.window >= 0.0; // false for NaN too
    if !paths.iter().all(valid) {
        return None;
    }
    let b = best_path(paths)?;
    let total: f64 = paths.iter().map(|s| s.window).sum();
    let rate_sum: f64 = paths.iter().map(|s| s.window / s.rtt).sum();
    let best = paths[b].window / (paths[b].rtt * paths[b].rtt);
    let a = total * best / (rate_sum * rate_sum); // RFC 6356 §3, α
    (a.is_finite() && rate_sum > 0.0).then_some(a)
}

/// RFC 6356 §3: the increase per acknowledged packet on a path, `min(α/W, 1/w)`, in packets
/// when the windows are in packets (in "per window unit" otherwise). The second term is the
/// TCP increase, the cap that makes LIA no more aggressive than TCP on any path.
pub fn increase_per_ack(alpha: f64, total: f64, own: f64) -> f64 {
    if !(total > 0.0 && own > 0.0) {
        return 0.0;
    }
    (alpha / total).min(1.0 / own)
}

/// The kernel's α and the path it took as best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelAlpha {
    /// α in the kernel's fixed point: about `2^12·α/W`, at least 1.
    pub alpha: u64,
    /// Index of the path taken as best (ties go to the last one).
    pub best: usize,
}

const ALPHA_SCALE_NUM: u32 = 32;
const ALPHA_SCALE_DEN: u32 = 10;
const ALPHA_SCALE: u32 = 12;

/// `mptcp_recalc_alpha` (`mptcp_coupled.c`, ALGORITHMS.md §1.2): `t_i = ⌊w_i·2^32/srtt_i²⌋`,
/// best = the last path with the largest `t_i`; `α = ⌊w_b·2^32 / (Σ_i ⌊w_i·2^10·srtt_b/
/// srtt_i⌋)²⌋`, and 1 if that is 0. Computed in 128 bits, so it never overflows where the
/// kernel's 64 bits would not. `None` for no paths.
pub fn kernel_alpha(paths: &[KernelSample]) -> Option<KernelAlpha> {
    let mut max_num = 0u128;
    let mut best = None;
    for (i, s) in paths.iter().enumerate() {
        let srtt = s.srtt_us.max(1) as u128;
        let t = ((s.cwnd as u128) << ALPHA_SCALE_NUM) / srtt.saturating_mul(srtt);
        if t >= max_num {
            // ALGORITHMS.md §1.3 item 1: `>=`, so ties (often all zero) go to the last path.
            max_num = t;
            best = Some(i);
        }
    }
    let b = best?;
    let best_rtt = paths[b].srtt_us.max(1) as u128;
    let mut den = 0u128;
    for s in paths {
        let scaled = ((s.cwnd as u128) << ALPHA_SCALE_DEN).saturating_mul(best_rtt);
        den = den.saturating_add(scaled / s.srtt_us.max(1) as u128);
    }
    let den = den.saturating_mul(den);
    let a = ((paths[b].cwnd as u128) << ALPHA_SCALE_NUM)
        .checked_div(den)
        .unwrap_or(0);
    let a = u64::try_from(a).unwrap_or(u64::MAX).max(1); // kernel: `if (!alpha) alpha = 1`
    Some(KernelAlpha { alpha: a, best: b })
}

/// `mptcp_ccc_cong_avoid`: the ACK events a path counts per packet of growth (before the
/// "+1" of the compare-then-increment counter), `max(⌊2^12/α⌋, w)`.
pub fn kernel_threshold(alpha: u64, cwnd: u64) -> u64 {
    ((1u64 << ALPHA_SCALE) / alpha.max(1)).max(cwnd)
}

/// The real α the kernel's fixed-point value stands for: `α_k · W / 2^12`.
pub fn kernel_alpha_equivalent(alpha: u64, total_packets: u64) -> f64 {
    alpha as f64 * total_packets as f64 / (1u64 << ALPHA_SCALE) as f64
}

/// LIA's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiaConfig {
    window: WindowConfig,
    arithmetic: Arithmetic,
    counting: Option<Counting>,
    approximate_max: bool,
}

impl LiaConfig {
    /// Spec arithmetic, counting per packet, the default slow start.
    pub fn new() -> Self {
        LiaConfig::default()
    }
    /// The shared slow start and initial window.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// Spec or Linux arithmetic.
    pub fn arithmetic(mut self, a: Arithmetic) -> Self {
        self.arithmetic = a;
        self
    }
    /// Per-packet or per-ACK-event counting; unset, it follows the arithmetic.
    pub fn counting(mut self, c: Counting) -> Self {
        self.counting = Some(c);
        self
    }
    /// Keep only an approximate maximum of `w/rtt²`, as the kernel module of Raiciu et al.'s Linux
    /// implementation paper does (González Usach and Kühlewind, "Implementation and Evaluation of
    /// Coupled Congestion Control for Multipath TCP", EUNICE 2012 §3): the cached maximum is
    /// replaced when a larger value arrives, or when the path that set it reports a smaller one;
    /// other paths' decreases go unseen until then. Spec arithmetic only.
    pub fn approximate_max(mut self, on: bool) -> Self {
        self.approximate_max = on;
        self
    }
    /// Whether the maximum is approximate.
    pub fn approximates_max(&self) -> bool {
        self.approximate_max
    }
    /// The counting in force.
    pub fn counting_mode(&self) -> Counting {
        self.counting.unwrap_or(self.arithmetic.default_counting())
    }
    /// The arithmetic in force.
    pub fn arithmetic_mode(&self) -> Arithmetic {
        self.arithmetic
    }
    /// Checks the window settings.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_arithmetic(Algorithm::Lia, self.arithmetic)?;
        if self.approximate_max && self.arithmetic == Arithmetic::Linux {
            return Err(ConfigError::OutOfRange {
                algorithm: "lia",
                parameter: APPROXIMATE_MAXIMUM,
                value: 1.0,
                allowed: "only with the spec arithmetic; the linux mode has its own best-path rule",
            });
        }
        self.window.validate()
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<Lia, ConfigError> {
        self.validate()?;
        Ok(Lia {
            cfg: *self,
            paths: Vec::new(),
            alpha: None,
            alpha_k: None,
            forced: true,
            samples: Vec::new(),
            kernel_samples: Vec::new(),
            approx: None,
        })
    }
}

/// LIA over all paths of one connection.
#[derive(Clone, Debug)]
pub struct Lia {
    cfg: LiaConfig,
    paths: Vec<Option<Subflow>>,
    /// The last α computed (real, or the kernel value's equivalent), for traces.
    alpha: Option<f64>,
    /// The kernel's cached fixed-point α (on the meta-socket in `mptcp_coupled.c`).
    alpha_k: Option<u64>,
    /// The kernel's `forced_update`: recompute α on the next congestion-avoidance ACK.
    forced: bool,
    samples: Vec<PathSample>,
    kernel_samples: Vec<KernelSample>,
    /// The approximate maximum of `w/rtt²` and the path that set it.
    approx: Option<(u32, f64)>,
}

impl Lia {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &LiaConfig {
        &self.cfg
    }

    fn linux(&self) -> bool {
        self.cfg.arithmetic == Arithmetic::Linux
    }

    fn slot(&mut self, p: PathId) -> Option<&mut Subflow> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    /// `mptcp_recalc_alpha` over the usable paths' raw windows (the kernel does not substitute
    /// ssthresh during recovery, ALGORITHMS.md §1.2).
    /// Does not clear the forced flag: the kernel clears it only in congestion avoidance.
    fn refresh_kernel_alpha(&mut self, paths: &Paths<'_>) {
        self.kernel_samples.clear();
        self.kernel_samples.extend(
            usable_paths(&self.paths, paths).map(|(_, sf, v)| kernel_sample(sf.cwnd, sf.mss, v)),
        );
        if let Some(k) = kernel_alpha(&self.kernel_samples) {
            let total = self
                .kernel_samples
                .iter()
                .fold(0u64, |t, s| t.saturating_add(s.cwnd));
            self.alpha_k = Some(k.alpha);
            self.alpha = Some(kernel_alpha_equivalent(k.alpha, total));
        }
    }

    /// α with the approximate maximum: `own` is the acknowledged path's sample, which
    /// replaces the cached maximum if larger or if that path set it.
    fn approximate_alpha(&mut self, p: PathId, own: PathSample) -> Option<f64> {
        if own.rtt.is_nan() || own.rtt <= 0.0 {
            return None;
        }
        let v = own.window / (own.rtt * own.rtt);
        match self.approx {
            Some((owner, max)) if owner != p.0 && v <= max => {}
            _ => self.approx = Some((p.0, v)),
        }
        let (_, max) = self.approx?;
        let total: f64 = self.samples.iter().map(|s| s.window).sum();
        let rate_sum: f64 = self.samples.iter().map(|s| s.window / s.rtt).sum();
        let a = total * max / (rate_sum * rate_sum); // RFC 6356 §3 with the cached maximum
        (a.is_finite() && rate_sum > 0.0).then_some(a)
    }

    /// RFC 6356 §3 congestion avoidance, real-valued.
    fn spec_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        self.samples.clear();
        self.samples.extend(
            usable_paths(&self.paths, paths).map(|(_, sf, v)| sample(sf.effective_window(), v)),
        );
        let a = if self.cfg.approximate_max {
            let own = usable_paths(&self.paths, paths)
                .find(|(i, _, _)| *i == p.0 as usize)
                .map(|(_, sf, v)| sample(sf.effective_window(), v));
            match own.and_then(|s| self.approximate_alpha(p, s)) {
                Some(a) => a,
                None => return,
            }
        } else {
            let Some(a) = alpha(&self.samples) else {
                return;
            };
            a
        };
        self.alpha = Some(a);
        let total: f64 = self.samples.iter().map(|s| s.window).sum();
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let Some(sf) = self.slot(p) else {
            return;
        };
        // RFC 6356 §3: cwnd_i += min(α·bytes_acked·MSS_i/cwnd_total, bytes_acked·MSS_i/cwnd_i).
        let inc = increase_per_ack(a, total, sf.cwnd as f64);
        let counted = sf.counted_bytes(bytes, per_event) as f64;
        let floor = sf.mss;
        sf.grow(inc * sf.mss as f64 * counted, floor);
    }

    /// `mptcp_ccc_cong_avoid`: one packet per `T + 1` ACK events, α refreshed after each.
    fn kernel_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        if self.forced || self.alpha_k.is_none() {
            self.refresh_kernel_alpha(paths);
            self.forced = false;
        }
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let mut events = match self.slot(p) {
            Some(sf) => sf.events(bytes, per_event),
            None => return,
        };
        while events > 0 {
            let a = self.alpha_k.unwrap_or(1);
            let Some(sf) = self.slot(p) else {
                return;
            };
            let t = kernel_threshold(a, sf.packets());
            if !sf.kernel_advance(&mut events, t) {
                break;
            }
            self.refresh_kernel_alpha(paths); // kernel: recalc after every cwnd++
        }
    }

    /// The threshold after a loss: RFC 5681 halving in spec mode (NewReno's, in bytes), the
    /// kernel's `tcp_reno_ssthresh` in packets in linux mode.
    fn loss_ssthresh(&self, sf: &Subflow, coupled: bool) -> u64 {
        if coupled && self.linux() {
            sf.kernel_reno_ssthresh()
        } else {
            sf.reno_ssthresh()
        }
    }

    /// Puts path `p` at a window and threshold (tests reproduce a vector's state).
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(sf)) = self.paths.get_mut(p) {
            sf.force(cwnd, ssthresh);
        }
    }

    /// Path `p`'s state (tests read the counters).
    #[cfg(test)]
    pub(crate) fn subflow(&self, p: usize) -> Option<&Subflow> {
        self.paths.get(p).and_then(Option::as_ref)
    }
}

impl MultipathController for Lia {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = Some(Subflow::new(mss, &self.cfg.window));
        self.forced = true;
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(slot) = self.paths.get_mut(p.0 as usize) {
            *slot = None;
        }
        self.forced = true;
        if self.approx.is_some_and(|(owner, _)| owner == p.0) {
            self.approx = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let linux = self.linux();
        let abc = self.cfg.window.abc_segments();
        let bytes = ack.bytes_acked.0;
        let Some(sf) = self.slot(p) else {
            return;
        };
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        if sf.in_slow_start() {
            // RFC 6356 §3: slow start is unchanged TCP.
            sf.slow_start(bytes, abc);
            if coupled && linux {
                self.refresh_kernel_alpha(paths); // kernel: alpha refreshed on SS ACKs
            }
            return;
        }
        sf.use_rule(coupled);
        if !coupled {
            sf.reno_increase(bytes);
        } else if bytes == 0 {
            // Nothing newly acknowledged: no congestion-avoidance step.
        } else if linux {
            self.kernel_increase(p, bytes, paths);
        } else {
            self.spec_increase(p, bytes, paths);
        }
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let Some(sf) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let ss = self.loss_ssthresh(sf, coupled);
        if let Some(sf) = self.slot(p) {
            sf.enter_recovery(ss);
        }
        self.forced = true; // kernel: set_state(Recovery) forces a recalculation
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(sf) = self.slot(p) {
            sf.in_recovery = false;
        }
        self.forced = true;
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let Some(sf) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        // RFC 5681 §3.1: a repeated timeout holds ssthresh.
        let ss = (!rto.repeated).then(|| self.loss_ssthresh(sf, coupled));
        if let Some(sf) = self.slot(p) {
            sf.timeout(ss);
        }
        if coupled && self.linux() {
            self.refresh_kernel_alpha(paths); // CA_EVENT_LOSS
        }
        self.forced = true;
    }

    fn window(&self, p: PathId) -> Bytes {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or(Bytes::ZERO, |sf| Bytes(sf.cwnd))
    }

    fn metrics(&self, p: PathId) -> Metrics {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, |sf| Metrics {
                alpha: self.alpha,
                ..sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
