//! CMT/RP-MP v2 and the "MPTCP-like" LIA in bytes, from the SCTP concurrent-multipath
//! reference code (Dreibholz, Becke, Adhari, Rathgeb, ConTEL 2011; FreeBSD/usrsctp
//! `netinet/sctp_cc_functions.c`, modes `SCTP_CMT_RPV2` and `SCTP_CMT_MPTCP`), real-valued as
//! `reference/ALGORITHMS.md` §10 recommends (the C code's integer rate sums collapse to
//! zero). Windows and increments are in bytes; the path MSS plays the SCTP MTU.
//!
//! **RP-MP v2**, with rate share `i_P = (c_P/srtt_P) / Σ_i (c_i/srtt_i)`:
//! * slow start: `+max(min(acked·i_P, MTU·L·i_P), 1)` bytes per ACK (or NewReno's, see
//!   [`SlowStart`]);
//! * congestion avoidance: `+max(MTU·i_P, 1)` bytes per window of acknowledged bytes;
//! * fast retransmit: `ssthresh = max(4·MTU·i_P, c_P − C/2 when c_P > C/2, MTU)` (the code's
//!   "short version"), or the paper's `c_P·(1 − max(½, ½/i_P))` floored at one MTU
//!   ([`RpMpDecrease`]); `cwnd = ssthresh`;
//! * timeout: `Δ = ½·Σ_i c_i·srtt_P/srtt_i`, `ssthresh = C − Δ` (one MTU if `Δ ≥ C`), then the
//!   same `C/2` rule and floor; `cwnd = 1 MTU`.
//!
//! **MPTCP in bytes**, with `α* = max_i(w_i/rtt_i²)/(Σ_i w_i/rtt_i)²` (w in packets):
//! * congestion avoidance: `+min(α*·c_P, MTU)` bytes per window acknowledged (LIA's per-RTT
//!   increase with the TCP cap);
//! * slow start: `+min(acked·α*, MTU·L·α*, acked, MTU)` (coupled, unlike RFC 6356);
//! * fast retransmit: `max(c/2, 2·MTU)`; timeout `max(c/2, 4·MTU)`, `cwnd = 1 MTU`.
//!
//! With one usable path both are NewReno, byte for byte. Invariants: cwnd ≥ 1·MSS; RP-MP
//! ssthresh ≥ 1·MSS; MPTCP-in-bytes ssthresh ≥ 2·MSS.

use crate::cc::multipath::config::{ConfigError, WindowConfig};
use crate::cc::multipath::subflow::{ensure_slot, is_coupled, rtt_secs, usable_paths, Subflow};
use crate::cc::multipath::{MultipathController, PathSample, Paths};
use crate::cc::{Ack, CongestionEvent, Metrics, PathId, Rto};
use crate::units::{Bytes, Instant};

/// How slow start grows when more than one path is usable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SlowStart {
    /// Scaled by the path's share (RP-MP) or by α* (MPTCP in bytes), as the reference code
    /// does. The default.
    #[default]
    Coupled,
    /// NewReno's uncoupled slow start, as RFC 6356 and the other controllers here.
    Uncoupled,
}

/// RP-MP v2's decrease on fast retransmit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RpMpDecrease {
    /// The usrsctp code's "short version": `max(4·MTU·i_P, c_P − C/2, MTU)`. The default.
    #[default]
    Reference,
    /// The paper's `d_P = max(½, ½·Q/(c_P/RTT_P))`, new window `max(c_P·(1 − d_P), MTU)`.
    Paper,
}

fn rate_sum(paths: &[PathSample]) -> f64 {
    paths.iter().map(|s| s.window / s.rtt).sum()
}

/// RP-MP v2's rate share of path `p`, `i_P = (c_P/RTT_P) / Σ_i (c_i/RTT_i)`.
pub fn share(paths: &[PathSample], p: usize) -> Option<f64> {
    let s = paths.get(p)?;
    let i = (s.window / s.rtt) / rate_sum(paths);
    (i.is_finite() && i >= 0.0).then_some(i)
}

/// RP-MP v2's congestion-avoidance increase per window acknowledged, `max(MTU·i_P, 1)` bytes.
pub fn ca_increase(mtu: f64, share: f64) -> f64 {
    (mtu * share).max(1.0)
}

/// RP-MP v2's slow-start increase per ACK, `max(min(acked·i_P, MTU·L·i_P), 1)` bytes.
pub fn ss_increase(acked: f64, mtu: f64, abc_limit: f64, share: f64) -> f64 {
    (acked * share).min(mtu * abc_limit * share).max(1.0)
}

