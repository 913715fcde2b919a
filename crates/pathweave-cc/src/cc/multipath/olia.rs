//! OLIA, the Opportunistic Linked-Increases Algorithm (Khalili, Gast, Popovic, Le Boudec,
//! "MPTCP is not Pareto-optimal", CoNEXT 2012 / ToN 2013; draft-khalili-mptcp-congestion-
//! control-05), in two arithmetics (`reference/ALGORITHMS.md` §2):
//!
//! * `spec` — per acknowledged packet on path r in congestion avoidance,
//!   `Δw_r = (w_r/rtt_r²)/(Σ_p w_p/rtt_p)² + ε_r/w_r`, where ε moves increase from the
//!   largest-window paths M to the presumably best paths B (largest `ℓ_r/rtt_r²`, ℓ_r the bytes
//!   acknowledged between losses) that are not in M: `ε_r = 1/(n·|B\M|)` on B\M,
//!   `−1/(n·|M|)` on M when B\M is not empty, else 0.
//! * `linux` — `mptcp_olia.c`: the same terms in 2^−10 packet units with truncating integer
//!   division, a signed counter that moves the window by one packet at ±1023 and then restarts
//!   from zero, `n = cnt_established`, exact integer ties, and the loss markers `loss1..3`
//!   taken from `snd_una` at congestion-avoidance calls and shifted on entering recovery.
//!
//! Both modes count sums and sets over the effective windows (ssthresh for a path in
//! recovery, `mptcp_get_crt_cwnd`). Slow start, loss (`w/2`, ssthresh ≥ 2·MSS) and timeouts are
//! NewReno's; with one usable path the controller is NewReno, byte for byte.
//!
//! Invariants: the ε terms sum to zero over the usable paths; a path's window may shrink in
//! congestion avoidance (when it is in M and B\M is not empty) but never below one segment.

use crate::cc::multipath::config::{
    modal_config, Algorithm, Arithmetic, ConfigError, Counting, WindowConfig,
};
use crate::cc::multipath::subflow::{ensure_slot, is_coupled, rtt_secs, srtt_us, usable, Subflow};
use crate::cc::multipath::{MultipathController, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

/// One path as OLIA's real-valued rule reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OliaSample {
    /// Effective window (packets or bytes, the same unit for every path).
    pub window: f64,
    /// Smoothed RTT in seconds, above zero.
    pub rtt: f64,
    /// ℓ_r: bytes acknowledged between the last two losses or since the last, the larger.
    pub loss_interval: f64,
}

/// Relative tolerance under which two real `ℓ/rtt²` values count as equal (the vectors' own).
const TIE: f64 = 1e-12;

/// OLIA's path sets, as indices into the samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sets {
    /// M: the paths with the largest window.
    pub max_window: Vec<usize>,
    /// B: the presumably best paths, largest `ℓ/rtt²`.
    pub best: Vec<usize>,
    /// B\M.
    pub best_not_max: Vec<usize>,
}

struct Summary {
    max_window: f64,
    best_quality: f64,
    in_m: usize,
    in_b_not_m: usize,
}

fn quality(s: &OliaSample) -> f64 {
    s.loss_interval / (s.rtt * s.rtt)
}

fn is_best(s: &OliaSample, best: f64) -> bool {
    (quality(s) - best).abs() <= TIE * best
}

fn summarise(paths: &[OliaSample]) -> Summary {
    let max_window = paths.iter().map(|s| s.window).fold(f64::MIN, f64::max);
    let best_quality = paths.iter().map(quality).fold(f64::MIN, f64::max);
    let in_m = paths.iter().filter(|s| s.window == max_window).count();
    let in_b_not_m = paths
        .iter()
        .filter(|s| s.window != max_window && is_best(s, best_quality))
        .count();
    Summary {
        max_window,
        best_quality,
        in_m,
        in_b_not_m,
    }
}

/// The sets M, B and B\M (OLIA §2.1 of ALGORITHMS.md).
pub fn sets(paths: &[OliaSample]) -> Sets {
    let s = summarise(paths);
    let pick = |f: &dyn Fn(&OliaSample) -> bool| -> Vec<usize> {
        paths
            .iter()
            .enumerate()
            .filter(|(_, p)| f(p))
            .map(|(i, _)| i)
            .collect()
    };
    Sets {
        max_window: pick(&|p| p.window == s.max_window),
        best: pick(&|p| is_best(p, s.best_quality)),
        best_not_max: pick(&|p| p.window != s.max_window && is_best(p, s.best_quality)),
    }
}

