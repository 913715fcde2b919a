//! BMC, Bidimensional-Probe Multipath Congestion Control (Honda et al., 2009;
//! `reference/ALGORITHMS.md` §9): weighted AIMD per subflow, an aggressiveness manager
//! that keeps the weights summing to the flowshares P, and a proportion manager that moves
//! weight towards the least congested subflow.
//!
//! * **Per subflow n** (§3.1): AIMD(D_n², ½). In congestion avoidance `D_n²·MSS` is added per
//!   window of acknowledged bytes (NewReno's byte counter, so `D_n²/w_n` per acknowledged
//!   packet on average and `D_n²` packets per RTT); a loss halves the window,
//!   `max(cwnd/2, 2·MSS)`. Slow start, recovery and timeouts are NewReno's (the paper keeps
//!   Reno's, §5.1). With one usable path and P = 1, D = 1 and the path is NewReno, byte for
//!   byte.
//! * **Aggressiveness manager** (§3.1 eq. 3.1, §4.2): `Σ_n D_n = P` over the paths the
//!   controller holds (P = 1 by default; P flowshares otherwise). Initial weights are equal,
//!   given per subflow, or proportional to per-subflow rate hints (§3.3's interface-type
//!   policy). *Renormalisation rule:* each path has a base value — 1 (equal), its listed weight
//!   or its rate hint (the mean of the list for a path beyond its end). A joining path gets
//!   `D = P·base/Σ base` over the paths then present and the others are scaled by a common
//!   factor to make room, keeping the proportions the proportion manager learned; a leaving
//!   path's weight is spread over the rest in proportion to their weights. Paths added in
//!   order at the start therefore get exactly the configured weights.
//! * **Weights in use.** The increase uses the *effective* weight `D_n·P/Σ_usable D`, where a
//!   path is usable if it can send and has an RTT estimate: a subflow that cannot send lends
//!   its weight to the others so the bundle stays as aggressive as P TCP flows (and one usable
//!   path of a P = 1 connection is NewReno). When every path is usable this is D_n.
//! * **Proportion manager** (§3.2), every period J: for each subflow that takes part,
//!   `T_wr,n = (R_n/D_n)·T_J,n` (eq. 3.7) with R_n the smoothed RTT and T_J,n the bytes it had
//!   acknowledged over the period divided by the period's actual length — ALGORITHMS.md §9's
//!   interpretation of the paper's R and T_J. The subflow with the smallest T_wr loses
//!   `Δ = (D − D²/P)·K` (eq. 3.8 applied to the share D/P, which is the paper's
//!   `D − (D − D²)·K` for P = 1; for P > 1 the paper's form would move nothing at D = 1 and
//!   add weight above it), the one with the largest gains Δ (eq. 3.9), so Σ D is conserved.
//!   Ties go to the lower path id; equal scores move nothing.
//! * **Dead band** (`tolerance`, not in the paper; 0 — the paper's rule — by default): no
//!   move unless the largest T_wr exceeds the smallest by more than this fraction. The paper
//!   treats a state in which every subflow gets its proportional throughput as ideal (§3.2,
//!   "we consider that the shared bottleneck is ideally utilized"), but T_J over one or two
//!   congestion epochs is noisy (log T_wr ratio s.d. ≈ 0.3 at the ideal weights of the
//!   bmc-proportion topology), so without a band the manager moves on noise every period;
//!   with K = 1 one such move takes D = ¼ to 1/16.
//! * **Floor.** Where eq. 3.8 would take a weight below `D_min = 0.01·P/n` (n paths held;
//!   it goes negative when K > 1/(1 − D), vector P2), the weight stops at D_min and only
//!   `D − D_min` moves. D_min is 1% of the equal share: at D_min a subflow adds
//!   `(0.01·P/n)²` packets per RTT and gets about 1% of an equal subflow's throughput, so it
//!   barely affects fairness, yet it still delivers data, its T_J stays measurable and the
//!   manager can raise it again; and `n·D_min < P`, so the floor is always feasible. Every
//!   weight stays in `[D_min, P]`.
//! * **Who takes part.** A subflow that is usable, has left its initial slow start (its
//!   measurement starts at its first congestion event or timeout) and was measured for at
//!   least one of its RTTs in the period.
//! * **Period J.** Fixed, or `auto`: at the start of each period, the longest congestion epoch
//!   over the subflows taking part, `(b·W/a + 1)·R = (W/(2D²) + 1)·R` (§3.2) with W the window
//!   at the subflow's last loss, capped at [`AUTO_PERIOD_MAX_RTTS`] of its RTT (a subflow at
//!   D_min would otherwise freeze the manager for 10^4 RTTs and more). J is known at
//!   configuration time and the RTT only at run time, so the configuration checks J > 0 and a
//!   J shorter than the longest smoothed RTT of a usable path is raised to that RTT. A period
//!   ends at the first event at or after its start plus J.
//!
//! Invariants: `Σ D = P` (to rounding) whenever at least one path is held; every D in
//! `[D_min, P]`; cwnd ≥ 1·MSS; ssthresh ≥ 2·MSS.

