//! The event scheduler: a priority queue of `(time, sequence, component)`.
//!
//! Ties at equal times break by insertion order, so a run is a pure function of its scenario
//! and seed. Each component keeps at most one *live* event through a [`Timer`]: re-arming to a
//! later time keeps the pending event (it fires, finds nothing due and re-arms), re-arming to
//! an earlier time pushes a new event and leaves the old one stale. The queue therefore grows
//! with the number of components, not with the number of packets or timer restarts.
//!
//! The queue is a binary heap of packed 24-byte entries whose popped root is removed lazily:
//! the event just handed out stays in slot 0 as a *hole*, and the first event pushed while
//! the hole is open takes its place with a single sift-down. A component that re-arms from
//! its own event (the common case: a link scheduling its next head packet) therefore costs
//! one sift-down instead of a pop's sift-down plus a push's sift-up. Every `(time, sequence)`
//! key is distinct, so any correct priority queue pops the same sequence; the plain
//! `BinaryHeap` the engine used before is kept as [`Scheduler::reference`] and the tests run
//! whole simulations on both and compare their results.

use pathweave_cc::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Names a component that receives events. The kind lives in the top bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId(pub u32);

/// The kinds of component the engine dispatches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A link direction whose head packet reaches the next hop.
    Link,
    /// A flow's sending side (start/stop, retransmission timer, pacing).
    Sender,
    /// A flow's receiving side (delayed-ACK timer).
    Receiver,
    /// The scenario's timeline of link changes.
    Timeline,
    /// The time-series sampler.
    Sampler,
}

const KIND_SHIFT: u32 = 28;
const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;

impl ComponentId {
    /// The component of `kind` with index `i`.
    pub fn new(kind: Kind, i: usize) -> Self {
        let k = match kind {
            Kind::Link => 0,
            Kind::Sender => 1,
            Kind::Receiver => 2,
            Kind::Timeline => 3,
            Kind::Sampler => 4,
        };
        debug_assert!(i as u32 <= INDEX_MASK);
        ComponentId((k << KIND_SHIFT) | i as u32)
    }
    /// Which kind of component.
    pub fn kind(self) -> Kind {
        match self.0 >> KIND_SHIFT {
            0 => Kind::Link,
            1 => Kind::Sender,
            2 => Kind::Receiver,
            3 => Kind::Timeline,
            _ => Kind::Sampler,
        }
    }
    /// Its index among components of its kind.
    pub fn index(self) -> usize {
        (self.0 & INDEX_MASK) as usize
    }
}

/// One pending event.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    comp: ComponentId,
}

impl Entry {
    /// The ordering key: time, then insertion order. One 128-bit comparison, no branches.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// A binary min-heap on [`Entry::key`] whose root is removed lazily (see the module docs).
#[derive(Debug, Default)]
struct LazyHeap {
    heap: Vec<Entry>,
    /// Slot 0 holds the event last returned by `pop_until` and no longer counts.
    hole: bool,
}

impl LazyHeap {
    fn len(&self) -> usize {
        self.heap.len() - self.hole as usize
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        if self.hole {
            self.hole = false;
            self.sift_down(e);
        } else {
            self.heap.push(e);
            self.sift_up(e);
        }
    }

    #[inline]
    fn pop_until(&mut self, limit: u64) -> Option<Entry> {
        if self.hole {
            self.hole = false;
            // Close the hole: the last entry moves to the root and sinks.
            let last = self.heap.pop()?;
            if !self.heap.is_empty() {
                self.sift_down(last);
            }
        }
        let top = *self.heap.first()?;
        if top.time > limit {
            return None;
        }
        self.hole = true;
        Some(top)
    }

