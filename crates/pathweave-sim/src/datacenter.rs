//! Generated datacenter fabrics: FatTree, VL2 and BCube, their node and cable names, the
//! equal-cost shortest paths between two hosts and the ECMP hash that picks one of them.
//!
//! A fabric is a list of cables, each of which becomes one duplex link of the scenario
//! (forward = from the host side up, or from a BCube server to its switch). Paths are not
//! searched for: each topology enumerates its equal-cost shortest paths between two hosts by
//! arithmetic on the node addresses, so the `i`-th path is computed in time linear in its
//! length and nothing quadratic in the number of hosts is ever built.
//!
//! Invariant: host `i` is node `i` and is named `host{i}`; switches follow the hosts.

mod bcube;
mod fat_tree;
pub mod traffic;
mod vl2;

use crate::scenario::Hop;

/// The most hosts a fabric may have: 65,536 (a FatTree of k = 64).
pub const MAX_HOSTS: u64 = 65_536;

/// The most equal-cost paths a fabric enumerates between two hosts (BCube's grow as the
/// factorial of the differing address digits).
pub const MAX_PATHS: u64 = 40_320;

/// Which fabric, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyKind {
    /// Al-Fares et al.'s FatTree of `k`-port switches: k pods of k/2 edge and k/2 aggregation
    /// switches, (k/2)² core switches, k³/4 hosts.
    FatTree {
        /// Ports per switch (even, ≥ 2).
        k: u32,
    },
    /// Greenberg et al.'s VL2 Clos: `di` aggregation switches of `da` ports, `da`/2
    /// intermediate switches of `di` ports, `da`·`di`/4 ToRs with two uplinks and
    /// `hosts_per_tor` hosts each.
    Vl2 {
        /// Ports of an aggregation switch (even, ≥ 2).
        da: u32,
        /// Ports of an intermediate switch (even, ≥ 2).
        di: u32,
        /// Hosts under each ToR.
        hosts_per_tor: u32,
    },
    /// Guo et al.'s BCube(n, k): n^(k+1) servers with k+1 ports, k+1 levels of n^k
    /// `n`-port switches; servers relay.
    BCube {
        /// Ports per switch (≥ 2).
        n: u32,
        /// The highest level (≥ 0).
        k: u32,
    },
}

/// A generated fabric: its nodes and cables.
#[derive(Clone, Debug, PartialEq)]
pub struct Fabric {
    /// The topology and its parameters.
    pub kind: TopologyKind,
    hosts: u32,
    switches: u32,
    /// Each cable's two nodes, the forward direction from the first to the second.
    cables: Vec<(u32, u32)>,
}

/// What kind of cable: host links, and the tiers of switch-to-switch links (which an
/// oversubscribed fabric slows down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CableTier {
    /// A host's (a server's) link to its first switch.
    Host,
    /// A link between two switches.
    Fabric,
}

impl TopologyKind {
    /// The number of hosts, or `None` if it would exceed [`MAX_HOSTS`].
    pub fn host_count(&self) -> Option<u64> {
        let n = match *self {
            TopologyKind::FatTree { k } => (k as u64).checked_pow(3)? / 4,
            TopologyKind::Vl2 {
                da,
                di,
                hosts_per_tor,
            } => (da as u64 * di as u64 / 4).checked_mul(hosts_per_tor as u64)?,
            TopologyKind::BCube { n, k } => (n as u64).checked_pow(k.checked_add(1)?)?,
        };
        (n <= MAX_HOSTS).then_some(n)
    }

    /// The type's name as scenarios write it.
    pub fn type_name(&self) -> &'static str {
        match self {
            TopologyKind::FatTree { .. } => "fat-tree",
            TopologyKind::Vl2 { .. } => "vl2",
            TopologyKind::BCube { .. } => "bcube",
        }
    }
}

impl Fabric {
    /// Build the fabric. The parameters must have been checked (even `k`, at most
    /// [`MAX_HOSTS`] hosts: see [`TopologyKind::host_count`]).
    pub fn new(kind: TopologyKind) -> Fabric {
        let (hosts, switches, cables) = match kind {
            TopologyKind::FatTree { k } => fat_tree::build(k),
            TopologyKind::Vl2 {
                da,
                di,
                hosts_per_tor,
            } => vl2::build(da, di, hosts_per_tor),
            TopologyKind::BCube { n, k } => bcube::build(n, k),
        };
        Fabric {
            kind,
            hosts,
            switches,
            cables,
        }
    }

    /// Number of hosts (servers).
    pub fn hosts(&self) -> u32 {
        self.hosts
    }

