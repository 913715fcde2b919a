//! The shared network state every endpoint sends through: the clock, the scheduler, the packet
//! pool, the link directions and the routes, plus the conservation counters.
//!
//! A packet travels as what its link directions hold of it (32 bytes, see [`LinkDir`]): its
//! size, its position in the hop table, and eight bytes for its destination. For a data
//! segment, a datagram or a plain ACK those eight bytes are its two sequence numbers' low
//! 32 bits each (subflow and data sequence, or cumulative ACK and data ACK), which the
//! destination unfolds against what it expects next ([`crate::packet::unfold`]); the flow,
//! the subflow, the kind and the header bytes follow from the route. Only an ACK with SACK
//! blocks or a finite receive window is kept whole in the packet pool, and carries its
//! handle instead. So the common packet is written and read nowhere but in link slots.

use crate::capture::{Capture, DropCause, Held, NetView};
use crate::event::Scheduler;
use crate::link::{LinkDir, Offer};
use crate::packet::{Packet, PacketId, PacketKind, PacketPool};
use pathweave_cc::Instant;

/// Packet counters that must balance at any time:
/// `created = delivered + dropped + live`, where `live` packets sit in links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conservation {
    /// Packets created by endpoints.
    pub created: u64,
    /// Packets handed to their destination endpoint.
    pub delivered: u64,
    /// Packets dropped by queues.
    pub dropped_queue: u64,
    /// Packets lost on the wire.
    pub dropped_wire: u64,
}

/// Where a route starts: its first position in the hop table and that position's link
/// direction (one lookup for a new packet instead of two).
#[derive(Clone, Copy, Debug)]
struct RouteStart {
    hop: u32,
    link: u32,
}

/// What every packet of a route carries, besides its sequence numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteInfo {
    /// The flow (connection) it belongs to.
    pub flow: u32,
    /// What its packets are.
    pub kind: PacketKind,
    /// The subflow of its connection (0 for single-path flows).
    pub sub: u16,
    /// Bytes of a packet's size that are not payload (a data segment's headers; 0 for
    /// datagrams and ACKs, whose payload is not read).
    pub overhead: u32,
}

impl RouteInfo {
    /// Header bytes a route can declare: 14 bits of its hop-table entry.
    pub const MAX_OVERHEAD: u32 = (1 << 14) - 1;

    /// The hop-table entry after a route's end: the subflow in bits 0–15, the overhead in
    /// bits 16–29, the kind in bits 30–31.
    fn pack(&self) -> u32 {
        let kind = match self.kind {
            PacketKind::Data => 0,
            PacketKind::Ack => 1,
            PacketKind::Datagram => 2,
        };
        self.sub as u32 | self.overhead << 16 | kind << 30
    }
}

/// A packet handed to its destination, see [`Net::link_arrival`].
#[derive(Clone, Copy, Debug)]
pub struct Delivered {
    /// The flow whose endpoint receives it.
    pub flow: usize,
    /// Data, ACK or datagram.
    pub kind: PacketKind,
    /// The subflow of its connection.
    pub sub: u16,
    /// Payload bytes (data segments and datagrams).
    pub payload: u32,
    /// The low 32 bits of a data segment's subflow sequence number or an ACK's cumulative
    /// ACK (see [`crate::packet::unfold`]).
    pub seq: u32,
    /// The low 32 bits of a data segment's data sequence number or an ACK's data ACK.
    pub dsn: u32,
    /// An ACK kept whole in the pool (it carries SACK blocks or a finite receive window):
    /// its handle, for [`Net::take`], in place of `seq` and `dsn`.
    pub pooled: Option<PacketId>,
}

/// Where a packet goes when it leaves a link direction, see [`Net::after`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Next {
    /// Into this link direction.
    Link(usize),
    /// To this flow's endpoint.
    Flow(usize),
}

