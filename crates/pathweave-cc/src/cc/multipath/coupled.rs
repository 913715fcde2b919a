//! Two reference points of the multipath design space, real-valued only (no kernel ever
//! shipped them):
//!
//! * **Fully coupled** — the COUPLED algorithm of Wischik, Raiciu, Greenhalgh, Handley,
//!   "Design, implementation and evaluation of congestion control for multipath TCP", NSDI
//!   2011, §2 (ε = 0 of their ε-family), as htsim `mtcp.cpp` `FULLY_COUPLED` implements it:
//!   the paths share one AIMD over the total window C. Per acknowledged packet on r,
//!   `Δw_r = a/C` (a = 1); on a loss on r, `ssthresh_r = max(w_r − C/b, 1·MSS)` (b = 2: half
//!   of the *total* window is removed, from the lossy path). It moves all traffic to the least
//!   congested paths and flaps between equally good ones. Not to be confused with the
//!   Kelly–Voice "Coupled" algorithm (`kelly_voice.rs`), whose increase is quadratic rather
//!   than linear in the path's share.
//! * **EWTCP**, equally weighted TCP (Honda et al. 2009; Wischik et al., NSDI 2011 §2.1):
//!   every path runs Reno with the increase scaled by a weight, `Δw_r = a/w_r` per packet with
//!   `a = 1/n²` for n usable paths, so that n paths through one bottleneck together take what
//!   one TCP would (TCP's window scales as √a). The decrease is Reno's `w/2`.
//!
//! Slow start, recovery and timeouts follow NewReno; with one usable path both are NewReno,
//! byte for byte. Sums run over the effective windows (ssthresh while in recovery).
//!
//! Invariants: cwnd ≥ 1·MSS; fully coupled ssthresh ≥ 1·MSS, EWTCP ssthresh ≥ 2·MSS; EWTCP's
//! increase is a fraction `a ≤ 1` of Reno's on the same path.

use crate::cc::multipath::config::{check_range, ConfigError, Counting, WindowConfig};
use crate::cc::multipath::subflow::{
    add_subflow, end_recovery_at, ensure_slot, enter_recovery_at, is_coupled, remove_subflow,
    slot_mut, subflow_metrics, timeout_at, usable_paths, window_of, Subflow,
};
use crate::cc::multipath::{MultipathController, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

/// The fully coupled increase per acknowledged packet, `a/C` (in packets when C is; Wischik
/// et al., NSDI 2011 §2, a = 1).
pub fn fully_coupled_increase(a: f64, total: f64) -> f64 {
    if total > 0.0 {
        a / total
    } else {
        0.0
    }
}

/// The fully coupled threshold after a loss on a path with window `own` when the paths'
/// windows total `total`: `max(own − total/b, floor)` (Wischik et al., NSDI 2011 §2,
/// `w_r ← max(w_r − w_total/2, 1)`; htsim `FULLY_COUPLED`, `max(mss, c − C/B)`).
pub fn fully_coupled_ssthresh(own: f64, total: f64, b: f64, floor: f64) -> f64 {
    (own - total / b).max(floor)
}

/// EWTCP's weight for `n` paths, `a = 1/n²` (Wischik et al. 2011).
pub fn ewtcp_weight(n: usize) -> f64 {
    let n = n.max(1) as f64;
    1.0 / (n * n)
}

/// The fully coupled algorithm's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FullyCoupledConfig {
    window: WindowConfig,
    counting: Counting,
    increase: f64,
    decrease_divisor: f64,
}

impl Default for FullyCoupledConfig {
    /// a = 1, b = 2, counting per packet.
    fn default() -> Self {
        FullyCoupledConfig {
            window: WindowConfig::default(),
            counting: Counting::PerPacket,
            increase: 1.0,
            decrease_divisor: 2.0,
        }
    }
}