/// ε_r for path `r` of `paths`, with `n` the number of paths (Khalili et al.): `1/(n·|B\M|)`
/// on B\M, `−1/(n·|M|)` on M when B\M ≠ ∅, otherwise 0.
pub fn epsilon(paths: &[OliaSample], r: usize, n: usize) -> f64 {
    let Some(p) = paths.get(r) else {
        return 0.0;
    };
    let s = summarise(paths);
    if s.in_b_not_m == 0 || n == 0 {
        return 0.0;
    }
    if p.window != s.max_window && is_best(p, s.best_quality) {
        1.0 / (n * s.in_b_not_m) as f64
    } else if p.window == s.max_window {
        -1.0 / (n * s.in_m) as f64
    } else {
        0.0
    }
}

/// OLIA's increase per acknowledged packet on path `r`:
/// `(w_r/rtt_r²)/(Σ_p w_p/rtt_p)² + ε_r/w_r`, in packets when windows are in packets.
pub fn increase_per_ack(paths: &[OliaSample], r: usize, eps: f64) -> f64 {
    let Some(p) = paths.get(r) else {
        return 0.0;
    };
    let rate_sum: f64 = paths.iter().map(|s| s.window / s.rtt).sum();
    if !(rate_sum > 0.0 && p.window > 0.0 && p.rtt > 0.0) {
        return 0.0;
    }
    // Khalili et al. (ALGORITHMS.md §2.1): first term w_r/rtt_r² / (Σ w_p/rtt_p)², plus ε_r/w_r.
    (p.window / (p.rtt * p.rtt)) / (rate_sum * rate_sum) + eps / p.window
}

/// One path as `mptcp_olia.c` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelOliaSample {
    /// `mptcp_get_crt_cwnd`: the window in packets (ssthresh while in recovery).
    pub cwnd: u64,
    /// `srtt_us`: eight times the smoothed RTT in microseconds.
    pub srtt_us: u64,
    /// `max(loss3 − loss2, loss2 − loss1)` in bytes.
    pub loss_interval: u64,
}

/// The kernel's ε_r as a fraction `num/den`, `num ∈ {−1, 0, 1}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelEpsilon {
    /// Numerator: −1, 0 or 1.
    pub num: i64,
    /// Denominator: `cnt_established·|B\M|`, `cnt_established·|M|`, or 1.
    pub den: u64,
}

impl KernelEpsilon {
    /// ε as a real number.
    pub fn value(self) -> f64 {
        if self.den == 0 {
            0.0
        } else {
            self.num as f64 / self.den as f64
        }
    }
}

/// `mptcp_get_epsilon` for path `r`: the best path is the last with the largest
/// `ℓ/srtt²` (compared by cross-multiplication), B\M counts the non-max paths whose product
/// equals the best's exactly, and the denominators use `cnt_established`.
pub fn kernel_epsilon(paths: &[KernelOliaSample], r: usize, cnt_established: u64) -> KernelEpsilon {
    const ZERO: KernelEpsilon = KernelEpsilon { num: 0, den: 1 };
    let Some(me) = paths.get(r) else {
        return ZERO;
    };
    let max_cwnd = paths.iter().map(|s| s.cwnd).max().unwrap_or(0);
    let sq = |s: &KernelOliaSample| (s.srtt_us as u128).saturating_mul(s.srtt_us as u128);
    let (mut best_int, mut best_rtt) = (0u128, 1u128);
    for s in paths {
        let l = s.loss_interval as u128;
        if l.saturating_mul(best_rtt) >= best_int.saturating_mul(sq(s)) {
            best_rtt = sq(s);
            best_int = l;
        }
    }
    let equal_best = |s: &KernelOliaSample| {
        (s.loss_interval as u128).saturating_mul(best_rtt) == best_int.saturating_mul(sq(s))
    };
    let m = paths.iter().filter(|s| s.cwnd == max_cwnd).count() as u64;
    let b_not_m = paths
        .iter()
        .filter(|s| s.cwnd != max_cwnd && equal_best(s))
        .count() as u64;
    if b_not_m == 0 {
        ZERO
    } else if me.cwnd < max_cwnd && equal_best(me) {
        KernelEpsilon {
            num: 1,
            den: cnt_established.saturating_mul(b_not_m),
        }
    } else if me.cwnd == max_cwnd {
        KernelEpsilon {
            num: -1,
            den: cnt_established.saturating_mul(m),
        }
    } else {
        ZERO
    }
}

const SCALE: u32 = 10;

