//! Names, modes and errors shared by the multipath algorithm configurations.
//!
//! * [`Algorithm`] — the names scenario files use (`"lia"`, `"rpmp-v2"`, …), parsed by
//!   [`FromStr`].
//! * [`Arithmetic`] — `spec` (real-valued, per RFC/draft/paper; the default) or `linux` (the
//!   out-of-tree MPTCP kernel's fixed point, `reference/ALGORITHMS.md` §1.2, §2.2, §3.2,
//!   §4), which only LIA, OLIA, Balia, wVegas and Kelly–Voice (OLIA's fixed point) have.
//! * [`Counting`] — whether a congestion-avoidance increase is applied per acknowledged packet
//!   (RFC form) or once per ACK event (Linux form), ALGORITHMS.md §0.
//! * [`WindowConfig`] — the NewReno slow start every controller shares.
//! * [`ConfigError`] — every bad name or parameter, as a value the scenario layer can turn into
//!   a message; nothing here panics.

use core::fmt;
use core::str::FromStr;

/// How an algorithm computes: the published real-valued rule or the Linux kernel's integers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// Real-valued, as the RFC, draft or paper states the rule. The default.
    #[default]
    Spec,
    /// The out-of-tree Linux MPTCP kernel's fixed-point arithmetic, counters and refresh
    /// schedule (multipath-tcp/mptcp `net/mptcp/mptcp_{coupled,olia,balia,wvegas}.c`).
    Linux,
}

impl Arithmetic {
    /// The scenario-file name: `"spec"` or `"linux"`.
    pub const fn name(self) -> &'static str {
        match self {
            Arithmetic::Spec => "spec",
            Arithmetic::Linux => "linux",
        }
    }

    /// The counting the mode implies unless one is chosen: per packet for the specs, per ACK
    /// event for Linux (ALGORITHMS.md §0).
    pub const fn default_counting(self) -> Counting {
        match self {
            Arithmetic::Spec => Counting::PerPacket,
            Arithmetic::Linux => Counting::PerAckEvent,
        }
    }
}

impl fmt::Display for Arithmetic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Arithmetic {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "spec" => Ok(Arithmetic::Spec),
            "linux" => Ok(Arithmetic::Linux),
            _ => Err(ConfigError::UnknownArithmetic(s.to_owned())),
        }
    }
}

/// How congestion-avoidance increases are counted (ALGORITHMS.md §0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counting {
    /// The per-ACK rule times the packets the ACK newly acknowledges (`bytes_acked / MSS`,
    /// fractions included): RFC 6356 §3, RFC 3465 byte counting.
    PerPacket,
    /// The per-ACK rule once per ACK that newly acknowledges data, whatever it covers, as the
    /// MPTCP kernel's `cong_avoid` does. With delayed ACKs this grows about half as fast.
    PerAckEvent,
}

impl Counting {
    /// The scenario-file name: `"per-packet"` or `"per-ack-event"`.
    pub const fn name(self) -> &'static str {
        match self {
            Counting::PerPacket => "per-packet",
            Counting::PerAckEvent => "per-ack-event",
        }
    }
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Counting {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "per-packet" => Ok(Counting::PerPacket),
            "per-ack-event" => Ok(Counting::PerAckEvent),
            _ => Err(ConfigError::UnknownCounting(s.to_owned())),
        }
    }
}

