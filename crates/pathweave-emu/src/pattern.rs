//! The bytes a transfer carries: a keyed pseudo-random stream that the receiver regenerates
//! and compares byte for byte, plus an FNV-1a hash of what each end sent or received.

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): the stream's 8-byte word number `n` under `key`.
fn word(key: u64, n: u64) -> u64 {
    let mut z = key ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fill `buf` with the stream's bytes from `offset` on.
pub fn fill(key: u64, offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        let at = offset + i as u64;
        *b = word(key, at / 8).to_le_bytes()[(at % 8) as usize];
    }
}

/// FNV-1a, 64-bit (Fowler, Noll and Vo): offset basis and prime.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Running FNV-1a hash of a byte stream.
#[derive(Clone, Copy, Debug)]
pub struct Hash(u64);

impl Default for Hash {
    fn default() -> Self {
        Hash(FNV_OFFSET)
    }
}

impl Hash {
    /// Add `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(FNV_PRIME);
        }
    }
    /// The hash so far.
    pub fn value(&self) -> u64 {
        self.0
    }
}

/// Checks received bytes against the stream.
#[derive(Clone, Debug, Default)]
pub struct Verifier {
    key: u64,
    offset: u64,
    /// Bytes that differed from the stream.
    pub mismatches: u64,
    /// Hash of everything received.
    pub hash: Hash,
    expected: Vec<u8>,
}

impl Verifier {
    /// A verifier of the stream under `key`.
    pub fn new(key: u64) -> Verifier {
        Verifier {
            key,
            ..Verifier::default()
        }
    }
    /// Check the next `bytes` of the stream.
    pub fn check(&mut self, bytes: &[u8]) {
        self.expected.resize(bytes.len(), 0);
        fill(self.key, self.offset, &mut self.expected);
        self.mismatches += bytes
            .iter()
            .zip(&self.expected)
            .filter(|(a, b)| a != b)
            .count() as u64;
        self.hash.update(bytes);
        self.offset += bytes.len() as u64;
    }
    /// Bytes checked.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_published_values() {
        // Test values published with the FNV reference code (Noll, "FNV hash", test suite):
        // FNV-1a 64 of "" and of "a".
        let mut h = Hash::default();
        assert_eq!(h.value(), 0xcbf29ce484222325);
        h.update(b"a");
        assert_eq!(h.value(), 0xaf63dc4c8601ec8c);
        let mut h = Hash::default();
        h.update(b"foobar");
        assert_eq!(h.value(), 0x85944171f73967e8);
    }

    #[test]
    fn stream_is_the_same_however_it_is_cut() {
        let mut whole = vec![0u8; 1000];
        fill(7, 0, &mut whole);
        let mut v = Verifier::new(7);
        for chunk in whole.chunks(37) {
            v.check(chunk);
        }
        assert_eq!(v.mismatches, 0);
        assert_eq!(v.offset(), 1000);
        let mut h = Hash::default();
        h.update(&whole);
        assert_eq!(v.hash.value(), h.value());
    }

    #[test]
    fn a_changed_byte_or_another_key_is_caught() {
        let mut data = vec![0u8; 64];
        fill(7, 0, &mut data);
        data[10] ^= 1;
        let mut v = Verifier::new(7);
        v.check(&data);
        assert_eq!(v.mismatches, 1);
        let mut other = vec![0u8; 4096];
        fill(8, 0, &mut other);
        let mut v = Verifier::new(7);
        v.check(&other);
        // Independent streams agree on a byte with probability 1/256.
        assert!(v.mismatches > 4000, "{}", v.mismatches);
    }
}
