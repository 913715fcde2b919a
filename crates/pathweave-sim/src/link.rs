//! One direction of a link: a FIFO queue (drop-tail or RED) feeding a transmitter of a given
//! rate, then a propagation delay, with optional random loss on the wire.
//!
//! A FIFO link with a known rate fixes each packet's schedule the moment it is accepted: it
//! starts transmitting when the previous packet has finished, and reaches the next hop one
//! propagation delay after its last bit leaves. So the link keeps its packets in one ring of
//! `(start, end, arrive)` records and schedules a single event, for the head packet's arrival
//! at the next hop (htsim's one-pending-event discipline, with the queue and the pipe merged).
//! Packets whose transmission has not started are "waiting" and make up the queue length.
//! A rate or delay change, or an outage, re-plans the waiting packets; the packet already on
//! the wire finishes as planned. During an outage nothing starts transmitting: arrivals wait
//! (and are dropped when the buffer is full) until the link comes back.
//!
//! Layout for speed: the fields every packet touches (the ring, the started count, the
//! transmitter's horizon, the drop-tail limit, the acceptance counters) fill two cache lines;
//! the drop counters a third; the rate, RED state, byte limit, loss model and random stream
//! live in a boxed cold part that only RED links, byte-limited links, lossy links and rate
//! changes reach. Serialisation times come from a one-entry cache in the record with a
//! second entry in the cold part (a direction mostly carries one packet size, sometimes
//! two), so the 128-bit division of [`Bandwidth::transmission_time`] runs only when a new
//! size or rate appears.
//!
//! A link direction may instead take its capacity from a trace of delivery opportunities in
//! Mahimahi's format ([`trace`]). Its schedule is fixed at acceptance too, from the trace's
//! cursor, which lives in the cold part: such a link never fills the serialisation cache, so
//! every packet takes the cold path that also plans for a link that is down, and a link at a
//! constant rate pays nothing for the possibility.
//!
//! A link direction with jitter lengthens each packet's propagation delay by a random amount
//! drawn uniformly below the jitter, from the link's random stream; a packet never overtakes
//! the one ahead of it (a packet held back holds back those behind it, as on one wire). It
//! too leaves the serialisation cache empty and plans every packet on the cold path.

use crate::event::{ComponentId, Scheduler, Timer};
use crate::prefetch::prefetch;
use crate::red::{Red, RedParams, Verdict};
use crate::rng::LazyStream;
use pathweave_cc::{Bandwidth, Bytes, Duration, Instant};
use std::sync::Arc;

pub mod trace;

use trace::TraceSchedule;
pub use trace::{Trace, MAX_TRACE_BYTES, MAX_TRACE_LINES, OPPORTUNITY_BYTES};

/// A drop-tail buffer limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many packets waiting.
    Packets(u32),
    /// At most this many bytes waiting.
    Bytes(u64),
}

/// The queueing discipline of a link direction.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueSpec {
    /// First come, first served; arrivals to a full buffer are dropped.
    DropTail(Limit),
    /// Random Early Detection with ns-2 semantics.
    Red(RedParams),
}

/// Random loss on the wire, independent of queueing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// No random loss.
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli(f64),
    /// The Gilbert–Elliott two-state channel: before each packet the channel moves from good
    /// to bad with probability `good_to_bad` and back with `bad_to_good`; the packet is then
    /// lost with `loss_good` or `loss_bad`. The long-run loss rate is
    /// `π_B·loss_bad + (1 − π_B)·loss_good` with `π_B = good_to_bad / (good_to_bad + bad_to_good)`.
    GilbertElliott {
        /// P(good → bad) per packet.
        good_to_bad: f64,
        /// P(bad → good) per packet.
        bad_to_good: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets lost.
    pub fn stationary_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(p) => p,
            LossModel::GilbertElliott {
                good_to_bad,
                bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let sum = good_to_bad + bad_to_good;
                let bad = if sum > 0.0 { good_to_bad / sum } else { 0.0 };
                bad * loss_bad + (1.0 - bad) * loss_good
            }
        }
    }
}

/// Everything needed to build one link direction.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkDirSpec {
    /// Transmission rate; with a trace, the trace's mean rate (what RED's automatic
    /// parameters, the link table's utilisation and the handshake's round trip use).
    pub rate: Bandwidth,
    /// Delivery opportunities from a Mahimahi trace instead of a constant rate.
    pub trace: Option<Arc<Trace>>,
    /// Propagation delay.
    pub delay: Duration,
    /// Queueing discipline.
    pub queue: QueueSpec,
    /// Random loss on the wire.
    pub loss: LossModel,
    /// Each packet's propagation delay is lengthened by a uniform draw in `[0, jitter)`
    /// (zero: none), without reordering.
    pub jitter: Duration,
}

/// A packet held by a link direction: 32 bytes, two to a cache line. Its transmission end is
/// not kept: only a re-plan needs it, for the last packet that has started, and takes it
/// from the next packet's start or the link's horizon (see [`LinkDir::last_started_end`]).
#[derive(Clone, Copy, Debug)]
struct Slot {
    start: Instant,
    arrive: Instant,
    /// The caller's eight bytes for the packet, handed back on arrival (the network carries
    /// a packet's sequence numbers here, or its handle in the packet pool).
    word: u64,
    /// Size in bytes, with [`Slot::LOST`] set if it is lost on the wire.
    size: u32,
    /// The caller's tag for the packet (the network's hop position), handed back on arrival.
    hop: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        start: Instant::MAX,
        arrive: Instant::MAX,
        word: 0,
        size: 0,
        hop: 0,
    };

    /// The bit of `size` that marks a packet lost on the wire (sizes are below 2³¹ bytes).
    const LOST: u32 = 1 << 31;

    /// The packet's size in bytes.
    #[inline(always)]
    fn bytes(&self) -> u32 {
        self.size & !Self::LOST
    }

    /// Lost on the wire.
    #[inline(always)]
    fn lost(&self) -> bool {
        self.size & Self::LOST != 0
    }
}

/// Slots above which an emptied ring gives its room back (8 KB); smaller rings keep theirs,
/// so a link whose queue comes and goes does not reallocate each time.
const RING_TRIM_ABOVE: usize = 256;

/// How many slots ahead of the one it writes or reads a ring prefetches (four lines): a
/// deep queue, as behind a bottleneck, is written at its tail and read at its head a queue's
/// length apart, long enough for both ends to leave the cache, and each slot's miss, and the
/// miss of every store into a line that is not cached, would otherwise hold up the event.
/// The position is not wrapped: past the end of the buffer the hint fetches a useless line,
/// which costs less than the masking (slots near the end, and rings of fewer slots, go
/// without).
const RING_AHEAD: usize = 8;