    /// Number of switches.
    pub fn switches(&self) -> u32 {
        self.switches
    }

    /// Number of cables (each one duplex link).
    pub fn cables(&self) -> usize {
        self.cables.len()
    }

    /// Cable `c`'s two nodes, forward from the first.
    pub fn cable_ends(&self, c: usize) -> (u32, u32) {
        self.cables[c]
    }

    /// Whether cable `c` connects a host or two switches. A BCube server–switch cable is a
    /// host cable.
    pub fn cable_tier(&self, c: usize) -> CableTier {
        let (a, b) = self.cables[c];
        if a < self.hosts || b < self.hosts {
            CableTier::Host
        } else {
            CableTier::Fabric
        }
    }

    /// Cable `c`'s name: its two nodes' names joined by `-`, the forward direction's sender
    /// first (`host3-edge0_1`, `edge0_1-agg0_0`, `agg0_0-core1`).
    pub fn cable_name(&self, c: usize) -> String {
        let (a, b) = self.cables[c];
        format!("{}-{}", self.node_name(a), self.node_name(b))
    }

    /// Node `v`'s name: `host{i}` for hosts, and per topology `edge{p}_{j}`, `agg{p}_{j}`,
    /// `core{j}` (FatTree), `tor{j}`, `agg{j}`, `int{j}` (VL2) or `sw{l}_{j}` (BCube).
    pub fn node_name(&self, v: u32) -> String {
        if v < self.hosts {
            return format!("host{v}");
        }
        let s = v - self.hosts;
        match self.kind {
            TopologyKind::FatTree { k } => fat_tree::switch_name(k, s),
            TopologyKind::Vl2 { da, di, .. } => vl2::switch_name(da, di, s),
            TopologyKind::BCube { n, k } => bcube::switch_name(n, k, s),
        }
    }

    /// The host called `name` (`host{i}`, `i` written without leading zeros), if any.
    pub fn host(&self, name: &str) -> Option<u32> {
        let digits = name.strip_prefix("host")?;
        if digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || (digits.len() > 1 && digits.starts_with('0'))
            || digits.len() > 9
        {
            return None;
        }
        let i: u32 = digits.parse().ok()?;
        (i < self.hosts).then_some(i)
    }

    /// The number of equal-cost shortest paths from host `src` to host `dst` (`src ≠ dst`).
    pub fn path_count(&self, src: u32, dst: u32) -> u64 {
        match self.kind {
            TopologyKind::FatTree { k } => fat_tree::path_count(k, src, dst),
            TopologyKind::Vl2 {
                da, hosts_per_tor, ..
            } => vl2::path_count(da, hosts_per_tor, src, dst),
            TopologyKind::BCube { n, .. } => bcube::path_count(n, src, dst),
        }
    }

    /// Equal-cost path `index` (below [`Fabric::path_count`]) from `src` to `dst`, as hops
    /// over the fabric's cables (link `c` is cable `c`), written into `out`.
    pub fn path(&self, src: u32, dst: u32, index: u64, out: &mut Vec<Hop>) {
        out.clear();
        match self.kind {
            TopologyKind::FatTree { k } => fat_tree::path(k, src, dst, index, out),
            TopologyKind::Vl2 {
                da,
                di,
                hosts_per_tor,
            } => vl2::path(da, di, hosts_per_tor, src, dst, index, out),
            TopologyKind::BCube { n, k } => bcube::path(n, k, src, dst, index, out),
        }
    }
}

/// One hop up a cable (forward) or down it (reverse).
fn up(link: usize) -> Hop {
    Hop {
        link,
        reverse: false,
    }
}

fn down(link: usize) -> Hop {
    Hop {
        link,
        reverse: true,
    }
}

/// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): the golden-ratio increment followed by the mixing function.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The ECMP hash of a subflow, standing for a switch's hash of the five-tuple: splitmix64
/// chained over the scenario seed, the connection's index among the scenario's flows and the
/// subflow's index, `h = s(s(s(seed) ^ connection) ^ subflow)`. The path taken is
/// `h mod paths`; with at most [`MAX_PATHS`] paths the modulo's bias is below 2⁻⁴⁸.
pub fn ecmp_hash(seed: u64, connection: u64, subflow: u64) -> u64 {
    splitmix64(splitmix64(splitmix64(seed) ^ connection) ^ subflow)
}

/// The equal-cost path a subflow's hash picks among `paths`.
pub fn ecmp_choice(seed: u64, connection: u64, subflow: u64, paths: u64) -> u64 {
    ecmp_hash(seed, connection, subflow) % paths.max(1)
}

#[cfg(test)]
mod tests;
