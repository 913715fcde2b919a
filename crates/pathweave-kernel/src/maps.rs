//! The maps' values as userspace reads them (`src/bpf/pw_intf.h`), decoded from the bytes
//! libbpf returns. No unsafe: fields are read at their offsets, little- or big-endian as the
//! machine is.

/// `sizeof(struct pw_conn)`.
pub const CONN_SIZE: usize = 40 + SLOTS * SLOT_SIZE;
/// `sizeof(struct pw_slot)`.
pub const SLOT_SIZE: usize = 48;
/// `sizeof(struct pw_weights)`.
pub const WEIGHTS_SIZE: usize = 4 * SLOTS;
/// Slots per connection (`PW_MAX_PATHS`).
pub const SLOTS: usize = 8;

/// `pw_slot.flags` bits.
pub const SLOT_USED: u32 = 1;
/// The subflow was established with an RTT sample at its last callback.
pub const SLOT_CAN_SEND: u32 = 2;
/// The subflow was in fast recovery at its last callback.
pub const SLOT_RECOVERY: u32 = 4;

/// Indices of `pw_stats` (`enum pw_stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Stat {
    Init = 0,
    Release,
    Registered,
    Unregistered,
    ConnCreated,
    ConnDeleted,
    PlainTcp,
    NoConnYet,
    SlotsFull,
    AlgoMismatch,
    ConnMissing,
    MapFull,
    ReleaseUlpGone,
    NextId,
    Version,
    ListenerConn,
    Rekeyed,
    Reinit,
    InitClosed,
    ConnGone,
    Stale,
    Reclaimed,
    ReclaimedSubflows,
    NotCwndLimited,
}

impl Stat {
    /// Every counter, in index order.
    pub const ALL: [Stat; 24] = [
        Stat::Init,
        Stat::Release,
        Stat::Registered,
        Stat::Unregistered,
        Stat::ConnCreated,
        Stat::ConnDeleted,
        Stat::PlainTcp,
        Stat::NoConnYet,
        Stat::SlotsFull,
        Stat::AlgoMismatch,
        Stat::ConnMissing,
        Stat::MapFull,
        Stat::ReleaseUlpGone,
        Stat::NextId,
        Stat::Version,
        Stat::ListenerConn,
        Stat::Rekeyed,
        Stat::Reinit,
        Stat::InitClosed,
        Stat::ConnGone,
        Stat::Stale,
        Stat::Reclaimed,
        Stat::ReclaimedSubflows,
        Stat::NotCwndLimited,
    ];

    /// The name `status` prints.
    pub fn name(self) -> &'static str {
        match self {
            Stat::Init => "init",
            Stat::Release => "release",
            Stat::Registered => "subflows registered",
            Stat::Unregistered => "subflows unregistered",
            Stat::ConnCreated => "connections created",
            Stat::ConnDeleted => "connections deleted",
            Stat::PlainTcp => "plain TCP sockets",
            Stat::NoConnYet => "callbacks before the connection was known",
            Stat::SlotsFull => "subflows beyond 8 (Reno)",
            Stat::AlgoMismatch => "subflows on another controller than their connection",
            Stat::ConnMissing => "registered subflows whose entry was reclaimed (then Reno)",
            Stat::MapFull => "connections refused, map full",
            Stat::ReleaseUlpGone => "releases after the subflow context was gone",
            Stat::NextId => "connection numbers handed out",
            Stat::Version => "program version",
            Stat::ListenerConn => "callbacks while the connection was still the listener",
            Stat::Rekeyed => "subflows moved to another connection",
            Stat::Reinit => "init of a still registered socket",
            Stat::InitClosed => "init of a socket already closed (not registered)",
            Stat::ConnGone => "subflows whose connection had closed or gone (Reno)",
            Stat::Stale => "entries of an earlier connection at a reused address",
            Stat::Reclaimed => "entries reclaimed after their connection closed",
            Stat::ReclaimedSubflows => "subflows still registered in reclaimed entries",
            Stat::NotCwndLimited => "increases skipped, window not in use",
        }
    }
}