use crate::cc::aimd::{check, epoch_rtts, MAX_WEIGHT};
use crate::cc::multipath::config::{ConfigError, WindowConfig};
use crate::cc::multipath::subflow::{ensure_slot, rtt_secs, usable, Subflow};
use crate::cc::multipath::{MultipathController, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Duration, Instant};

/// The most per-subflow values a configuration lists (weights or rate hints).
pub const MAX_LISTED_PATHS: usize = 16;
/// How far the listed weights may sum from P.
pub const WEIGHT_SUM_TOLERANCE: f64 = 1e-9;
/// The floor on a weight as a fraction of the equal share P/n.
pub const MIN_WEIGHT_SHARE: f64 = 0.01;
/// The longest automatic period, in RTTs of the subflow that sets it.
pub const AUTO_PERIOD_MAX_RTTS: f64 = 1000.0;
/// The widest dead band accepted (the largest T_wr more than 11 times the smallest).
pub const MAX_TOLERANCE: f64 = 10.0;
/// The largest rate hint accepted (any unit; 10^15 bit/s is a petabit).
pub const MAX_RATE_HINT: f64 = 1e15;

/// The smallest weight a subflow may have, `D_min = 0.01·P/n` for n paths.
pub fn min_weight(flowshares: f64, n: usize) -> f64 {
    MIN_WEIGHT_SHARE * flowshares / n.max(1) as f64
}

/// BMC eq. 3.7: `T_wr = (R/D)·T_J` — throughput with the effect of weight and RTT deducted.
pub fn t_wr(rtt_secs: f64, weight: f64, throughput: f64) -> f64 {
    rtt_secs / weight * throughput
}

/// BMC eq. 3.8 on the share D/P, unclamped: `D − (D − D²/P)·K` (the paper's
/// `D − (D − D²)·K` when P = 1). Negative when `K > 1/(1 − D/P)`.
pub fn reduced_weight(d: f64, k: f64, flowshares: f64) -> f64 {
    d - (d - d * d / flowshares) * k
}

/// One move of the proportion manager.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WeightMove {
    /// Index of the subflow with the smallest T_wr, whose weight fell.
    pub reduced: usize,
    /// Index of the subflow with the largest T_wr, whose weight rose.
    pub increased: usize,
    /// The weight moved.
    pub delta: f64,
    /// Whether eq. 3.8 would have gone below D_min, so the move was cut short.
    pub clamped: bool,
}

/// One proportion-manager step (BMC §3.2) on `weights` with scores `scores` (T_wr): the
/// smallest score loses `(D − D²/P)·K` of its weight D, but not below `d_min` (eq. 3.8), and the
/// largest gains what the first lost (eq. 3.9), so the sum is unchanged. Entries with a
/// non-finite score or a non-positive weight take no part. `None` if fewer than two take
/// part, or if the largest score is not above `(1 + tolerance)` times the smallest (with
/// `tolerance = 0`, the paper's rule, only equal scores move nothing).
pub fn proportion_step(
    weights: &mut [f64],
    scores: &[f64],
    k: f64,
    flowshares: f64,
    d_min: f64,
    tolerance: f64,
) -> Option<WeightMove> {
    let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
    for (i, (&w, &s)) in weights.iter().zip(scores).enumerate() {
        if !(s.is_finite() && w.is_finite() && w > 0.0) {
            continue;
        }
        if lo.is_none_or(|j| s < scores[j]) {
            lo = Some(i);
        }
        if hi.is_none_or(|j| s > scores[j]) {
            hi = Some(i);
        }
    }
    let (lo, hi) = (lo?, hi?);
    if scores[hi] <= scores[lo] * (1.0 + tolerance) {
        return None; // every subflow gets its proportional share: nothing to move
    }
    let d = weights[lo];
    let wanted = reduced_weight(d, k, flowshares); // §3.2 eq. 3.8
    let clamped = wanted.is_nan() || wanted < d_min;
    let new = if clamped { d_min } else { wanted }.min(d);
    let delta = d - new;
    weights[lo] = new;
    weights[hi] += delta; // §3.2 eq. 3.9: Σ D is conserved
    Some(WeightMove {
        reduced: lo,
        increased: hi,
        delta,
        clamped,
    })
}

