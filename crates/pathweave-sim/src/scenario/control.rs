//! A TCP flow's congestion control: `algorithm`, `arithmetic`, `counting` and each algorithm's
//! parameters, checked by building the controller's configuration.

use super::values::join;
use super::{LinkSpec, Profile, Reader, SubflowSpec, TcpSettings, R};
use pathweave_cc::cc::multipath::bmc::InitialWeights;
use pathweave_cc::cc::multipath::lia::APPROXIMATE_MAXIMUM;
use pathweave_cc::cc::multipath::rpmp::{RpMpDecrease, SlowStart};
use pathweave_cc::cc::multipath::{
    Algorithm, AnyMultipathController, Arithmetic, ConfigError, Counting, MultipathConfig,
    Period as BmcPeriod, Uncoupled, WindowConfig,
};
use pathweave_cc::cc::{AnyController, RenoConfig, VenoConfig, WestwoodConfig};
use pathweave_cc::{Bytes, Duration};
use toml::{Table, Value};

/// A TCP flow's congestion control as the scenario names it.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlSpec {
    /// The name as written, normalised (`"reno"` for single-path NewReno).
    pub name: String,
    /// The controller's configuration, validated.
    pub config: Control,
    /// `arithmetic` as written, None where the key is absent (the configuration holds the
    /// default then): the emulator refuses an arithmetic written out that the kernel lacks,
    /// and runs the kernel's own where none is written.
    pub written_arithmetic: Option<Arithmetic>,
    /// `counting` as written, None where the key is absent.
    pub written_counting: Option<Counting>,
}

/// A controller configuration: a multipath algorithm of `pathweave-cc`, or a single-path base
/// run independently on every subflow.
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// Any algorithm `MultipathConfig` knows (NewReno per subflow is `uncoupled`).
    Multipath(MultipathConfig),
    /// TCP Veno on every subflow.
    Veno(VenoConfig),
    /// TCP Westwood+ on every subflow.
    Westwood(WestwoodConfig),
}

impl Control {
    /// Check the configuration without building.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.build().map(|_| ())
    }

    /// The controller for one connection.
    pub fn build(&self) -> Result<AnyMultipathController, ConfigError> {
        Ok(match self {
            Control::Multipath(c) => c.build()?,
            Control::Veno(c) => {
                AnyMultipathController::Uncoupled(Uncoupled::new(AnyController::Veno(c.build()?)))
            }
            Control::Westwood(c) => AnyMultipathController::Uncoupled(Uncoupled::new(
                AnyController::WestwoodPlus(c.build()?),
            )),
        })
    }
}

/// The algorithm names a scenario may use: `reno` (NewReno; uncoupled on every subflow of a
/// multipath flow), the single-path bases `veno` and `westwood`, and the multipath algorithms
/// of `pathweave-cc`.
pub fn algorithm_names() -> Vec<&'static str> {
    let mut v = vec!["reno", "veno", "westwood"];
    v.extend(Algorithm::ALL.iter().map(|a| a.name()));
    v
}

/// The controller parameters a flow may set (each taken by some of the algorithms).
pub fn control_parameter_names() -> impl Iterator<Item = &'static str> {
    CONTROL_PARAMS.iter().map(|(name, _)| *name)
}

/// Controller parameters a flow may set, and the algorithms that take each.
pub(super) const CONTROL_PARAMS: &[(&str, &[&str])] = &[
    ("maximum", &["lia"]),
    ("beta", &["veno", "mpveno"]),
    ("gamma", &["mptcpw"]),
    ("weight", &["aimd"]),
    ("a", &["aimd"]),
    ("b", &["aimd"]),
    ("weights", &["bmc"]),
    ("rate_hints", &["bmc"]),
    ("flowshares", &["bmc"]),
    ("k", &["bmc"]),
    ("period", &["bmc"]),
    ("proportion_manager", &["bmc"]),
    ("tolerance", &["bmc"]),
    ("decrease", &["rpmp-v2"]),
    ("slow_start", &["rpmp-v2", "mptcp-bytes"]),
];

