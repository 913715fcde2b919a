//! TCP NewReno's window arithmetic (RFC 5681), counted in bytes.
//!
//! * Slow start: `cwnd += min(bytes_acked, L·MSS)` with L = 2 (RFC 3465 §2.2).
//! * Congestion avoidance: +1 MSS each time a full window has been acknowledged (RFC 5681
//!   §3.1, the byte-counting form), i.e. one packet per RTT.
//! * Loss: `ssthresh = max(cwnd/2, 2·MSS)`, `cwnd = ssthresh`. RFC 5681 halves FlightSize;
//!   for a window-limited sender the two agree, and halving cwnd is what Linux
//!   (`tcp_reno_ssthresh`) and ns-2 do.
//! * Timeout: the same ssthresh (held on a repeated timeout, RFC 5681 §3.1), `cwnd = 1·MSS`.
//!
//! Invariants: `cwnd ≥ 1·MSS`; `ssthresh ≥ 2·MSS` once set; no growth while in recovery.

use crate::cc::{Ack, CongestionEvent, Controller, PathView, Rto};
use crate::units::Bytes;

/// NewReno's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenoConfig {
    /// Maximum segment size.
    pub mss: Bytes,
    /// Initial window in segments (RFC 5681 allows up to 4 by size, RFC 6928 up to 10).
    pub initial_window: u32,
    /// The L of RFC 3465: the most one ACK may add in slow start, in segments.
    pub abc_limit: u32,
}

impl RenoConfig {
    /// NewReno with the given segment size and initial window, and L = 2.
    pub fn new(mss: Bytes, initial_window: u32) -> Self {
        RenoConfig {
            mss,
            initial_window,
            abc_limit: 2,
        }
    }
}

/// TCP NewReno's congestion window.
#[derive(Clone, Debug)]
pub struct NewReno {
    cfg: RenoConfig,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the last increase.
    ca_acked: u64,
}

impl NewReno {
    /// A controller in slow start with the initial window.
    pub fn new(cfg: RenoConfig) -> Self {
        NewReno {
            cfg,
            cwnd: cfg.mss.0.saturating_mul(cfg.initial_window.max(1) as u64),
            ssthresh: u64::MAX,
            ca_acked: 0,
        }
    }

    fn halve(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(self.cfg.mss.0.saturating_mul(2));
    }
}

impl Controller for NewReno {
    fn on_ack(&mut self, ack: &Ack, _path: &PathView) {
        if ack.in_recovery {
            return;
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
            // RFC 5681 §3.1: one SMSS per window of acknowledged data.
            self.ca_acked = self.ca_acked.saturating_add(acked);
            if self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd = self.cwnd.saturating_add(mss);
            }
        }
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _path: &PathView) {
        self.halve();
        self.cwnd = self.ssthresh;
        self.ca_acked = 0;
    }

    fn on_rto(&mut self, rto: &Rto, _path: &PathView) {
        // RFC 5681 §3.1: a segment retransmitted by a timer more than once holds ssthresh.
        if !rto.repeated {
            self.halve();
        }
        self.cwnd = self.cfg.mss.0; // the loss window, one segment
        self.ca_acked = 0;
    }

    fn window(&self) -> Bytes {
        Bytes(self.cwnd)
    }

    fn ssthresh(&self) -> Option<Bytes> {
        (self.ssthresh != u64::MAX).then_some(Bytes(self.ssthresh))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSender;

    fn reno() -> TestSender<NewReno> {
        TestSender::new(NewReno::new(RenoConfig::new(Bytes(1000), 2)), Bytes(1000))
    }

    #[test]
    fn slow_start_doubles_each_round() {
        let mut s = reno();
        assert_eq!(s.cc.window(), Bytes(2000));
        s.ack_round();
        assert_eq!(s.cc.window(), Bytes(4000));
        s.ack_round();
        assert_eq!(s.cc.window(), Bytes(8000));
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_round() {
        let mut s = reno();
        for _ in 0..4 {
            s.ack_round();
        }
        s.loss(); // 32 → ssthresh 16
        assert_eq!(s.cc.window(), Bytes(16_000));
        assert_eq!(s.cc.ssthresh(), Some(Bytes(16_000)));
        for k in 1..=5 {
            s.ack_round();
            assert_eq!(s.cc.window(), Bytes(16_000 + 1000 * k));
        }
    }

    #[test]
    fn loss_never_takes_ssthresh_below_two_segments() {
        let mut s = reno();
        s.loss();
        s.loss();
        s.loss();
        assert_eq!(s.cc.ssthresh(), Some(Bytes(2000)));
        assert_eq!(s.cc.window(), Bytes(2000));
    }

    #[test]
    fn no_growth_during_recovery() {
        let mut s = reno();
        s.ack_round();
        s.loss();
        let w = s.cc.window();
        s.ack_in_recovery(10);
        assert_eq!(s.cc.window(), w);
    }

    #[test]
    fn repeated_rto_holds_ssthresh() {
        let mut s = reno();
        for _ in 0..4 {
            s.ack_round();
        }
        s.rto(false);
        assert_eq!(s.cc.ssthresh(), Some(Bytes(16_000)));
        assert_eq!(s.cc.window(), Bytes(1000));
        s.rto(true);
        assert_eq!(s.cc.ssthresh(), Some(Bytes(16_000)));
    }

    #[test]
    fn slow_start_credit_is_capped_per_ack() {
        let mut s = reno();
        s.ack_bytes(Bytes(10_000)); // one stretch ACK of 10 segments: at most L = 2 segments
        assert_eq!(s.cc.window(), Bytes(4000));
    }
}
