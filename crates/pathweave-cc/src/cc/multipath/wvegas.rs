//! wVegas, weighted Vegas (Cao, Xu, Fu, "Delay-based congestion control for multipath TCP",
//! ICNP 2012; kernel `net/mptcp/mptcp_wvegas.c`, `reference/ALGORITHMS.md` §4), a
//! delay-based multipath controller. Once per round trip (the first ACK beyond the data that
//! was outstanding at the previous round's end), with `rtt` the mean of the round's samples and
//! `base` the smallest sample ever:
//!
//! * `diff = w·(rtt − base)/rtt` packets queued, `target = w·base/rtt`;
//! * in slow start, if `diff > γ`: `w ← min(w, target + 1)`, `ssthresh ← min(ssthresh, w)`;
//! * in congestion avoidance: when `diff ≥ α_r`, refresh the path's rate `w/rtt`, its weight
//!   (rate over the sum of the rates of the usable paths sampled this round) and
//!   `α_r = max(2, weight·total_alpha)`; then `w −= 1` (and `ssthresh ← min(ssthresh, w)`) if
//!   `diff > α_r`, `w += 1` if `diff < α_r`; drain the queue, `w ← w·base/(2·rtt)`, when the
//!   queueing delay reaches twice the smallest non-zero one seen;
//! * `w ≥ 2` packets, and `ssthresh ← max(ssthresh, ¾w)` (`tcp_current_ssthresh`).
//!
//! A round with at most two RTT samples, and any ACK while wVegas is disabled (from a loss
//! until recovery ends, from a timeout until the data outstanding at the timeout is
//! acknowledged), uses NewReno. Slow start between round ends is NewReno's. Loss halves
//! (`tcp_reno_ssthresh`). `spec` computes in real numbers; `linux` as the kernel: microsecond
//! samples plus one, whole packets, truncating division, rates and weights scaled by 2^16.
//!
//! With one usable path the controller is NewReno, byte for byte (like the other coupled
//! controllers here), unless [`WVegasConfig::single_path_reno`] is turned off, which gives the
//! kernel's single-subflow wVegas (weight 1, `α = total_alpha`).
//!
//! Invariants: cwnd ≥ 2·MSS after a Vegas adjustment, ≥ 1·MSS always; the weights of the paths
//! refreshed in one round sum to at most one.

use crate::cc::multipath::config::{
    check_arithmetic, check_range, Algorithm, Arithmetic, ConfigError, WindowConfig,
};
use crate::cc::multipath::subflow::{ensure_slot, is_coupled, usable, view_of, Subflow};
use crate::cc::multipath::{MultipathController, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, PathView, Rto};
use crate::units::{Bytes, Duration, Instant};

const WEIGHT_SCALE: u32 = 16;

/// wVegas's parameters (kernel module parameters `initial_alpha`, `total_alpha`, `gamma`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WVegasConfig {
    window: WindowConfig,
    arithmetic: Arithmetic,
    initial_alpha: f64,
    total_alpha: f64,
    gamma: f64,
    single_path_reno: bool,
}

impl Default for WVegasConfig {
    /// The kernel's defaults: α₀ = 2, total α = 10, γ = 1 packets; spec arithmetic.
    fn default() -> Self {
        WVegasConfig {
            window: WindowConfig::default(),
            arithmetic: Arithmetic::Spec,
            initial_alpha: 2.0,
            total_alpha: 10.0,
            gamma: 1.0,
            single_path_reno: true,
        }
    }
}