/// Applies the `C/2` rule and the MTU floor shared by RP-MP's decreases: if `c_P > C/2` and
/// `ssthresh < c_P − C/2`, then `c_P − C/2`; at least one MTU.
fn half_total_rule(ssthresh: f64, own: f64, total: f64, mtu: f64) -> f64 {
    let mut s = ssthresh;
    if own > total / 2.0 && s < own - total / 2.0 {
        s = own - total / 2.0;
    }
    s.max(mtu)
}

/// RP-MP v2's threshold after a fast retransmit on path `p` (the code's form), in bytes when
/// the windows are.
pub fn fr_ssthresh(paths: &[PathSample], p: usize, mtu: f64) -> Option<f64> {
    let i = share(paths, p)?;
    let total: f64 = paths.iter().map(|s| s.window).sum();
    // usrsctp SCTP_CMT_RPV2: ssthresh = 4·MTU·i_P, then the C/2 rule, floor 1 MTU.
    Some(half_total_rule(4.0 * mtu * i, paths[p].window, total, mtu))
}

/// The paper's decrease on path `p`: the amount `max(½, ½/i_P)·c_P` and the new window
/// `max(c_P − amount, MTU)`.
pub fn paper_decrease(paths: &[PathSample], p: usize, mtu: f64) -> Option<(f64, f64)> {
    let i = share(paths, p)?;
    let c = paths[p].window;
    let amount = 0.5f64.max(0.5 / i) * c; // d_P = max{½, ½·Q/(c_P/RTT_P)}
    Some((amount, (c - amount).max(mtu)))
}

/// RP-MP v2's threshold after a timeout on path `p`: `C − ½·Σ_i c_i·RTT_P/RTT_i` (one MTU if
/// that is not positive), then the `C/2` rule and the MTU floor.
pub fn rto_ssthresh(paths: &[PathSample], p: usize, mtu: f64) -> Option<f64> {
    let me = paths.get(p)?;
    let total: f64 = paths.iter().map(|s| s.window).sum();
    let delta = 0.5 * rate_sum(paths) * me.rtt;
    let s = if delta >= total { mtu } else { total - delta };
    Some(half_total_rule(s, me.window, total, mtu))
}

/// The MPTCP-like α* = `max_i(w_i/rtt_i²)/(Σ_i w_i/rtt_i)²` with windows in packets (LIA's
/// `α/W`, in 1/packet).
pub fn mptcp_alpha(paths: &[PathSample]) -> Option<f64> {
    let best = paths
        .iter()
        .map(|s| s.window / (s.rtt * s.rtt))
        .fold(f64::MIN, f64::max);
    let sum = rate_sum(paths);
    let a = best / (sum * sum);
    (a.is_finite() && a > 0.0).then_some(a)
}

/// The MPTCP-like congestion-avoidance increase per window acknowledged,
/// `min(α*·c_P, MTU)` bytes.
pub fn mptcp_ca_increase(alpha: f64, cwnd: f64, mtu: f64) -> f64 {
    (alpha * cwnd).min(mtu)
}

/// The MPTCP-like slow-start increase per ACK, `min(acked·α*, MTU·L·α*, acked, MTU)` bytes.
pub fn mptcp_ss_increase(acked: f64, alpha: f64, mtu: f64, abc_limit: f64) -> f64 {
    (acked * alpha)
        .min(mtu * abc_limit * alpha)
        .min(acked)
        .min(mtu)
}

/// Parameters of RP-MP v2.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RpMpConfig {
    window: WindowConfig,
    slow_start: SlowStart,
    decrease: RpMpDecrease,
}

impl RpMpConfig {
    /// Coupled slow start and the reference code's decrease.
    pub fn new() -> Self {
        RpMpConfig::default()
    }
    /// The initial window and RFC 3465's L (which the coupled slow start also caps with).
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// Coupled (reference) or NewReno slow start.
    pub fn slow_start(mut self, s: SlowStart) -> Self {
        self.slow_start = s;
        self
    }
    /// The reference code's or the paper's decrease.
    pub fn decrease(mut self, d: RpMpDecrease) -> Self {
        self.decrease = d;
        self
    }
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.window.validate()
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<RpMpV2, ConfigError> {
        self.validate()?;
        Ok(RpMpV2 {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
        })
    }
}

#[derive(Clone, Debug)]
struct SharePath {
    sf: Subflow,
    /// The last share (RP-MP) or α (MPTCP in bytes), for traces.
    state: Option<f64>,
}

/// Fills `out` with the usable paths' (effective window in bytes, RTT) samples; returns the
/// position of `p`.
fn collect(
    slots: &[Option<SharePath>],
    paths: &Paths<'_>,
    p: PathId,
    packets: bool,
    out: &mut Vec<PathSample>,
) -> Option<usize> {
    out.clear();
    let mut me = None;
    for (i, st, v) in usable_paths(slots, paths) {
        if i == p.0 as usize {
            me = Some(out.len());
        }
        let w = st.sf.effective_window() as f64;
        out.push(PathSample {
            window: if packets { w / st.sf.mss as f64 } else { w },
            rtt: rtt_secs(v),
        });
    }
    me
}

