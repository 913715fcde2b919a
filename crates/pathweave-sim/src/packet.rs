//! Packets, the pool the few that links cannot carry whole are kept in, and the unfolding of
//! sequence numbers carried in 32 bits. A packet is a small `Copy` record that endpoints build
//! and read; the network carries most of them in their link slots (see [`crate::net`]), and
//! keeps only ACKs with SACK blocks or a finite window in the pool, which recycles its slots so
//! the per-packet path never allocates once it has grown to the most such ACKs alive at once.

/// A handle to a packet in the [`PacketPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketId(pub u32);

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// A TCP data segment (sequence number in `seq`, counted in segments).
    Data,
    /// A TCP acknowledgement (cumulative ACKs in `seq` and `dsn`, SACK blocks).
    Ack,
    /// A datagram of an unresponsive constant-rate flow.
    Datagram,
}

/// Maximum SACK blocks an ACK carries (RFC 2018 allows 3 with timestamps, 4 without).
pub const MAX_SACK_BLOCKS: usize = 3;

/// The part of a packet its destination reads, except the SACK blocks: 32 bytes, which is
/// what the [`PacketPool`] keeps of a packet (two to a cache line). A [`Packet`] starts with
/// it and dereferences to it, so `p.seq`, `p.flow` and the like read and write it.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Header {
    /// Data: subflow segment number. Datagram: sequence number. ACK: the next subflow
    /// segment expected (cumulative), see [`Packet::ack`].
    pub seq: u64,
    /// Data: connection-level data sequence number, in segments. ACK: the next
    /// connection-level data segment expected (cumulative data ACK), see [`Packet::data_ack`].
    pub dsn: u64,
    /// The flow (connection) it belongs to.
    pub flow: u32,
    /// Payload bytes.
    pub payload: u32,
    /// ACK: segments the receiver can accept beyond the data ACK (`u32::MAX`: unlimited).
    pub rwnd: u32,
    /// The subflow of its connection (0 for single-path flows).
    pub sub: u16,
    /// Data, ACK or datagram.
    pub kind: PacketKind,
    /// Number of valid SACK blocks.
    pub nsack: u8,
}

/// One packet. Data segments and ACKs share the two sequence fields, SACK blocks are stored
/// as offsets from the cumulative ACK, and the route is named by the hop field until the
/// packet is sent, so the record fits one cache line of 64 bytes. A pooled packet keeps only
/// its [`Header`] (and SACK blocks, if any): the size and hop position travel with it through
/// the link directions, and no endpoint reads them, so a packet read back from the pool has
/// them zero.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Packet {
    head: Header,
    /// Before it is sent: the route it follows (an index into the network's routes, see
    /// [`Packet::new`]). Once sent: its first hop, as a position in the network's hop table,
    /// which also tells its route (the link directions carry its current position).
    pub hop: u32,
    /// Size on the wire in bytes (payload plus headers).
    pub size: u32,
    /// ACK: SACK blocks as half-open segment ranges `[start, end)` relative to the
    /// cumulative ACK (every block lies above it), most recent first.
    sack: [(u32, u32); MAX_SACK_BLOCKS],
}

impl std::ops::Deref for Packet {
    type Target = Header;
    #[inline(always)]
    fn deref(&self) -> &Header {
        &self.head
    }
}

impl std::ops::DerefMut for Packet {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Header {
        &mut self.head
    }
}

impl Packet {
    /// A packet of `kind` for `flow` along `route`, everything else zero.
    #[inline]
    pub fn new(flow: u32, route: u32, kind: PacketKind, size: u32, payload: u32) -> Self {
        Packet {
            head: Header {
                seq: 0,
                dsn: 0,
                flow,
                payload,
                rwnd: u32::MAX,
                sub: 0,
                kind,
                nsack: 0,
            },
            hop: route,
            size,
            sack: [(0, 0); MAX_SACK_BLOCKS],
        }
    }

    /// ACK: the next subflow segment expected (cumulative).
    #[inline]
    pub fn ack(&self) -> u64 {
        self.head.seq
    }

    /// ACK: the next connection-level data segment expected (cumulative data ACK).
    #[inline]
    pub fn data_ack(&self) -> u64 {
        self.head.dsn
    }

    /// ACK: the SACK blocks, as absolute half-open segment ranges.
    pub fn sack_blocks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let base = self.head.seq;
        self.sack[..self.head.nsack as usize]
            .iter()
            .map(move |&(s, e)| (base + s as u64, base + e as u64))
    }

    /// ACK: set SACK block `i` to the absolute range `[start, end)`, which lies at or above
    /// the cumulative ACK (set first). A block more than 2³² segments above it (a window no
    /// run can reach) is clipped there.
    pub fn set_sack(&mut self, i: usize, (start, end): (u64, u64)) {
        let off = |x: u64| u32::try_from(x - self.head.seq).unwrap_or(u32::MAX);
        self.sack[i] = (off(start), off(end));
    }
}

/// The 64-bit sequence number nearest to `near` whose low 32 bits are `low`: how an endpoint
/// reads a sequence number carried in 32 bits, as TCP reads its own 32-bit sequence space
/// (RFC 9293 §3.4). Exact when the number lies within 2³¹ of `near`, which holds for every
/// number a packet in flight can carry: a window is far below 2³¹ segments.
#[inline(always)]
pub fn unfold(near: u64, low: u32) -> u64 {
    near.wrapping_add(low.wrapping_sub(near as u32) as i32 as i64 as u64)
}