impl WVegasConfig {
    /// The kernel's defaults.
    pub fn new() -> Self {
        WVegasConfig::default()
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
    /// α each path starts with and returns to after recovery, in packets (1 to 1000).
    pub fn initial_alpha(mut self, a: f64) -> Self {
        self.initial_alpha = a;
        self
    }
    /// The packets the connection aims to keep queued over all paths (1 to 10000).
    pub fn total_alpha(mut self, a: f64) -> Self {
        self.total_alpha = a;
        self
    }
    /// γ: the queued packets that end slow start (0 to 1000).
    pub fn gamma(mut self, g: f64) -> Self {
        self.gamma = g;
        self
    }
    /// Whether a connection with one usable path runs NewReno (the default) or wVegas.
    pub fn single_path_reno(mut self, reno: bool) -> Self {
        self.single_path_reno = reno;
        self
    }
    /// Checks the parameters; Linux arithmetic needs whole packets, as the kernel's `int`s.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_arithmetic(Algorithm::WVegas, self.arithmetic)?;
        self.window.validate()?;
        let params = [
            (
                "initial_alpha",
                self.initial_alpha,
                1.0,
                1000.0,
                "1 to 1000 packets",
            ),
            (
                "total_alpha",
                self.total_alpha,
                1.0,
                10_000.0,
                "1 to 10000 packets",
            ),
            ("gamma", self.gamma, 0.0, 1000.0, "0 to 1000 packets"),
        ];
        for (name, v, lo, hi, allowed) in params {
            check_range("wvegas", name, v, lo, hi, allowed)?;
            if self.arithmetic == Arithmetic::Linux && v.fract() != 0.0 {
                return Err(ConfigError::OutOfRange {
                    algorithm: "wvegas",
                    parameter: name,
                    value: v,
                    allowed: "a whole number of packets with linux arithmetic",
                });
            }
        }
        Ok(())
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<WVegas, ConfigError> {
        self.validate()?;
        Ok(WVegas {
            cfg: *self,
            paths: Vec::new(),
        })
    }
}

/// One path's wVegas state. RTTs are in "ticks": nanoseconds (spec) or microseconds plus one
/// (linux, `mptcp_wvegas_pkts_acked`).
#[derive(Clone, Debug)]
struct VegasPath {
    sf: Subflow,
    /// Bytes acknowledged so far (`snd_una`).
    acked: u64,
    /// `beg_snd_nxt`: the round ends with the first ACK beyond this many bytes.
    round_end: u64,
    /// Sum and count of this round's samples.
    sum: u64,
    cnt: u32,
    /// The smallest sample ever.
    base: u64,
    /// `instant_rate`: packets per second (spec) or packets/µs·2^16 (linux); 0 when unset.
    rate: f64,
    /// Share of the sampled paths' rates: a fraction (spec) or 2^16-scaled (linux).
    weight: f64,
    alpha: f64,
    /// The smallest non-zero queueing delay seen, in ticks; 0 when unset.
    queue_delay: u64,
    /// `doing_wvegas_now`.
    active: bool,
    /// After a timeout: re-enable once this many bytes are acknowledged.
    reenable_at: Option<u64>,
}

/// wVegas over all paths of one connection.
#[derive(Clone, Debug)]
pub struct WVegas {
    cfg: WVegasConfig,
    paths: Vec<Option<VegasPath>>,
}

impl WVegas {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &WVegasConfig {
        &self.cfg
    }

    fn linux(&self) -> bool {
        self.cfg.arithmetic == Arithmetic::Linux
    }

    fn ticks(&self, d: Duration) -> u64 {
        if self.linux() {
            d.0 / 1000 + 1 // vrtt = rtt_us + 1
        } else {
            d.0.max(1)
        }
    }

    fn full_weight(&self) -> f64 {
        if self.linux() {
            (1u64 << WEIGHT_SCALE) as f64
        } else {
            1.0
        }
    }

    fn slot(&mut self, p: PathId) -> Option<&mut VegasPath> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    /// `wvegas_enable`: a new round from the data now outstanding, α and weight reset.
    fn enable(&mut self, p: PathId, in_flight: u64) {
        let (alpha, weight) = (self.cfg.initial_alpha, self.full_weight());
        if let Some(st) = self.slot(p) {
            st.active = true;
            st.round_end = st.acked.saturating_add(in_flight);
            st.sum = 0;
            st.cnt = 0;
            st.rate = 0.0;
            st.alpha = alpha;
            st.weight = weight;
            st.queue_delay = 0;
            st.reenable_at = None;
        }
    }

