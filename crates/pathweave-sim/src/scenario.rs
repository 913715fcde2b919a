//! Scenario files: TOML a person writes by hand, checked into a fully resolved [`Scenario`].
//!
//! Every error names the file, the field (as a path such as `link[2].rate`), the bad value and
//! what is allowed. Items with `count = N` are stamped out N times; inside them `{i}` (0-based)
//! and `{n}` (1-based) are replaced in every string, so `delay = "{n}/3 ms"` gives each copy
//! its own delay and `path = ["src{i}", "core", "dst{i}"]` its own access links.

use crate::link::{LinkDirSpec, LossModel, QueueSpec};
use crate::quantity::{clip, eval, parse_with_units, RATE_UNITS, SIZE_UNITS, TIME_UNITS};
use crate::red::RedParams;
use crate::tcp::{Period, Recovery, SchedulerKind, TcpConfig, Traffic};
use pathweave_cc::cc::multipath::bmc::InitialWeights;
use pathweave_cc::cc::multipath::lia::APPROXIMATE_MAXIMUM;
use pathweave_cc::cc::multipath::rpmp::{RpMpDecrease, SlowStart};
use pathweave_cc::cc::multipath::{
    Algorithm, AnyMultipathController, Arithmetic, ConfigError, Counting, MultipathConfig,
    Period as BmcPeriod, Uncoupled, WindowConfig,
};
use pathweave_cc::cc::{AnyController, RenoConfig, VenoConfig, WestwoodConfig};
use pathweave_cc::rtt::RtoConfig;
use pathweave_cc::{Bandwidth, Bytes, Duration, Instant};
use std::collections::BTreeMap;
use toml::{Table, Value};

/// The longest time a scenario may give (duration, delays, start and stop times, periods):
/// 10^7 s, about 116 days. In nanoseconds (10^16) it leaves the `u64` clock room for over a
/// thousand such times added together.
pub const MAX_TIME: Duration = Duration(10_000_000 * 1_000_000_000);
/// The fastest rate a link, event or cbr flow may have: 10 Tbit/s.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// The largest size (transfer, buffer, receive buffer): 10^12 bytes, written "1000GB".
pub const MAX_SIZE_BYTES: u64 = 1_000_000_000_000;
/// The largest TCP header (`header`): an Ethernet MTU, 1500 bytes.
pub const MAX_HEADER_BYTES: u32 = 1500;
/// The largest `min_rto`: the RTO's upper bound (RFC 6298 (2.5), `RtoConfig::max_rto`), 60 s,
/// which a larger minimum would silently become.
pub const MAX_MIN_RTO: Duration = Duration(60 * 1_000_000_000);
/// The shortest interval between a cbr flow's datagrams, 100 ns. The interval is a whole
/// number of nanoseconds rounded up, so at 100 ns the rate is at most 1% below the one given.
pub const MIN_CBR_INTERVAL: Duration = Duration(100);
/// The most rows the time series of one run may hold: every sample has one row per flow,
/// one per TCP subflow and one per sampled link direction (every link direction a path
/// traverses forward). 10^7 rows take about 1 GB at worst (a subflow row is 13 numbers); the
/// largest shipped scenario needs about 51 000.
pub const MAX_SAMPLE_ROWS: u64 = 10_000_000;
/// The largest seed: the largest TOML integer, 2^63 − 1.
pub const MAX_SEED: u64 = i64::MAX as u64;

/// A scenario that could not be loaded.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read the file: {message}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        message: String,
    },
    /// The file is not valid TOML.
    #[error("{file}: not valid TOML: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's description, with line and column.
        message: String,
    },
    /// A required field is absent.
    #[error("{file}: {field} is missing: {message}")]
    Missing {
        /// The file.
        file: String,
        /// The field's path.
        field: String,
        /// What is expected there.
        message: String,
    },
    /// A field has a bad value.
    #[error("{file}: {field} = {value}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// The field's path.
        field: String,
        /// The value as written.
        value: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// A TCP flow's congestion control as the scenario names it.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlSpec {
    /// The name as written, normalised (`"reno"` for single-path NewReno).
    pub name: String,
    /// The controller's configuration, validated.
    pub config: Control,
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

/// Controller parameters a flow may set, and the algorithms that take each.
const CONTROL_PARAMS: &[(&str, &[&str])] = &[
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

/// What a flow is.
// Specs are built once per run and never on the per-packet path, so the size of the TCP
// variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum FlowKind {
    /// A TCP flow.
    Tcp {
        /// Transport settings.
        cfg: TcpSettings,
        /// Congestion control.
        control: ControlSpec,
        /// What the application offers.
        traffic: Traffic,
    },
    /// An unresponsive constant-rate flow.
    Cbr {
        /// Sending rate.
        rate: Bandwidth,
        /// Datagram size on the wire.
        size: u32,
    },
}

/// TCP settings as written (a comparable copy of [`TcpConfig`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSettings {
    /// Payload bytes per segment.
    pub mss: u32,
    /// Header bytes per data segment.
    pub header: u32,
    /// ACK size on the wire.
    pub ack_size: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Minimum RTO.
    pub min_rto: Duration,
    /// Delayed-ACK timeout, if any.
    pub delayed_ack: Option<Duration>,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Connection-level receive buffer in bytes, `None` for unlimited.
    pub receive_buffer: Option<u64>,
    /// How a multipath connection spreads new data over its subflows.
    pub scheduler: SchedulerKind,
    /// Limited transmit (RFC 3042).
    pub limited_transmit: bool,
}

impl TcpSettings {
    /// The transport configuration.
    pub fn config(&self) -> TcpConfig {
        TcpConfig {
            mss: self.mss,
            header: self.header,
            ack_size: self.ack_size,
            initial_window: self.initial_window,
            rto: RtoConfig {
                min_rto: self.min_rto,
                ..RtoConfig::default()
            },
            delayed_ack: self.delayed_ack,
            recovery: self.recovery,
            dupthresh: 3,
            limited_transmit: self.limited_transmit,
            receive_buffer: self
                .receive_buffer
                .map(|b| b.div_ceil(self.mss as u64).clamp(1, u32::MAX as u64 - 1) as u32),
            scheduler: self.scheduler,
        }
    }
}

impl Default for TcpSettings {
    /// ns-2-like defaults: 1000-byte segments, 40-byte headers and ACKs, initial window 2,
    /// minimum RTO 200 ms, an ACK for every segment, NewReno recovery, no limited transmit
    /// (RFC 3042 is on in Linux, ns-3 and ns-2 — `singledup_ 1` — but the reproductions were
    /// validated without it; README, "Limited transmit").
    fn default() -> Self {
        TcpSettings {
            mss: 1000,
            header: 40,
            ack_size: 40,
            initial_window: 2,
            min_rto: Duration::from_millis(200),
            delayed_ack: None,
            recovery: Recovery::NewReno,
            receive_buffer: None,
            scheduler: SchedulerKind::MinRtt,
            limited_transmit: false,
        }
    }
}