/// The built-in multipath algorithms, by the names scenario files use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// `"uncoupled"`: NewReno on every path, independently.
    Uncoupled,
    /// `"lia"`: the Linked Increases Algorithm, RFC 6356.
    Lia,
    /// `"olia"`: the Opportunistic LIA (Khalili et al., CoNEXT 2012).
    Olia,
    /// `"balia"`: Balanced Linked Adaptation (Peng et al., ToN 2016).
    Balia,
    /// `"fully-coupled"`: one AIMD over the total window, `1/w_total` per packet (Wischik et
    /// al., NSDI 2011 §2, "COUPLED"; htsim `FULLY_COUPLED`).
    FullyCoupled,
    /// `"kelly-voice"`: the Kelly–Voice / Han et al. "Coupled" algorithm,
    /// `(w_r/rtt_r²)/(Σ w/rtt)²` per packet, halving on loss (OLIA with ε ≡ 0).
    KellyVoice,
    /// `"ewtcp"`: equally weighted TCP, increase a/w with a = 1/n².
    Ewtcp,
    /// `"rpmp-v2"`: CMT/RP-MP v2 (Dreibholz et al., ConTEL 2011; usrsctp `SCTP_CMT_RPV2`).
    RpMpV2,
    /// `"mptcp-bytes"`: the SCTP CMT "MPTCP-like" LIA in bytes (usrsctp `SCTP_CMT_MPTCP`).
    MptcpBytes,
    /// `"wvegas"`: weighted Vegas (Cao, Xu, Fu, ICNP 2012).
    WVegas,
    /// `"aimd"`: weighted AIMD(a, b) on every path, independently (AIMD(D², ½) for a
    /// weight D; the BMC paper's stand-in for subflows, Honda et al. 2009 §5).
    Aimd,
    /// `"bmc"`: Bidimensional-Probe Multipath Congestion Control (Honda et al. 2009).
    Bmc,
    /// `"mpveno"`: multipath TCP Veno (Le, "Improving the Performance of Multipath Congestion
    /// Control over Wireless Networks", 2013, Algorithm 2): OLIA's increase, Veno's backlog test
    /// per path.
    MpVeno,
    /// `"mptcpw"`: multipath TCP Westwood (Le, Hong, Huh, ICOIN 2012).
    Mptcpw,
    /// `"wmptcpw"`: weighted multipath TCP Westwood (Nuha et al., EMS 2010).
    WMptcpw,
}

impl Algorithm {
    /// Every built-in algorithm, in the order of the documentation table.
    pub const ALL: [Algorithm; 15] = [
        Algorithm::Uncoupled,
        Algorithm::Lia,
        Algorithm::Olia,
        Algorithm::Balia,
        Algorithm::FullyCoupled,
        Algorithm::KellyVoice,
        Algorithm::Ewtcp,
        Algorithm::RpMpV2,
        Algorithm::MptcpBytes,
        Algorithm::WVegas,
        Algorithm::Aimd,
        Algorithm::Bmc,
        Algorithm::MpVeno,
        Algorithm::Mptcpw,
        Algorithm::WMptcpw,
    ];

    /// The scenario-file name.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Uncoupled => "uncoupled",
            Algorithm::Lia => "lia",
            Algorithm::Olia => "olia",
            Algorithm::Balia => "balia",
            Algorithm::FullyCoupled => "fully-coupled",
            Algorithm::KellyVoice => "kelly-voice",
            Algorithm::Ewtcp => "ewtcp",
            Algorithm::RpMpV2 => "rpmp-v2",
            Algorithm::MptcpBytes => "mptcp-bytes",
            Algorithm::WVegas => "wvegas",
            Algorithm::Aimd => "aimd",
            Algorithm::Bmc => "bmc",
            Algorithm::MpVeno => "mpveno",
            Algorithm::Mptcpw => "mptcpw",
            Algorithm::WMptcpw => "wmptcpw",
        }
    }

    /// Whether the algorithm has the given arithmetic mode (every one has `spec`; the kernel
    /// implemented LIA, OLIA, Balia and wVegas, and Kelly–Voice is OLIA's fixed point with
    /// ε = 0).
    pub const fn supports(self, a: Arithmetic) -> bool {
        match a {
            Arithmetic::Spec => true,
            Arithmetic::Linux => matches!(
                self,
                Algorithm::Lia
                    | Algorithm::Olia
                    | Algorithm::Balia
                    | Algorithm::KellyVoice
                    | Algorithm::WVegas
            ),
        }
    }

    /// The scenario names, comma-separated, for error messages.
    pub fn names() -> String {
        Algorithm::ALL.map(Algorithm::name).join(", ")
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| ConfigError::UnknownAlgorithm(s.to_owned()))
    }
}