/// A FIFO of slots whose front is kept inline, in the link direction's first cache line, and
/// the rest in a power-of-two ring that grows (by doubling) only when full. Most link
/// directions of a many-flow run hold one packet at a time (an access link carrying one
/// flow's packets far apart), and then neither admitting nor delivering it touches memory
/// beyond the record; an arrival, and the prefetch hint for it, read the front from the
/// record instead of following a pointer. Ring positions are masked with `rest.len() - 1`,
/// not a stored mask: the bounds check loads the length anyway.
#[derive(Debug)]
#[repr(C)]
struct Ring {
    /// Entry 0, valid while `len > 0`.
    first: Slot,
    /// Entries 1 to `len - 1`, entry 1 at `head`.
    rest: Box<[Slot]>,
    head: u32,
    /// Entries held, the front included.
    len: u32,
}

impl Default for Ring {
    fn default() -> Self {
        Ring {
            first: Slot::EMPTY,
            rest: Box::default(),
            head: 0,
            len: 0,
        }
    }
}

impl Ring {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len as usize
    }
    /// Position in `rest` of entry `i >= 1`.
    #[inline(always)]
    fn pos(&self, i: usize) -> usize {
        (self.head as usize + i - 1) & self.rest.len().wrapping_sub(1)
    }
    /// Entry `i` from the front; `i < len`.
    #[inline(always)]
    fn at(&self, i: usize) -> &Slot {
        if i == 0 {
            &self.first
        } else {
            &self.rest[self.pos(i)]
        }
    }
    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut Slot {
        if i == 0 {
            &mut self.first
        } else {
            let k = self.pos(i);
            &mut self.rest[k]
        }
    }
    #[inline(always)]
    fn get(&self, i: usize) -> Option<&Slot> {
        (i < self.len()).then(|| self.at(i))
    }
    #[inline(always)]
    fn back(&self) -> Option<&Slot> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }
    #[inline(always)]
    fn push_back(&mut self, s: Slot) {
        if self.len == 0 {
            self.first = s;
        } else {
            if self.len() - 1 == self.rest.len() {
                self.grow();
            }
            let k = self.pos(self.len());
            self.rest[k] = s;
            prefetch(self.rest.as_ptr().wrapping_add(k + RING_AHEAD));
        }
        self.len += 1;
    }
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (2 * self.rest.len()).max(4);
        let mut rest = Vec::with_capacity(cap);
        rest.extend((1..self.len()).map(|i| *self.at(i)));
        rest.resize(cap, Slot::EMPTY);
        self.rest = rest.into_boxed_slice();
        self.head = 0;
    }
    /// Give back the room of an empty ring that once held more than [`RING_TRIM_ABOVE`]
    /// packets: a ring keeps the size of its longest queue so far, so without this the
    /// access links of a many-flow run hold what their first slow start's bursts needed.
    #[cold]
    #[inline(never)]
    fn trim_empty(&mut self) {
        debug_assert_eq!(self.len, 0);
        self.rest = Box::default();
        self.head = 0;
    }
    /// Remove the front entry; `len > 0`. The entry behind it moves inline.
    #[inline(always)]
    fn pop_front(&mut self) -> Slot {
        let s = self.first;
        self.len -= 1;
        if self.len != 0 {
            let m = self.rest.len().wrapping_sub(1);
            let h = self.head as usize & m;
            self.first = self.rest[h];
            self.head = ((h + 1) & m) as u32;
            prefetch(self.rest.as_ptr().wrapping_add(h + RING_AHEAD));
        }
        s
    }
    /// The address of entry `i`, if it is held and not the inline front, for a prefetch
    /// hint.
    #[inline(always)]
    fn rest_addr(&self, i: usize) -> Option<*const u8> {
        (i >= 1 && i < self.len()).then(|| {
            let m = self.rest.len().wrapping_sub(1);
            self.rest
                .as_ptr()
                .wrapping_add((self.head as usize + i - 1) & m)
                .cast::<u8>()
        })
    }
    /// The address of entry 1, if held, for a prefetch hint.
    #[inline(always)]
    fn second_addr(&self) -> Option<*const u8> {
        (self.len > 1).then(|| {
            let m = self.rest.len().wrapping_sub(1);
            self.rest
                .as_ptr()
                .wrapping_add(self.head as usize & m)
                .cast::<u8>()
        })
    }
    fn iter(&self) -> impl Iterator<Item = &Slot> + '_ {
        (0..self.len()).map(|i| self.at(i))
    }
}

/// The serialisation time of the packet size seen last, at the current rate, in ns, kept in
/// the record's first two lines; its third line keeps the size before it
/// ([`LinkDir::tx2`]). Times of 2^32 ns (4.3 s) or more, and the "never" of a link that is
/// down, are not cached.
#[derive(Clone, Copy, Debug)]
struct TxCache {
    size: u32,
    ns: u32,
}

impl TxCache {
    /// Nothing cached: no packet has this size (sizes are far below 2^32 bytes).
    const EMPTY: TxCache = TxCache {
        size: u32::MAX,
        ns: 0,
    };
    fn compute(rate: Bandwidth, size: u32, up: bool) -> u64 {
        match up {
            true => rate
                .transmission_time(Bytes(size as u64))
                .map_or(u64::MAX, |d| d.0),
            false => u64::MAX,
        }
    }
}

/// Counters of one link direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    /// Packets offered to the queue.
    pub arrivals: u64,
    /// Packets that started transmission (counted when accepted: their schedule is fixed).
    pub accepted: u64,
    /// Bytes accepted.
    pub accepted_bytes: u64,
    /// Packets that reached the far end intact.
    pub delivered: u64,
    /// Bytes that reached the far end intact.
    pub delivered_bytes: u64,
    /// Drops because the buffer was full (drop-tail, or RED's hard limit).
    pub drops_overflow: u64,
    /// RED's random early drops.
    pub drops_early: u64,
    /// RED's forced drops on a high average.
    pub drops_forced: u64,
    /// Packets lost on the wire (random loss), not congestion.
    pub drops_wire: u64,
}

impl LinkStats {
    /// All congestive drops (buffer overflow and RED).
    pub fn congestive_drops(&self) -> u64 {
        self.drops_overflow + self.drops_early + self.drops_forced
    }
}

/// A packet that reached the far end of a link direction, see [`LinkDir::pop_arrived`].
#[derive(Clone, Copy, Debug)]
pub struct Arrived {
    /// The eight bytes it was offered with.
    pub word: u64,
    /// Its size, as offered.
    pub size: u32,
    /// The tag it was offered with.
    pub hop: u32,
    /// Lost on the wire: the caller frees it.
    pub lost: bool,
}

/// What became of a packet offered to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// It is queued or on the wire.
    Accepted,
    /// It was dropped; the caller frees it.
    Dropped,
}

#[cfg(test)]
mod layout {
    use super::{Counts, LinkDir, Ring};
    use std::mem::{align_of, offset_of, size_of};