impl Reader<'_> {
    /// BMC §3.2: J must hold at least one congestion epoch, so at least one round trip. The
    /// propagation round trip of each subflow's path (both directions of every link) is known
    /// here; a fixed `period` below the longest is an error. (Queueing adds to the RTT at run
    /// time, where the controller raises J to the smoothed RTT.)
    pub(super) fn check_bmc_period(
        &self,
        t: &Table,
        path: &str,
        control: &ControlSpec,
        subflows: &[SubflowSpec],
        links: &[LinkSpec],
    ) -> R<()> {
        let Control::Multipath(MultipathConfig::Bmc(b)) = &control.config else {
            return Ok(());
        };
        let (BmcPeriod::Fixed(j), true) = (b.period_rule(), b.manages_proportions()) else {
            return Ok(());
        };
        let rtt = |sf: &SubflowSpec| -> Duration {
            let nanos = sf
                .path
                .iter()
                .map(|h| {
                    let l = &links[h.link];
                    l.forward.delay.0 + l.reverse.delay.0
                })
                .sum();
            Duration(nanos)
        };
        // The longest, the first of equals.
        let Some((k, longest)) =
            subflows
                .iter()
                .map(rtt)
                .enumerate()
                .reduce(|best, x| if x.1 > best.1 { x } else { best })
        else {
            return Ok(());
        };
        if j < longest {
            let which = if t.contains_key("subflows") {
                format!("{path}.subflows[{k}]")
            } else {
                format!("{path}.path")
            };
            let field = join(path, "period");
            let v = t.get("period").cloned().unwrap_or(Value::Boolean(false));
            return Err(self.invalid(
                &field,
                &v,
                format!(
                    "J must cover at least one round trip (BMC §3.2: one congestion epoch); \
                     {which} has a propagation round trip of {} ms, so J must be at least \
                     that (or \"auto\")",
                    longest.as_secs_f64() * 1e3
                ),
            ));
        }
        Ok(())
    }

    /// `algorithm`, `arithmetic` and `counting` of a TCP flow, checked by building the
    /// controller's configuration.
    pub(super) fn control(&self, t: &Table, path: &str, cfg: &TcpSettings) -> R<ControlSpec> {
        let field = join(path, "algorithm");
        let written = match t.get("algorithm") {
            None => "reno",
            Some(v) => self.string(&field, v)?,
        };
        let name = match written {
            "reno" | "newreno" => "reno".to_string(),
            "veno" | "westwood" => written.to_string(),
            other => match other.parse::<Algorithm>() {
                Ok(a) => a.name().to_string(),
                Err(_) => {
                    let v = t
                        .get("algorithm")
                        .cloned()
                        .unwrap_or(Value::String(other.into()));
                    return Err(self.invalid(
                        &field,
                        &v,
                        format!(
                            "unknown algorithm (allowed: {})",
                            algorithm_names().join(", ")
                        ),
                    ));
                }
            },
        };
        // A parameter the algorithm does not take is a mistake worth naming.
        for (key, algs) in CONTROL_PARAMS {
            if let Some(v) = t.get(*key) {
                if !algs.contains(&name.as_str()) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        format!("{key} applies to algorithm {} only", algs.join(", ")),
                    ));
                }
            }
        }
        let window = WindowConfig::default().initial_window(cfg.initial_window);
        let reno = RenoConfig::new(Bytes(cfg.mss as u64), cfg.initial_window);
        let mut config = match name.as_str() {
            "reno" => Control::Multipath(MultipathConfig::new(
                Algorithm::Uncoupled,
                Bytes(cfg.mss as u64),
                window,
            )),
            "veno" => {
                let mut c = VenoConfig::new(reno);
                if let Some(v) = t.get("beta") {
                    c = c.beta(self.number(&join(path, "beta"), v)?);
                }
                Control::Veno(c)
            }
            "westwood" => Control::Westwood(WestwoodConfig::new(reno)),
            _ => {
                let alg: Algorithm = name.parse().unwrap_or(Algorithm::Uncoupled);
                let mc = MultipathConfig::new(alg, Bytes(cfg.mss as u64), window);
                Control::Multipath(self.control_params(t, path, mc)?)
            }
        };
        let mut written_arithmetic = None;
        let mut written_counting = None;
        if let Some(v) = t.get("arithmetic") {
            let f = join(path, "arithmetic");
            let a: Arithmetic = self
                .string(&f, v)?
                .parse()
                .map_err(|_| self.invalid(&f, v, "allowed: \"spec\", \"linux\""))?;
            written_arithmetic = Some(a);
            config = match config {
                Control::Multipath(c) => Control::Multipath(
                    c.with_arithmetic(a)
                        .map_err(|e| self.invalid(&f, v, e.to_string()))?,
                ),
                _ => {
                    return Err(self.invalid(&f, v, format!("{name} has only the spec arithmetic")))
                }
            };
        }
        if written_arithmetic.is_none() && cfg.profile == Profile::Linux {
            // The profile's arithmetic, where the algorithm has it (the others have one).
            if let Control::Multipath(c) = config {
                if let Ok(linux) = c.with_arithmetic(Arithmetic::Linux) {
                    config = Control::Multipath(linux);
                }
            }
        }
        if let Some(v) = t.get("counting") {
            let f = join(path, "counting");
            let k: Counting = self
                .string(&f, v)?
                .parse()
                .map_err(|_| self.invalid(&f, v, "allowed: \"per-packet\", \"per-ack-event\""))?;
            written_counting = Some(k);
            config = match config {
                Control::Multipath(c) => Control::Multipath(
                    c.with_counting(k)
                        .map_err(|e| self.invalid(&f, v, e.to_string()))?,
                ),
                _ => return Err(self.invalid(&f, v, format!("{name} counts bytes like NewReno"))),
            };
        }
        if let Err(e) = config.validate() {
            if let Some((f, v)) = self.config_error_field(t, path, &e) {
                let message = match e {
                    // The one contradiction between two keys: name both.
                    ConfigError::OutOfRange {
                        parameter: APPROXIMATE_MAXIMUM,
                        ..
                    } => "lia: the approximate maximum exists only with arithmetic = \"spec\" \
                          (the linux arithmetic has its own best-path rule); remove maximum or \
                          arithmetic"
                        .to_string(),
                    e => e.to_string(),
                };
                return Err(self.invalid(&f, &v, message));
            }
            let v = t
                .get("algorithm")
                .cloned()
                .unwrap_or(Value::String(name.clone()));
            return Err(self.invalid(&field, &v, e.to_string()));
        }
        Ok(ControlSpec {
            name,
            config,
            written_arithmetic,
            written_counting,
        })
    }

    /// The key a controller's configuration error is about, with its value as written: the
    /// parameter the error names if the flow sets it (for a list, the offending item), else
    /// `None` (the error is about the algorithm as a whole).
    fn config_error_field(
        &self,
        t: &Table,
        path: &str,
        e: &ConfigError,
    ) -> Option<(String, Value)> {
        let (parameter, bad) = match e {
            ConfigError::OutOfRange {
                parameter, value, ..
            } => (*parameter, Some(*value)),
            ConfigError::ListLength { parameter, .. } => (*parameter, None),
            // The weights must sum to P: the list is what to change.
            ConfigError::WeightSum { .. } => ("weights", None),
            _ => return None,
        };
        let key = match parameter {
            APPROXIMATE_MAXIMUM => "maximum",
            p => p,
        };
        let v = t.get(key)?;
        if let (Value::Array(items), Some(bad)) = (v, bad) {
            let at = items
                .iter()
                .position(|x| self.number("", x).is_ok_and(|x| x == bad));
            if let Some(i) = at {
                return Some((format!("{path}.{key}[{i}]"), items[i].clone()));
            }
        }
        Some((join(path, key), v.clone()))
    }

    /// BMC's `weights` or `rate_hints` list one value per subflow in path-id order. A shorter
    /// list is the controller's documented rule (bmc.rs: a path beyond the list's end takes the
    /// list's mean as its base); a longer one names subflows that do not exist.
    pub(super) fn check_bmc_lists(
        &self,
        t: &Table,
        path: &str,
        control: &ControlSpec,
        n: usize,
    ) -> R<()> {
        let Control::Multipath(MultipathConfig::Bmc(b)) = &control.config else {
            return Ok(());
        };
        let (key, list) = match b.initial_weights() {
            InitialWeights::Weights(w) => ("weights", w),
            InitialWeights::RateHints(h) => ("rate_hints", h),
            InitialWeights::Equal => return Ok(()),
        };
        if list.len() > n {
            let v = t.get(key).cloned().unwrap_or(Value::Boolean(false));
            return Err(self.invalid(
                &join(path, key),
                &v,
                format!(
                    "{} values for {n} subflow{}; give at most one per subflow, in path-id order \
                     (a subflow beyond the list's end takes the list's mean)",
                    list.len(),
                    if n == 1 { "" } else { "s" }
                ),
            ));
        }
        Ok(())
    }

    /// `slow_start = "coupled" | "uncoupled"` of `rpmp-v2` and `mptcp-bytes`.
    fn slow_start_rule(&self, t: &Table, path: &str) -> R<Option<SlowStart>> {
        let Some(v) = t.get("slow_start") else {
            return Ok(None);
        };
        let f = join(path, "slow_start");
        match self.string(&f, v)? {
            "coupled" => Ok(Some(SlowStart::Coupled)),
            "uncoupled" => Ok(Some(SlowStart::Uncoupled)),
            _ => Err(self.invalid(&f, v, "allowed: \"coupled\", \"uncoupled\"")),
        }
    }

    /// The parameters of `mpveno`, `mptcpw`, `aimd`, `bmc`, `rpmp-v2` and `mptcp-bytes`.
    fn control_params(&self, t: &Table, path: &str, c: MultipathConfig) -> R<MultipathConfig> {
        let num = |k: &str| -> R<Option<f64>> {
            t.get(k).map(|v| self.number(&join(path, k), v)).transpose()
        };
        let list = |k: &str| -> R<Option<Vec<f64>>> {
            match t.get(k) {
                None => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| self.number(&format!("{path}.{k}[{i}]"), x))
                    .collect::<R<Vec<f64>>>()
                    .map(Some),
                Some(v) => Err(self.invalid(&join(path, k), v, "expected a list of numbers")),
            }
        };
        Ok(match c {
            MultipathConfig::Lia(m) => match t.get("maximum") {
                None => MultipathConfig::Lia(m),
                Some(v) => {
                    let approximate = match self.string(&join(path, "maximum"), v)? {
                        "exact" => false,
                        "approximate" => true,
                        _ => return Err(self.invalid(
                            &join(path, "maximum"),
                            v,
                            "allowed: \"exact\" (RFC 6356), \"approximate\" (the kernel module of \
                                 González Usach and Kühlewind, EUNICE 2012, §3)",
                        )),
                    };
                    MultipathConfig::Lia(m.approximate_max(approximate))
                }
            },
            MultipathConfig::MpVeno(mut m) => {
                if let Some(b) = num("beta")? {
                    m = m.beta(b);
                }
                MultipathConfig::MpVeno(m)
            }
            MultipathConfig::Mptcpw(mut m) => {
                if let Some(g) = num("gamma")? {
                    m = m.gamma(g);
                }
                MultipathConfig::Mptcpw(m)
            }
            MultipathConfig::RpMpV2(mut m) => {
                if let Some(v) = t.get("decrease") {
                    let f = join(path, "decrease");
                    m = m.decrease(match self.string(&f, v)? {
                        "reference" => RpMpDecrease::Reference,
                        "paper" => RpMpDecrease::Paper,
                        _ => return Err(self.invalid(&f, v, "allowed: \"reference\", \"paper\"")),
                    });
                }
                if let Some(ss) = self.slow_start_rule(t, path)? {
                    m = m.slow_start(ss);
                }
                MultipathConfig::RpMpV2(m)
            }
            MultipathConfig::MptcpBytes(mut m) => {
                if let Some(ss) = self.slow_start_rule(t, path)? {
                    m = m.slow_start(ss);
                }
                MultipathConfig::MptcpBytes(m)
            }
            MultipathConfig::Aimd(mut m) => {
                let (w, a, b) = (num("weight")?, num("a")?, num("b")?);
                if let (Some(_), Some(v)) = (w, t.get("a").or(t.get("b"))) {
                    return Err(self.invalid(
                        &join(path, "weight"),
                        v,
                        "give either weight (AIMD(D², 1/2)) or a and b, not both",
                    ));
                }
                if let Some(d) = w {
                    m = m.weight(d);
                }
                if let Some(a) = a {
                    m = m.increase(a);
                }
                if let Some(b) = b {
                    m = m.decrease(b);
                }
                MultipathConfig::Aimd(m)
            }
            MultipathConfig::Bmc(mut m) => {
                if let (Some(_), Some(v)) = (t.get("weights"), t.get("rate_hints")) {
                    return Err(self.invalid(
                        &join(path, "rate_hints"),
                        v,
                        "give either weights or rate_hints, not both",
                    ));
                }
                if let Some(p) = num("flowshares")? {
                    m = m.flowshares(p);
                }
                if let Some(d) = list("weights")? {
                    m = m.weights(&d);
                }
                if let Some(h) = list("rate_hints")? {
                    m = m.rate_hints(&h);
                }
                if let Some(k) = num("k")? {
                    m = m.k(k);
                }
                if let Some(v) = t.get("period") {
                    m = match v {
                        Value::String(s) if s == "auto" => m.auto_period(),
                        _ => m.period(self.positive_time(&join(path, "period"), v)?),
                    };
                }
                if let Some(x) = num("tolerance")? {
                    m = m.tolerance(x);
                }
                if let Some(v) = t.get("proportion_manager") {
                    m = m.proportion_manager(self.boolean(&join(path, "proportion_manager"), v)?);
                }
                MultipathConfig::Bmc(m)
            }
            other => other,
        })
    }
}
