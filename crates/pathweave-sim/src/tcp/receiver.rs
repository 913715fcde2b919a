//! The receiving side of a connection: per subflow, cumulative ACKs with SACK blocks
//! (RFC 2018) and optional delayed ACKs (RFC 5681 §4.2); per connection, reassembly of the data
//! sequence with an optional finite receive buffer, whose free space is advertised as the
//! receive window. Out-of-order data held for reassembly occupies the buffer, so a slow subflow
//! can stall a fast one (head-of-line blocking).
//!
//! Invariant: `delivered` counts each data byte once, in data-sequence order.

use super::Recovery;
use super::TcpConfig;
use crate::event::{ComponentId, Timer};
use crate::net::Net;
use crate::packet::{unfold, Header, Packet, PacketKind, MAX_SACK_BLOCKS};
use pathweave_cc::{Duration, Instant};
use std::collections::VecDeque;

/// Counters of a TCP receiver.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverStats {
    /// Data segments received on all subflows, duplicates included.
    pub segments: u64,
    /// Payload bytes received, duplicates included.
    pub bytes: u64,
    /// Payload bytes delivered in order to the application.
    pub delivered: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// Segments that arrived beyond the receive buffer and were discarded.
    pub discarded: u64,
    /// The largest number of out-of-order segments held for reassembly at once.
    pub peak_held: u64,
}

/// A sequence space with a cumulative edge and out-of-order entries held above it. The
/// in-order case reads the first 12 bytes only.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct Reorder {
    pub(crate) next: u64,
    pub(crate) count: u32,
    /// Payload of `next + k` if held, else 0.
    held: VecDeque<u32>,
}

impl Reorder {
    /// Record segment `seq` with `payload` bytes; returns the bytes that became in order, or
    /// `None` for a duplicate.
    #[inline(always)]
    pub(crate) fn insert(&mut self, seq: u64, payload: u32) -> Option<u64> {
        if seq == self.next && self.count == 0 {
            // The common case: in order with nothing held.
            self.next += 1;
            return Some(payload as u64);
        }
        self.insert_slow(seq, payload)
    }

    /// [`Reorder::insert`] for a duplicate, an out-of-order segment or one filling a gap.
    #[inline(never)]
    fn insert_slow(&mut self, seq: u64, payload: u32) -> Option<u64> {
        if seq < self.next {
            return None;
        }
        let k = (seq - self.next) as usize;
        if self.held.len() <= k {
            self.held.resize(k + 1, 0);
        }
        if self.held[k] != 0 {
            return None;
        }
        self.held[k] = payload.max(1);
        self.count += 1;
        let mut in_order = 0;
        while let Some(&p) = self.held.front() {
            if p == 0 {
                break;
            }
            in_order += p as u64;
            self.held.pop_front();
            self.count -= 1;
            self.next += 1;
        }
        if in_order > 0 && self.count == 0 {
            // A hole filled and nothing left held: the end of a loss event's reordering.
            super::subflow::trim(&mut self.held);
        }
        Some(in_order)
    }
}

#[repr(C)]
struct SubReceiver {
    last_seq: u64,
    unacked: u32,
    route: u32,
    delack_at: Option<Instant>,
    seqs: Reorder,
}

/// The receiving side of a TCP connection.
///
/// In declaration order (`#[repr(C)]`), so that with many flows a data segment touches few
/// cache lines: the counters, the settings an ACK needs, the connection's reassembly edge,
/// then the subflows'; the delayed-ACK timer last. The simulation
/// keeps the receiver inline in its flow table, 16 bytes into a 64-byte aligned entry.
#[repr(C)]
pub struct TcpReceiver {
    /// Counters.
    pub stats: ReceiverStats,
    buffer: Option<u32>,
    flow: u32,
    ack_size: u32,
    data: Reorder,
    delayed_ack: Option<Duration>,
    subs: Vec<SubReceiver>,
    timer: Timer,
    comp: ComponentId,
    sack: bool,
}

impl TcpReceiver {
    /// A receiver for `flow` whose subflows send ACKs along `ack_routes`.
    pub fn new(flow: u32, comp: ComponentId, cfg: &TcpConfig, ack_routes: &[u32]) -> Self {
        TcpReceiver {
            stats: ReceiverStats::default(),
            buffer: cfg.receive_buffer,
            flow,
            ack_size: cfg.ack_size,
            data: Reorder::default(),
            delayed_ack: cfg.delayed_ack,
            subs: ack_routes
                .iter()
                .map(|&route| SubReceiver {
                    last_seq: 0,
                    unacked: 0,
                    route,
                    delack_at: None,
                    seqs: Reorder::default(),
                })
                .collect(),
            timer: Timer::default(),
            comp,
            sack: cfg.recovery == Recovery::Sack,
        }
    }

    /// A data segment of `payload` bytes arrived on subflow `sub`, carrying the low 32 bits
    /// of its subflow and data sequence numbers (see [`crate::packet::unfold`]).
    #[inline(always)]
    pub fn on_segment(&mut self, sub: u16, seq: u32, dsn: u32, payload: u32, net: &mut Net) {
        let near = self.subs.get(sub as usize).map_or(0, |s| s.seqs.next);
        let h = Header {
            seq: unfold(near, seq),
            dsn: unfold(self.data.next, dsn),
            flow: self.flow,
            payload,
            rwnd: u32::MAX,
            sub,
            kind: PacketKind::Data,
            nsack: 0,
        };
        self.on_data(&h, net)
    }

