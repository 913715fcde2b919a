//! Link capacity from a recorded trace in Mahimahi's format, and the schedule it gives a FIFO.
//!
//! A trace file has one line per delivery opportunity: an integer millisecond, the lines in
//! non-decreasing order, several equal lines being several opportunities at that millisecond.
//! The trace repeats with a period of its last timestamp. The semantics follow Mahimahi's
//! `mm-link` (`src/frontend/link_queue.cc` and `link_queue.hh` of ravinet/mahimahi, read at
//! commit 9f0dcb7):
//!
//! * each opportunity carries [`OPPORTUNITY_BYTES`] = 1504 bytes (`PACKET_SIZE`, "default max
//!   TUN payload size");
//! * an opportunity serves the packets queued when it occurs, in order, byte by byte: a packet
//!   smaller than what is left of the opportunity leaves the rest to the packet behind it, and
//!   a packet larger than what is left takes it all and continues in the next opportunity;
//!   a packet leaves the link at the opportunity that carries its last byte (`rationalize`);
//! * what an opportunity does not use is lost: it is not banked for later packets (the loop
//!   `break`s out of an opportunity when the queue is empty);
//! * an opportunity at time `t` serves only packets that arrived before `t`: Mahimahi burns
//!   every opportunity at or before the current millisecond before it enqueues an arrival;
//! * at the end of the trace the next pass starts with the period added to every timestamp
//!   (`base_timestamp_ += schedule_.back()`), so an opportunity at the last timestamp and one
//!   at 0 fall at the same time;
//! * an empty trace, a line that is not an integer, a decreasing timestamp and a last
//!   timestamp of 0 are refused.
//!
//! Where this model differs: Mahimahi refuses packets larger than 1504 bytes, whereas here
//! they span opportunities as a partly served packet does there; time is in nanoseconds, so
//! an arrival at 5.3 ms is served from the opportunities after 5.3 ms (Mahimahi's clock reads
//! 5 ms, with the same outcome for integer-millisecond opportunities).
//!
//! A FIFO link fixes each packet's schedule when it is accepted, and so does a trace link:
//! the first opportunity that serves a packet is its transmission start (it leaves the queue
//! there, as it leaves Mahimahi's packet queue), the one that carries its last byte its end.
//! [`TraceSchedule`] keeps the cursor into the trace and the bytes left in the last
//! opportunity used; a re-plan (outage, delay change) rewinds it to what it was before the
//! first packet that had not started.

use pathweave_cc::{Bandwidth, Instant};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

/// Bytes carried by one delivery opportunity: Mahimahi's `PACKET_SIZE`, 1504.
pub const OPPORTUNITY_BYTES: u32 = 1504;
/// The most lines (delivery opportunities) a trace may have: 10^7.
pub const MAX_TRACE_LINES: usize = 10_000_000;
/// The largest trace file: 10^8 bytes (100 MB).
pub const MAX_TRACE_BYTES: u64 = 100_000_000;

const MS: u64 = 1_000_000;

/// A delivery schedule loaded from a trace file: the opportunities' times in milliseconds.
/// Shared (behind an `Arc`) by every link direction that replays it.
#[derive(Clone, PartialEq, Eq)]
pub struct Trace {
    path: String,
    ms: Box<[u32]>,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("path", &self.path)
            .field("opportunities", &self.ms.len())
            .field("period_ms", &self.period_ms())
            .finish()
    }
}

impl Trace {
    /// Read the trace file at `path`: a regular file of at most [`MAX_TRACE_BYTES`] (checked
    /// from its metadata before it is opened, so a named pipe is refused without blocking).
    /// The error says what is wrong, without the file's name.
    pub fn load(path: &Path) -> Result<Trace, String> {
        let bytes = crate::scenario::read_regular_file(
            path,
            MAX_TRACE_BYTES,
            "a trace is a text file of millisecond timestamps",
            |len| format!("{len} bytes; trace files are limited to {MAX_TRACE_BYTES} bytes (10^8)"),
        )?;
        Trace::parse(&bytes, &path.display().to_string())
    }