/// Scales `weights` to sum to `flowshares`, raises any below `d_min` to it (taking the
/// difference from the others in proportion to their excess over `d_min`) and gives the
/// rounding residual to the largest weight. Non-finite or non-positive entries count as zero.
pub fn rebalance(weights: &mut [f64], flowshares: f64, d_min: f64) {
    let n = weights.len();
    if n == 0 {
        return;
    }
    for w in weights.iter_mut() {
        if !(w.is_finite() && *w > 0.0) {
            *w = 0.0;
        }
    }
    let sum: f64 = weights.iter().sum();
    if sum.is_nan() || sum <= 0.0 || d_min * n as f64 >= flowshares {
        weights.fill(flowshares / n as f64);
        return;
    }
    let scale = flowshares / sum;
    weights.iter_mut().for_each(|w| *w *= scale);
    let deficit: f64 = weights.iter().map(|&w| (d_min - w).max(0.0)).sum();
    if deficit > 0.0 {
        let excess: f64 = weights.iter().map(|&w| (w - d_min).max(0.0)).sum();
        for w in weights.iter_mut() {
            if *w < d_min {
                *w = d_min;
            } else {
                *w -= deficit * (*w - d_min) / excess;
            }
        }
    }
    let residual = flowshares - weights.iter().sum::<f64>();
    if let Some(top) = weights.iter_mut().max_by(|a, b| a.total_cmp(b)) {
        *top += residual;
    }
}

/// Up to [`MAX_LISTED_PATHS`] values, one per subflow in path-id order, kept inline so a
/// configuration stays `Copy`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerPath {
    values: [f64; MAX_LISTED_PATHS],
    /// The number of values given (more than the array holds is a configuration error).
    len: usize,
}

impl PerPath {
    /// The values, in path-id order.
    pub fn new(values: &[f64]) -> Self {
        let mut v = [0.0; MAX_LISTED_PATHS];
        let kept = values.len().min(MAX_LISTED_PATHS);
        v[..kept].copy_from_slice(&values[..kept]);
        PerPath {
            values: v,
            len: values.len(),
        }
    }
    /// The values held.
    pub fn as_slice(&self) -> &[f64] {
        &self.values[..self.len.min(MAX_LISTED_PATHS)]
    }
    /// The number of values given.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether no value was given.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The value for path `i`, or the mean of the list beyond its end.
    fn get_or_mean(&self, i: usize) -> f64 {
        let s = self.as_slice();
        s.get(i)
            .copied()
            .unwrap_or_else(|| s.iter().sum::<f64>() / s.len().max(1) as f64)
    }
}

/// Where the initial weights come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InitialWeights {
    /// P/n each. The default.
    Equal,
    /// Given per subflow; they must sum to P.
    Weights(PerPath),
    /// Proportional to per-subflow rate hints, e.g. interface speeds (BMC §3.3).
    RateHints(PerPath),
}

/// The proportion manager's period J.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Period {
    /// The longest congestion epoch of the subflows, recomputed each period (BMC §3.2).
    Auto,
    /// A fixed J (above zero; raised to the longest smoothed RTT at run time).
    Fixed(Duration),
}

/// BMC's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BmcConfig {
    window: WindowConfig,
    flowshares: f64,
    initial: InitialWeights,
    k: f64,
    period: Period,
    proportion_manager: bool,
    tolerance: f64,
}

impl Default for BmcConfig {
    /// P = 1, equal weights, K = 1 (the paper's worked examples, §3.2), J = auto, the
    /// proportion manager on.
    fn default() -> Self {
        BmcConfig {
            window: WindowConfig::default(),
            flowshares: 1.0,
            initial: InitialWeights::Equal,
            k: 1.0,
            period: Period::Auto,
            proportion_manager: true,
            tolerance: 0.0,
        }
    }
}

