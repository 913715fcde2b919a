//! Per-path window state shared by the coupled controllers, and the helpers that turn the
//! transport's [`PathView`]s into the samples the coupling formulas read.
//!
//! Every controller in this directory keeps one [`Subflow`] per path and applies the same
//! conventions as [`NewReno`](crate::cc::NewReno), so traces are comparable:
//!
//! * windows in bytes; slow start while `cwnd < ssthresh`, `+min(bytes_acked, L·MSS)` per ACK
//!   (RFC 3465 §2.2), uncoupled;
//! * with one usable path, NewReno's byte-counted congestion avoidance and halving exactly
//!   ([`Subflow::reno_increase`], [`Subflow::reno_ssthresh`]);
//! * real-valued increases accumulate in a signed byte credit and move the window by whole
//!   segments, carrying the remainder, so nothing drifts ([`Subflow::grow`]);
//! * the kernel's compare-then-increment counter: one packet of growth per `T + 1` ACK events
//!   ([`Subflow::kernel_advance`], ALGORITHMS.md §0.1).
//!
//! Invariants: `cwnd ≥ 1·MSS` except as set by a caller's explicit floor; `mss ≥ 1`; the
//! recovery flag is set by a congestion event and cleared by the end of recovery, a timeout or
//! an ACK the transport reports outside recovery.

use crate::cc::multipath::config::WindowConfig;
use crate::cc::multipath::{KernelSample, PathSample, Paths};
use crate::cc::{Metrics, PathId, PathView};
use crate::units::Bytes;

/// ssthresh before the first congestion event.
pub(crate) const INFINITE: u64 = u64::MAX;

/// Bytes of credit within which a whole segment (or byte) counts as reached: far below any
/// real increment, far above the rounding error of summing a few thousand of them.
const ROUNDING: f64 = 1e-6;

/// The kernel's `cong_avoid` counts at most this many events for one ACK when counting per
/// packet, so a nonsensical ACK size cannot stall the caller.
const MAX_EVENTS_PER_ACK: u64 = 1 << 16;

/// One path's window, threshold and growth counters.
#[derive(Clone, Debug)]
pub(crate) struct Subflow {
    /// Segment size, at least 1.
    pub(crate) mss: u64,
    /// Congestion window in bytes.
    pub(crate) cwnd: u64,
    /// Slow-start threshold in bytes, [`INFINITE`] until the first congestion event.
    pub(crate) ssthresh: u64,
    /// In loss recovery (between `on_congestion_event` and `on_recovery_end`).
    pub(crate) in_recovery: bool,
    /// Bytes acknowledged in byte-counted congestion avoidance since the last increase
    /// (NewReno's counter, SCTP's `partial_bytes_acked`).
    acked: u64,
    /// Real-valued growth not yet applied, in bytes of window; negative for OLIA's decreases.
    credit: f64,
    /// The kernel's `snd_cwnd_cnt` (LIA, Balia: ACK events) or OLIA's signed counter in
    /// 1/1024 packet.
    pub(crate) cnt: i64,
    /// Whether the last congestion-avoidance ACK was handled by the coupled rule (the counters
    /// restart when a path moves between the coupled rule and the one-path NewReno rule).
    coupled: bool,
}

impl Subflow {
    /// A path in slow start with the initial window.
    pub(crate) fn new(mss: Bytes, window: &WindowConfig) -> Self {
        let mss = mss.0.max(1);
        Subflow {
            mss,
            cwnd: mss.saturating_mul(window.initial_segments().max(1) as u64),
            ssthresh: INFINITE,
            in_recovery: false,
            acked: 0,
            credit: 0.0,
            cnt: 0,
            coupled: false,
        }
    }

    /// `cwnd < ssthresh`, NewReno's test.
    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// The window coupled sums count: ssthresh while in recovery (htsim `mtcp.cpp`, kernel
    /// `mptcp_olia.c`), else cwnd.
    pub(crate) fn effective_window(&self) -> u64 {
        if self.in_recovery && self.ssthresh != INFINITE {
            self.ssthresh
        } else {
            self.cwnd
        }
    }

    /// The window in whole packets, as the kernel's `snd_cwnd` (at least 1).
    pub(crate) fn packets(&self) -> u64 {
        (self.cwnd / self.mss).max(1)
    }