/// Bad configuration: unknown names and parameters out of range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No algorithm has this name.
    #[error("unknown multipath algorithm {0:?} (allowed: {allowed})", allowed = Algorithm::names())]
    UnknownAlgorithm(String),
    /// No arithmetic mode has this name.
    #[error("unknown arithmetic {0:?} (allowed: spec, linux)")]
    UnknownArithmetic(String),
    /// No counting mode has this name.
    #[error("unknown counting {0:?} (allowed: per-packet, per-ack-event)")]
    UnknownCounting(String),
    /// The algorithm has no such arithmetic mode.
    #[error(
        "{algorithm} has no {arithmetic} arithmetic (linux exists for lia, olia, balia, \
         kelly-voice and wvegas only)"
    )]
    UnsupportedArithmetic {
        /// The algorithm's scenario name.
        algorithm: &'static str,
        /// The mode asked for.
        arithmetic: Arithmetic,
    },
    /// The algorithm does not count ACKs in a way this setting could change.
    #[error("{algorithm} has no counting setting (it counts acknowledged bytes per window)")]
    UnsupportedCounting {
        /// The algorithm's scenario name.
        algorithm: &'static str,
    },
    /// A parameter is outside the range the algorithm allows.
    #[error("{algorithm}: {parameter} = {value} is out of range (allowed: {allowed})")]
    OutOfRange {
        /// The algorithm's scenario name (or `"window"` for the shared slow start).
        algorithm: &'static str,
        /// The parameter's name.
        parameter: &'static str,
        /// The value given.
        value: f64,
        /// What is allowed, in words.
        allowed: &'static str,
    },
    /// Per-path weights that do not sum to the flowshares P.
    #[error(
        "{algorithm}: weights sum to {sum}, but must sum to flowshares P = {flowshares} \
         (within {tolerance})"
    )]
    WeightSum {
        /// The algorithm's scenario name.
        algorithm: &'static str,
        /// The sum of the weights given.
        sum: f64,
        /// P.
        flowshares: f64,
        /// How far the sum may be from P.
        tolerance: f64,
    },
    /// A per-path list with too few or too many values.
    #[error("{algorithm}: {parameter} has {len} values (allowed: {allowed})")]
    ListLength {
        /// The algorithm's scenario name.
        algorithm: &'static str,
        /// The parameter's name.
        parameter: &'static str,
        /// The number of values given.
        len: usize,
        /// What is allowed, in words.
        allowed: &'static str,
    },
}

/// Checks that `value` is finite and within `[lo, hi]`.
pub(crate) fn check_range(
    algorithm: &'static str,
    parameter: &'static str,
    value: f64,
    lo: f64,
    hi: f64,
    allowed: &'static str,
) -> Result<(), ConfigError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            algorithm,
            parameter,
            value,
            allowed,
        })
    }
}

/// The slow start every multipath controller shares with [`NewReno`](crate::cc::NewReno):
/// uncoupled, `cwnd += min(bytes_acked, L·MSS)` per ACK while `cwnd < ssthresh` (RFC 3465
/// §2.2), from an initial window of `initial_window` segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowConfig {
    initial_window: u32,
    abc_limit: u32,
}

impl Default for WindowConfig {
    /// An initial window of 2 segments (the simulator's ns-2-like default) and L = 2.
    fn default() -> Self {
        WindowConfig {
            initial_window: 2,
            abc_limit: 2,
        }
    }
}

impl WindowConfig {
    /// The initial window in segments (1 to 1000).
    pub fn initial_window(mut self, segments: u32) -> Self {
        self.initial_window = segments;
        self
    }
    /// RFC 3465's L: the most one ACK may add in slow start, in segments (1 to 1000).
    pub fn abc_limit(mut self, segments: u32) -> Self {
        self.abc_limit = segments;
        self
    }
    /// The initial window in segments.
    pub fn initial_segments(&self) -> u32 {
        self.initial_window
    }
    /// RFC 3465's L.
    pub fn abc_segments(&self) -> u32 {
        self.abc_limit
    }
    /// Checks both values are within 1 to 1000 segments.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let allowed = "1 to 1000 segments";
        check_range(
            "window",
            "initial_window",
            self.initial_window as f64,
            1.0,
            1000.0,
            allowed,
        )?;
        check_range(
            "window",
            "abc_limit",
            self.abc_limit as f64,
            1.0,
            1000.0,
            allowed,
        )
    }
}

