//! Balia, Balanced Linked Adaptation (Peng, Walid, Hwang, Low, "Multipath TCP: Analysis,
//! Design and Implementation", IEEE/ACM ToN 2016; draft-walid-mptcp-congestion-control-04),
//! in two arithmetics (`reference/ALGORITHMS.md` §3):
//!
//! * `spec` — with `x_k = w_k/rtt_k`, `m = max_k x_k`, `X = Σ_k x_k`, `α_r = m/x_r`: per
//!   acknowledged packet on r, `Δw_r = x_r/(rtt_r·X²)·(1+α_r)/2·(4+α_r)/5`
//!   `= (x_r+m)(4x_r+m)/(10·w_r·X²)`; per loss, `Δw_r = −(w_r/2)·min(α_r, 1.5)`, with
//!   ssthresh ≥ 2·MSS.
//! * `linux` — `mptcp_balia.c`: rates `⌊mss_r·w_k·8·10^6/srtt_us_k⌋` (the acking path's MSS
//!   for every k) scaled down by 2^5 while the largest exceeds 2^25; `ai` ACK events per
//!   packet (`+1` per `ai + 1` events), `md = ⌊⌊w/2⌋·min(α_int·1024, 1536)/1024⌋` packets with
//!   the integer `α_int = ⌊max_rate/rate_r⌋`; ssthresh `max(w − md, 1)`. `ai` and `md` are
//!   cached per path and refreshed after slow-start ACKs, after each increment, on a timeout
//!   and at the end of recovery — not at the loss itself (§3.3 item 4).
//!
//! Slow start is NewReno's; with one usable path the controller is NewReno, byte for byte.
//!
//! Invariants: the per-ACK increase never exceeds the Reno increase on the same path
//! (`ai ≥ w`, `(x_r+m)(4x_r+m) ≤ 10·X²`); a loss removes between `w/2` and `3w/4`.

use crate::cc::multipath::config::{
    modal_config, Algorithm, Arithmetic, ConfigError, Counting, WindowConfig,
};
use crate::cc::multipath::subflow::{
    ensure_slot, is_coupled, kernel_sample, sample, usable_paths, Subflow,
};
use crate::cc::multipath::{KernelSample, MultipathController, PathSample, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

fn rates(paths: &[PathSample]) -> impl Iterator<Item = f64> + '_ {
    paths.iter().map(|s| s.window / s.rtt)
}

/// `α_r = max_k x_k / x_r`, at least 1. `None` for a missing path or a zero rate.
pub fn alpha(paths: &[PathSample], r: usize) -> Option<f64> {
    let p = paths.get(r)?;
    let x = p.window / p.rtt;
    let m = rates(paths).fold(f64::MIN, f64::max);
    let a = m / x; // Peng et al.: α_r = max_k x_k / x_r
    (a.is_finite() && x > 0.0).then_some(a)
}

/// Balia's increase per acknowledged packet on path `r`,
/// `(x_r+m)(4x_r+m)/(10·w_r·X²)`, in packets when windows are in packets.
pub fn increase_per_ack(paths: &[PathSample], r: usize) -> f64 {
    let Some(p) = paths.get(r) else {
        return 0.0;
    };
    let x = p.window / p.rtt;
    let m = rates(paths).fold(f64::MIN, f64::max);
    let total: f64 = rates(paths).sum();
    let inc = (x + m) * (4.0 * x + m) / (10.0 * p.window * total * total); // ALGORITHMS.md §3.1
    if inc.is_finite() {
        inc
    } else {
        0.0
    }
}

/// The window a loss removes, `(w/2)·min(α, 1.5)` (Peng et al.).
pub fn decrease(window: f64, alpha: f64) -> f64 {
    window / 2.0 * alpha.min(1.5)
}

/// `mptcp_balia_recalc_ai` for one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelBalia {
    /// `⌊max_rate/rate_r⌋`, the integer α the decrease uses.
    pub alpha: u64,
    /// How many times the rates were shifted right by 5 bits.
    pub scale_downs: u32,
    /// ACK events per packet of growth (before the counter's "+1").
    pub ai: u64,
    /// Packets a loss removes.
    pub md: u64,
}

const RATE_SCALE_LIMIT: u32 = 25;
const SCALE_NUM: u32 = 5;
const ALPHA_SCALE: u32 = 10;