    /// Counted packets for the increase rules: the bytes acknowledged (per packet), or one
    /// segment (per ACK event), in bytes.
    pub(crate) fn counted_bytes(&self, bytes_acked: u64, per_event: bool) -> u64 {
        if per_event {
            self.mss
        } else {
            bytes_acked
        }
    }

    /// Notes which rule handles this ACK; switching between the coupled rule and the one-path
    /// NewReno rule restarts the growth counters.
    pub(crate) fn use_rule(&mut self, coupled: bool) {
        if self.coupled != coupled {
            self.coupled = coupled;
            self.reset_counters();
        }
    }

    /// RFC 3465 §2.2 slow start: `cwnd += min(bytes_acked, L·SMSS)`.
    pub(crate) fn slow_start(&mut self, bytes_acked: u64, abc_limit: u32) {
        let cap = (abc_limit as u64).saturating_mul(self.mss);
        self.cwnd = self.cwnd.saturating_add(bytes_acked.min(cap));
    }

    /// NewReno's congestion avoidance (RFC 5681 §3.1, byte counting): one MSS per window of
    /// acknowledged bytes.
    pub(crate) fn reno_increase(&mut self, bytes_acked: u64) {
        self.acked = self.acked.saturating_add(bytes_acked);
        if self.acked >= self.cwnd {
            self.acked -= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(self.mss);
        }
    }

    /// SCTP's congestion avoidance (RFC 4960 §7.2.2): when a window of bytes has been
    /// acknowledged, add `incr` bytes; fractions of a byte carry over.
    pub(crate) fn window_counted_increase(&mut self, bytes_acked: u64, incr: f64) {
        self.acked = self.acked.saturating_add(bytes_acked);
        if self.acked >= self.cwnd {
            self.acked -= self.cwnd;
            self.add_bytes(incr);
        }
    }

    /// Adds `incr` bytes (≥ 0) to the window, carrying the fraction of a byte.
    pub(crate) fn add_bytes(&mut self, incr: f64) {
        if !(incr.is_finite() && incr > 0.0) {
            return;
        }
        self.credit += incr;
        // Sums of fractions can land a rounding error short of a whole byte.
        let whole = (self.credit + ROUNDING).floor();
        self.credit = (self.credit - whole).max(0.0);
        self.cwnd = self.cwnd.saturating_add(whole as u64);
    }

    /// Accumulates `growth` bytes of window (negative to shrink) and moves cwnd by whole
    /// segments, carrying the remainder (RFC 6356 §4's counter, without its rounding). A
    /// shrink stops at `floor` and forgets the rest of the debt, as the kernel resets its
    /// counter (`mptcp_olia.c`).
    pub(crate) fn grow(&mut self, growth: f64, floor: u64) {
        if !growth.is_finite() {
            return;
        }
        self.credit += growth;
        let mss = self.mss as f64;
        // A sum of increments that should make a whole segment can fall a rounding error
        // short of it; within `ROUNDING` bytes counts as reached.
        if self.credit + ROUNDING >= mss {
            let k = ((self.credit + ROUNDING) / mss).floor();
            self.credit -= k * mss;
            let add = (k as u64).saturating_mul(self.mss);
            self.cwnd = self.cwnd.saturating_add(add);
        } else if self.credit - ROUNDING <= -mss {
            let k = ((ROUNDING - self.credit) / mss).floor();
            self.credit += k * mss;
            let sub = (k as u64).saturating_mul(self.mss);
            let lowest = floor.min(self.cwnd);
            let shrunk = self.cwnd.saturating_sub(sub);
            if shrunk <= lowest {
                self.cwnd = lowest;
                self.credit = 0.0;
            } else {
                self.cwnd = shrunk;
            }
        }
    }

    /// Growth not yet applied, in bytes (tests read it to check per-ACK increases).
    #[cfg(test)]
    pub(crate) fn credit(&self) -> f64 {
        self.credit
    }