fn slot_mut(slots: &mut [Option<SharePath>], p: PathId) -> Option<&mut SharePath> {
    slots.get_mut(p.0 as usize).and_then(Option::as_mut)
}

fn add_path(slots: &mut Vec<Option<SharePath>>, p: PathId, mss: Bytes, w: &WindowConfig) {
    ensure_slot(slots, p.0 as usize);
    slots[p.0 as usize] = Some(SharePath {
        sf: Subflow::new(mss, w),
        state: None,
    });
}

fn window_of(slots: &[Option<SharePath>], p: PathId) -> Bytes {
    slots
        .get(p.0 as usize)
        .and_then(Option::as_ref)
        .map_or(Bytes::ZERO, |st| Bytes(st.sf.cwnd))
}

/// RP-MP v2 over all paths of one connection.
#[derive(Clone, Debug)]
pub struct RpMpV2 {
    cfg: RpMpConfig,
    paths: Vec<Option<SharePath>>,
    samples: Vec<PathSample>,
}

impl RpMpV2 {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &RpMpConfig {
        &self.cfg
    }

    fn coupled_ssthresh(&mut self, p: PathId, paths: &Paths<'_>, timeout: bool) -> Option<u64> {
        let r = collect(&self.paths, paths, p, false, &mut self.samples)?;
        let mtu = self.paths.get(p.0 as usize)?.as_ref()?.sf.mss as f64;
        let s = if timeout {
            rto_ssthresh(&self.samples, r, mtu)?
        } else {
            match self.cfg.decrease {
                RpMpDecrease::Reference => fr_ssthresh(&self.samples, r, mtu)?,
                RpMpDecrease::Paper => paper_decrease(&self.samples, r, mtu)?.1,
            }
        };
        Some(s as u64)
    }

    /// Puts path `p` at a window and threshold.
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, ssthresh);
        }
    }
}

impl MultipathController for RpMpV2 {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        add_path(&mut self.paths, p, mss, &self.cfg.window);
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(s) = self.paths.get_mut(p.0 as usize) {
            *s = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let r = collect(&self.paths, paths, p, false, &mut self.samples);
        let i = r.and_then(|r| share(&self.samples, r));
        let abc = self.cfg.window.abc_segments();
        let coupled_ss = self.cfg.slow_start == SlowStart::Coupled;
        let Some(st) = slot_mut(&mut self.paths, p) else {
            return;
        };
        if ack.in_recovery {
            return; // no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let bytes = ack.bytes_acked.0;
        let mss = st.sf.mss as f64;
        match (coupled, i) {
            (true, Some(i)) => {
                st.state = Some(i);
                if st.sf.in_slow_start() {
                    if coupled_ss {
                        // SCTP_CMT_RPV2 slow start: min(acked·i_P, MTU·L·i_P), at least 1.
                        st.sf
                            .add_bytes(ss_increase(bytes as f64, mss, abc as f64, i));
                    } else {
                        st.sf.slow_start(bytes, abc);
                    }
                } else {
                    st.sf.use_rule(true);
                    // SCTP_CMT_RPV2 congestion avoidance: MTU·i_P per window acknowledged.
                    st.sf.window_counted_increase(bytes, ca_increase(mss, i));
                }
            }
            _ => {
                if st.sf.in_slow_start() {
                    st.sf.slow_start(bytes, abc);
                } else {
                    st.sf.use_rule(false);
                    st.sf.reno_increase(bytes);
                }
            }
        }
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let ss = if coupled {
            self.coupled_ssthresh(p, paths, false)
        } else {
            None
        };
        if let Some(st) = slot_mut(&mut self.paths, p) {
            let ss = ss.unwrap_or_else(|| st.sf.reno_ssthresh());
            st.sf.enter_recovery(ss);
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(st) = slot_mut(&mut self.paths, p) {
            st.sf.in_recovery = false;
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let coupled_ss = if coupled && !rto.repeated {
            self.coupled_ssthresh(p, paths, true)
        } else {
            None
        };
        if let Some(st) = slot_mut(&mut self.paths, p) {
            // RFC 5681 §3.1: a repeated timeout holds ssthresh.
            let ss = (!rto.repeated).then(|| coupled_ss.unwrap_or_else(|| st.sf.reno_ssthresh()));
            st.sf.timeout(ss);
        }
    }

    fn window(&self, p: PathId) -> Bytes {
        window_of(&self.paths, p)
    }

    fn metrics(&self, p: PathId) -> Metrics {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, |st| Metrics {
                weight: st.state,
                ..st.sf.metrics()
            })
    }
}

/// Parameters of the MPTCP-in-bytes variant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MptcpBytesConfig {
    window: WindowConfig,
    slow_start: SlowStart,
}

impl MptcpBytesConfig {
    /// Coupled slow start, as the reference code.
    pub fn new() -> Self {
        MptcpBytesConfig::default()
    }
    /// The initial window and RFC 3465's L.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.window = w;
        self
    }
    /// Coupled (reference) or NewReno slow start.
    pub fn slow_start(mut self, s: SlowStart) -> Self {
        self.slow_start = s;
        self
    }
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.window.validate()
    }
    /// A controller with no paths yet.
    pub fn build(&self) -> Result<MptcpBytes, ConfigError> {
        self.validate()?;
        Ok(MptcpBytes {
            cfg: *self,
            paths: Vec::new(),
            samples: Vec::new(),
        })
    }
}

