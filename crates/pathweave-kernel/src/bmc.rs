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
//!
//! Two ways to drive it: [`Manager::step`] ends a period for every connection at once (the
//! `bmc-manager` command's fixed clock), and [`Manager::tick`] keeps a period per connection,
//! fixed or automatic as in `pathweave-cc` (the emulator calls it often and each connection's
//! period ends on its own time).
//!
//! The automatic period is BMC §3.2's longest congestion epoch, `(W/(2D²) + 1)·R`, over the
//! subflows taking part, capped at [`AUTO_PERIOD_MAX_RTTS`] RTTs. The kernel publishes
//! ssthresh, not the window at the last loss; with the weighted AIMD's decrease of one half
//! `W = 2·ssthresh`, which is what is used.

use crate::arith::WEIGHT_ONE;
use crate::maps::{Conn, SLOTS};
use pathweave_cc::cc::aimd::epoch_rtts;
use pathweave_cc::cc::multipath::bmc::{min_weight, proportion_step, t_wr, AUTO_PERIOD_MAX_RTTS};
use std::collections::BTreeMap;

/// How long a period lasts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PeriodRule {
    /// J seconds, raised to the longest smoothed RTT of a usable subflow.
    Fixed(f64),
    /// The longest congestion epoch of the subflows taking part (BMC §3.2).
    Auto,
}

/// The manager's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ManagerConfig {
    /// K of eq. 3.8 (0 < K < 4).
    pub k: f64,
    /// Dead band: no move unless the largest T_wr exceeds the smallest by this fraction.
    pub tolerance: f64,
    /// The period, for [`Manager::tick`] ([`Manager::step`] is given its period).
    pub period: PeriodRule,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            k: 0.5,
            tolerance: 0.0,
            period: PeriodRule::Fixed(1.0),
        }
    }
}

/// A period's length when nothing has been measured yet (no subflow has an RTT sample).
const UNMEASURED_PERIOD_S: f64 = 0.1;

#[derive(Clone, Debug)]
struct Tracked {
    weights: [f64; SLOTS],
    scores: [f64; SLOTS],
    used: u32,
    acked: [u64; SLOTS],
    /// When the current period started and how long it lasts ([`Manager::tick`]).
    start: f64,
    length: f64,
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
    /// Each slot's T_wr over the period just ended (NaN where the slot took no part).
    pub scores: [f64; SLOTS],
}

/// The proportion manager's memory between periods.
#[derive(Clone, Debug, Default)]
pub struct Manager {
    cfg: ManagerConfig,
    conns: BTreeMap<u64, Tracked>,
}

fn used_mask(c: &Conn) -> u32 {
    (0..SLOTS)
        .filter(|&i| c.slots[i].used())
        .fold(0u32, |m, i| m | 1 << i)
}

