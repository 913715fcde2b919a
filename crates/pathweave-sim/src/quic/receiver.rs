//! The receiving side of a QUIC connection: per path, the packet numbers to acknowledge and
//! when (RFC 9000 §13.2.1, quinn's `PendingAcks`); per connection, in-order delivery of the
//! stream. Acknowledgements for every path leave in one ACK-only packet on the lowest open
//! path, as quinn's `poll_transmit` builds them (PATH_ACK frames, draft-ietf-quic-multipath).
//!
//! Invariants: a path's ranges are sorted, disjoint, half-open and at most
//! [`MAX_ACK_RANGES`]; `delivered` counts each stream byte once, in order.

use super::{varint_len, Wire, ACK_DELAY_EXPONENT, ACK_PACKET_OVERHEAD, PATH_ACK_TYPE_LEN};
use crate::event::{ComponentId, Timer};
use crate::net::Net;
use crate::packet::{unfold, Packet, PacketKind};
use crate::tcp::receiver::Reorder;
use crate::tcp::ReceiverStats;
use pathweave_cc::{Duration, Instant};
use std::collections::VecDeque;

/// The most ACK ranges a path keeps; beyond, the oldest is forgotten (quinn
/// `MAX_ACK_BLOCKS`).
pub const MAX_ACK_RANGES: usize = 64;

/// What one path's receiver still has to acknowledge (quinn's `PendingAcks` with its
/// defaults: `ack_eliciting_threshold` 1, `reordering_threshold` 1).
#[derive(Debug, Default)]
pub(crate) struct PendingAcks {
    /// Received packet numbers not yet known to be acknowledged, as `[lo, hi)` ranges.
    pub(crate) ranges: VecDeque<(u64, u64)>,
    immediate: bool,
    eliciting_since: u64,
    /// When the first ack-eliciting packet since the last ACK arrived: the max_ack_delay
    /// timer runs from it.
    earliest_since: Option<Instant>,
    /// The largest packet number received and when (for the ACK delay).
    largest: Option<(u64, Instant)>,
    largest_eliciting: Option<u64>,
}

impl PendingAcks {
    /// An ACK frame is due (quinn `can_send`).
    pub(crate) fn can_send(&self) -> bool {
        self.immediate && !self.ranges.is_empty()
    }

    /// An ack-eliciting packet `pn` arrived at `now`. RFC 9000 §13.2.1: acknowledge at once
    /// every second ack-eliciting packet and any packet that arrives out of order (below the
    /// largest so far, or with a gap before it); otherwise within max_ack_delay. Returns
    /// whether the max_ack_delay timer starts.
    pub(crate) fn on_packet(&mut self, now: Instant, pn: u64) -> bool {
        let prev = self.largest_eliciting.unwrap_or(0);
        self.largest_eliciting = Some(self.largest_eliciting.map_or(pn, |l| l.max(pn)));
        self.eliciting_since += 1;
        // ack_eliciting_threshold = 1: an ACK once more than one packet waits.
        self.immediate |= self.eliciting_since > 1;
        // reordering_threshold = 1 (RFC 9000 §13.2.1): the packets between the previous
        // largest and this one are missing.
        self.immediate |= pn < prev || pn > prev + 1;
        self.insert(pn);
        if self.largest.is_none_or(|(l, _)| pn > l) {
            self.largest = Some((pn, now));
        }
        if self.earliest_since.is_none() && !self.can_send() {
            self.earliest_since = Some(now);
            return true;
        }
        false
    }

    fn insert(&mut self, pn: u64) {
        let r = &mut self.ranges;
        match r.back_mut() {
            Some(last) if last.1 == pn => last.1 += 1,
            Some(last) if last.1 < pn => r.push_back((pn, pn + 1)),
            None => r.push_back((pn, pn + 1)),
            Some(_) => {
                // Below the newest range: find its place (rare, a late packet).
                let k = r.partition_point(|&(_, hi)| hi < pn);
                if k < r.len() && r[k].0 <= pn && pn < r[k].1 {
                    return;
                }
                if k < r.len() && r[k].1 == pn {
                    r[k].1 += 1;
                    if k + 1 < r.len() && r[k + 1].0 == r[k].1 {
                        r[k].1 = r[k + 1].1;
                        r.remove(k + 1);
                    }
                } else if k < r.len() && r[k].0 == pn + 1 {
                    r[k].0 = pn;
                } else {
                    r.insert(k, (pn, pn + 1));
                }
            }
        }
        if r.len() > MAX_ACK_RANGES {
            r.pop_front();
        }
    }

    /// The max_ack_delay timer's deadline.
    pub(crate) fn deadline(&self, max_ack_delay: Duration) -> Option<Instant> {
        self.earliest_since.map(|t| t + max_ack_delay)
    }

    /// The max_ack_delay timer fired: an ACK is due if a packet waits for one.
    fn on_timeout(&mut self) {
        self.earliest_since = None;
        self.immediate = self.eliciting_since > 0;
    }

