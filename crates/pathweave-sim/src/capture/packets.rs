//! The bytes of the packets a capture holds: an IPv4 header (RFC 791) and a TCP (RFC 9293),
//! UDP (RFC 768) or QUIC short header (RFC 9000 §17.3.1) built from what the simulator knows
//! of a packet, with MPTCP's options (RFC 8684) on the subflows of a multipath connection.
//! The payload is never written: a packet is its headers, and its length on the wire is the
//! simulated size.

/// IPv4 protocol numbers.
pub const PROTO_TCP: u8 = 6;
/// IPv4 protocol numbers.
pub const PROTO_UDP: u8 = 17;

/// TCP flags (RFC 9293 §3.1).
pub const SYN: u8 = 0x02;
/// TCP flags.
pub const ACK: u8 = 0x10;
/// TCP flags.
pub const PSH: u8 = 0x08;

/// TCP option kinds (IANA "TCP Option Kind Numbers").
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WSCALE: u8 = 3;
const OPT_SACK_PERMITTED: u8 = 4;
const OPT_SACK: u8 = 5;
/// Multipath TCP (RFC 8684 §3).
const OPT_MPTCP: u8 = 30;

/// The window scale every synthesized SYN announces (RFC 7323 §2.2).
pub const WINDOW_SHIFT: u8 = 7;

/// The Internet checksum (RFC 1071) of `data` added to `sum`, folded.
pub fn checksum(sum: u32, data: &[u8]) -> u16 {
    let mut s = sum as u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        s += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        s += (*last as u64) << 8;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The sum of the IPv4 pseudo-header (RFC 9293 §3.1, RFC 768) for `proto` and a transport
/// segment of `len` bytes, unfolded.
fn pseudo_sum(src: [u8; 4], dst: [u8; 4], proto: u8, len: u32) -> u32 {
    let w = |a: [u8; 4]| {
        u16::from_be_bytes([a[0], a[1]]) as u32 + u16::from_be_bytes([a[2], a[3]]) as u32
    };
    w(src) + w(dst) + proto as u32 + (len >> 16) + (len & 0xffff)
}

/// Write an IPv4 header of a packet of `total` bytes: no options, don't fragment, TTL 64,
/// identification 0 (RFC 6864 §4.1 allows any value on atomic datagrams).
pub fn ipv4(out: &mut Vec<u8>, total: u32, proto: u8, src: [u8; 4], dst: [u8; 4]) {
    let at = out.len();
    let total = total.min(u16::MAX as u32) as u16;
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);
    let c = checksum(0, &out[at..at + 20]);
    out[at + 10..at + 12].copy_from_slice(&c.to_be_bytes());
}

/// Addresses and ports of one direction of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

/// One TCP segment's header fields.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Flags.
    pub flags: u8,
    /// Window field (already scaled down).
    pub window: u16,
    /// Options, already padded to a multiple of 4 bytes and at most 40.
    pub options: &'a [u8],
}

