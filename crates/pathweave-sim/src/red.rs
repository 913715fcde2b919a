//! Random Early Detection with the semantics of ns-2's `REDQueue` (queue/red.cc), which ns-3's
//! `RedQueueDisc` also follows:
//!
//! * On each arrival the average is updated from the queue length *before* the packet is
//!   added (the packet being transmitted is not counted). After an idle period the average is
//!   first decayed as if `m = ⌊ptc·idle⌋` empty-queue arrivals had happened, where
//!   `ptc = rate / (8·mean_pktsize)`: `avg ← avg·(1−w_q)^(m+1) + w_q·q`.
//! * Drop probability: `p_b = max_p·(avg−min_th)/(max_th−min_th)` between the thresholds; with
//!   `gentle`, `p_b` rises linearly from max_p to 1 between max_th and 2·max_th; without it,
//!   every arrival above max_th is dropped.
//! * Uniform inter-drop spacing (`modify_p`): with `wait`, `p_a = 0` while `count·p_b < 1`,
//!   `p_a = p_b/(2−count·p_b)` while `< 2`, else 1; without `wait`, `p_a = p_b/(1−count·p_b)`.
//!   In byte mode `count` is bytes/mean_pktsize and `p_a` is scaled by size/mean_pktsize.
//! * The first arrival after `avg` crosses min_th is never dropped; `count` restarts at every
//!   drop, and a drop is considered only when the instantaneous queue length exceeds 1 — one
//!   packet in packet mode, one byte (any waiting packet) in byte mode, as ns-2 compares its
//!   byte count there.
//! * The hard limit (`qlen ≥ limit`) is a forced drop.
//!
//! # ns-2.35's automatic parameters
//!
//! ns-2.35 (2011, the last ns-2 release) no longer ships fixed thresholds and weight: its
//! defaults ask `REDQueue` to derive them from the link when the queue is attached to it.
//! The rules below were read from ns-2.35's sources as kept in two public research forks
//! (each adds its own, unrelated extensions; the functions cited are the same in both):
//! `ZorroTimaxYan/Redsims`, `ns-allinone-2.35/ns-2.35/queue/red.cc`, and
//! `gaokaihui/ns2-tso`, `ns-2.35/queue/red.cc` (both red.cc revision 1.90, 2011) —
//! `REDQueue::initialize_params`, the `link` command, `reset` and `enque`; the Queue/RED
//! defaults from `ZorroTimaxYan/Redsims`, `ns-allinone-2.35/ns-2.35/tcl/lib/ns-default.tcl`
//! (revision 1.388); and `Simulator instproc simplex-link` in the same repository's
//! `ns-allinone-2.35/ns-2.35/tcl/lib/ns-lib.tcl`, which calls `link` for every RED queue:
//!
//! * `ptc = bandwidth / (8·mean_pktsize_)`, packets of the mean size per second, taken from
//!   the link's bandwidth when the queue is attached (`link` command); the link's propagation
//!   delay is taken at the same moment. A later bandwidth change does not re-derive the
//!   thresholds or the weight, in ns-2 or here.
//! * `thresh_ = 0` (the default since December 2001, chosen for automatic configuration):
//!   `min_th = max(5, targetdelay_·ptc / 2)` packets, `targetdelay_` defaulting to 5 ms.
//! * `maxthresh_ = 0` (default): `max_th = 3·min_th`.
//! * `q_weight_ = -1` (default): an RTT guess `rtt = max(0.1 s, 3·(delay + 1/ptc))` and
//!   `w_q = 1 − exp(−1/(10·rtt·ptc))`, so the average's time constant is about ten such RTTs.
//!   (`q_weight_ = 0` would give `1 − exp(−1/ptc)` and `−2` `1 − exp(−10/ptc)`; not offered.)
//! * Thresholds stay in packets of `mean_pktsize_`; with `queue_in_bytes_` they, and the
//!   limit (`limit_`, in packets), are multiplied by `mean_pktsize_` to compare with the byte
//!   length of the queue — so in byte mode a limit of N holds N·mean_pktsize_ bytes, whatever
//!   the real packet size.
//! * Other Queue/RED defaults of ns-2.35: `mean_pktsize_ 500`, `bytes_ true` and
//!   `queue_in_bytes_ true` (both since 10/11/2004: byte mode), `linterm_ 10` (max_p 0.1),
//!   `gentle_ true`, `wait_ true`, `setbit_ false`, `adaptive_ 0`, `cautious_ 0`,
//!   `drop_tail_ true`, `use_mark_p_ true` with `mark_p_ 0.1`; `Queue set limit_ 50`.
//!   `use_mark_p_` only removes the "forced" label above 2·max_th (the drop then comes from
//!   `p_a = 1` instead, except for the rare first arrival after `old` was reset), which this
//!   model does not distinguish.
//!
//! [`auto_min_th`], [`auto_max_th`] and [`auto_w_q`] state these rules; the scenario reader
//! applies them for `min_th = "auto"`, `max_th = "auto"`, `w_q = "auto"`.