    /// An ACK frame for these ranges left.
    fn acks_sent(&mut self) {
        self.immediate = false;
        self.eliciting_since = 0;
        self.earliest_since = None;
    }

    /// Forget the packet numbers at or below `max` (their acknowledgement was acknowledged,
    /// RFC 9000 §13.2.4).
    fn subtract_below(&mut self, max: u64) {
        while let Some(&(lo, hi)) = self.ranges.front() {
            if hi <= max + 1 {
                self.ranges.pop_front();
            } else {
                if lo <= max {
                    self.ranges[0].0 = max + 1;
                }
                break;
            }
        }
    }

    /// The ACK delay field: the time since the largest packet arrived, in microseconds
    /// scaled down by 2^ack_delay_exponent (RFC 9000 §19.3), as the sender reads it back.
    fn ack_delay(&self, now: Instant) -> (u64, Duration) {
        let us = self
            .largest
            .map_or(0, |(_, t)| now.saturating_since(t).as_nanos() / 1000);
        let field = us >> ACK_DELAY_EXPONENT;
        (field, Duration::from_micros(field << ACK_DELAY_EXPONENT))
    }

    /// Bytes of a PATH_ACK frame for path `path` over these ranges (RFC 9000 §19.3 with the
    /// multipath draft's path id): type, path id, largest, delay, range count, first range,
    /// then a gap and a length per further range, each a variable-length integer.
    fn frame_len(&self, path: u64, delay_field: u64) -> u32 {
        let Some(&(lo, hi)) = self.ranges.back() else {
            return 0;
        };
        let largest = hi - 1;
        let mut len = PATH_ACK_TYPE_LEN
            + varint_len(path)
            + varint_len(largest)
            + varint_len(delay_field)
            + varint_len(self.ranges.len() as u64 - 1)
            + varint_len(largest - lo);
        let mut smallest = lo;
        for &(l, h) in self.ranges.iter().rev().skip(1) {
            len += varint_len(smallest - h - 1) + varint_len(h - 1 - l);
            smallest = l;
        }
        len
    }
}

/// A data packet as it arrives: its path, the low 32 bits of its packet number and of its
/// stream chunk, and its stream bytes (none: a PING probe).
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    /// The path it came on.
    pub path: u16,
    /// Its packet number's low 32 bits.
    pub pn_low: u32,
    /// Its chunk's low 32 bits.
    pub chunk_low: u32,
    /// Stream bytes.
    pub payload: u32,
}

/// The receiving side of a QUIC connection.
pub struct QuicReceiver {
    /// Counters (`segments` counts data packets).
    pub stats: ReceiverStats,
    flow: u32,
    paths: Vec<PendingAcks>,
    /// Per path: the next packet number expected, to unfold the 32 bits a packet carries.
    next_pn: Vec<u64>,
    /// ACK routes, one per path (the reverse of its data route).
    ack_routes: Vec<u32>,
    data: Reorder,
    max_ack_delay: Duration,
    /// ACK-only packets sent, which also numbers the next one.
    next_ack_id: u64,
    /// What each ACK-only packet acknowledged: (its number, path, largest packet number),
    /// until the sender acknowledges it.
    sent_frames: VecDeque<(u64, u16, u64)>,
    timer: Timer,
    comp: ComponentId,
}

impl QuicReceiver {
    /// A receiver for `flow` whose paths' ACK routes are `ack_routes`.
    pub fn new(flow: u32, comp: ComponentId, max_ack_delay: Duration, ack_routes: &[u32]) -> Self {
        QuicReceiver {
            stats: ReceiverStats::default(),
            flow,
            paths: ack_routes.iter().map(|_| PendingAcks::default()).collect(),
            next_pn: vec![0; ack_routes.len()],
            ack_routes: ack_routes.to_vec(),
            data: Reorder::default(),
            max_ack_delay,
            next_ack_id: 0,
            sent_frames: VecDeque::new(),
            timer: Timer::default(),
            comp,
        }
    }

    /// A data packet arrived; `ack_path` is the path whose reverse route the ACK takes.
    pub(crate) fn on_packet(
        &mut self,
        a: Arrival,
        ack_path: usize,
        wire: &mut Wire,
        net: &mut Net,
    ) {
        let Arrival {
            path,
            pn_low,
            chunk_low,
            payload,
        } = a;
        let k = path as usize;
        if k >= self.paths.len() {
            return;
        }
        self.stats.segments += 1;
        self.stats.bytes += payload as u64;
        let pn = unfold(self.next_pn[k], pn_low);
        self.next_pn[k] = self.next_pn[k].max(pn + 1);
        // The sender's lazy ACK of our ACK-only packets rides on some of its packets
        // (quinn `maybe_ack_non_eliciting`): forget what those acknowledged.
        if let Some(acked) = wire.take_ack_of_acks(k, pn) {
            while let Some(&(id, p, largest)) = self.sent_frames.front() {
                if id > acked {
                    break;
                }
                self.sent_frames.pop_front();
                if let Some(pa) = self.paths.get_mut(p as usize) {
                    pa.subtract_below(largest);
                }
            }
        }
        if payload > 0 {
            let chunk = unfold(self.data.next, chunk_low);
            if let Some(bytes) = self.data.insert(chunk, payload) {
                self.stats.delivered += bytes;
                self.stats.peak_held = self.stats.peak_held.max(self.data.count as u64);
            }
        }
        let now = net.now;
        if self.paths[k].on_packet(now, pn) {
            let t = now + self.max_ack_delay;
            self.timer.arm(t, self.comp, &mut net.sched);
        }
        if self.paths.iter().any(PendingAcks::can_send) {
            self.send_ack(ack_path, wire, net);
        }
    }