    /// A data segment arrived.
    #[inline(always)]
    pub fn on_data(&mut self, p: &Header, net: &mut Net) {
        self.stats.segments += 1;
        self.stats.bytes += p.payload as u64;
        let i = p.sub as usize;
        if i >= self.subs.len() {
            return;
        }
        // Connection level first: a segment beyond the buffer is discarded unseen, so the
        // subflow will retransmit it.
        let within = self
            .buffer
            .is_none_or(|b| p.dsn < self.data.next + b as u64);
        if !within {
            self.stats.discarded += 1;
            self.send_ack(i, net);
            return;
        }
        if let Some(bytes) = self.data.insert(p.dsn, p.payload) {
            self.stats.delivered += bytes;
            self.stats.peak_held = self.stats.peak_held.max(self.data.count as u64);
        }
        let s = &mut self.subs[i];
        s.last_seq = p.seq;
        let had_gap = s.seqs.count > 0;
        let immediate = match s.seqs.insert(p.seq, p.payload) {
            None => true,       // a duplicate: tell the sender at once
            Some(0) => true,    // out of order: a duplicate ACK at once
            Some(_) => had_gap, // RFC 5681 §4.2: ACK a gap-filling segment at once
        };
        match self.delayed_ack {
            Some(d) if !immediate => {
                let s = &mut self.subs[i];
                s.unacked += 1;
                // RFC 5681 §4.2: at least every second full-sized segment.
                if s.unacked >= 2 {
                    self.send_ack(i, net);
                } else {
                    let t = net.now + d;
                    s.delack_at = Some(t);
                    self.timer.arm(t, self.comp, &mut net.sched);
                }
            }
            _ => self.send_ack(i, net),
        }
    }

    #[inline(always)]
    fn send_ack(&mut self, i: usize, net: &mut Net) {
        self.stats.acks_sent += 1;
        let rwnd = match self.buffer {
            None => u32::MAX,
            Some(b) => b.saturating_sub(self.data.count),
        };
        let s = &mut self.subs[i];
        s.unacked = 0;
        s.delack_at = None;
        let mut p = Packet::new(self.flow, s.route, PacketKind::Ack, self.ack_size, 0);
        p.sub = i as u16;
        p.seq = s.seqs.next;
        p.dsn = self.data.next;
        p.rwnd = rwnd;
        if self.sack && s.seqs.count > 0 {
            fill_sack(s, &mut p);
        }
        net.send(&p);
    }

    /// The delayed-ACK timer fired.
    pub fn on_timer(&mut self, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        let mut next: Option<Instant> = None;
        for i in 0..self.subs.len() {
            match self.subs[i].delack_at {
                Some(t) if t <= now => self.send_ack(i, net),
                Some(t) => next = Some(next.map_or(t, |n| n.min(t))),
                None => {}
            }
        }
        if let Some(t) = next {
            self.timer.arm(t, self.comp, &mut net.sched);
        }
    }
}

/// RFC 2018 §4: the first block holds the most recently received segment; the others follow
/// in ascending order.
fn fill_sack(s: &SubReceiver, p: &mut Packet) {
    let held = &s.seqs.held;
    let base = s.seqs.next;
    let mut blocks = [(0u64, 0u64); 8];
    let mut n = 0;
    let mut first = None;
    let mut k = 0;
    while k < held.len() {
        if held[k] == 0 {
            k += 1;
            continue;
        }
        let start = k;
        while k < held.len() && held[k] != 0 {
            k += 1;
        }
        let b = (base + start as u64, base + k as u64);
        if b.0 <= s.last_seq && s.last_seq < b.1 {
            first = Some(b);
        } else if n < blocks.len() {
            blocks[n] = b;
            n += 1;
        }
    }
    let mut out = 0;
    if let Some(b) = first {
        p.set_sack(0, b);
        out = 1;
    }
    for &b in &blocks[..n] {
        if out == MAX_SACK_BLOCKS {
            break;
        }
        p.set_sack(out, b);
        out += 1;
    }
    p.nsack = out as u8;
}

#[cfg(test)]
mod layout {
    use super::{Reorder, SubReceiver, TcpReceiver};
    use std::mem::{offset_of, size_of};

    /// 16 bytes into a 64-byte aligned flow entry (after the entry's tag and the sender's
    /// pointer), what an in-order data segment touches fills the entry's three lines: the
    /// counters; the settings and the reassembly edge; the subflows. A subflow's edge and ACK
    /// state come first in its record.
    #[test]
    fn receiver_fields_sit_in_their_cache_lines() {
        let line = |off: usize| (16 + off) / 64;
        assert_eq!(line(offset_of!(TcpReceiver, stats) + 47), 0);
        assert_eq!(line(offset_of!(TcpReceiver, buffer)), 1);
        let edge = offset_of!(TcpReceiver, data) + offset_of!(Reorder, count) + 3;
        assert_eq!(line(edge), 1);
        assert_eq!(line(offset_of!(TcpReceiver, delayed_ack)), 2);
        assert_eq!(line(offset_of!(TcpReceiver, subs) + 23), 2);
        assert!(offset_of!(SubReceiver, seqs) + offset_of!(Reorder, count) + 3 < 64);
        assert!(16 + size_of::<TcpReceiver>() <= 192);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorder_releases_runs_in_order_and_spots_duplicates() {
        let mut r = Reorder::default();
        assert_eq!(r.insert(1, 10), Some(0));
        assert_eq!(r.insert(2, 10), Some(0));
        assert_eq!(r.insert(1, 10), None);
        assert_eq!(r.insert(0, 7), Some(27));
        assert_eq!(r.next, 3);
        assert_eq!(r.count, 0);
        assert_eq!(r.insert(0, 7), None);
    }
}
