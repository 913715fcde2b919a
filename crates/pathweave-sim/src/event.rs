//! The event scheduler: a priority queue of `(time, insertion order, component)`.
//!
//! Ties at equal times break by insertion order, so a run is a pure function of its scenario
//! and seed. Each component keeps at most one *live* event through a [`Timer`]: re-arming to a
//! later time keeps the pending event (it fires, finds nothing due and re-arms), re-arming to
//! an earlier time pushes a new event and leaves the old one stale. The queue therefore grows
//! with the number of components, not with the number of packets or timer restarts.
//!
//! The queue is a calendar queue (a timing wheel of 256 buckets of 262 µs, about 67 ms;
//! behind it a ring of 64 coarse buckets of 33.6 ms, about 2.1 s, for later events; an overflow
//! heap beyond): pushing files an event in the bucket of its time in constant time, a coarse
//! bucket is spread over the wheel once when the wheel comes within reach of it, and each
//! bucket is sorted once, when the wheel reaches it. Its cost per
//! event does not grow with the number of pending events the way a heap's does. Every
//! `(time, insertion order)` key is distinct, so any correct priority queue pops the same
//! sequence; the plain `BinaryHeap` the engine used before is kept as [`Scheduler::reference`]
//! (the wheel's overflow heap, with every event sent to it) and the tests run whole
//! simulations on both and compare their results. The wheel stores no
//! sequence number: each of its buckets holds its events in insertion order, and is sorted
//! stably by time (see [`Wheel`]).

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
    /// The index of a link direction, or `None` for another kind: cheaper than matching on
    /// [`ComponentId::kind`] (link directions are kind 0).
    #[inline(always)]
    pub fn link_index(self) -> Option<usize> {
        (self.0 >> KIND_SHIFT == 0).then_some(self.0 as usize)
    }
}

/// One pending event on the wheel: 16 bytes, so sorting a bucket moves little. Its place
/// among events of the same time is its place in its bucket (see [`Wheel`]).
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    comp: ComponentId,
    /// Scratch space for sorting a large bucket: the entry's position in it.
    ord: u32,
}

impl Entry {
    #[inline(always)]
    fn new(time: u64, comp: ComponentId) -> Self {
        Entry { time, comp, ord: 0 }
    }
}

/// An event in the overflow heap: time, then the order of its push among the heap's events.
type Far = Reverse<(u64, u64, ComponentId)>;

/// log2 of a bucket's width in nanoseconds (262 µs).
const BUCKET_SHIFT: u32 = 18;
/// log2 of the number of buckets: the wheel spans 256 buckets, about 67 ms, which holds a
/// link's next arrival across the usual propagation delays. Every bucket keeps the room of the
/// most events it ever held, so the span is also the queue's memory: 4096 buckets (1.07 s)
/// held 60 MB at 10,000 flows, and the sparser wheel took more instructions per event.
const WHEEL_BITS: u32 = 8;
const WHEEL: u64 = 1 << WHEEL_BITS;
const WORDS: usize = (WHEEL / 64) as usize;
/// log2 of the number of wheel buckets per coarse bucket: half the wheel, 33.6 ms.
const COARSE_BITS: u32 = WHEEL_BITS - 1;
/// Entries each wheel bucket has room for from the start (a bucket keeps what it grows to).
const BUCKET_CAPACITY: usize = 16;
/// Coarse buckets in the ring (one bitmap word).
const COARSE: u64 = 64;
/// log2 of the number of sub-buckets a crowded current bucket is split into (4.1 µs each),
/// and a crowded sub-bucket in turn (64 ns, then 1 ns).
const SUB_BITS: u32 = 6;
/// Levels of splitting below a bucket: sub-buckets of 4.1 µs, 64 ns and 1 ns. A sub-bucket of
/// the last level holds events of one time only.
const LEVELS: usize = (BUCKET_SHIFT / SUB_BITS) as usize;
/// A bucket with more events than this is split into sub-buckets when it becomes current.
/// At 128, a 1 Gbit/s bottleneck's next departures (8 µs apart) went into sorted runs of up
/// to 128 events spanning the whole bucket, and shifting them took a quarter of a
/// 1,000-flow run's instructions. The 8-flow dumbbells take the same instructions with any
/// threshold from 16 to 128.
const SUB_MIN: usize = 32;
/// A sub-bucket with more events than this is split again when it becomes current. In a
/// FatTree of 1 Gbit/s links a 4.1 µs sub-bucket holds hundreds to thousands of link events,
/// and each ACK's link direction pushes its next arrival a third of a microsecond ahead,
/// into the middle of such a run.
const SUB_MIN_DEEP: usize = 32;
/// Buckets up to this size are sorted by insertion.
const SORT_SMALL: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    /// The current bucket is read as one sorted run.
    Plain = 0,
    /// The current bucket is split: the run is one sub-bucket, `levels` hold the rest.
    Split,
    /// Every event goes to the overflow heap (see [`Scheduler::reference`]).
    Reference,
}