/// `mptcp_olia_cong_avoid`: the change of the counter (in 2^−10 packet) one ACK event on path
/// `r` makes, `⌊2^10·(ε_num·rate + ε_den·(w_r·2^10)²) / (ε_den·w_r·rate)⌋` with
/// `rate = (1 + Σ_p ⌊w_p·2^10·srtt_r/srtt_p⌋)²`, the negative case truncated toward zero.
pub fn kernel_counter_delta(paths: &[KernelOliaSample], r: usize, eps: KernelEpsilon) -> i64 {
    let Some(me) = paths.get(r) else {
        return 0;
    };
    let srtt_r = me.srtt_us.max(1) as u128;
    let mut rate = 1u128;
    for s in paths {
        let scaled = ((s.cwnd as u128) << SCALE).saturating_mul(srtt_r);
        rate = rate.saturating_add(scaled / s.srtt_us.max(1) as u128);
    }
    let rate = rate.saturating_mul(rate);
    let cs = (me.cwnd as u128) << SCALE;
    let den = eps.den as u128;
    let cs2 = den.saturating_mul(cs).saturating_mul(cs);
    let inc_den = match den.saturating_mul(me.cwnd as u128).saturating_mul(rate) {
        0 => 1,
        d => d,
    };
    let clamp = |x: u128| i64::try_from(x).unwrap_or(i64::MAX);
    if eps.num == -1 {
        if cs2 < rate {
            -clamp((rate - cs2).saturating_mul(1 << SCALE) / inc_den)
        } else {
            clamp((cs2 - rate).saturating_mul(1 << SCALE) / inc_den)
        }
    } else {
        let num = (eps.num.max(0) as u128).saturating_mul(rate);
        clamp(num.saturating_add(cs2).saturating_mul(1 << SCALE) / inc_den)
    }
}

/// OLIA's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OliaConfig {
    window: WindowConfig,
    arithmetic: Arithmetic,
    counting: Option<Counting>,
}

modal_config!(OliaConfig, Algorithm::Olia);

impl OliaConfig {
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<Olia, ConfigError> {
        self.validate()?;
        Ok(Olia {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
            kernel_samples: Vec::new(),
        })
    }
}

/// OLIA's inter-loss markers in acknowledged bytes (`snd_una` in the kernel): `loss1` and
/// `loss2` at the last two losses, `loss3` now. MPVeno keeps the same bookkeeping.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LossMarkers {
    loss1: u64,
    loss2: u64,
    loss3: u64,
}

impl LossMarkers {
    /// ℓ_r = max(loss3 − loss2, loss2 − loss1).
    pub(crate) fn interval(&self) -> u64 {
        self.loss3
            .saturating_sub(self.loss2)
            .max(self.loss2.saturating_sub(self.loss1))
    }

    /// `mptcp_olia_set_state` on entering Loss/Recovery/CWR: shift the markers if data was
    /// acknowledged since the last shift.
    pub(crate) fn shift(&mut self) {
        if self.loss3 != self.loss2 {
            self.loss1 = self.loss2;
            self.loss2 = self.loss3;
        }
    }

    /// Move the current marker to `acked` bytes.
    pub(crate) fn advance_to(&mut self, acked: u64) {
        self.loss3 = acked;
    }

    /// A state with inter-loss distance `l` and nothing acknowledged since (tests).
    #[cfg(test)]
    pub(crate) fn with_interval(l: u64) -> Self {
        LossMarkers {
            loss1: 0,
            loss2: l,
            loss3: l,
        }
    }
}

/// One path's OLIA state: the window and the inter-loss markers.
#[derive(Clone, Debug)]
struct OliaPath {
    sf: Subflow,
    acked: u64,
    markers: LossMarkers,
    epsilon: Option<f64>,
}

/// OLIA over all paths of one connection.
#[derive(Clone, Debug)]
pub struct Olia {
    cfg: OliaConfig,
    paths: Vec<Option<OliaPath>>,
    samples: Vec<OliaSample>,
    kernel_samples: Vec<KernelOliaSample>,
}

impl Olia {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &OliaConfig {
        &self.cfg
    }

    fn slot(&mut self, p: PathId) -> Option<&mut OliaPath> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    fn linux(&self) -> bool {
        self.cfg.arithmetic == Arithmetic::Linux
    }

    /// Fills the samples of the usable paths; returns the position of `p` among them.
    fn collect(&mut self, p: PathId, paths: &Paths<'_>) -> Option<usize> {
        let linux = self.linux();
        self.samples.clear();
        self.kernel_samples.clear();
        let mut me = None;
        for (i, slot) in self.paths.iter().enumerate() {
            let (Some(st), Some(v)) = (slot.as_ref(), paths.0.get(i)) else {
                continue;
            };
            if !usable(v) {
                continue;
            }
            if i == p.0 as usize {
                me = Some(self.samples.len().max(self.kernel_samples.len()));
            }
            let w = st.sf.effective_window(); // mptcp_get_crt_cwnd
            if linux {
                self.kernel_samples.push(KernelOliaSample {
                    cwnd: (w / st.sf.mss).max(1),
                    srtt_us: srtt_us(v),
                    loss_interval: st.markers.interval(),
                });
            } else {
                self.samples.push(OliaSample {
                    window: w as f64,
                    rtt: rtt_secs(v),
                    loss_interval: st.markers.interval() as f64,
                });
            }
        }
        me
    }

