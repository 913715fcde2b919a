//! The event scheduler: a binary heap of `(time, sequence, component)`.
//!
//! Ties at equal times break by insertion order, so a run is a pure function of its scenario
//! and seed. Each component keeps at most one *live* event through a [`Timer`]: re-arming to a
//! later time keeps the pending event (it fires, finds nothing due and re-arms), re-arming to
//! an earlier time pushes a new event and leaves the old one stale. The heap therefore grows
//! with the number of components, not with the number of packets or timer restarts.

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

/// The pending-event queue.
#[derive(Debug, Default)]
pub struct Scheduler {
    heap: BinaryHeap<Reverse<(Instant, u64, ComponentId)>>,
    seq: u64,
    popped: u64,
}

impl Scheduler {
    /// An empty scheduler.
    pub fn new() -> Self {
        Self::default()
    }
    /// Queue an event for `c` at `t`.
    pub fn push(&mut self, t: Instant, c: ComponentId) {
        self.heap.push(Reverse((t, self.seq, c)));
        self.seq += 1;
    }
    /// The earliest event, if it is due no later than `limit`.
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, ComponentId)> {
        match self.heap.peek() {
            Some(Reverse((t, _, _))) if *t <= limit => {
                let Reverse((t, _, c)) = self.heap.pop()?;
                self.popped += 1;
                Some((t, c))
            }
            _ => None,
        }
    }
    /// The time of the earliest pending event (live or stale), if any.
    pub fn next_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }
    /// Events dispatched so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
    /// Events currently pending (live and stale).
    pub fn pending(&self) -> usize {
        self.heap.len()
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

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut s = Scheduler::new();
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
        let mut s = Scheduler::new();
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
        let mut s = Scheduler::new();
        let c = ComponentId::new(Kind::Sender, 0);
        let mut t = Timer::default();
        t.arm(Instant(10), c, &mut s);
        t.arm(Instant(20), c, &mut s);
        assert_eq!(s.pending(), 1);
        t.arm(Instant(5), c, &mut s);
        assert_eq!(s.pending(), 2);
        let (t5, _) = s.pop_until(Instant::MAX).unwrap();
        assert!(t.fire(t5));
        let (t10, _) = s.pop_until(Instant::MAX).unwrap();
        assert!(!t.fire(t10), "the event armed for 10 became stale");
    }
}