/// A calendar queue: events within the wheel's span go unsorted into the bucket of their
/// time; the current bucket is sorted once when the wheel reaches it and then read in order
/// (an event pushed into it is inserted in place, usually at its end). A two-level bitmap of
/// non-empty buckets finds the next bucket without visiting empty ones.
///
/// Later events wait in coarse buckets of half the wheel's span, and beyond the coarse ring
/// in an overflow heap. With `c` the coarse number (`time >> (BUCKET_SHIFT + COARSE_BITS)`)
/// of an event and `cur_c` that of the current bucket:
///
/// * the wheel (and the current bucket) hold exactly the events with `c ≤ cur_c + 1`, all
///   within the wheel's span because `cur_c` is the coarse number of `cur_abs`;
/// * coarse bucket `c % COARSE` holds the events with `cur_c + 2 ≤ c < cur_c + 2 + COARSE`;
/// * the overflow heap holds the events with `c ≥ cur_c + 2 + COARSE`.
///
/// So every event on the wheel precedes every coarse event, which precedes every heap event.
/// When the current bucket moves into a new coarse bucket, the coarse bucket that comes within
/// `cur_c + 1` is spread over the wheel and heap events that come within the ring move to it.
///
/// A crowded bucket (more than `SUB_MIN` events, as behind a fast link, whose next departure
/// is pushed a microsecond ahead of a bucket's worth of later events) is not read as one
/// sorted run: keeping it sorted would shift most of it at every such push. It is spread over
/// 64 sub-buckets by time, and only the first non-empty one becomes the current run, with
/// `cur_limit` at its end. Pushes before `cur_limit` go into the run; later pushes within the
/// bucket go unsorted into the bucket's own (emptied) wheel slot, which is spread over the
/// sub-buckets when the run is exhausted, before the next sub-bucket becomes the run. Events
/// of one time share a sub-bucket, and a sub-bucket receives the bucket's events in push order
/// (those of the first spread, then each later spread of the slot's), so ties keep their
/// order as below.
///
/// A sub-bucket still crowded when it becomes current (more than `SUB_MIN_DEEP` events: a
/// fabric of thousands of fast links puts hundreds into 4.1 µs) is split the same way, into
/// 64 sub-buckets of 64 ns, and one of those into 64 of 1 ns (one time each). The slot's
/// pushes then pass down level by level when the run is exhausted: the slot is spread over
/// the first level, the events that land in the sub-bucket the second level splits over the
/// second level, and so on, each in its order, so every sub-bucket still receives its events
/// in push order.
///
/// Ties at equal times go by insertion order without a sequence number in the entries: every
/// bucket (wheel or coarse) holds its events in the order they were pushed, and the current
/// bucket is sorted stably by time. That order holds because a bucket is only ever appended
/// to, by a push, by spreading a coarse bucket (in its order) or by moving heap events (in
/// their push order among equal times) — and the last two happen when the bucket's time first
/// comes within reach of the wheel or the ring, before any push could reach it directly, so
/// they come first. An event pushed into the current bucket is placed after every pending
/// event of its time (it is the latest pushed). The overflow heap numbers its own pushes.
#[derive(Debug)]
struct Wheel {
    /// A fixed-size array, so a bucket position (masked to the wheel) needs no bounds check.
    buckets: Box<[Vec<Entry>; WHEEL as usize]>,
    /// Bucket `i` is non-empty iff bit `i % 64` of `words[i / 64]` is set.
    words: [u64; WORDS],
    /// Bit `w` is set iff `words[w]` is non-zero.
    summary: u64,
    /// The current bucket's events in key order; `pos` of them have been handed out.
    current: Vec<Entry>,
    pos: usize,
    /// Events handed out from earlier current buckets: with `pos`, every event handed out.
    handed: u64,
    /// The absolute number (time >> BUCKET_SHIFT) of the current bucket.
    cur_abs: u64,
    /// Events before this time go into the current run: the end of the current bucket, or of
    /// its current sub-bucket. Events of earlier buckets go there too. Zero in a reference
    /// queue.
    cur_limit: u64,
    /// Whether the current bucket is split (`levels` hold its later events), or the queue is
    /// a reference queue.
    mode: Mode,
    /// The split levels below the current bucket; the first `depth` are in use while it is
    /// split. Level 0 splits the bucket, level `i + 1` the sub-bucket `levels[i].split` of
    /// level `i`.
    levels: [Level; LEVELS],
    depth: usize,
    /// The first absolute bucket number beyond the wheel: that of coarse number `cur_c + 2`.
    /// Zero in a reference queue.
    wheel_end: u64,
    /// Coarse bucket `c % COARSE` for coarse numbers `c` in `cur_c + 2 .. cur_c + 2 + COARSE`.
    coarse: Vec<Vec<Entry>>,
    /// Bit `c % COARSE` is set iff that coarse bucket is non-empty.
    coarse_bits: u64,
    overflow: BinaryHeap<Far>,
    /// Pushes into the overflow heap so far: the tie-break among its events.
    overflow_pushes: u64,
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel {
            // Room for a typical bucket from the start: each bucket would otherwise grow
            // (and reallocate) a few times while the run warms up.
            buckets: (0..WHEEL)
                .map(|_| Vec::with_capacity(BUCKET_CAPACITY))
                .collect::<Box<[_]>>()
                .try_into()
                .expect("one vector per bucket"),
            words: [0; WORDS],
            summary: 0,
            current: Vec::new(),
            pos: 0,
            handed: 0,
            cur_abs: 0,
            cur_limit: 1 << BUCKET_SHIFT,
            mode: Mode::Plain,
            levels: std::array::from_fn(|_| Level {
                subs: (0..1 << SUB_BITS).map(|_| Vec::new()).collect(),
                ..Level::default()
            }),
            depth: 0,
            wheel_end: 2 << COARSE_BITS,
            coarse: (0..COARSE).map(|_| Vec::new()).collect(),
            coarse_bits: 0,
            overflow: BinaryHeap::new(),
            overflow_pushes: 0,
        }
    }
}