use pathweave_cc::{Bandwidth, Duration, Instant};

/// ns-2.35's `targetdelay_` default, which `min_th = "auto"` aims the queue at: 5 ms.
pub const NS2_TARGET_DELAY: Duration = Duration::from_millis(5);

/// ns-2's packet time constant: packets of `mean_pktsize` bytes the link sends per second.
pub fn packet_time_constant(rate: Bandwidth, mean_pktsize: u32) -> f64 {
    rate.bps() as f64 / (8.0 * mean_pktsize as f64)
}

/// ns-2.35's automatic lower threshold (packets of `mean_pktsize`): half the queue that
/// `target_delay` drains at the link rate, but never below 5 packets.
pub fn auto_min_th(rate: Bandwidth, mean_pktsize: u32, target_delay: Duration) -> f64 {
    let half_target = target_delay.as_secs_f64() * packet_time_constant(rate, mean_pktsize) / 2.0;
    half_target.max(5.0)
}

/// ns-2.35's automatic upper threshold: three times the lower one.
pub fn auto_max_th(min_th: f64) -> f64 {
    3.0 * min_th
}

/// ns-2.35's automatic EWMA weight (`q_weight_ = -1`) for a link of `rate` and one-way
/// propagation `delay`: the RTT is guessed as three times the delay plus one packet time, at
/// least 100 ms, and the weight makes the average's time constant ten such RTTs of packets.
pub fn auto_w_q(rate: Bandwidth, mean_pktsize: u32, delay: Duration) -> f64 {
    let ptc = packet_time_constant(rate, mean_pktsize);
    let rtt_guess = (3.0 * (delay.as_secs_f64() + 1.0 / ptc)).max(0.1);
    -(-1.0 / (10.0 * rtt_guess * ptc)).exp_m1()
}

/// RED parameters. Thresholds and the limit are in packets; in byte mode they are scaled by
/// `mean_pktsize`, as ns-2 does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// Lower average-queue threshold (packets).
    pub min_th: f64,
    /// Upper average-queue threshold (packets).
    pub max_th: f64,
    /// Drop probability at max_th.
    pub max_p: f64,
    /// EWMA weight of the average queue.
    pub w_q: f64,
    /// ns-2 `gentle_`.
    pub gentle: bool,
    /// ns-2 `wait_`: wait between drops.
    pub wait: bool,
    /// Queue limit (packets).
    pub limit: u32,
    /// Count the queue in bytes rather than packets (ns-2 `queue-in-bytes_`).
    pub bytes: bool,
    /// ns-2 `mean_pktsize_` in bytes: sets idle decay and byte-mode scaling.
    pub mean_pktsize: u32,
}

impl Default for RedParams {
    /// The values EXPERIMENTS.md takes as "ns-2 defaults": min_th 5, max_th 15, max_p 0.1,
    /// w_q 0.002, gentle, wait, limit 50, packet mode; mean_pktsize 500 as in ns-default.tcl.
    fn default() -> Self {
        RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            w_q: 0.002,
            gentle: true,
            wait: true,
            limit: 50,
            bytes: false,
            mean_pktsize: 500,
        }
    }
}

/// What to do with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queue it.
    Enqueue,
    /// Random early drop.
    EarlyDrop,
    /// Forced drop: the average is past the hard threshold.
    ForcedDrop,
    /// The buffer is full.
    Overflow,
}

/// RED state for one queue.
#[derive(Clone, Debug)]
pub struct Red {
    p: RedParams,
    ptc: f64,
    th_min: f64,
    th_max: f64,
    qlim: f64,
    avg: f64,
    count: u64,
    count_bytes: u64,
    old: bool,
    /// `(1−w_q)^k` for `k < DECAY_POWERS`: the decay after the short idle periods most
    /// arrivals follow, without a `powi` call each time.
    decay: [f64; DECAY_POWERS],
    /// Idle periods shorter than this (ns) count no empty-queue arrivals, see [`short_idle`].
    short_idle_ns: u64,
}

