//! BMC's proportion manager for `pw_bmc` (Honda et al. 2009 §3.2): every period it reads each
//! connection's per-subflow counters (bytes acknowledged, congestion events, srtt) from the
//! connection map and moves weight from the subflow with the smallest
//! `T_wr = (R/D)·T_J` to the one with the largest, with `pathweave-cc`'s own
//! [`proportion_step`] — the code the simulator runs — then writes the weights back as
//! 2^16 fixed point for the BPF program.
//!
//! Who takes part, as in `pathweave-cc`: a subflow that can send, has left its initial slow
//! start (at least one congestion event) and was measured over at least one of its RTTs.
//! Connections are tracked by their number; one that left the map is forgotten.

use crate::arith::WEIGHT_ONE;
use crate::maps::{Conn, SLOTS};
use pathweave_cc::cc::multipath::bmc::{min_weight, proportion_step, t_wr};
use std::collections::BTreeMap;

/// The manager's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ManagerConfig {
    /// K of eq. 3.8 (0 < K < 4).
    pub k: f64,
    /// Dead band: no move unless the largest T_wr exceeds the smallest by this fraction.
    pub tolerance: f64,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            k: 0.5,
            tolerance: 0.0,
        }
    }
}

#[derive(Clone, Debug)]
struct Tracked {
    weights: [f64; SLOTS],
    used: u32,
    acked: [u64; SLOTS],
}

/// One weight change the manager decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// Connection number (key of `pw_bmc_weights`).
    pub id: u64,
    /// The weights in 2^16 fixed point, per slot (0 for a free slot).
    pub weights: [u32; SLOTS],
    /// The weights as reals, per slot.
    pub real: [f64; SLOTS],
}

/// The proportion manager's memory between periods.
#[derive(Clone, Debug, Default)]
pub struct Manager {
    cfg: ManagerConfig,
    conns: BTreeMap<u64, Tracked>,
}

fn equal(used: u32) -> [f64; SLOTS] {
    let n = used.count_ones().max(1) as f64;
    let mut w = [0.0; SLOTS];
    for (i, x) in w.iter_mut().enumerate() {
        if used & (1 << i) != 0 {
            *x = 1.0 / n;
        }
    }
    w
}

/// 2^16 fixed point, at least 1 for a slot in use.
fn fixed(w: &[f64; SLOTS], used: u32) -> [u32; SLOTS] {
    let mut out = [0u32; SLOTS];
    for i in 0..SLOTS {
        if used & (1 << i) != 0 {
            out[i] = ((w[i] * WEIGHT_ONE as f64).round() as u32).max(1);
        }
    }
    out
}

impl Manager {
    /// A manager with `cfg`.
    pub fn new(cfg: ManagerConfig) -> Manager {
        Manager {
            cfg,
            conns: BTreeMap::new(),
        }
    }

    /// The weights currently held for connection `id`.
    pub fn weights(&self, id: u64) -> Option<[f64; SLOTS]> {
        self.conns.get(&id).map(|t| t.weights)
    }