impl Wheel {
    /// A queue that keeps every event in the overflow heap: a plain binary heap of
    /// `(time, push number)`, with neither the wheel nor the coarse ring.
    fn reference() -> Self {
        Wheel {
            cur_limit: 0,
            wheel_end: 0,
            mode: Mode::Reference,
            ..Wheel::default()
        }
    }

    #[inline(always)]
    fn push(&mut self, e: Entry) {
        let abs = e.time >> BUCKET_SHIFT;
        if e.time < self.cur_limit {
            self.push_current(e);
        } else if abs < self.wheel_end {
            self.file(abs, e);
        } else {
            self.push_later(e);
        }
    }

    /// An event beyond the wheel: into its coarse bucket, or the overflow heap.
    #[inline(never)]
    fn push_later(&mut self, e: Entry) {
        let c = e.time >> (BUCKET_SHIFT + COARSE_BITS);
        if self.mode != Mode::Reference && c < (self.cur_abs >> COARSE_BITS) + 2 + COARSE {
            let k = (c % COARSE) as usize;
            self.coarse[k].push(e);
            self.coarse_bits |= 1 << k;
        } else {
            self.push_overflow(e);
        }
    }

    /// An event of the current run (or, for a time already passed, before it): keep the run
    /// sorted. It usually belongs at the end. A new event is the latest pushed, so it
    /// goes after every pending event of the same time: comparing times is enough.
    #[inline(always)]
    fn push_current(&mut self, e: Entry) {
        match self.current.last() {
            Some(last) if self.current.len() > self.pos && last.time > e.time => {
                self.insert_current(e)
            }
            _ => self.current.push(e),
        }
    }

    /// Insert `e` among the unread events of the current bucket, shifting the later ones up
    /// (usually one or two).
    #[inline(never)]
    fn insert_current(&mut self, e: Entry) {
        self.current.push(e);
        let pos = self.pos;
        let v = &mut self.current[..];
        let mut i = v.len() - 1;
        while i > pos && v[i - 1].time > e.time {
            v[i] = v[i - 1];
            i -= 1;
        }
        v[i] = e;
    }

    #[cold]
    fn push_overflow(&mut self, e: Entry) {
        self.overflow
            .push(Reverse((e.time, self.overflow_pushes, e.comp)));
        self.overflow_pushes += 1;
    }

    /// Put `e` (of absolute bucket `abs`, within the span) into its bucket.
    #[inline]
    fn file(&mut self, abs: u64, e: Entry) {
        let b = (abs & (WHEEL - 1)) as usize;
        self.buckets[b].push(e);
        // The summary bit of a word changes only when the word was empty: one test instead
        // of a write on every push.
        let w = &mut self.words[b / 64];
        if *w == 0 {
            self.summary |= 1 << (b / 64);
        }
        *w |= 1 << (b % 64);
    }

    #[inline]
    fn pop_until(&mut self, limit: u64) -> Option<Entry> {
        loop {
            if let Some(&e) = self.current.get(self.pos) {
                if e.time > limit {
                    return None;
                }
                self.pos += 1;
                return Some(e);
            }
            if !self.turn(limit) {
                return None;
            }
        }
    }

    /// Events pending: counted, not kept (only tests and diagnostics ask).
    fn len(&self) -> usize {
        let filed = |bs: &[Vec<Entry>]| bs.iter().map(Vec::len).sum::<usize>();
        self.current.len() - self.pos
            + filed(&self.buckets[..])
            + self.levels.iter().map(|l| filed(&l.subs)).sum::<usize>()
            + filed(&self.coarse)
            + self.overflow.len()
    }

    /// The first non-empty bucket strictly after the current one, as an absolute number.
    /// The current bucket's own slot must be empty (it is, except while it is split).
    fn next_filled(&self) -> Option<u64> {
        if self.summary == 0 {
            return None;
        }
        let start = ((self.cur_abs + 1) & (WHEEL - 1)) as usize;
        // Search [start, WHEEL) then [0, start): bucket positions after the current one in
        // wheel order.
        let find_from = |from: usize| -> Option<usize> {
            let w = from / 64;
            let here = self.words[w] & (u64::MAX << (from % 64));
            if here != 0 {
                return Some(w * 64 + here.trailing_zeros() as usize);
            }
            let later = if w + 1 < WORDS {
                self.summary & (u64::MAX << (w + 1))
            } else {
                0
            };
            (later != 0).then(|| {
                let w = later.trailing_zeros() as usize;
                w * 64 + self.words[w].trailing_zeros() as usize
            })
        };
        let b = find_from(start).or_else(|| find_from(0))? as u64;
        let ahead = (b.wrapping_sub(start as u64) & (WHEEL - 1)) + 1;
        Some(self.cur_abs + ahead)
    }