/// One subflow's published state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// OLIA's ℓ in bytes.
    pub loss_interval: u64,
    /// Bytes acknowledged since the subflow joined.
    pub acked_bytes: u64,
    /// Window, packets.
    pub cwnd: u32,
    /// Threshold, packets.
    pub ssthresh: u32,
    /// 8 × smoothed RTT in µs.
    pub srtt_us: u32,
    /// Segment size.
    pub mss: u32,
    /// Congestion events.
    pub losses: u32,
    /// `SLOT_*` bits.
    pub flags: u32,
    /// The subflow's local IPv4 address (which path it takes).
    pub saddr: [u8; 4],
    /// The subflow's local port.
    pub sport: u16,
}

impl Slot {
    /// Whether a subflow holds this slot.
    pub fn used(&self) -> bool {
        self.flags & SLOT_USED != 0
    }
    /// Whether the subflow could send at its last callback.
    pub fn can_send(&self) -> bool {
        self.flags & SLOT_CAN_SEND != 0
    }
}

/// One connection entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conn {
    /// The map key: the address of the connection's MPTCP socket (not part of the value).
    pub key: u64,
    /// `PW_ALGO_*`.
    pub algo: u32,
    /// Registered subflows.
    pub subflows: u32,
    /// Slots in use, one bit each.
    pub used: u32,
    /// LIA: α is recomputed at the next congestion-avoidance ACK.
    pub forced: u32,
    /// LIA's cached α.
    pub alpha: u64,
    /// The connection's MPTCP token.
    pub token: u32,
    /// Connection number (key of the BMC weights).
    pub id: u64,
    /// The slots.
    pub slots: [Slot; SLOTS],
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(off..off + 4) {
        a.copy_from_slice(s);
    }
    u32::from_ne_bytes(a)
}

fn put(b: &mut [u8], off: usize, v: &[u8]) {
    b[off..off + v.len()].copy_from_slice(v);
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(off..off + 8) {
        a.copy_from_slice(s);
    }
    u64::from_ne_bytes(a)
}

impl Conn {
    /// Decodes a `struct pw_conn` stored at `key`; `None` if `b` has the wrong size.
    pub fn decode(key: u64, b: &[u8]) -> Option<Conn> {
        if b.len() != CONN_SIZE {
            return None;
        }
        let mut slots = [Slot::default(); SLOTS];
        for (i, s) in slots.iter_mut().enumerate() {
            let o = 40 + i * SLOT_SIZE;
            *s = Slot {
                loss_interval: u64_at(b, o),
                acked_bytes: u64_at(b, o + 8),
                cwnd: u32_at(b, o + 16),
                ssthresh: u32_at(b, o + 20),
                srtt_us: u32_at(b, o + 24),
                mss: u32_at(b, o + 28),
                losses: u32_at(b, o + 32),
                flags: u32_at(b, o + 36),
                // Stored in network byte order: the bytes are the address as written.
                saddr: b[o + 40..o + 44].try_into().unwrap_or([0; 4]),
                sport: u32_at(b, o + 44) as u16,
            };
        }
        Some(Conn {
            key,
            algo: u32_at(b, 4),
            subflows: u32_at(b, 8),
            used: u32_at(b, 12),
            forced: u32_at(b, 16),
            token: u32_at(b, 20),
            alpha: u64_at(b, 24),
            id: u64_at(b, 32),
            slots,
        })
    }

    /// Encodes the entry as a `struct pw_conn` (the spin lock's word zero; the key is not
    /// part of the value).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; CONN_SIZE];
        put(&mut b, 4, &self.algo.to_ne_bytes());
        put(&mut b, 8, &self.subflows.to_ne_bytes());
        put(&mut b, 12, &self.used.to_ne_bytes());
        put(&mut b, 16, &self.forced.to_ne_bytes());
        put(&mut b, 20, &self.token.to_ne_bytes());
        put(&mut b, 24, &self.alpha.to_ne_bytes());
        put(&mut b, 32, &self.id.to_ne_bytes());
        for (i, s) in self.slots.iter().enumerate() {
            let o = 40 + i * SLOT_SIZE;
            put(&mut b, o, &s.loss_interval.to_ne_bytes());
            put(&mut b, o + 8, &s.acked_bytes.to_ne_bytes());
            put(&mut b, o + 16, &s.cwnd.to_ne_bytes());
            put(&mut b, o + 20, &s.ssthresh.to_ne_bytes());
            put(&mut b, o + 24, &s.srtt_us.to_ne_bytes());
            put(&mut b, o + 28, &s.mss.to_ne_bytes());
            put(&mut b, o + 32, &s.losses.to_ne_bytes());
            put(&mut b, o + 36, &s.flags.to_ne_bytes());
            put(&mut b, o + 40, &s.saddr);
            put(&mut b, o + 44, &u32::from(s.sport).to_ne_bytes());
        }
        b
    }
}