    /// Runs the kernel's compare-then-increment counter (`mptcp_coupled.c`,
    /// `mptcp_balia.c`) for up to `*events` ACK events against threshold `t`: an event with
    /// `cnt ≥ t` adds one packet and clears the counter, any other adds one to it. Returns
    /// after the first increment (the caller recomputes `t`) or when the events run out.
    pub(crate) fn kernel_advance(&mut self, events: &mut u64, t: u64) -> bool {
        let cnt = self.cnt.max(0) as u64;
        // ALGORITHMS.md §0.1: one packet of growth takes T+1 events.
        let counting = t.saturating_sub(cnt);
        if *events <= counting {
            self.cnt = cnt.saturating_add(*events).min(i64::MAX as u64) as i64;
            *events = 0;
            return false;
        }
        *events -= counting + 1;
        self.cwnd = self.cwnd.saturating_add(self.mss);
        self.cnt = 0;
        true
    }

    /// Runs OLIA's kernel counter (`mptcp_olia.c`) for up to `*events` ACK events, each adding
    /// `d` (in 1/1024 packet): at ≥ 1023 the window grows by one packet, at ≤ −1023 it shrinks
    /// by one (not below one packet), and the counter restarts from 0 (the residual is lost).
    /// Returns after the first change of window or when the events run out.
    pub(crate) fn olia_advance(&mut self, events: &mut u64, d: i64) -> bool {
        const LIMIT: i64 = (1 << 10) - 1;
        if d == 0 || *events == 0 {
            *events = 0;
            return false;
        }
        let room = if d > 0 {
            LIMIT - self.cnt
        } else {
            self.cnt + LIMIT
        };
        let step = d.unsigned_abs();
        // Events until the counter reaches the limit, at least one.
        let need = (room.max(1) as u64).div_ceil(step).max(1);
        if *events < need {
            let moved = (*events as i64).saturating_mul(d);
            self.cnt = self.cnt.saturating_add(moved);
            *events = 0;
            return false;
        }
        *events -= need;
        if d > 0 {
            self.cwnd = self.cwnd.saturating_add(self.mss);
        } else {
            self.cwnd = self.cwnd.saturating_sub(self.mss).max(self.mss);
        }
        self.cnt = 0;
        true
    }

    /// The number of ACK events one ACK stands for: one, or (counting per packet) the packets
    /// it covers, rounded up.
    pub(crate) fn events(&self, bytes_acked: u64, per_event: bool) -> u64 {
        if per_event {
            1
        } else {
            bytes_acked.div_ceil(self.mss).clamp(1, MAX_EVENTS_PER_ACK)
        }
    }

    /// NewReno's threshold after a loss: `max(cwnd/2, 2·MSS)` (RFC 5681 §3.1 eq. 4, with cwnd
    /// for FlightSize as Linux `tcp_reno_ssthresh` does).
    pub(crate) fn reno_ssthresh(&self) -> u64 {
        (self.cwnd / 2).max(self.mss.saturating_mul(2))
    }

    /// The kernel's `tcp_reno_ssthresh` in packets, `max(⌊w/2⌋, 2)`, returned in bytes.
    pub(crate) fn kernel_reno_ssthresh(&self) -> u64 {
        (self.packets() / 2).max(2).saturating_mul(self.mss)
    }

    /// Loss recovery starts: ssthresh and cwnd become `ssthresh` (at least one segment).
    pub(crate) fn enter_recovery(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh.max(self.mss);
        self.cwnd = self.ssthresh;
        self.in_recovery = true;
        self.reset_counters();
    }

    /// A retransmission timeout: the new threshold (none when a repeated timeout holds it,
    /// RFC 5681 §3.1) and a loss window of one segment.
    pub(crate) fn timeout(&mut self, ssthresh: Option<u64>) {
        if let Some(s) = ssthresh {
            self.ssthresh = s.max(self.mss);
        }
        self.cwnd = self.mss;
        self.in_recovery = false;
        self.reset_counters();
    }

    /// Clears every growth counter.
    pub(crate) fn reset_counters(&mut self) {
        self.acked = 0;
        self.credit = 0.0;
        self.cnt = 0;
    }

    /// The window and threshold for traces.
    pub(crate) fn metrics(&self) -> Metrics {
        Metrics::new(
            Bytes(self.cwnd),
            (self.ssthresh != INFINITE).then_some(Bytes(self.ssthresh)),
        )
    }

    /// Sets the window and threshold directly (tests put a path into a vector's state).
    #[cfg(test)]
    pub(crate) fn force(&mut self, cwnd: u64, ssthresh: u64) {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self.reset_counters();
    }
}