impl BmcConfig {
    /// The defaults.
    pub fn new() -> Self {
        BmcConfig::default()
    }
    /// The shared slow start and initial window.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// The flowshares P the weights sum to (0 < P ≤ 16; §4.2).
    pub fn flowshares(mut self, p: f64) -> Self {
        self.flowshares = p;
        self
    }
    /// Equal initial weights, P/n.
    pub fn equal_weights(mut self) -> Self {
        self.initial = InitialWeights::Equal;
        self
    }
    /// Initial weights per subflow, in path-id order (1 to 16 values, each at least
    /// `0.01·P/n` for n values, summing to P within 10⁻⁹). Replaces rate hints.
    pub fn weights(mut self, d: &[f64]) -> Self {
        self.initial = InitialWeights::Weights(PerPath::new(d));
        self
    }
    /// Initial weights proportional to per-subflow rate hints, in path-id order (1 to 16
    /// positive values in any one unit). Replaces weights.
    pub fn rate_hints(mut self, hints: &[f64]) -> Self {
        self.initial = InitialWeights::RateHints(PerPath::new(hints));
        self
    }
    /// The proportion manager's gain K (0 < K < 4; §3.2).
    pub fn k(mut self, k: f64) -> Self {
        self.k = k;
        self
    }
    /// A fixed period J (above zero).
    pub fn period(mut self, j: Duration) -> Self {
        self.period = Period::Fixed(j);
        self
    }
    /// J from the longest congestion epoch (the default).
    pub fn auto_period(mut self) -> Self {
        self.period = Period::Auto;
        self
    }
    /// Turns the proportion manager on (the default) or off (weights stay as set).
    pub fn proportion_manager(mut self, on: bool) -> Self {
        self.proportion_manager = on;
        self
    }
    /// The dead band: the manager moves weight only when the largest T_wr exceeds the smallest
    /// by more than this fraction (0 ≤ tolerance ≤ 10; 0, the paper's rule, by default).
    pub fn tolerance(mut self, t: f64) -> Self {
        self.tolerance = t;
        self
    }
    /// The dead band.
    pub fn dead_band(&self) -> f64 {
        self.tolerance
    }
    /// P.
    pub fn flowshares_p(&self) -> f64 {
        self.flowshares
    }
    /// Where the initial weights come from.
    pub fn initial_weights(&self) -> InitialWeights {
        self.initial
    }
    /// K.
    pub fn gain_k(&self) -> f64 {
        self.k
    }
    /// J.
    pub fn period_rule(&self) -> Period {
        self.period
    }
    /// Whether the proportion manager runs.
    pub fn manages_proportions(&self) -> bool {
        self.proportion_manager
    }

    /// Checks every parameter; errors name it, the value and the allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        const ALG: &str = "bmc";
        self.window.validate()?;
        let p = self.flowshares;
        check(
            ALG,
            "flowshares",
            p,
            p > 0.0 && p <= MAX_WEIGHT,
            "0 < P <= 16",
        )?;
        check(ALG, "k", self.k, self.k > 0.0 && self.k < 4.0, "0 < K < 4")?;
        let t = self.tolerance;
        check(
            ALG,
            "tolerance",
            t,
            (0.0..=MAX_TOLERANCE).contains(&t),
            "0 <= tolerance <= 10",
        )?;
        if let Period::Fixed(j) = self.period {
            let allowed = "J > 0 s, or \"auto\" (a J below the longest smoothed RTT is raised \
                           to it at run time)";
            check(ALG, "period", j.as_secs_f64(), j.0 > 0, allowed)?;
        }
        match self.initial {
            InitialWeights::Equal => Ok(()),
            InitialWeights::Weights(w) => {
                list_length("weights", &w)?;
                let d_min = min_weight(p, w.len());
                for &d in w.as_slice() {
                    let allowed = "each D in [D_min, P], D_min = 0.01*P/n for n weights";
                    check(ALG, "weights", d, d >= d_min && d <= p, allowed)?;
                }
                let sum: f64 = w.as_slice().iter().sum();
                if (sum - p).abs() <= WEIGHT_SUM_TOLERANCE {
                    Ok(())
                } else {
                    Err(ConfigError::WeightSum {
                        algorithm: ALG,
                        sum,
                        flowshares: p,
                        tolerance: WEIGHT_SUM_TOLERANCE,
                    })
                }
            }
            InitialWeights::RateHints(h) => {
                list_length("rate_hints", &h)?;
                for &x in h.as_slice() {
                    let allowed = "each a positive rate in any one unit, at most 1e15";
                    check(ALG, "rate_hints", x, x > 0.0 && x <= MAX_RATE_HINT, allowed)?;
                }
                Ok(())
            }
        }
    }

    /// A controller with no paths yet.
    pub fn build(&self) -> Result<Bmc, ConfigError> {
        self.validate()?;
        Ok(Bmc {
            cfg: *self,
            paths: Vec::new(),
            period_start: None,
            period_len: None,
            last_move: None,
        })
    }

    /// Path `i`'s base value for the renormalisation rule (the module documentation).
    fn base(&self, i: usize) -> f64 {
        let b = match self.initial {
            InitialWeights::Equal => 1.0,
            InitialWeights::Weights(v) | InitialWeights::RateHints(v) => v.get_or_mean(i),
        };
        if b.is_finite() && b > 0.0 {
            b
        } else {
            1.0
        }
    }
}