    /// The per-packet fields fill the first two cache lines of an aligned link direction,
    /// the drop counters and the serialisation cache's second entry the third.
    #[test]
    fn link_direction_fields_sit_in_their_cache_lines() {
        assert_eq!(align_of::<LinkDir>(), 64);
        assert_eq!(size_of::<LinkDir>(), 192);
        let line = |off: usize| off / 64;
        let last = |off: usize, size: usize| line(off + size - 1);
        assert_eq!(line(offset_of!(LinkDir, ring)), 0);
        assert_eq!(last(offset_of!(LinkDir, ring), size_of::<Ring>()), 0);
        assert_eq!(line(offset_of!(LinkDir, started)), 0);
        assert_eq!(last(offset_of!(LinkDir, limit), 4), 0);
        assert_eq!(line(offset_of!(LinkDir, busy_until)), 1);
        assert_eq!(line(offset_of!(LinkDir, waiting_bytes)), 1);
        assert_eq!(line(offset_of!(LinkDir, accepted)), 1);
        assert_eq!(line(offset_of!(LinkDir, id)), 1);
        assert_eq!(line(offset_of!(LinkDir, admit)), 1);
        assert_eq!(line(offset_of!(LinkDir, fifo_check)), 1);
        assert_eq!(offset_of!(LinkDir, counts), 128);
        assert_eq!(offset_of!(LinkDir, tx2), 128 + size_of::<Counts>());
        assert_eq!(line(offset_of!(LinkDir, tx2) + 7), 2);
    }

    /// A held packet takes half a cache line.
    #[test]
    fn a_slot_is_half_a_cache_line() {
        assert_eq!(size_of::<super::Slot>(), 32);
    }
}

/// How arrivals are admitted: a drop-tail limit checked inline, or RED in the cold part.
#[derive(Clone, Copy, Debug)]
enum Admit {
    /// Drop-tail, at most [`LinkDir::limit`] packets waiting.
    Packets,
    /// Drop-tail, at most [`Cold::byte_limit`] bytes waiting.
    Bytes,
    Red,
}

/// The counters a link direction keeps but does not move per accepted packet: the drops,
/// the wire's lost bytes and the upper halves of the acceptance counters, whose lower halves
/// sit with the per-packet fields ([`LinkDir::accepted`]). [`LinkDir::stats`] derives the
/// others (arrivals are the accepted plus the dropped packets, deliveries the accepted minus
/// those lost on the wire and those still held). A cache line of its own, the last of a link
/// direction (with [`LinkDir::tx2`]): a drop-tail link that drops nothing never touches it
/// for them.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Counts {
    drops_overflow: u64,
    drops_wire: u64,
    drops_early: u64,
    drops_forced: u64,
    /// Bytes of the packets lost on the wire.
    wire_bytes: u64,
    /// How many times the lower halves of the accepted packets and bytes wrapped.
    accepted_hi: u64,
    accepted_bytes_hi: u64,
}

impl Counts {
    /// Count a wrap of the lower halves of the accepted packets or bytes.
    #[cold]
    #[inline(never)]
    fn carry(&mut self, packets: bool, bytes: bool) {
        self.accepted_hi += packets as u64;
        self.accepted_bytes_hi += bytes as u64;
    }
}

/// The lower 32 bits of the packets and bytes accepted; [`Counts`] holds their wraps.
#[derive(Clone, Copy, Debug, Default)]
struct Accepted {
    packets: u32,
    bytes: u32,
}

/// The parts of a link direction that the common per-packet path does not touch.
struct Cold {
    rate: Bandwidth,
    /// Boxed: its table of decay powers is 512 bytes, and few links run RED (at 10,000 flows
    /// an unboxed one made every link direction's cold part about 1 KB).
    red: Option<Box<Red>>,
    /// The drop-tail limit of [`Admit::Bytes`].
    byte_limit: u64,
    loss: LossModel,
    /// Gilbert–Elliott channel state: true while bad.
    channel_bad: bool,
    /// Built on the first draw: a drop-tail link without loss never draws.
    rng: LazyStream,
    /// The transmission end of the last packet that had started at the last re-plan, for
    /// the next re-plan when the packets behind it have no start (see
    /// [`LinkDir::last_started_end`]).
    held_end: Instant,
    /// Whether the link was down at the last re-plan (its horizon is then not the end of a
    /// transmission).
    down_planned: bool,
    /// The schedule of a link whose capacity comes from a trace.
    trace: Option<Box<TraceSchedule>>,
    /// [`LinkDirSpec::jitter`] in ns.
    jitter: u64,
}

/// One direction of a link.
///
/// Laid out in cache lines (a run with many links touches each one rarely, so every line a
/// packet or a sample touches is likely a miss): the ring with its front inline, the started
/// count and the drop-tail limit in the first; the transmitter's horizon, delay, timer,
/// waiting bytes, cold pointer, serialisation cache, acceptance counters and flags in the
/// second; the drop counters in the third. A packet's admission and arrival touch the first
/// two; a sample of a drop-tail link that drops nothing the same two.
///
/// The waiting packets are the ring entries that have not started (`ring.len - started`).
/// The arrival planned for a packet never precedes the one ahead of it: with the delay never
/// shortened since the link was built, a later packet ends its transmission later and so
/// arrives later; once the delay has been shortened (`fifo_check`) the ring's last entry is
/// read to keep the order.
#[repr(C, align(64))]
pub struct LinkDir {
    ring: Ring,
    /// Ring entries (from the front) whose transmission has started.
    started: u32,
    /// The drop-tail limit of [`Admit::Packets`].
    limit: u32,
    /// When the transmitter finishes everything accepted so far.
    busy_until: Instant,
    delay: Duration,
    timer: Timer,
    waiting_bytes: u64,
    cold: Box<Cold>,
    tx: TxCache,
    accepted: Accepted,
    id: ComponentId,
    admit: Admit,
    up: bool,
    /// Whether the loss model can ever lose a packet.
    lossy: bool,
    /// Whether the delay was ever shortened, so that a new packet's arrival must be checked
    /// against the last one's.
    fifo_check: bool,
    counts: Counts,
    /// The serialisation cache's second entry: the size seen before the one in `tx`. In the
    /// record's last line, beside the counters, not in the cold part: a link direction that
    /// carries data one way and the ACKs of other flows the same way alternates between two
    /// sizes, and each switch would otherwise read the cold part from beyond the cache.
    tx2: TxCache,
}

impl LinkDir {
    /// A link direction that is idle at time zero.
    pub fn new(spec: &LinkDirSpec, id: ComponentId, rng: LazyStream) -> Self {
        let (admit, limit, byte_limit, red) = match &spec.queue {
            QueueSpec::DropTail(Limit::Packets(n)) => (Admit::Packets, *n, 0, None),
            QueueSpec::DropTail(Limit::Bytes(b)) => (Admit::Bytes, 0, *b, None),
            QueueSpec::Red(p) => (Admit::Red, 0, 0, Some(Box::new(Red::new(*p, spec.rate)))),
        };
        LinkDir {
            ring: Ring::default(),
            started: 0,
            limit,
            up: true,
            lossy: spec.loss != LossModel::None,
            // With jitter a packet's arrival is checked against the one ahead of it.
            fifo_check: spec.jitter.0 > 0,
            busy_until: Instant::ZERO,
            delay: spec.delay,
            tx: TxCache::EMPTY,
            timer: Timer::default(),
            id,
            waiting_bytes: 0,
            admit,
            accepted: Accepted::default(),
            counts: Counts::default(),
            tx2: TxCache::EMPTY,
            cold: Box::new(Cold {
                held_end: Instant::ZERO,
                down_planned: false,
                rate: spec.rate,
                red,
                byte_limit,
                loss: spec.loss,
                channel_bad: false,
                rng,
                trace: spec
                    .trace
                    .as_ref()
                    .map(|t| Box::new(TraceSchedule::new(Arc::clone(t)))),
                jitter: spec.jitter.0,
            }),
        }
    }

