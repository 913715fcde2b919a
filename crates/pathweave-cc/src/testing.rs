//! A scripted harness for driving a [`Controller`] in tests without a network: acknowledge a
//! round of packets, signal a loss or a timeout, and read the window back.

use crate::cc::{Ack, Cause, CongestionEvent, Controller, PathId, PathView, Rto};
use crate::units::{Bytes, Duration, Instant};

/// Drives one controller over an idealised path with a fixed RTT.
#[derive(Debug)]
pub struct TestSender<C> {
    /// The controller under test.
    pub cc: C,
    /// The path view handed to the controller.
    pub path: PathView,
    /// Current time.
    pub now: Instant,
    /// The fixed RTT of the idealised path.
    pub rtt: Duration,
}

impl<C: Controller> TestSender<C> {
    /// A harness with a 100 ms RTT.
    pub fn new(cc: C, mss: Bytes) -> Self {
        let rtt = Duration::from_millis(100);
        let mut path = PathView::new(PathId(0), mss);
        path.srtt = Some(rtt);
        path.min_rtt = Some(rtt);
        path.latest_rtt = Some(rtt);
        TestSender {
            cc,
            path,
            now: Instant::ZERO,
            rtt,
        }
    }

    fn ack(&mut self, bytes: Bytes, in_recovery: bool) {
        let ack = Ack {
            now: self.now,
            bytes_acked: bytes,
            rtt: Some(self.rtt),
            in_recovery,
            cwnd_limited: true,
        };
        self.cc.on_ack(&ack, &self.path);
    }

    /// Acknowledge one window's worth of full segments, one ACK per segment, as a
    /// window-limited sender would see in one RTT.
    pub fn ack_round(&mut self) {
        let mss = self.path.mss;
        let n = self.cc.window().0 / mss.0;
        self.path.in_flight = Bytes(n * mss.0);
        for _ in 0..n {
            self.path.in_flight = self.path.in_flight.saturating_sub(mss);
            self.ack(mss, false);
        }
        self.now += self.rtt;
    }

    /// One ACK of `bytes`.
    pub fn ack_bytes(&mut self, bytes: Bytes) {
        self.ack(bytes, false);
    }

    /// `n` ACKs of one segment each while in loss recovery.
    pub fn ack_in_recovery(&mut self, n: u32) {
        for _ in 0..n {
            self.ack(self.path.mss, true);
        }
    }

    /// A loss detected by duplicate ACKs, with recovery ending immediately.
    pub fn loss(&mut self) {
        self.path.in_flight = self.cc.window();
        let ev = CongestionEvent {
            now: self.now,
            cause: Cause::Loss,
        };
        self.cc.on_congestion_event(&ev, &self.path);
        self.cc.on_recovery_end(self.now, &self.path);
    }

    /// A retransmission timeout.
    pub fn rto(&mut self, repeated: bool) {
        self.cc.on_rto(
            &Rto {
                now: self.now,
                repeated,
            },
            &self.path,
        );
    }
}