/// `given` (or equal shares) over the slots in `used`, scaled to sum to one.
fn initial_weights(used: u32, given: Option<[f64; SLOTS]>) -> [f64; SLOTS] {
    let mut w = [0.0; SLOTS];
    for (i, x) in w.iter_mut().enumerate() {
        if used & (1 << i) != 0 {
            *x = given.map_or(1.0, |g| g[i]);
        }
    }
    let sum: f64 = w.iter().sum();
    if !(sum.is_finite() && sum > 0.0 && w.iter().all(|x| x.is_finite() && *x >= 0.0)) {
        return initial_weights(used, None);
    }
    for x in w.iter_mut() {
        *x /= sum;
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

fn srtt_s(c: &Conn, i: usize) -> f64 {
    c.slots[i].srtt_us as f64 / 8e6
}

/// Whether slot `i` takes part in a period of `period_s` seconds.
fn takes_part(c: &Conn, i: usize, period_s: f64) -> bool {
    let s = &c.slots[i];
    let rtt = srtt_s(c, i);
    s.used() && s.can_send() && s.losses > 0 && rtt > 0.0 && rtt <= period_s && period_s > 0.0
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

    /// The length of the next period of `c` under the configured rule.
    fn next_length(&self, c: &Conn, weights: &[f64; SLOTS]) -> f64 {
        let longest_rtt = (0..SLOTS)
            .filter(|&i| c.slots[i].used() && c.slots[i].can_send())
            .map(|i| srtt_s(c, i))
            .fold(0.0f64, f64::max);
        let floor = if longest_rtt > 0.0 {
            longest_rtt
        } else {
            UNMEASURED_PERIOD_S
        };
        match self.cfg.period {
            PeriodRule::Fixed(j) => j.max(floor),
            PeriodRule::Auto => {
                let mut longest: Option<f64> = None;
                for (i, (s, &d)) in c.slots.iter().zip(weights).enumerate() {
                    if !(s.used() && s.can_send() && s.losses > 0 && srtt_s(c, i) > 0.0) {
                        continue;
                    }
                    let w = 2.0 * s.ssthresh as f64;
                    let secs = epoch_rtts(d * d, 0.5, w).min(AUTO_PERIOD_MAX_RTTS) * srtt_s(c, i);
                    if secs.is_finite() && longest.is_none_or(|l| secs > l) {
                        longest = Some(secs);
                    }
                }
                longest.unwrap_or(floor).max(floor)
            }
        }
    }

    /// Ends `t`'s period of `period_s` seconds over `c`; returns the update if weight moved.
    fn end_period(&self, t: &mut Tracked, c: &Conn, period_s: f64) -> Option<Update> {
        let acked: [u64; SLOTS] = std::array::from_fn(|i| c.slots[i].acked_bytes);
        let mut scores = [f64::NAN; SLOTS];
        for (i, score) in scores.iter_mut().enumerate() {
            if takes_part(c, i, period_s) {
                let delta = acked[i].saturating_sub(t.acked[i]) as f64;
                // BMC eq. 3.7 with T_J the throughput over the period.
                *score = t_wr(srtt_s(c, i), t.weights[i], delta / period_s);
            }
        }
        t.acked = acked;
        t.scores = scores;
        let n = t.used.count_ones() as usize;
        let d_min = min_weight(1.0, n);
        proportion_step(
            &mut t.weights,
            &scores,
            self.cfg.k,
            1.0,
            d_min,
            self.cfg.tolerance,
        )?;
        Some(Update {
            id: c.id,
            weights: fixed(&t.weights, t.used),
            real: t.weights,
            scores,
        })
    }

    /// Starts tracking `c` (new, or its subflows changed) from `given` or equal weights.
    fn restart(&mut self, c: &Conn, used: u32, now: f64, given: Option<[f64; SLOTS]>) -> Update {
        let weights = initial_weights(used, given);
        let t = Tracked {
            weights,
            scores: [f64::NAN; SLOTS],
            used,
            acked: std::array::from_fn(|i| c.slots[i].acked_bytes),
            start: now,
            length: self.next_length(c, &weights),
        };
        self.conns.insert(c.id, t);
        Update {
            id: c.id,
            weights: fixed(&weights, used),
            real: weights,
            scores: [f64::NAN; SLOTS],
        }
    }

    /// One period of `period_s` seconds over the BMC connections in `conns`, ended for all of
    /// them at once: returns the weights to write for every connection whose weights changed
    /// (or are new, at equal weights).
    pub fn step(&mut self, conns: &[Conn], period_s: f64) -> Vec<Update> {
        self.advance(0.0, conns, |_| None, |_| Some(period_s))
    }

    /// At `now` seconds: ends the period of every connection in `conns` whose period has run
    /// its length, with the period rule of the configuration. A connection seen for the first
    /// time, or whose subflows changed, starts over from `initial(c)` (weights per slot, scaled
    /// to sum to one; `None` for equal weights).
    pub fn tick<F>(&mut self, now: f64, conns: &[Conn], initial: F) -> Vec<Update>
    where
        F: Fn(&Conn) -> Option<[f64; SLOTS]>,
    {
        self.advance(now, conns, initial, |t| {
            (now >= t.start + t.length).then_some(now - t.start)
        })
    }

    /// Forgets the connections that left, starts the new ones and ends the period of each
    /// connection for which `due` gives the period's length.
    fn advance<F, D>(&mut self, now: f64, conns: &[Conn], initial: F, due: D) -> Vec<Update>
    where
        F: Fn(&Conn) -> Option<[f64; SLOTS]>,
        D: Fn(&Tracked) -> Option<f64>,
    {
        let mut out = Vec::new();
        self.conns.retain(|id, _| conns.iter().any(|c| c.id == *id));
        for c in conns {
            let used = used_mask(c);
            match self.conns.get(&c.id) {
                Some(t) if t.used == used => {
                    let Some(length) = due(t) else { continue };
                    let mut t = t.clone();
                    if let Some(u) = self.end_period(&mut t, c, length) {
                        out.push(u);
                    }
                    t.start = now;
                    t.length = self.next_length(c, &t.weights);
                    self.conns.insert(c.id, t);
                }
                // New connection, or a subflow joined or left: start over.
                _ => out.push(self.restart(c, used, now, initial(c))),
            }
        }
        out
    }

    /// The scores of connection `id`'s last period (NaN where a slot took no part).
    pub fn scores(&self, id: u64) -> Option<[f64; SLOTS]> {
        self.conns.get(&id).map(|t| t.scores)
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
            ..ManagerConfig::default()
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

    #[test]
    fn tick_ends_a_fixed_period_only_when_it_has_run() {
        let mut m = Manager::new(ManagerConfig {
            period: PeriodRule::Fixed(1.0),
            ..ManagerConfig::default()
        });
        assert_eq!(
            m.tick(10.0, &[conn(1, [0, 0], [0.05, 0.1])], |_| None)
                .len(),
            1
        );
        // T_wr = (R/D)·T_J differs between the slots, so an ended period moves weight.
        let c = conn(1, [600, 100], [0.05, 0.1]);
        assert!(m.tick(10.9, std::slice::from_ref(&c), |_| None).is_empty());
        let u = m.tick(11.0, &[c], |_| None);
        assert_eq!(u.len(), 1);
        // T_J over the period's actual length (1 s): (0.05/0.5)·600 = 60 and (0.1/0.5)·100 = 20.
        assert!((u[0].scores[0] - 60.0).abs() < 1e-9, "{:?}", u[0].scores);
        assert!((u[0].scores[1] - 20.0).abs() < 1e-9, "{:?}", u[0].scores);
        assert!(u[0].real[0] > 0.5 && (u[0].real[0] + u[0].real[1] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_fixed_period_is_raised_to_the_longest_rtt() {
        let mut m = Manager::new(ManagerConfig {
            period: PeriodRule::Fixed(0.01),
            ..ManagerConfig::default()
        });
        m.tick(0.0, &[conn(1, [0, 0], [0.05, 0.2])], |_| None);
        let c = conn(1, [600, 100], [0.05, 0.2]);
        assert!(m.tick(0.19, std::slice::from_ref(&c), |_| None).is_empty());
        assert_eq!(m.tick(0.2, &[c], |_| None).len(), 1);
    }

    #[test]
    fn the_automatic_period_is_the_longest_congestion_epoch() {
        // Equal weights D = 1/2, ssthresh 10 packets: W = 20 and one epoch is
        // W/(2D²) + 1 = 41 RTTs (BMC §3.2); the 0.1 s subflow sets J = 4.1 s.
        let mut m = Manager::new(ManagerConfig {
            period: PeriodRule::Auto,
            ..ManagerConfig::default()
        });
        let mut c = conn(1, [0, 0], [0.05, 0.1]);
        c.slots[0].ssthresh = 10;
        c.slots[1].ssthresh = 10;
        m.tick(0.0, std::slice::from_ref(&c), |_| None);
        c.slots[0].acked_bytes = 600;
        c.slots[1].acked_bytes = 100;
        assert!(m.tick(4.09, std::slice::from_ref(&c), |_| None).is_empty());
        assert_eq!(m.tick(4.101, &[c], |_| None).len(), 1);
    }

    #[test]
    fn initial_weights_are_scaled_to_sum_to_one() {
        let mut m = Manager::default();
        let mut given = [0.0; SLOTS];
        given[0] = 3.0;
        given[1] = 1.0;
        let u = m.tick(0.0, &[conn(1, [0, 0], [0.05, 0.1])], |_| Some(given));
        assert_eq!(u[0].real[..2], [0.75, 0.25]);
        assert_eq!(u[0].weights[..2], [49152, 16384]);
    }
}