/// `mptcp_balia_recalc_ai` (ALGORITHMS.md §3.2) for path `r`, whose MSS `mss` is used for
/// every path's rate. 128-bit arithmetic. `None` for a missing path.
pub fn kernel_recalc(paths: &[KernelSample], r: usize, mss: u64) -> Option<KernelBalia> {
    let me = paths.get(r)?;
    let rate_of = |s: &KernelSample| -> u128 {
        (mss as u128)
            .saturating_mul(s.cwnd as u128)
            .saturating_mul(8_000_000)
            / s.srtt_us.max(1) as u128
    };
    let mut rate = rate_of(me);
    let mut max_rate = paths.iter().map(rate_of).max().unwrap_or(0);
    let mut sum_rate: u128 = paths.iter().map(rate_of).fold(0, u128::saturating_add);
    let alpha = u64::try_from(max_rate / rate.max(1)).unwrap_or(u64::MAX);
    // Keep the rates below 2^25 so the squares fit the kernel's 64 bits.
    let mut nsd = 0u32;
    while max_rate > 1 << RATE_SCALE_LIMIT {
        max_rate >>= SCALE_NUM;
        nsd += 1;
    }
    if nsd > 0 {
        let shift = SCALE_NUM.saturating_mul(nsd);
        let down = |x: u128| x.checked_shr(shift).unwrap_or(0);
        sum_rate = paths
            .iter()
            .map(|s| down(rate_of(s)))
            .fold(0, u128::saturating_add);
        rate = down(rate);
    }
    let sum_sq = sum_rate.saturating_mul(sum_rate);
    let w = me.cwnd as u128;
    let ai = sum_sq
        .saturating_mul(10)
        .checked_div(rate.saturating_add(max_rate))
        .unwrap_or(0);
    let ai = ai
        .saturating_mul(w)
        .checked_div(rate.saturating_mul(4).saturating_add(max_rate))
        .unwrap_or(0);
    let ai = match u64::try_from(ai).unwrap_or(u64::MAX) {
        0 => me.cwnd,
        a => a,
    };
    let factor = (alpha.saturating_mul(1 << ALPHA_SCALE)).min((3 << ALPHA_SCALE) >> 1);
    let md = (((me.cwnd >> 1) as u128 * factor as u128) >> ALPHA_SCALE) as u64;
    Some(KernelBalia {
        alpha,
        scale_downs: nsd,
        ai,
        md,
    })
}

/// The kernel's threshold after a loss, `max(w − md, 1)` packets.
pub fn kernel_ssthresh(cwnd: u64, md: u64) -> u64 {
    cwnd.saturating_sub(md).max(1)
}

/// Balia's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BaliaConfig {
    window: WindowConfig,
    arithmetic: Arithmetic,
    counting: Option<Counting>,
}

modal_config!(BaliaConfig, Algorithm::Balia);

impl BaliaConfig {
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<Balia, ConfigError> {
        self.validate()?;
        Ok(Balia {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
            kernel_samples: Vec::new(),
        })
    }
}

#[derive(Clone, Debug)]
struct BaliaPath {
    sf: Subflow,
    /// The kernel's cached `ai`/`md` (per subflow in `mptcp_balia.c`).
    kernel: Option<KernelBalia>,
    /// The last α_r, for traces.
    alpha: Option<f64>,
}

/// Balia over all paths of one connection.
#[derive(Clone, Debug)]
pub struct Balia {
    cfg: BaliaConfig,
    paths: Vec<Option<BaliaPath>>,
    samples: Vec<PathSample>,
    kernel_samples: Vec<KernelSample>,
}

impl Balia {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &BaliaConfig {
        &self.cfg
    }

    fn linux(&self) -> bool {
        self.cfg.arithmetic == Arithmetic::Linux
    }

    fn slot(&mut self, p: PathId) -> Option<&mut BaliaPath> {
        self.paths.get_mut(p.0 as usize).and_then(Option::as_mut)
    }

    /// Real-valued samples of the usable paths (effective windows, as htsim sums them); the
    /// position of `p` among them.
    fn collect(&mut self, p: PathId, paths: &Paths<'_>) -> Option<usize> {
        self.samples.clear();
        let mut me = None;
        for (i, st, v) in usable_paths(&self.paths, paths) {
            if i == p.0 as usize {
                me = Some(self.samples.len());
            }
            self.samples.push(sample(st.sf.effective_window(), v));
        }
        me
    }

    /// `mptcp_balia_recalc_ai` for path `p` over the usable paths' raw windows.
    fn recalc(&mut self, p: PathId, paths: &Paths<'_>) -> Option<KernelBalia> {
        let mss = self.paths.get(p.0 as usize)?.as_ref()?.sf.mss;
        self.kernel_samples.clear();
        let mut me = None;
        for (i, st, v) in usable_paths(&self.paths, paths) {
            if i == p.0 as usize {
                me = Some(self.kernel_samples.len());
            }
            self.kernel_samples
                .push(kernel_sample(st.sf.cwnd, st.sf.mss, v));
        }
        let k = kernel_recalc(&self.kernel_samples, me?, mss)?;
        let st = self.slot(p)?;
        st.kernel = Some(k);
        st.alpha = Some(k.alpha as f64);
        Some(k)
    }

