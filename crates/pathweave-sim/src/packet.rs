//! Packets and the pool they are recycled through. A packet is a small `Copy` record; links
//! and queues hold 32-bit handles into the pool, so the per-packet path never allocates once
//! the pool has grown to the largest number of packets alive at once.

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

/// One packet. Data segments and ACKs share the two sequence fields, SACK blocks are stored
/// as offsets from the cumulative ACK, and the route is named by the hop field until the
/// packet is sent, so the record fits one cache line of 64 bytes (it is copied when a packet
/// is created and when it is delivered).
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// The flow (connection) it belongs to.
    pub flow: u32,
    /// Before it is sent: the route it follows (an index into the network's routes, see
    /// [`Packet::new`]). Once sent: its first hop, as a position in the network's hop table,
    /// which also tells its route (the link directions carry its current position).
    pub hop: u32,
    /// Size on the wire in bytes (payload plus headers).
    pub size: u32,
    /// Payload bytes.
    pub payload: u32,
    /// ACK: segments the receiver can accept beyond the data ACK (`u32::MAX`: unlimited).
    pub rwnd: u32,
    /// The subflow of its connection (0 for single-path flows).
    pub sub: u16,
    /// Data, ACK or datagram.
    pub kind: PacketKind,
    /// Number of valid entries in `sack`.
    pub nsack: u8,
    /// Data: subflow segment number. Datagram: sequence number. ACK: the next subflow
    /// segment expected (cumulative), see [`Packet::ack`].
    pub seq: u64,
    /// Data: connection-level data sequence number, in segments. ACK: the next
    /// connection-level data segment expected (cumulative data ACK), see [`Packet::data_ack`].
    pub dsn: u64,
    /// ACK: SACK blocks as half-open segment ranges `[start, end)` relative to the
    /// cumulative ACK (every block lies above it), most recent first.
    sack: [(u32, u32); MAX_SACK_BLOCKS],
}

impl Packet {
    /// A packet of `kind` for `flow` along `route`, everything else zero.
    #[inline]
    pub fn new(flow: u32, route: u32, kind: PacketKind, size: u32, payload: u32) -> Self {
        Packet {
            flow,
            hop: route,
            size,
            payload,
            rwnd: u32::MAX,
            sub: 0,
            kind,
            nsack: 0,
            seq: 0,
            dsn: 0,
            sack: [(0, 0); MAX_SACK_BLOCKS],
        }
    }

    /// ACK: the next subflow segment expected (cumulative).
    #[inline]
    pub fn ack(&self) -> u64 {
        self.seq
    }

    /// ACK: the next connection-level data segment expected (cumulative data ACK).
    #[inline]
    pub fn data_ack(&self) -> u64 {
        self.dsn
    }

    /// ACK: the SACK blocks, as absolute half-open segment ranges.
    pub fn sack_blocks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let base = self.seq;
        self.sack[..self.nsack as usize]
            .iter()
            .map(move |&(s, e)| (base + s as u64, base + e as u64))
    }

    /// ACK: set SACK block `i` to the absolute range `[start, end)`, which lies at or above
    /// the cumulative ACK (set first). A block more than 2³² segments above it (a window no
    /// run can reach) is clipped there.
    pub fn set_sack(&mut self, i: usize, (start, end): (u64, u64)) {
        let off = |x: u64| u32::try_from(x - self.seq).unwrap_or(u32::MAX);
        self.sack[i] = (off(start), off(end));
    }
}

/// A free-list pool of packets.
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }
    /// Store `p` and return its handle.
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                PacketId(i)
            }
            None => {
                self.slots.push(p);
                PacketId(self.slots.len() as u32 - 1)
            }
        }
    }
    /// Return a packet to the pool.
    pub fn free(&mut self, id: PacketId) {
        self.free.push(id.0);
    }
    /// Read a packet.
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }
    /// Modify a packet.
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
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
}