impl FullyCoupledConfig {
    /// The defaults: a = 1, b = 2.
    pub fn new() -> Self {
        FullyCoupledConfig::default()
    }
    /// The shared slow start and initial window.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// Per-packet or per-ACK-event counting.
    pub fn counting(mut self, c: Counting) -> Self {
        self.counting = c;
        self
    }
    /// The increase gain a: packets added to the total window per window of ACKs
    /// (0 < a ≤ 10).
    pub fn increase(mut self, a: f64) -> Self {
        self.increase = a;
        self
    }
    /// The decrease divisor b: a loss removes `C/b` (1 ≤ b ≤ 1000).
    pub fn decrease_divisor(mut self, b: f64) -> Self {
        self.decrease_divisor = b;
        self
    }
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.window.validate()?;
        let name = "fully-coupled";
        check_range(name, "increase", self.increase, 1e-9, 10.0, "0 < a <= 10")?;
        check_range(
            name,
            "decrease_divisor",
            self.decrease_divisor,
            1.0,
            1000.0,
            "1 <= b <= 1000",
        )
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<FullyCoupled, ConfigError> {
        self.validate()?;
        Ok(FullyCoupled {
            cfg: *self,
            paths: Vec::new(),
        })
    }
}

/// The fully coupled algorithm over all paths of one connection.
#[derive(Clone, Debug)]
pub struct FullyCoupled {
    cfg: FullyCoupledConfig,
    paths: Vec<Option<Subflow>>,
}

fn total_window(slots: &[Option<Subflow>], paths: &Paths<'_>) -> u64 {
    usable_paths(slots, paths)
        .map(|(_, sf, _)| sf.effective_window())
        .fold(0, u64::saturating_add)
}

impl FullyCoupled {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &FullyCoupledConfig {
        &self.cfg
    }

    fn loss_ssthresh(&self, p: PathId, coupled: bool, paths: &Paths<'_>) -> Option<u64> {
        let sf = self.paths.get(p.0 as usize)?.as_ref()?;
        if !coupled {
            return Some(sf.reno_ssthresh());
        }
        let total = total_window(&self.paths, paths) as f64;
        let ss = fully_coupled_ssthresh(
            sf.cwnd as f64,
            total,
            self.cfg.decrease_divisor,
            sf.mss as f64,
        );
        Some(ss as u64)
    }

    /// Puts path `p` at a window and threshold.
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(sf)) = self.paths.get_mut(p) {
            sf.force(cwnd, ssthresh);
        }
    }
}

impl MultipathController for FullyCoupled {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        add_subflow(&mut self.paths, p, mss, &self.cfg.window);
    }

    fn on_path_removed(&mut self, p: PathId) {
        remove_subflow(&mut self.paths, p);
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let total = total_window(&self.paths, paths) as f64;
        let (abc, a) = (self.cfg.window.abc_segments(), self.cfg.increase);
        let per_event = self.cfg.counting == Counting::PerAckEvent;
        let Some(sf) = slot_mut(&mut self.paths, p) else {
            return;
        };
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let bytes = ack.bytes_acked.0;
        if sf.in_slow_start() {
            sf.slow_start(bytes, abc);
            return;
        }
        sf.use_rule(coupled);
        if !coupled {
            sf.reno_increase(bytes);
            return;
        }
        // Wischik et al., NSDI 2011 §2 (COUPLED): Δw_r = 1/w_total per ACK;
        // htsim FULLY_COUPLED: increase = a·acked·mss/C.
        let counted = sf.counted_bytes(bytes, per_event) as f64;
        let mss = sf.mss;
        sf.grow(fully_coupled_increase(a, total) * mss as f64 * counted, mss);
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, paths: &Paths<'_>) {
        let ss = self.loss_ssthresh(p, is_coupled(&self.paths, paths, p), paths);
        enter_recovery_at(&mut self.paths, p, ss);
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        end_recovery_at(&mut self.paths, p);
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        // RFC 5681 §3.1: a repeated timeout holds ssthresh.
        let ss = (!rto.repeated)
            .then(|| self.loss_ssthresh(p, coupled, paths))
            .flatten();
        timeout_at(&mut self.paths, p, ss);
    }

    fn window(&self, p: PathId) -> Bytes {
        window_of(&self.paths, p)
    }

    fn metrics(&self, p: PathId) -> Metrics {
        subflow_metrics(&self.paths, p)
    }
}