    /// `mptcp_wvegas_weight`: path `p`'s rate `own_rate` over the rates of the usable paths
    /// with samples this round (itself included); the old weight when either is zero.
    fn weight_with(&self, p: PathId, own_rate: f64, paths: &Paths<'_>) -> f64 {
        let old = self
            .paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or(self.full_weight(), |st| st.weight);
        let others: f64 = self
            .paths
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let st = s.as_ref()?;
                let sampled = st.cnt > 0 && i != p.0 as usize;
                (sampled && paths.0.get(i).is_some_and(usable)).then_some(st.rate)
            })
            .sum();
        let total = others + own_rate;
        if total <= 0.0 || own_rate <= 0.0 {
            return old;
        }
        if self.linux() {
            ((own_rate as u64).saturating_mul(1 << WEIGHT_SCALE) / (total as u64).max(1)) as f64
        } else {
            own_rate / total
        }
    }

    /// The once-per-round Vegas step (`mptcp_wvegas_cong_avoid` at `after(ack, beg_snd_nxt)`).
    fn round_end(&mut self, p: PathId, bytes: u64, view: &PathView, paths: &Paths<'_>) {
        let linux = self.linux();
        let (gamma, total_alpha) = (self.cfg.gamma, self.cfg.total_alpha);
        let abc = self.cfg.window.abc_segments();
        let Some(st) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let (mss, cnt) = (st.sf.mss, st.cnt);
        let rtt = if cnt > 0 {
            (st.sum / cnt as u64).max(1)
        } else {
            1
        };
        let base = st.base.min(rtt);
        // diff = w·(rtt − base)/rtt queued packets; target = w·base/rtt.
        let (diff, target) = if linux {
            let w = st.sf.packets();
            let diff = w.saturating_mul(rtt - base) / rtt;
            (diff as f64, (w.saturating_mul(base) / rtt) as f64)
        } else {
            let (w, r) = (st.sf.cwnd as f64 / mss as f64, rtt as f64);
            (w * (r - base as f64) / r, w * base as f64 / r)
        };
        let slow = st.sf.in_slow_start();
        let refresh = cnt > 2 && !slow && diff >= st.alpha;
        let rate = if linux {
            (st.sf.packets().saturating_mul(1 << WEIGHT_SCALE) / rtt) as f64
        } else {
            (st.sf.cwnd as f64 / mss as f64) / (rtt as f64 / 1e9)
        };
        let weight = refresh.then(|| self.weight_with(p, rate, paths));
        let Some(st) = self.slot(p) else {
            return;
        };
        st.round_end = st.acked.saturating_add(view.in_flight.0);
        let reset = |st: &mut VegasPath| {
            st.sum = 0;
            st.cnt = 0;
        };
        if cnt <= 2 {
            reno(&mut st.sf, bytes, abc); // too few samples this round: Reno for this ACK
            reset(st);
            return;
        }
        if slow && diff > gamma {
            // More than γ packets queue: leave slow start at the target window plus one.
            let cap = if linux {
                (target as u64).saturating_add(1).saturating_mul(mss)
            } else {
                ((target + 1.0) * mss as f64) as u64
            };
            st.sf.cwnd = st.sf.cwnd.min(cap);
            st.sf.ssthresh = st.sf.ssthresh.min(st.sf.cwnd);
        } else if slow {
            st.sf.slow_start(bytes, abc);
        } else {
            if let Some(weight) = weight {
                st.rate = rate;
                st.weight = weight;
                // α_r = max(2, weight·total_alpha).
                st.alpha = if linux {
                    ((weight as u64).saturating_mul(total_alpha as u64) >> WEIGHT_SCALE).max(2)
                        as f64
                } else {
                    (weight * total_alpha).max(2.0)
                };
            }
            if diff > st.alpha {
                st.sf.cwnd = st.sf.cwnd.saturating_sub(mss);
                st.sf.ssthresh = st.sf.ssthresh.min(st.sf.cwnd);
            } else if diff < st.alpha {
                st.sf.cwnd = st.sf.cwnd.saturating_add(mss);
            }
            // Drain the queue when the delay doubles over the smallest non-zero one seen.
            let q = rtt - base;
            if q > 0 && (st.queue_delay == 0 || st.queue_delay > q) {
                st.queue_delay = q;
            }
            if st.queue_delay > 0 && q >= st.queue_delay.saturating_mul(2) {
                st.sf.cwnd = if linux {
                    let backoff = base.saturating_mul(1 << WEIGHT_SCALE) / rtt.saturating_mul(2);
                    (st.sf.packets().saturating_mul(backoff) >> WEIGHT_SCALE).saturating_mul(mss)
                } else {
                    (st.sf.cwnd as f64 * base as f64 / (2.0 * rtt as f64)) as u64
                };
                st.queue_delay = 0;
            }
        }
        // w ≥ 2 packets; then tcp_current_ssthresh in Open: max(ssthresh, ¾w).
        st.sf.cwnd = st.sf.cwnd.max(mss.saturating_mul(2));
        let three_quarters = if linux {
            let w = st.sf.packets();
            ((w >> 1) + (w >> 2)).saturating_mul(mss)
        } else {
            st.sf.cwnd / 2 + st.sf.cwnd / 4
        };
        st.sf.ssthresh = st.sf.ssthresh.max(three_quarters);
        reset(st);
    }

    fn loss_ssthresh(&self, sf: &Subflow, coupled: bool) -> u64 {
        if coupled && self.linux() {
            sf.kernel_reno_ssthresh()
        } else {
            sf.reno_ssthresh()
        }
    }

    /// Whether path `p` runs the Vegas rule: coupled, or usable and alone with
    /// `single_path_reno` off.
    fn vegas_mode(&self, p: PathId, paths: &Paths<'_>) -> bool {
        is_coupled(&self.paths, paths, p)
            || (!self.cfg.single_path_reno && paths.get(p).is_some_and(usable))
    }

    /// Path `p`'s state (tests read it).
    #[cfg(test)]
    pub(crate) fn subflow(&self, p: usize) -> Option<(&Subflow, f64, f64)> {
        let st = self.paths.get(p)?.as_ref()?;
        Some((&st.sf, st.alpha, st.weight))
    }

    /// Puts path `p` at a window and threshold.
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, ssthresh);
        }
    }
}

