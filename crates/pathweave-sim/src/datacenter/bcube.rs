//! BCube(n, k) (Guo et al., "BCube: a high performance, server-centric network architecture
//! for modular data centers", SIGCOMM 2009): n^(k+1) servers with k+1 ports; level l has
//! n^k switches of n ports, and the level-l switch of a server joins the n servers whose
//! addresses (k+1 digits base n, digit 0 least significant) differ only in digit l.
//! Servers relay, so a path alternates server, switch, server.
//!
//! Server s's level-l switch is j = (s / n^(l+1))·n^l + s mod n^l, the address without digit
//! l; it is named `sw{l}_{j}`. Nodes: servers, then switches level by level. Cables: server
//! s's level-l cable is s·(k+1) + l, forward from the server to the switch.
//!
//! A shortest path between servers that differ in m digits corrects one digit per
//! server-to-server hop, so it has m hops, and every order of the m corrections is one: there
//! are m! equal-cost shortest paths (BCube's own routing also uses non-shortest parallel
//! paths, which are not enumerated here).

use super::{down, up};
use crate::scenario::Hop;

/// (hosts, switches, cables).
pub(super) fn build(n: u32, k: u32) -> (u32, u32, Vec<(u32, u32)>) {
    let servers = n.pow(k + 1);
    let per_level = n.pow(k);
    let mut cables = Vec::with_capacity((servers * (k + 1)) as usize);
    for s in 0..servers {
        for l in 0..=k {
            cables.push((s, servers + l * per_level + switch_of(n, s, l)));
        }
    }
    (servers, (k + 1) * per_level, cables)
}

/// The index within its level of server `s`'s level-`l` switch.
fn switch_of(n: u32, s: u32, l: u32) -> u32 {
    let below = n.pow(l);
    (s / (below * n)) * below + s % below
}

pub(super) fn switch_name(n: u32, k: u32, s: u32) -> String {
    let per_level = n.pow(k);
    format!("sw{}_{}", s / per_level, s % per_level)
}

/// The levels at which `src` and `dst` differ, lowest first.
fn differing(n: u32, src: u32, dst: u32) -> Vec<u32> {
    let (mut a, mut b, mut l) = (src, dst, 0);
    let mut out = Vec::new();
    while a > 0 || b > 0 {
        if a % n != b % n {
            out.push(l);
        }
        a /= n;
        b /= n;
        l += 1;
    }
    out
}

pub(super) fn path_count(n: u32, src: u32, dst: u32) -> u64 {
    (1..=differing(n, src, dst).len() as u64).product()
}

/// Path `index`: the order of the digit corrections is the permutation whose Lehmer code
/// (factorial number system, most significant first) is `index`, over the differing levels
/// in increasing order.
pub(super) fn path(n: u32, k: u32, src: u32, dst: u32, index: u64, out: &mut Vec<Hop>) {
    let mut levels = differing(n, src, dst);
    let mut rest = index;
    let mut current = src;
    let cable = |s: u32, l: u32| (s * (k + 1) + l) as usize;
    while !levels.is_empty() {
        let m = levels.len() as u64;
        let block: u64 = (1..m).product();
        let pick = (rest / block) as usize;
        rest %= block;
        let l = levels.remove(pick);
        let place = n.pow(l);
        let digit = |s: u32| (s / place) % n;
        let next = current - digit(current) * place + digit(dst) * place;
        out.push(up(cable(current, l)));
        out.push(down(cable(next, l)));
        current = next;
    }
}