    /// A trace from the text of a trace file; `path` names it in [`Trace::path`].
    pub fn parse(bytes: &[u8], path: &str) -> Result<Trace, String> {
        let mut ms: Vec<u32> = Vec::new();
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        if body.is_empty() {
            return Err(
                "the trace is empty: it needs one line per delivery opportunity, each an \
                 integer millisecond"
                    .into(),
            );
        }
        for (i, line) in body.split(|&b| b == b'\n').enumerate() {
            let n = i + 1;
            if ms.len() == MAX_TRACE_LINES {
                return Err(format!(
                    "more than {MAX_TRACE_LINES} lines; a trace may have at most 10^7 delivery \
                     opportunities"
                ));
            }
            let text = line.trim_ascii();
            let show = || {
                let s = String::from_utf8_lossy(line);
                let s = s.trim();
                let mut shown: String = s.chars().take(40).collect();
                if shown.len() < s.len() {
                    shown.push('…');
                }
                shown
            };
            if text.is_empty() {
                return Err(format!(
                    "line {n} is empty; each line is a delivery opportunity at an integer \
                     millisecond"
                ));
            }
            if !text.iter().all(u8::is_ascii_digit) {
                return Err(format!(
                    "line {n}: {:?} is not a non-negative integer number of milliseconds",
                    show()
                ));
            }
            let value = std::str::from_utf8(text)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|&v| v <= u32::MAX as u64)
                .ok_or_else(|| {
                    format!(
                        "line {n}: {} ms is past the largest timestamp, {} ms (about 49.7 days)",
                        show(),
                        u32::MAX
                    )
                })? as u32;
            if let Some(&prev) = ms.last() {
                if value < prev {
                    return Err(format!(
                        "line {n}: {value} ms is before the {prev} ms of line {}; timestamps \
                         must not decrease",
                        n - 1
                    ));
                }
            }
            ms.push(value);
        }
        if ms.last() == Some(&0) {
            return Err(
                "the last timestamp is 0 ms: the trace repeats every last timestamp, so it \
                 must end after 0 ms"
                    .into(),
            );
        }
        Ok(Trace {
            path: path.to_string(),
            ms: ms.into_boxed_slice(),
        })
    }

    /// The file it was read from, as named when loaded.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Delivery opportunities per period (the file's lines).
    pub fn opportunities(&self) -> usize {
        self.ms.len()
    }

    /// The period after which it repeats: its last timestamp, in milliseconds.
    pub fn period_ms(&self) -> u64 {
        self.ms.last().map_or(0, |&m| m as u64)
    }

    /// The mean rate over a period: `opportunities × 1504 B × 8 / period`, rounded to whole
    /// bit/s (at least 1 bit/s).
    pub fn mean_rate(&self) -> Bandwidth {
        let bits = self.ms.len() as u128 * OPPORTUNITY_BYTES as u128 * 8 * 1000;
        let period = self.period_ms().max(1) as u128;
        Bandwidth::from_bps(((bits + period / 2) / period).max(1) as u64)
    }
}

/// Where a trace link stands in its trace: the next opportunity, and the bytes left in the
/// last one used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cursor {
    /// The start of the pass through the trace that holds the next opportunity, in ns.
    base: u64,
    /// The next opportunity's line in the trace.
    line: u32,
    /// Bytes the last opportunity used has left, for a packet queued before it.
    credit: u32,
    /// When the last opportunity used occurred.
    last: Instant,
}

/// The transmission schedule of one trace link direction (in the cold part of a
/// [`LinkDir`](super::LinkDir)).
#[derive(Debug)]
pub(super) struct TraceSchedule {
    trace: Arc<Trace>,
    period_ns: u64,
    cursor: Cursor,
    /// The cursor as it was before each packet planned that had not started when planned,
    /// with that packet's start, oldest first; entries whose packet has started are dropped
    /// as they are passed. A re-plan rewinds to the first whose packet has not started.
    before: VecDeque<(Instant, Cursor)>,
}

impl TraceSchedule {
    pub(super) fn new(trace: Arc<Trace>) -> Self {
        let period_ns = trace.period_ms() * MS;
        TraceSchedule {
            trace,
            period_ns,
            cursor: Cursor {
                base: 0,
                line: 0,
                credit: 0,
                last: Instant::ZERO,
            },
            before: VecDeque::new(),
        }
    }