/// The SCTP CMT "MPTCP-like" algorithm over all paths of one connection.
#[derive(Clone, Debug)]
pub struct MptcpBytes {
    cfg: MptcpBytesConfig,
    paths: Vec<Option<SharePath>>,
    samples: Vec<PathSample>,
}

impl MptcpBytes {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &MptcpBytesConfig {
        &self.cfg
    }

    /// Puts path `p` at a window and threshold.
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: usize, cwnd: u64, ssthresh: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.force(cwnd, ssthresh);
        }
    }
}

impl MultipathController for MptcpBytes {
    fn on_path_added(&mut self, p: PathId, _now: Instant, mss: Bytes) {
        add_path(&mut self.paths, p, mss, &self.cfg.window);
    }

    fn on_path_removed(&mut self, p: PathId) {
        if let Some(s) = self.paths.get_mut(p.0 as usize) {
            *s = None;
        }
    }

    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        let a = collect(&self.paths, paths, p, true, &mut self.samples)
            .and_then(|_| mptcp_alpha(&self.samples));
        let total: f64 = self.samples.iter().map(|s| s.window).sum();
        let abc = self.cfg.window.abc_segments();
        let coupled_ss = self.cfg.slow_start == SlowStart::Coupled;
        let Some(st) = slot_mut(&mut self.paths, p) else {
            return;
        };
        if ack.in_recovery {
            return; // no growth during fast recovery
        }
        st.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let bytes = ack.bytes_acked.0;
        let mss = st.sf.mss as f64;
        match (coupled, a) {
            (true, Some(a)) => {
                st.state = Some(a * total); // LIA's α
                if st.sf.in_slow_start() {
                    if coupled_ss {
                        // SCTP_CMT_MPTCP slow start: min(acked·α, MTU·L·α, acked, MTU).
                        let inc = mptcp_ss_increase(bytes as f64, a, mss, abc as f64);
                        st.sf.add_bytes(inc.max(1.0));
                    } else {
                        st.sf.slow_start(bytes, abc);
                    }
                } else {
                    st.sf.use_rule(true);
                    // SCTP_CMT_MPTCP congestion avoidance: min(α·cwnd, MTU) per window.
                    let inc = mptcp_ca_increase(a, st.sf.cwnd as f64, mss).max(1.0);
                    st.sf.window_counted_increase(bytes, inc);
                }
            }
            _ => {
                if st.sf.in_slow_start() {
                    st.sf.slow_start(bytes, abc);
                } else {
                    st.sf.use_rule(false);
                    st.sf.reno_increase(bytes);
                }
            }
        }
    }

    fn on_congestion_event(&mut self, p: PathId, _ev: &CongestionEvent, _paths: &Paths<'_>) {
        if let Some(st) = slot_mut(&mut self.paths, p) {
            let ss = st.sf.reno_ssthresh(); // SCTP: max(cwnd/2, 2·MTU)
            st.sf.enter_recovery(ss);
        }
    }

    fn on_recovery_end(&mut self, p: PathId, _now: Instant, _paths: &Paths<'_>) {
        if let Some(st) = slot_mut(&mut self.paths, p) {
            st.sf.in_recovery = false;
        }
    }

    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        let coupled = is_coupled(&self.paths, paths, p);
        if let Some(st) = slot_mut(&mut self.paths, p) {
            let ss = (!rto.repeated).then(|| {
                if coupled {
                    (st.sf.cwnd / 2).max(st.sf.mss.saturating_mul(4)) // SCTP T3-rtx: max(cwnd/2, 4·MTU)
                } else {
                    st.sf.reno_ssthresh()
                }
            });
            st.sf.timeout(ss);
        }
    }

    fn window(&self, p: PathId) -> Bytes {
        window_of(&self.paths, p)
    }

    fn metrics(&self, p: PathId) -> Metrics {
        self.paths
            .get(p.0 as usize)
            .and_then(Option::as_ref)
            .map_or_else(Metrics::default, |st| Metrics {
                alpha: st.state,
                ..st.sf.metrics()
            })
    }
}

#[cfg(test)]
mod tests;
