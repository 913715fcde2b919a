//! Which kernel congestion control runs each flow, and the coupled controllers of one run.
//!
//! Reno and uncoupled multipath run the kernel's `reno`. The coupled algorithms (`lia`,
//! `olia`, `balia`, `fully-coupled`, `bmc`, `kelly-voice`) run on pathweave-kernel's BPF
//! `struct_ops` controllers:
//!
//! * with the `kernel` feature, each run loads its own private copy under a prefix made from
//!   its run number (`e<base 36>_lia`, …), unpinned: it unregisters when the run ends, also
//!   when the process is killed, because only the run's file descriptors hold it. Its
//!   connection map then holds this run's connections alone, and BMC's proportion manager
//!   ([`pathweave_kernel::bmc::Manager`], the simulator's own `proportion_step`) runs in the
//!   run's loop for each BMC flow, with the flow's K, dead band, period and initial weights;
//! * without it, the coupled algorithms other than BMC run on controllers loaded beforehand
//!   with `pathweave kernel load` (prefix `pw`); BMC needs its manager and is refused.
//!
//! A BMC connection's slots are matched to the scenario's subflows by their local address:
//! each path of each flow has its own (see `run.rs`), and the BPF program publishes it.

use crate::EmuError;
#[cfg(feature = "kernel")]
use pathweave_cc::cc::multipath::bmc::Period;
use pathweave_cc::cc::multipath::bmc::{BmcConfig, InitialWeights};
use pathweave_cc::cc::multipath::MultipathConfig;
use pathweave_sim::scenario::{Control, FlowKind, Scenario};

/// The scenario algorithms that run on pathweave-kernel's controllers, with the suffix of
/// each controller's name.
pub(crate) const COUPLED: [(&str, &str); 6] = [
    ("lia", "lia"),
    ("olia", "olia"),
    ("balia", "balia"),
    ("fully-coupled", "coupled"),
    ("bmc", "bmc"),
    ("kelly-voice", "kv"),
];

/// The prefix of controllers loaded with `pathweave kernel load` and no `--prefix`.
pub(crate) const PRELOADED_PREFIX: &str = "pw";

/// Whether this build loads the BPF controllers itself.
pub const LOADS_CONTROLLERS: bool = cfg!(feature = "kernel");

/// The suffix of the kernel controller that runs coupled algorithm `name`.
pub(crate) fn coupled_suffix(name: &str) -> Option<&'static str> {
    COUPLED.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Whether any flow of `s` runs a coupled algorithm.
pub(crate) fn needed(s: &Scenario, external: &[bool]) -> bool {
    s.flows.iter().zip(external).any(|(f, &ext)| match &f.kind {
        // An external flow's applications bring their own congestion control.
        _ if ext => false,
        // A QUIC flow's controller runs inside its sender.
        FlowKind::Tcp { .. } if crate::is_quic(f) => false,
        FlowKind::Tcp { control, .. } => coupled_suffix(&control.name).is_some(),
        FlowKind::Cbr { .. } => false,
    })
}

/// The BMC configuration of a flow, if it runs BMC.
pub(crate) fn bmc_config(kind: &FlowKind) -> Option<&BmcConfig> {
    match kind {
        FlowKind::Tcp { control, .. } => match &control.config {
            Control::Multipath(MultipathConfig::Bmc(c)) => Some(c),
            _ => None,
        },
        FlowKind::Cbr { .. } => None,
    }
}

/// What a BMC flow asks of the kernel controller that it cannot do, if anything.
pub(crate) fn bmc_unsupported(c: &BmcConfig) -> Option<String> {
    if (c.flowshares_p() - 1.0).abs() > 1e-12 {
        return Some(format!(
            "flowshares = {}: pw_bmc's weights sum to one TCP's share (flowshares = 1)",
            c.flowshares_p()
        ));
    }
    if !LOADS_CONTROLLERS {
        return Some(
            "BMC's proportion manager runs inside the emulator, and this build has no BPF \
             controllers (build with the BPF toolchain: `make kernel-deps setup`)"
                .to_string(),
        );
    }
    None
}

/// The initial weights of a BMC flow's `n` subflows (scaled to sum to one by the manager).
pub(crate) fn bmc_initial(c: &BmcConfig, n: usize) -> Option<Vec<f64>> {
    match c.initial_weights() {
        InitialWeights::Equal => None,
        InitialWeights::Weights(w) | InitialWeights::RateHints(w) => {
            let v = w.as_slice();
            (v.len() >= n).then(|| v[..n].to_vec())
        }
    }
}