/// Whether a path may enter the coupled sums: established (`can_send`) with an RTT estimate
/// above zero (kernel `mptcp_ccc_sk_can_send`: `mptcp_sk_can_send(sk) && srtt`).
pub(crate) fn usable(v: &PathView) -> bool {
    v.can_send && v.srtt.is_some_and(|d| d.0 > 0)
}

/// Path slots paired with their views, for the paths a coupled sum counts.
pub(crate) fn usable_paths<'a, T>(
    slots: &'a [Option<T>],
    paths: &Paths<'a>,
) -> impl Iterator<Item = (usize, &'a T, &'a PathView)> + 'a {
    let views = paths.0;
    slots.iter().enumerate().filter_map(move |(i, s)| {
        let st = s.as_ref()?;
        let v = views.get(i)?;
        usable(v).then_some((i, st, v))
    })
}

/// Whether path `p` is coupled: it is usable and at least one other usable path exists. With
/// one usable path every controller behaves exactly as NewReno (the kernel falls back to
/// Reno, `mptcp_coupled.c`).
pub(crate) fn is_coupled<T>(slots: &[Option<T>], paths: &Paths<'_>, p: PathId) -> bool {
    let own =
        paths.get(p).is_some_and(usable) && slots.get(p.0 as usize).is_some_and(Option::is_some);
    own && usable_paths(slots, paths).nth(1).is_some()
}

/// The smoothed RTT of a usable view in seconds (at least 1 ns).
pub(crate) fn rtt_secs(v: &PathView) -> f64 {
    v.srtt.map_or(1e-9, |d| d.0.max(1) as f64 / 1e9)
}

/// The kernel's `srtt_us`: eight times the smoothed RTT in microseconds (at least 1).
pub(crate) fn srtt_us(v: &PathView) -> u64 {
    v.srtt.map_or(1, |d| (d.0 / 125).max(1))
}

/// A real-valued sample of a path: a window in bytes and its smoothed RTT in seconds.
pub(crate) fn sample(window: u64, v: &PathView) -> PathSample {
    PathSample {
        window: window as f64,
        rtt: rtt_secs(v),
    }
}

/// A kernel sample of a path: a window (bytes) in whole packets and its `srtt_us`.
pub(crate) fn kernel_sample(window: u64, mss: u64, v: &PathView) -> KernelSample {
    KernelSample {
        cwnd: (window / mss.max(1)).max(1),
        srtt_us: srtt_us(v),
    }
}

/// The view of path `p`, or an empty one when the transport did not pass it (a caller bug
/// tolerated rather than a panic).
pub(crate) fn view_of(paths: &Paths<'_>, p: PathId, mss: u64) -> PathView {
    paths
        .get(p)
        .copied()
        .unwrap_or_else(|| PathView::new(p, Bytes(mss)))
}

/// Path `p`'s state among `slots`, if it exists.
pub(crate) fn slot_mut(slots: &mut [Option<Subflow>], p: PathId) -> Option<&mut Subflow> {
    slots.get_mut(p.0 as usize).and_then(Option::as_mut)
}

/// Loss recovery starts on path `p` at threshold `ssthresh` (nothing for an unknown path or
/// no threshold).
pub(crate) fn enter_recovery_at(slots: &mut [Option<Subflow>], p: PathId, ssthresh: Option<u64>) {
    if let (Some(sf), Some(ss)) = (slot_mut(slots, p), ssthresh) {
        sf.enter_recovery(ss);
    }
}

/// Loss recovery on path `p` ended.
pub(crate) fn end_recovery_at(slots: &mut [Option<Subflow>], p: PathId) {
    if let Some(sf) = slot_mut(slots, p) {
        sf.in_recovery = false;
    }
}

/// Path `p`'s retransmission timer fired; `ssthresh` is the new threshold (`None` holds it).
pub(crate) fn timeout_at(slots: &mut [Option<Subflow>], p: PathId, ssthresh: Option<u64>) {
    if let Some(sf) = slot_mut(slots, p) {
        sf.timeout(ssthresh);
    }
}

/// Path `p`'s window, zero for an unknown path.
pub(crate) fn window_of(slots: &[Option<Subflow>], p: PathId) -> Bytes {
    slots
        .get(p.0 as usize)
        .and_then(Option::as_ref)
        .map_or(Bytes::ZERO, |sf| Bytes(sf.cwnd))
}

