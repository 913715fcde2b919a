//! TCP Westwood+ (Mascolo et al., MobiCom 2001; Grieco & Mascolo, ACM CCR 2004; Linux
//! `net/ipv4/tcp_westwood.c`; `reference/ALGORITHMS.md` §6): NewReno whose window after
//! a loss is set from an end-to-end bandwidth estimate instead of being halved.
//!
//! * Bandwidth estimate ([`BandwidthEstimator`], `westwood_update_window`/`westwood_filter`):
//!   the bytes acknowledged in a sampling window of `max(RTT, 50 ms)` (RTT = the latest
//!   sample), divided by the window's length, through two cascaded 7/8 low-pass filters,
//!   `ns ← (7·ns + sample)/8`, `BWE ← (7·BWE + ns)/8`; the first sample fills both.
//! * `RTTmin`: the smallest RTT sample; after a timeout the next sample replaces it.
//! * Growth: NewReno's slow start and congestion avoidance (`tcp_reno_cong_avoid`).
//! * Loss (fast retransmit): NewReno halving while recovery lasts (`.ssthresh =
//!   tcp_reno_ssthresh`); at the end of recovery (`CA_EVENT_COMPLETE_CWR`)
//!   `cwnd = ssthresh = max(⌊BWE·RTTmin/MSS⌋, 2)` segments, whether that is above or below
//!   the halved window.
//! * Timeout (`CA_EVENT_LOSS`): `ssthresh = max(⌊BWE·RTTmin/MSS⌋, 2)` segments (held on a
//!   repeated timeout, as Linux only raises the event when it recomputes ssthresh),
//!   `cwnd = 1·MSS`, and `RTTmin` is reset to the next sample.
//!
//! Differences from Linux: real-valued bytes per second instead of bytes per jiffy with
//! truncating shifts; the ACK's own RTT sample is used at once (Linux's `in_ack_event` runs
//! before `pkts_acked` and so sees the previous ACK's sample); before any RTT sample no
//! sampling window closes (Linux assumes 20 s) and an `RTTmin`-less loss keeps NewReno's
//! value. Linux counts a duplicate ACK as one MSS acknowledged and takes it back from the
//! cumulative ACK that covers it (`westwood_acked_count`); here the transport's
//! `bytes_acked` (cumulative or SACKed) is counted when reported, which moves bytes between
//! sampling windows but not the total. ns-3's `TcpWestwoodPlus` samples once per RTT with a
//! Tustin filter and sets ssthresh at the loss itself (ALGORITHMS.md §6).
//!
//! Invariants: `cwnd ≥ 1·MSS`; `ssthresh ≥ 2·MSS` once set; no growth while in recovery; the
//! estimate is finite and not negative.

use crate::cc::multipath::config::ConfigError;
use crate::cc::multipath::subflow::Subflow;
use crate::cc::veno::{check_reno, window_of};
use crate::cc::{Ack, CongestionEvent, Controller, Metrics, PathView, RenoConfig, Rto};
use crate::units::{Bytes, Duration, Instant};

/// The shortest sampling window (Linux `TCP_WESTWOOD_RTT_MIN`, `HZ/20`).
pub const MIN_SAMPLE_WINDOW: Duration = Duration::from_millis(50);

/// Westwood+'s end-to-end bandwidth estimate and minimum RTT for one path.
#[derive(Clone, Debug)]
pub struct BandwidthEstimator {
    window_start: Option<Instant>,
    /// Bytes acknowledged in the current sampling window (Linux `bk`).
    bk: u64,
    /// First filter stage, bytes per second (Linux `bw_ns_est`).
    bw_ns_est: f64,
    /// Second filter stage, the estimate, bytes per second (Linux `bw_est`).
    bw_est: f64,
    /// The latest RTT sample (Linux `w->rtt`).
    rtt: Option<Duration>,
    rtt_min: Option<Duration>,
    reset_rtt_min: bool,
}

impl Default for BandwidthEstimator {
    fn default() -> Self {
        BandwidthEstimator::new()
    }
}

/// Linux `westwood_do_filter`: `(7·a + b)/8`.
fn low_pass(a: f64, b: f64) -> f64 {
    (7.0 * a + b) / 8.0
}