/// One hop of a path: a link, traversed forward or (with a `~` prefix) in reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Index into [`Scenario::links`].
    pub link: usize,
    /// Traverse the link's reverse direction.
    pub reverse: bool,
}

/// A change to a link at a given time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkChange {
    /// New rate.
    Rate(Bandwidth),
    /// New propagation delay.
    Delay(Duration),
    /// Outage starts.
    Down,
    /// Outage ends.
    Up,
}

/// A scheduled link change (applies to both directions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkEvent {
    /// When.
    pub at: Instant,
    /// What.
    pub change: LinkChange,
}

/// A duplex link.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    /// Unique name.
    pub name: String,
    /// The direction paths traverse forward.
    pub forward: LinkDirSpec,
    /// The other direction (ACKs of forward flows).
    pub reverse: LinkDirSpec,
    /// Scheduled changes, in time order.
    pub events: Vec<LinkEvent>,
}

/// One subflow of a flow: its path and, for multipath connections, when it joins and leaves.
#[derive(Clone, Debug, PartialEq)]
pub struct SubflowSpec {
    /// Links from sender to receiver.
    pub path: Vec<Hop>,
    /// When it joins, if later than the flow's start.
    pub start: Option<Instant>,
    /// When it leaves, if it does.
    pub stop: Option<Instant>,
}

/// A flow.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// Unique name.
    pub name: String,
    /// Group for fairness statistics.
    pub group: String,
    /// TCP or CBR, with its settings.
    pub kind: FlowKind,
    /// The subflows: one for a single-path flow, one per path for a multipath connection.
    pub subflows: Vec<SubflowSpec>,
    /// When it starts.
    pub start: Instant,
    /// When it stops offering new data, if before the end.
    pub stop: Option<Instant>,
}

/// A fully resolved, validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Where it came from (file name or a label).
    pub source: String,
    /// Its name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Simulated time.
    pub duration: Duration,
    /// Seed of every random stream.
    pub seed: u64,
    /// Time-series sampling interval.
    pub sample_interval: Duration,
    /// Links, in file order after expansion.
    pub links: Vec<LinkSpec>,
    /// Flows, in file order after expansion.
    pub flows: Vec<FlowSpec>,
}

impl Scenario {
    /// Read and validate a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Io {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Scenario::parse(&text, &file, &stem)
    }

    /// Validate scenario text; `file` labels errors and `default_name` names an unnamed scenario.
    pub fn parse(text: &str, file: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
        let table: Table = text
            .parse()
            .map_err(|e: toml::de::Error| ScenarioError::Syntax {
                file: file.to_string(),
                message: e.to_string().trim_end().to_string(),
            })?;
        Reader { file }.scenario(&table, default_name)
    }

    /// Index of the link called `name`.
    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }
}

struct Reader<'a> {
    file: &'a str,
}

type R<T> = Result<T, ScenarioError>;