/// Path `p`'s window and threshold for traces, empty for an unknown path.
pub(crate) fn subflow_metrics(slots: &[Option<Subflow>], p: PathId) -> Metrics {
    slots
        .get(p.0 as usize)
        .and_then(Option::as_ref)
        .map_or_else(Metrics::default, Subflow::metrics)
}

/// A fresh subflow in path `p`'s slot (a path joins).
pub(crate) fn add_subflow(
    slots: &mut Vec<Option<Subflow>>,
    p: PathId,
    mss: Bytes,
    window: &WindowConfig,
) {
    ensure_slot(slots, p.0 as usize);
    slots[p.0 as usize] = Some(Subflow::new(mss, window));
}

/// Empty path `p`'s slot (a path leaves).
pub(crate) fn remove_subflow(slots: &mut [Option<Subflow>], p: PathId) {
    if let Some(s) = slots.get_mut(p.0 as usize) {
        *s = None;
    }
}

/// Grows `slots` so that index `i` exists.
pub(crate) fn ensure_slot<T>(slots: &mut Vec<Option<T>>, i: usize) {
    if slots.len() <= i {
        slots.resize_with(i + 1, || None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf() -> Subflow {
        Subflow::new(Bytes(1000), &WindowConfig::default().initial_window(10))
    }

    #[test]
    fn kernel_counter_needs_threshold_plus_one_events() {
        let mut s = sf();
        let mut events = 1;
        let mut n = 0;
        loop {
            n += 1;
            if s.kernel_advance(&mut events, 40) {
                break;
            }
            events = 1;
        }
        assert_eq!(n, 41);
        assert_eq!(s.cwnd, 11_000);
        // Many events at once give the same result as one at a time.
        let mut s = sf();
        let mut events = 41 + 5;
        assert!(s.kernel_advance(&mut events, 40));
        assert_eq!(events, 5);
        assert!(!s.kernel_advance(&mut events, 40));
        assert_eq!(s.cnt, 5);
    }

    #[test]
    fn olia_counter_fires_at_1023_and_forgets_the_residual() {
        let mut s = sf();
        let mut steps = 0;
        loop {
            steps += 1;
            let mut e = 1;
            if s.olia_advance(&mut e, 25) {
                break;
            }
        }
        assert_eq!(steps, 41); // ⌈1023/25⌉
        assert_eq!((s.cwnd, s.cnt), (11_000, 0));
        let mut e = 1000;
        assert!(s.olia_advance(&mut e, -17));
        assert_eq!(e, 1000 - 61); // ⌈1023/17⌉
        assert_eq!(s.cwnd, 10_000);
    }

    #[test]
    fn olia_counter_never_shrinks_below_one_packet() {
        let mut s = sf();
        s.force(1000, INFINITE);
        let mut e = 1;
        assert!(s.olia_advance(&mut e, -5000));
        assert_eq!(s.cwnd, 1000);
    }

    #[test]
    fn credit_moves_whole_segments_and_keeps_the_remainder() {
        let mut s = sf();
        for _ in 0..3 {
            s.grow(400.0, 1000);
        }
        assert_eq!(s.cwnd, 11_000);
        assert!((s.credit() - 200.0).abs() < 1e-9);
        s.grow(-1300.0, 1000);
        assert_eq!(s.cwnd, 10_000);
        assert!((s.credit() + 100.0).abs() < 1e-9);
        s.grow(f64::NAN, 1000);
        assert_eq!(s.cwnd, 10_000);
    }

    #[test]
    fn shrinking_stops_at_the_floor() {
        let mut s = sf();
        s.grow(-1e12, 2000);
        assert_eq!(s.cwnd, 2000);
        assert_eq!(s.credit(), 0.0);
    }

    #[test]
    fn window_counted_increase_carries_fractions_of_a_byte() {
        let mut s = sf();
        s.force(10_000, 5000);
        for _ in 0..4 {
            s.window_counted_increase(10_000, 0.5);
        }
        // Windows complete after the 1st, 2nd and 4th ACK; the second half byte makes a byte.
        assert_eq!(s.cwnd, 10_001);
    }
}
