//! Expected values come from the topologies' definitions (counts in closed form), never from
//! the code under test.

use super::traffic::{pairs, Pattern};
use super::*;
use crate::rng::{Purpose, Stream};
use std::collections::BTreeSet;

/// Walk `hops` from `src` and return where it ends, checking that each hop leaves the node
/// the previous one reached.
fn walk(f: &Fabric, src: u32, hops: &[Hop]) -> u32 {
    let mut at = src;
    for h in hops {
        let (a, b) = f.cable_ends(h.link);
        let (from, to) = if h.reverse { (b, a) } else { (a, b) };
        assert_eq!(from, at, "hop {h:?} does not leave node {at}");
        at = to;
    }
    at
}

/// Every path from `s` to `d`: connected, of `len` hops, each distinct.
fn check_paths(f: &Fabric, s: u32, d: u32, count: u64, len: usize) {
    assert_eq!(f.path_count(s, d), count, "{s} -> {d}");
    let mut seen = BTreeSet::new();
    let mut hops = Vec::new();
    for i in 0..count {
        f.path(s, d, i, &mut hops);
        assert_eq!(hops.len(), len, "{s} -> {d} path {i}");
        assert_eq!(walk(f, s, &hops), d, "{s} -> {d} path {i}");
        let key: Vec<(usize, bool)> = hops.iter().map(|h| (h.link, h.reverse)).collect();
        assert!(seen.insert(key), "{s} -> {d} path {i} repeats");
    }
}

#[test]
fn fat_tree_counts_follow_the_formulas() {
    for k in [2u32, 4, 8, 16] {
        let f = Fabric::new(TopologyKind::FatTree { k });
        assert_eq!(f.hosts(), k * k * k / 4, "k={k}");
        assert_eq!(f.switches(), 5 * k * k / 4, "k={k}");
        assert_eq!(f.cables() as u32, 3 * k * k * k / 4, "k={k}");
    }
}

#[test]
fn fat_tree_equal_cost_paths_by_placement() {
    for k in [2u32, 4, 8] {
        let f = Fabric::new(TopologyKind::FatTree { k });
        let h = k / 2;
        let per_pod = h * h;
        for s in 0..f.hosts() {
            for d in 0..f.hosts() {
                if s == d {
                    continue;
                }
                if s / h == d / h {
                    check_paths(&f, s, d, 1, 2);
                } else if s / per_pod == d / per_pod {
                    check_paths(&f, s, d, h as u64, 4);
                } else {
                    check_paths(&f, s, d, (h * h) as u64, 6);
                }
            }
        }
    }
}

#[test]
fn fat_tree_names() {
    let f = Fabric::new(TopologyKind::FatTree { k: 4 });
    // Host 5: pod 1 (4 hosts per pod), edge 0 of the pod (2 hosts per edge).
    assert_eq!(f.cable_name(5), "host5-edge1_0");
    assert_eq!(f.host("host15"), Some(15));
    for bad in ["host16", "host01", "host", "hostx", "edge0_0", "host-1"] {
        assert_eq!(f.host(bad), None, "{bad}");
    }
    let names: BTreeSet<String> = (0..f.cables()).map(|c| f.cable_name(c)).collect();
    assert_eq!(names.len(), f.cables(), "cable names are unique");
    assert!(names.contains("edge0_1-agg0_0"));
    assert!(names.contains("agg3_1-core3"));
}

#[test]
fn vl2_counts_and_paths_follow_the_definition() {
    for (da, di, hpt) in [(4u32, 4u32, 2u32), (8, 4, 3), (4, 8, 1)] {
        let f = Fabric::new(TopologyKind::Vl2 {
            da,
            di,
            hosts_per_tor: hpt,
        });
        let tors = da * di / 4;
        assert_eq!(f.hosts(), tors * hpt);
        assert_eq!(f.switches(), tors + di + da / 2);
        assert_eq!(f.cables() as u32, tors * hpt + 2 * tors + di * da / 2);
        let group = |h: u32| h / hpt / (da / 2);
        for s in 0..f.hosts() {
            for d in 0..f.hosts() {
                if s == d {
                    continue;
                }
                if s / hpt == d / hpt {
                    check_paths(&f, s, d, 1, 2);
                } else if group(s) == group(d) {
                    check_paths(&f, s, d, 2, 4);
                } else {
                    check_paths(&f, s, d, 2 * da as u64, 6);
                }
            }
        }
    }
}