    /// One period of `period_s` seconds over the BMC connections in `conns`: returns the
    /// weights to write for every connection whose weights changed (or are new).
    pub fn step(&mut self, conns: &[Conn], period_s: f64) -> Vec<Update> {
        let mut out = Vec::new();
        let alive: Vec<u64> = conns.iter().map(|c| c.id).collect();
        self.conns.retain(|id, _| alive.contains(id));
        for c in conns {
            let used = (0..SLOTS)
                .filter(|&i| c.slots[i].used())
                .fold(0u32, |m, i| m | 1 << i);
            let acked: [u64; SLOTS] = std::array::from_fn(|i| c.slots[i].acked_bytes);
            let t = match self.conns.get_mut(&c.id) {
                Some(t) if t.used == used => t,
                _ => {
                    // New connection, or a subflow joined or left: restart from equal weights.
                    let t = Tracked {
                        weights: equal(used),
                        used,
                        acked,
                    };
                    self.conns.insert(c.id, t.clone());
                    out.push(Update {
                        id: c.id,
                        weights: fixed(&t.weights, used),
                        real: t.weights,
                    });
                    continue;
                }
            };
            let mut scores = [f64::NAN; SLOTS];
            for i in 0..SLOTS {
                let s = &c.slots[i];
                let rtt = s.srtt_us as f64 / 8e6;
                let delta = acked[i].saturating_sub(t.acked[i]) as f64;
                let takes_part = s.used()
                    && s.can_send()
                    && s.losses > 0
                    && rtt > 0.0
                    && rtt <= period_s
                    && period_s > 0.0;
                if takes_part {
                    // BMC eq. 3.7 with T_J the throughput over the period.
                    scores[i] = t_wr(rtt, t.weights[i], delta / period_s);
                }
            }
            t.acked = acked;
            let n = used.count_ones() as usize;
            let d_min = min_weight(1.0, n);
            if proportion_step(
                &mut t.weights,
                &scores,
                self.cfg.k,
                1.0,
                d_min,
                self.cfg.tolerance,
            )
            .is_some()
            {
                out.push(Update {
                    id: c.id,
                    weights: fixed(&t.weights, used),
                    real: t.weights,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maps::{Slot, SLOT_CAN_SEND, SLOT_USED};

    fn conn(id: u64, acked: [u64; 2], srtt_s: [f64; 2]) -> Conn {
        let mut c = Conn {
            algo: 5,
            subflows: 2,
            used: 3,
            id,
            ..Conn::default()
        };
        for i in 0..2 {
            c.slots[i] = Slot {
                acked_bytes: acked[i],
                srtt_us: (srtt_s[i] * 8e6) as u32,
                losses: 1,
                flags: SLOT_USED | SLOT_CAN_SEND,
                ..Slot::default()
            };
        }
        c
    }

    #[test]
    fn a_new_connection_starts_from_equal_weights() {
        let mut m = Manager::default();
        let u = m.step(&[conn(7, [0, 0], [0.05, 0.1])], 1.0);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].weights[..2], [32768, 32768]);
        assert_eq!(u[0].weights[2], 0);
    }

    #[test]
    fn vector_p1_moves_weight_to_the_less_congested_path() {
        // vectors.json BMC P1: D = (.6, .4), R = (.05, .1), T_J = (600, 100), K = 0.5 gives
        // T_wr = (50, 25) and D = (0.72, 0.28).
        let mut m = Manager::new(ManagerConfig {
            k: 0.5,
            tolerance: 0.0,
        });
        m.step(&[conn(1, [0, 0], [0.05, 0.1])], 1.0);
        m.conns.get_mut(&1).unwrap().weights[..2].copy_from_slice(&[0.6, 0.4]);
        let u = m.step(&[conn(1, [600, 100], [0.05, 0.1])], 1.0);
        assert_eq!(u.len(), 1);
        assert!((u[0].real[0] - 0.72).abs() < 1e-12, "{:?}", u[0].real);
        assert!((u[0].real[1] - 0.28).abs() < 1e-12, "{:?}", u[0].real);
        assert_eq!(u[0].weights[0], (0.72f64 * 65536.0).round() as u32);
    }

    #[test]
    fn subflows_still_in_slow_start_do_not_take_part() {
        let mut m = Manager::default();
        m.step(&[conn(1, [0, 0], [0.05, 0.1])], 1.0);
        let mut c = conn(1, [600, 100], [0.05, 0.1]);
        c.slots[1].losses = 0;
        assert!(m.step(&[c], 1.0).is_empty());
    }

    #[test]
    fn connections_that_left_the_map_are_forgotten() {
        let mut m = Manager::default();
        m.step(&[conn(1, [0, 0], [0.05, 0.1])], 1.0);
        m.step(&[], 1.0);
        assert!(m.weights(1).is_none());
    }
}