/// Encodes BMC weights (2^16 = 1) as a `struct pw_weights`.
pub fn encode_weights(w: &[u32; SLOTS]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// Decodes a `struct pw_weights`.
pub fn decode_weights(b: &[u8]) -> Option<[u32; SLOTS]> {
    if b.len() != WEIGHTS_SIZE {
        return None;
    }
    let mut w = [0u32; SLOTS];
    for (i, x) in w.iter_mut().enumerate() {
        *x = u32_at(b, 4 * i);
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_decodes_from_its_offsets() {
        let mut b = vec![0u8; CONN_SIZE];
        b[4..8].copy_from_slice(&3u32.to_ne_bytes());
        b[8..12].copy_from_slice(&2u32.to_ne_bytes());
        b[20..24].copy_from_slice(&0xfeed_u32.to_ne_bytes());
        b[32..40].copy_from_slice(&77u64.to_ne_bytes());
        let o = 40 + SLOT_SIZE;
        b[o + 16..o + 20].copy_from_slice(&12u32.to_ne_bytes());
        b[o + 36..o + 40].copy_from_slice(&(SLOT_USED | SLOT_CAN_SEND).to_ne_bytes());
        b[o + 40..o + 44].copy_from_slice(&[198, 18, 0, 2]);
        b[o + 44..o + 48].copy_from_slice(&40000u32.to_ne_bytes());
        let c = Conn::decode(0xffff_8880_1234_5000, &b).unwrap();
        assert_eq!(c.key, 0xffff_8880_1234_5000);
        assert_eq!(c.slots[1].saddr, [198, 18, 0, 2]);
        assert_eq!(c.slots[1].sport, 40000);
        assert_eq!((c.algo, c.subflows, c.id, c.token), (3, 2, 77, 0xfeed));
        assert_eq!(c.slots[1].cwnd, 12);
        assert!(c.slots[1].used() && c.slots[1].can_send());
        assert!(!c.slots[0].used());
        assert!(Conn::decode(0, &b[1..]).is_none());
        // Encoding gives the same bytes back (the lock word is zero here).
        assert_eq!(c.encode(), b);
    }

    #[test]
    fn an_entry_round_trips_through_its_bytes() {
        let mut c = Conn {
            key: 9,
            algo: 1,
            subflows: 3,
            used: 0b1000_0011,
            forced: 1,
            alpha: 0x1234_5678_9abc,
            token: 0xdead_beef,
            id: 1 << 40,
            ..Conn::default()
        };
        for (i, s) in c.slots.iter_mut().enumerate() {
            let i = i as u32 + 1;
            *s = Slot {
                loss_interval: u64::from(i) << 33,
                acked_bytes: u64::from(i) * 1_000_003,
                cwnd: i,
                ssthresh: 2 * i,
                srtt_us: 3 * i,
                mss: 1400 + i,
                losses: 5 * i,
                flags: i & 7,
                saddr: [198, 18, i as u8, 2],
                sport: 40_000 + i as u16,
            };
        }
        let b = c.encode();
        assert_eq!(b.len(), CONN_SIZE);
        assert_eq!(Conn::decode(9, &b), Some(c));
    }

    #[test]
    fn weights_round_trip() {
        let w = [65536, 0, 3, 4, 5, 6, 7, 8];
        assert_eq!(decode_weights(&encode_weights(&w)), Some(w));
    }
}
