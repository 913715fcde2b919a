//! FatTree (Al-Fares, Loukissas and Vahdat, "A scalable, commodity data center network
//! architecture", SIGCOMM 2008) of k-port switches, with h = k/2:
//!
//! * k pods, each of h edge and h aggregation switches; edge switch (p, e) has h hosts and
//!   an uplink to every aggregation switch of its pod;
//! * h² core switches; core c = a·h + j connects to aggregation switch a of every pod;
//! * k³/4 hosts, 5k²/4 switches, 3k³/4 cables.
//!
//! Host i is in pod i / h², under edge switch (i / h) mod h. Nodes: hosts, then the k·h edge
//! switches (pod-major), the k·h aggregation switches, the h² cores. Cables: the k³/4 host
//! cables (cable i is host i's), then edge–aggregation cables at (p·h + e)·h + a, then
//! aggregation–core cables at (p·h + a)·h + j.

use super::{down, up};
use crate::scenario::Hop;

/// (hosts, switches, cables).
pub(super) fn build(k: u32) -> (u32, u32, Vec<(u32, u32)>) {
    let h = k / 2;
    let hosts = k * h * h;
    let edge = |p: u32, e: u32| hosts + p * h + e;
    let agg = |p: u32, a: u32| hosts + k * h + p * h + a;
    let core = |c: u32| hosts + 2 * k * h + c;
    let mut cables = Vec::with_capacity(3 * hosts as usize);
    for i in 0..hosts {
        cables.push((i, edge(i / (h * h), (i / h) % h)));
    }
    for p in 0..k {
        for e in 0..h {
            for a in 0..h {
                cables.push((edge(p, e), agg(p, a)));
            }
        }
    }
    for p in 0..k {
        for a in 0..h {
            for j in 0..h {
                cables.push((agg(p, a), core(a * h + j)));
            }
        }
    }
    (hosts, 2 * k * h + h * h, cables)
}

pub(super) fn switch_name(k: u32, s: u32) -> String {
    let h = k / 2;
    if s < k * h {
        format!("edge{}_{}", s / h, s % h)
    } else if s < 2 * k * h {
        let s = s - k * h;
        format!("agg{}_{}", s / h, s % h)
    } else {
        format!("core{}", s - 2 * k * h)
    }
}

pub(super) fn path_count(k: u32, src: u32, dst: u32) -> u64 {
    let h = k / 2;
    if src / h == dst / h {
        1
    } else if src / (h * h) == dst / (h * h) {
        h as u64
    } else {
        (h * h) as u64
    }
}

/// Path `index`: within a pod through aggregation switch `index`; between pods through core
/// switch `index` (aggregation switch index / h of both pods).
pub(super) fn path(k: u32, src: u32, dst: u32, index: u64, out: &mut Vec<Hop>) {
    let h = k / 2;
    let hosts = k * h * h;
    let (ps, es) = (src / (h * h), (src / h) % h);
    let (pd, ed) = (dst / (h * h), (dst / h) % h);
    let edge_agg = |p: u32, e: u32, a: u32| (hosts + (p * h + e) * h + a) as usize;
    let agg_core = |p: u32, a: u32, j: u32| (hosts + k * h * h + (p * h + a) * h + j) as usize;
    out.push(up(src as usize));
    if src / h != dst / h {
        let index = index as u32;
        if ps == pd {
            out.push(up(edge_agg(ps, es, index)));
            out.push(down(edge_agg(pd, ed, index)));
        } else {
            let (a, j) = (index / h, index % h);
            out.push(up(edge_agg(ps, es, a)));
            out.push(up(agg_core(ps, a, j)));
            out.push(down(agg_core(pd, a, j)));
            out.push(down(edge_agg(pd, ed, a)));
        }
    }
    out.push(down(dst as usize));
}
