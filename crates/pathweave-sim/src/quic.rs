//! A (multipath) QUIC connection as the quinn library line `iroh-quinn` 0.16 /
//! `iroh-quinn-proto` 0.15 runs it (draft-ietf-quic-multipath): one QUIC path per subflow of
//! the flow, each with its own packet number space, RTT estimator, loss detection and
//! probe timeout (RFC 9002), one [`crate::tcp::Cc`] controller for all of them.
//!
//! * [`recovery`] — RTT estimation (RFC 9002 §5), loss thresholds (§6.1), PTO (§6.2),
//!   persistent congestion (§7.6) and quinn's pacer (§7.7).
//! * [`sender`] — the sending side: packets, the stream, loss detection, the controller's
//!   events and quinn's pull scheduler.
//! * [`receiver`] — acknowledgements (RFC 9000 §13.2) and in-order delivery.
//! * This module — sizes on the wire, the frames a packet carries beyond its eight bytes
//!   ([`Wire`]), handshakes, and the connection that joins both sides.
//!
//! A QUIC packet is one UDP datagram. Its UDP payload, which is what QUIC's congestion window
//! counts (RFC 9002 §2, "bytes in flight"), is at most as large as the flow's TCP segment
//! less the IPv4 and UDP headers (`mss + header − 28`), so a full QUIC packet and a full TCP
//! segment have the same size on the wire. It holds a short header (1 byte of flags, quinn's
//! 8-byte connection ID and a 2-byte packet number), one STREAM frame (type, stream id,
//! 4-byte offset; a frame that fills the packet carries no length, RFC 9000 §19.8) and the
//! 16-byte AEAD tag: 33 bytes besides the stream data.

pub mod receiver;
pub mod recovery;
pub mod sender;

pub use receiver::QuicReceiver;
pub use sender::{QuicPath, QuicSender};

use crate::event::{ComponentId, Kind};
use crate::net::Net;
use crate::scenario::{Scenario, SubflowSpec};
use crate::tcp::{Application, Cc, SubflowPlan};
use crate::topology::handshake_rtt;
use pathweave_cc::{Duration, Instant};
use std::collections::VecDeque;

/// IPv4 (20 bytes) and UDP (8 bytes) headers.
pub const IP_UDP_HEADER: u32 = 28;
/// Short header (RFC 9000 §17.3.1): flags (1), quinn's 8-byte destination connection ID and
/// a 2-byte packet number. quinn encodes the packet number in as few bytes as twice the
/// distance to the largest acknowledged one needs (RFC 9000 §17.1): 1 byte below 128 packets
/// in flight, 2 bytes up to 32,767; 2 bytes is what the windows of the scenarios need.
pub const SHORT_HEADER: u32 = 1 + 8 + 2;
/// The AEAD tag (AES-GCM or ChaCha20-Poly1305, RFC 9001 §5.3).
pub const AEAD_TAG: u32 = 16;
/// A STREAM frame's header in a full packet (RFC 9000 §19.8): type (1), stream id (1 byte
/// below id 64), offset (a 4-byte variable-length integer from 16 KiB to 1 GiB; 1 or 2 bytes
/// below, 8 above), no length field (the frame ends the packet).
pub const STREAM_HEADER: u32 = 1 + 1 + 4;
/// UDP payload bytes of a data packet that are not stream data.
pub const PACKET_OVERHEAD: u32 = SHORT_HEADER + STREAM_HEADER + AEAD_TAG;
/// Bytes on the wire of a data packet that are not stream data.
pub const DATA_WIRE_OVERHEAD: u32 = IP_UDP_HEADER + PACKET_OVERHEAD;
/// Bytes on the wire of an ACK-only packet besides its PATH_ACK frames.
pub const ACK_PACKET_OVERHEAD: u32 = IP_UDP_HEADER + SHORT_HEADER + AEAD_TAG;
/// PATH_ACK's frame type 0x3e (draft-ietf-quic-multipath, quinn `FrameType::PathAck`) is a
/// 1-byte variable-length integer.
pub const PATH_ACK_TYPE_LEN: u32 = 1;
/// The ACK delay field's scale (RFC 9000 §18.2, ack_delay_exponent default 3).
pub const ACK_DELAY_EXPONENT: u32 = 3;
/// max_ack_delay's default (RFC 9000 §18.2).
pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// max_ack_delay must stay below 2^14 ms (RFC 9000 §18.2).
pub const MAX_ACK_DELAY_LIMIT: Duration = Duration::from_millis(1 << 14);
/// The UDP payload of a handshake datagram: Initial packets are padded to 1200 bytes (RFC
/// 9000 §14.1), and so are PATH_CHALLENGE and PATH_RESPONSE (§8.2.1).
pub const HANDSHAKE_DATAGRAM: u32 = 1200;
/// quinn acknowledges the peer's ACK-only packets in its next packet on their path once more
/// than this many arrived (`LAZY_ACK_THRESHOLD`, `maybe_ack_non_eliciting`).
pub const LAZY_ACK_THRESHOLD: u64 = 10;