    /// Packets waiting: held and not yet started.
    #[inline(always)]
    fn waiting_pkts(&self) -> u32 {
        self.ring.len - self.started
    }

    /// Move packets whose transmission has started by `now` out of the waiting count.
    #[inline(always)]
    fn advance(&mut self, now: Instant) {
        while (self.started as usize) < self.ring.len() {
            let s = self.ring.at(self.started as usize);
            if s.start > now {
                break;
            }
            self.waiting_bytes -= s.bytes() as u64;
            self.started += 1;
        }
    }

    /// [`LinkDir::advance`] for a capture's queue log: calls `f` with each packet whose
    /// transmission has started by `now` and that was still counted as waiting, in order,
    /// as its start, word, size, tag and the packets and bytes waiting behind it.
    pub fn advance_logged(
        &mut self,
        now: Instant,
        mut f: impl FnMut(Instant, u64, u32, u32, (u32, u64)),
    ) {
        while (self.started as usize) < self.ring.len() {
            let s = *self.ring.at(self.started as usize);
            if s.start > now {
                break;
            }
            self.waiting_bytes -= s.bytes() as u64;
            self.started += 1;
            f(
                s.start,
                s.word,
                s.bytes(),
                s.hop,
                (self.waiting_pkts(), self.waiting_bytes),
            );
        }
    }

    /// Whether the head packet has reached the far end by `now` (what
    /// [`LinkDir::pop_arrived`] would take).
    pub(crate) fn head_arrived(&self, now: Instant) -> bool {
        self.ring.len != 0 && self.ring.first.arrive <= now
    }

    /// If the head packet has reached the far end by `now` (what [`LinkDir::pop_arrived`]
    /// takes next), the time it left the transmitter, as a capture stamps it: its arrival
    /// (`now`) less the propagation delay, never before it started nor after `now`. That is
    /// its transmission end unless the delay changed while it propagated.
    pub fn head_egress(&self, now: Instant) -> Option<Instant> {
        if !self.head_arrived(now) {
            return None;
        }
        let start = self.ring.first.start;
        Some(
            Instant(now.0.saturating_sub(self.delay.0))
                .max(start)
                .min(now),
        )
    }

    /// The head packet's size and whether it is lost on the wire.
    pub(crate) fn head_size(&self) -> (u32, bool) {
        (self.ring.first.bytes(), self.ring.first.lost())
    }

    /// The propagation delay now.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Drops so far by cause: overflow, RED early, RED forced.
    pub fn drop_causes(&self) -> (u64, u64, u64) {
        let c = &self.counts;
        (c.drops_overflow, c.drops_early, c.drops_forced)
    }

    /// Packets and bytes waiting at `now` (not counting the one being transmitted).
    pub fn queue_len(&mut self, now: Instant) -> (u32, Bytes) {
        self.advance(now);
        (self.waiting_pkts(), Bytes(self.waiting_bytes))
    }

    /// The counters so far.
    pub fn stats(&self) -> LinkStats {
        let c = &self.counts;
        let held = self.ring.len() as u64;
        let held_bytes: u64 = self.ring.iter().map(|s| s.bytes() as u64).sum();
        let accepted = c.accepted_hi << 32 | self.accepted.packets as u64;
        let accepted_bytes = c.accepted_bytes_hi << 32 | self.accepted.bytes as u64;
        LinkStats {
            arrivals: accepted + c.drops_overflow + c.drops_early + c.drops_forced,
            accepted,
            accepted_bytes,
            delivered: accepted - c.drops_wire - held,
            delivered_bytes: accepted_bytes - c.wire_bytes - held_bytes,
            drops_overflow: c.drops_overflow,
            drops_early: c.drops_early,
            drops_forced: c.drops_forced,
            drops_wire: c.drops_wire,
        }
    }

    /// Congestive drops (buffer overflow and RED) and wire losses so far: the drop counters
    /// of [`LinkDir::stats`] without its walk over the held packets.
    pub fn drop_counts(&self) -> (u64, u64) {
        let c = &self.counts;
        let congestive = match self.admit {
            // Only RED drops early or forced; a drop-tail link leaves its rare counters alone.
            Admit::Red => c.drops_overflow + c.drops_early + c.drops_forced,
            Admit::Packets | Admit::Bytes => c.drops_overflow,
        };
        (congestive, c.drops_wire)
    }

    /// RED's average queue, if the link runs RED. A drop-tail link answers without reaching
    /// its cold part.
    pub fn red_average(&self) -> Option<f64> {
        match self.admit {
            Admit::Red => self.cold.red.as_deref().map(Red::average),
            Admit::Packets | Admit::Bytes => None,
        }
    }

    /// Packets accepted and not yet delivered (waiting, on the wire or propagating).
    pub fn in_link(&self) -> usize {
        self.ring.len()
    }

    /// Iterate over the packets held by the link, as the eight bytes and the tag each was
    /// offered with.
    pub fn packets(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.ring.iter().map(|s| (s.word, s.hop))
    }

    /// The current rate (a trace link's mean rate).
    pub fn rate(&self) -> Bandwidth {
        self.cold.rate
    }

    /// The trace a trace link replays.
    pub fn trace(&self) -> Option<&Arc<Trace>> {
        self.cold.trace.as_deref().map(TraceSchedule::trace)
    }

    /// Offer a packet of `size` bytes (below 2³¹) at `now`; `word` and `hop` are handed back
    /// with it on arrival (the network passes what an endpoint reads of the packet and its
    /// position in the hop table, so that moving a packet on touches nothing but links).
    #[inline(always)]
    pub fn offer(
        &mut self,
        word: u64,
        size: u32,
        hop: u32,
        now: Instant,
        sched: &mut Scheduler,
    ) -> Offer {
        debug_assert!(size < Slot::LOST, "a packet of {size} bytes");
        self.advance(now);
        let verdict = match self.admit {
            Admit::Packets if self.waiting_pkts() >= self.limit => Verdict::Overflow,
            Admit::Packets => Verdict::Enqueue,
            Admit::Bytes if self.waiting_bytes + size as u64 > self.cold.byte_limit => {
                Verdict::Overflow
            }
            Admit::Bytes => Verdict::Enqueue,
            Admit::Red => self.red_verdict(size, now),
        };
        match verdict {
            Verdict::Enqueue => {
                self.enqueue(word, size, hop, now, sched);
                return Offer::Accepted;
            }
            Verdict::EarlyDrop => self.counts.drops_early += 1,
            Verdict::ForcedDrop => self.counts.drops_forced += 1,
            Verdict::Overflow => self.counts.drops_overflow += 1,
        }
        Offer::Dropped
    }