    /// The time of the opportunity under the cursor.
    #[inline]
    fn next_time(&self) -> u64 {
        self.cursor.base + self.trace.ms[self.cursor.line as usize] as u64 * MS
    }

    /// Move the cursor to the first opportunity after `t` (the cursor is at or before `t`).
    fn seek_after(&mut self, t: Instant) {
        let pass = t.0 / self.period_ns;
        let base = pass * self.period_ns;
        let within_ms = (t.0 - base) / MS;
        // Opportunities at whole milliseconds: the first after `t` is the first whose
        // millisecond is past `t`'s whole milliseconds into the pass.
        let line = self.trace.ms.partition_point(|&m| m as u64 <= within_ms);
        self.cursor.base = base;
        self.cursor.line = line as u32;
        if line == self.trace.ms.len() {
            self.cursor.base += self.period_ns;
            self.cursor.line = 0;
        }
    }

    /// Take the opportunity under the cursor: its time, and the cursor moves on.
    #[inline]
    fn take(&mut self) -> Instant {
        let t = Instant(self.next_time());
        self.cursor.line += 1;
        if self.cursor.line as usize == self.trace.ms.len() {
            self.cursor.line = 0;
            self.cursor.base += self.period_ns;
        }
        t
    }

    /// The transmission start and end of a packet of `size` bytes queued at `queued`, behind
    /// every packet planned before it.
    pub(super) fn plan(&mut self, size: u32, queued: Instant) -> (Instant, Instant) {
        while self.before.front().is_some_and(|&(s, _)| s <= queued) {
            self.before.pop_front();
        }
        let before = self.cursor;
        let mut left = size;
        let start;
        let mut end;
        if self.cursor.credit > 0 && self.cursor.last > queued {
            // The packet ahead ends in an opportunity still to come, with bytes to spare.
            let used = self.cursor.credit.min(left);
            self.cursor.credit -= used;
            left -= used;
            start = self.cursor.last;
            end = start;
        } else {
            // An opportunity at or before the arrival is gone, with what it had left.
            self.cursor.credit = 0;
            if self.next_time() <= queued.0 {
                self.seek_after(queued);
            }
            start = Instant(self.next_time());
            end = start;
        }
        while left > 0 {
            end = self.take();
            let used = OPPORTUNITY_BYTES.min(left);
            left -= used;
            self.cursor.credit = OPPORTUNITY_BYTES - used;
            self.cursor.last = end;
        }
        self.before.push_back((start, before));
        (start, end)
    }

    /// Rewind to the state after the last packet that has started by `now`, to plan again
    /// every packet behind it.
    pub(super) fn rewind(&mut self, now: Instant) {
        while let Some((start, cursor)) = self.before.pop_front() {
            if start > now {
                self.cursor = cursor;
                break;
            }
        }
        self.before.clear();
    }

    /// The trace replayed.
    pub(super) fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(text: &str) -> Arc<Trace> {
        Arc::new(Trace::parse(text.as_bytes(), "t").unwrap_or_else(|e| panic!("{e}")))
    }

    fn ms(x: u64) -> Instant {
        Instant(x * MS)
    }

    #[test]
    fn mean_rate_is_opportunities_times_1504_bytes_over_the_period() {
        assert_eq!(trace("1\n").mean_rate().bps(), 12_032_000);
        // 3 opportunities every 2 ms.
        assert_eq!(trace("0\n1\n2\n").mean_rate().bps(), 3 * 1504 * 8 * 500);
        assert_eq!(trace("5\n5\n10").period_ms(), 10);
    }

    #[test]
    fn two_small_packets_share_one_opportunity() {
        let mut s = TraceSchedule::new(trace("1\n"));
        // Both queued at 0.5 ms; the opportunity at 1 ms carries 600 + 600 bytes.
        assert_eq!(s.plan(600, Instant(MS / 2)), (ms(1), ms(1)));
        assert_eq!(s.plan(600, Instant(MS / 2)), (ms(1), ms(1)));
        // 304 bytes are left at 1 ms: a third of 600 takes them and 296 of the next one.
        assert_eq!(s.plan(600, Instant(MS / 2)), (ms(1), ms(2)));
    }