/// EWTCP's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EwtcpConfig {
    window: WindowConfig,
    counting: Counting,
    weight: Option<f64>,
}

impl Default for EwtcpConfig {
    /// a = 1/n², counting per packet.
    fn default() -> Self {
        EwtcpConfig {
            window: WindowConfig::default(),
            counting: Counting::PerPacket,
            weight: None,
        }
    }
}

impl EwtcpConfig {
    /// The defaults: a = 1/n² for n usable paths.
    pub fn new() -> Self {
        EwtcpConfig::default()
    }
    /// The shared slow start and initial window.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// Per-packet or per-ACK-event counting.
    pub fn counting(mut self, c: Counting) -> Self {
        self.counting = c;
        self
    }
    /// A fixed increase weight a instead of 1/n² (0 < a ≤ 1).
    pub fn weight(mut self, a: f64) -> Self {
        self.weight = Some(a);
        self
    }
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.window.validate()?;
        match self.weight {
            Some(a) if !(a > 0.0 && a <= 1.0) => Err(ConfigError::OutOfRange {
                algorithm: "ewtcp",
                parameter: "weight",
                value: a,
                allowed: "0 < a <= 1",
            }),
            _ => Ok(()),
        }
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<Ewtcp, ConfigError> {
        self.validate()?;
        Ok(Ewtcp {
            cfg: *self,
            paths: Vec::new(),
            weight: Vec::new(),
        })
    }
}

/// EWTCP over all paths of one connection.
#[derive(Clone, Debug)]
pub struct Ewtcp {
    cfg: EwtcpConfig,
    paths: Vec<Option<Subflow>>,
    /// The weight each path last used, for traces.
    weight: Vec<Option<f64>>,
}

impl Ewtcp {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &EwtcpConfig {
        &self.cfg
    }
}