/// NewReno's growth for one ACK (slow start or byte-counted congestion avoidance).
fn reno(sf: &mut Subflow, bytes: u64, abc: u32) {
    if sf.in_slow_start() {
        sf.slow_start(bytes, abc);
    } else {
        sf.reno_increase(bytes);
    }
}

impl MultipathController for WVegas {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = Some(VegasPath {
            sf: Subflow::new(mss, &self.cfg.window),
            acked: 0,
            round_end: 0,
            sum: 0,
            cnt: 0,
            base: u64::MAX,
            rate: 0.0,
            weight: self.full_weight(),
            alpha: self.cfg.initial_alpha,
            queue_delay: 0,
            active: true,
            reenable_at: None,
        });
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(s) = self.paths.get_mut(p.0 as usize) {
            *s = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let vegas = self.vegas_mode(p, paths);
        let sample = ack.rtt.map(|d| self.ticks(d));
        let abc = self.cfg.window.abc_segments();
        let bytes = ack.bytes_acked.0;
        let Some(st) = self.slot(p) else {
            return;
        };
        st.acked = st.acked.saturating_add(bytes);
        if let Some(v) = sample {
            // mptcp_wvegas_pkts_acked: every ACK with a sample, in recovery too.
            st.base = st.base.min(v);
            st.sum = st.sum.saturating_add(v);
            st.cnt = st.cnt.saturating_add(1);
        }
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let reopen = st.reenable_at.is_some_and(|m| st.acked >= m);
        st.sf.use_rule(vegas);
        if !vegas {
            reno(&mut st.sf, bytes, abc);
            return;
        }
        let view = view_of(paths, p, st.sf.mss);
        if reopen {
            self.enable(p, view.in_flight.0); // the timeout's Loss state is over: Open
        }
        let Some(st) = self.slot(p) else {
            return;
        };
        if !st.active {
            reno(&mut st.sf, bytes, abc);
        } else if st.acked > st.round_end {
            self.round_end(p, bytes, &view, paths);
        } else if st.sf.in_slow_start() {
            st.sf.slow_start(bytes, abc);
        }
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, paths: &Paths<'_>) {
        let coupled = self.vegas_mode(p, paths);
        let Some(st) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let ss = self.loss_ssthresh(&st.sf, coupled);
        if let Some(st) = self.slot(p) {
            st.sf.enter_recovery(ss);
            st.active = false; // set_state(Recovery): wvegas_disable
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, paths: &Paths<'_>) {
        let in_flight = paths.get(p).map_or(0, |v| v.in_flight.0);
        if let Some(st) = self.slot(p) {
            st.sf.in_recovery = false;
        }
        self.enable(p, in_flight); // set_state(Open): wvegas_enable
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = self.vegas_mode(p, paths);
        let in_flight = paths.get(p).map_or(0, |v| v.in_flight.0);
        let Some(st) = self.paths.get(p.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let ss = (!rto.repeated).then(|| self.loss_ssthresh(&st.sf, coupled));
        if let Some(st) = self.slot(p) {
            st.sf.timeout(ss);
            st.rate = 0.0; // CA_EVENT_LOSS
            st.active = false; // set_state(Loss)
            st.reenable_at = Some(st.acked.saturating_add(in_flight.max(1)));
        }
    }

    fn window(&self, p: PathId) -> Bytes {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or(Bytes::ZERO, |st| Bytes(st.sf.cwnd))
    }

    fn metrics(&self, p: PathId) -> Metrics {
        let scale = self.full_weight();
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, |st| Metrics {
                weight: Some(st.weight / scale),
                alpha: Some(st.alpha),
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