/// The idle periods (ns) below which `⌊ptc·idle⌋` is certainly 0 as the arrival path computes
/// it (`ptc · (ns / 1e9)` in floats): a period of `(1 − 10⁻⁶)·10⁹/ptc` ns at most, so the
/// product stays below `1 − 10⁻⁶` up to rounding errors of a few parts in 10¹⁶. Those
/// arrivals skip the float conversion and give the same `m`.
fn short_idle(ptc: f64) -> u64 {
    ((1.0 - 1e-6) * 1e9 / ptc) as u64
}

/// Powers of `1−w_q` kept by [`Red`].
const DECAY_POWERS: usize = 64;

/// `(1−w_q)^k` for every `k < DECAY_POWERS`, each by the `powi` the arrival path calls for
/// larger `k`, so a value taken from the table is the one the call would give, to the bit
/// (`black_box` keeps the compiler from evaluating the powers any other way).
fn decay_powers(w_q: f64) -> [f64; DECAY_POWERS] {
    let mut out = [0.0; DECAY_POWERS];
    for (k, d) in out.iter_mut().enumerate() {
        *d = (1.0 - w_q).powi(std::hint::black_box(k as i32));
    }
    out
}

/// ns-2 `calculate_p_new`: the base drop probability for an average queue `avg`.
pub fn base_probability(avg: f64, th_min: f64, th_max: f64, max_p: f64, gentle: bool) -> f64 {
    let p = if gentle && avg >= th_max {
        // v_c·avg + v_d with v_c = (1−max_p)/th_max, v_d = 2·max_p − 1
        (1.0 - max_p) / th_max * avg + 2.0 * max_p - 1.0
    } else if !gentle && avg >= th_max {
        1.0
    } else {
        max_p * (avg - th_min) / (th_max - th_min)
    };
    p.min(1.0)
}

/// ns-2 `modify_p`: spread drops uniformly given `count` arrivals since the last drop.
pub fn spaced_probability(pb: f64, count: f64, wait: bool) -> f64 {
    let cp = count * pb;
    let p = if wait {
        if cp < 1.0 {
            0.0
        } else if cp < 2.0 {
            pb / (2.0 - cp)
        } else {
            1.0
        }
    } else if cp < 1.0 {
        pb / (1.0 - cp)
    } else {
        1.0
    };
    p.min(1.0)
}

impl Red {
    /// RED state for a link of `rate`.
    pub fn new(p: RedParams, rate: Bandwidth) -> Self {
        let scale = if p.bytes { p.mean_pktsize as f64 } else { 1.0 };
        let ptc = packet_time_constant(rate, p.mean_pktsize);
        Red {
            ptc,
            short_idle_ns: short_idle(ptc),
            th_min: p.min_th * scale,
            th_max: p.max_th * scale,
            qlim: p.limit as f64 * scale,
            p,
            avg: 0.0,
            count: 0,
            count_bytes: 0,
            old: false,
            decay: decay_powers(p.w_q),
        }
    }

    /// The link rate changed: the idle-decay rate follows it.
    pub fn set_rate(&mut self, rate: Bandwidth) {
        self.ptc = packet_time_constant(rate, self.p.mean_pktsize);
        self.short_idle_ns = short_idle(self.ptc);
    }

    /// The average queue (packets, or bytes in byte mode).
    pub fn average(&self) -> f64 {
        self.avg
    }