/// QUIC's smallest allowed largest UDP payload (RFC 9000 §14); quinn raises a smaller MTU to it.
pub const MIN_UDP_PAYLOAD: u32 = 1200;

/// The largest UDP payload of a flow whose TCP segments are `mss + header` bytes on the
/// wire: QUIC's max_datagram_size (RFC 9002 §7), the controller's segment size. A full packet
/// is as large on the wire as a TCP segment, but never smaller than QUIC allows (RFC 9000 §14:
/// 1200 bytes of UDP payload; quinn will not go below): segments under 1228 bytes give
/// 1228-byte packets.
pub fn max_udp_payload(mss: u32, header: u32) -> u32 {
    (mss + header)
        .saturating_sub(IP_UDP_HEADER)
        .max(MIN_UDP_PAYLOAD)
}

/// Bytes of a variable-length integer (RFC 9000 §16).
pub fn varint_len(x: u64) -> u32 {
    match x {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// When each path of a QUIC flow may first send stream data. With `handshakes` (else every
/// path sends from its start): path 0 after the 1-RTT handshake (RFC 9000 §7, the client's
/// padded Initial out and the server's Initial and Handshake back, one round trip `R₀` of
/// 1200-byte datagrams; the client's 1-RTT data leaves with its Handshake Finished); every
/// other path once the handshake completed (`start + R₀`, or its own start if later) plus its
/// own path validation, a padded PATH_CHALLENGE and PATH_RESPONSE (RFC 9000 §8.2, one round
/// trip `R_k`): quinn sends stream data only on validated paths. Round trips are taken from
/// the links at time zero without queueing, as the handshake packets are not simulated.
pub fn handshake_joins(
    scenario: &Scenario,
    subflows: &[SubflowSpec],
    start: Instant,
    handshakes: bool,
) -> Vec<Instant> {
    let own = |sf: &SubflowSpec| sf.start.unwrap_or(start);
    if !handshakes {
        return subflows.iter().map(own).collect();
    }
    let size = HANDSHAKE_DATAGRAM + IP_UDP_HEADER;
    let Some(first) = subflows.first() else {
        return Vec::new();
    };
    let established = own(first) + handshake_rtt(scenario, first, size);
    subflows
        .iter()
        .enumerate()
        .map(|(k, sf)| {
            if k == 0 {
                established
            } else {
                own(sf).max(established) + handshake_rtt(scenario, sf, size)
            }
        })
        .collect()
}

/// The frames packets carry beyond the eight bytes a link slot holds of them, in flight
/// between the two sides of one connection: ACK-only packets' PATH_ACK frames, and the lazy
/// acknowledgement of those packets that some data packets carry. A route's packets arrive
/// in the order they left, so each route keeps a FIFO: a packet that arrives finds its
/// record at the front once the records of packets lost before it are dropped.
#[derive(Debug, Default)]
pub struct Wire {
    /// Per ACK route (by the path whose reverse route it is): ACK-only packets, each as
    /// `[id, words, frames, (path, largest, delay_ns, ranges, (lo, hi)…)…]`.
    acks: Vec<VecDeque<u64>>,
    /// Per data route (path): data packets that acknowledge the receiver's ACK-only
    /// packets: (packet number, the largest ACK-only packet number acknowledged).
    ack_of_acks: Vec<VecDeque<(u64, u64)>>,
}

/// Where an ACK-only packet's record starts on its route's tape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckRecord {
    route: usize,
    at: usize,
}

impl Wire {
    fn new(paths: usize) -> Self {
        Wire {
            acks: (0..paths).map(|_| VecDeque::new()).collect(),
            ack_of_acks: (0..paths).map(|_| VecDeque::new()).collect(),
        }
    }

    pub(crate) fn begin_ack(&mut self, route: usize, id: u64) -> AckRecord {
        let t = &mut self.acks[route];
        let at = t.len();
        t.extend([id, 0, 0]);
        AckRecord { route, at }
    }

    pub(crate) fn push_frame(
        &mut self,
        rec: AckRecord,
        path: u16,
        largest: u64,
        delay: Duration,
        ranges: &VecDeque<(u64, u64)>,
    ) {
        let t = &mut self.acks[rec.route];
        t.extend([path as u64, largest, delay.as_nanos(), ranges.len() as u64]);
        for &(lo, hi) in ranges {
            t.extend([lo, hi]);
        }
        t[rec.at + 2] += 1;
    }

    pub(crate) fn end_ack(&mut self, rec: AckRecord) {
        let t = &mut self.acks[rec.route];
        t[rec.at + 1] = (t.len() - rec.at) as u64;
    }

    /// Find the ACK-only packet whose number's low 32 bits are `low` on route `route`,
    /// dropping the records of packets lost before it. Returns the record's words, or
    /// `None` if there is none.
    pub(crate) fn find_ack(&mut self, route: usize, low: u32) -> Option<(u64, usize)> {
        let t = self.acks.get_mut(route)?;
        while let Some(&id) = t.front() {
            let words = t.get(1).map_or(t.len(), |&w| w as usize);
            if id as u32 == low {
                return Some((id, words));
            }
            t.drain(..words.min(t.len()));
        }
        None
    }

    /// The tape of ACK route `route` (a found record starts at its front).
    pub(crate) fn tape(&self, route: usize) -> &VecDeque<u64> {
        &self.acks[route]
    }

    /// Drop the front record (`words` long) of ACK route `route`.
    pub(crate) fn pop_ack(&mut self, route: usize, words: usize) {
        let t = &mut self.acks[route];
        t.drain(..words.min(t.len()));
    }

    pub(crate) fn push_ack_of_acks(&mut self, path: usize, pn: u64, acked: u64) {
        self.ack_of_acks[path].push_back((pn, acked));
    }

    /// What data packet `pn` of path `path` acknowledges of the ACK-only packets, if it
    /// carries such an acknowledgement.
    pub(crate) fn take_ack_of_acks(&mut self, path: usize, pn: u64) -> Option<u64> {
        let q = self.ack_of_acks.get_mut(path)?;
        while let Some(&(p, acked)) = q.front() {
            if p > pn {
                return None;
            }
            q.pop_front();
            if p == pn {
                return Some(acked);
            }
        }
        None
    }
}

/// Both sides of a QUIC connection and the frames between them. One allocation per flow;
/// the simulator's flow table holds a pointer to it.
pub struct QuicConn {
    /// The sending side.
    pub snd: QuicSender,
    /// The receiving side.
    pub rcv: QuicReceiver,
    wire: Wire,
}

impl QuicConn {
    /// A connection for flow `flow` (its sender and receiver are components `flow` of their
    /// kinds) whose paths follow `plans`.
    pub fn new(
        flow: u32,
        settings: sender::QuicSettings,
        app: Application,
        cc: Cc,
        plans: &[SubflowPlan],
        rng: crate::rng::Stream,
    ) -> Self {
        let acks: Vec<u32> = plans.iter().map(|p| p.ack_route).collect();
        QuicConn {
            snd: QuicSender::new(
                flow,
                ComponentId::new(Kind::Sender, flow as usize),
                settings,
                app,
                cc,
                plans,
                rng,
            ),
            rcv: QuicReceiver::new(
                flow,
                ComponentId::new(Kind::Receiver, flow as usize),
                settings.max_ack_delay,
                &acks,
            ),
            wire: Wire::new(plans.len()),
        }
    }

    /// Schedule the first wake-up.
    pub fn init(&mut self, net: &mut Net) {
        self.snd.init(net);
    }

    /// A data packet arrived at the receiver.
    #[inline]
    pub fn on_data(&mut self, path: u16, pn: u32, chunk: u32, payload: u32, net: &mut Net) {
        let ack_path = self.snd.ack_path();
        let a = receiver::Arrival {
            path,
            pn_low: pn,
            chunk_low: chunk,
            payload,
        };
        self.rcv.on_packet(a, ack_path, &mut self.wire, net);
    }

    /// An ACK-only packet arrived at the sender over the reverse route of path `route`.
    #[inline]
    pub fn on_ack(&mut self, route: u16, id: u32, net: &mut Net) {
        self.snd
            .on_ack_packet(route as usize, id, &mut self.wire, net);
    }

    /// The sender's timer fired.
    pub fn on_sender_timer(&mut self, net: &mut Net) {
        self.snd.on_timer(&mut self.wire, net);
    }

    /// The receiver's timer fired.
    pub fn on_receiver_timer(&mut self, net: &mut Net) {
        let ack_path = self.snd.ack_path();
        self.rcv.on_timer(ack_path, &mut self.wire, net);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the model uses: the UDP payload follows the TCP segment's wire size, but not
    /// below 1200 bytes.
    #[test]
    fn overheads_add_up() {
        assert_eq!(PACKET_OVERHEAD, 33);
        assert_eq!(DATA_WIRE_OVERHEAD, 61);
        // RFC 9000 §14's floor: a 1040-byte TCP segment gives a 1228-byte QUIC packet.
        assert_eq!(max_udp_payload(1000, 40), 1200);
        assert_eq!(max_udp_payload(1460, 40), 1472);
        assert_eq!(max_udp_payload(1460, 40) - PACKET_OVERHEAD, 1439);
        assert_eq!(ACK_PACKET_OVERHEAD, 55);
        assert_eq!(
            [0, 63, 64, 16_383, 16_384, 1 << 30].map(varint_len),
            [1, 1, 2, 2, 4, 8]
        );
    }
}
