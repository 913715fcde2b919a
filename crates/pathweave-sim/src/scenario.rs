//! Scenario files: TOML a person writes by hand, checked into a fully resolved [`Scenario`].
//!
//! Every error names the file, the field (as a path such as `link[2].rate`), the bad value and
//! what is allowed. Items with `count = N` are stamped out N times; inside them `{i}` (0-based)
//! and `{n}` (1-based) are replaced in every string, so `delay = "{n}/3 ms"` gives each copy
//! its own delay and `path = ["src{i}", "core", "dst{i}"]` its own access links.
//!
//! The reader follows the file format's sections, one file each under `scenario/`: `values`
//! (units, expressions, `count`), `document` (the top-level table), `links` (links and queues),
//! `loss`, `flows` (flows, traffic and paths), `control` (congestion controllers), `series`
//! (what the time series record), `capture` (packet captures and the queue log) and
//! `topology` (generated fabrics, routing between hosts and traffic matrices).

mod capture;
mod control;
mod document;
mod file;
mod flows;
mod links;
mod loss;
mod series;
mod topology;
mod values;

pub use capture::CAPTURE_KEYS;
pub use control::{algorithm_names, control_parameter_names, Control, ControlSpec};
pub(crate) use file::read_regular_file;
pub use file::{read_scenario_file, MAX_FILE_BYTES};
pub use flows::{
    FlowKind, FlowSpec, Profile, SubflowSpec, TcpSettings, Transport, MPTCP_DSS_ACK_BYTES,
    MPTCP_DSS_DATA_BYTES, QUIC_REFUSED_KEYS, TCP_KEYS,
};
pub use links::{Hop, LinkChange, LinkEvent, LinkSpec};
pub use series::{Columns, SeriesSpec};
pub use topology::{
    TopologySpec, DEFAULT_FABRIC_DELAY, DEFAULT_FABRIC_QUEUE, MAX_SUBFLOWS, MAX_TRAFFIC_FLOWS,
};

use crate::link::Trace;
use pathweave_cc::Duration;
use std::sync::Arc;
use toml::Table;

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
/// The most rows the time series of one run may hold: every sample has one row per recorded
/// flow, one per subflow of a recorded TCP flow and one per recorded link direction (by
/// default every flow and every link direction a path traverses forward; `[series]` narrows
/// this). 10^7 rows take about 1 GB at worst (a subflow row is 13 numbers); the
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
        /// Where (line and column) and the parser's reason, on one line.
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
    /// What the time series record.
    pub series: SeriesSpec,
    /// `[capture]`: what is captured when a capture directory is given.
    pub capture: Option<crate::capture::CaptureSpec>,
    /// The generated fabric (`[topology]`), whose cables are the first links.
    pub topology: Option<Arc<TopologySpec>>,
}

impl Scenario {
    /// Read and validate a scenario file of at most [`MAX_FILE_BYTES`].
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_limited(path, MAX_FILE_BYTES)
    }

    /// Read and validate a scenario file of at most `max_bytes` (see [`read_scenario_file`]).
    /// Relative trace paths are resolved against the file's directory.
    pub fn load_limited(path: &std::path::Path, max_bytes: u64) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = read_scenario_file(path, max_bytes)?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = path.parent().unwrap_or(std::path::Path::new(""));
        Scenario::parse_in(&text, &file, &stem, dir)
    }

    /// Validate scenario text; `file` labels errors and `default_name` names an unnamed scenario.
    /// Relative trace paths (`rate = { trace = "..." }`) are resolved against the current
    /// directory; [`Scenario::parse_in`] takes the directory to resolve them against.
    pub fn parse(text: &str, file: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_in(text, file, default_name, std::path::Path::new(""))
    }

    /// [`Scenario::parse`] with relative trace paths resolved against `dir` (the directory of
    /// the file the text came from; an empty path is the current directory).
    pub fn parse_in(
        text: &str,
        file: &str,
        default_name: &str,
        dir: &std::path::Path,
    ) -> Result<Scenario, ScenarioError> {
        let table: Table = text
            .parse()
            .map_err(|e: toml::de::Error| ScenarioError::syntax(file, text, &e))?;
        Reader {
            file,
            dir,
            traces: Default::default(),
        }
        .scenario(&table, default_name)
    }

    /// Index of the link called `name`.
    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }
}

impl ScenarioError {
    /// A TOML syntax error in `text` (from `file`), on one line: where (line and column,
    /// 1-based, and the line itself), and the parser's reason.
    pub fn syntax(file: &str, text: &str, e: &toml::de::Error) -> ScenarioError {
        let reason = e.message().trim().replace('\n', "; ");
        let message = match e.span() {
            None => format!("{reason} (see https://toml.io for the syntax)"),
            Some(span) => {
                let start = span.start.min(text.len());
                let before = text.get(..start).unwrap_or("");
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                let source = text.lines().nth(line - 1).unwrap_or("").trim();
                let mut shown: String = source.chars().take(60).collect();
                if shown.len() < source.len() {
                    shown.push('…');
                }
                if shown.is_empty() {
                    format!("line {line}, column {column}: {reason}")
                } else {
                    format!("line {line}, column {column} ({shown}): {reason}")
                }
            }
        };
        ScenarioError::Syntax {
            file: file.to_string(),
            message,
        }
    }
}

struct Reader<'a> {
    file: &'a str,
    /// The directory relative trace paths are resolved against.
    dir: &'a std::path::Path,
    /// The traces read so far, by resolved path: each file is read once, and every link
    /// direction (and every copy of a counted link) that names it shares it.
    traces: std::cell::RefCell<std::collections::BTreeMap<std::path::PathBuf, Arc<Trace>>>,
}

type R<T> = Result<T, ScenarioError>;
