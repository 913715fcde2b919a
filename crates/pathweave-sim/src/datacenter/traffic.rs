//! Traffic matrices over a fabric's hosts: which host sends to which. Every draw comes from
//! one seeded stream, so a scenario and its seed give the same matrix everywhere.

use crate::rng::Stream;
use std::collections::HashMap;

/// A traffic pattern (after Raiciu et al., "Improving datacenter performance and robustness
/// with multipath TCP", SIGCOMM 2011, §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Every host sends to exactly one other host and receives from exactly one: a random
    /// derangement, uniform over all derangements.
    Permutation,
    /// Every host sends to a destination drawn uniformly from the other hosts; a host may
    /// receive from several or none.
    Random,
    /// `sources` distinct hosts, drawn uniformly, each send to `fanout` distinct other hosts,
    /// drawn uniformly.
    OneToMany {
        /// How many hosts send.
        sources: u32,
        /// How many hosts each sends to.
        fanout: u32,
    },
    /// Every ordered pair of distinct hosts.
    AllToAll,
}

impl Pattern {
    /// How many (source, destination) pairs the pattern gives over `hosts` hosts.
    pub fn flows(&self, hosts: u32) -> u64 {
        let n = hosts as u64;
        match *self {
            Pattern::Permutation | Pattern::Random => n,
            Pattern::OneToMany { sources, fanout } => sources as u64 * fanout as u64,
            Pattern::AllToAll => n * n.saturating_sub(1),
        }
    }
}

/// `m` distinct values of `0..n` (`m ≤ n`), uniformly, in draw order: the first `m` steps of a
/// Fisher–Yates shuffle, with the swapped positions kept in a map so the cost is O(m).
fn sample(n: u32, m: u32, rng: &mut Stream) -> Vec<u32> {
    let mut moved: HashMap<u32, u32> = HashMap::new();
    let mut out = Vec::with_capacity(m as usize);
    for i in 0..m {
        let j = i + rng.below((n - i) as u64) as u32;
        let at_j = *moved.get(&j).unwrap_or(&j);
        let at_i = *moved.get(&i).unwrap_or(&i);
        moved.insert(j, at_i);
        out.push(at_j);
    }
    out
}

/// The (source, destination) pairs of `pattern` over `hosts ≥ 2` hosts, sources in increasing
/// order (and a source's destinations in increasing order).
pub fn pairs(pattern: Pattern, hosts: u32, rng: &mut Stream) -> Vec<(u32, u32)> {
    match pattern {
        Pattern::Permutation => {
            // Rejection: a uniform permutation is a derangement with probability → 1/e, so
            // about e shuffles are drawn, and the one kept is uniform over derangements.
            let mut p: Vec<u32> = (0..hosts).collect();
            loop {
                for i in (1..hosts as usize).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    p.swap(i, j);
                }
                if p.iter().enumerate().all(|(i, &d)| i as u32 != d) {
                    return p
                        .into_iter()
                        .enumerate()
                        .map(|(s, d)| (s as u32, d))
                        .collect();
                }
            }
        }
        Pattern::Random => (0..hosts)
            .map(|s| {
                let d = rng.below(hosts as u64 - 1) as u32;
                (s, if d >= s { d + 1 } else { d })
            })
            .collect(),
        Pattern::OneToMany { sources, fanout } => {
            let mut senders = sample(hosts, sources, rng);
            senders.sort_unstable();
            let mut out = Vec::with_capacity(sources as usize * fanout as usize);
            for s in senders {
                let mut dests: Vec<u32> = sample(hosts - 1, fanout, rng)
                    .into_iter()
                    .map(|d| if d >= s { d + 1 } else { d })
                    .collect();
                dests.sort_unstable();
                out.extend(dests.into_iter().map(|d| (s, d)));
            }
            out
        }
        Pattern::AllToAll => (0..hosts)
            .flat_map(|s| (0..hosts).filter(move |&d| d != s).map(move |d| (s, d)))
            .collect(),
    }
}
