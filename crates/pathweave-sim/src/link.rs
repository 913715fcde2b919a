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

use crate::event::{ComponentId, Scheduler, Timer};
use crate::packet::PacketId;
use crate::red::{Red, RedParams, Verdict};
use crate::rng::Stream;
use pathweave_cc::{Bandwidth, Bytes, Duration, Instant};
use std::collections::VecDeque;

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
    /// Transmission rate.
    pub rate: Bandwidth,
    /// Propagation delay.
    pub delay: Duration,
    /// Queueing discipline.
    pub queue: QueueSpec,
    /// Random loss on the wire.
    pub loss: LossModel,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    pkt: PacketId,
    size: u32,
    start: Instant,
    end: Instant,
    arrive: Instant,
    lost: bool,
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

/// What became of a packet offered to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// It is queued or on the wire.
    Accepted,
    /// It was dropped; the caller frees it.
    Dropped,
}

enum Disc {
    DropTail(Limit),
    Red(Red),
}

/// One direction of a link.
pub struct LinkDir {
    rate: Bandwidth,
    delay: Duration,
    up: bool,
    disc: Disc,
    loss: LossModel,
    /// Gilbert–Elliott channel state: true while bad.
    channel_bad: bool,
    rng: Stream,
    ring: VecDeque<Slot>,
    /// Ring entries (from the front) whose transmission has started.
    started: usize,
    waiting_pkts: u32,
    waiting_bytes: u64,
    /// When the transmitter finishes everything accepted so far.
    busy_until: Instant,
    timer: Timer,
    id: ComponentId,
    /// Counters.
    pub stats: LinkStats,
}

impl LinkDir {
    /// A link direction that is idle at time zero.
    pub fn new(spec: &LinkDirSpec, id: ComponentId, rng: Stream) -> Self {
        let disc = match &spec.queue {
            QueueSpec::DropTail(l) => Disc::DropTail(*l),
            QueueSpec::Red(p) => Disc::Red(Red::new(*p, spec.rate)),
        };
        LinkDir {
            rate: spec.rate,
            delay: spec.delay,
            up: true,
            disc,
            loss: spec.loss,
            channel_bad: false,
            rng,
            ring: VecDeque::new(),
            started: 0,
            waiting_pkts: 0,
            waiting_bytes: 0,
            busy_until: Instant::ZERO,
            timer: Timer::default(),
            id,
            stats: LinkStats::default(),
        }
    }

    /// Move packets whose transmission has started by `now` out of the waiting count.
    fn advance(&mut self, now: Instant) {
        while let Some(s) = self.ring.get(self.started) {
            if s.start > now {
                break;
            }
            self.waiting_pkts -= 1;
            self.waiting_bytes -= s.size as u64;
            self.started += 1;
        }
    }

    /// Packets and bytes waiting at `now` (not counting the one being transmitted).
    pub fn queue_len(&mut self, now: Instant) -> (u32, Bytes) {
        self.advance(now);
        (self.waiting_pkts, Bytes(self.waiting_bytes))
    }

    /// RED's average queue, if the link runs RED.
    pub fn red_average(&self) -> Option<f64> {
        match &self.disc {
            Disc::Red(r) => Some(r.average()),
            Disc::DropTail(_) => None,
        }
    }

    /// Packets accepted and not yet delivered (waiting, on the wire or propagating).
    pub fn in_link(&self) -> usize {
        self.ring.len()
    }