impl MultipathController for Ewtcp {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        ensure_slot(&mut self.weight, i);
        self.paths[i] = Some(Subflow::new(mss, &self.cfg.window));
        self.weight[i] = None;
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(s) = self.paths.get_mut(p.0 as usize) {
            *s = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let n = usable_paths(&self.paths, paths).count();
        let a = self.cfg.weight.unwrap_or_else(|| ewtcp_weight(n));
        let abc = self.cfg.window.abc_segments();
        let per_event = self.cfg.counting == Counting::PerAckEvent;
        let Some(sf) = slot_mut(&mut self.paths, p) else {
            return;
        };
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let bytes = ack.bytes_acked.0;
        if sf.in_slow_start() {
            sf.slow_start(bytes, abc);
            return;
        }
        sf.use_rule(coupled);
        if !coupled {
            sf.reno_increase(bytes);
            return;
        }
        // Wischik et al. 2011 §2.1: w_r += a/w_r per ACK, a = 1/n².
        let counted = sf.counted_bytes(bytes, per_event) as f64;
        let (mss, cwnd) = (sf.mss, sf.cwnd.max(1) as f64);
        sf.grow(a * mss as f64 * counted / cwnd, mss);
        if let Some(w) = self.weight.get_mut(p.0 as usize) {
            *w = Some(a);
        }
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, _paths: &Paths<'_>) {
        if let Some(sf) = slot_mut(&mut self.paths, p) {
            let ss = sf.reno_ssthresh(); // EWTCP: w_r/2 per loss
            sf.enter_recovery(ss);
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        end_recovery_at(&mut self.paths, p);
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, _paths: &Paths<'_>) {
        if let Some(sf) = slot_mut(&mut self.paths, p) {
            let ss = (!rto.repeated).then(|| sf.reno_ssthresh());
            sf.timeout(ss);
        }
    }

    fn window(&self, p: PathId) -> Bytes {
        window_of(&self.paths, p)
    }

    fn metrics(&self, p: PathId) -> Metrics {
        let weight = self.weight.get(p.0 as usize).copied().flatten();
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, |sf| Metrics {
                weight,
                ..sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::multipath::test_support::{
        ack, add_paths, assert_close, assert_same_as_reno, loss, views, Op,
    };

    #[test]
    fn fully_coupled_loss_removes_half_the_total_from_the_lossy_path() {
        let vs = views(&[0.1, 0.1], 1000);
        let paths = Paths(&vs);
        let mut c = FullyCoupledConfig::new().build().unwrap();
        add_paths(&mut c, 2, 1000);
        c.force(0, 30_000, 30_000);
        c.force(1, 10_000, 10_000);
        c.on_congestion_event(PathId(0), &loss(), &paths);
        assert_eq!(c.window(PathId(0)), Bytes(10_000)); // 30 − 40/2
        c.on_congestion_event(PathId(1), &loss(), &paths);
        assert_eq!(c.window(PathId(1)), Bytes(1000)); // 10 − 20/2 = 0 → floor 1 MSS
    }

    #[test]
    fn fully_coupled_increase_is_one_packet_per_total_window() {
        assert_close(fully_coupled_increase(1.0, 40.0), 0.025, 1e-15, "a/C");
        let vs = views(&[0.1, 0.1], 1000);
        let paths = Paths(&vs);
        let mut c = FullyCoupledConfig::new().build().unwrap();
        add_paths(&mut c, 2, 1000);
        c.force(0, 30_000, 30_000);
        c.force(1, 10_000, 10_000);
        for _ in 0..40 {
            c.on_ack(PathId(1), &ack(1000), &paths);
        }
        assert_eq!(c.window(PathId(1)), Bytes(11_000));
    }

    #[test]
    fn ewtcp_weight_is_one_over_n_squared() {
        assert_eq!(ewtcp_weight(1), 1.0);
        assert_eq!(ewtcp_weight(2), 0.25);
        assert_eq!(ewtcp_weight(4), 1.0 / 16.0);
        let vs = views(&[0.1, 0.1], 1000);
        let paths = Paths(&vs);
        let mut c = EwtcpConfig::new().build().unwrap();
        add_paths(&mut c, 2, 1000);
        c.paths[0].as_mut().unwrap().force(10_000, 10_000);
        // a/w = 0.25/10 per ACK: 40 ACKs per segment.
        for _ in 0..39 {
            c.on_ack(PathId(0), &ack(1000), &paths);
        }
        assert_eq!(c.window(PathId(0)), Bytes(10_000));
        c.on_ack(PathId(0), &ack(1000), &paths);
        assert_eq!(c.window(PathId(0)), Bytes(11_000));
        assert_eq!(c.metrics(PathId(0)).weight, Some(0.25));
    }

    #[test]
    fn single_path_behaves_like_reno() {
        let mut ops = vec![
            Op::Ack {
                bytes: 1000,
                in_recovery: false,
            };
            200
        ];
        ops.insert(20, Op::Loss);
        ops.insert(21, Op::RecoveryEnd);
        ops.insert(100, Op::Rto { repeated: false });
        assert_same_as_reno(
            FullyCoupledConfig::new().build().unwrap(),
            1000,
            2,
            &ops,
            true,
        );
        assert_same_as_reno(EwtcpConfig::new().build().unwrap(), 1000, 2, &ops, false);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(FullyCoupledConfig::new().increase(0.0).build().is_err());
        assert!(FullyCoupledConfig::new()
            .increase(f64::NAN)
            .build()
            .is_err());
        assert!(FullyCoupledConfig::new()
            .decrease_divisor(0.5)
            .build()
            .is_err());
        let e = EwtcpConfig::new().weight(2.0).build().unwrap_err();
        assert!(e.to_string().contains("ewtcp: weight = 2"));
    }
}