/// A free-list pool of packets. It keeps each packet's [`Header`] (32 bytes, two packets to
/// a cache line), and the SACK blocks of the packets that carry any beside them. The network
/// keeps here only the ACKs its link slots cannot carry (see [`crate::net`]).
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Header>,
    /// The SACK blocks of the packets that carry any, by handle; grown only as far as the
    /// highest handle of such a packet.
    sacks: Vec<[(u32, u32); MAX_SACK_BLOCKS]>,
    free: Vec<u32>,
}

impl PacketPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }
    /// Store `p` and return its handle.
    #[inline]
    pub fn alloc(&mut self, p: &Packet) -> PacketId {
        let id = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p.head;
                i
            }
            None => {
                self.slots.push(p.head);
                self.slots.len() as u32 - 1
            }
        };
        if p.head.nsack != 0 {
            self.keep_sack(id, &p.sack);
        }
        PacketId(id)
    }
    #[cold]
    #[inline(never)]
    fn keep_sack(&mut self, id: u32, sack: &[(u32, u32); MAX_SACK_BLOCKS]) {
        let i = id as usize;
        if self.sacks.len() <= i {
            self.sacks.resize(i + 1, [(0, 0); MAX_SACK_BLOCKS]);
        }
        self.sacks[i] = *sack;
    }
    /// Return a packet to the pool.
    pub fn free(&mut self, id: PacketId) {
        self.free.push(id.0);
    }
    /// Read a packet: as it was created, except that its size and hop are zero (the pool
    /// does not keep them).
    #[inline]
    pub fn get(&self, id: PacketId) -> Packet {
        self.packet(self.header(id), id)
    }
    /// Read a packet's header.
    #[inline]
    pub fn header(&self, id: PacketId) -> Header {
        self.slots[id.0 as usize]
    }
    /// The packet of handle `id` whose header `head` is: `head` with its SACK blocks, if
    /// any, and a zero size and hop.
    #[inline]
    pub fn packet(&self, head: Header, id: PacketId) -> Packet {
        let mut p = Packet {
            head,
            hop: 0,
            size: 0,
            sack: [(0, 0); MAX_SACK_BLOCKS],
        };
        if head.nsack != 0 {
            p.sack = self.sacks[id.0 as usize];
        }
        p
    }
    /// The address of a packet's header, for a prefetch hint.
    #[inline(always)]
    pub(crate) fn header_addr(&self, id: PacketId) -> *const u8 {
        self.slots.as_ptr().wrapping_add(id.0 as usize).cast::<u8>()
    }
    /// Packets currently alive.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
    /// The largest number of packets alive at once so far.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet is copied on creation and on delivery: it stays within one cache line.
    #[test]
    fn a_packet_fits_one_cache_line() {
        assert_eq!(std::mem::size_of::<Packet>(), 64);
    }

    /// A number within 2³¹ of the reference comes back whole from its low 32 bits, on
    /// either side of the reference and across a wrap of the low bits.
    #[test]
    fn unfolding_recovers_numbers_near_the_reference() {
        let cases = [
            (0u64, 0u64),
            (5, 3),
            (5, 9),
            ((1 << 32) - 2, (1 << 32) + 3),
            ((1 << 32) + 3, (1 << 32) - 2),
            (1 << 40, (1 << 40) + (1 << 31) - 1),
            (1 << 40, (1 << 40) - (1 << 31)),
            (u64::MAX - 10, u64::MAX),
        ];
        for (near, x) in cases {
            assert_eq!(unfold(near, x as u32), x, "near {near}, x {x}");
        }
        // Beyond 2³¹ above the reference, a number reads as one below it.
        let far = (1u64 << 40) + (1 << 31);
        assert_eq!(unfold(1 << 40, far as u32), (1 << 40) - (1 << 31));
    }

    /// The pool keeps two packets to a cache line.
    #[test]
    fn a_stored_packet_is_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<Header>(), 32);
    }

    /// What the pool hands back is what was stored, SACK blocks included, with the size and
    /// hop zero; a slot reused by a packet without SACK blocks shows none.
    #[test]
    fn the_pool_gives_back_what_it_was_given() {
        let mut pool = PacketPool::new();
        let mut a = Packet::new(3, 7, PacketKind::Ack, 40, 0);
        a.seq = 1 << 40;
        a.dsn = 99;
        a.rwnd = 12;
        a.sub = 2;
        a.set_sack(0, ((1 << 40) + 5, (1 << 40) + 9));
        a.set_sack(1, ((1 << 40) + 2, (1 << 40) + 3));
        a.nsack = 2;
        let id = pool.alloc(&a);
        let b = pool.get(id);
        assert_eq!((b.flow, b.hop, b.size, b.payload), (3, 0, 0, 0));
        assert_eq!(
            (b.rwnd, b.sub, b.kind, b.seq, b.dsn),
            (12, 2, PacketKind::Ack, 1 << 40, 99)
        );
        let blocks: Vec<_> = b.sack_blocks().collect();
        assert_eq!(
            blocks,
            vec![
                ((1 << 40) + 5, (1 << 40) + 9),
                ((1 << 40) + 2, (1 << 40) + 3)
            ]
        );
        pool.free(id);
        let mut d = Packet::new(4, 1, PacketKind::Data, 1040, 1000);
        d.seq = 17;
        let id2 = pool.alloc(&d);
        assert_eq!(id2, id);
        let e = pool.get(id2);
        assert_eq!(
            (e.flow, e.payload, e.rwnd, e.kind, e.seq, e.nsack),
            (4, 1000, u32::MAX, PacketKind::Data, 17, 0)
        );
        assert_eq!(e.sack_blocks().count(), 0);
        assert_eq!(pool.live(), 1);
    }
}