/// Clock, scheduler, pool, links and routes.
pub struct Net {
    /// Current simulated time.
    pub now: Instant,
    /// Pending events.
    pub sched: Scheduler,
    /// Packet storage.
    pub pool: PacketPool,
    /// Every link direction, indexed by the ids routes use.
    pub links: Vec<LinkDir>,
    /// Every route's link-direction indices, one route after another, each followed by its
    /// flow's index marked with [`Net::DEST`] and its [`RouteInfo`] packed; a packet's
    /// position in this table travels with it through the link directions (see
    /// [`LinkDir::offer`]). One read tells where an arrived packet goes next, a link direction
    /// or its flow's endpoint, and the next what the endpoint needs besides the packet's
    /// sequence numbers.
    hops: Vec<u32>,
    /// Where each route starts in `hops`, with its first link direction; packets are created
    /// with their route's index.
    route_start: Vec<RouteStart>,
    /// The route each position of `hops` belongs to (for the drop counters).
    hop_route: Vec<u32>,
    /// What each route carries.
    routes: Vec<RouteInfo>,
    /// Packets inside links now, and the most there have been at once. `live` repeats what
    /// the conservation counters imply, but keeping it costs the per-packet path fewer
    /// instructions than deriving it at every send (8 per bottleneck packet, callgrind).
    live: u64,
    peak_live: u64,
    /// Conservation counters.
    pub counters: Conservation,
    /// Data packets dropped (queue or wire), per flow.
    pub flow_drops: Vec<u64>,
    /// Data packets dropped (queue or wire), per route: a subflow's data route counts its
    /// own drops.
    pub route_drops: Vec<u64>,
    /// The capture, when one is on: [`Net::send`] tests it, and the event loop that
    /// captures calls [`Net::link_arrival_captured`] instead of [`Net::link_arrival`].
    pub(crate) capture: Option<Box<Capture>>,
}

impl Net {
    /// Marks the end of a route in the hop table, or'ed with the route's flow.
    const DEST: u32 = 1 << 31;

    /// Marks, in the tag a link direction holds with a packet (its hop position), a packet
    /// kept in the pool, whose eight bytes are its handle.
    pub(crate) const POOLED: u32 = 1 << 31;

    /// An idle network at time zero over `links`, with `routes` as lists of link-direction
    /// indices (a packet names its route by its index in this list, and every route has a
    /// link), `info` what each route carries, and `flows` flows. Link-direction and flow
    /// indices are below 2^28 (see [`crate::event::ComponentId`]).
    pub fn new(
        sched: Scheduler,
        links: Vec<LinkDir>,
        routes: &[Vec<u32>],
        info: &[RouteInfo],
        flows: usize,
    ) -> Net {
        debug_assert!(links.len() < Self::DEST as usize && flows < Self::DEST as usize);
        assert_eq!(routes.len(), info.len(), "one RouteInfo per route");
        let mut hops = Vec::with_capacity(routes.iter().map(|r| r.len() + 2).sum());
        let mut route_start = Vec::with_capacity(routes.len());
        let mut hop_route = Vec::with_capacity(hops.capacity());
        for (k, (r, i)) in routes.iter().zip(info).enumerate() {
            assert!(!r.is_empty(), "route {k} has no link");
            assert!(
                i.overhead <= RouteInfo::MAX_OVERHEAD,
                "route {k}: overhead {}",
                i.overhead
            );
            route_start.push(RouteStart {
                hop: hops.len() as u32,
                link: r[0],
            });
            hops.extend_from_slice(r);
            hops.push(Self::DEST | i.flow);
            hops.push(i.pack());
            hop_route.resize(hops.len(), k as u32);
        }
        assert!(
            hops.len() < Self::POOLED as usize,
            "hop table of {} entries",
            hops.len()
        );
        Net {
            now: Instant::ZERO,
            sched,
            pool: PacketPool::new(),
            links,
            hops,
            route_start,
            hop_route,
            routes: info.to_vec(),
            live: 0,
            peak_live: 0,
            counters: Conservation::default(),
            flow_drops: vec![0; flows],
            route_drops: vec![0; routes.len()],
            capture: None,
        }
    }