fn list_length(parameter: &'static str, v: &PerPath) -> Result<(), ConfigError> {
    if (1..=MAX_LISTED_PATHS).contains(&v.len()) {
        Ok(())
    } else {
        Err(ConfigError::ListLength {
            algorithm: "bmc",
            parameter,
            len: v.len(),
            allowed: "1 to 16 values, one per subflow in path-id order",
        })
    }
}

/// One subflow: its window, weight and throughput measurement.
#[derive(Clone, Debug)]
struct PathState {
    sf: Subflow,
    /// The renormalisation base (1, the listed weight or the rate hint).
    base: f64,
    /// D_n.
    weight: f64,
    /// Start of this subflow's measurement in the current period; `None` until its first
    /// congestion event or timeout (initial slow start says nothing about the path).
    measured_since: Option<Instant>,
    /// Bytes acknowledged since `measured_since`.
    acked: u64,
    /// cwnd at the last loss or non-repeated timeout, bytes: the W of the epoch length.
    loss_window: u64,
    /// T_wr from the last period this subflow took part in.
    score: Option<f64>,
}

/// BMC over all paths of one connection.
#[derive(Clone, Debug)]
pub struct Bmc {
    cfg: BmcConfig,
    paths: Vec<Option<PathState>>,
    period_start: Option<Instant>,
    /// The automatic J of the current period, once it could be computed.
    period_len: Option<Duration>,
    last_move: Option<WeightMove>,
}

impl Bmc {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &BmcConfig {
        &self.cfg
    }

    /// The weight D of path `p`, `None` for a path not held.
    pub fn weight(&self, p: PathId) -> Option<f64> {
        self.state(p.0 as usize).map(|st| st.weight)
    }

    /// The proportion manager's last move, with indices as path ids.
    pub fn last_move(&self) -> Option<WeightMove> {
        self.last_move
    }

    fn state(&self, i: usize) -> Option<&PathState> {
        self.paths.get(i).and_then(Option::as_ref)
    }

    fn held(&self) -> usize {
        self.paths.iter().flatten().count()
    }

    /// Scales the held weights so that path `new` (weight 0 until now, if any) gets its
    /// share and Σ D = P, then enforces D_min (module documentation, renormalisation rule).
    fn renormalise(&mut self, new: Option<usize>) {
        let p = self.cfg.flowshares;
        let d_min = min_weight(p, self.held());
        let base_sum: f64 = self.paths.iter().flatten().map(|st| st.base).sum();
        let mut w: Vec<f64> = Vec::with_capacity(self.paths.len());
        let mut idx: Vec<usize> = Vec::with_capacity(self.paths.len());
        for (i, st) in self.paths.iter().enumerate() {
            if let Some(st) = st {
                idx.push(i);
                w.push(st.weight);
            }
        }
        if let Some(n) = new.and_then(|n| idx.iter().position(|&i| i == n)) {
            let share = p * self.paths[idx[n]].as_ref().map_or(1.0, |st| st.base) / base_sum;
            let others: f64 = w.iter().sum::<f64>() - w[n];
            if others > 0.0 {
                let scale = (p - share) / others;
                w.iter_mut().for_each(|x| *x *= scale);
            }
            w[n] = share;
        }
        rebalance(&mut w, p, d_min);
        for (&i, &x) in idx.iter().zip(&w) {
            if let Some(st) = self.paths[i].as_mut() {
                st.weight = x;
            }
        }
    }