    #[test]
    fn a_packet_larger_than_an_opportunity_spans_two() {
        let mut s = TraceSchedule::new(trace("1\n"));
        assert_eq!(s.plan(2000, Instant::ZERO), (ms(1), ms(2)));
        // 1008 bytes of the 2 ms opportunity remain for a packet queued before it.
        assert_eq!(s.plan(1000, Instant(MS + 1)), (ms(2), ms(2)));
        assert_eq!(s.plan(9, Instant(MS + 2)), (ms(2), ms(3)));
    }

    #[test]
    fn unused_opportunities_are_not_banked() {
        let mut s = TraceSchedule::new(trace("1\n"));
        assert_eq!(s.plan(100, Instant::ZERO), (ms(1), ms(1)));
        // Arriving at 1 ms exactly, after the opportunity has passed: the 1404 bytes left
        // are gone, and so are the opportunities at 2 to 10 ms for a packet at 10.2 ms.
        assert_eq!(s.plan(100, ms(1)), (ms(2), ms(2)));
        assert_eq!(s.plan(3008, Instant(10 * MS + MS / 5)), (ms(11), ms(12)));
    }

    #[test]
    fn the_trace_wraps_with_its_last_timestamp_as_period() {
        // Period 10 ms: opportunities at 0 (and so 10, 20, ...), 4, 4 and 10 (20, 30, ...).
        let mut s = TraceSchedule::new(trace("0\n4\n4\n10\n"));
        let ends: Vec<u64> = (0..8)
            .map(|_| s.plan(1504, Instant(MS / 2)).1 .0 / MS)
            .collect();
        assert_eq!(ends, [4, 4, 10, 10, 14, 14, 20, 20]);
        // Far later, in pass 1000: the first opportunities after 10 003 ms.
        assert_eq!(s.plan(1504, ms(10_003)).1, ms(10_004));
        assert_eq!(s.plan(1504, ms(10_003)).1, ms(10_004));
        assert_eq!(s.plan(1504, ms(10_003)).1, ms(10_010));
    }

    #[test]
    fn rewinding_restores_the_state_after_the_last_started_packet() {
        let mut s = TraceSchedule::new(trace("1\n"));
        // 1000-byte packets: (1, 1), (1, 2), (2, 2) and (2, 3) ms, 8 bytes of the 2 ms
        // opportunity left for the fourth.
        let first: Vec<_> = (0..4).map(|_| s.plan(1000, Instant::ZERO)).collect();
        assert_eq!(
            first,
            [
                (ms(1), ms(1)),
                (ms(1), ms(2)),
                (ms(2), ms(2)),
                (ms(2), ms(3))
            ]
        );
        // At 1.5 ms two have started: the other two are planned again as before.
        s.rewind(Instant(3 * MS / 2));
        assert_eq!(s.plan(1000, Instant(3 * MS / 2)), first[2]);
        assert_eq!(s.plan(1000, Instant(3 * MS / 2)), first[3]);
        // Nothing waiting: the cursor stays where it is.
        s.rewind(ms(50));
        assert_eq!(s.plan(1504, ms(50)), (ms(51), ms(51)));
    }

    #[test]
    fn bad_traces_are_refused_with_the_reason() {
        let cases: [(&str, &str); 6] = [
            ("", "empty"),
            ("1\n\n2\n", "line 2 is empty"),
            ("1\n2x\n", "line 2: \"2x\" is not a non-negative integer"),
            ("1\n-3\n", "line 2: \"-3\" is not a non-negative integer"),
            ("5\n3\n", "line 2: 3 ms is before the 5 ms of line 1"),
            ("0\n0\n", "the last timestamp is 0 ms"),
        ];
        for (text, want) in cases {
            let e = Trace::parse(text.as_bytes(), "t").expect_err(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = Trace::parse(b"99999999999\n", "t").expect_err("too late");
        assert!(e.contains("past the largest timestamp"), "{e}");
        // Windows line ends and a missing final newline are fine.
        assert_eq!(trace("1\r\n2").opportunities(), 2);
    }
}