    /// The max_ack_delay timer fired.
    pub(crate) fn on_timer(&mut self, ack_path: usize, wire: &mut Wire, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        for p in &mut self.paths {
            if p.deadline(self.max_ack_delay).is_some_and(|t| t <= now) {
                p.on_timeout();
            }
        }
        if self.paths.iter().any(PendingAcks::can_send) {
            self.send_ack(ack_path, wire, net);
        }
        if let Some(t) = self
            .paths
            .iter()
            .filter_map(|p| p.deadline(self.max_ack_delay))
            .min()
        {
            self.timer.arm(t, self.comp, &mut net.sched);
        }
    }

    /// One ACK-only packet with a PATH_ACK frame for every path that has one due, on the
    /// reverse route of `ack_path`. Not ack-eliciting, not congestion controlled.
    fn send_ack(&mut self, ack_path: usize, wire: &mut Wire, net: &mut Net) {
        let now = net.now;
        let id = self.next_ack_id;
        self.next_ack_id += 1;
        self.stats.acks_sent += 1;
        let ack_path = ack_path.min(self.ack_routes.len() - 1);
        let mut size = ACK_PACKET_OVERHEAD;
        let rec = wire.begin_ack(ack_path, id);
        for (k, p) in self.paths.iter_mut().enumerate() {
            if !p.can_send() {
                continue;
            }
            let (field, delay) = p.ack_delay(now);
            size += p.frame_len(k as u64, field);
            let largest = p.ranges.back().map_or(0, |r| r.1 - 1);
            wire.push_frame(rec, k as u16, largest, delay, &p.ranges);
            self.sent_frames.push_back((id, k as u16, largest));
            p.acks_sent();
        }
        wire.end_ack(rec);
        let mut pkt = Packet::new(
            self.flow,
            self.ack_routes[ack_path],
            PacketKind::Ack,
            size,
            0,
        );
        pkt.sub = ack_path as u16;
        pkt.seq = id;
        net.send(&pkt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant(x * 1_000_000)
    }

    /// Every second packet asks for an ACK at once; the first of a pair starts the
    /// max_ack_delay timer (RFC 9000 §13.2.1–2).
    #[test]
    fn every_second_packet_is_acknowledged_at_once() {
        let mut p = PendingAcks::default();
        assert!(p.on_packet(ms(1), 0));
        assert!(!p.can_send());
        assert_eq!(p.deadline(Duration::from_millis(25)), Some(ms(26)));
        assert!(!p.on_packet(ms(2), 1));
        assert!(p.can_send());
        p.acks_sent();
        assert!(p.on_packet(ms(3), 2));
        assert!(!p.can_send());
        p.on_timeout();
        assert!(p.can_send());
    }

    /// A gap or a late packet asks for an ACK at once (RFC 9000 §13.2.1); the ranges say
    /// exactly which packets arrived.
    #[test]
    fn out_of_order_packets_are_acknowledged_at_once() {
        let mut p = PendingAcks::default();
        p.on_packet(ms(1), 0);
        p.on_packet(ms(1), 1);
        p.acks_sent();
        p.on_packet(ms(2), 3); // 2 missing
        assert!(p.can_send());
        p.acks_sent();
        p.on_packet(ms(3), 2); // late
        assert!(p.can_send());
        assert_eq!(p.ranges, VecDeque::from([(0, 4)]));
        p.on_packet(ms(4), 6);
        p.on_packet(ms(4), 9);
        assert_eq!(p.ranges, VecDeque::from([(0, 4), (6, 7), (9, 10)]));
        // type 1 + path 1 + largest 9: 1 + delay 0: 1 + count 2: 1 + first range 0: 1 +
        // (gap 9-7-1=1: 1, length 0: 1) + (gap 6-4-1=1: 1, length 3: 1) = 10.
        assert_eq!(p.frame_len(1, 0), PATH_ACK_TYPE_LEN + 9);
        p.subtract_below(6);
        assert_eq!(p.ranges, VecDeque::from([(9, 10)]));
    }

    /// Ranges beyond 64 forget the oldest (quinn `MAX_ACK_BLOCKS`).
    #[test]
    fn ranges_are_bounded() {
        let mut p = PendingAcks::default();
        for k in 0..100 {
            p.on_packet(ms(1), 2 * k);
        }
        assert_eq!(p.ranges.len(), MAX_ACK_RANGES);
        assert_eq!(p.ranges.front(), Some(&(72, 73)));
    }
}
