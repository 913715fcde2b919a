//! VL2 (Greenberg et al., "VL2: a scalable and flexible data center network", SIGCOMM
//! 2009): a Clos network of D_A-port aggregation and D_I-port intermediate switches.
//!
//! * D_I aggregation switches, each with D_A/2 ports down to ToRs and D_A/2 up, one to each
//!   of the D_A/2 intermediate switches;
//! * D_A·D_I/4 ToRs, each with two uplinks and `hosts_per_tor` hosts (20 in the paper);
//! * ToRs are wired in D_I/2 groups of D_A/2: ToR t's uplinks go to aggregation switches
//!   2g and 2g + 1 of its group g = t / (D_A/2), so each aggregation switch has D_A/2 ToRs.
//!
//! Nodes: hosts, then ToRs, aggregation switches and intermediates. Cables: host cables
//! (cable i is host i's), then ToR uplinks at 2t + u (to aggregation switch 2g + u), then
//! aggregation–intermediate cables at a·(D_A/2) + j.

use super::{down, up};
use crate::scenario::Hop;

/// (hosts, switches, cables).
pub(super) fn build(da: u32, di: u32, hosts_per_tor: u32) -> (u32, u32, Vec<(u32, u32)>) {
    let tors = da * di / 4;
    let ints = da / 2;
    let hosts = tors * hosts_per_tor;
    let tor = |t: u32| hosts + t;
    let agg = |a: u32| hosts + tors + a;
    let int = |j: u32| hosts + tors + di + j;
    let mut cables = Vec::with_capacity((hosts + 2 * tors + di * ints) as usize);
    for i in 0..hosts {
        cables.push((i, tor(i / hosts_per_tor)));
    }
    for t in 0..tors {
        let g = t / (da / 2);
        for u in 0..2 {
            cables.push((tor(t), agg(2 * g + u)));
        }
    }
    for a in 0..di {
        for j in 0..ints {
            cables.push((agg(a), int(j)));
        }
    }
    (hosts, tors + di + ints, cables)
}

pub(super) fn switch_name(da: u32, di: u32, s: u32) -> String {
    let tors = da * di / 4;
    if s < tors {
        format!("tor{s}")
    } else if s < tors + di {
        format!("agg{}", s - tors)
    } else {
        format!("int{}", s - tors - di)
    }
}

pub(super) fn path_count(da: u32, hosts_per_tor: u32, src: u32, dst: u32) -> u64 {
    let (ts, td) = (src / hosts_per_tor, dst / hosts_per_tor);
    if ts == td {
        1
    } else if ts / (da / 2) == td / (da / 2) {
        2
    } else {
        // Either uplink up, any intermediate, either downlink of the destination's ToR.
        2 * da as u64
    }
}

/// Path `index`: between ToRs of one group through aggregation switch `index` of the group;
/// between groups `index = (u·(D_A/2) + j)·2 + v`: up the source ToR's uplink u, through
/// intermediate j, down the destination ToR's uplink v.
pub(super) fn path(
    da: u32,
    di: u32,
    hosts_per_tor: u32,
    src: u32,
    dst: u32,
    index: u64,
    out: &mut Vec<Hop>,
) {
    let tors = da * di / 4;
    let ints = da / 2;
    let hosts = tors * hosts_per_tor;
    let (ts, td) = (src / hosts_per_tor, dst / hosts_per_tor);
    let uplink = |t: u32, u: u32| (hosts + 2 * t + u) as usize;
    let agg_int = |a: u32, j: u32| (hosts + 2 * tors + a * ints + j) as usize;
    let index = index as u32;
    out.push(up(src as usize));
    if ts != td {
        let (gs, gd) = (ts / (da / 2), td / (da / 2));
        if gs == gd {
            out.push(up(uplink(ts, index)));
            out.push(down(uplink(td, index)));
        } else {
            let (u, j, v) = (index / 2 / ints, (index / 2) % ints, index % 2);
            out.push(up(uplink(ts, u)));
            out.push(up(agg_int(2 * gs + u, j)));
            out.push(down(agg_int(2 * gd + v, j)));
            out.push(down(uplink(td, v)));
        }
    }
    out.push(down(dst as usize));
}