    /// RED's decision for a packet of `size` bytes arriving at `now`.
    fn red_verdict(&mut self, size: u32, now: Instant) -> Verdict {
        let waiting = self.waiting_pkts();
        let idle_since =
            (self.up && waiting == 0 && self.busy_until <= now).then_some(self.busy_until);
        let Cold { red, rng, .. } = &mut *self.cold;
        match red {
            Some(red) => red.on_arrival(
                now,
                waiting,
                self.waiting_bytes,
                size,
                idle_since,
                &mut || rng.uniform(),
            ),
            None => Verdict::Enqueue,
        }
    }

    /// Admit a packet: draw its wire loss, fix its schedule, and arm the link if it is the
    /// only packet held.
    #[inline(always)]
    fn enqueue(&mut self, word: u64, size: u32, hop: u32, now: Instant, sched: &mut Scheduler) {
        let lost = self.lossy && self.draw_loss();
        let prev = match self.fifo_check {
            false => Instant::ZERO,
            true => self.ring.back().map_or(Instant::ZERO, |s| s.arrive),
        };
        let (start, end, arrive) = self.plan(size, now.max(self.busy_until), now, prev);
        if self.up {
            self.busy_until = end;
        }
        self.ring.push_back(Slot {
            start,
            arrive,
            word,
            size: size | if lost { Slot::LOST } else { 0 },
            hop,
        });
        if start <= now {
            self.started += 1;
        } else {
            self.waiting_bytes += size as u64;
        }
        let (packets, wrapped) = self.accepted.packets.overflowing_add(1);
        self.accepted.packets = packets;
        let (bytes, wrapped_bytes) = self.accepted.bytes.overflowing_add(size);
        self.accepted.bytes = bytes;
        if wrapped | wrapped_bytes {
            self.counts.carry(wrapped, wrapped_bytes);
        }
        if self.ring.len == 1 && arrive != Instant::MAX {
            self.timer.arm(arrive, self.id, sched);
        }
    }

    /// Whether the loss model loses the packet being admitted.
    fn draw_loss(&mut self) -> bool {
        let c = &mut *self.cold;
        match c.loss {
            LossModel::None => false,
            LossModel::Bernoulli(p) => c.rng.uniform() < p,
            LossModel::GilbertElliott {
                good_to_bad,
                bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let flip = if c.channel_bad {
                    bad_to_good
                } else {
                    good_to_bad
                };
                if c.rng.uniform() < flip {
                    c.channel_bad = !c.channel_bad;
                }
                let p = if c.channel_bad { loss_bad } else { loss_good };
                p > 0.0 && c.rng.uniform() < p
            }
        }
    }

    /// The serialisation time of `size` bytes, `u64::MAX` if the link is down.
    #[inline(always)]
    fn tx_time(&mut self, size: u32) -> u64 {
        if size == self.tx.size {
            self.tx.ns as u64
        } else {
            self.tx_miss(size)
        }
    }

    /// [`LinkDir::tx_time`] for a size other than the last: the second entry, or the
    /// division. The size moves to the record's entry, the one it replaces to the second.
    #[cold]
    #[inline(never)]
    fn tx_miss(&mut self, size: u32) -> u64 {
        // A link planned from a trace never fills the entries, so a hit here needs no look
        // at the cold part.
        if size == self.tx2.size {
            std::mem::swap(&mut self.tx, &mut self.tx2);
            return self.tx.ns as u64;
        }
        let c = &*self.cold;
        if c.trace.is_some() || c.jitter > 0 {
            // Planned from the trace, or with a random delay, on the cold path (see
            // `plan_cold`).
            return u64::MAX;
        }
        let ns = TxCache::compute(c.rate, size, self.up);
        if ns < u32::MAX as u64 {
            self.tx2 = self.tx;
            self.tx = TxCache {
                size,
                ns: ns as u32,
            };
        }
        ns
    }

    /// Forget the cached serialisation times (the rate changed, or the link went down or
    /// came back).
    fn clear_tx(&mut self) {
        self.tx = TxCache::EMPTY;
        self.tx2 = TxCache::EMPTY;
    }

    /// Transmission start, end and arrival at the next hop for a packet queued at `queued`
    /// that may start at `free`; arrivals never overtake the packet ahead (`prev_arrive`).
    #[inline]
    fn plan(
        &mut self,
        size: u32,
        free: Instant,
        queued: Instant,
        prev_arrive: Instant,
    ) -> (Instant, Instant, Instant) {
        // A link that is down, or planned from a trace, has no serialisation time either
        // (see `TxCache` and `tx_miss`).
        let tx = self.tx_time(size);
        if tx != u64::MAX {
            let end = free + Duration(tx);
            (free, end, (end + self.delay).max(prev_arrive))
        } else {
            self.plan_cold(size, free, queued, prev_arrive)
        }
    }

    /// [`LinkDir::plan`] for a link that is down (nothing starts), a trace link (the
    /// trace's next opportunities after `queued` carry the packet) or a link with jitter (the
    /// packet starts at `free`, and a random extra delay follows its transmission).
    #[cold]
    #[inline(never)]
    fn plan_cold(
        &mut self,
        size: u32,
        free: Instant,
        queued: Instant,
        prev_arrive: Instant,
    ) -> (Instant, Instant, Instant) {
        if !self.up {
            return (Instant::MAX, Instant::MAX, Instant::MAX);
        }
        let c = &mut *self.cold;
        let (start, end) = match &mut c.trace {
            Some(trace) => trace.plan(size, queued),
            None => match TxCache::compute(c.rate, size, true) {
                u64::MAX => return (Instant::MAX, Instant::MAX, Instant::MAX),
                tx => (free, free + Duration(tx)),
            },
        };
        let extra = match c.jitter {
            0 => 0,
            j => (c.rng.uniform() * j as f64) as u64,
        };
        (
            start,
            end,
            (end + self.delay + Duration(extra)).max(prev_arrive),
        )
    }

    /// The transmission end of the last packet that has started (after `advance`), if any.
    ///
    /// A packet that had not started when it was planned starts where the packet ahead of it
    /// ends (it was planned to start at the transmitter's horizon, which was later than the
    /// time of planning), so the first packet that has not started gives the end of the last
    /// that has; with none behind it, the horizon is that end, or later only by the time of
    /// a re-plan that found it finished (the caller takes the later of it and now). Neither
    /// holds when the packets were planned while the link was down or could not transmit
    /// (their start is `Instant::MAX`), or the horizon was set while down: then no packet has
    /// started since the last re-plan, and the end recorded there is the one.
    fn last_started_end(&self) -> Option<Instant> {
        if self.started == 0 {
            return None;
        }
        if (self.started as usize) < self.ring.len() {
            let s = self.ring.at(self.started as usize).start;
            if s != Instant::MAX {
                return Some(s);
            }
        } else if !self.cold.down_planned {
            return Some(self.busy_until);
        }
        Some(self.cold.held_end)
    }

