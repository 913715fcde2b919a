//! A minimal pcapng writer (draft-ietf-opsawg-pcapng, "PCAP Next Generation Dump File
//! Format"): one Section Header Block, one Interface Description Block and Enhanced Packet
//! Blocks, little-endian, with nanosecond timestamps (`if_tsresol` = 9).
//!
//! The writer never writes past its byte limit: a block that would cross it is not written,
//! and the writer stops there (every block is whole, so the file stays readable). The
//! emulator can write the packets it reads from its TUN devices through the same type.

use std::io::{self, Write};

/// LINKTYPE_RAW: each packet starts with its IPv4 or IPv6 header.
pub const LINKTYPE_RAW: u16 = 101;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;

/// `epb_flags` direction bits: outbound (the packet leaves the link's transmitter).
pub const FLAG_OUTBOUND: u32 = 0b10;

/// What a [`PcapngWriter::packet`] call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The block was written.
    Yes,
    /// The block would have crossed the byte limit: nothing was written, and nothing will be.
    LimitReached,
    /// The writer had already stopped at its limit.
    Stopped,
}

/// Writes one interface's packets as a pcapng section.
pub struct PcapngWriter<W: Write> {
    out: W,
    written: u64,
    max_bytes: u64,
    stopped: bool,
    packets: u64,
    block: Vec<u8>,
}

fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

fn option(block: &mut Vec<u8>, code: u16, value: &[u8]) {
    block.extend_from_slice(&code.to_le_bytes());
    block.extend_from_slice(&(value.len() as u16).to_le_bytes());
    block.extend_from_slice(value);
    block.extend(std::iter::repeat_n(0u8, pad4(value.len())));
}

/// Close a block begun with [`begin`]: end of options (if `options`), the trailing length,
/// and the length patched into the header.
fn finish(block: &mut Vec<u8>, options: bool) {
    if options {
        option(block, OPT_ENDOFOPT, &[]);
    }
    let len = (block.len() + 4) as u32;
    block.extend_from_slice(&len.to_le_bytes());
    block[4..8].copy_from_slice(&len.to_le_bytes());
}

fn begin(block: &mut Vec<u8>, kind: u32) {
    block.clear();
    block.extend_from_slice(&kind.to_le_bytes());
    block.extend_from_slice(&0u32.to_le_bytes());
}

impl<W: Write> PcapngWriter<W> {
    /// The smallest byte limit: room for the section and interface headers and a few
    /// packets.
    pub const MIN_BYTES: u64 = 1024;

    /// Start a file with its section header (naming `application`) and one interface of
    /// `linktype` called `name` (`description` in Wireshark's interface list), capturing at
    /// most `snaplen` bytes of each packet; at most `max_bytes` bytes in all (at least
    /// [`Self::MIN_BYTES`]).
    pub fn new(
        out: W,
        application: &str,
        linktype: u16,
        snaplen: u32,
        name: &str,
        description: &str,
        max_bytes: u64,
    ) -> io::Result<Self> {
        let mut w = PcapngWriter {
            out,
            written: 0,
            max_bytes: max_bytes.max(Self::MIN_BYTES),
            stopped: false,
            packets: 0,
            block: Vec::with_capacity(256),
        };
        let mut b = std::mem::take(&mut w.block);
        begin(&mut b, SHB);
        b.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes()); // major version
        b.extend_from_slice(&0u16.to_le_bytes()); // minor version
        b.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not given
        option(&mut b, SHB_USERAPPL, application.as_bytes());
        finish(&mut b, true);
        w.out.write_all(&b)?;
        w.written += b.len() as u64;

