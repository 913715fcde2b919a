//! The Kelly–Voice "Coupled" algorithm (Kelly & Voice, "Stability of end-to-end algorithms
//! for joint routing and rate control", ACM SIGCOMM CCR 35(2), 2005; Han, Shakkottai, Hollot,
//! Srikant, Towsley, "Overlay TCP for multi-path routing and congestion control", IMA Workshop
//! on Measurements and Modeling of the Internet, 2004): the reference point OLIA and Balia are
//! built from (draft-walid-mptcp-congestion-control-04 §1, "the Coupled algorithm … [KELLY05],
//! [HAN04]"; Khalili et al., CoNEXT 2012). In two arithmetics:
//!
//! * `spec` — per acknowledged packet on path r in congestion avoidance,
//!   `Δw_r = (w_r/rtt_r²)/(Σ_k w_k/rtt_k)²`; on a loss on r, `w_r ← w_r/2`. This is OLIA with
//!   ε ≡ 0 and Balia with α_r ≡ 1. With equal RTTs the increase is `w_r/W²` per packet,
//!   `w_r²/W²` per round trip: quadratic in the path's own share, so a path whose window was
//!   pushed down regains it slowly.
//! * `linux` — the first term of `mptcp_olia.c` with ε = 0 (what a kernel `pw_kv` would
//!   compute): `⌊2^10·w_r·2^20/(1 + Σ_k ⌊w_k·2^10·srtt_r/srtt_k⌋)²⌋` in 2^−10 packet per ACK
//!   event on OLIA's counter (one packet at 1023, residual lost), windows in whole packets, the
//!   kernel's `max(⌊w/2⌋, 2)` on a loss.
//!
//! It is not the `fully-coupled` algorithm (Wischik et al., NSDI 2011; htsim
//! `FULLY_COUPLED`), whose increase `1/W` per packet is linear in the path's share.
//!
//! Sums run over the effective windows (ssthresh for a path in recovery). Slow start, loss
//! recovery and timeouts are NewReno's; with one usable path the controller is NewReno, byte
//! for byte.
//!
//! Invariants: the per-packet increase on r never exceeds Reno's `1/w_r` (since
//! `w_r/rtt_r ≤ Σ_k w_k/rtt_k`); windows never shrink in congestion avoidance; ssthresh ≥ 2·MSS.

use crate::cc::multipath::config::{
    modal_config, Algorithm, Arithmetic, ConfigError, Counting, WindowConfig,
};
use crate::cc::multipath::olia::{kernel_counter_delta, KernelEpsilon, KernelOliaSample};
use crate::cc::multipath::subflow::{
    add_subflow, end_recovery_at, enter_recovery_at, is_coupled, remove_subflow, sample, slot_mut,
    srtt_us, subflow_metrics, timeout_at, usable_paths, window_of, Subflow,
};
use crate::cc::multipath::{MultipathController, PathSample, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

/// The increase per acknowledged packet on path `r` (in packets when windows are in packets):
/// `(w_r/rtt_r²)/(Σ_k w_k/rtt_k)²`. Zero for a missing path or a degenerate sample.
pub fn increase_per_ack(paths: &[PathSample], r: usize) -> f64 {
    let Some(p) = paths.get(r) else {
        return 0.0;
    };
    let rate_sum: f64 = paths.iter().map(|s| s.window / s.rtt).sum();
    if !(rate_sum > 0.0 && p.window > 0.0 && p.rtt > 0.0) {
        return 0.0;
    }
    // Kelly & Voice 2005 (Han et al. 2004): Δw_r = (w_r/rtt_r²) / (Σ_k w_k/rtt_k)² per ACK.
    let inc = (p.window / (p.rtt * p.rtt)) / (rate_sum * rate_sum);
    if inc.is_finite() {
        inc
    } else {
        0.0
    }
}

/// `mptcp_olia.c`'s counter step with ε = 0: the change of the counter (2^−10 packet) one ACK
/// event on path `r` makes, `⌊2^30·w_r/(1 + Σ_k ⌊w_k·2^10·srtt_r/srtt_k⌋)²⌋`.
pub fn kernel_counter_delta_no_epsilon(paths: &[KernelOliaSample], r: usize) -> i64 {
    const NO_EPSILON: KernelEpsilon = KernelEpsilon { num: 0, den: 1 };
    kernel_counter_delta(paths, r, NO_EPSILON)
}

/// The Kelly–Voice algorithm's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KellyVoiceConfig {
    window: WindowConfig,
    arithmetic: Arithmetic,
    counting: Option<Counting>,
}

modal_config!(KellyVoiceConfig, Algorithm::KellyVoice);