    /// The time of the earliest pending event, without turning the wheel.
    fn next_time(&self) -> Option<u64> {
        if let Some(e) = self.current.get(self.pos) {
            return Some(e.time);
        }
        if self.mode == Mode::Split {
            // The rest of the split bucket: its sub-buckets and the pushes since the split
            // (in its own slot), all before any later bucket.
            let slot = &self.buckets[(self.cur_abs & (WHEEL - 1)) as usize];
            // The deepest level with events holds the earliest of them: a level's other
            // sub-buckets all come after the one the level below splits.
            let first = self.levels[..self.depth]
                .iter()
                .rev()
                .find(|l| l.bits != 0)
                .map(|l| &l.subs[l.bits.trailing_zeros() as usize]);
            let t = slot
                .iter()
                .chain(first.into_iter().flatten())
                .map(|e| e.time)
                .min();
            if t.is_some() {
                return t;
            }
        }
        // The wheel's events precede the coarse buckets', which precede the heap's.
        if let Some(abs) = self.next_filled() {
            let b = (abs & (WHEEL - 1)) as usize;
            return self.buckets[b].iter().map(|e| e.time).min();
        }
        if let Some(c) = self.next_coarse() {
            let k = (c % COARSE) as usize;
            return self.coarse[k].iter().map(|e| e.time).min();
        }
        self.overflow.peek().map(|Reverse((t, _, _))| *t)
    }

    /// The coarse number of the first non-empty coarse bucket, if any.
    fn next_coarse(&self) -> Option<u64> {
        if self.coarse_bits == 0 {
            return None;
        }
        let first = (self.cur_abs >> COARSE_BITS) + 2;
        // Bit positions in ring order from `first`.
        let ahead = self
            .coarse_bits
            .rotate_right((first % COARSE) as u32)
            .trailing_zeros() as u64;
        Some(first + ahead)
    }

    /// Make `abs` (no earlier than the current bucket, and with every event before it already
    /// handed out) the current bucket's number: spread the coarse buckets that come within
    /// the wheel over it, and move the heap events that come within the coarse ring.
    #[inline(always)]
    fn advance_to(&mut self, abs: u64) {
        let old_c = self.cur_abs >> COARSE_BITS;
        self.cur_abs = abs;
        self.cur_limit = (abs + 1) << BUCKET_SHIFT;
        // Usually the wheel stays within its coarse bucket: nothing to move.
        if abs >> COARSE_BITS != old_c {
            self.wheel_end = ((abs >> COARSE_BITS) + 2) << COARSE_BITS;
            self.enter_coarse(old_c, abs >> COARSE_BITS);
        }
    }

    /// The current bucket moved from coarse number `old_c` into `new_c`: spread the coarse
    /// buckets that come within the wheel over it and move the heap events that come within
    /// the coarse ring.
    #[inline(never)]
    fn enter_coarse(&mut self, old_c: u64, new_c: u64) {
        // Coarse numbers old_c + 2 ..= new_c + 1 now belong on the wheel. Those before
        // new_c + 1 are empty: no event precedes `abs`.
        for c in (old_c + 2).max(new_c + 1)..=new_c + 1 {
            let k = (c % COARSE) as usize;
            if self.coarse_bits & (1 << k) == 0 {
                continue;
            }
            self.coarse_bits &= !(1 << k);
            let mut v = std::mem::take(&mut self.coarse[k]);
            for e in v.drain(..) {
                self.file(e.time >> BUCKET_SHIFT, e);
            }
            self.coarse[k] = v;
        }
        let ring_end = new_c + 2 + COARSE;
        while let Some(&Reverse((time, _, comp))) = self.overflow.peek() {
            let c = time >> (BUCKET_SHIFT + COARSE_BITS);
            if c >= ring_end {
                break;
            }
            let e = Entry::new(time, comp);
            self.overflow.pop();
            if c <= new_c + 1 {
                self.file(e.time >> BUCKET_SHIFT, e);
            } else {
                let k = (c % COARSE) as usize;
                self.coarse[k].push(e);
                self.coarse_bits |= 1 << k;
            }
        }
    }