        begin(&mut b, IDB);
        b.extend_from_slice(&linktype.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&snaplen.to_le_bytes());
        option(&mut b, IF_NAME, name.as_bytes());
        option(&mut b, IF_DESCRIPTION, description.as_bytes());
        // Timestamps in units of 10^-9 s.
        option(&mut b, IF_TSRESOL, &[9]);
        finish(&mut b, true);
        w.out.write_all(&b)?;
        w.written += b.len() as u64;
        w.block = b;
        Ok(w)
    }

    /// Write one packet: `data` as captured (already cut to the snapshot length), `orig_len`
    /// its length on the wire, `ts_ns` its time in nanoseconds, `flags` the `epb_flags`
    /// word and `comment` an optional `opt_comment`.
    pub fn packet(
        &mut self,
        ts_ns: u64,
        data: &[u8],
        orig_len: u32,
        flags: u32,
        comment: Option<&str>,
    ) -> io::Result<Written> {
        if self.stopped {
            return Ok(Written::Stopped);
        }
        let mut b = std::mem::take(&mut self.block);
        begin(&mut b, EPB);
        b.extend_from_slice(&0u32.to_le_bytes()); // interface 0
        b.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        b.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&orig_len.to_le_bytes());
        b.extend_from_slice(data);
        b.extend(std::iter::repeat_n(0u8, pad4(data.len())));
        option(&mut b, EPB_FLAGS, &flags.to_le_bytes());
        if let Some(c) = comment {
            option(&mut b, OPT_COMMENT, c.as_bytes());
        }
        finish(&mut b, true);
        let result = if self.written + b.len() as u64 > self.max_bytes {
            self.stopped = true;
            Ok(Written::LimitReached)
        } else {
            self.out.write_all(&b).map(|()| {
                self.written += b.len() as u64;
                self.packets += 1;
                Written::Yes
            })
        };
        self.block = b;
        result
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.written
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Whether the writer stopped at its byte limit.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Flush and hand back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// The blocks follow the layout of the pcapng specification: each starts with its type
    /// and length and ends with the length again, lengths are multiples of 4, and the
    /// packet block holds the timestamp split in two 32-bit halves, the captured and
    /// original lengths and the data.
    #[test]
    fn blocks_have_the_specified_layout() {
        let mut w =
            PcapngWriter::new(Vec::new(), "t", LINKTYPE_RAW, 96, "eth", "d", 1 << 20).unwrap();
        let ts = 5_000_000_001u64;
        w.packet(ts, &[1, 2, 3, 4, 5], 1500, FLAG_OUTBOUND, Some("x"))
            .unwrap();
        let b = w.finish().unwrap();
        let mut at = 0;
        let mut kinds = Vec::new();
        while at < b.len() {
            let kind = u32_at(&b, at);
            let len = u32_at(&b, at + 4) as usize;
            assert_eq!(len % 4, 0);
            assert_eq!(u32_at(&b, at + len - 4) as usize, len);
            kinds.push(kind);
            if kind == EPB {
                assert_eq!(u32_at(&b, at + 12), 1); // 5_000_000_001 >> 32
                assert_eq!(u32_at(&b, at + 16), (ts & 0xffff_ffff) as u32);
                assert_eq!(u32_at(&b, at + 20), 5);
                assert_eq!(u32_at(&b, at + 24), 1500);
                assert_eq!(&b[at + 28..at + 33], &[1, 2, 3, 4, 5]);
            }
            if kind == IDB {
                assert_eq!(u16::from_le_bytes([b[at + 8], b[at + 9]]), 101);
                assert_eq!(u32_at(&b, at + 12), 96);
            }
            at += len;
        }
        assert_eq!(kinds, vec![SHB, IDB, EPB]);
        assert_eq!(u32_at(&b, 8), BYTE_ORDER_MAGIC);
    }

    /// A block that would cross the limit is not written, and nothing after it.
    #[test]
    fn the_limit_stops_the_writer_between_blocks() {
        let mut w = PcapngWriter::new(Vec::new(), "t", LINKTYPE_RAW, 96, "e", "", 1024).unwrap();
        let mut results = Vec::new();
        for i in 0..100 {
            results.push(w.packet(i, &[0; 60], 60, 0, None).unwrap());
        }
        let n = w.packets() as usize;
        assert!(n > 0 && n < 100);
        assert!(results[..n].iter().all(|&r| r == Written::Yes));
        assert_eq!(results[n], Written::LimitReached);
        assert!(results[n + 1..].iter().all(|&r| r == Written::Stopped));
        let bytes = w.bytes();
        let b = w.finish().unwrap();
        assert_eq!(b.len() as u64, bytes);
        assert!(bytes <= 1024);
    }
}