#[test]
fn bcube_counts_and_paths_follow_the_definition() {
    for (n, k) in [(2u32, 0u32), (2, 1), (4, 1), (3, 2), (2, 3)] {
        let f = Fabric::new(TopologyKind::BCube { n, k });
        assert_eq!(f.hosts(), n.pow(k + 1));
        assert_eq!(f.switches(), (k + 1) * n.pow(k));
        assert_eq!(f.cables() as u32, (k + 1) * n.pow(k + 1));
        for s in 0..f.hosts() {
            for d in 0..f.hosts() {
                if s == d {
                    continue;
                }
                // Digits that differ, m; m! orders; 2 links per server-to-server hop.
                let m = (0..=k)
                    .filter(|&l| (s / n.pow(l)) % n != (d / n.pow(l)) % n)
                    .count();
                let fact: u64 = (1..=m as u64).product();
                check_paths(&f, s, d, fact, 2 * m);
            }
        }
    }
}

#[test]
fn ecmp_is_deterministic_and_covers_every_path() {
    let a: Vec<u64> = (0..100).map(|c| ecmp_choice(7, c, 0, 16)).collect();
    let b: Vec<u64> = (0..100).map(|c| ecmp_choice(7, c, 0, 16)).collect();
    let other: Vec<u64> = (0..100).map(|c| ecmp_choice(8, c, 0, 16)).collect();
    assert_eq!(a, b);
    assert_ne!(a, other, "the seed changes the hashes");
    let by_subflow: Vec<u64> = (0..100).map(|j| ecmp_choice(7, 3, j, 16)).collect();
    assert_eq!(by_subflow.iter().collect::<BTreeSet<_>>().len(), 16);
}

/// The core switch ECMP picks between two pods of a k = 8 FatTree (16 cores) over 16,000
/// connections: a chi-square test of uniformity, 15 degrees of freedom, at significance
/// 0.001 (critical value 37.70). A biased hash would fail it.
#[test]
fn ecmp_spreads_connections_uniformly_over_the_cores() {
    let f = Fabric::new(TopologyKind::FatTree { k: 8 });
    let (s, d) = (0, 100); // pods 0 and 6
    let cores = f.path_count(s, d);
    assert_eq!(cores, 16);
    let n = 16_000u64;
    let mut counts = vec![0u64; cores as usize];
    let mut hops = Vec::new();
    for c in 0..n {
        let i = ecmp_choice(1, c, 0, cores);
        f.path(s, d, i, &mut hops);
        // The third hop climbs from an aggregation switch to the core.
        let (_, core) = f.cable_ends(hops[2].link);
        let j: usize = f.node_name(core)["core".len()..].parse().unwrap();
        counts[j] += 1;
    }
    let expected = n as f64 / cores as f64;
    let chi2: f64 = counts
        .iter()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 37.70, "chi-square {chi2} over {counts:?}");
}

#[test]
fn permutation_is_a_derangement() {
    for (n, seed) in [(2u32, 1u64), (3, 2), (16, 3), (1024, 4), (8192, 5)] {
        let mut rng = Stream::new(seed, Purpose::Traffic, 0);
        let p = pairs(Pattern::Permutation, n, &mut rng);
        assert_eq!(p.len(), n as usize);
        let dests: BTreeSet<u32> = p.iter().map(|&(_, d)| d).collect();
        assert_eq!(dests.len(), n as usize, "every host receives once");
        assert!(p
            .iter()
            .enumerate()
            .all(|(i, &(s, d))| s == i as u32 && s != d));
    }
}

#[test]
fn permutation_of_three_draws_both_derangements_evenly() {
    // Over 3 hosts there are two derangements, (1 2 0) and (2 0 1): each with probability
    // 1/2. 4,000 draws: the count of one is binomial(4000, 1/2), sd 31.6; 5 sd allowed.
    let mut rng = Stream::new(9, Purpose::Traffic, 0);
    let first = (0..4000)
        .filter(|_| pairs(Pattern::Permutation, 3, &mut rng)[0].1 == 1)
        .count() as f64;
    assert!((first - 2000.0).abs() < 158.0, "{first}");
}

#[test]
fn other_patterns_keep_their_shape() {
    let mut rng = Stream::new(1, Purpose::Traffic, 0);
    let r = pairs(Pattern::Random, 50, &mut rng);
    assert!(r
        .iter()
        .enumerate()
        .all(|(i, &(s, d))| s == i as u32 && d != s && d < 50));
    let o = pairs(
        Pattern::OneToMany {
            sources: 3,
            fanout: 49,
        },
        50,
        &mut rng,
    );
    assert_eq!(o.len(), 3 * 49);
    let senders: BTreeSet<u32> = o.iter().map(|p| p.0).collect();
    assert_eq!(senders.len(), 3);
    for s in senders {
        let to: BTreeSet<u32> = o.iter().filter(|p| p.0 == s).map(|p| p.1).collect();
        assert_eq!(to.len(), 49);
        assert!(!to.contains(&s));
    }
    let a = pairs(Pattern::AllToAll, 5, &mut rng);
    assert_eq!(a.len(), 20);
    assert_eq!(a.iter().collect::<BTreeSet<_>>().len(), 20);
}