impl KellyVoiceConfig {
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<KellyVoice, ConfigError> {
        self.validate()?;
        Ok(KellyVoice {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
            kernel_samples: Vec::new(),
        })
    }
}

/// The Kelly–Voice algorithm over all paths of one connection.
#[derive(Clone, Debug)]
pub struct KellyVoice {
    cfg: KellyVoiceConfig,
    paths: Vec<Option<Subflow>>,
    /// Reused sample buffers, so an ACK allocates nothing.
    samples: Vec<PathSample>,
    kernel_samples: Vec<KernelOliaSample>,
}

impl KellyVoice {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &KellyVoiceConfig {
        &self.cfg
    }

    fn linux(&self) -> bool {
        self.cfg.arithmetic == Arithmetic::Linux
    }

    /// Fills the samples of the usable paths (effective windows) for the arithmetic in force;
    /// returns the position of `p` among them.
    fn collect(&mut self, p: PathId, paths: &Paths<'_>) -> Option<usize> {
        let linux = self.linux();
        self.samples.clear();
        self.kernel_samples.clear();
        let mut me = None;
        for (n, (i, sf, v)) in usable_paths(&self.paths, paths).enumerate() {
            if i == p.0 as usize {
                me = Some(n);
            }
            let w = sf.effective_window(); // mptcp_get_crt_cwnd: ssthresh while in recovery
            if linux {
                self.kernel_samples.push(KernelOliaSample {
                    cwnd: (w / sf.mss).max(1),
                    srtt_us: srtt_us(v),
                    loss_interval: 0, // ε = 0: the inter-loss distance is never read
                });
            } else {
                self.samples.push(sample(w, v));
            }
        }
        me
    }

    fn spec_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        let Some(r) = self.collect(p, paths) else {
            return;
        };
        let inc = increase_per_ack(&self.samples, r);
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let Some(sf) = slot_mut(&mut self.paths, p) else {
            return;
        };
        let counted = sf.counted_bytes(bytes, per_event) as f64;
        let mss = sf.mss;
        // Per packet: Δw_r (in 1/bytes here, times MSS per packet).
        sf.grow(inc * mss as f64 * counted, mss);
    }

    fn kernel_increase(&mut self, p: PathId, bytes: u64, paths: &Paths<'_>) {
        let per_event = self.cfg.counting_mode() == Counting::PerAckEvent;
        let mut events = match slot_mut(&mut self.paths, p) {
            Some(sf) => sf.events(bytes, per_event),
            None => return,
        };
        while events > 0 {
            let Some(r) = self.collect(p, paths) else {
                return;
            };
            let d = kernel_counter_delta_no_epsilon(&self.kernel_samples, r);
            let Some(sf) = slot_mut(&mut self.paths, p) else {
                return;
            };
            if !sf.olia_advance(&mut events, d) {
                break;
            }
        }
    }

    fn loss_ssthresh(&self, p: PathId, coupled: bool) -> Option<u64> {
        let sf = self.paths.get(p.0 as usize)?.as_ref()?;
        Some(if coupled && self.linux() {
            sf.kernel_reno_ssthresh() // tcp_reno_ssthresh, as mptcp_olia.c
        } else {
            // Kelly & Voice 2005: w_r ← w_r/2, with RFC 5681's floor of 2·MSS.
            sf.reno_ssthresh()
        })
    }

    /// Puts path `p` at a window and threshold (tests reproduce a vector's state).
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(sf)) = self.paths.get_mut(p) {
            sf.force(cwnd, ssthresh);
        }
    }

    /// Path `p`'s window state (tests read the growth credit and counter).
    #[cfg(test)]
    pub(crate) fn subflow(&self, p: usize) -> Option<&Subflow> {
        self.paths.get(p)?.as_ref()
    }
}

impl MultipathController for KellyVoice {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        add_subflow(&mut self.paths, p, mss, &self.cfg.window);
    }

    fn on_path_removed(&mut self, p: PathId) {
        remove_subflow(&mut self.paths, p);
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let linux = self.linux();
        let abc = self.cfg.window.abc_segments();
        let bytes = ack.bytes_acked.0;
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
        if sf.in_slow_start() {
            sf.slow_start(bytes, abc);
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
        let ss = self.loss_ssthresh(p, is_coupled(&self.paths, paths, p));
        enter_recovery_at(&mut self.paths, p, ss);
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        end_recovery_at(&mut self.paths, p);
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        // RFC 5681 §3.1: a repeated timeout holds ssthresh.
        let ss = (!rto.repeated)
            .then(|| self.loss_ssthresh(p, coupled))
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

#[cfg(test)]
mod tests;