    /// Create `p` at its flow's first hop (its `hop` names its route; the link directions
    /// carry its hop position from now on).
    #[inline(always)]
    pub fn send(&mut self, p: &Packet) {
        self.counters.created += 1;
        self.live += 1;
        self.peak_live = self.peak_live.max(self.live);
        let RouteStart { hop, link } = self.route_start[p.hop as usize];
        // Data segments and datagrams never carry SACK blocks or a window.
        let (word, tag) = if p.nsack != 0 || p.rwnd != u32::MAX {
            (self.pool.alloc(p).0 as u64, hop | Self::POOLED)
        } else {
            (p.seq as u32 as u64 | (p.dsn as u32 as u64) << 32, hop)
        };
        if self.capture.is_some() {
            return self.offer_captured(link as usize, word, p.size, tag);
        }
        self.offer(link as usize, word, p.size, tag);
    }

    /// [`Net::offer`] with the capture on: the transmissions started before `now` are
    /// logged, then the packet's enqueue or its drop (which its link direction's capture
    /// file records too).
    #[cold]
    #[inline(never)]
    fn offer_captured(&mut self, link: usize, word: u64, size: u32, tag: u32) {
        let Some(mut cap) = self.capture.take() else {
            return self.offer(link, word, size, tag);
        };
        let now = self.now;
        let captured = cap.captures(link);
        let view = NetView {
            hop_route: &self.hop_route,
            routes: &self.routes,
            pool: &self.pool,
        };
        let before = if captured {
            cap.advance(link, &mut self.links[link], now, &view);
            Some((
                self.links[link].queue_len(now),
                self.links[link].drop_causes(),
            ))
        } else {
            None
        };
        let offer = self.links[link].offer(word, size, tag, now, &mut self.sched);
        if let Some(((waiting, _), causes)) = before {
            let held = Held { word, size, tag };
            let (p, b) = self.links[link].queue_len(now);
            match offer {
                Offer::Accepted => cap.on_enqueue(link, now, held, (p, b.0), p == waiting, &view),
                Offer::Dropped => {
                    let after = self.links[link].drop_causes();
                    let cause = if after.1 > causes.1 {
                        DropCause::Early
                    } else if after.2 > causes.2 {
                        DropCause::Forced
                    } else {
                        DropCause::Overflow
                    };
                    cap.on_drop(link, now, held, cause, (p, b.0), &view);
                }
            }
        }
        self.capture = Some(cap);
        if offer == Offer::Dropped {
            self.drop_packet(word, tag, false);
        }
    }

    /// Log, at every captured link direction, the transmissions started by `now`: before
    /// anything else reads a link's queue (a sample, a change to the link).
    pub(crate) fn capture_advance_all(&mut self) {
        let Some(mut cap) = self.capture.take() else {
            return;
        };
        let view = NetView {
            hop_route: &self.hop_route,
            routes: &self.routes,
            pool: &self.pool,
        };
        for (d, link) in self.links.iter_mut().enumerate() {
            if cap.captures(d) {
                cap.advance(d, link, self.now, &view);
            }
        }
        self.capture = Some(cap);
    }

    /// Drop the packet of `word` and `tag`: queueing, or on the wire.
    #[cold]
    fn drop_packet(&mut self, word: u64, tag: u32, wire: bool) {
        if tag & Self::POOLED != 0 {
            self.pool.free(PacketId(word as u32));
        }
        self.live -= 1;
        if wire {
            self.counters.dropped_wire += 1;
        } else {
            self.counters.dropped_queue += 1;
        }
        let route = self.hop_route[(tag & !Self::POOLED) as usize] as usize;
        let info = self.routes[route];
        if info.kind != PacketKind::Ack {
            self.flow_drops[info.flow as usize] += 1;
            self.route_drops[route] += 1;
        }
    }

