//! Weighted AIMD(a, b) in bytes: NewReno ([`NewReno`](crate::cc::NewReno)) with the
//! congestion-avoidance increase and the loss decrease as parameters.
//!
//! * Slow start, byte counting and timeouts are exactly NewReno's: `cwnd += min(bytes_acked,
//!   L·MSS)` per ACK while `cwnd < ssthresh` (RFC 3465 §2.2); a timeout sets `cwnd = 1·MSS`
//!   and the loss threshold below (held on a repeated timeout, RFC 5681 §3.1).
//! * Congestion avoidance: `a·MSS` each time a full window has been acknowledged, on the same
//!   byte counter as NewReno, i.e. `a` packets per RTT (`a/w` per acknowledged packet on
//!   average). Fractions of a byte carry over, so nothing drifts.
//! * Loss: `ssthresh = max(⌊(1 − b)·cwnd⌋, 2·MSS)`, `cwnd = ssthresh`.
//!
//! With `a = 1, b = ½` the trace is NewReno's byte for byte. A weight `D` gives AIMD(D², ½),
//! the BMC paper's weighted AIMD (Honda et al. 2009, §3.1): its throughput is `D` times that
//! of TCP at the same loss rate (eq. 3.6 with b = ½), which is how the paper's ns-2 runs
//! (§5) stand independent weighted flows in for subflows.
//!
//! Invariants: `cwnd ≥ 1·MSS`; `ssthresh ≥ 2·MSS` once set; no growth while in recovery.

use crate::cc::multipath::config::{check_range, ConfigError, WindowConfig};
use crate::cc::{Ack, CongestionEvent, Controller, Metrics, PathView, Rto};
use crate::units::Bytes;

/// The largest weight `D` (and flowshare count) accepted: AIMD(256, ½) already adds 256
/// packets per RTT.
pub const MAX_WEIGHT: f64 = 16.0;

/// Bytes of credit within which a whole byte counts as reached: sums of fractional increments
/// can land a rounding error short of it.
const ROUNDING: f64 = 1e-6;

/// The AIMD increase per acknowledged packet in congestion avoidance, `a/w` packets for a
/// window of `w` packets (BMC §3.1: `D²/w` with `a = D²`). Zero for a non-positive window.
pub fn increase_per_ack(a: f64, w: f64) -> f64 {
    if w > 0.0 {
        a / w
    } else {
        0.0
    }
}

/// The window a loss removes, `b·w` (BMC §3.1: `w/2`).
pub fn loss_decrease(b: f64, w: f64) -> f64 {
    b * w
}

/// The length of one congestion epoch of AIMD(a, b) that ends at window `w` (packets), in
/// RTTs: `b·w/a + 1` (BMC §3.2; `w/(2D²) + 1` for BMC's subflows). Infinite for `a ≤ 0`.
pub fn epoch_rtts(a: f64, b: f64, w: f64) -> f64 {
    if a > 0.0 {
        b * w / a + 1.0
    } else {
        f64::INFINITY
    }
}

/// The weight `D` of AIMD(a, b): the ratio of its throughput to TCP's at the same loss rate
/// and RTT, from BMC eq. 3.6, `a = 3b/(2 − b)·D²`, so `D = √(a(2 − b)/(3b))`.
pub fn equivalent_weight(a: f64, b: f64) -> f64 {
    (a * (2.0 - b) / (3.0 * b)).sqrt()
}

/// How the increase and decrease are given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AimdShape {
    /// A weight `D`: AIMD(D², ½) (BMC §3.1).
    Weight(f64),
    /// Any AIMD(a, b).
    Params {
        /// Additive increase `a`, packets per RTT.
        increase: f64,
        /// Multiplicative decrease `b`, the fraction of the window a loss removes.
        decrease: f64,
    },
}

