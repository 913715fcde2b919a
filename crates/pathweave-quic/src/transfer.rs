//! The bulk-transfer protocol both ends speak over one bidirectional stream, and its check.
//!
//! The sender writes a 13-byte header — `PWQ1`, a mode byte (0: a sized transfer, 1: until
//! the sender stops) and the size in bytes (big-endian `u64`, 0 when open-ended) — then the
//! data, then ends the stream. The receiver hashes what it reads (SHA-256) and, at the end of
//! the stream, answers with a 44-byte receipt: `PWR1`, the byte count (`u64`) and the hash.
//! The sender compares both with its own. The data is a seeded pattern, different in every
//! 64 KiB block, so a lost, repeated or reordered block changes the hash.

use sha2::{Digest, Sha256};

/// Size of one application write.
pub const CHUNK: usize = 64 * 1024;
/// Header length.
pub const HEADER_LEN: usize = 13;
/// Receipt length.
pub const RECEIPT_LEN: usize = 44;

const HEADER_MAGIC: &[u8; 4] = b"PWQ1";
const RECEIPT_MAGIC: &[u8; 4] = b"PWR1";

/// What the sender announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announced {
    /// Exactly this many bytes follow.
    Sized(u64),
    /// Bytes follow until the stream ends.
    Open,
}

/// The header for `a`.
pub fn header(a: Announced) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(HEADER_MAGIC);
    let (mode, n) = match a {
        Announced::Sized(n) => (0, n),
        Announced::Open => (1, 0),
    };
    h[4] = mode;
    h[5..].copy_from_slice(&n.to_be_bytes());
    h
}

/// Reads a header, or says what is wrong with it.
pub fn parse_header(h: &[u8; HEADER_LEN]) -> Result<Announced, String> {
    if &h[..4] != HEADER_MAGIC {
        return Err("not a pathweave transfer (bad header)".to_string());
    }
    let n = u64::from_be_bytes(h[5..].try_into().unwrap_or([0; 8]));
    match h[4] {
        0 => Ok(Announced::Sized(n)),
        1 => Ok(Announced::Open),
        m => Err(format!("unknown transfer mode {m}")),
    }
}

/// The receipt for `bytes` received with hash `hash`.
pub fn receipt(bytes: u64, hash: &[u8; 32]) -> [u8; RECEIPT_LEN] {
    let mut r = [0u8; RECEIPT_LEN];
    r[..4].copy_from_slice(RECEIPT_MAGIC);
    r[4..12].copy_from_slice(&bytes.to_be_bytes());
    r[12..].copy_from_slice(hash);
    r
}

/// Reads a receipt: the byte count and the hash.
pub fn parse_receipt(r: &[u8; RECEIPT_LEN]) -> Result<(u64, [u8; 32]), String> {
    if &r[..4] != RECEIPT_MAGIC {
        return Err("the receiver's receipt is malformed".to_string());
    }
    let n = u64::from_be_bytes(r[4..12].try_into().unwrap_or([0; 8]));
    let mut h = [0u8; 32];
    h.copy_from_slice(&r[12..]);
    Ok((n, h))
}

/// The sender's data: block `i` is a seeded 64 KiB pattern with `i` in its first 8 bytes.
pub struct Pattern {
    base: Vec<u8>,
    block: u64,
}

impl Pattern {
    /// The pattern of `seed`.
    pub fn new(seed: u64) -> Pattern {
        // SplitMix64 (Steele, Lea, Flood 2014) fills the base block.
        let mut x = seed;
        let mut base = Vec::with_capacity(CHUNK);
        while base.len() < CHUNK {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            base.extend_from_slice(&z.to_le_bytes());
        }
        Pattern { base, block: 0 }
    }

    /// The next block (64 KiB), written into the pattern's own buffer.
    pub fn next_block(&mut self) -> &[u8] {
        let i = self.block;
        self.base[..8].copy_from_slice(&i.to_le_bytes());
        self.block += 1;
        &self.base
    }
}

/// A running SHA-256 with a byte count.
#[derive(Clone, Default)]
pub struct Digester {
    hash: Sha256,
    bytes: u64,
}

impl Digester {
    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.hash.update(data);
        self.bytes += data.len() as u64;
    }
    /// Bytes so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The count and the hash.
    pub fn finish(self) -> (u64, [u8; 32]) {
        (self.bytes, self.hash.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_receipt_round_trip_and_refuse_other_bytes() {
        for a in [
            Announced::Sized(0),
            Announced::Sized(20_000_000),
            Announced::Open,
        ] {
            assert_eq!(parse_header(&header(a)).unwrap(), a);
        }
        let mut h = header(Announced::Open);
        h[0] = b'X';
        assert!(parse_header(&h).is_err());
        let mut h = header(Announced::Open);
        h[4] = 7;
        assert!(parse_header(&h).is_err());
        let r = receipt(42, &[7; 32]);
        assert_eq!(parse_receipt(&r).unwrap(), (42, [7; 32]));
    }

    #[test]
    fn every_block_differs_and_the_hash_sees_the_order() {
        let mut p = Pattern::new(1);
        let a = p.next_block().to_vec();
        let b = p.next_block().to_vec();
        assert_ne!(a, b);
        assert_eq!(a.len(), CHUNK);
        let mut x = Digester::default();
        x.update(&a);
        x.update(&b);
        let mut y = Digester::default();
        y.update(&b);
        y.update(&a);
        assert_ne!(x.finish().1, y.finish().1);
    }
}