    /// Offer the packet of `word`, `size` bytes and `tag` to link direction `link`.
    #[inline(always)]
    fn offer(&mut self, link: usize, word: u64, size: u32, tag: u32) {
        if self.links[link].offer(word, size, tag, self.now, &mut self.sched) == Offer::Dropped {
            self.drop_packet(word, tag, false);
        }
    }

    /// Handle the live event of link `l`: move one arrived packet on, or hand it to the
    /// caller when it has reached its destination (a pooled ACK is then the caller's to
    /// [`Net::take`]). Returns `None`, with the link re-armed for its next arrival, when no
    /// packet is due. Moving a packet on reads only the link's record of it.
    #[inline(always)]
    pub fn link_arrival(&mut self, l: usize) -> Option<Option<Delivered>> {
        self.arrival::<false>(l)
    }

    /// [`Net::link_arrival`] with the capture on: the packet is recorded at its link
    /// direction's egress, and handed on through [`Net::offer_captured`].
    #[inline(never)]
    pub fn link_arrival_captured(&mut self, l: usize) -> Option<Option<Delivered>> {
        self.arrival::<true>(l)
    }

    #[inline(always)]
    fn arrival<const CAPTURE: bool>(&mut self, l: usize) -> Option<Option<Delivered>> {
        if CAPTURE {
            self.capture_egress(l);
        }
        let link = &mut self.links[l];
        let Some(a) = link.pop_arrived(self.now) else {
            link.rearm(&mut self.sched);
            return None;
        };
        if a.lost {
            self.drop_packet(a.word, a.hop, true);
            return Some(None);
        }
        let pooled = a.hop & Self::POOLED;
        let hop = (a.hop & !Self::POOLED) + 1;
        match Self::next(self.hops[hop as usize]) {
            Next::Link(link) => {
                if CAPTURE {
                    self.offer_captured(link, a.word, a.size, hop | pooled);
                } else {
                    self.offer(link, a.word, a.size, hop | pooled);
                }
                Some(None)
            }
            Next::Flow(flow) => {
                self.counters.delivered += 1;
                self.live -= 1;
                let info = self.hops[hop as usize + 1];
                let kind = match info >> 30 {
                    0 => PacketKind::Data,
                    1 => PacketKind::Ack,
                    _ => PacketKind::Datagram,
                };
                Some(Some(Delivered {
                    flow,
                    kind,
                    sub: info as u16,
                    payload: a.size.wrapping_sub(info >> 16 & RouteInfo::MAX_OVERHEAD),
                    seq: a.word as u32,
                    dsn: (a.word >> 32) as u32,
                    pooled: (pooled != 0).then_some(PacketId(a.word as u32)),
                }))
            }
        }
    }

    /// Before link direction `l` hands on its head packet: log the transmissions started by
    /// now and, if the head has arrived, record it in the capture, stamped with its
    /// transmission end (its arrival less the propagation delay, never before it started).
    #[cold]
    fn capture_egress(&mut self, l: usize) {
        let Some(mut cap) = self.capture.take() else {
            return;
        };
        if cap.captures(l) {
            let now = self.now;
            let view = NetView {
                hop_route: &self.hop_route,
                routes: &self.routes,
                pool: &self.pool,
            };
            let link = &mut self.links[l];
            cap.advance(l, link, now, &view);
            if let (Some(ts), Some((word, tag))) = (link.head_egress(now), link.head_tag()) {
                let (size, lost) = link.head_size();
                cap.on_egress(l, ts, Held { word, size, tag }, lost, &view);
            }
        }
        self.capture = Some(cap);
    }

    /// The pooled packet of handle `id` (see [`Delivered::pooled`]), given back to the pool.
    #[inline]
    pub fn take(&mut self, id: PacketId) -> Packet {
        let p = self.pool.get(id);
        self.pool.free(id);
        p
    }

