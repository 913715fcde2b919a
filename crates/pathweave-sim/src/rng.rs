//! Deterministic random streams. One scenario seed derives an independent ChaCha8 stream for
//! each component, so adding a flow never perturbs the random choices of a link.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// A component's random stream.
#[derive(Clone, Debug)]
pub struct Stream(ChaCha8Rng);

/// What a stream is for, mixed into its seed.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    /// A link direction's loss and RED decisions.
    Link,
    /// A flow's traffic pattern.
    Flow,
    /// A generated traffic matrix (`[traffic]`): its pairs, start times and sizes.
    Traffic,
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The ChaCha8 seed of component `index`'s stream for `purpose` under scenario seed `seed`.
fn stream_seed(seed: u64, purpose: Purpose, index: usize) -> u64 {
    let tag = match purpose {
        Purpose::Link => 1u64,
        Purpose::Flow => 2u64,
        Purpose::Traffic => 3u64,
    };
    splitmix64(splitmix64(seed) ^ splitmix64((tag << 40) ^ index as u64))
}

impl Stream {
    /// The stream of component `index` for `purpose` under scenario seed `seed`.
    pub fn new(seed: u64, purpose: Purpose, index: usize) -> Self {
        Stream(ChaCha8Rng::seed_from_u64(stream_seed(seed, purpose, index)))
    }
    /// A uniform draw in the open interval (0, 1).
    pub fn uniform(&mut self) -> f64 {
        // 53 random bits, offset by half a step so 0 and 1 are never returned.
        ((self.0.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }
    /// An exponential draw with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * self.uniform().ln()
    }
    /// A uniform integer in `0..n` (`n ≥ 1`), without modulo bias: draws in the top partial
    /// block of 2⁶⁴ are rejected.
    pub fn below(&mut self, n: u64) -> u64 {
        let n = n.max(1);
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.0.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// A stream built on its first draw: the same draws as [`Stream::new`] with the same
/// arguments, for components that may never draw (a drop-tail link without loss), which then
/// hold 16 bytes instead of the generator's 300-odd.
#[derive(Clone, Debug)]
pub struct LazyStream {
    seed: u64,
    stream: Option<Box<Stream>>,
}

impl LazyStream {
    /// The stream [`Stream::new`] gives for these arguments, not yet built.
    pub fn new(seed: u64, purpose: Purpose, index: usize) -> Self {
        LazyStream {
            seed: stream_seed(seed, purpose, index),
            stream: None,
        }
    }
    /// The stream, built now if this is its first use.
    #[inline]
    pub fn get(&mut self) -> &mut Stream {
        let seed = self.seed;
        self.stream
            .get_or_insert_with(|| Box::new(Stream(ChaCha8Rng::seed_from_u64(seed))))
    }
    /// A uniform draw in the open interval (0, 1), as [`Stream::uniform`].
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        self.get().uniform()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Stream::new(1, Purpose::Link, 0);
        let mut b = Stream::new(1, Purpose::Link, 0);
        let mut c = Stream::new(1, Purpose::Link, 1);
        let mut d = Stream::new(2, Purpose::Link, 0);
        let xa: Vec<f64> = (0..4).map(|_| a.uniform()).collect();
        let xb: Vec<f64> = (0..4).map(|_| b.uniform()).collect();
        let xc: Vec<f64> = (0..4).map(|_| c.uniform()).collect();
        let xd: Vec<f64> = (0..4).map(|_| d.uniform()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
        assert_ne!(xa, xd);
        assert!(xa.iter().all(|&x| x > 0.0 && x < 1.0));
    }

    #[test]
    fn a_lazy_stream_draws_what_the_stream_draws() {
        for (seed, purpose, index) in [(1, Purpose::Link, 0), (9, Purpose::Link, 40_001)] {
            let mut eager = Stream::new(seed, purpose, index);
            let mut lazy = LazyStream::new(seed, purpose, index);
            assert!(lazy.stream.is_none());
            let a: Vec<f64> = (0..8).map(|_| eager.uniform()).collect();
            let b: Vec<f64> = (0..8).map(|_| lazy.uniform()).collect();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn uniform_mean_is_one_half() {
        let mut s = Stream::new(7, Purpose::Flow, 3);
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| s.uniform()).sum::<f64>() / n as f64;
        // Standard error 1/sqrt(12 n) ≈ 0.00065; 5 sigma.
        assert!((mean - 0.5).abs() < 0.0033, "{mean}");
    }
}