    /// The weight path `i` grows with: `D_i·P/Σ_usable D` if it is usable, else D_i.
    fn effective_weight(&self, i: usize, paths: &Paths<'_>) -> f64 {
        let Some(st) = self.state(i) else {
            return 0.0;
        };
        if !paths.0.get(i).is_some_and(usable) {
            return st.weight;
        }
        let sum: f64 = self
            .paths
            .iter()
            .enumerate()
            .filter(|(j, s)| s.is_some() && paths.0.get(*j).is_some_and(usable))
            .filter_map(|(_, s)| s.as_ref().map(|st| st.weight))
            .sum();
        if sum > 0.0 {
            st.weight * self.cfg.flowshares / sum
        } else {
            st.weight
        }
    }

    /// The longest smoothed RTT of a usable path held.
    fn longest_rtt(&self, paths: &Paths<'_>) -> Duration {
        self.paths
            .iter()
            .zip(paths.0)
            .filter(|(s, v)| s.is_some() && usable(v))
            .filter_map(|(_, v)| v.srtt)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// The automatic J: the longest congestion epoch `(W/(2D²) + 1)·R` (BMC §3.2) over the
    /// subflows being measured, each capped at [`AUTO_PERIOD_MAX_RTTS`] RTTs.
    fn auto_period(&self, paths: &Paths<'_>) -> Option<Duration> {
        let mut longest: Option<f64> = None;
        for (st, v) in self.paths.iter().zip(paths.0) {
            let Some(st) = st else { continue };
            if st.measured_since.is_none() || !usable(v) {
                continue;
            }
            let w = st.loss_window as f64 / st.sf.mss as f64;
            let d = st.weight;
            // §3.2: one epoch is (b·W/a) + 1 RTTs, with a = D², b = ½.
            let rtts = epoch_rtts(d * d, 0.5, w).min(AUTO_PERIOD_MAX_RTTS);
            let secs = rtts * rtt_secs(v);
            if secs.is_finite() && longest.is_none_or(|l| secs > l) {
                longest = Some(secs);
            }
        }
        longest.map(Duration::from_secs_f64)
    }

    /// Ends the period if J has elapsed (called with every event's `now`).
    fn tick(&mut self, now: Instant, paths: &Paths<'_>) {
        if !self.cfg.proportion_manager {
            return;
        }
        let start = *self.period_start.get_or_insert(now);
        let j = match (self.cfg.period, self.period_len) {
            (Period::Fixed(j), _) | (Period::Auto, Some(j)) => j,
            (Period::Auto, None) => match self.auto_period(paths) {
                Some(j) => *self.period_len.insert(j),
                None => return, // nobody measured yet: no period to end
            },
        };
        // J is known at configuration time, the RTT only now: at least one RTT of every path.
        let j = j.max(self.longest_rtt(paths));
        if now.saturating_since(start) >= j {
            self.close_period(now, paths);
        }
    }

    /// Scores the subflows taking part (eq. 3.7), moves weight (eqs. 3.8, 3.9) and restarts
    /// every measurement.
    fn close_period(&mut self, now: Instant, paths: &Paths<'_>) {
        let (p, k) = (self.cfg.flowshares, self.cfg.k);
        let d_min = min_weight(p, self.held());
        let (mut idx, mut w, mut scores) = (Vec::new(), Vec::new(), Vec::new());
        for (i, slot) in self.paths.iter_mut().enumerate() {
            let Some(st) = slot else { continue };
            let Some(since) = st.measured_since else {
                continue;
            };
            let elapsed = now.saturating_since(since);
            if let Some(v) = paths.0.get(i).filter(|v| usable(v)) {
                if v.srtt.is_some_and(|r| elapsed >= r) && elapsed.0 > 0 {
                    // §3.3: T_J from the bytes acknowledged over the measurement.
                    let tj = st.acked as f64 / elapsed.as_secs_f64();
                    let score = t_wr(rtt_secs(v), st.weight, tj); // §3.2 eq. 3.7
                    st.score = Some(score);
                    idx.push(i);
                    w.push(st.weight);
                    scores.push(score);
                }
            }
            st.measured_since = Some(now); // §3.2: restart the measurement for J seconds
            st.acked = 0;
        }
        self.last_move =
            proportion_step(&mut w, &scores, k, p, d_min, self.cfg.tolerance).map(|m| WeightMove {
                reduced: idx[m.reduced],
                increased: idx[m.increased],
                ..m
            });
        for (&i, &x) in idx.iter().zip(&w) {
            if let Some(st) = self.paths[i].as_mut() {
                st.weight = x;
            }
        }
        self.period_start = Some(now);
        self.period_len = None;
    }

    /// Puts path `p` at a window and threshold (tests reproduce a vector's state).
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, ssthresh);
        }
    }

    /// Sets the weights of the paths held, in order (tests).
    #[cfg(test)]
    pub(crate) fn force_weights(&mut self, d: &[f64]) {
        for (st, &x) in self.paths.iter_mut().flatten().zip(d) {
            st.weight = x;
        }
    }

    /// Starts path `p`'s measurement at `since` with `acked` bytes (tests).
    #[cfg(test)]
    pub(crate) fn force_measurement(&mut self, p: usize, since: Instant, acked: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.measured_since = Some(since);
            st.acked = acked;
        }
    }

    /// The current automatic period (tests).
    #[cfg(test)]
    pub(crate) fn auto_period_for(&self, paths: &Paths<'_>) -> Option<Duration> {
        self.auto_period(paths)
    }
}