    /// What the route of a packet held with `tag` carries.
    pub fn route_of(&self, tag: u32) -> RouteInfo {
        self.routes[self.hop_route[(tag & !Self::POOLED) as usize] as usize]
    }

    /// The pool handle of a packet held with `word` and `tag`, if it is kept there (a
    /// prefetch hint's lookup).
    #[inline(always)]
    pub(crate) fn pooled(word: u64, tag: u32) -> Option<PacketId> {
        (tag & Self::POOLED != 0).then_some(PacketId(word as u32))
    }

    /// The largest number of packets inside links at once so far.
    pub fn peak_packets(&self) -> u64 {
        self.peak_live
    }

    /// Decode an entry of the hop table.
    #[inline(always)]
    fn next(entry: u32) -> Next {
        match entry & Self::DEST {
            0 => Next::Link(entry as usize),
            _ => Next::Flow((entry & !Self::DEST) as usize),
        }
    }

    /// The address of the hop table's entry that [`Net::after`] reads for `hop`, for a
    /// prefetch hint (never dereferenced here, so it may point past the table).
    #[inline(always)]
    pub(crate) fn after_addr(&self, hop: u32) -> *const u8 {
        self.hops
            .as_ptr()
            .wrapping_add((hop & !Self::POOLED) as usize + 1)
            .cast::<u8>()
    }

    /// Where a packet at hop position `hop` goes when it leaves that hop's link direction (a
    /// prefetch hint's lookup).
    #[inline(always)]
    pub(crate) fn after(&self, hop: u32) -> Option<Next> {
        self.hops
            .get((hop & !Self::POOLED) as usize + 1)
            .map(|&e| Self::next(e))
    }

    /// Packets currently inside links.
    pub fn in_links(&self) -> u64 {
        self.links.iter().map(|l| l.in_link() as u64).sum()
    }

