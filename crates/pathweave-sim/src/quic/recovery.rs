//! The arithmetic of QUIC loss recovery, free of packets: the RTT estimator (RFC 9002 §5),
//! the loss-detection thresholds (§6.1), the probe timeout (§6.2), the persistent-congestion
//! period (§7.6) and quinn's pacer (§7.7, `connection/pacing.rs`). Durations are integer
//! nanoseconds and every division truncates, as `std::time::Duration` does in quinn.

use pathweave_cc::{Duration, Instant};

/// kPacketThreshold (RFC 9002 §6.1.1, quinn's `packet_threshold` default).
pub const PACKET_THRESHOLD: u64 = 3;
/// kGranularity (RFC 9002 §6.1.2, quinn's `TIMER_GRANULARITY`).
pub const GRANULARITY: Duration = Duration::from_millis(1);
/// kInitialRtt (RFC 9002 §6.2.2, quinn's `initial_rtt` default).
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// kPersistentCongestionThreshold (RFC 9002 §7.6.1).
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// quinn caps the PTO backoff at 2^16 (`MAX_BACKOFF_EXPONENT`).
pub const MAX_BACKOFF_EXPONENT: u32 = 16;

/// The RTT estimator of one path (RFC 9002 §5; quinn's `RttEstimator`): before the first
/// sample `smoothed_rtt` reads as kInitialRtt and `rttvar` as half of it (§5.3).
#[derive(Clone, Copy, Debug)]
pub struct QuicRtt {
    latest: Duration,
    smoothed: Option<Duration>,
    var: Duration,
    min: Duration,
}

impl Default for QuicRtt {
    fn default() -> Self {
        QuicRtt::new(INITIAL_RTT)
    }
}

impl QuicRtt {
    /// An estimator that has seen no sample, starting from `initial`.
    pub fn new(initial: Duration) -> Self {
        QuicRtt {
            latest: initial,
            smoothed: None,
            var: Duration(initial.0 / 2),
            min: initial,
        }
    }

    /// Take an RTT sample `latest_rtt` whose ACK reported `ack_delay` (already limited to
    /// max_ack_delay by the caller, §5.3).
    pub fn update(&mut self, ack_delay: Duration, latest_rtt: Duration) {
        self.latest = latest_rtt;
        // §5.2: min_rtt ignores ack_delay.
        self.min = self.min.min(latest_rtt);
        match self.smoothed {
            // §5.3: the first sample sets smoothed_rtt = latest_rtt, rttvar = latest_rtt / 2.
            None => {
                self.smoothed = Some(latest_rtt);
                self.var = Duration(latest_rtt.0 / 2);
                self.min = latest_rtt;
            }
            Some(s) => {
                // §5.3: subtract ack_delay only if the result stays at or above min_rtt.
                let adjusted = if self.min.0 + ack_delay.0 <= latest_rtt.0 {
                    latest_rtt - ack_delay
                } else {
                    latest_rtt
                };
                let sample = s.0.abs_diff(adjusted.0);
                self.var = Duration((3 * self.var.0 + sample) / 4);
                self.smoothed = Some(Duration((7 * s.0 + adjusted.0) / 8));
            }
        }
    }

    /// smoothed_rtt, or kInitialRtt before the first sample (quinn's `get`).
    pub fn get(&self) -> Duration {
        self.smoothed.unwrap_or(self.latest)
    }

    /// smoothed_rtt once there is a sample.
    pub fn smoothed(&self) -> Option<Duration> {
        self.smoothed
    }

    /// rttvar.
    pub fn var(&self) -> Duration {
        self.var
    }

    /// latest_rtt once there is a sample.
    pub fn latest(&self) -> Option<Duration> {
        self.smoothed.map(|_| self.latest)
    }

    /// min_rtt once there is a sample.
    pub fn min(&self) -> Option<Duration> {
        self.smoothed.map(|_| self.min)
    }

    /// The time threshold of loss detection (§6.1.2): `max(kTimeThreshold ·
    /// max(smoothed_rtt, latest_rtt), kGranularity)` with kTimeThreshold = 9/8.
    pub fn loss_delay(&self) -> Duration {
        let rtt = self.get().max(self.latest);
        Duration(rtt.0 + rtt.0 / 8).max(GRANULARITY)
    }

    /// `smoothed_rtt + max(4·rttvar, kGranularity)`, the PTO without max_ack_delay (§6.2.1).
    pub fn pto_base(&self) -> Duration {
        self.get() + Duration(4 * self.var.0).max(GRANULARITY)
    }