/// Weighted AIMD's parameters. The default shape is AIMD(1, ½), which is NewReno.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdConfig {
    mss: Bytes,
    initial_window: u32,
    abc_limit: u32,
    shape: AimdShape,
}

impl AimdConfig {
    /// AIMD(1, ½) — NewReno — with the given segment size and initial window, and L = 2.
    pub fn new(mss: Bytes, initial_window: u32) -> Self {
        AimdConfig {
            mss,
            initial_window,
            abc_limit: 2,
            shape: AimdShape::Params {
                increase: 1.0,
                decrease: 0.5,
            },
        }
    }
    /// The initial window and RFC 3465's L from the shared slow-start settings.
    pub fn window(mut self, w: WindowConfig) -> Self {
        self.initial_window = w.initial_segments();
        self.abc_limit = w.abc_segments();
        self
    }
    /// RFC 3465's L: the most one ACK may add in slow start, in segments (1 to 1000).
    pub fn abc_limit(mut self, segments: u32) -> Self {
        self.abc_limit = segments;
        self
    }
    /// A weight `D` (0 < D ≤ 16): AIMD(D², ½). Replaces any `a` and `b` set before.
    pub fn weight(mut self, d: f64) -> Self {
        self.shape = AimdShape::Weight(d);
        self
    }
    /// The additive increase `a` in packets per RTT (0 < a ≤ 256), keeping the current `b`.
    pub fn increase(mut self, a: f64) -> Self {
        self.shape = AimdShape::Params {
            increase: a,
            decrease: self.decrease_fraction(),
        };
        self
    }
    /// The multiplicative decrease `b` (0 < b < 1), keeping the current `a`.
    pub fn decrease(mut self, b: f64) -> Self {
        self.shape = AimdShape::Params {
            increase: self.increase_per_rtt(),
            decrease: b,
        };
        self
    }
    /// How the parameters were given.
    pub fn shape(&self) -> AimdShape {
        self.shape
    }
    /// The segment size.
    pub fn mss(&self) -> Bytes {
        self.mss
    }
    /// `a`, packets added per RTT in congestion avoidance.
    pub fn increase_per_rtt(&self) -> f64 {
        match self.shape {
            AimdShape::Weight(d) => d * d, // BMC §3.1: a = D²
            AimdShape::Params { increase, .. } => increase,
        }
    }
    /// `b`, the fraction of the window a loss removes.
    pub fn decrease_fraction(&self) -> f64 {
        match self.shape {
            AimdShape::Weight(_) => 0.5, // BMC §3.1: with a = D², b is always ½
            AimdShape::Params { decrease, .. } => decrease,
        }
    }
    /// The weight: as given, or BMC eq. 3.6's equivalent of `a` and `b`.
    pub fn equivalent_weight(&self) -> f64 {
        match self.shape {
            AimdShape::Weight(d) => d,
            AimdShape::Params { increase, decrease } => equivalent_weight(increase, decrease),
        }
    }

    /// Checks every parameter; errors name it, the value and the allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let alg = "aimd";
        check_range(alg, "mss", self.mss.0 as f64, 1.0, 1e9, "1 to 10^9 bytes")?;
        let segs = "1 to 1000 segments";
        check_range(
            alg,
            "initial_window",
            self.initial_window as f64,
            1.0,
            1e3,
            segs,
        )?;
        check_range(alg, "abc_limit", self.abc_limit as f64, 1.0, 1e3, segs)?;
        match self.shape {
            AimdShape::Weight(d) => {
                check(alg, "weight", d, d > 0.0 && d <= MAX_WEIGHT, "0 < D <= 16")
            }
            AimdShape::Params { increase, decrease } => {
                let ok = increase > 0.0 && increase <= MAX_WEIGHT * MAX_WEIGHT;
                check(alg, "a", increase, ok, "0 < a <= 256 packets per RTT")?;
                check(
                    alg,
                    "b",
                    decrease,
                    decrease > 0.0 && decrease < 1.0,
                    "0 < b < 1",
                )
            }
        }
    }

    /// A controller in slow start with the initial window.
    pub fn build(&self) -> Result<Aimd, ConfigError> {
        self.validate()?;
        let mss = self.mss.0;
        Ok(Aimd {
            cfg: *self,
            a: self.increase_per_rtt(),
            b: self.decrease_fraction(),
            cwnd: mss.saturating_mul(self.initial_window as u64),
            ssthresh: u64::MAX,
            ca_acked: 0,
            credit: 0.0,
        })
    }
}