    /// The current bucket is exhausted: move to the next bucket holding events (from the
    /// wheel, a coarse bucket or the overflow heap). False if no event is pending. A
    /// reference queue moves its heap's first event into the current bucket if it is due by
    /// `limit` (so that no later push can precede it there), and returns false otherwise.
    #[cold]
    fn turn(&mut self, limit: u64) -> bool {
        self.handed += self.pos as u64;
        self.current.clear();
        self.pos = 0;
        if self.mode != Mode::Plain {
            if self.mode == Mode::Split && self.next_sub() {
                return true;
            }
            if self.mode == Mode::Reference {
                return match self.overflow.peek() {
                    Some(&Reverse((time, _, comp))) if time <= limit => {
                        self.overflow.pop();
                        self.current.push(Entry::new(time, comp));
                        true
                    }
                    _ => false,
                };
            }
        }
        let next = loop {
            if let Some(next) = self.next_filled() {
                break next;
            }
            // The wheel is empty: the next event is in the first non-empty coarse bucket, or
            // failing that at the top of the heap. Move to the start of the coarse bucket
            // before it, which brings it onto the wheel.
            let c = match (self.next_coarse(), self.overflow.peek()) {
                (Some(c), _) => c,
                (None, Some(Reverse((t, _, _)))) => t >> (BUCKET_SHIFT + COARSE_BITS),
                (None, None) => return false,
            };
            self.advance_to(((c - 1) << COARSE_BITS).max(self.cur_abs));
        };
        self.advance_to(next);
        let b = (next & (WHEEL - 1)) as usize;
        std::mem::swap(&mut self.current, &mut self.buckets[b]);
        self.words[b / 64] &= !(1 << (b % 64));
        if self.words[b / 64] == 0 {
            self.summary &= !(1 << (b / 64));
        }
        // A small bucket makes one comparison here.
        let n = self.current.len();
        if n <= SORT_SMALL {
            sort_small(&mut self.current);
            return true;
        }
        if n > SUB_MIN {
            self.mode = Mode::Split;
            self.depth = 1;
            self.levels[0].base = next << BUCKET_SHIFT;
            let mut v = std::mem::take(&mut self.current);
            self.spread(0, &mut v);
            self.current = v;
            return self.next_sub();
        }
        sort_large(&mut self.current);
        true
    }

    /// Move the events of `v` (of the range split at `level`, in push order) to their
    /// sub-buckets of that level.
    #[inline(never)]
    fn spread(&mut self, level: usize, v: &mut Vec<Entry>) {
        let shift = Level::shift(level);
        let lv = &mut self.levels[level];
        for e in v.drain(..) {
            let j = ((e.time >> shift) & ((1 << SUB_BITS) - 1)) as usize;
            lv.subs[j].push(e);
            lv.bits |= 1 << j;
        }
    }

    /// The current run is exhausted while the bucket is split: spread the pushes since over
    /// the levels in use, each level's events that fall in the sub-bucket the next level
    /// splits into that level, and make the first non-empty sub-bucket of the deepest level
    /// the run (splitting it first if it is crowded). False, with the split over, if the
    /// bucket has no event left.
    #[inline(never)]
    fn next_sub(&mut self) -> bool {
        let b = (self.cur_abs & (WHEEL - 1)) as usize;
        if self.words[b / 64] & (1 << (b % 64)) != 0 {
            let mut v = std::mem::take(&mut self.buckets[b]);
            self.spread(0, &mut v);
            self.buckets[b] = v;
            self.words[b / 64] &= !(1 << (b % 64));
            if self.words[b / 64] == 0 {
                self.summary &= !(1 << (b / 64));
            }
        }
        for i in 0..self.depth - 1 {
            let j = self.levels[i].split;
            if self.levels[i].bits & (1 << j) != 0 {
                self.levels[i].bits &= !(1 << j);
                let mut v = std::mem::take(&mut self.levels[i].subs[j]);
                self.spread(i + 1, &mut v);
                self.levels[i].subs[j] = v;
            }
        }
        loop {
            let i = self.depth - 1;
            let lv = &mut self.levels[i];
            if lv.bits == 0 {
                self.depth = i;
                if i == 0 {
                    self.mode = Mode::Plain;
                    self.cur_limit = (self.cur_abs + 1) << BUCKET_SHIFT;
                    return false;
                }
                continue;
            }
            let j = lv.bits.trailing_zeros() as usize;
            lv.bits &= !(1 << j);
            let start = lv.base + ((j as u64) << Level::shift(i));
            if i + 1 < LEVELS && lv.subs[j].len() > SUB_MIN_DEEP {
                lv.split = j;
                let mut v = std::mem::take(&mut lv.subs[j]);
                self.levels[i + 1].base = start;
                self.spread(i + 1, &mut v);
                self.levels[i].subs[j] = v;
                self.depth = i + 2;
                continue;
            }
            std::mem::swap(&mut self.current, &mut lv.subs[j]);
            self.cur_limit = start + (1 << Level::shift(i));
            sort_bucket(&mut self.current);
            return true;
        }
    }
}

/// One level of splitting a crowded bucket: 64 sub-buckets over the range that starts at
/// `base`.
#[derive(Debug, Default)]
struct Level {
    /// Sub-bucket `j`, for events of the range's `j`-th 64th.
    subs: Vec<Vec<Entry>>,
    /// Bit `j` is set iff `subs[j]` is non-empty.
    bits: u64,
    /// The start of the range (ns).
    base: u64,
    /// The sub-bucket the next level splits, while that level is in use.
    split: usize,
}

impl Level {
    /// log2 of the width in ns of a sub-bucket of level `i`.
    #[inline(always)]
    fn shift(i: usize) -> u32 {
        BUCKET_SHIFT - SUB_BITS * (i as u32 + 1)
    }
}