    /// Re-plan every packet that has not started transmitting, from `now`.
    fn replan(&mut self, now: Instant, sched: &mut Scheduler) {
        if self.cold.trace.is_some() {
            return self.replan_trace(now, sched);
        }
        self.advance(now);
        let last_end = self.last_started_end();
        self.cold.held_end = last_end.unwrap_or(Instant::ZERO);
        let started = self.started as usize;
        let last_started = started.checked_sub(1).and_then(|k| self.ring.get(k));
        let mut free = last_end.map_or(now, |e| e.max(now));
        let mut prev = last_started.map_or(Instant::ZERO, |s| s.arrive);
        for i in started..self.ring.len() {
            let size = self.ring.at(i).bytes();
            let (start, end, arrive) = self.plan(size, free, now, prev);
            let s = self.ring.at_mut(i);
            s.start = start;
            s.arrive = arrive;
            free = end;
            prev = arrive;
        }
        self.busy_until = if self.up { free } else { now };
        self.cold.down_planned = !self.up;
        self.rearm(sched);
    }

    /// [`LinkDir::replan`] for a trace link: the trace rewinds to where it was after the last
    /// packet that has started, and the packets behind it are planned again as if queued at
    /// `now` (the opportunities of an outage are lost). A packet that has started finishes
    /// as planned, in all the opportunities it was given.
    #[cold]
    fn replan_trace(&mut self, now: Instant, sched: &mut Scheduler) {
        self.advance(now);
        if let Some(t) = &mut self.cold.trace {
            t.rewind(now);
        }
        let started = self.started as usize;
        let mut prev = started
            .checked_sub(1)
            .and_then(|k| self.ring.get(k))
            .map_or(Instant::ZERO, |s| s.arrive);
        // The horizon is the end of the last packet planned, as for a FIFO link (and `now`
        // while the link is down).
        let mut busy = if self.up { self.busy_until } else { now };
        for i in started..self.ring.len() {
            let size = self.ring.at(i).bytes();
            let (start, end, arrive) = self.plan_cold(size, now, now, prev);
            let s = self.ring.at_mut(i);
            s.start = start;
            s.arrive = arrive;
            prev = arrive;
            if end != Instant::MAX {
                busy = end;
            }
        }
        self.busy_until = busy;
        self.cold.down_planned = !self.up;
        self.rearm(sched);
    }

    /// Change the rate from `now` on. A trace link keeps its trace: a scenario may not change
    /// its rate (the reader refuses it).
    pub fn set_rate(&mut self, rate: Bandwidth, now: Instant, sched: &mut Scheduler) {
        if self.cold.trace.is_some() {
            debug_assert!(false, "a rate change on a trace link");
            return;
        }
        self.cold.rate = rate;
        self.clear_tx();
        if let Some(r) = &mut self.cold.red {
            r.set_rate(rate);
        }
        self.replan(now, sched);
    }

    /// Change the propagation delay for packets that start transmitting from `now` on.
    pub fn set_delay(&mut self, delay: Duration, now: Instant, sched: &mut Scheduler) {
        self.fifo_check |= delay < self.delay;
        self.delay = delay;
        self.replan(now, sched);
    }

    /// Take the link down (`false`) or bring it back (`true`) at `now`.
    pub fn set_up(&mut self, up: bool, now: Instant, sched: &mut Scheduler) {
        self.up = up;
        self.clear_tx();
        self.replan(now, sched);
    }

    /// The link's event fired at `now`: true if it is live (call [`LinkDir::pop_arrived`]).
    #[inline(always)]
    pub fn fire(&mut self, now: Instant) -> bool {
        self.timer.fire(now)
    }

    /// Take the next packet that has reached the far end by `now` (or was lost on the wire on
    /// its way there, which the caller frees).
    #[inline(always)]
    pub fn pop_arrived(&mut self, now: Instant) -> Option<Arrived> {
        if self.ring.len == 0 || self.ring.first.arrive > now {
            return None;
        }
        let s = self.ring.pop_front();
        // The head has certainly started transmitting by now; if it was still counted as
        // waiting, count it out (later packets are counted out by `advance` when needed).
        let size = s.bytes();
        if self.started == 0 {
            self.waiting_bytes -= size as u64;
        } else {
            self.started -= 1;
        }
        if s.lost() {
            self.counts.drops_wire += 1;
            self.counts.wire_bytes += size as u64;
        }
        Some(Arrived {
            word: s.word,
            size,
            hop: s.hop,
            lost: s.lost(),
        })
    }

    /// Prefetch the two lines an admission or an arrival reads (the third holds the drop
    /// counters).
    #[inline(always)]
    pub(crate) fn prefetch_hot(&self) {
        let a = (self as *const Self).cast::<u8>();
        prefetch(a);
        prefetch(a.wrapping_add(64));
    }

    /// The address of the slot behind the head, which the head's arrival moves into the
    /// record, if the ring holds two packets or more, for a prefetch hint.
    #[inline(always)]
    pub(crate) fn second_slot(&self) -> Option<*const u8> {
        self.ring.second_addr()
    }

    /// The address of the first packet not yet counted as started, which the next packet
    /// offered reads first, if it is held behind the inline front, for a prefetch hint.
    #[inline(always)]
    pub(crate) fn waiting_slot(&self) -> Option<*const u8> {
        self.ring.rest_addr(self.started as usize)
    }

    /// The head packet's eight bytes and tag, if any packet is held, for a prefetch hint.
    #[inline(always)]
    pub(crate) fn head_tag(&self) -> Option<(u64, u32)> {
        (self.ring.len != 0).then_some((self.ring.first.word, self.ring.first.hop))
    }