impl BandwidthEstimator {
    /// An empty estimator (`tcp_westwood_init`).
    pub fn new() -> Self {
        BandwidthEstimator {
            window_start: None,
            bk: 0,
            bw_ns_est: 0.0,
            bw_est: 0.0,
            rtt: None,
            rtt_min: None,
            reset_rtt_min: true,
        }
    }

    /// An ACK at `now` newly acknowledged `bytes`, with an optional RTT sample.
    pub fn on_ack(&mut self, now: Instant, bytes: Bytes, rtt: Option<Duration>) {
        if let Some(r) = rtt {
            self.rtt = Some(r); // tcp_westwood_pkts_acked: w->rtt = the latest sample
        }
        let Some(start) = self.window_start else {
            // westwood_update_window, first_ack: start from the first ACK; its bytes
            // (acknowledged before the window began) are not counted.
            self.window_start = Some(now);
            self.update_rtt_min();
            return;
        };
        let delta = now.saturating_since(start);
        // westwood_update_window: "if (w->rtt && delta > max_t(u32, w->rtt, RTT_MIN))".
        if let Some(rtt) = self.rtt {
            if delta > rtt.max(MIN_SAMPLE_WINDOW) {
                self.filter(self.bk as f64 / delta.as_secs_f64());
                self.bk = 0;
                self.window_start = Some(now);
            }
        }
        self.bk = self.bk.saturating_add(bytes.0); // westwood_fast_bw: w->bk += acked
        self.update_rtt_min();
    }

    /// `westwood_filter`: the first sample fills both stages, later ones pass through two
    /// cascaded 7/8 EWMAs.
    fn filter(&mut self, sample: f64) {
        if !sample.is_finite() {
            return;
        }
        if self.bw_ns_est == 0.0 && self.bw_est == 0.0 {
            self.bw_ns_est = sample;
            self.bw_est = sample;
        } else {
            self.bw_ns_est = low_pass(self.bw_ns_est, sample);
            self.bw_est = low_pass(self.bw_est, self.bw_ns_est);
        }
    }

    /// `update_rtt_min`: after a reset the latest sample, else the smaller of the two.
    fn update_rtt_min(&mut self) {
        let Some(r) = self.rtt else {
            return;
        };
        if self.reset_rtt_min {
            self.rtt_min = Some(r);
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = Some(self.rtt_min.map_or(r, |m| m.min(r)));
        }
    }

    /// A retransmission timeout (`CA_EVENT_LOSS`): "Update RTT_min when next ack arrives".
    pub fn on_timeout(&mut self) {
        self.reset_rtt_min = true;
    }

    /// The bandwidth estimate in bytes per second (0 before the first sample).
    pub fn bytes_per_sec(&self) -> f64 {
        self.bw_est
    }

    /// The bandwidth estimate in bits per second, `None` before the first sample.
    pub fn bits_per_sec(&self) -> Option<f64> {
        (self.bw_est > 0.0 || self.bw_ns_est > 0.0).then_some(self.bw_est * 8.0)
    }

    /// The smallest RTT sample (since the last timeout's reset).
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min
    }

    /// `tcp_westwood_bw_rttmin` in bytes: `max(⌊BWE·RTTmin/MSS⌋, 2)·MSS`; `None` before the
    /// first RTT sample.
    pub fn window(&self, mss: u64) -> Option<u64> {
        let mss = mss.max(1);
        let rtt_min = self.rtt_min?.as_secs_f64();
        let packets = (self.bw_est * rtt_min / mss as f64).floor();
        // Not below 2 segments ("avoids ever returning 0"), and bounded so the cast is exact.
        let packets = if packets.is_finite() {
            packets.clamp(2.0, 1e15) as u64
        } else {
            2
        };
        Some(packets.saturating_mul(mss))
    }

    /// Sets the estimate and minimum RTT directly (tests).
    #[cfg(test)]
    pub(crate) fn force(&mut self, bytes_per_sec: f64, rtt_min: Duration) {
        self.bw_ns_est = bytes_per_sec;
        self.bw_est = bytes_per_sec;
        self.rtt_min = Some(rtt_min);
        self.rtt = Some(rtt_min);
        self.reset_rtt_min = false;
    }
}