    /// Place `e` at the last slot's position or above it.
    fn sift_up(&mut self, e: Entry) {
        let h = &mut self.heap[..];
        let mut i = h.len() - 1;
        let k = e.key();
        while i > 0 {
            let parent = (i - 1) / 2;
            if h[parent].key() <= k {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = e;
    }

    /// Place `e` at the root's position or below it.
    fn sift_down(&mut self, e: Entry) {
        let h = &mut self.heap[..];
        let n = h.len();
        let k = e.key();
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && h[right].key() < h[left].key() {
                right
            } else {
                left
            };
            if k <= h[child].key() {
                break;
            }
            h[i] = h[child];
            i = child;
        }
        h[i] = e;
    }
}

#[derive(Debug)]
enum Queue {
    Lazy(LazyHeap),
    Reference(BinaryHeap<Reverse<(Instant, u64, ComponentId)>>),
}

/// The pending-event queue.
#[derive(Debug)]
pub struct Scheduler {
    queue: Queue,
    seq: u64,
    popped: u64,
}

impl Default for Scheduler {
    fn default() -> Self {
        Self::new()
    }
}

impl Scheduler {
    /// An empty scheduler.
    pub fn new() -> Self {
        Scheduler {
            queue: Queue::Lazy(LazyHeap::default()),
            seq: 0,
            popped: 0,
        }
    }
    /// An empty scheduler on the standard library's binary heap: slower, kept as the oracle
    /// the tests compare the fast queue against. Both pop the same events in the same order.
    pub fn reference() -> Self {
        Scheduler {
            queue: Queue::Reference(BinaryHeap::new()),
            seq: 0,
            popped: 0,
        }
    }
    /// Queue an event for `c` at `t`.
    #[inline]
    pub fn push(&mut self, t: Instant, c: ComponentId) {
        let seq = self.seq;
        self.seq += 1;
        match &mut self.queue {
            Queue::Lazy(h) => h.push(Entry {
                time: t.0,
                seq,
                comp: c,
            }),
            Queue::Reference(h) => h.push(Reverse((t, seq, c))),
        }
    }
    /// The earliest event, if it is due no later than `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, ComponentId)> {
        let got = match &mut self.queue {
            Queue::Lazy(h) => h.pop_until(limit.0).map(|e| (Instant(e.time), e.comp)),
            Queue::Reference(h) => match h.peek() {
                Some(Reverse((t, _, _))) if *t <= limit => h.pop().map(|Reverse((t, _, c))| (t, c)),
                _ => None,
            },
        };
        self.popped += got.is_some() as u64;
        got
    }
    /// Events dispatched so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
    /// Events currently pending (live and stale).
    pub fn pending(&self) -> usize {
        match &self.queue {
            Queue::Lazy(h) => h.len(),
            Queue::Reference(h) => h.len(),
        }
    }
}

/// The single pending event of one component.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer {
    scheduled: Option<Instant>,
}