    fn spec_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        let Some(r) = self.collect(p, paths) else {
            return;
        };
        let inc = increase_per_ack(&self.samples, r);
        let a = alpha(&self.samples, r);
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let Some(st) = self.slot(p) else {
            return;
        };
        st.alpha = a;
        let counted = st.sf.counted_bytes(bytes, per_event) as f64;
        let mss = st.sf.mss;
        st.sf.grow(inc * mss as f64 * counted, mss);
    }

    fn kernel_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let (mut events, cached) = match self.slot(p) {
            Some(st) => (st.sf.events(bytes, per_event), st.kernel),
            None => return,
        };
        let mut k = match cached {
            Some(k) => k,
            None => match self.recalc(p, paths) {
                Some(k) => k,
                None => return,
            },
        };
        while events > 0 {
            let Some(st) = self.slot(p) else {
                return;
            };
            // mptcp_balia_cong_avoid: snd_cwnd_cnt >= ai → cwnd++, recalc.
            if !st.sf.kernel_advance(&mut events, k.ai) {
                break;
            }
            match self.recalc(p, paths) {
                Some(next) => k = next,
                None => return,
            }
        }
    }

    /// The threshold after a loss on a coupled path, in bytes.
    fn coupled_ssthresh(&mut self, p: PathId, paths: &Paths<'_>) -> Option<u64> {
        if self.linux() {
            // The md of the last recalculation, not one taken at the loss (§3.3 item 4).
            let k = match self.paths.get(p.0 as usize)?.as_ref()?.kernel {
                Some(k) => k,
                None => self.recalc(p, paths)?,
            };
            let sf = &self.paths.get(p.0 as usize)?.as_ref()?.sf;
            Some(kernel_ssthresh(sf.packets(), k.md).saturating_mul(sf.mss))
        } else {
            let r = self.collect(p, paths)?;
            let a = alpha(&self.samples, r)?;
            let st = self.slot(p)?;
            st.alpha = Some(a);
            let cwnd = st.sf.cwnd as f64;
            // Peng et al.: w_r −= (w_r/2)·min(α_r, 1.5); RFC 5681's floor of 2·MSS.
            let left = (cwnd - decrease(cwnd, a)).max(0.0) as u64;
            Some(left.max(st.sf.mss.saturating_mul(2)))
        }
    }

    /// Puts path `p` at a window and threshold (tests reproduce a vector's state).
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, ssthresh);
            st.kernel = None;
        }
    }

    /// Path `p`'s window state and cached kernel values.
    #[cfg(test)]
    pub(crate) fn subflow(&self, p: usize) -> Option<(&Subflow, Option<KernelBalia>)> {
        let st = self.paths.get(p)?.as_ref()?;
        Some((&st.sf, st.kernel))
    }
}

impl MultipathController for Balia {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        let i = p.0 as usize;
        ensure_slot(&mut self.paths, i);
        self.paths[i] = Some(BaliaPath {
            sf: Subflow::new(mss, &self.cfg.window),
            kernel: None,
            alpha: None,
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
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        if st.sf.in_slow_start() {
            st.sf.slow_start(bytes, abc);
            if coupled && linux {
                self.recalc(p, paths); // kernel: recalc on every slow-start ACK
            }
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
        let ss = if coupled {
            self.coupled_ssthresh(p, paths)
        } else {
            None
        };
        if let Some(st) = self.slot(p) {
            let ss = ss.unwrap_or_else(|| st.sf.reno_ssthresh());
            st.sf.enter_recovery(ss);
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        if let Some(st) = self.slot(p) {
            st.sf.in_recovery = false;
        }
        if coupled && self.linux() {
            self.recalc(p, paths); // CA_EVENT_COMPLETE_CWR
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let ss = match (rto.repeated, coupled) {
            (true, _) => None,
            (false, true) => self.coupled_ssthresh(p, paths),
            (false, false) => self
                .paths
                .get(p.0 as usize)
                .and_then(Option::as_ref)
                .map(|st| st.sf.reno_ssthresh()),
        };
        if coupled && self.linux() {
            self.recalc(p, paths); // CA_EVENT_LOSS, before cwnd drops to one packet
        }
        if let Some(st) = self.slot(p) {
            st.sf.timeout(ss);
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
                alpha: st.alpha,
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