/// `n` in base 36, lower case.
#[cfg_attr(not(feature = "kernel"), allow(dead_code))]
fn base36(mut n: u64) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The prefix of run number `number`: `e` and up to six base-36 digits (the kernel's names
/// are at most 15 characters, `PREFIX_coupled` included).
#[cfg_attr(not(feature = "kernel"), allow(dead_code))]
pub(crate) fn run_prefix(number: u64) -> String {
    let digits = base36(number % 36u64.pow(6));
    format!("e{digits}")
}

/// One BMC flow's manager and what it last decided, per scenario subflow (BMC is refused
/// without the `kernel` feature, so the fields are only read with it).
#[cfg_attr(not(feature = "kernel"), allow(dead_code))]
struct FlowManager {
    flow: usize,
    addrs: Vec<[u8; 4]>,
    initial: Option<Vec<f64>>,
    #[cfg(feature = "kernel")]
    manager: pathweave_kernel::bmc::Manager,
    weights: Vec<f64>,
    scores: Vec<f64>,
}

/// The kernel controllers of one run.
pub(crate) struct Controllers {
    prefix: String,
    #[cfg(feature = "kernel")]
    loaded: Option<pathweave_kernel::loader::Loaded>,
    managers: Vec<FlowManager>,
    /// Weight changes written to the kernel.
    pub(crate) weight_updates: u64,
}

impl Controllers {
    /// The controllers `s` needs, loaded for run `number` where this build can.
    /// `addrs[i]` are flow `i`'s local addresses, one per subflow.
    pub(crate) fn prepare(
        s: &Scenario,
        number: u64,
        addrs: &[Vec<[u8; 4]>],
        external: &[bool],
    ) -> Result<Controllers, EmuError> {
        let mut c = Controllers {
            prefix: String::new(),
            #[cfg(feature = "kernel")]
            loaded: None,
            managers: Vec::new(),
            weight_updates: 0,
        };
        if !needed(s, external) {
            return Ok(c);
        }
        for (i, f) in s.flows.iter().enumerate() {
            if crate::is_quic(f) || external[i] {
                continue; // a QUIC flow's BMC manager runs inside its sender
            }
            if let Some(cfg) = bmc_config(&f.kind) {
                c.managers.push(FlowManager {
                    flow: i,
                    addrs: addrs[i].clone(),
                    initial: bmc_initial(cfg, f.subflows.len()),
                    #[cfg(feature = "kernel")]
                    manager: pathweave_kernel::bmc::Manager::new(manager_config(cfg)),
                    weights: vec![f64::NAN; f.subflows.len()],
                    scores: vec![f64::NAN; f.subflows.len()],
                });
            }
        }
        c.prefix = PRELOADED_PREFIX.to_string();
        #[cfg(feature = "kernel")]
        {
            use pathweave_kernel::{KernelError, Prefix};
            let prefix = Prefix::new(&run_prefix(number))
                .map_err(|e| EmuError::Setup(format!("the controllers' prefix: {e}")))?;
            let loaded = pathweave_kernel::loader::Loaded::load(&prefix).map_err(|e| match e {
                KernelError::NotRoot(_) | KernelError::NoBtf | KernelError::NoStructOps(_) => {
                    EmuError::Environment(format!(
                        "the coupled algorithms run on pathweave's BPF controllers, which \
                         cannot be loaded here: {e}"
                    ))
                }
                other => EmuError::Setup(format!("loading the BPF controllers: {other}")),
            })?;
            c.prefix = prefix.as_str().to_string();
            c.loaded = Some(loaded);
        }
        #[cfg(not(feature = "kernel"))]
        let _ = number;
        Ok(c)
    }

    /// The prefix of the controllers this run uses ("" if it uses none).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The counters of the controllers loaded for this run, by name (empty if none).
    pub(crate) fn counters(&self) -> Vec<(String, u64)> {
        #[cfg(feature = "kernel")]
        if let Some(Ok(stats)) = self.loaded.as_ref().map(|l| l.stats()) {
            return stats
                .into_iter()
                .map(|(s, v)| (s.name().to_string(), v))
                .collect();
        }
        Vec::new()
    }

    /// The kernel congestion control for scenario algorithm `name` (`reno` for the rest).
    pub(crate) fn congestion(&self, name: &str) -> String {
        match coupled_suffix(name) {
            Some(suffix) if !self.prefix.is_empty() => format!("{}_{suffix}", self.prefix),
            _ => "reno".to_string(),
        }
    }

    /// At `now_s` seconds of the run: reads the connection map, ends the BMC periods that are
    /// due and writes the new weights.
    #[cfg(feature = "kernel")]
    pub(crate) fn tick(&mut self, now_s: f64) -> Result<(), EmuError> {
        let Some(loaded) = &self.loaded else {
            return Ok(());
        };
        if self.managers.is_empty() {
            return Ok(());
        }
        let read_err = |e| EmuError::Failed(format!("reading the BPF controllers' map: {e}"));
        let bmc = pathweave_kernel::Algorithm::Bmc.id();
        let conns: Vec<_> = loaded
            .connections()
            .map_err(read_err)?
            .into_iter()
            .filter(|c| c.algo == bmc)
            .collect();
        for m in &mut self.managers {
            let slot_subflow = |c: &pathweave_kernel::maps::Conn, i: usize| {
                let s = &c.slots[i];
                if s.used() {
                    m.addrs.iter().position(|a| *a == s.saddr)
                } else {
                    None
                }
            };
            let mine: Vec<_> = conns
                .iter()
                .filter(|c| (0..c.slots.len()).any(|i| slot_subflow(c, i).is_some()))
                .cloned()
                .collect();
            let initial = m.initial.clone();
            let updates = m.manager.tick(now_s, &mine, |c| {
                let given = initial.as_ref()?;
                let mut w = [0.0; pathweave_kernel::maps::SLOTS];
                for (i, x) in w.iter_mut().enumerate() {
                    *x = given.get(slot_subflow(c, i)?).copied().unwrap_or(0.0);
                }
                Some(w)
            });
            for u in updates {
                loaded
                    .set_weights(u.id, &u.weights)
                    .map_err(|e| EmuError::Failed(format!("writing BMC weights: {e}")))?;
                self.weight_updates += 1;
                let Some(c) = mine.iter().find(|c| c.id == u.id) else {
                    continue;
                };
                for i in 0..c.slots.len() {
                    if let Some(k) = slot_subflow(c, i) {
                        m.weights[k] = u.real[i];
                        m.scores[k] = u.scores[i];
                    }
                }
            }
        }
        Ok(())
    }

    /// Without the BPF build there is no manager to run.
    #[cfg(not(feature = "kernel"))]
    pub(crate) fn tick(&mut self, _now_s: f64) -> Result<(), EmuError> {
        Ok(())
    }

    /// Flow `flow`'s current BMC weights and last scores, per subflow.
    pub(crate) fn weights(&self, flow: usize) -> Option<(&[f64], &[f64])> {
        self.managers
            .iter()
            .find(|m| m.flow == flow)
            .map(|m| (m.weights.as_slice(), m.scores.as_slice()))
    }
}

#[cfg(feature = "kernel")]
fn manager_config(c: &BmcConfig) -> pathweave_kernel::bmc::ManagerConfig {
    use pathweave_kernel::bmc::{ManagerConfig, PeriodRule};
    ManagerConfig {
        k: c.gain_k(),
        tolerance: c.dead_band(),
        period: if !c.manages_proportions() {
            // Weights stay as set: a period that never ends.
            PeriodRule::Fixed(f64::INFINITY)
        } else {
            match c.period_rule() {
                Period::Auto => PeriodRule::Auto,
                Period::Fixed(j) => PeriodRule::Fixed(j.as_secs_f64()),
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_prefixes_are_valid_controller_prefixes() {
        for n in [0, 1, 35, 36, u64::from(u32::MAX) << 8 | 0xff, u64::MAX] {
            let p = run_prefix(n);
            assert!(p.len() <= 7 && p.starts_with('e'), "{p}");
            assert!(p[1..]
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
        }
        assert_eq!(run_prefix(36 * 36 + 35), "e10z");
    }

    #[test]
    fn the_coupled_algorithms_map_to_their_controllers() {
        assert_eq!(coupled_suffix("fully-coupled"), Some("coupled"));
        assert_eq!(coupled_suffix("lia"), Some("lia"));
        assert_eq!(coupled_suffix("uncoupled"), None);
        assert_eq!(coupled_suffix("kelly-voice"), Some("kv"));
        assert_eq!(coupled_suffix("kelly_voice"), None);
    }

    /// Every coupled algorithm runs on the kernel controller that pathweave-kernel registers
    /// for the same scenario name.
    #[cfg(feature = "kernel")]
    #[test]
    fn the_suffixes_are_pathweave_kernels() {
        use pathweave_kernel::Algorithm;
        for (name, suffix) in COUPLED {
            let a = Algorithm::from_scenario_name(name);
            assert_eq!(a.map(Algorithm::suffix), Some(suffix), "{name}");
        }
        assert_eq!(COUPLED.len(), Algorithm::ALL.len());
    }
}