impl Timer {
    /// Make sure the component is woken no later than `t`.
    pub fn arm(&mut self, t: Instant, c: ComponentId, s: &mut Scheduler) {
        if self.scheduled.is_none_or(|old| t < old) {
            s.push(t, c);
            self.scheduled = Some(t);
        }
    }
    /// Called when an event for this component pops at `t`: true if it is the live one
    /// (and the timer is now idle), false if it is stale and must be ignored.
    pub fn fire(&mut self, t: Instant) -> bool {
        if self.scheduled == Some(t) {
            self.scheduled = None;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both() -> [Scheduler; 2] {
        [Scheduler::new(), Scheduler::reference()]
    }

    #[test]
    fn equal_times_pop_in_insertion_order() {
        for mut s in both() {
            equal_times_case(&mut s);
        }
    }

    fn equal_times_case(s: &mut Scheduler) {
        let (a, b, c) = (
            ComponentId::new(Kind::Link, 7),
            ComponentId::new(Kind::Sender, 3),
            ComponentId::new(Kind::Receiver, 1),
        );
        s.push(Instant(5), a);
        s.push(Instant(5), b);
        s.push(Instant(1), c);
        assert_eq!(s.pop_until(Instant::MAX), Some((Instant(1), c)));
        assert_eq!(s.pop_until(Instant::MAX), Some((Instant(5), a)));
        assert_eq!(s.pop_until(Instant(4)), None);
        assert_eq!(s.pop_until(Instant(5)), Some((Instant(5), b)));
        assert_eq!(b.kind(), Kind::Sender);
        assert_eq!(b.index(), 3);
    }

    #[test]
    fn pops_come_out_sorted_by_time_then_insertion() {
        for mut s in both() {
            sorted_case(&mut s);
        }
    }

    fn sorted_case(s: &mut Scheduler) {
        let mut x: u64 = 12345;
        let mut pushed = Vec::new();
        for k in 0..2000usize {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = Instant((x >> 33) % 500);
            let c = ComponentId::new(Kind::Link, k % 1000);
            s.push(t, c);
            pushed.push((t, k, c));
            if k % 3 == 0 {
                // Interleave pops with pushes, as the engine does.
                let got = s.pop_until(Instant::MAX).unwrap();
                pushed.sort();
                let want = pushed.remove(0);
                assert_eq!(got, (want.0, want.2));
            }
        }
        pushed.sort();
        for want in pushed {
            assert_eq!(s.pop_until(Instant::MAX), Some((want.0, want.2)));
        }
        assert_eq!(s.pop_until(Instant::MAX), None);
    }

    #[test]
    fn rearming_later_keeps_one_event_and_earlier_leaves_a_stale_one() {
        for mut s in both() {
            let s = &mut s;
            let c = ComponentId::new(Kind::Sender, 0);
            let mut t = Timer::default();
            t.arm(Instant(10), c, s);
            t.arm(Instant(20), c, s);
            assert_eq!(s.pending(), 1);
            t.arm(Instant(5), c, s);
            assert_eq!(s.pending(), 2);
            let (t5, _) = s.pop_until(Instant::MAX).unwrap();
            assert!(t.fire(t5));
            assert_eq!(s.pending(), 1, "the popped event no longer counts");
            let (t10, _) = s.pop_until(Instant::MAX).unwrap();
            assert!(!t.fire(t10), "the event armed for 10 became stale");
            assert_eq!(s.pending(), 0);
            assert_eq!(s.pop_until(Instant::MAX), None);
            assert_eq!(s.events_processed(), 2);
        }
    }

    /// The engine's pattern: pop one event, push zero to three (often at the popped time or
    /// the same component again), sometimes stop at a limit. Both queues must agree on every
    /// pop, including ties at equal times and limits that fall between events.
    #[test]
    fn lazy_heap_matches_the_reference_heap_under_engine_like_traffic() {
        let (mut fast, mut slow) = (Scheduler::new(), Scheduler::reference());
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for k in 0..64 {
            let c = ComponentId::new(Kind::Link, k);
            let t = Instant(next() % 1000);
            fast.push(t, c);
            slow.push(t, c);
        }
        let mut now = Instant::ZERO;
        let mut pops = 0;
        for _ in 0..200_000 {
            let r = next();
            let limit = if r % 17 == 0 {
                now + pathweave_cc::Duration((r >> 8) % 50)
            } else {
                Instant::MAX
            };
            let a = fast.pop_until(limit);
            assert_eq!(a, slow.pop_until(limit));
            assert_eq!(fast.pending(), slow.pending());
            let Some((t, c)) = a else {
                now = limit.min(now + pathweave_cc::Duration(100));
                continue;
            };
            pops += 1;
            now = t;
            for j in 0..(r >> 20) % 4 {
                let dt = match (r >> (24 + 4 * j)) % 4 {
                    0 => 0,
                    1 => (r >> 40) % 10,
                    _ => (r >> 44) % 5000,
                };
                let target = if j == 0 {
                    c
                } else {
                    ComponentId::new(Kind::Sender, (r >> 50) as usize % 64)
                };
                fast.push(t + pathweave_cc::Duration(dt), target);
                slow.push(t + pathweave_cc::Duration(dt), target);
            }
        }
        assert!(pops > 100_000, "{pops}");
        while let Some(e) = slow.pop_until(Instant::MAX) {
            assert_eq!(fast.pop_until(Instant::MAX), Some(e));
        }
        assert_eq!(fast.pop_until(Instant::MAX), None);
    }
}