/// Sort a bucket by time, keeping events of equal times in their order (insertion order).
/// Buckets are small, so an insertion sort beats the library's general sort; a large bucket
/// takes the library's unstable sort on the time and the position, which needs no allocation.
#[inline]
fn sort_bucket(v: &mut [Entry]) {
    if v.len() > SORT_SMALL {
        sort_large(v);
    } else {
        sort_small(v);
    }
}

#[inline(never)]
fn sort_large(v: &mut [Entry]) {
    for (k, e) in v.iter_mut().enumerate() {
        e.ord = k as u32;
    }
    v.sort_unstable_by_key(|e| (e.time, e.ord));
}

#[inline]
fn sort_small(v: &mut [Entry]) {
    for i in 1..v.len() {
        let e = v[i];
        if v[i - 1].time <= e.time {
            continue;
        }
        let mut j = i;
        while j > 0 && v[j - 1].time > e.time {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = e;
    }
}

/// The pending-event queue.
#[derive(Debug)]
pub struct Scheduler {
    wheel: Wheel,
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
            wheel: Wheel::default(),
        }
    }
    /// An empty scheduler on a plain binary heap keyed by time and push order (the queue the
    /// engine used before the wheel): slower, kept as the oracle the tests compare the fast
    /// queue against. Both pop the same events in the same order. It is the wheel's own
    /// overflow heap with the wheel and the coarse ring switched off (every push goes to the
    /// heap), so the scheduler never asks which queue it holds.
    pub fn reference() -> Self {
        Scheduler {
            wheel: Wheel::reference(),
        }
    }
    /// Queue an event for `c` at `t`.
    #[inline(always)]
    pub fn push(&mut self, t: Instant, c: ComponentId) {
        self.wheel.push(Entry::new(t.0, c));
    }
    /// The earliest event, if it is due no later than `limit`.
    #[inline]
    pub fn pop_until(&mut self, limit: Instant) -> Option<(Instant, ComponentId)> {
        self.wheel
            .pop_until(limit.0)
            .map(|e| (Instant(e.time), e.comp))
    }
    /// The component of the `k`-th event after the last one handed out, if the current run
    /// holds it: a hint for prefetching only, since a later push can still come before it.
    #[inline(always)]
    pub fn ahead(&self, k: usize) -> Option<ComponentId> {
        let w = &self.wheel;
        w.current.get(w.pos + k).map(|e| e.comp)
    }
    /// The time of the earliest pending event (live or stale), if any.
    pub fn next_time(&self) -> Option<Instant> {
        self.wheel.next_time().map(Instant)
    }
    /// Events dispatched so far.
    pub fn events_processed(&self) -> u64 {
        // Counted by the wheel's position in its current bucket, not on every pop.
        self.wheel.handed + self.wheel.pos as u64
    }
    /// Events currently pending (live and stale). The calendar queue counts them bucket by
    /// bucket, so this is for tests and diagnostics, not for a loop.
    pub fn pending(&self) -> usize {
        self.wheel.len()
    }
}

/// The single pending event of one component.
///
/// The time of the live event is kept as a plain instant, [`Instant::MAX`] meaning none, so
/// arming and firing are single comparisons. An event at [`Instant::MAX`] would never be
/// handed out (every run ends before it), so [`Timer::arm`] does not queue one.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    scheduled: Instant,
}

impl Default for Timer {
    fn default() -> Self {
        Timer {
            scheduled: Instant::MAX,
        }
    }
}