    /// After popping, schedule the next head arrival. An emptied ring's buffer starts again
    /// from its first slot: the packets queued behind the next front are written where the
    /// last ones were, in lines still likely cached, instead of further round a buffer sized
    /// for the longest queue so far.
    #[inline(always)]
    pub fn rearm(&mut self, sched: &mut Scheduler) {
        match self.ring.len {
            1.. => {
                if self.ring.first.arrive != Instant::MAX {
                    self.timer.arm(self.ring.first.arrive, self.id, sched);
                }
            }
            0 => {
                self.ring.head = 0;
                if self.ring.rest.len() > RING_TRIM_ABOVE {
                    self.ring.trim_empty();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Kind;
    use crate::rng::Purpose;

    const MS: u64 = 1_000_000;

    /// 8 Mbit/s (1000 bytes in 1 ms), 10 ms of delay, room for everything.
    fn link() -> (LinkDir, Scheduler) {
        link_holding(100)
    }

    /// [`link`] with a drop-tail queue of `limit` packets.
    fn link_holding(limit: u32) -> (LinkDir, Scheduler) {
        jittery_link(limit, 0, 1)
    }

    /// [`link_holding`] with `jitter` ns of jitter, its random stream from scenario seed
    /// `seed`.
    fn jittery_link(limit: u32, jitter: u64, seed: u64) -> (LinkDir, Scheduler) {
        let spec = LinkDirSpec {
            rate: Bandwidth::from_bps(8_000_000),
            trace: None,
            delay: Duration(10 * MS),
            queue: QueueSpec::DropTail(Limit::Packets(limit)),
            loss: LossModel::None,
            jitter: Duration(jitter),
        };
        let id = ComponentId::new(Kind::Link, 0);
        let l = LinkDir::new(&spec, id, LazyStream::new(seed, Purpose::Link, 0));
        (l, Scheduler::new())
    }

    /// Jitter lengthens each packet's propagation delay by a uniform draw below it: packets
    /// offered 5 ms apart (each alone on the 1 ms wire, so none is held by the one ahead)
    /// arrive 11 ms after their offer plus extras in [0, 1 ms) whose deciles hold a tenth
    /// each (a chi-square test, 9 degrees of freedom, that fails by chance once in a thousand
    /// seeds, here fixed) and whose mean is half the jitter. The same seed draws the same
    /// extras, another seed others.
    #[test]
    fn jitter_adds_a_uniform_delay_below_it() {
        let extras = |seed: u64| -> Vec<u64> {
            let (mut l, mut s) = jittery_link(10, MS, seed);
            (0..4000u64)
                .map(|k| {
                    let t = k * 5 * MS;
                    l.offer(k, 1000, 0, Instant(t), &mut s);
                    let at = l.ring.iter().next().expect("held").arrive.0;
                    arrives_at(&mut l, k as u32, at);
                    l.rearm(&mut s);
                    let planned = t + 11 * MS;
                    assert!(at >= planned && at < planned + MS, "{k}: {at}");
                    at - planned
                })
                .collect()
        };
        let x = extras(1);
        let n = x.len() as f64;
        let mut bins = [0f64; 10];
        for &e in &x {
            bins[(e * 10 / MS) as usize] += 1.0;
        }
        let chi2: f64 = bins
            .iter()
            .map(|&o| (o - n / 10.0).powi(2) / (n / 10.0))
            .sum();
        assert!(chi2 < 27.88, "chi-square {chi2} over deciles {bins:?}");
        let mean = x.iter().sum::<u64>() as f64 / n;
        // Standard error 1 ms / sqrt(12 n) = 4.6 us; 5 of them.
        assert!(
            (mean - MS as f64 / 2.0).abs() < 23_000.0,
            "mean extra {mean} ns"
        );
        assert_eq!(extras(1), x);
        assert_ne!(extras(2), x);
    }

    /// Packets sent back to back over a jittery link keep their order: one drawn a shorter
    /// extra than the packet ahead arrives with it, not before it.
    #[test]
    fn jitter_never_reorders() {
        let (mut l, mut s) = jittery_link(1000, 5 * MS, 3);
        for k in 0..500u64 {
            l.offer(k, 1000, 0, Instant(0), &mut s);
        }
        let mut last = Instant::ZERO;
        let mut held = 0;
        for k in 0..500u64 {
            let at = l.ring.iter().next().expect("held").arrive;
            let a = l.pop_arrived(at).expect("arrived");
            l.rearm(&mut s);
            assert_eq!(a.word, k);
            // Its transmission ends (k + 1) ms after 0; it arrives 10 ms and an extra later.
            assert!(at.0 >= (k + 11) * MS && at >= last);
            held += usize::from(at == last);
            last = at;
        }
        assert!(held > 50, "{held} packets held by the one ahead");
    }

    /// The packet `pkt` reaches the far end at `t` exactly.
    fn arrives_at(l: &mut LinkDir, pkt: u32, t: u64) {
        assert!(l.pop_arrived(Instant(t - 1)).is_none(), "{pkt} before {t}");
        let a = l
            .pop_arrived(Instant(t))
            .unwrap_or_else(|| panic!("{pkt} not arrived at {t}"));
        assert_eq!(a.word, pkt as u64);
    }

    /// A ring that held more than `RING_TRIM_ABOVE` packets gives its room back when it
    /// empties, and carries the next packets as before; a smaller one keeps its room.
    #[test]
    fn an_emptied_long_queue_gives_its_room_back() {
        let (mut l, mut s) = link_holding(1000);
        let mut t0 = 0;
        for (n, kept) in [(300u32, false), (200, true)] {
            for k in 0..n {
                l.offer(u64::from(k), 1000, 0, Instant(t0), &mut s);
            }
            let room = l.ring.rest.len();
            assert!(room >= n as usize);
            // Packet k ends its transmission (k + 1) ms after t0 and arrives 10 ms later.
            for k in 0..n {
                arrives_at(&mut l, k, t0 + (k as u64 + 11) * MS);
                l.rearm(&mut s);
            }
            assert_eq!(l.ring.len, 0);
            let left = if kept { room } else { 0 };
            assert_eq!(l.ring.rest.len(), left, "{n} packets");
            t0 += (n as u64 + 20) * MS;
            l.offer(u64::from(n), 1000, 0, Instant(t0), &mut s);
            arrives_at(&mut l, n, t0 + 11 * MS);
            l.rearm(&mut s);
            t0 += 20 * MS;
        }
    }

    /// A packet on the wire when the link goes down finishes as planned; the packet behind
    /// it starts when it ends, or when the link is back if that is later (the re-plan takes
    /// the end from the packet behind, the recorded end, or the horizon, see
    /// `LinkDir::last_started_end`).
    #[test]
    fn an_outage_lets_the_packet_on_the_wire_finish() {
        for (back, second_start) in [(MS * 7 / 10, MS), (MS * 3 / 2, MS * 3 / 2)] {
            let (mut l, mut s) = link();
            l.offer(0, 1000, 0, Instant(0), &mut s);
            l.offer(1, 1000, 0, Instant(0), &mut s);
            l.set_up(false, Instant(MS / 2), &mut s);
            // Planned while down: no start, so the next re-plan needs the recorded end.
            l.set_delay(Duration(10 * MS), Instant(MS * 6 / 10), &mut s);
            l.set_up(true, Instant(back), &mut s);
            arrives_at(&mut l, 0, 11 * MS);
            arrives_at(&mut l, 1, second_start + 11 * MS);
        }
        // Nothing behind the packet on the wire when the link goes down: one arrives during
        // the outage and waits for the end.
        let (mut l, mut s) = link();
        l.offer(0, 1000, 0, Instant(0), &mut s);
        l.set_up(false, Instant(MS / 2), &mut s);
        l.offer(1, 1000, 0, Instant(MS * 6 / 10), &mut s);
        l.set_up(true, Instant(MS * 7 / 10), &mut s);
        arrives_at(&mut l, 0, 11 * MS);
        arrives_at(&mut l, 1, 12 * MS);
        // Nothing behind it during the outage either: the link is back before the end, and
        // a packet offered after that starts at the end.
        let (mut l, mut s) = link();
        l.offer(0, 1000, 0, Instant(0), &mut s);
        l.set_up(false, Instant(MS / 2), &mut s);
        l.set_up(true, Instant(MS * 7 / 10), &mut s);
        l.offer(1, 1000, 0, Instant(MS * 8 / 10), &mut s);
        arrives_at(&mut l, 0, 11 * MS);
        arrives_at(&mut l, 1, 12 * MS);
        // A rate change while one packet is on the wire and one waits: the waiting one
        // starts at the first one's end, at the new rate.
        let (mut l, mut s) = link();
        l.offer(0, 1000, 0, Instant(0), &mut s);
        l.offer(1, 1000, 0, Instant(0), &mut s);
        l.set_rate(Bandwidth::from_bps(4_000_000), Instant(MS / 2), &mut s);
        arrives_at(&mut l, 0, 11 * MS);
        arrives_at(&mut l, 1, 13 * MS);
    }
    /// A link direction replaying a trace of one opportunity per millisecond, 10 ms of
    /// delay, room for 100 packets.
    fn trace_link() -> (LinkDir, Scheduler) {
        trace_link_holding(100, b"1\n")
    }

    /// A link direction replaying the trace `text`, 10 ms of delay, room for `limit` packets.
    fn trace_link_holding(limit: u32, text: &[u8]) -> (LinkDir, Scheduler) {
        let trace = Trace::parse(text, "t").unwrap();
        let spec = LinkDirSpec {
            rate: trace.mean_rate(),
            trace: Some(Arc::new(trace)),
            delay: Duration(10 * MS),
            queue: QueueSpec::DropTail(Limit::Packets(limit)),
            loss: LossModel::None,
            jitter: Duration::ZERO,
        };
        let id = ComponentId::new(Kind::Link, 0);
        let l = LinkDir::new(&spec, id, LazyStream::new(1, Purpose::Link, 0));
        (l, Scheduler::new())
    }

    /// A trace link's packets leave at its opportunities (1, 2, 3 ms); a packet waits, and
    /// counts in the queue, until the opportunity that starts it. An outage loses the
    /// opportunities it covers: the packets behind the one that has started go at the
    /// first ones after the link is back. A delay change keeps the transmission schedule.
    #[test]
    fn a_trace_link_replans_from_its_trace_after_an_outage() {
        let (mut l, mut s) = trace_link();
        for k in 0..3 {
            l.offer(k, 1504, 0, Instant(0), &mut s);
        }
        assert_eq!(l.queue_len(Instant(MS / 2)).0, 3);
        assert_eq!(l.queue_len(Instant(MS)).0, 2);
        l.set_up(false, Instant(MS * 3 / 2), &mut s);
        l.set_up(true, Instant(MS * 42 / 10), &mut s);
        arrives_at(&mut l, 0, 11 * MS);
        arrives_at(&mut l, 1, 15 * MS);
        arrives_at(&mut l, 2, 16 * MS);

        let (mut l, mut s) = trace_link();
        for k in 0..3 {
            l.offer(k, 1504, 0, Instant(0), &mut s);
        }
        l.set_delay(Duration(20 * MS), Instant(MS / 2), &mut s);
        // Offered during the outage-free run after the change: the next opportunity, 4 ms.
        l.offer(3, 1504, 0, Instant(MS * 3 / 2), &mut s);
        for (k, t) in [(0, 21), (1, 22), (2, 23), (3, 24)] {
            arrives_at(&mut l, k, t * MS);
        }
    }

    /// The acceptance counters keep counting past 2^32 packets and bytes: their lower halves
    /// sit in the record, and each wrap is carried into the drop counters' line.
    #[test]
    fn acceptance_counters_carry_past_32_bits() {
        let (mut l, mut s) = link_holding(1000);
        l.accepted = Accepted {
            packets: u32::MAX - 1,
            bytes: u32::MAX - 1500,
        };
        for k in 0..3 {
            assert_eq!(
                l.offer(k as u64, 1000, 0, Instant(0), &mut s),
                Offer::Accepted
            );
        }
        let st = l.stats();
        assert_eq!(st.accepted, (1 << 32) + 1);
        assert_eq!(st.accepted_bytes, (1 << 32) - 1501 + 3000);
        assert_eq!(st.delivered + 3, st.accepted);
    }

    /// The ring, with its front inline, is a FIFO of the accepted packets whose planned
    /// arrivals never decrease, after any sequence of offers, arrivals, rate and delay
    /// changes and outages; the packet counters balance (accepted = delivered + lost +
    /// held). The same holds for a link with jitter, and for a trace link (which takes no
    /// rate changes), whose packets moreover leave only at whole milliseconds, the trace's
    /// opportunities.
    #[test]
    fn the_ring_is_a_fifo_and_arrivals_keep_its_order() {
        use proptest::prelude::*;
        use std::collections::VecDeque;
        #[derive(Clone, Debug)]
        enum Op {
            Offer(u32),
            Pop,
            Rate(u64),
            Delay(u64),
            Up(bool),
        }
        let op = prop_oneof![
            4 => (40u32..1500).prop_map(Op::Offer),
            4 => Just(Op::Pop),
            1 => (1u64..20).prop_map(|m| Op::Rate(m * 1_000_000)),
            1 => (0u64..20).prop_map(|ms| Op::Delay(ms * MS)),
            1 => any::<bool>().prop_map(Op::Up),
        ];
        let steps = prop::collection::vec((op, 0u64..3 * MS), 1..200);
        proptest!(ProptestConfig::with_cases(300), |(kind in 0u8..3, steps in steps)| {
            let traced = kind == 1;
            let (mut l, mut s) = match kind {
                0 => link_holding(20),
                1 => trace_link_holding(20, b"1\n1\n3\n4\n4\n4\n9\n"),
                _ => jittery_link(20, 2 * MS, 5),
            };
            let mut held: VecDeque<(u32, u32, u32)> = VecDeque::new();
            let mut now = 0;
            for (k, (op, dt)) in steps.into_iter().enumerate() {
                now += dt;
                let t = Instant(now);
                let k = k as u32;
                match op {
                    Op::Offer(size) => {
                        if l.offer(u64::from(k), size, k + 7, t, &mut s) == Offer::Accepted {
                            held.push_back((k, size, k + 7));
                        }
                    }
                    Op::Pop => {
                        while let Some(a) = l.pop_arrived(t) {
                            let want = held.pop_front();
                            prop_assert_eq!(Some((a.word as u32, a.size, a.hop)), want);
                        }
                        l.rearm(&mut s);
                    }
                    Op::Rate(_) if traced => {}
                    Op::Rate(bps) => l.set_rate(Bandwidth::from_bps(bps), t, &mut s),
                    Op::Delay(d) => l.set_delay(Duration(d), t, &mut s),
                    Op::Up(up) => l.set_up(up, t, &mut s),
                }
                let ring: Vec<(u32, u32, u32)> =
                    l.ring.iter().map(|s| (s.word as u32, s.bytes(), s.hop)).collect();
                prop_assert_eq!(ring, Vec::from(held.clone()));
                let arrivals: Vec<Instant> = l.ring.iter().map(|s| s.arrive).collect();
                prop_assert!(arrivals.windows(2).all(|w| w[0] <= w[1]), "{:?}", arrivals);
                if traced {
                    let starts = l.ring.iter().map(|s| s.start).filter(|&s| s != Instant::MAX);
                    for start in starts {
                        prop_assert_eq!(start.0 % MS, 0, "a start off the trace's milliseconds");
                    }
                }
                let waiting = l.ring.iter().filter(|s| s.start > t).count();
                prop_assert_eq!(l.queue_len(t).0 as usize, waiting);
                let st = l.stats();
                prop_assert_eq!(st.accepted, st.delivered + st.drops_wire + held.len() as u64);
            }
        });
    }
}