    /// Check `created = delivered + dropped + in links` and that the pool agrees.
    pub fn check_conservation(&self) -> Result<(), String> {
        let c = self.counters;
        let in_links = self.in_links();
        let accounted = c.delivered + c.dropped_queue + c.dropped_wire + in_links;
        if c.created != accounted {
            return Err(format!(
                "packet conservation violated: created {} != delivered {} + dropped {} + lost on wire {} + in links {}",
                c.created, c.delivered, c.dropped_queue, c.dropped_wire, in_links
            ));
        }
        if self.live != in_links {
            return Err(format!(
                "{} packets are counted alive but links hold {in_links}",
                self.live
            ));
        }
        let pooled = self
            .links
            .iter()
            .flat_map(|l| l.packets())
            .filter(|&(_, tag)| tag & Self::POOLED != 0)
            .count();
        if self.pool.live() != pooled {
            return Err(format!(
                "packet pool holds {} live packets but links hold {pooled} pooled ones",
                self.pool.live()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ComponentId, Kind};
    use crate::link::{Limit, LinkDirSpec, LossModel, QueueSpec};
    use crate::packet::unfold;
    use crate::rng::{LazyStream, Purpose};
    use pathweave_cc::{Bandwidth, Duration};

    /// Two link directions of 8 Mbit/s and 1 ms each; route 0 carries flow 3's subflow 1
    /// data (40 header bytes) over both, route 1 its ACKs over the second.
    fn net() -> Net {
        let links = (0..2)
            .map(|i| {
                let spec = LinkDirSpec {
                    rate: Bandwidth::from_bps(8_000_000),
                    trace: None,
                    delay: Duration(1_000_000),
                    queue: QueueSpec::DropTail(Limit::Packets(10)),
                    loss: LossModel::None,
                    jitter: Duration::ZERO,
                };
                let id = ComponentId::new(Kind::Link, i);
                LinkDir::new(&spec, id, LazyStream::new(1, Purpose::Link, i))
            })
            .collect();
        let info = |kind, overhead| RouteInfo {
            flow: 3,
            kind,
            sub: 1,
            overhead,
        };
        Net::new(
            Scheduler::new(),
            links,
            &[vec![0, 1], vec![1]],
            &[info(PacketKind::Data, 40), info(PacketKind::Ack, 0)],
            4,
        )
    }

    /// Run the network's events to the end; what reached its destination, in order.
    fn deliver(net: &mut Net) -> Vec<Delivered> {
        let mut out = Vec::new();
        while let Some((t, c)) = net.sched.pop_until(Instant::MAX) {
            net.now = t;
            let l = c.link_index().expect("only links have events");
            if !net.links[l].fire(t) {
                continue;
            }
            while let Some(arrival) = net.link_arrival(l) {
                out.extend(arrival);
            }
        }
        out
    }

    /// A data segment arrives with what its route says (flow, subflow, kind, payload from
    /// the size less the header) and the low halves of its sequence numbers, which unfold
    /// to the whole numbers against a nearby reference; nothing is kept in the pool.
    #[test]
    fn a_data_segment_travels_in_its_link_slots() {
        let mut net = net();
        let mut p = Packet::new(3, 0, PacketKind::Data, 1040, 1000);
        p.sub = 1;
        p.seq = (5 << 32) + 17;
        p.dsn = (9 << 32) - 2;
        net.send(&p);
        assert_eq!(net.pool.live(), 0);
        assert_eq!(net.check_conservation(), Ok(()));
        let [d] = deliver(&mut net)[..] else {
            panic!("one packet sent, one delivered")
        };
        assert_eq!(
            (d.flow, d.kind, d.sub, d.payload, d.pooled),
            (3, PacketKind::Data, 1, 1000, None)
        );
        assert_eq!(unfold((5 << 32) + 10, d.seq), (5 << 32) + 17);
        assert_eq!(unfold(9 << 32, d.dsn), (9 << 32) - 2);
        assert_eq!(net.counters.delivered, 1);
        assert_eq!(net.check_conservation(), Ok(()));
    }

    /// An ACK with SACK blocks or a finite window is kept whole in the pool until its
    /// destination takes it; a plain ACK is not. Both count among the packets alive.
    #[test]
    fn only_acks_with_sack_blocks_or_a_window_are_pooled() {
        let mut net = net();
        let mut a = Packet::new(3, 1, PacketKind::Ack, 40, 0);
        a.sub = 1;
        a.seq = 100;
        a.dsn = 200;
        a.set_sack(0, (103, 105));
        a.nsack = 1;
        net.send(&a);
        let mut w = Packet::new(3, 1, PacketKind::Ack, 40, 0);
        w.seq = 101;
        w.rwnd = 8;
        net.send(&w);
        let mut plain = Packet::new(3, 1, PacketKind::Ack, 40, 0);
        plain.seq = 102;
        plain.dsn = 201;
        net.send(&plain);
        assert_eq!((net.pool.live(), net.peak_packets()), (2, 3));
        assert_eq!(net.check_conservation(), Ok(()));
        let [sack, window, plain] = deliver(&mut net)[..] else {
            panic!("three packets sent, three delivered")
        };
        let p = net.take(sack.pooled.expect("an ACK with a SACK block is pooled"));
        assert_eq!((p.ack(), p.data_ack(), p.sub), (100, 200, 1));
        assert_eq!(p.sack_blocks().collect::<Vec<_>>(), vec![(103, 105)]);
        let p = net.take(window.pooled.expect("an ACK with a window is pooled"));
        assert_eq!((p.ack(), p.rwnd), (101, 8));
        assert_eq!(
            (plain.kind, plain.pooled, plain.seq, plain.dsn),
            (PacketKind::Ack, None, 102, 201)
        );
        assert_eq!(net.pool.live(), 0);
        assert_eq!(net.check_conservation(), Ok(()));
    }
}