impl Timer {
    /// Make sure the component is woken no later than `t`.
    #[inline(always)]
    pub fn arm(&mut self, t: Instant, c: ComponentId, s: &mut Scheduler) {
        if t < self.scheduled {
            s.push(t, c);
            self.scheduled = t;
        }
    }
    /// Whether [`Timer::arm`] at `t` would push an event (nothing pending, or pending later).
    #[inline(always)]
    pub fn would_arm(&self, t: Instant) -> bool {
        t < self.scheduled
    }
    /// Called when an event for this component pops at `t`: true if it is the live one
    /// (and the timer is now idle), false if it is stale and must be ignored.
    #[inline]
    pub fn fire(&mut self, t: Instant) -> bool {
        if self.scheduled == t {
            self.scheduled = Instant::MAX;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathweave_cc::Duration;

    fn both() -> [Scheduler; 2] {
        [Scheduler::new(), Scheduler::reference()]
    }

    /// A xorshift64 stream: test inputs that are the same on every run.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// Pop from both queues up to `limit`: they must agree on the next time, the event and
    /// the number pending.
    fn pop_both(
        fast: &mut Scheduler,
        slow: &mut Scheduler,
        limit: Instant,
    ) -> Option<(Instant, ComponentId)> {
        assert_eq!(fast.next_time(), slow.next_time());
        let a = fast.pop_until(limit);
        assert_eq!(a, slow.pop_until(limit));
        assert_eq!(fast.pending(), slow.pending());
        a
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
    fn only_link_directions_have_a_link_index() {
        assert_eq!(ComponentId::new(Kind::Link, 0).link_index(), Some(0));
        assert_eq!(
            ComponentId::new(Kind::Link, 40_000).link_index(),
            Some(40_000)
        );
        for kind in [Kind::Sender, Kind::Receiver, Kind::Timeline, Kind::Sampler] {
            assert_eq!(ComponentId::new(kind, 7).link_index(), None);
        }
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

    /// Crowded buckets (more events than the insertion sort takes) full of equal times, filed
    /// directly, through a coarse bucket and through the overflow heap: events of one time
    /// must still pop in insertion order.
    #[test]
    fn crowded_buckets_of_equal_times_pop_in_insertion_order() {
        let (mut fast, mut slow) = (Scheduler::new(), Scheduler::reference());
        // Now in the wheel, two coarse buckets ahead (the ring) and past the ring (the heap).
        for base in [1_000u64, 3_000_000_000, 100_000_000_000] {
            for k in 0..300usize {
                let t = Instant(base + (k as u64 * 7919) % 5);
                let c = ComponentId::new(Kind::Sender, k);
                fast.push(t, c);
                slow.push(t, c);
            }
        }
        let mut pops = 0;
        while let Some(e) = slow.pop_until(Instant::MAX) {
            assert_eq!(fast.pop_until(Instant::MAX), Some(e));
            pops += 1;
            // Pushes into the current bucket, at its times, between pops.
            if pops % 50 == 0 {
                let c = ComponentId::new(Kind::Receiver, pops);
                fast.push(e.0, c);
                slow.push(e.0, c);
            }
        }
        assert_eq!(fast.pop_until(Instant::MAX), None);
        assert!(pops > 900, "{pops}");
    }

    /// Few events far apart (seconds to minutes): the wheel is often empty, and the queue
    /// jumps to the next coarse bucket or to the top of the overflow heap. Both queues must
    /// agree on every pop and on the next time.
    #[test]
    fn sparse_far_events_match_the_reference_heap() {
        let (mut fast, mut slow) = (Scheduler::new(), Scheduler::reference());
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        let mut now = Instant::ZERO;
        let mut pops = 0;
        for k in 0..20_000usize {
            let r = next();
            let dt = match r % 7 {
                0 => (r >> 8) % 1_000_000_000,
                1 => (r >> 8) % 10_000_000_000,
                2 => (r >> 8) % 40_000_000_000,
                3 => (r >> 8) % 200_000_000_000,
                4 => 34_000_000_000 + (r >> 8) % 2_000_000_000,
                5 => 536_870_912 * ((r >> 8) % 80),
                _ => 0,
            };
            let c = ComponentId::new(Kind::Sender, k % 50);
            fast.push(now + Duration(dt), c);
            slow.push(now + Duration(dt), c);
            // Keep a handful pending, so the wheel runs empty between them.
            while fast.pending() > ((r >> 40) % 6) as usize {
                assert_eq!(fast.next_time(), slow.next_time());
                let got = fast.pop_until(Instant::MAX);
                assert_eq!(got, slow.pop_until(Instant::MAX));
                now = got.unwrap().0;
                pops += 1;
            }
        }
        while let Some(e) = slow.pop_until(Instant::MAX) {
            assert_eq!(fast.next_time(), Some(e.0));
            assert_eq!(fast.pop_until(Instant::MAX), Some(e));
        }
        assert_eq!(fast.pop_until(Instant::MAX), None);
        assert!(pops > 10_000, "{pops}");
    }

    /// Crowded buckets, as behind a 10 Gbit/s link serving thousands of flows: thousands of
    /// events within a few buckets, and after each pop pushes a few microseconds ahead (the
    /// link's next departure, inside the current bucket), at the same time, later in the
    /// bucket or beyond it. Split buckets must pop exactly what the reference heap pops, ties
    /// included, and report the same next time and count.
    #[test]
    fn crowded_buckets_split_and_match_the_reference_heap() {
        let (mut fast, mut slow) = (Scheduler::new(), Scheduler::reference());
        let mut next = xorshift(0xD1B5_4A32_D192_ED03);
        let span = 4u64 << BUCKET_SHIFT;
        for k in 0..3_000 {
            let c = ComponentId::new(Kind::Link, k % 700);
            // Many equal times: a coarse grid of 1 µs.
            let t = Instant((next() % span) / 1_000 * 1_000);
            fast.push(t, c);
            slow.push(t, c);
        }
        let mut now = Instant::ZERO;
        let (mut pops, mut splits) = (0, 0);
        for _ in 0..60_000 {
            let r = next();
            let limit = if r % 13 == 0 {
                now + Duration((r >> 8) % 20_000)
            } else {
                Instant::MAX
            };
            let a = pop_both(&mut fast, &mut slow, limit);
            splits += (fast.wheel.mode == Mode::Split) as u32;
            let Some((t, c)) = a else {
                now = limit.min(now + Duration(5_000));
                continue;
            };
            pops += 1;
            now = t;
            let pushes = 1 + (r >> 20) % 2 * (fast.pending() < 3_000) as u64;
            for j in 0..pushes {
                let dt = match (r >> (24 + 4 * j)) % 6 {
                    0 => 0,
                    1 | 2 => 800 + (r >> 40) % 4_000,
                    3 => (r >> 40) % (1 << BUCKET_SHIFT),
                    4 => (r >> 40) % span,
                    _ => (r >> 40) % 3_000_000_000,
                };
                fast.push(t + Duration(dt), c);
                slow.push(t + Duration(dt), c);
            }
        }
        while let Some(e) = slow.pop_until(Instant::MAX) {
            assert_eq!(fast.next_time(), Some(e.0));
            assert_eq!(fast.pop_until(Instant::MAX), Some(e));
        }
        assert_eq!(fast.pop_until(Instant::MAX), None);
        assert!(pops > 50_000, "{pops}");
        // Most pops came from split buckets.
        assert!(splits > 30_000, "{splits}");
    }

    /// Sub-buckets crowded in turn, as in a fabric of thousands of 1 Gbit/s links: about one
    /// event per nanosecond, each pop pushing its component's next event a few nanoseconds to
    /// a few tens of microseconds ahead (an ACK's transmission, a data packet's transmission
    /// and propagation), sometimes at the same time or in a later bucket. Every level of
    /// splitting is used, and the pops match the reference heap's, ties included.
    #[test]
    fn sub_buckets_split_again_and_match_the_reference_heap() {
        let (mut fast, mut slow) = (Scheduler::new(), Scheduler::reference());
        let mut next = xorshift(0x8CB9_2BA7_2F3D_8DD7);
        for k in 0..20_000 {
            let c = ComponentId::new(Kind::Link, k);
            // On a grid of 8 ns over the first 20 µs: many equal times.
            let t = Instant(next() % 20_000 / 8 * 8);
            fast.push(t, c);
            slow.push(t, c);
        }
        let mut now = Instant::ZERO;
        let (mut pops, mut deepest) = (0, 0);
        for _ in 0..300_000 {
            let r = next();
            let limit = if r % 29 == 0 {
                now + Duration((r >> 8) % 3_000)
            } else {
                Instant::MAX
            };
            let a = pop_both(&mut fast, &mut slow, limit);
            deepest = deepest.max(fast.wheel.depth);
            let Some((t, c)) = a else {
                now = limit.min(now + Duration(100));
                continue;
            };
            pops += 1;
            now = t;
            let dt = match (r >> 24) % 8 {
                0 => 0,
                1 => (r >> 40) % 64,
                2 | 3 => 300 + (r >> 40) % 40,
                4..=6 => 12_000 + (r >> 40) % 10_000,
                _ => (r >> 40) % (2 << BUCKET_SHIFT),
            };
            fast.push(t + Duration(dt), c);
            slow.push(t + Duration(dt), c);
        }
        while let Some(e) = slow.pop_until(Instant::MAX) {
            assert_eq!(fast.next_time(), Some(e.0));
            assert_eq!(fast.pop_until(Instant::MAX), Some(e));
        }
        assert_eq!(fast.pop_until(Instant::MAX), None);
        assert!(pops > 250_000, "{pops}");
        assert_eq!(deepest, LEVELS, "every level of splitting was used");
    }

    /// The engine's pattern: pop one event, push zero to two (often at the popped time, in
    /// the same bucket, or for the same component), sometimes stop at a limit; now and then
    /// an event far beyond the wheel's span. Both queues must agree on every pop, including
    /// ties at equal times and limits that fall between events.
    #[test]
    fn wheel_matches_the_reference_heap_under_engine_like_traffic() {
        let (mut fast, mut slow) = (Scheduler::new(), Scheduler::reference());
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        for k in 0..64 {
            let c = ComponentId::new(Kind::Link, k);
            let t = Instant(next() % 1_000_000_000);
            fast.push(t, c);
            slow.push(t, c);
        }
        let mut now = Instant::ZERO;
        let mut pops = 0;
        for _ in 0..200_000 {
            let r = next();
            let limit = if r % 17 == 0 {
                now + Duration((r >> 8) % 500_000)
            } else {
                Instant::MAX
            };
            let a = pop_both(&mut fast, &mut slow, limit);
            let Some((t, c)) = a else {
                now = limit.min(now + Duration(1_000_000));
                continue;
            };
            pops += 1;
            now = t;
            // About 200 events pending, as in a mid-sized scenario.
            let pushes = (r >> 20) % 2 + (fast.pending() < 200) as u64;
            for j in 0..pushes {
                // Up to 5 s: the wheel and the first coarse buckets; up to 40 s: the coarse
                // ring and the overflow heap.
                let dt = match (r >> (24 + 4 * j)) % 6 {
                    0 => 0,
                    1 => (r >> 40) % 10,
                    2 => (r >> 40) % 300_000,
                    3 => (r >> 40) % 50_000_000,
                    4 => (r >> 34) % 5_000_000_000,
                    _ => (r >> 30) % 40_000_000_000,
                };
                let target = if j == 0 {
                    c
                } else {
                    ComponentId::new(Kind::Sender, (r >> 50) as usize % 64)
                };
                fast.push(t + Duration(dt), target);
                slow.push(t + Duration(dt), target);
            }
        }
        assert!(pops > 100_000, "{pops}");
        while let Some(e) = slow.pop_until(Instant::MAX) {
            assert_eq!(fast.next_time(), Some(e.0));
            assert_eq!(fast.pop_until(Instant::MAX), Some(e));
        }
        assert_eq!(fast.pop_until(Instant::MAX), None);
        assert_eq!(fast.next_time(), None);
    }
}
