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
    /// A TCP acknowledgement (cumulative ACK in `ack`, SACK blocks in `sack`).
    Ack,
    /// A datagram of an unresponsive constant-rate flow.
    Datagram,
}

/// Maximum SACK blocks an ACK carries (RFC 2018 allows 3 with timestamps, 4 without).
pub const MAX_SACK_BLOCKS: usize = 3;

/// One packet.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// The flow (connection) it belongs to.
    pub flow: u32,
    /// The route it follows (an index into the network's routes).
    pub route: u32,
    /// The subflow of its connection (0 for single-path flows).
    pub sub: u16,
    /// Data, ACK or datagram.
    pub kind: PacketKind,
    /// Size on the wire in bytes (payload plus headers).
    pub size: u32,
    /// Payload bytes.
    pub payload: u32,
    /// Inside the network: its current hop, as a position in the network's hop table
    /// (set when the packet is sent).
    pub hop: u32,
    /// Number of valid entries in `sack`.
    pub nsack: u8,
    /// Data: subflow segment number. Datagram: sequence number.
    pub seq: u64,
    /// Data: connection-level data sequence number, in segments.
    pub dsn: u64,
    /// ACK: the next subflow segment expected (cumulative).
    pub ack: u64,
    /// ACK: the next connection-level data segment expected (cumulative data ACK).
    pub data_ack: u64,
    /// ACK: segments the receiver can accept beyond `data_ack` (`u32::MAX`: unlimited).
    pub rwnd: u32,
    /// ACK: SACK blocks as half-open segment ranges `[start, end)`, most recent first.
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
}

impl Packet {
    /// A packet of `kind` for `flow` along `route`, everything else zero.
    pub fn new(flow: u32, route: u32, kind: PacketKind, size: u32, payload: u32) -> Self {
        Packet {
            flow,
            route,
            sub: 0,
            kind,
            size,
            payload,
            hop: 0,
            nsack: 0,
            seq: 0,
            dsn: 0,
            ack: 0,
            data_ack: 0,
            rwnd: u32::MAX,
            sack: [(0, 0); MAX_SACK_BLOCKS],
        }
    }
}

/// A free-list pool of packets.
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
    allocated: u64,
}

impl PacketPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }
    /// Store `p` and return its handle.
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.allocated += 1;
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
    /// Packets ever allocated.
    pub fn allocated(&self) -> u64 {
        self.allocated
    }
    /// The largest number of packets alive at once so far.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}