    /// Iterate over the packets held by the link.
    pub fn packets(&self) -> impl Iterator<Item = PacketId> + '_ {
        self.ring.iter().map(|s| s.pkt)
    }

    /// The current rate.
    pub fn rate(&self) -> Bandwidth {
        self.rate
    }

    /// Offer a packet of `size` bytes at `now`.
    pub fn offer(
        &mut self,
        pkt: PacketId,
        size: u32,
        now: Instant,
        sched: &mut Scheduler,
    ) -> Offer {
        self.stats.arrivals += 1;
        self.advance(now);
        let idle_since = (self.up && self.waiting_pkts == 0 && self.busy_until <= now)
            .then_some(self.busy_until);
        let verdict = match &mut self.disc {
            Disc::DropTail(limit) => {
                let full = match *limit {
                    Limit::Packets(n) => self.waiting_pkts >= n,
                    Limit::Bytes(b) => self.waiting_bytes + size as u64 > b,
                };
                if full {
                    Verdict::Overflow
                } else {
                    Verdict::Enqueue
                }
            }
            Disc::Red(red) => {
                let rng = &mut self.rng;
                red.on_arrival(
                    now,
                    self.waiting_pkts,
                    self.waiting_bytes,
                    size,
                    idle_since,
                    &mut || rng.uniform(),
                )
            }
        };
        match verdict {
            Verdict::Enqueue => {}
            Verdict::EarlyDrop => {
                self.stats.drops_early += 1;
                return Offer::Dropped;
            }
            Verdict::ForcedDrop => {
                self.stats.drops_forced += 1;
                return Offer::Dropped;
            }
            Verdict::Overflow => {
                self.stats.drops_overflow += 1;
                return Offer::Dropped;
            }
        }
        let lost = match self.loss {
            LossModel::None => false,
            LossModel::Bernoulli(p) => self.rng.uniform() < p,
            LossModel::GilbertElliott {
                good_to_bad,
                bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.channel_bad {
                    bad_to_good
                } else {
                    good_to_bad
                };
                if self.rng.uniform() < flip {
                    self.channel_bad = !self.channel_bad;
                }
                let p = if self.channel_bad {
                    loss_bad
                } else {
                    loss_good
                };
                p > 0.0 && self.rng.uniform() < p
            }
        };
        let (start, end, arrive) = self.plan(size, now.max(self.busy_until), self.last_arrival());
        if self.up {
            self.busy_until = end;
        }
        self.ring.push_back(Slot {
            pkt,
            size,
            start,
            end,
            arrive,
            lost,
        });
        if start <= now {
            self.started += 1;
        } else {
            self.waiting_pkts += 1;
            self.waiting_bytes += size as u64;
        }
        self.stats.accepted += 1;
        self.stats.accepted_bytes += size as u64;
        if self.ring.len() == 1 && arrive != Instant::MAX {
            self.timer.arm(arrive, self.id, sched);
        }
        Offer::Accepted
    }

    fn last_arrival(&self) -> Instant {
        self.ring.back().map_or(Instant::ZERO, |s| s.arrive)
    }

    /// Transmission start, end and arrival at the next hop for a packet that may start at
    /// `free`; arrivals never overtake the packet ahead (`prev_arrive`).
    fn plan(&self, size: u32, free: Instant, prev_arrive: Instant) -> (Instant, Instant, Instant) {
        match (self.up, self.rate.transmission_time(Bytes(size as u64))) {
            (true, Some(tx)) => {
                let end = free + tx;
                (free, end, (end + self.delay).max(prev_arrive))
            }
            _ => (Instant::MAX, Instant::MAX, Instant::MAX),
        }
    }

    /// Re-plan every packet that has not started transmitting, from `now`.
    fn replan(&mut self, now: Instant, sched: &mut Scheduler) {
        self.advance(now);
        let mut free = match self.started {
            0 => now,
            k => self.ring[k - 1].end.max(now),
        };
        let mut prev = match self.started {
            0 => Instant::ZERO,
            k => self.ring[k - 1].arrive,
        };
        for i in self.started..self.ring.len() {
            let (start, end, arrive) = self.plan(self.ring[i].size, free, prev);
            let s = &mut self.ring[i];
            s.start = start;
            s.end = end;
            s.arrive = arrive;
            free = end;
            prev = arrive;
        }
        self.busy_until = if self.up { free } else { now };
        self.rearm(sched);
    }

    /// Change the rate from `now` on.
    pub fn set_rate(&mut self, rate: Bandwidth, now: Instant, sched: &mut Scheduler) {
        self.rate = rate;
        if let Disc::Red(r) = &mut self.disc {
            r.set_rate(rate);
        }
        self.replan(now, sched);
    }

    /// Change the propagation delay for packets that start transmitting from `now` on.
    pub fn set_delay(&mut self, delay: Duration, now: Instant, sched: &mut Scheduler) {
        self.delay = delay;
        self.replan(now, sched);
    }

    /// Take the link down (`false`) or bring it back (`true`) at `now`.
    pub fn set_up(&mut self, up: bool, now: Instant, sched: &mut Scheduler) {
        self.up = up;
        self.replan(now, sched);
    }

    /// The link's event fired at `now`: true if it is live (call [`LinkDir::pop_arrived`]).
    pub fn fire(&mut self, now: Instant) -> bool {
        self.timer.fire(now)
    }

    /// Take the next packet that has reached the far end by `now`; `Err` carries a packet lost
    /// on the wire, which the caller frees.
    pub fn pop_arrived(&mut self, now: Instant) -> Option<Result<PacketId, PacketId>> {
        let head = self.ring.front()?;
        if head.arrive > now {
            return None;
        }
        // The head has certainly started transmitting; count it so before it leaves.
        self.advance(now);
        let s = self.ring.pop_front()?;
        self.started -= 1;
        if s.lost {
            self.stats.drops_wire += 1;
            Some(Err(s.pkt))
        } else {
            self.stats.delivered += 1;
            self.stats.delivered_bytes += s.size as u64;
            Some(Ok(s.pkt))
        }
    }

    /// After popping, schedule the next head arrival.
    pub fn rearm(&mut self, sched: &mut Scheduler) {
        if let Some(head) = self.ring.front() {
            if head.arrive != Instant::MAX {
                self.timer.arm(head.arrive, self.id, sched);
            }
        }
    }
}
