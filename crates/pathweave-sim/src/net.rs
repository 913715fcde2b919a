//! The shared network state every endpoint sends through: the clock, the scheduler, the packet
//! pool, the link directions and the routes, plus the conservation counters.

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
    /// flow's index marked with [`Net::DEST`]; a packet's position in this table travels with
    /// it through the link directions (see [`LinkDir::offer`]). One read tells where an
    /// arrived packet goes next, a link direction or its flow's endpoint, so a delivery
    /// finds the endpoint without waiting for the packet's header.
    hops: Vec<u32>,
    /// Where each route starts in `hops`, with its first link direction; packets are created
    /// with their route's index.
    route_start: Vec<RouteStart>,
    /// The route each position of `hops` belongs to (for the drop counters).
    hop_route: Vec<u32>,
    /// Conservation counters.
    pub counters: Conservation,
    /// Data packets dropped (queue or wire), per flow.
    pub flow_drops: Vec<u64>,
    /// Data packets dropped (queue or wire), per route: a subflow's data route counts its
    /// own drops.
    pub route_drops: Vec<u64>,
}

impl Net {
    /// Marks the end of a route in the hop table, or'ed with the route's flow.
    const DEST: u32 = 1 << 31;

    /// An idle network at time zero over `links`, with `routes` as lists of link-direction
    /// indices (a packet names its route by its index in this list), `route_flow` the flow
    /// each route belongs to, and `flows` flows. Link-direction and flow indices are below
    /// 2^28 (see [`crate::event::ComponentId`]).
    pub fn new(
        sched: Scheduler,
        links: Vec<LinkDir>,
        routes: &[Vec<u32>],
        route_flow: &[u32],
        flows: usize,
    ) -> Net {
        debug_assert!(links.len() < Self::DEST as usize && flows < Self::DEST as usize);
        let mut hops = Vec::with_capacity(routes.iter().map(|r| r.len() + 1).sum());
        let mut route_start = Vec::with_capacity(routes.len());
        let mut hop_route = Vec::with_capacity(hops.capacity());
        for (k, r) in routes.iter().enumerate() {
            let end = Self::DEST | route_flow[k];
            route_start.push(RouteStart {
                hop: hops.len() as u32,
                link: r.first().copied().unwrap_or(end),
            });
            hops.extend_from_slice(r);
            hops.push(end);
            hop_route.resize(hops.len(), k as u32);
        }
        Net {
            now: Instant::ZERO,
            sched,
            pool: PacketPool::new(),
            links,
            hops,
            route_start,
            hop_route,
            counters: Conservation::default(),
            flow_drops: vec![0; flows],
            route_drops: vec![0; routes.len()],
        }
    }

    /// Create `p` at its flow's first hop (its `hop` names its route; the link directions
    /// carry its hop position from now on).
    #[inline(always)]
    pub fn send(&mut self, p: &Packet) {
        self.counters.created += 1;
        let RouteStart { hop, link } = self.route_start[p.hop as usize];
        let link = link as usize;
        let size = p.size;
        let id = self.pool.alloc(p);
        self.offer(link, id, size, hop);
    }

    /// Drop packet `id` at hop position `hop`: queueing, or on the wire.
    #[cold]
    fn drop_packet(&mut self, id: PacketId, hop: u32, wire: bool) {
        let p = self.pool.get(id);
        if wire {
            self.counters.dropped_wire += 1;
        } else {
            self.counters.dropped_queue += 1;
        }
        if p.kind != PacketKind::Ack {
            self.flow_drops[p.flow as usize] += 1;
            self.route_drops[self.hop_route[hop as usize] as usize] += 1;
        }
        self.pool.free(id);
    }

    /// Offer packet `id` of `size` bytes at hop position `hop` to link direction `link`.
    #[inline(always)]
    fn offer(&mut self, link: usize, id: PacketId, size: u32, hop: u32) {
        if self.links[link].offer(id, size, hop, self.now, &mut self.sched) == Offer::Dropped {
            self.drop_packet(id, hop, false);
        }
    }

    /// Handle the live event of link `l`: move one arrived packet on, or hand it back with
    /// its flow's index when it has reached its destination (the caller frees it). Returns
    /// `None`, with the link re-armed for its next arrival, when no packet is due. Moving a
    /// packet on reads only the link's record of it, not the packet.
    #[inline(always)]
    pub fn link_arrival(&mut self, l: usize) -> Option<Option<(PacketId, usize)>> {
        let link = &mut self.links[l];
        let Some(a) = link.pop_arrived(self.now) else {
            link.rearm(&mut self.sched);
            return None;
        };
        if a.lost {
            self.drop_packet(a.pkt, a.hop, true);
            return Some(None);
        }
        let hop = a.hop + 1;
        match Self::next(self.hops[hop as usize]) {
            Next::Link(link) => {
                self.offer(link, a.pkt, a.size, hop);
                Some(None)
            }
            Next::Flow(flow) => {
                self.counters.delivered += 1;
                Some(Some((a.pkt, flow)))
            }
        }
    }

    /// Decode an entry of the hop table.
    #[inline(always)]
    fn next(entry: u32) -> Next {
        match entry & Self::DEST {
            0 => Next::Link(entry as usize),
            _ => Next::Flow((entry & !Self::DEST) as usize),
        }
    }

    /// Where a packet at hop position `hop` goes when it leaves that hop's link direction (a
    /// prefetch hint's lookup).
    #[inline(always)]
    pub(crate) fn after(&self, hop: u32) -> Option<Next> {
        self.hops.get(hop as usize + 1).map(|&e| Self::next(e))
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
        if self.pool.live() as u64 != in_links {
            return Err(format!(
                "packet pool holds {} live packets but links hold {}",
                self.pool.live(),
                in_links
            ));
        }
        Ok(())
    }
}