    /// Decide for a packet of `size` bytes arriving at `now`, with `q_pkts`/`q_bytes` waiting
    /// (not counting one in transmission) and the link idle since `idle_since` if it is idle.
    /// `uniform` supplies a U(0,1) draw when a random decision is needed.
    #[inline(always)]
    pub fn on_arrival(
        &mut self,
        now: Instant,
        q_pkts: u32,
        q_bytes: u64,
        size: u32,
        idle_since: Option<Instant>,
        uniform: &mut impl FnMut() -> f64,
    ) -> Verdict {
        let qlen = if self.p.bytes {
            q_bytes as f64
        } else {
            q_pkts as f64
        };
        let m = match idle_since {
            Some(t) => {
                let idle = now.saturating_since(t);
                if idle.0 < self.short_idle_ns {
                    0
                } else {
                    (self.ptc * idle.as_secs_f64()) as i64
                }
            }
            None => 0,
        };
        // avg·(1−w_q)^(m+1) + w_q·q
        let decay = if m == 0 {
            1.0 - self.p.w_q
        } else {
            let k = (m + 1).min(i32::MAX as i64) as i32;
            match self.decay.get(k as usize) {
                Some(&d) => d,
                None => (1.0 - self.p.w_q).powi(k),
            }
        };
        self.avg = self.avg * decay + self.p.w_q * qlen;
        self.count += 1;
        self.count_bytes += size as u64;

        let mut verdict = Verdict::Enqueue;
        if self.avg >= self.th_min && qlen > 1.0 {
            let hard = if self.p.gentle {
                2.0 * self.th_max
            } else {
                self.th_max
            };
            if self.avg >= hard {
                verdict = Verdict::ForcedDrop;
            } else if !self.old {
                self.count = 1;
                self.count_bytes = size as u64;
                self.old = true;
            } else {
                let pb = base_probability(
                    self.avg,
                    self.th_min,
                    self.th_max,
                    self.p.max_p,
                    self.p.gentle,
                );
                let count = if self.p.bytes {
                    (self.count_bytes / self.p.mean_pktsize as u64) as f64
                } else {
                    self.count as f64
                };
                let mut pa = spaced_probability(pb, count, self.p.wait);
                if self.p.bytes && pa < 1.0 {
                    pa = (pa * size as f64 / self.p.mean_pktsize as f64).min(1.0);
                }
                if uniform() <= pa {
                    verdict = Verdict::EarlyDrop;
                }
            }
        } else {
            self.old = false;
        }
        if qlen >= self.qlim {
            verdict = Verdict::Overflow;
        }
        if verdict != Verdict::Enqueue {
            self.count = 0;
            self.count_bytes = 0;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_idle_periods_count_no_arrivals_by_the_float_formula() {
        for ptc in [1.0, 7211.538461538462, 8000.0, 1e6 / 3.0, 1.2e7, 0.37] {
            let bound = short_idle(ptc);
            assert!(bound > 0);
            for ns in [0, 1, bound / 2, bound - 2, bound - 1] {
                let m = (ptc * Duration(ns).as_secs_f64()) as i64;
                assert_eq!(m, 0, "ptc {ptc}, {ns} ns");
            }
            // The bound is tight to about ten parts in a million (or a nanosecond or two).
            let past = bound + bound / 100_000 + 2;
            assert_eq!((ptc * Duration(past).as_secs_f64()) as i64, 1, "ptc {ptc}");
        }
    }

    #[test]
    fn decay_table_holds_the_powers_powi_gives() {
        for w_q in [0.002, 3.9992e-4, 0.1, 1.0 / 3.0] {
            let table = decay_powers(w_q);
            for (k, &d) in table.iter().enumerate() {
                let direct = (1.0 - w_q).powi(std::hint::black_box(k as i32));
                assert_eq!(d.to_bits(), direct.to_bits(), "w_q {w_q}, k {k}");
            }
        }
    }

    #[test]
    fn automatic_parameters_follow_ns2_35() {
        // 10 Mbps, 500-byte mean packets: 10e6 / 4000 = 2500 packets/s.
        let rate = Bandwidth::from_bps(10_000_000);
        assert!((packet_time_constant(rate, 500) - 2500.0).abs() < 1e-9);
        // 5 ms of 2500 packets/s = 12.5 packets; half of it, 6.25, is above the floor of 5.
        let min_th = auto_min_th(rate, 500, NS2_TARGET_DELAY);
        assert!((min_th - 6.25).abs() < 1e-12, "{min_th}");
        assert!((auto_max_th(min_th) - 18.75).abs() < 1e-12);
        // One-way 20 ms: 3·(0.020 + 1/2500) = 0.0612 s is below the 100 ms floor, so
        // w_q = 1 − e^(−1/(10·0.1·2500)) = 1 − e^(−1/2500) ≈ 3.9992e-4.
        let w_q = auto_w_q(rate, 500, Duration::from_millis(20));
        let expected = 1.0 - (-1.0f64 / 2500.0).exp();
        assert!((w_q - expected).abs() < 1e-15, "{w_q} vs {expected}");
        assert!((w_q - 3.9992e-4).abs() < 1e-8);
        // A longer target delay raises min_th: 20 ms → 50 packets → 25.
        let long = auto_min_th(rate, 500, Duration::from_millis(20));
        assert!((long - 25.0).abs() < 1e-12);
    }

    #[test]
    fn automatic_parameters_floor_and_long_links() {
        // 1 Mbps: 250 packets/s of 500 B, half a 5 ms queue is 0.625 packets: the floor of 5.
        assert_eq!(
            auto_min_th(Bandwidth::from_bps(1_000_000), 500, NS2_TARGET_DELAY),
            5.0
        );
        // 32 Mbps, 90 ms one way, 500 B: ptc 8000, RTT guess 3·(0.09 + 1/8000) = 0.270375 s
        // (above the floor), w_q = 1 − e^(−1/(10·0.270375·8000)) = 1 − e^(−1/21630).
        let w_q = auto_w_q(
            Bandwidth::from_bps(32_000_000),
            500,
            Duration::from_millis(90),
        );
        let expected = 1.0 - (-1.0f64 / 21_630.0).exp();
        assert!((w_q - expected).abs() < 1e-15, "{w_q} vs {expected}");
        // The mean packet size enters through ptc: 1000 B halves it and doubles w_q (nearly).
        let big = auto_w_q(
            Bandwidth::from_bps(10_000_000),
            1000,
            Duration::from_millis(20),
        );
        assert!((big - (1.0 - (-1.0f64 / 1250.0).exp())).abs() < 1e-15);
    }

    #[test]
    fn base_probability_follows_the_ns2_piecewise_line() {
        // Between the thresholds: max_p·(avg−min)/(max−min).
        assert!((base_probability(10.0, 5.0, 15.0, 0.1, true) - 0.05).abs() < 1e-12);
        assert_eq!(base_probability(5.0, 5.0, 15.0, 0.1, true), 0.0);
        // Gentle: max_p at max_th, rising linearly to 1 at 2·max_th.
        assert!((base_probability(15.0, 5.0, 15.0, 0.1, true) - 0.1).abs() < 1e-12);
        assert!((base_probability(22.5, 5.0, 15.0, 0.1, true) - 0.55).abs() < 1e-12);
        assert!((base_probability(30.0, 5.0, 15.0, 0.1, true) - 1.0).abs() < 1e-12);
        // Not gentle: 1 at and above max_th.
        assert_eq!(base_probability(15.0, 5.0, 15.0, 0.1, false), 1.0);
    }

    #[test]
    fn spacing_makes_drops_uniform() {
        // wait: nothing until count·p ≥ 1, then p/(2 − count·p).
        assert_eq!(spaced_probability(0.05, 10.0, true), 0.0);
        assert!((spaced_probability(0.05, 30.0, true) - 0.1).abs() < 1e-12);
        assert_eq!(spaced_probability(0.05, 40.0, true), 1.0);
        // no wait: p/(1 − count·p).
        assert!((spaced_probability(0.05, 10.0, false) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn average_tracks_the_ewma_and_decays_when_idle() {
        let p = RedParams {
            w_q: 0.5,
            mean_pktsize: 1000,
            ..RedParams::default()
        };
        // 8 Mbps, mean packet 1000 B: ptc = 1000 packets/s.
        let mut red = Red::new(p, Bandwidth::from_bps(8_000_000));
        let mut never = || 1.0;
        red.on_arrival(Instant(0), 4, 4000, 1000, None, &mut never);
        assert!((red.average() - 2.0).abs() < 1e-12);
        red.on_arrival(Instant(0), 4, 4000, 1000, None, &mut never);
        assert!((red.average() - 3.0).abs() < 1e-12);
        // Idle for 2 ms = 2 packet times: avg·0.5^3 + 0.5·0.
        red.on_arrival(Instant(2_000_000), 0, 0, 1000, Some(Instant(0)), &mut never);
        assert!((red.average() - 3.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn hard_limit_and_high_average_force_drops() {
        let mut red = Red::new(RedParams::default(), Bandwidth::from_bps(10_000_000));
        let mut never = || 1.0;
        assert_eq!(
            red.on_arrival(Instant(0), 50, 0, 1000, None, &mut never),
            Verdict::Overflow
        );
        let mut red = Red::new(
            RedParams {
                w_q: 1.0,
                ..RedParams::default()
            },
            Bandwidth::from_bps(1),
        );
        assert_eq!(
            red.on_arrival(Instant(0), 31, 0, 1000, None, &mut never),
            Verdict::ForcedDrop
        );
    }

    #[test]
    fn first_arrival_above_min_th_is_never_dropped() {
        // max_p 1 and avg 10 give p_b = 0.5; the second arrival has count 2, so p_a = 0.5.
        let p = RedParams {
            w_q: 1.0,
            max_p: 1.0,
            ..RedParams::default()
        };
        let mut red = Red::new(p, Bandwidth::from_bps(1));
        let mut draw = || 0.25;
        assert_eq!(
            red.on_arrival(Instant(0), 10, 0, 1000, None, &mut draw),
            Verdict::Enqueue
        );
        assert_eq!(
            red.on_arrival(Instant(0), 10, 0, 1000, None, &mut draw),
            Verdict::EarlyDrop
        );
        // The drop restarted the count: count 1 gives count·p_b < 1, so p_a = 0 (wait).
        assert_eq!(
            red.on_arrival(Instant(0), 10, 0, 1000, None, &mut draw),
            Verdict::Enqueue
        );
    }

    #[test]
    fn one_waiting_packet_is_enough_for_a_drop_in_byte_mode_only() {
        // min_th 1, max_th 3 packets of 500 B: 500 and 1500 B. One 1000 B packet waiting
        // gives avg 1000 B (w_q 1) and p_b = (1000 − 500)/1000 = 0.5.
        let p = RedParams {
            min_th: 1.0,
            max_th: 3.0,
            w_q: 1.0,
            max_p: 1.0,
            bytes: true,
            mean_pktsize: 500,
            ..RedParams::default()
        };
        let mut red = Red::new(p, Bandwidth::from_bps(1));
        let mut draw = || 0.3;
        // ns-2 compares the byte length with 1: the first arrival only sets `old` ...
        assert_eq!(
            red.on_arrival(Instant(0), 1, 1000, 1000, None, &mut draw),
            Verdict::Enqueue
        );
        // ... the second has count_bytes 2000 → count 4, count·p_b = 2 → p_a = 1.
        assert_eq!(
            red.on_arrival(Instant(0), 1, 1000, 1000, None, &mut draw),
            Verdict::EarlyDrop
        );
        // In packet mode one waiting packet never allows a drop.
        let mut red = Red::new(
            RedParams {
                min_th: 0.5,
                max_th: 1.5,
                w_q: 1.0,
                max_p: 1.0,
                ..RedParams::default()
            },
            Bandwidth::from_bps(1),
        );
        for _ in 0..3 {
            assert_eq!(
                red.on_arrival(Instant(0), 1, 1000, 1000, None, &mut draw),
                Verdict::Enqueue
            );
        }
    }

    #[test]
    fn byte_mode_scales_thresholds_limit_and_probability_by_packet_size() {
        // mean_pktsize 1000: min_th 5 → 5000 B, max_th 15 → 15000 B, limit 50 → 50000 B.
        let p = RedParams {
            w_q: 1.0,
            max_p: 1.0,
            bytes: true,
            mean_pktsize: 1000,
            ..RedParams::default()
        };
        let mut red = Red::new(p, Bandwidth::from_bps(1));
        let mut draw = || 0.3;
        // 4000 B waiting: below min_th in bytes although 40 packets would be far above it.
        assert_eq!(
            red.on_arrival(Instant(0), 40, 4000, 1000, None, &mut draw),
            Verdict::Enqueue
        );
        // 10000 B: p_b = 0.5; first arrival above min_th is spared, count_bytes restarts at 500.
        assert_eq!(
            red.on_arrival(Instant(0), 10, 10_000, 500, None, &mut draw),
            Verdict::Enqueue
        );
        // count_bytes 1000, then 1500: count = ⌊bytes/1000⌋ = 1, p_b·count < 1 with wait → p_a = 0.
        assert_eq!(
            red.on_arrival(Instant(0), 10, 10_000, 500, None, &mut draw),
            Verdict::Enqueue
        );
        assert_eq!(
            red.on_arrival(Instant(0), 10, 10_000, 500, None, &mut draw),
            Verdict::Enqueue
        );
        // A 1000 B packet: count_bytes 2500 → count 2 → p_a = 0.5/(2−1) = 0.5, times 1000/1000.
        assert_eq!(
            red.on_arrival(Instant(0), 10, 10_000, 1000, None, &mut draw),
            Verdict::EarlyDrop
        );
        // The drop restarted the count; a 500 B packet now: count 0 → p_a = 0.
        assert_eq!(
            red.on_arrival(Instant(0), 10, 10_000, 500, None, &mut draw),
            Verdict::Enqueue
        );
        // 50000 B waiting: the byte limit.
        assert_eq!(
            red.on_arrival(Instant(0), 10, 50_000, 1000, None, &mut draw),
            Verdict::Overflow
        );
    }
}
