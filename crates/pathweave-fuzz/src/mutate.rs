//! Byte mutation of the repository's scenario files: each input starts from one file and
//! receives a few edits (bit flips, byte insertions and deletions, interesting numbers written
//! over digits, duplicated or spliced lines, truncation).

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

const INTERESTING: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1e309",
    b"9223372036854775807",
    b"18446744073709551616",
    b"nan",
    b"1e-320",
    b"{i}",
    b"{n}",
    b"(",
    b")",
    b"**",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b"=",
    b"\n",
    b"~",
    b"100000",
    b"0.0000001",
    b"ms",
    b"Tbps",
    b"pkt",
];

fn below(r: &mut ChaCha8Rng, n: usize) -> usize {
    (r.next_u64() % n.max(1) as u64) as usize
}

/// One mutated scenario file.
pub(crate) fn mutate(r: &mut ChaCha8Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = corpus[below(r, corpus.len())].clone();
    for _ in 0..1 + below(r, 8) {
        let at = below(r, data.len() + 1);
        match below(r, 8) {
            0 if !data.is_empty() => {
                let i = at.min(data.len() - 1);
                data[i] ^= 1 << below(r, 8);
            }
            1 => {
                let b = (r.next_u64() & 0xff) as u8;
                data.insert(at, b);
            }
            2 if !data.is_empty() => {
                let end = (at + 1 + below(r, 16)).min(data.len());
                data.drain(at.min(end)..end);
            }
            3 => {
                let word = INTERESTING[below(r, INTERESTING.len())];
                data.splice(at..at, word.iter().copied());
            }
            4 => {
                // Overwrite the digits at or after `at` with an interesting number.
                if let Some(start) = data[at..].iter().position(u8::is_ascii_digit) {
                    let s = at + start;
                    let len = data[s..].iter().take_while(|b| b.is_ascii_digit()).count();
                    let word = INTERESTING[below(r, 7)];
                    data.splice(s..s + len, word.iter().copied());
                }
            }
            5 => {
                // A line of another file, inserted at a line start.
                let other = &corpus[below(r, corpus.len())];
                let lines: Vec<&[u8]> = other.split(|&b| b == b'\n').collect();
                let line = lines[below(r, lines.len())];
                let start = data[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let mut piece = line.to_vec();
                piece.push(b'\n');
                data.splice(start..start, piece);
            }
            6 if !data.is_empty() => {
                // Repeat a region many times.
                let end = (at + 1 + below(r, 64)).min(data.len());
                let region = data[at.min(end)..end].to_vec();
                for _ in 0..below(r, 64) {
                    data.splice(at..at, region.iter().copied());
                }
            }
            _ => data.truncate(at),
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::rng;

    #[test]
    fn the_same_seed_and_index_give_the_same_input() {
        let corpus = vec![b"name = \"a\"\nduration = \"1s\"\n".to_vec()];
        let a = mutate(&mut rng(7, 3), &corpus);
        let b = mutate(&mut rng(7, 3), &corpus);
        assert_eq!(a, b);
        let c = mutate(&mut rng(7, 4), &corpus);
        let d = mutate(&mut rng(8, 3), &corpus);
        assert!(a != c || a != d, "different indices or seeds should differ");
    }
}