/// A value as an error repeats it: tables elided, long arrays counted, at most
/// [`MAX_ECHO_CHARS`](crate::quantity::MAX_ECHO_CHARS) characters.
fn show(v: &Value) -> String {
    match v {
        Value::Table(_) => "{…}".into(),
        Value::Array(a) if a.len() > 6 => format!("[… {} items]", a.len()),
        other => clip(&other.to_string()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Replace `{i}` and `{n}` in every string of `v`.
fn substitute(v: &Value, i: usize) -> Value {
    match v {
        Value::String(s) => Value::String(
            s.replace("{i}", &i.to_string())
                .replace("{n}", &(i + 1).to_string()),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, i)).collect()),
        Value::Table(t) => Value::Table(
            t.iter()
                .map(|(k, x)| (k.clone(), substitute(x, i)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl Reader<'_> {
    fn invalid(&self, field: &str, v: &Value, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            file: self.file.to_string(),
            field: field.to_string(),
            value: show(v),
            message: message.into(),
        }
    }

    fn missing(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Missing {
            file: self.file.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn check_keys(&self, t: &Table, path: &str, allowed: &[&str]) -> R<()> {
        for (k, v) in t {
            if !allowed.contains(&k.as_str()) {
                return Err(self.invalid(
                    &join(path, &clip(k)),
                    v,
                    format!("unknown field (allowed here: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn number(&self, field: &str, v: &Value) -> R<f64> {
        match v {
            Value::Integer(i) => Ok(*i as f64),
            Value::Float(f) if !f.is_finite() => Err(self.invalid(
                field,
                v,
                "expected a finite number (inf and nan are not allowed)",
            )),
            Value::Float(f) => Ok(*f),
            Value::String(s) => eval(s).map_err(|e| {
                self.invalid(
                    field,
                    v,
                    format!("{e}; expected a number or an arithmetic expression such as \"1/3\""),
                )
            }),
            _ => Err(self.invalid(
                field,
                v,
                format!("expected a number, found {}", type_name(v)),
            )),
        }
    }

    fn quantity(&self, field: &str, v: &Value, units: &[(&str, f64)], what: &str) -> R<f64> {
        match v {
            Value::String(s) => parse_with_units(s, units)
                .map_err(|e| self.invalid(field, v, format!("{e}; expected {what}"))),
            _ => Err(self.invalid(
                field,
                v,
                format!(
                    "expected {what} as a string with a unit, found {}",
                    type_name(v)
                ),
            )),
        }
    }

    fn time(&self, field: &str, v: &Value) -> R<Duration> {
        let ns = self.quantity(field, v, TIME_UNITS, "a time such as \"20ms\"")?;
        if ns < 0.0 {
            return Err(self.invalid(field, v, "a time cannot be negative"));
        }
        let ns = ns.round();
        if ns > MAX_TIME.0 as f64 {
            return Err(self.invalid(
                field,
                v,
                "a time must be at most 10000000s (10^7 s, about 116 days)",
            ));
        }
        Ok(Duration(ns as u64))
    }

    fn positive_time(&self, field: &str, v: &Value) -> R<Duration> {
        let d = self.time(field, v)?;
        if d == Duration::ZERO {
            return Err(self.invalid(field, v, "must be greater than zero"));
        }
        Ok(d)
    }

    fn rate(&self, field: &str, v: &Value) -> R<Bandwidth> {
        let bps = self.quantity(field, v, RATE_UNITS, "a rate such as \"60Mbps\"")?;
        if bps < 1.0 {
            return Err(self.invalid(field, v, "a rate must be positive (at least 1bps)"));
        }
        let bps = bps.round();
        if bps > MAX_RATE_BPS as f64 {
            return Err(self.invalid(field, v, "a rate must be at most 10Tbps"));
        }
        Ok(Bandwidth::from_bps(bps as u64))
    }

    fn size(&self, field: &str, v: &Value) -> R<u64> {
        let b = self.quantity(
            field,
            v,
            SIZE_UNITS,
            "a size such as \"1000B\" or \"1.5MB\"",
        )?;
        if b < 1.0 {
            return Err(self.invalid(field, v, "a size must be at least 1B"));
        }
        let b = b.round();
        if b > MAX_SIZE_BYTES as f64 {
            return Err(self.invalid(field, v, "a size must be at most 1000GB (10^12 bytes)"));
        }
        Ok(b as u64)
    }

    fn small_size(&self, field: &str, v: &Value, max: u64) -> R<u32> {
        let b = self.size(field, v)?;
        if b > max {
            return Err(self.invalid(field, v, format!("must be at most {max}B")));
        }
        Ok(b as u32)
    }

    fn whole(&self, field: &str, v: &Value, min: u64, max: u64) -> R<u64> {
        let x = self.number(field, v)?;
        if x.fract() != 0.0 || x < min as f64 || x > max as f64 {
            return Err(self.invalid(
                field,
                v,
                format!("expected a whole number from {min} to {max}"),
            ));
        }
        Ok(x as u64)
    }

    /// A number, or the string "auto" (`None`): a RED setting ns-2.35 can derive itself.
    fn number_or_auto(&self, field: &str, v: &Value, what: &str) -> R<Option<f64>> {
        match v {
            Value::String(s) if s.trim() == "auto" => Ok(None),
            Value::String(s) => eval(s).map(Some).map_err(|e| {
                self.invalid(
                    field,
                    v,
                    format!("{e}; expected {what} or \"auto\" (ns-2.35's automatic rule)"),
                )
            }),
            Value::Integer(i) => Ok(Some(*i as f64)),
            Value::Float(f) if !f.is_finite() => Err(self.invalid(
                field,
                v,
                format!(
                    "expected {what} (a finite number; inf and nan are not allowed) or \"auto\""
                ),
            )),
            Value::Float(f) => Ok(Some(*f)),
            _ => Err(self.invalid(
                field,
                v,
                format!(
                    "expected {what} or \"auto\" (ns-2.35's automatic rule), found {}",
                    type_name(v)
                ),
            )),
        }
    }

    fn probability(&self, field: &str, v: &Value) -> R<f64> {
        let p = self.number(field, v)?;
        if !(0.0..=1.0).contains(&p) {
            return Err(self.invalid(field, v, "a probability must be between 0 and 1"));
        }
        Ok(p)
    }

    fn boolean(&self, field: &str, v: &Value) -> R<bool> {
        v.as_bool().ok_or_else(|| {
            self.invalid(
                field,
                v,
                format!("expected true or false, found {}", type_name(v)),
            )
        })
    }

    fn string<'v>(&self, field: &str, v: &'v Value) -> R<&'v str> {
        v.as_str().ok_or_else(|| {
            self.invalid(
                field,
                v,
                format!("expected a string, found {}", type_name(v)),
            )
        })
    }

    fn name(&self, field: &str, v: &Value) -> R<String> {
        let s = self.string(field, v)?;
        if s.is_empty()
            || s.starts_with('~')
            || s.chars().any(|c| c.is_whitespace() || c == '{' || c == '}')
        {
            return Err(self.invalid(
                field,
                v,
                "a name must be non-empty, without spaces or braces, and not start with '~'",
            ));
        }
        Ok(s.to_string())
    }

    fn table<'v>(&self, field: &str, v: &'v Value) -> R<&'v Table> {
        v.as_table().ok_or_else(|| {
            self.invalid(
                field,
                v,
                format!("expected a table, found {}", type_name(v)),
            )
        })
    }

    fn array_of_tables<'v>(&self, root: &'v Table, key: &str) -> R<Vec<&'v Table>> {
        match root.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| self.table(&format!("{key}[{i}]"), v))
                .collect(),
            Some(v) => Err(self.invalid(key, v, format!("expected [[{key}]] tables"))),
        }
    }

    /// Expand `count`: the copies of an item, each with `{i}`/`{n}` substituted.
    fn expand(&self, t: &Table, path: &str) -> R<Vec<Table>> {
        let Some(cv) = t.get("count") else {
            return Ok(vec![t.clone()]);
        };
        let field = join(path, "count");
        let n = self.whole(&field, cv, 1, 100_000)? as usize;
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        if n > 1 && !name.contains("{i}") && !name.contains("{n}") {
            return Err(self.invalid(
                &field,
                cv,
                format!("with count > 1 the name (\"{}\") must contain {{i}} or {{n}} so each copy is unique", clip(name)),
            ));
        }
        let mut base = t.clone();
        base.remove("count");
        Ok((0..n)
            .map(|i| match substitute(&Value::Table(base.clone()), i) {
                Value::Table(t) => t,
                _ => Table::new(),
            })
            .collect())
    }

    fn scenario(&self, root: &Table, default_name: &str) -> R<Scenario> {
        self.check_keys(
            root,
            "",
            &[
                "name",
                "description",
                "duration",
                "seed",
                "sample_interval",
                "tcp",
                "link",
                "flow",
                "sweep",
            ],
        )?;
        // `[sweep]` describes a grid of variants of this scenario; `pathweave sweep` expands it
        // and the simulator runs each resolved point, so here it only has to be a table.
        if let Some(v) = root.get("sweep") {
            self.table("sweep", v)?;
        }
        let name = match root.get("name") {
            Some(v) => self.string("name", v)?.to_string(),
            None => default_name.to_string(),
        };
        let description = match root.get("description") {
            Some(v) => self.string("description", v)?.to_string(),
            None => String::new(),
        };
        let duration = match root.get("duration") {
            Some(v) => self.positive_time("duration", v)?,
            None => {
                return Err(self.missing(
                    "duration",
                    "give the simulated time, e.g. duration = \"100s\"",
                ))
            }
        };
        let seed = match root.get("seed") {
            Some(v) => self.seed(v)?,
            None => 1,
        };
        let sample_interval = match root.get("sample_interval") {
            Some(v) => self.positive_time("sample_interval", v)?,
            None => Duration::from_millis(100),
        };
        let tcp_defaults = match root.get("tcp") {
            Some(v) => {
                let t = self.table("tcp", v)?;
                self.check_keys(t, "tcp", TCP_KEYS)?;
                self.tcp_settings(t, "tcp", TcpSettings::default())?
            }
            None => TcpSettings::default(),
        };

        let mut links: Vec<LinkSpec> = Vec::new();
        let mut link_names: BTreeMap<String, String> = BTreeMap::new();
        for (k, t) in self.array_of_tables(root, "link")?.into_iter().enumerate() {
            let path = format!("link[{k}]");
            for copy in self.expand(t, &path)? {
                let l = self.link(&copy, &path, duration)?;
                if let Some(prev) = link_names.get(&l.name) {
                    return Err(self.invalid(
                        &format!("{path}.name"),
                        &Value::String(l.name.clone()),
                        format!(
                            "duplicate link name (already used by {prev}); names must be unique"
                        ),
                    ));
                }
                link_names.insert(l.name.clone(), path.clone());
                links.push(l);
            }
        }

        let mut flows: Vec<FlowSpec> = Vec::new();
        let mut flow_names: BTreeMap<String, String> = BTreeMap::new();
        let flow_tables = self.array_of_tables(root, "flow")?;
        if flow_tables.is_empty() {
            return Err(self.missing("flow", "a scenario needs at least one [[flow]]"));
        }
        for (k, t) in flow_tables.into_iter().enumerate() {
            let path = format!("flow[{k}]");
            let group_default = t
                .get("name")
                .and_then(Value::as_str)
                .map(|s| {
                    s.replace("{i}", "")
                        .replace("{n}", "")
                        .trim_end_matches(['-', '_', '.'])
                        .to_string()
                })
                .unwrap_or_default();
            for copy in self.expand(t, &path)? {
                let f = self.flow(
                    &copy,
                    &path,
                    &links,
                    &tcp_defaults,
                    &group_default,
                    duration,
                )?;
                if let Some(prev) = flow_names.get(&f.name) {
                    return Err(self.invalid(
                        &format!("{path}.name"),
                        &Value::String(f.name.clone()),
                        format!(
                            "duplicate flow name (already used by {prev}); names must be unique"
                        ),
                    ));
                }
                flow_names.insert(f.name.clone(), path.clone());
                flows.push(f);
            }
        }
        self.check_sample_rows(root, duration, sample_interval, &flows)?;
        Ok(Scenario {
            source: self.file.to_string(),
            name,
            description,
            duration,
            seed,
            sample_interval,
            links,
            flows,
        })
    }

    /// `seed`: an integer from 0 to [`MAX_SEED`], the largest TOML integer. A float or an
    /// expression must be exact in floating point, so at most 2^53.
    fn seed(&self, v: &Value) -> R<u64> {
        const EXACT: u64 = 1 << 53;
        match v {
            Value::Integer(i) => u64::try_from(*i).map_err(|_| {
                self.invalid(
                    "seed",
                    v,
                    format!("expected a whole number from 0 to {MAX_SEED} (2^63 - 1, the largest TOML integer)"),
                )
            }),
            _ => {
                let x = self.number("seed", v)?;
                if x.fract() != 0.0 || !(0.0..=EXACT as f64).contains(&x) {
                    return Err(self.invalid(
                        "seed",
                        v,
                        format!(
                            "expected a whole number from 0 to {EXACT} (2^53, exact as a float \
                             or an expression); write a larger seed as a TOML integer, at most \
                             {MAX_SEED}"
                        ),
                    ));
                }
                Ok(x as u64)
            }
        }
    }

    /// The time series hold one row per sample for every flow, TCP subflow and sampled link
    /// direction; refuse a run whose rows would exceed [`MAX_SAMPLE_ROWS`].
    fn check_sample_rows(
        &self,
        root: &Table,
        duration: Duration,
        interval: Duration,
        flows: &[FlowSpec],
    ) -> R<()> {
        // The sampler fires at every multiple of the interval up to the end.
        let samples = duration.as_nanos() / interval.as_nanos().max(1);
        let subflows: usize = flows
            .iter()
            .filter(|f| matches!(f.kind, FlowKind::Tcp { .. }))
            .map(|f| f.subflows.len())
            .sum();
        let directions: std::collections::BTreeSet<(usize, bool)> = flows
            .iter()
            .flat_map(|f| &f.subflows)
            .flat_map(|sf| &sf.path)
            .map(|h| (h.link, h.reverse))
            .collect();
        let per_sample = (flows.len() + subflows + directions.len()) as u128;
        let rows = samples as u128 * per_sample;
        if rows > MAX_SAMPLE_ROWS as u128 {
            let v = root
                .get("sample_interval")
                .cloned()
                .unwrap_or(Value::String("100ms".into()));
            return Err(self.invalid(
                "sample_interval",
                &v,
                format!(
                    "the time series would hold {rows} rows ({samples} samples of {} flows, \
                     {subflows} TCP subflows and {} sampled link directions), more than \
                     {MAX_SAMPLE_ROWS}; use a longer sample_interval, a shorter duration or \
                     fewer flows",
                    flows.len(),
                    directions.len()
                ),
            ));
        }
        Ok(())
    }

    fn queue(&self, v: &Value, path: &str, rate: Bandwidth, delay: Duration) -> R<QueueSpec> {
        let t = self.table(path, v)?;
        let kind = match t.get("type") {
            Some(k) => self.string(&join(path, "type"), k)?,
            None => {
                return Err(self.missing(&join(path, "type"), "give type = \"droptail\" or \"red\""))
            }
        };
        match kind {
            "droptail" => {
                self.check_keys(t, path, &["type", "limit"])?;
                let limit = match t.get("limit") {
                    Some(v) => self.limit(&join(path, "limit"), v)?,
                    None => crate::link::Limit::Packets(50),
                };
                Ok(QueueSpec::DropTail(limit))
            }
            "red" => {
                self.check_keys(
                    t,
                    path,
                    &[
                        "type",
                        "limit",
                        "min_th",
                        "max_th",
                        "max_p",
                        "w_q",
                        "gentle",
                        "wait",
                        "mode",
                        "mean_pkt_size",
                        "target_delay",
                    ],
                )?;
                let mut p = RedParams::default();
                if let Some(v) = t.get("limit") {
                    match self.limit(&join(path, "limit"), v)? {
                        crate::link::Limit::Packets(n) => p.limit = n,
                        crate::link::Limit::Bytes(_) => {
                            return Err(self.invalid(
                                &join(path, "limit"),
                                v,
                                "RED's limit is a number of packets (\"50pkt\"); with mode = \"bytes\" \
                                 it counts units of mean_pkt_size, as ns-2's does",
                            ))
                        }
                    }
                }
                // `None` stands for "auto": ns-2.35's rule, resolved below from this link's
                // rate and delay once mean_pkt_size is known (see red.rs).
                let threshold = |key: &str, default: f64| -> R<Option<f64>> {
                    match t.get(key) {
                        Some(v) => self.number_or_auto(&join(path, key), v, "a number of packets"),
                        None => Ok(Some(default)),
                    }
                };
                let min_th = threshold("min_th", p.min_th)?;
                let max_th = threshold("max_th", p.max_th)?;
                if let Some(v) = t.get("max_p") {
                    p.max_p = self.probability(&join(path, "max_p"), v)?;
                }
                let w_q = match t.get("w_q") {
                    Some(v) => {
                        let w = self.number_or_auto(&join(path, "w_q"), v, "a weight in (0, 1]")?;
                        if w.is_some_and(|w| !(w > 0.0 && w <= 1.0)) {
                            return Err(self.invalid(
                                &join(path, "w_q"),
                                v,
                                "w_q must be in (0, 1], or \"auto\" for ns-2.35's rule",
                            ));
                        }
                        w
                    }
                    None => Some(p.w_q),
                };
                let mut target_delay = crate::red::NS2_TARGET_DELAY;
                if let Some(v) = t.get("target_delay") {
                    target_delay = self.positive_time(&join(path, "target_delay"), v)?;
                    if min_th.is_some() {
                        return Err(self.invalid(
                            &join(path, "target_delay"),
                            v,
                            "target_delay only sets min_th = \"auto\" (ns-2.35's targetdelay_); \
                             give min_th = \"auto\" or drop target_delay",
                        ));
                    }
                }
                if let Some(v) = t.get("gentle") {
                    p.gentle = self.boolean(&join(path, "gentle"), v)?;
                }
                if let Some(v) = t.get("wait") {
                    p.wait = self.boolean(&join(path, "wait"), v)?;
                }
                if let Some(v) = t.get("mode") {
                    p.bytes = match self.string(&join(path, "mode"), v)? {
                        "packets" => false,
                        "bytes" => true,
                        _ => {
                            return Err(self.invalid(
                                &join(path, "mode"),
                                v,
                                "allowed: \"packets\", \"bytes\"",
                            ))
                        }
                    };
                }
                if let Some(v) = t.get("mean_pkt_size") {
                    p.mean_pktsize = self.small_size(&join(path, "mean_pkt_size"), v, 65_535)?;
                }
                let any_auto = min_th.is_none() || max_th.is_none() || w_q.is_none();
                p.min_th = min_th
                    .unwrap_or_else(|| crate::red::auto_min_th(rate, p.mean_pktsize, target_delay));
                p.max_th = max_th.unwrap_or_else(|| crate::red::auto_max_th(p.min_th));
                p.w_q = w_q.unwrap_or_else(|| crate::red::auto_w_q(rate, p.mean_pktsize, delay));
                if !(p.min_th >= 0.0 && p.max_th > p.min_th) {
                    let v = t
                        .get("max_th")
                        .or(t.get("min_th"))
                        .cloned()
                        .unwrap_or(Value::Float(p.max_th));
                    return Err(self.invalid(
                        &join(path, "max_th"),
                        &v,
                        format!(
                            "need 0 ≤ min_th < max_th (min_th = {}, max_th = {}{})",
                            p.min_th,
                            p.max_th,
                            if any_auto {
                                ", with \"auto\" resolved for this link"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
                Ok(QueueSpec::Red(p))
            }
            _ => Err(self.invalid(
                &join(path, "type"),
                &Value::String(kind.into()),
                "allowed: \"droptail\", \"red\"",
            )),
        }
    }

    fn limit(&self, field: &str, v: &Value) -> R<crate::link::Limit> {
        if let Value::String(s) = v {
            if let Some(n) = s.trim().strip_suffix("pkt") {
                let x = eval(n).map_err(|e| self.invalid(field, v, e))?;
                if x.fract() != 0.0 || !(1.0..=1e9).contains(&x) {
                    return Err(self.invalid(
                        field,
                        v,
                        "a packet limit must be a whole number ≥ 1, e.g. \"100pkt\"",
                    ));
                }
                return Ok(crate::link::Limit::Packets(x as u32));
            }
        }
        let b = self.quantity(
            field,
            v,
            SIZE_UNITS,
            "a buffer size such as \"100pkt\" or \"150KB\"",
        )?;
        if b < 1.0 {
            return Err(self.invalid(field, v, "a buffer must hold at least 1B"));
        }
        let b = b.round();
        if b > MAX_SIZE_BYTES as f64 {
            return Err(self.invalid(
                field,
                v,
                "a buffer must hold at most 1000GB (10^12 bytes), or give packets (\"100pkt\")",
            ));
        }
        Ok(crate::link::Limit::Bytes(b as u64))
    }

    fn link(&self, t: &Table, path: &str, duration: Duration) -> R<LinkSpec> {
        self.check_keys(
            t,
            path,
            &[
                "name",
                "rate",
                "delay",
                "queue",
                "loss",
                "reverse_loss",
                "event",
            ],
        )?;
        let name = match t.get("name") {
            Some(v) => self.name(&join(path, "name"), v)?,
            None => return Err(self.missing(&join(path, "name"), "every link needs a unique name")),
        };
        let rate = match t.get("rate") {
            Some(v) => self.rate(&join(path, "rate"), v)?,
            None => return Err(self.missing(&join(path, "rate"), "give a rate such as \"60Mbps\"")),
        };
        let delay = match t.get("delay") {
            Some(v) => self.time(&join(path, "delay"), v)?,
            None => {
                return Err(self.missing(
                    &join(path, "delay"),
                    "give a propagation delay such as \"10ms\"",
                ))
            }
        };
        let queue = match t.get("queue") {
            Some(v) => self.queue(v, &join(path, "queue"), rate, delay)?,
            None => QueueSpec::DropTail(crate::link::Limit::Packets(50)),
        };
        let loss = |key: &str| -> R<LossModel> {
            match t.get(key) {
                Some(v) => self.loss_model(v, &join(path, key)),
                None => Ok(LossModel::None),
            }
        };
        let forward = LinkDirSpec {
            rate,
            delay,
            queue: queue.clone(),
            loss: loss("loss")?,
        };
        let reverse = LinkDirSpec {
            rate,
            delay,
            queue,
            loss: loss("reverse_loss")?,
        };
        let mut events = Vec::new();
        // Outages as (from, to, event index), to refuse overlapping ones.
        let mut outages: Vec<(Instant, Instant, usize)> = Vec::new();
        if let Some(ev) = t.get("event") {
            let Value::Array(list) = ev else {
                return Err(self.invalid(
                    &join(path, "event"),
                    ev,
                    "expected [[link.event]] tables",
                ));
            };
            for (k, e) in list.iter().enumerate() {
                let epath = format!("{path}.event[{k}]");
                let et = self.table(&epath, e)?;
                self.check_keys(et, &epath, &["at", "rate", "delay", "down"])?;
                let at = match et.get("at") {
                    Some(v) => self.time(&join(&epath, "at"), v)?,
                    None => {
                        return Err(self.missing(&join(&epath, "at"), "give the time of the change"))
                    }
                };
                if at > duration {
                    let v = et.get("at").cloned().unwrap_or(Value::Integer(0));
                    return Err(self.invalid(
                        &join(&epath, "at"),
                        &v,
                        "is after the end of the simulation",
                    ));
                }
                let at = Instant(at.as_nanos());
                let mut any = false;
                if let Some(v) = et.get("rate") {
                    events.push(LinkEvent {
                        at,
                        change: LinkChange::Rate(self.rate(&join(&epath, "rate"), v)?),
                    });
                    any = true;
                }
                if let Some(v) = et.get("delay") {
                    events.push(LinkEvent {
                        at,
                        change: LinkChange::Delay(self.time(&join(&epath, "delay"), v)?),
                    });
                    any = true;
                }
                if let Some(v) = et.get("down") {
                    let d = self.positive_time(&join(&epath, "down"), v)?;
                    events.push(LinkEvent {
                        at,
                        change: LinkChange::Down,
                    });
                    events.push(LinkEvent {
                        at: at + d,
                        change: LinkChange::Up,
                    });
                    outages.push((at, at + d, k));
                    any = true;
                }
                if !any {
                    return Err(self.missing(&epath, "an event changes rate, delay, or takes the link down for a time (down = \"2s\")"));
                }
            }
        }
        outages.sort_by_key(|o| (o.0, o.2));
        for w in outages.windows(2) {
            let ((from, to, k), (next, _, j)) = (w[0], w[1]);
            if next <= to {
                let epath = format!("{path}.event[{j}]");
                let v = t
                    .get("event")
                    .and_then(|e| e.get(j))
                    .and_then(|e| e.get("at"))
                    .cloned()
                    .unwrap_or(Value::Boolean(false));
                return Err(self.invalid(
                    &join(&epath, "at"),
                    &v,
                    format!(
                        "this outage starts at {} s, before or as the outage of {path}.event[{k}] \
                         ({} s to {} s) ends; outages of one link must not overlap or touch \
                         (give one event with the whole down time)",
                        next.0 as f64 / 1e9,
                        from.0 as f64 / 1e9,
                        to.0 as f64 / 1e9
                    ),
                ));
            }
        }
        events.sort_by_key(|e| e.at);
        Ok(LinkSpec {
            name,
            forward,
            reverse,
            events,
        })
    }

    /// `loss = 0.01` (Bernoulli), `{ model = "bernoulli", p = 0.01 }`, or
    /// `{ model = "gilbert-elliott", good_to_bad, bad_to_good, loss_good = 0, loss_bad = 1 }`.
    fn loss_model(&self, v: &Value, path: &str) -> R<LossModel> {
        let Value::Table(t) = v else {
            let p = self.probability(path, v)?;
            return Ok(if p > 0.0 {
                LossModel::Bernoulli(p)
            } else {
                LossModel::None
            });
        };
        let model = match t.get("model") {
            Some(m) => self.string(&join(path, "model"), m)?,
            None => {
                return Err(self.missing(
                    &join(path, "model"),
                    "give model = \"bernoulli\" or \"gilbert-elliott\"",
                ))
            }
        };
        let prob = |k: &str, default: Option<f64>| -> R<f64> {
            match (t.get(k), default) {
                (Some(x), _) => self.probability(&join(path, k), x),
                (None, Some(d)) => Ok(d),
                (None, None) => {
                    Err(self.missing(&join(path, k), "give a probability between 0 and 1"))
                }
            }
        };
        match model {
            "bernoulli" => {
                self.check_keys(t, path, &["model", "p"])?;
                let p = prob("p", None)?;
                Ok(if p > 0.0 {
                    LossModel::Bernoulli(p)
                } else {
                    LossModel::None
                })
            }
            "gilbert-elliott" => {
                self.check_keys(
                    t,
                    path,
                    &[
                        "model",
                        "good_to_bad",
                        "bad_to_good",
                        "loss_good",
                        "loss_bad",
                    ],
                )?;
                let m = LossModel::GilbertElliott {
                    good_to_bad: prob("good_to_bad", None)?,
                    bad_to_good: prob("bad_to_good", None)?,
                    loss_good: prob("loss_good", Some(0.0))?,
                    loss_bad: prob("loss_bad", Some(1.0))?,
                };
                if let LossModel::GilbertElliott {
                    good_to_bad,
                    bad_to_good,
                    ..
                } = m
                {
                    if good_to_bad + bad_to_good == 0.0 {
                        return Err(self.invalid(
                            &join(path, "bad_to_good"),
                            t.get("bad_to_good").unwrap_or(v),
                            "good_to_bad and bad_to_good cannot both be 0",
                        ));
                    }
                }
                Ok(m)
            }
            _ => Err(self.invalid(
                &join(path, "model"),
                t.get("model").unwrap_or(v),
                "allowed: \"bernoulli\", \"gilbert-elliott\"",
            )),
        }
    }

    fn tcp_settings(&self, t: &Table, path: &str, mut s: TcpSettings) -> R<TcpSettings> {
        if let Some(v) = t.get("mss") {
            s.mss = self.small_size(&join(path, "mss"), v, 65_000)?;
        }
        if let Some(v) = t.get("header") {
            s.header = self.header(&join(path, "header"), v)?;
        }
        if let Some(v) = t.get("ack_size") {
            s.ack_size = self.small_size(&join(path, "ack_size"), v, 65_000)?;
        }
        if let Some(v) = t.get("initial_window") {
            s.initial_window = self.whole(&join(path, "initial_window"), v, 1, 1000)? as u32;
        }
        if let Some(v) = t.get("min_rto") {
            let f = join(path, "min_rto");
            s.min_rto = self.positive_time(&f, v)?;
            if s.min_rto > MAX_MIN_RTO {
                return Err(self.invalid(
                    &f,
                    v,
                    "must be at most 60s, the RTO's upper bound (RFC 6298 (2.5))",
                ));
            }
        }
        if let Some(v) = t.get("delayed_ack") {
            let f = join(path, "delayed_ack");
            s.delayed_ack = match v {
                Value::Boolean(false) => None,
                Value::Boolean(true) => Some(Duration::from_millis(100)),
                _ => Some(self.positive_time(&f, v)?),
            };
        }
        if let Some(v) = t.get("receive_buffer") {
            let f = join(path, "receive_buffer");
            s.receive_buffer = match v {
                Value::Boolean(false) => None,
                _ => Some(self.size(&f, v)?),
            };
        }
        if let Some(v) = t.get("scheduler") {
            let f = join(path, "scheduler");
            s.scheduler = match self.string(&f, v)? {
                "minrtt" => SchedulerKind::MinRtt,
                "roundrobin" => SchedulerKind::RoundRobin,
                _ => return Err(self.invalid(&f, v, "allowed: \"minrtt\", \"roundrobin\"")),
            };
        }
        if let Some(v) = t.get("limited_transmit") {
            s.limited_transmit = self.boolean(&join(path, "limited_transmit"), v)?;
        }
        if let Some(v) = t.get("recovery") {
            let f = join(path, "recovery");
            s.recovery = match self.string(&f, v)? {
                "reno" => Recovery::Reno,
                "newreno" => Recovery::NewReno,
                "sack" => Recovery::Sack,
                _ => return Err(self.invalid(&f, v, "allowed: \"reno\", \"newreno\", \"sack\"")),
            };
        }
        // The receive buffer is kept in segments of mss, a u32; either key may be the one
        // written here (the other may come from [tcp]).
        if let Some(b) = s.receive_buffer {
            let segments = b.div_ceil(s.mss as u64);
            if segments >= u32::MAX as u64 {
                let key = if t.contains_key("receive_buffer") {
                    "receive_buffer"
                } else {
                    "mss"
                };
                let v = t.get(key).cloned().unwrap_or(Value::Integer(0));
                return Err(self.invalid(
                    &join(path, key),
                    &v,
                    format!(
                        "receive_buffer is {segments} segments of mss = {}B (at most {}); \
                         give a smaller receive_buffer or a larger mss",
                        s.mss,
                        u32::MAX - 1
                    ),
                ));
            }
        }
        Ok(s)
    }

    /// `header`: the TCP/IP header bytes of a data segment, from 0B to [`MAX_HEADER_BYTES`].
    fn header(&self, field: &str, v: &Value) -> R<u32> {
        let b = self.quantity(field, v, SIZE_UNITS, "a header size such as \"40B\"")?;
        let b = b.round();
        if !(0.0..=MAX_HEADER_BYTES as f64).contains(&b) {
            return Err(self.invalid(
                field,
                v,
                format!("a header must be from 0B to {MAX_HEADER_BYTES}B"),
            ));
        }
        Ok(b as u32)
    }

    fn traffic(&self, v: &Value, path: &str) -> R<Traffic> {
        if let Value::String(s) = v {
            return match s.as_str() {
                "bulk" => Ok(Traffic::Bulk),
                _ => Err(self.invalid(
                    path,
                    v,
                    "allowed: \"bulk\", or a table with type = \"transfer\", \"onoff\" or \"cbr\"",
                )),
            };
        }
        let t = self.table(path, v)?;
        let kind = match t.get("type") {
            Some(k) => self.string(&join(path, "type"), k)?,
            None => {
                return Err(self.missing(
                    &join(path, "type"),
                    "give type = \"bulk\", \"transfer\", \"onoff\" or \"cbr\"",
                ))
            }
        };
        match kind {
            "bulk" => {
                self.check_keys(t, path, &["type"])?;
                Ok(Traffic::Bulk)
            }
            "transfer" => {
                self.check_keys(t, path, &["type", "size"])?;
                match t.get("size") {
                    Some(v) => Ok(Traffic::Transfer(self.size(&join(path, "size"), v)?)),
                    None => {
                        Err(self
                            .missing(&join(path, "size"), "give the transfer size, e.g. \"1MB\""))
                    }
                }
            }
            "onoff" => {
                self.check_keys(t, path, &["type", "on", "off", "exponential"])?;
                let exponential = match t.get("exponential") {
                    Some(v) => self.boolean(&join(path, "exponential"), v)?,
                    None => false,
                };
                let period = |k: &str| -> R<Period> {
                    match t.get(k) {
                        Some(v) => Ok(Period {
                            mean: self.positive_time(&join(path, k), v)?,
                            exponential,
                        }),
                        None => {
                            Err(self.missing(&join(path, k), "give the period length, e.g. \"1s\""))
                        }
                    }
                };
                Ok(Traffic::OnOff {
                    on: period("on")?,
                    off: period("off")?,
                })
            }
            _ => Err(self.invalid(
                &join(path, "type"),
                &Value::String(kind.into()),
                "allowed: \"bulk\", \"transfer\", \"onoff\", \"cbr\"",
            )),
        }
    }

    fn flow(
        &self,
        t: &Table,
        path: &str,
        links: &[LinkSpec],
        tcp: &TcpSettings,
        group_default: &str,
        duration: Duration,
    ) -> R<FlowSpec> {
        let mut keys = vec![
            "name",
            "group",
            "algorithm",
            "arithmetic",
            "counting",
            "maximum",
            "beta",
            "gamma",
            "weight",
            "a",
            "b",
            "weights",
            "rate_hints",
            "flowshares",
            "k",
            "period",
            "proportion_manager",
            "tolerance",
            "decrease",
            "slow_start",
            "path",
            "subflows",
            "start",
            "stop",
            "traffic",
        ];
        keys.extend_from_slice(TCP_KEYS);
        self.check_keys(t, path, &keys)?;
        let name = match t.get("name") {
            Some(v) => self.name(&join(path, "name"), v)?,
            None => return Err(self.missing(&join(path, "name"), "every flow needs a unique name")),
        };
        let group = match t.get("group") {
            Some(v) => self.name(&join(path, "group"), v)?,
            None if group_default.is_empty() => name.clone(),
            None => group_default.to_string(),
        };
        let start = match t.get("start") {
            Some(v) => self.time(&join(path, "start"), v)?,
            None => Duration::ZERO,
        };
        if start >= duration {
            let v = t.get("start").cloned().unwrap_or(Value::Integer(0));
            return Err(self.invalid(
                &join(path, "start"),
                &v,
                "starts at or after the end of the simulation",
            ));
        }
        let stop = match t.get("stop") {
            Some(v) => {
                let s = self.time(&join(path, "stop"), v)?;
                if s <= start {
                    return Err(self.invalid(&join(path, "stop"), v, "must be after start"));
                }
                Some(Instant(s.as_nanos()))
            }
            None => None,
        };
        let subflows = self.subflows(t, path, links, start, stop, duration)?;
        let traffic_v = t.get("traffic");
        let is_cbr = traffic_v
            .and_then(Value::as_table)
            .and_then(|tt| tt.get("type"))
            .and_then(Value::as_str)
            == Some("cbr");
        let kind = if is_cbr {
            let tp = join(path, "traffic");
            let tt = self.table(&tp, traffic_v.unwrap_or(&Value::Boolean(false)))?;
            self.check_keys(tt, &tp, &["type", "rate", "size"])?;
            if let Some(v) = t.get("algorithm") {
                return Err(self.invalid(
                    &join(path, "algorithm"),
                    v,
                    "a cbr flow is not congestion-controlled; remove algorithm",
                ));
            }
            if let Some(v) = t.get("arithmetic").or(t.get("counting")) {
                return Err(self.invalid(
                    &join(path, "arithmetic"),
                    v,
                    "a cbr flow is not congestion-controlled; remove arithmetic and counting",
                ));
            }
            for (key, _) in CONTROL_PARAMS {
                if let Some(v) = t.get(*key) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        "a cbr flow is not congestion-controlled; remove controller parameters",
                    ));
                }
            }
            for key in TCP_KEYS {
                if let Some(v) = t.get(*key) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        format!(
                            "{key} is a TCP setting and a cbr flow sends UDP datagrams; remove \
                             it (the datagram size is traffic.size)"
                        ),
                    ));
                }
            }
            let rate = match tt.get("rate") {
                Some(v) => self.rate(&join(&tp, "rate"), v)?,
                None => {
                    return Err(
                        self.missing(&join(&tp, "rate"), "give the sending rate, e.g. \"10Mbps\"")
                    )
                }
            };
            let size = match tt.get("size") {
                Some(v) => self.small_size(&join(&tp, "size"), v, 65_535)?,
                None => 1000,
            };
            let interval = rate.transmission_time(Bytes(size as u64));
            if interval.is_none_or(|d| d < MIN_CBR_INTERVAL) {
                let v = tt.get("rate").cloned().unwrap_or(Value::Boolean(false));
                return Err(self.invalid(
                    &join(&tp, "rate"),
                    &v,
                    format!(
                        "sends a {size}B datagram every {} ns; the interval must be at least \
                         {} ns (it is rounded up to whole nanoseconds), so at this size the \
                         rate may be at most {}Mbps",
                        interval.map_or(0, |d| d.as_nanos()),
                        MIN_CBR_INTERVAL.as_nanos(),
                        size as u64 * 8 * 1000 / MIN_CBR_INTERVAL.as_nanos()
                    ),
                ));
            }
            if subflows.len() > 1 {
                return Err(self.invalid(
                    &join(path, "subflows"),
                    t.get("subflows").unwrap_or(&Value::Boolean(false)),
                    "a cbr flow has a single path; give path = [...] instead",
                ));
            }
            FlowKind::Cbr { rate, size }
        } else {
            let cfg = self.tcp_settings(t, path, *tcp)?;
            let control = self.control(t, path, &cfg)?;
            self.check_bmc_period(t, path, &control, &subflows, links)?;
            self.check_bmc_lists(t, path, &control, subflows.len())?;
            let traffic = match traffic_v {
                Some(v) => self.traffic(v, &join(path, "traffic"))?,
                None => Traffic::Bulk,
            };
            FlowKind::Tcp {
                cfg,
                control,
                traffic,
            }
        };
        Ok(FlowSpec {
            name,
            group,
            kind,
            subflows,
            start: Instant(start.as_nanos()),
            stop,
        })
    }

    /// BMC §3.2: J must hold at least one congestion epoch, so at least one round trip. The
    /// propagation round trip of each subflow's path (both directions of every link) is known
    /// here; a fixed `period` below the longest is an error. (Queueing adds to the RTT at run
    /// time, where the controller raises J to the smoothed RTT.)
    fn check_bmc_period(
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
    fn control(&self, t: &Table, path: &str, cfg: &TcpSettings) -> R<ControlSpec> {
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
        if let Some(v) = t.get("arithmetic") {
            let f = join(path, "arithmetic");
            let a: Arithmetic = self
                .string(&f, v)?
                .parse()
                .map_err(|_| self.invalid(&f, v, "allowed: \"spec\", \"linux\""))?;
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
        if let Some(v) = t.get("counting") {
            let f = join(path, "counting");
            let k: Counting = self
                .string(&f, v)?
                .parse()
                .map_err(|_| self.invalid(&f, v, "allowed: \"per-packet\", \"per-ack-event\""))?;
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
        Ok(ControlSpec { name, config })
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
    fn check_bmc_lists(&self, t: &Table, path: &str, control: &ControlSpec, n: usize) -> R<()> {
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
                        _ => {
                            return Err(self.invalid(
                                &join(path, "maximum"),
                                v,
                                "allowed: \"exact\" (RFC 6356), \"approximate\" (seeds/002 §3)",
                            ))
                        }
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

    /// `path = [...]` for one subflow, or `subflows = [{ path = [...], start, stop }, …]`.
    fn subflows(
        &self,
        t: &Table,
        path: &str,
        links: &[LinkSpec],
        flow_start: Duration,
        flow_stop: Option<Instant>,
        duration: Duration,
    ) -> R<Vec<SubflowSpec>> {
        match (t.get("path"), t.get("subflows")) {
            (Some(v), None) => Ok(vec![SubflowSpec {
                path: self.path(v, &join(path, "path"), links)?,
                start: None,
                stop: None,
            }]),
            (None, Some(Value::Array(items))) if !items.is_empty() => {
                let mut out = Vec::with_capacity(items.len());
                for (k, item) in items.iter().enumerate() {
                    let sp = format!("{path}.subflows[{k}]");
                    let st = self.table(&sp, item)?;
                    self.check_keys(st, &sp, &["path", "start", "stop"])?;
                    let hops = match st.get("path") {
                        Some(v) => self.path(v, &join(&sp, "path"), links)?,
                        None => return Err(self.missing(&join(&sp, "path"), "give the subflow's links")),
                    };
                    let start = match st.get("start") {
                        Some(v) => {
                            let s = self.time(&join(&sp, "start"), v)?;
                            if s >= duration {
                                return Err(self.invalid(&join(&sp, "start"), v, "starts at or after the end of the simulation"));
                            }
                            if let Some(fs) = flow_stop.filter(|fs| s.as_nanos() >= fs.0) {
                                return Err(self.invalid(
                                    &join(&sp, "start"),
                                    v,
                                    format!(
                                        "starts at or after the flow stops ({path}.stop = {} s); \
                                         a subflow must join before its flow stops",
                                        fs.0 as f64 / 1e9
                                    ),
                                ));
                            }
                            Some(Instant(s.max(flow_start).as_nanos()))
                        }
                        None => None,
                    };
                    let stop = match st.get("stop") {
                        Some(v) => {
                            let s = Instant(self.time(&join(&sp, "stop"), v)?.as_nanos());
                            if s <= start.unwrap_or(Instant(flow_start.as_nanos())) {
                                return Err(self.invalid(&join(&sp, "stop"), v, "must be after the subflow starts"));
                            }
                            Some(flow_stop.map_or(s, |f| s.min(f)))
                        }
                        None => None,
                    };
                    out.push(SubflowSpec { path: hops, start, stop });
                }
                if out.len() > 64 {
                    return Err(self.invalid(&join(path, "subflows"), t.get("subflows").unwrap_or(&Value::Boolean(false)), "at most 64 subflows"));
                }
                Ok(out)
            }
            (None, Some(v)) => Err(self.invalid(
                &join(path, "subflows"),
                v,
                "expected a non-empty list of tables such as [{ path = [\"a\"] }, { path = [\"b\"] }]",
            )),
            (Some(v), Some(_)) => Err(self.invalid(
                &join(path, "path"),
                v,
                "give either path (one path) or subflows (several), not both",
            )),
            (None, None) => Err(self.missing(
                &join(path, "path"),
                "give the links from sender to receiver, e.g. path = [\"access\", \"core\"], or subflows = [...]",
            )),
        }
    }

    fn path(&self, v: &Value, field: &str, links: &[LinkSpec]) -> R<Vec<Hop>> {
        let Value::Array(items) = v else {
            return Err(self.invalid(
                field,
                v,
                format!("expected a list of link names, found {}", type_name(v)),
            ));
        };
        if items.is_empty() {
            return Err(self.invalid(field, v, "a path needs at least one link"));
        }
        let mut hops = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            let f = format!("{field}[{k}]");
            let s = self.string(&f, item)?;
            let (reverse, name) = match s.strip_prefix('~') {
                Some(n) => (true, n),
                None => (false, s),
            };
            let Some(link) = links.iter().position(|l| l.name == name) else {
                let known: Vec<String> = links.iter().take(12).map(|l| clip(&l.name)).collect();
                let more = if links.len() > 12 { ", …" } else { "" };
                return Err(self.invalid(
                    &f,
                    item,
                    format!(
                        "no link is called '{}' (links: {}{more})",
                        clip(name),
                        known.join(", ")
                    ),
                ));
            };
            if let Some(j) = hops.iter().position(|h: &Hop| h.link == link) {
                return Err(self.invalid(
                    &f,
                    item,
                    format!(
                        "link '{}' is already on this path ({field}[{j}]); a path crosses \
                         each link at most once, in either direction",
                        clip(name)
                    ),
                ));
            }
            hops.push(Hop { link, reverse });
        }
        Ok(hops)
    }
}

const TCP_KEYS: &[&str] = &[
    "receive_buffer",
    "scheduler",
    "mss",
    "header",
    "ack_size",
    "initial_window",
    "min_rto",
    "delayed_ack",
    "recovery",
    "limited_transmit",
];