/// Westwood+'s window machinery over one [`Subflow`], shared by [`WestwoodPlus`] and the
/// multipath Westwood controllers: the estimate, and the recovery-end and timeout rules.
#[derive(Clone, Debug, Default)]
pub(crate) struct WestwoodState {
    pub(crate) est: BandwidthEstimator,
    /// Between a congestion event and the end of its recovery.
    recovering: bool,
}

impl WestwoodState {
    /// Loss recovery starts: NewReno halving (`.ssthresh = tcp_reno_ssthresh`).
    pub(crate) fn on_loss(&mut self, sf: &mut Subflow) {
        self.recovering = true;
        let ss = sf.reno_ssthresh();
        sf.enter_recovery(ss);
    }

    /// Recovery ends (`CA_EVENT_COMPLETE_CWR`): `cwnd = ssthresh = tcp_westwood_bw_rttmin`.
    pub(crate) fn on_recovery_end(&mut self, sf: &mut Subflow) {
        sf.in_recovery = false;
        if !std::mem::take(&mut self.recovering) {
            return;
        }
        if let Some(w) = self.est.window(sf.mss) {
            sf.cwnd = w;
            sf.ssthresh = w;
        }
    }

    /// A timeout (`CA_EVENT_LOSS`, first timeout only): `ssthresh = tcp_westwood_bw_rttmin`,
    /// `RTTmin` reset; `cwnd = 1·MSS`.
    pub(crate) fn on_timeout(&mut self, sf: &mut Subflow, repeated: bool) {
        self.recovering = false;
        let ss = (!repeated).then(|| {
            self.est.on_timeout();
            self.est
                .window(sf.mss)
                .unwrap_or_else(|| sf.reno_ssthresh())
        });
        sf.timeout(ss);
    }
}

/// Westwood+'s parameters: NewReno's window settings (the 50 ms sampling floor and the 7/8
/// filter gains are Linux's constants).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WestwoodConfig {
    reno: RenoConfig,
}

impl WestwoodConfig {
    /// Westwood+ with NewReno's window settings `reno`.
    pub fn new(reno: RenoConfig) -> Self {
        WestwoodConfig { reno }
    }
    /// The window settings.
    pub fn reno(&self) -> &RenoConfig {
        &self.reno
    }
    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_reno("westwood", &self.reno)
    }
    /// A controller in slow start with the initial window.
    pub fn build(&self) -> Result<WestwoodPlus, ConfigError> {
        self.validate()?;
        Ok(WestwoodPlus {
            cfg: *self,
            sf: Subflow::new(self.reno.mss, &window_of(&self.reno)),
            ww: WestwoodState::default(),
        })
    }
}

/// TCP Westwood+'s congestion window.
#[derive(Clone, Debug)]
pub struct WestwoodPlus {
    cfg: WestwoodConfig,
    sf: Subflow,
    ww: WestwoodState,
}

impl WestwoodPlus {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &WestwoodConfig {
        &self.cfg
    }
    /// The bandwidth estimator.
    pub fn estimator(&self) -> &BandwidthEstimator {
        &self.ww.est
    }
}

impl Controller for WestwoodPlus {
    fn on_ack(&mut self, ack: &Ack, _path: &PathView) {
        // tcp_westwood_ack runs on every ACK, in recovery too.
        self.ww.est.on_ack(ack.now, ack.bytes_acked, ack.rtt);
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        self.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let bytes = ack.bytes_acked.0;
        if self.sf.in_slow_start() {
            self.sf.slow_start(bytes, self.cfg.reno.abc_limit);
        } else {
            self.sf.reno_increase(bytes); // tcp_reno_cong_avoid
        }
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _path: &PathView) {
        self.ww.on_loss(&mut self.sf);
    }

    fn on_recovery_end(&mut self, _now: Instant, _path: &PathView) {
        self.ww.on_recovery_end(&mut self.sf);
    }

    fn on_rto(&mut self, rto: &Rto, _path: &PathView) {
        self.ww.on_timeout(&mut self.sf, rto.repeated);
    }

    fn window(&self) -> Bytes {
        Bytes(self.sf.cwnd)
    }

    fn ssthresh(&self) -> Option<Bytes> {
        self.sf.metrics().ssthresh
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            bandwidth_bps: self.ww.est.bits_per_sec(),
            ..self.sf.metrics()
        }
    }
}

#[cfg(test)]
mod tests;