    /// The probe timeout after `pto_count` consecutive PTOs: `(pto_base + max_ack_delay) ·
    /// 2^pto_count` (§6.2.1), the exponent capped as quinn caps it.
    pub fn pto(&self, max_ack_delay: Duration, pto_count: u32) -> Duration {
        let backoff = 1u64 << pto_count.min(MAX_BACKOFF_EXPONENT);
        (self.pto_base() + max_ack_delay).saturating_mul(backoff)
    }

    /// The persistent-congestion period (§7.6.1): `(smoothed_rtt + max(4·rttvar,
    /// kGranularity) + max_ack_delay) · kPersistentCongestionThreshold`.
    pub fn congestion_period(&self, max_ack_delay: Duration) -> Duration {
        (self.pto_base() + max_ack_delay).saturating_mul(PERSISTENT_CONGESTION_THRESHOLD)
    }
}

/// Traffic batched per pacer burst on a fast path (quinn `TARGET_BURST_INTERVAL`).
const TARGET_BURST_INTERVAL: u64 = 2_000_000;
/// The longest burst interval (quinn `MAX_BURST_INTERVAL`).
const MAX_BURST_INTERVAL: u64 = 10_000_000;
/// Datagrams a burst holds at least, and at most (quinn `MIN_BURST_SIZE`, `MAX_BURST_SIZE`).
const MIN_BURST_SIZE: u64 = 10;
const MAX_BURST_SIZE: u64 = 256;

/// quinn's token-bucket pacer (`connection/pacing.rs`), on by default for every path: tokens
/// refill at 1.25 · cwnd / smoothed_rtt (RFC 9002 §7.7, N = 1.25), up to a burst capacity of
/// about 2 ms of the rate, at least 10 and at most 256 datagrams (at most 10 ms of the rate,
/// and never less than one datagram).
#[derive(Clone, Copy, Debug)]
pub struct Pacer {
    capacity: u64,
    last_window: u64,
    last_mtu: u64,
    tokens: u64,
    prev: Instant,
}

fn optimal_capacity(smoothed_rtt: Duration, window: u64, mtu: u64) -> u64 {
    let rtt = smoothed_rtt.0.max(1) as u128;
    let target = (window as u128 * TARGET_BURST_INTERVAL as u128 / rtt) as u64;
    let max_capacity = ((window as u128 * MAX_BURST_INTERVAL as u128 / rtt) as u64).max(mtu);
    max_capacity.min(target.clamp(MIN_BURST_SIZE * mtu, MAX_BURST_SIZE * mtu))
}

impl Pacer {
    /// A full bucket for `window` at `smoothed_rtt`.
    pub fn new(smoothed_rtt: Duration, window: u64, mtu: u64, now: Instant) -> Self {
        let capacity = optimal_capacity(smoothed_rtt, window, mtu);
        Pacer {
            capacity,
            last_window: window,
            last_mtu: mtu,
            tokens: capacity,
            prev: now,
        }
    }

    /// A packet of `bytes` left.
    pub fn on_transmit(&mut self, bytes: u64) {
        self.tokens = self.tokens.saturating_sub(bytes);
    }