    fn spec_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        let Some(r) = self.collect(p, paths) else {
            return;
        };
        let n = self.samples.len();
        let eps = epsilon(&self.samples, r, n);
        let inc = increase_per_ack(&self.samples, r, eps);
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let Some(st) = self.slot(p) else {
            return;
        };
        st.epsilon = Some(eps);
        let counted = st.sf.counted_bytes(bytes, per_event) as f64;
        let mss = st.sf.mss;
        // Per packet: Δw_r = first term + ε_r/w_r (in 1/bytes here, times MSS per packet).
        st.sf.grow(inc * mss as f64 * counted, mss);
    }

    fn kernel_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        // cnt_established: the subflows that are established, whether or not they have an RTT.
        let established = self
            .paths
            .iter()
            .enumerate()
            .filter(|(i, s)| s.is_some() && paths.0.get(*i).is_some_and(|v| v.can_send))
            .count() as u64;
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let mut events = match self.slot(p) {
            Some(st) => st.sf.events(bytes, per_event),
            None => return,
        };
        while events > 0 {
            let Some(r) = self.collect(p, paths) else {
                return;
            };
            let eps = kernel_epsilon(&self.kernel_samples, r, established);
            let d = kernel_counter_delta(&self.kernel_samples, r, eps);
            let Some(st) = self.slot(p) else {
                return;
            };
            st.epsilon = Some(eps.value());
            if !st.sf.olia_advance(&mut events, d) {
                break;
            }
        }
    }

    fn loss_ssthresh(&self, sf: &Subflow, coupled: bool) -> u64 {
        if coupled && self.linux() {
            sf.kernel_reno_ssthresh()
        } else {
            sf.reno_ssthresh()
        }
    }

    /// Puts path `p` at a window and threshold with inter-loss distance `loss_interval`
    /// (tests reproduce a vector's state): `loss2 − loss1 = ℓ`, nothing acknowledged since.
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64, loss_interval: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, ssthresh);
            st.markers = LossMarkers::with_interval(loss_interval);
            st.acked = loss_interval;
        }
    }

    /// Path `p`'s window state and ℓ (tests read the counters).
    #[cfg(test)]
    pub(crate) fn subflow(&self, p: usize) -> Option<(&Subflow, u64)> {
        let st = self.paths.get(p)?.as_ref()?;
        Some((&st.sf, st.markers.interval()))
    }
}

impl MultipathController for Olia {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = Some(OliaPath {
            sf: Subflow::new(mss, &self.cfg.window),
            acked: 0,
            markers: LossMarkers::default(),
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
        let linux = self.linux();
        let abc = self.cfg.window.abc_segments();
        let bytes = ack.bytes_acked.0;
        let Some(st) = self.slot(p) else {
            return;
        };
        st.acked = st.acked.saturating_add(bytes);
        if !ack.in_recovery || !linux {
            // The kernel sets loss3 = snd_una on every call into congestion avoidance, which
            // recovery skips; the spec counts every acknowledged byte since the last loss.
            st.markers.advance_to(st.acked);
        }
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        if st.sf.in_slow_start() {
            st.sf.slow_start(bytes, abc);
            return;
        }
        st.sf.use_rule(coupled);
        if !coupled {
            st.sf.reno_increase(bytes);
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
        let linux = self.linux();
        let Some(st) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let ss = self.loss_ssthresh(&st.sf, coupled);
        let Some(st) = self.slot(p) else {
            return;
        };
        if !st.sf.in_recovery {
            st.markers.shift(); // set_state(Recovery)
        }
        let cnt = st.sf.cnt;
        st.sf.enter_recovery(ss);
        if linux {
            st.sf.cnt = cnt; // mptcp_olia's counter is its own: no loss clears it
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(st) = self.slot(p) {
            st.sf.in_recovery = false;
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let linux = self.linux();
        let Some(st) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let ss = (!rto.repeated).then(|| self.loss_ssthresh(&st.sf, coupled));
        let Some(st) = self.slot(p) else {
            return;
        };
        if !rto.repeated && !st.sf.in_recovery {
            st.markers.shift(); // set_state(Loss), first timeout only (icsk_retransmits == 0)
        }
        let cnt = st.sf.cnt;
        st.sf.timeout(ss);
        if linux {
            st.sf.cnt = cnt;
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
                epsilon: st.epsilon,
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