impl MultipathController for Bmc {
    fn on_path_added(&mut self, p: PathId, now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = None; // a path added twice starts afresh
        self.renormalise(None);
        self.paths[i] = Some(PathState {
            sf: Subflow::new(mss, &self.cfg.window),
            base: self.cfg.base(i),
            weight: 0.0,
            measured_since: None,
            acked: 0,
            loss_window: 0,
            score: None,
        });
        self.renormalise(Some(i));
        self.period_start.get_or_insert(now);
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(slot) = self.paths.get_mut(p.0 as usize) {
            if slot.take().is_some() {
                self.renormalise(None);
            }
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        self.tick(ack.now, paths);
        let i = p.0 as usize;
        let d = self.effective_weight(i, paths);
        let abc = self.cfg.window.abc_segments();
        let bytes = ack.bytes_acked.0;
        let Some(st) = self.paths.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        if st.measured_since.is_some() {
            st.acked = st.acked.saturating_add(bytes); // T_J counts every acknowledged byte
        }
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        if st.sf.in_slow_start() {
            st.sf.slow_start(bytes, abc); // RFC 3465 §2.2, as NewReno
            return;
        }
        // §3.1: AIMD(D², ½) — D²·MSS per window of acknowledged bytes, i.e. D²/w per packet.
        let incr = d * d * st.sf.mss as f64;
        st.sf.window_counted_increase(bytes, incr);
    }

    fn on_congestion_event(&mut self, p: PathId, ev: &CongestionEvent, paths: &Paths<'_>) {
        self.tick(ev.now, paths);
        let Some(st) = self.paths.get_mut(p.0 as usize).and_then(Option::as_mut) else {
            return;
        };
        st.loss_window = st.sf.cwnd; // §3.2: W, the window at the end of the epoch
        if st.measured_since.is_none() {
            st.measured_since = Some(ev.now);
            st.acked = 0;
        }
        // §3.1: b = ½, w_n −= w_n/2 (NewReno's max(cwnd/2, 2·MSS)).
        let ss = st.sf.reno_ssthresh();
        st.sf.enter_recovery(ss);
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(Some(st)) = self.paths.get_mut(p.0 as usize) {
            st.sf.in_recovery = false;
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        self.tick(rto.now, paths);
        let Some(st) = self.paths.get_mut(p.0 as usize).and_then(Option::as_mut) else {
            return;
        };
        if !rto.repeated {
            st.loss_window = st.sf.cwnd;
        }
        if st.measured_since.is_none() {
            st.measured_since = Some(rto.now);
            st.acked = 0;
        }
        // RFC 5681 §3.1: a repeated timeout holds ssthresh.
        let ss = (!rto.repeated).then(|| st.sf.reno_ssthresh());
        st.sf.timeout(ss);
    }

    fn window(&self, p: PathId) -> Bytes {
        self.state(p.0 as usize)
            .map_or(Bytes::ZERO, |st| Bytes(st.sf.cwnd))
    }

    fn metrics(&self, p: PathId) -> Metrics {
        self.state(p.0 as usize)
            .map_or_else(Metrics::default, |st| Metrics {
                weight: Some(st.weight),
                score: st.score,
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