/// Write an IPv4 packet carrying `seg` and a payload that makes it `size` bytes in all (or
/// none, when the headers alone are larger); returns the packet's length on the wire. The TCP
/// checksum covers the pseudo-header, the header and the payload taken as zeros.
pub fn tcp_packet(out: &mut Vec<u8>, ep: &Endpoints, seg: &Segment<'_>, size: u32) -> u32 {
    debug_assert!(seg.options.len() % 4 == 0 && seg.options.len() <= 40);
    let header = 20 + seg.options.len() as u32;
    let total = size.max(20 + header);
    let tcp_len = total - 20;
    ipv4(out, total, PROTO_TCP, ep.src, ep.dst);
    let at = out.len();
    out.extend_from_slice(&ep.sport.to_be_bytes());
    out.extend_from_slice(&ep.dport.to_be_bytes());
    out.extend_from_slice(&seg.seq.to_be_bytes());
    out.extend_from_slice(&seg.ack.to_be_bytes());
    out.push(((header / 4) as u8) << 4);
    out.push(seg.flags);
    out.extend_from_slice(&seg.window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    out.extend_from_slice(seg.options);
    let c = checksum(pseudo_sum(ep.src, ep.dst, PROTO_TCP, tcp_len), &out[at..]);
    out[at + 16..at + 18].copy_from_slice(&c.to_be_bytes());
    total
}

/// Write an IPv4 packet carrying a UDP datagram of `size` bytes in all, whose payload starts
/// with `head` (the rest is taken as zeros); returns its length on the wire.
pub fn udp_packet(out: &mut Vec<u8>, ep: &Endpoints, head: &[u8], size: u32) -> u32 {
    let total = size.max(28 + head.len() as u32);
    let udp_len = total - 20;
    ipv4(out, total, PROTO_UDP, ep.src, ep.dst);
    let at = out.len();
    out.extend_from_slice(&ep.sport.to_be_bytes());
    out.extend_from_slice(&ep.dport.to_be_bytes());
    out.extend_from_slice(&(udp_len.min(u16::MAX as u32) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(head);
    let mut c = checksum(pseudo_sum(ep.src, ep.dst, PROTO_UDP, udp_len), &out[at..]);
    if c == 0 {
        c = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    out[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
    total
}

/// A QUIC 1-RTT packet's short header (RFC 9000 §17.3.1): the header form bit clear, the
/// fixed bit set, a 4-byte packet number (length field 3), the destination connection ID.
pub fn quic_short_header(out: &mut Vec<u8>, dcid: &[u8; 8], packet_number: u32) {
    out.push(0x40 | 0x03);
    out.extend_from_slice(dcid);
    out.extend_from_slice(&packet_number.to_be_bytes());
}

/// Options under construction, at most 40 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    buf: [u8; 40],
    len: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            buf: [0; 40],
            len: 0,
        }
    }
}

impl Options {
    /// The options written so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn push(&mut self, b: &[u8]) {
        let n = b.len().min(40 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
    }

    /// NOPs up to a multiple of 4 bytes.
    pub fn align(&mut self) {
        while self.len % 4 != 0 {
            self.push(&[OPT_NOP]);
        }
    }

    /// NOPs (in whole 4-byte words) until the options take `target` bytes, if they take
    /// fewer: so that a header is as long as the scenario counts it.
    pub fn pad_to(&mut self, target: usize) {
        let target = target.min(40) / 4 * 4;
        while self.len < target {
            self.push(&[OPT_NOP]);
        }
    }

    /// Maximum segment size (RFC 9293 §3.2).
    pub fn mss(&mut self, mss: u16) {
        self.push(&[OPT_MSS, 4]);
        self.push(&mss.to_be_bytes());
    }

    /// NOP and window scale (RFC 7323 §2.2).
    pub fn window_scale(&mut self, shift: u8) {
        self.push(&[OPT_NOP, OPT_WSCALE, 3, shift]);
    }

    /// SACK permitted (RFC 2018 §2), with two NOPs.
    pub fn sack_permitted(&mut self) {
        self.push(&[OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2]);
    }

    /// Two NOPs and the SACK blocks (RFC 2018 §3), as many as fit.
    pub fn sack(&mut self, blocks: &[(u32, u32)]) {
        let room = (40usize.saturating_sub(self.len + 4)) / 8;
        let n = blocks.len().min(room);
        if n == 0 {
            return;
        }
        self.push(&[OPT_NOP, OPT_NOP, OPT_SACK, 2 + 8 * n as u8]);
        for &(l, r) in &blocks[..n] {
            self.push(&l.to_be_bytes());
            self.push(&r.to_be_bytes());
        }
    }

    /// MP_CAPABLE, version 1, HMAC-SHA256 and no checksums (RFC 8684 §3.1, Figure 4): on a
    /// SYN no key, on a SYN/ACK the listener's key, on the third ACK both keys.
    pub fn mp_capable(&mut self, keys: &[u64]) {
        self.push(&[OPT_MPTCP, 4 + 8 * keys.len() as u8, 0x01, 0x01]);
        for k in keys {
            self.push(&k.to_be_bytes());
        }
    }

    /// MP_JOIN on a SYN (RFC 8684 §3.2, Figure 5): address ID, the receiver's token and the
    /// sender's random number.
    pub fn mp_join_syn(&mut self, address_id: u8, token: u32, nonce: u32) {
        self.push(&[OPT_MPTCP, 12, 0x10, address_id]);
        self.push(&token.to_be_bytes());
        self.push(&nonce.to_be_bytes());
    }

    /// MP_JOIN on a SYN/ACK (Figure 6): address ID, the truncated HMAC and the sender's
    /// random number.
    pub fn mp_join_syn_ack(&mut self, address_id: u8, hmac64: [u8; 8], nonce: u32) {
        self.push(&[OPT_MPTCP, 16, 0x10, address_id]);
        self.push(&hmac64);
        self.push(&nonce.to_be_bytes());
    }

    /// MP_JOIN on the third ACK (Figure 7): the sender's HMAC, 160 bits.
    pub fn mp_join_ack(&mut self, hmac160: &[u8]) {
        self.push(&[OPT_MPTCP, 24, 0x10, 0]);
        self.push(&hmac160[..20]);
    }

    /// DSS (RFC 8684 §3.3, Figure 9) with a 4-byte data ACK and, given a mapping, an 8-byte
    /// data sequence number, the subflow sequence number (relative to the subflow's initial
    /// sequence number) and the data-level length; no checksum. Aligned with NOPs.
    pub fn dss(&mut self, data_ack: u32, mapping: Option<(u64, u32, u16)>) {
        match mapping {
            None => {
                // Flags: A (data ACK present).
                self.push(&[OPT_MPTCP, 8, 0x20, 0x01]);
                self.push(&data_ack.to_be_bytes());
            }
            Some((dsn, ssn, len)) => {
                // Flags: m (8-byte DSN), M (mapping present), A (data ACK present).
                self.push(&[OPT_MPTCP, 22, 0x20, 0x08 | 0x04 | 0x01]);
                self.push(&data_ack.to_be_bytes());
                self.push(&dsn.to_be_bytes());
                self.push(&ssn.to_be_bytes());
                self.push(&len.to_be_bytes());
                self.align();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 §3's worked example: the words 0001 f203 f4f5 f6f7 sum to ddf2, whose
    /// complement is the checksum.
    #[test]
    fn checksum_matches_rfc_1071() {
        assert_eq!(
            checksum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
    }

    /// A header with its checksum in place sums to all ones (RFC 791 §3.1).
    #[test]
    fn an_ipv4_header_verifies() {
        let mut b = Vec::new();
        ipv4(&mut b, 1040, PROTO_TCP, [198, 18, 0, 1], [198, 19, 0, 1]);
        assert_eq!(b.len(), 20);
        assert_eq!(checksum(0, &b), 0);
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 1040);
        assert_eq!(b[9], 6);
    }

    /// The TCP checksum verifies over the pseudo-header, the header and a zero payload of
    /// the length the IP header gives.
    #[test]
    fn a_tcp_checksum_verifies_with_a_zero_payload() {
        let ep = Endpoints {
            src: [198, 18, 0, 1],
            dst: [198, 19, 0, 1],
            sport: 40000,
            dport: 5201,
        };
        let mut o = Options::default();
        o.dss(7, Some((1 << 40, 1, 1000)));
        let seg = Segment {
            seq: 12345,
            ack: 1,
            flags: ACK,
            window: 512,
            options: o.bytes(),
        };
        let mut b = Vec::new();
        let total = tcp_packet(&mut b, &ep, &seg, 1064);
        assert_eq!(total, 1064);
        assert_eq!(b.len(), 20 + 20 + 24);
        let mut whole = b[20..].to_vec();
        whole.resize(1044, 0);
        assert_eq!(checksum(pseudo_sum(ep.src, ep.dst, 6, 1044), &whole), 0);
        // Data offset: 44 bytes of TCP header.
        assert_eq!(b[32] >> 4, 11);
    }

    /// The DSS option of a data segment is 22 bytes and two NOPs (RFC 8684 Figure 9).
    #[test]
    fn the_dss_option_has_rfc_8684_layout() {
        let mut o = Options::default();
        o.dss(
            0x0102_0304,
            Some((0x1122_3344_5566_7788, 0x99aa_bbcc, 0x0ddd)),
        );
        let b = o.bytes();
        assert_eq!(b.len(), 24);
        assert_eq!(&b[..4], &[30, 22, 0x20, 0x0d]);
        assert_eq!(&b[4..8], &[1, 2, 3, 4]);
        assert_eq!(&b[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&b[16..20], &[0x99, 0xaa, 0xbb, 0xcc]);
        assert_eq!(&b[20..22], &[0x0d, 0xdd]);
        assert_eq!(&b[22..], &[1, 1]);
        let mut a = Options::default();
        a.dss(5, None);
        assert_eq!(a.bytes(), &[30, 8, 0x20, 0x01, 0, 0, 0, 5]);
    }
}