    /// When `bytes_to_send` may leave, `None` for now (quinn's `Pacer::delay`).
    pub fn delay(
        &mut self,
        smoothed_rtt: Duration,
        bytes_to_send: u64,
        mtu: u64,
        window: u64,
        now: Instant,
    ) -> Option<Instant> {
        if window != self.last_window || mtu != self.last_mtu {
            self.capacity = optimal_capacity(smoothed_rtt, window, mtu);
            self.tokens = self.capacity.min(self.tokens);
            self.last_window = window;
            self.last_mtu = mtu;
        }
        if self.tokens >= bytes_to_send {
            return None;
        }
        // quinn disables pacing for windows beyond 2^32 bytes, and without an RTT.
        if window > u32::MAX as u64 || smoothed_rtt.0 == 0 {
            return None;
        }
        let elapsed = now.saturating_since(self.prev);
        let elapsed_rtts = elapsed.as_secs_f64() / smoothed_rtt.as_secs_f64();
        let new_tokens = (window as f64 * 1.25 * elapsed_rtts).round() as u64;
        self.tokens = self.tokens.saturating_add(new_tokens).min(self.capacity);
        if new_tokens > 0 {
            self.prev = now;
        }
        if self.tokens >= bytes_to_send {
            return None;
        }
        let missing = bytes_to_send.max(self.capacity) - self.tokens;
        let unscaled = (smoothed_rtt.0 as u128 * missing as u128 / window as u128) as u64;
        // The time at which the bucket holds the packet's bytes at 5/4 of cwnd per RTT.
        Some(now + Duration(unscaled / 5 * 4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// RFC 9002 §5.3 by hand: first sample 100 ms → srtt 100, rttvar 50; a second sample of
    /// 160 ms with 20 ms ack delay → adjusted 140 (min 100 + 20 ≤ 160), rttvar = (3·50 + |100
    /// − 140|)/4 = 47.5, srtt = (7·100 + 140)/8 = 105; a third of 101 ms with 10 ms delay is
    /// not adjusted (100 + 10 > 101): rttvar = (3·47.5 + 4)/4 = 36.625, srtt = (7·105 +
    /// 101)/8 = 104.5; min_rtt never subtracts ack delay.
    #[test]
    fn rtt_estimator_follows_rfc9002_section_5_3() {
        let mut r = QuicRtt::default();
        assert_eq!(
            (r.get(), r.var(), r.smoothed()),
            (ms(333), Duration(166_500_000), None)
        );
        r.update(ms(5), ms(100));
        assert_eq!(
            (r.smoothed(), r.var(), r.min()),
            (Some(ms(100)), ms(50), Some(ms(100)))
        );
        r.update(ms(20), ms(160));
        assert_eq!(
            (r.smoothed(), r.var()),
            (Some(ms(105)), Duration(47_500_000))
        );
        r.update(ms(10), ms(101));
        assert_eq!(r.smoothed(), Some(Duration(104_500_000)));
        assert_eq!(r.var(), Duration(36_625_000));
        assert_eq!((r.min(), r.latest()), (Some(ms(100)), Some(ms(101))));
    }

    /// §6.1.2: loss_delay = 9/8 · max(srtt, latest_rtt), at least 1 ms.
    #[test]
    fn time_threshold_is_nine_eighths_of_the_larger_rtt() {
        let mut r = QuicRtt::default();
        r.update(Duration::ZERO, ms(80));
        assert_eq!(r.loss_delay(), ms(90));
        r.update(Duration::ZERO, ms(160)); // srtt 90, latest 160
        assert_eq!(r.loss_delay(), ms(180));
        let mut tiny = QuicRtt::default();
        tiny.update(Duration::ZERO, Duration::from_micros(100));
        assert_eq!(tiny.loss_delay(), GRANULARITY);
    }

    /// §6.2.1: PTO = srtt + max(4·rttvar, 1 ms) + max_ack_delay, doubling per consecutive PTO;
    /// before any sample srtt is 333 ms and rttvar 166.5 ms: 333 + 666 + 25 = 1024 ms.
    #[test]
    fn pto_value_and_doubling() {
        let mut r = QuicRtt::default();
        assert_eq!(r.pto(ms(25), 0), ms(1024));
        r.update(Duration::ZERO, ms(40)); // srtt 40, rttvar 20
        assert_eq!(r.pto(ms(25), 0), ms(40 + 80 + 25));
        assert_eq!(r.pto(ms(25), 1), ms(2 * 145));
        assert_eq!(r.pto(ms(25), 3), ms(8 * 145));
        assert_eq!(r.pto(ms(25), 40), r.pto(ms(25), 16));
        // rttvar near zero: the granularity floor.
        let mut flat = QuicRtt::default();
        for _ in 0..100 {
            flat.update(Duration::ZERO, ms(10));
        }
        assert_eq!(flat.pto_base(), ms(10) + GRANULARITY);
        assert_eq!(flat.congestion_period(ms(25)), ms(3 * 36));
    }

    /// The pacer lets a burst of its capacity out at once, then spaces packets at 1.25 ·
    /// cwnd / srtt: with cwnd 100 kB over 100 ms, 1.25 MB/s, a 1000-byte packet per 800 µs.
    #[test]
    fn pacer_spaces_packets_at_five_fourths_of_the_window_rate() {
        let rtt = ms(100);
        let (window, mtu) = (100_000, 1000);
        let t0 = Instant(1_000_000_000);
        let mut p = Pacer::new(rtt, window, mtu, t0);
        // capacity: 2 ms of 100 kB/100 ms is 2 kB, raised to 10 datagrams.
        assert_eq!(p.capacity, 10_000);
        for _ in 0..10 {
            assert_eq!(p.delay(rtt, mtu, mtu, window, t0), None);
            p.on_transmit(mtu);
        }
        let wait = p
            .delay(rtt, mtu, mtu, window, t0)
            .expect("the bucket is empty");
        // refill of the whole capacity (10 kB) at 1 MB/s, scaled by 4/5: 8 ms.
        assert_eq!(wait, t0 + ms(8));
        // 0.8 ms later 1000 bytes have accrued at 1.25 MB/s.
        assert_eq!(p.delay(rtt, mtu, mtu, window, t0 + Duration(800_000)), None);
    }
}