/// The builder of a configuration whose only parameters are the shared slow start, the
/// arithmetic and the counting (a `Default` struct with fields `window: WindowConfig`,
/// `arithmetic: Arithmetic` and `counting: Option<Counting>`): OLIA, Balia and Kelly–Voice.
/// `$algorithm` is the [`Algorithm`] whose modes `validate` checks.
macro_rules! modal_config {
    ($config:ident, $algorithm:expr) => {
        impl $config {
            /// Spec arithmetic, counting per packet, the default slow start.
            pub fn new() -> Self {
                $config::default()
            }
            /// The shared slow start and initial window.
            pub fn window(mut self, w: $crate::cc::multipath::config::WindowConfig) -> Self {
                self.window = w;
                self
            }
            /// Spec or Linux arithmetic.
            pub fn arithmetic(mut self, a: $crate::cc::multipath::config::Arithmetic) -> Self {
                self.arithmetic = a;
                self
            }
            /// Per-packet or per-ACK-event counting; unset, it follows the arithmetic.
            pub fn counting(mut self, c: $crate::cc::multipath::config::Counting) -> Self {
                self.counting = Some(c);
                self
            }
            /// The counting in force.
            pub fn counting_mode(&self) -> $crate::cc::multipath::config::Counting {
                self.counting.unwrap_or(self.arithmetic.default_counting())
            }
            /// The arithmetic in force.
            pub fn arithmetic_mode(&self) -> $crate::cc::multipath::config::Arithmetic {
                self.arithmetic
            }
            /// Checks the arithmetic and the window settings.
            pub fn validate(&self) -> Result<(), $crate::cc::multipath::config::ConfigError> {
                $crate::cc::multipath::config::check_arithmetic($algorithm, self.arithmetic)?;
                self.window.validate()
            }
        }
    };
}
pub(crate) use modal_config;

/// Rejects `arithmetic` if `algorithm` lacks it.
pub(crate) fn check_arithmetic(
    algorithm: Algorithm,
    arithmetic: Arithmetic,
) -> Result<(), ConfigError> {
    if algorithm.supports(arithmetic) {
        Ok(())
    } else {
        Err(ConfigError::UnsupportedArithmetic {
            algorithm: algorithm.name(),
            arithmetic,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_name_round_trips() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
            assert_eq!(a.to_string(), a.name());
        }
        assert_eq!(Algorithm::names().split(", ").count(), Algorithm::ALL.len());
    }

    #[test]
    fn unknown_names_are_errors_that_list_the_choices() {
        let e = "cubic".parse::<Algorithm>().unwrap_err();
        assert_eq!(e, ConfigError::UnknownAlgorithm("cubic".into()));
        assert!(e.to_string().contains("rpmp-v2"));
        let e = "Linux".parse::<Arithmetic>().unwrap_err();
        assert!(e.to_string().contains("spec, linux"));
        assert!("per-byte".parse::<Counting>().is_err());
    }

    #[test]
    fn arithmetic_and_counting_parse() {
        assert_eq!("spec".parse(), Ok(Arithmetic::Spec));
        assert_eq!("linux".parse(), Ok(Arithmetic::Linux));
        assert_eq!("per-packet".parse(), Ok(Counting::PerPacket));
        assert_eq!("per-ack-event".parse(), Ok(Counting::PerAckEvent));
        assert_eq!(Arithmetic::default(), Arithmetic::Spec);
        assert_eq!(Arithmetic::Linux.default_counting(), Counting::PerAckEvent);
    }

    #[test]
    fn only_kernel_algorithms_have_linux_arithmetic() {
        let linux: Vec<_> = Algorithm::ALL
            .into_iter()
            .filter(|a| a.supports(Arithmetic::Linux))
            .collect();
        assert_eq!(
            linux,
            [
                Algorithm::Lia,
                Algorithm::Olia,
                Algorithm::Balia,
                Algorithm::KellyVoice,
                Algorithm::WVegas
            ]
        );
        let e = check_arithmetic(Algorithm::RpMpV2, Arithmetic::Linux).unwrap_err();
        assert!(e.to_string().contains("rpmp-v2 has no linux arithmetic"));
    }

    #[test]
    fn window_config_rejects_zero_and_huge_windows() {
        assert!(WindowConfig::default().validate().is_ok());
        assert!(WindowConfig::default()
            .initial_window(0)
            .validate()
            .is_err());
        assert!(WindowConfig::default().abc_limit(5000).validate().is_err());
    }
}