/// `Ok` if `ok` (which must be false for NaN), else an out-of-range error.
pub(crate) fn check(
    algorithm: &'static str,
    parameter: &'static str,
    value: f64,
    ok: bool,
    allowed: &'static str,
) -> Result<(), ConfigError> {
    if ok && value.is_finite() {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            algorithm,
            parameter,
            value,
            allowed,
        })
    }
}

/// A weighted AIMD(a, b) congestion window.
#[derive(Clone, Debug)]
pub struct Aimd {
    cfg: AimdConfig,
    a: f64,
    b: f64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the last increase (NewReno's counter).
    ca_acked: u64,
    /// Fraction of a byte of increase not yet applied.
    credit: f64,
}

impl Aimd {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &AimdConfig {
        &self.cfg
    }

    /// The threshold after a loss: `max(⌊(1 − b)·cwnd⌋, 2·MSS)` (RFC 5681 §3.1 eq. 4 with
    /// `1 − b` for ½). For b = ½ this is exactly NewReno's `cwnd/2` (below 2^53 bytes).
    fn loss_ssthresh(&self) -> u64 {
        let keep = ((1.0 - self.b) * self.cwnd as f64).floor() as u64; // saturating cast
        keep.min(self.cwnd).max(self.cfg.mss.0.saturating_mul(2))
    }
}

impl Controller for Aimd {
    fn on_ack(&mut self, ack: &Ack, _path: &PathView) {
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let mss = self.cfg.mss.0;
        let acked = ack.bytes_acked.0;
        if self.cwnd < self.ssthresh {
            // RFC 3465 §2.2: slow start grows by the bytes acknowledged, at most L·SMSS per ACK.
            let cap = (self.cfg.abc_limit as u64).saturating_mul(mss);
            self.cwnd = self.cwnd.saturating_add(acked.min(cap));
        } else {
            // BMC §3.1 / RFC 5681 §3.1 byte counting: a·SMSS per window of acknowledged data.
            self.ca_acked = self.ca_acked.saturating_add(acked);
            if self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.credit += self.a * mss as f64;
                let whole = (self.credit + ROUNDING).floor();
                self.credit = (self.credit - whole).max(0.0);
                self.cwnd = self.cwnd.saturating_add(whole as u64);
            }
        }
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _path: &PathView) {
        // BMC §3.1: the window drops from W to (1 − b)·W.
        self.ssthresh = self.loss_ssthresh();
        self.cwnd = self.ssthresh;
        self.ca_acked = 0;
        self.credit = 0.0;
    }

    fn on_rto(&mut self, rto: &Rto, _path: &PathView) {
        // RFC 5681 §3.1: a segment retransmitted by a timer more than once holds ssthresh.
        if !rto.repeated {
            self.ssthresh = self.loss_ssthresh();
        }
        self.cwnd = self.cfg.mss.0; // the loss window, one segment
        self.ca_acked = 0;
        self.credit = 0.0;
    }

    fn window(&self) -> Bytes {
        Bytes(self.cwnd)
    }

    fn ssthresh(&self) -> Option<Bytes> {
        (self.ssthresh != u64::MAX).then_some(Bytes(self.ssthresh))
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            weight: Some(self.cfg.equivalent_weight()),
            ..Metrics::new(self.window(), self.ssthresh())
        }
    }
}

#[cfg(test)]
mod tests;
