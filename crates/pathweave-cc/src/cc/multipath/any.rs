//! The built-in multipath controllers as one enum, dispatched statically by `match` (one dispatch
//! style for the closed set of built-ins), and the configuration enum that builds them from a
//! scenario's algorithm name.
//!
//! Registering a new algorithm: add a variant to [`AnyMultipathController`], to
//! [`MultipathConfig`] and to [`Algorithm`], and one arm to each `match`
//! (the compiler lists every place).

use crate::cc::multipath::config::{
    check_range, Algorithm, Arithmetic, ConfigError, Counting, WindowConfig,
};
use crate::cc::multipath::{
    Balia, BaliaConfig, Ewtcp, EwtcpConfig, FullyCoupled, FullyCoupledConfig, KellyVoice,
    KellyVoiceConfig, Lia, LiaConfig, MptcpBytes, MptcpBytesConfig, MultipathController, Olia,
    OliaConfig, Paths, RpMpConfig, RpMpV2, Uncoupled, WVegas, WVegasConfig,
};
use crate::cc::{Ack, AnyController, CongestionEvent, Metrics, NewReno, PathId, RenoConfig, Rto};
use crate::units::{Bytes, Instant};

use crate::cc::aimd::{Aimd, AimdConfig};
use crate::cc::multipath::bmc::{Bmc, BmcConfig};
use crate::cc::multipath::mptcpw::{Mptcpw, MptcpwConfig};
use crate::cc::multipath::mpveno::{MpVeno, MpVenoConfig};

/// Every built-in multipath controller.
#[derive(Clone, Debug)]
pub enum AnyMultipathController {
    /// An independent NewReno per path.
    Uncoupled(Uncoupled<AnyController>),
    /// LIA, RFC 6356.
    Lia(Lia),
    /// OLIA.
    Olia(Olia),
    /// Balia.
    Balia(Balia),
    /// The fully coupled algorithm.
    FullyCoupled(FullyCoupled),
    /// The Kelly–Voice "Coupled" algorithm.
    KellyVoice(KellyVoice),
    /// EWTCP.
    Ewtcp(Ewtcp),
    /// CMT/RP-MP v2.
    RpMpV2(RpMpV2),
    /// The SCTP CMT "MPTCP-like" LIA in bytes.
    MptcpBytes(MptcpBytes),
    /// wVegas.
    WVegas(WVegas),
    /// Weighted AIMD on every path, independently.
    Aimd(Uncoupled<Aimd>),
    /// BMC.
    Bmc(Bmc),
    /// MPVeno.
    MpVeno(MpVeno),
    /// MPTCPW or wMPTCPW (one controller, two increase rules).
    Mptcpw(Mptcpw),
}

/// Calls `$call` on whichever controller `$self` holds.
macro_rules! dispatch {
    ($self:expr, $c:ident => $call:expr) => {
        match $self {
            AnyMultipathController::Uncoupled($c) => $call,
            AnyMultipathController::Lia($c) => $call,
            AnyMultipathController::Olia($c) => $call,
            AnyMultipathController::Balia($c) => $call,
            AnyMultipathController::FullyCoupled($c) => $call,
            AnyMultipathController::KellyVoice($c) => $call,
            AnyMultipathController::Ewtcp($c) => $call,
            AnyMultipathController::RpMpV2($c) => $call,
            AnyMultipathController::MptcpBytes($c) => $call,
            AnyMultipathController::WVegas($c) => $call,
            AnyMultipathController::Aimd($c) => $call,
            AnyMultipathController::Bmc($c) => $call,
            AnyMultipathController::MpVeno($c) => $call,
            AnyMultipathController::Mptcpw($c) => $call,
        }
    };
}

impl AnyMultipathController {
    /// Where this controller keeps per-path state held apart from it (an uncoupled
    /// controller's paths), if anywhere, for a host's cache hint before it reads the metrics
    /// of many controllers in turn. Only an address: nothing is read through it here.
    pub fn state_addr(&self) -> Option<*const u8> {
        match self {
            AnyMultipathController::Uncoupled(u) => Some(u.paths_addr()),
            AnyMultipathController::Aimd(u) => Some(u.paths_addr()),
            _ => None,
        }
    }
    /// Which algorithm this is.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            AnyMultipathController::Uncoupled(_) => Algorithm::Uncoupled,
            AnyMultipathController::Lia(_) => Algorithm::Lia,
            AnyMultipathController::Olia(_) => Algorithm::Olia,
            AnyMultipathController::Balia(_) => Algorithm::Balia,
            AnyMultipathController::FullyCoupled(_) => Algorithm::FullyCoupled,
            AnyMultipathController::KellyVoice(_) => Algorithm::KellyVoice,
            AnyMultipathController::Ewtcp(_) => Algorithm::Ewtcp,
            AnyMultipathController::RpMpV2(_) => Algorithm::RpMpV2,
            AnyMultipathController::MptcpBytes(_) => Algorithm::MptcpBytes,
            AnyMultipathController::WVegas(_) => Algorithm::WVegas,
            AnyMultipathController::Aimd(_) => Algorithm::Aimd,
            AnyMultipathController::Bmc(_) => Algorithm::Bmc,
            AnyMultipathController::MpVeno(_) => Algorithm::MpVeno,
            AnyMultipathController::Mptcpw(c) => c.config().algorithm(),
        }
    }
}

impl MultipathController for AnyMultipathController {
    fn on_path_added(&mut self, p: PathId, now: Instant, mss: Bytes) {
        dispatch!(self, c => c.on_path_added(p, now, mss))
    }
    fn on_path_removed(&mut self, p: PathId) {
        dispatch!(self, c => c.on_path_removed(p))
    }
    fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        dispatch!(self, c => c.on_ack(p, ack, paths))
    }
    #[inline]
    fn on_ack_window(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) -> Bytes {
        dispatch!(self, c => c.on_ack_window(p, ack, paths))
    }
    fn on_congestion_event(&mut self, p: PathId, ev: &CongestionEvent, paths: &Paths<'_>) {
        dispatch!(self, c => c.on_congestion_event(p, ev, paths))
    }
    fn on_recovery_end(&mut self, p: PathId, now: Instant, paths: &Paths<'_>) {
        dispatch!(self, c => c.on_recovery_end(p, now, paths))
    }
    fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        dispatch!(self, c => c.on_rto(p, rto, paths))
    }
    fn window(&self, p: PathId) -> Bytes {
        dispatch!(self, c => c.window(p))
    }
    fn metrics(&self, p: PathId) -> Metrics {
        dispatch!(self, c => c.metrics(p))
    }
    fn ssthresh(&self, p: PathId) -> Option<Bytes> {
        dispatch!(self, c => c.ssthresh(p))
    }
    fn in_slow_start(&self, p: PathId) -> bool {
        dispatch!(self, c => c.in_slow_start(p))
    }
}

/// The configuration of one built-in multipath controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MultipathConfig {
    /// An independent NewReno per path, each with this configuration.
    Uncoupled(RenoConfig),
    /// LIA.
    Lia(LiaConfig),
    /// OLIA.
    Olia(OliaConfig),
    /// Balia.
    Balia(BaliaConfig),
    /// The fully coupled algorithm.
    FullyCoupled(FullyCoupledConfig),
    /// The Kelly–Voice "Coupled" algorithm.
    KellyVoice(KellyVoiceConfig),
    /// EWTCP.
    Ewtcp(EwtcpConfig),
    /// RP-MP v2.
    RpMpV2(RpMpConfig),
    /// MPTCP in bytes.
    MptcpBytes(MptcpBytesConfig),
    /// wVegas.
    WVegas(WVegasConfig),
    /// Weighted AIMD on every path, each with this configuration.
    Aimd(AimdConfig),
    /// BMC.
    Bmc(BmcConfig),
    /// MPVeno.
    MpVeno(MpVenoConfig),
    /// MPTCPW or wMPTCPW.
    Mptcpw(MptcpwConfig),
}

impl MultipathConfig {
    /// The defaults of `algorithm` with the shared slow start `window`; `mss` is the segment
    /// size of the uncoupled NewReno copies (the coupled controllers take each path's MSS from
    /// `on_path_added`).
    pub fn new(algorithm: Algorithm, mss: Bytes, window: WindowConfig) -> Self {
        match algorithm {
            Algorithm::Uncoupled => MultipathConfig::Uncoupled(RenoConfig {
                mss,
                initial_window: window.initial_segments(),
                abc_limit: window.abc_segments(),
            }),
            Algorithm::Lia => MultipathConfig::Lia(LiaConfig::new().window(window)),
            Algorithm::Olia => MultipathConfig::Olia(OliaConfig::new().window(window)),
            Algorithm::Balia => MultipathConfig::Balia(BaliaConfig::new().window(window)),
            Algorithm::FullyCoupled => {
                MultipathConfig::FullyCoupled(FullyCoupledConfig::new().window(window))
            }
            Algorithm::KellyVoice => {
                MultipathConfig::KellyVoice(KellyVoiceConfig::new().window(window))
            }
            Algorithm::Ewtcp => MultipathConfig::Ewtcp(EwtcpConfig::new().window(window)),
            Algorithm::RpMpV2 => MultipathConfig::RpMpV2(RpMpConfig::new().window(window)),
            Algorithm::MptcpBytes => {
                MultipathConfig::MptcpBytes(MptcpBytesConfig::new().window(window))
            }
            Algorithm::WVegas => MultipathConfig::WVegas(WVegasConfig::new().window(window)),
            Algorithm::Aimd => MultipathConfig::Aimd(AimdConfig::new(mss, 2).window(window)),
            Algorithm::Bmc => MultipathConfig::Bmc(BmcConfig::new().window(window)),
            Algorithm::MpVeno => MultipathConfig::MpVeno(MpVenoConfig::new().window(window)),
            Algorithm::Mptcpw => MultipathConfig::Mptcpw(MptcpwConfig::new().window(window)),
            Algorithm::WMptcpw => MultipathConfig::Mptcpw(MptcpwConfig::weighted().window(window)),
        }
    }

    /// Which algorithm this configures.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            MultipathConfig::Uncoupled(_) => Algorithm::Uncoupled,
            MultipathConfig::Lia(_) => Algorithm::Lia,
            MultipathConfig::Olia(_) => Algorithm::Olia,
            MultipathConfig::Balia(_) => Algorithm::Balia,
            MultipathConfig::FullyCoupled(_) => Algorithm::FullyCoupled,
            MultipathConfig::KellyVoice(_) => Algorithm::KellyVoice,
            MultipathConfig::Ewtcp(_) => Algorithm::Ewtcp,
            MultipathConfig::RpMpV2(_) => Algorithm::RpMpV2,
            MultipathConfig::MptcpBytes(_) => Algorithm::MptcpBytes,
            MultipathConfig::WVegas(_) => Algorithm::WVegas,
            MultipathConfig::Aimd(_) => Algorithm::Aimd,
            MultipathConfig::Bmc(_) => Algorithm::Bmc,
            MultipathConfig::MpVeno(_) => Algorithm::MpVeno,
            MultipathConfig::Mptcpw(c) => c.algorithm(),
        }
    }

    /// Sets the arithmetic; an error if the algorithm has no such mode (only LIA, OLIA, Balia,
    /// Kelly–Voice and wVegas have `linux`).
    pub fn with_arithmetic(self, a: Arithmetic) -> Result<Self, ConfigError> {
        Ok(match self {
            MultipathConfig::Lia(c) => MultipathConfig::Lia(c.arithmetic(a)),
            MultipathConfig::Olia(c) => MultipathConfig::Olia(c.arithmetic(a)),
            MultipathConfig::Balia(c) => MultipathConfig::Balia(c.arithmetic(a)),
            MultipathConfig::KellyVoice(c) => MultipathConfig::KellyVoice(c.arithmetic(a)),
            MultipathConfig::WVegas(c) => MultipathConfig::WVegas(c.arithmetic(a)),
            other if a == Arithmetic::Spec => other,
            other => {
                return Err(ConfigError::UnsupportedArithmetic {
                    algorithm: other.algorithm().name(),
                    arithmetic: a,
                })
            }
        })
    }

    /// Sets the ACK counting; an error for algorithms that count bytes per window (uncoupled
    /// NewReno, RP-MP v2, MPTCP in bytes) or per round trip (wVegas).
    pub fn with_counting(self, k: Counting) -> Result<Self, ConfigError> {
        Ok(match self {
            MultipathConfig::Lia(c) => MultipathConfig::Lia(c.counting(k)),
            MultipathConfig::Olia(c) => MultipathConfig::Olia(c.counting(k)),
            MultipathConfig::Balia(c) => MultipathConfig::Balia(c.counting(k)),
            MultipathConfig::FullyCoupled(c) => MultipathConfig::FullyCoupled(c.counting(k)),
            MultipathConfig::KellyVoice(c) => MultipathConfig::KellyVoice(c.counting(k)),
            MultipathConfig::Ewtcp(c) => MultipathConfig::Ewtcp(c.counting(k)),
            MultipathConfig::MpVeno(c) => MultipathConfig::MpVeno(c.counting(k)),
            MultipathConfig::Mptcpw(c) => MultipathConfig::Mptcpw(c.counting(k)),
            other => {
                return Err(ConfigError::UnsupportedCounting {
                    algorithm: other.algorithm().name(),
                })
            }
        })
    }

    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            MultipathConfig::Uncoupled(c) => {
                let allowed = "1 to 1000 segments";
                let u = "uncoupled";
                check_range(u, "mss", c.mss.0 as f64, 1.0, 1e9, "1 to 10^9 bytes")?;
                check_range(
                    u,
                    "initial_window",
                    c.initial_window as f64,
                    1.0,
                    1e3,
                    allowed,
                )?;
                check_range(u, "abc_limit", c.abc_limit as f64, 1.0, 1e3, allowed)
            }
            MultipathConfig::Lia(c) => c.validate(),
            MultipathConfig::Olia(c) => c.validate(),
            MultipathConfig::Balia(c) => c.validate(),
            MultipathConfig::FullyCoupled(c) => c.validate(),
            MultipathConfig::KellyVoice(c) => c.validate(),
            MultipathConfig::Ewtcp(c) => c.validate(),
            MultipathConfig::RpMpV2(c) => c.validate(),
            MultipathConfig::MptcpBytes(c) => c.validate(),
            MultipathConfig::WVegas(c) => c.validate(),
            MultipathConfig::Aimd(c) => c.validate(),
            MultipathConfig::Bmc(c) => c.validate(),
            MultipathConfig::MpVeno(c) => c.validate(),
            MultipathConfig::Mptcpw(c) => c.validate(),
        }
    }

    /// A controller with no paths yet.
    pub fn build(&self) -> Result<AnyMultipathController, ConfigError> {
        self.validate()?;
        Ok(match self {
            MultipathConfig::Uncoupled(c) => AnyMultipathController::Uncoupled(Uncoupled::new(
                AnyController::NewReno(NewReno::new(*c)),
            )),
            MultipathConfig::Lia(c) => AnyMultipathController::Lia(c.build()?),
            MultipathConfig::Olia(c) => AnyMultipathController::Olia(c.build()?),
            MultipathConfig::Balia(c) => AnyMultipathController::Balia(c.build()?),
            MultipathConfig::FullyCoupled(c) => AnyMultipathController::FullyCoupled(c.build()?),
            MultipathConfig::KellyVoice(c) => AnyMultipathController::KellyVoice(c.build()?),
            MultipathConfig::Ewtcp(c) => AnyMultipathController::Ewtcp(c.build()?),
            MultipathConfig::RpMpV2(c) => AnyMultipathController::RpMpV2(c.build()?),
            MultipathConfig::MptcpBytes(c) => AnyMultipathController::MptcpBytes(c.build()?),
            MultipathConfig::WVegas(c) => AnyMultipathController::WVegas(c.build()?),
            MultipathConfig::Aimd(c) => AnyMultipathController::Aimd(Uncoupled::new(c.build()?)),
            MultipathConfig::Bmc(c) => AnyMultipathController::Bmc(c.build()?),
            MultipathConfig::MpVeno(c) => AnyMultipathController::MpVeno(c.build()?),
            MultipathConfig::Mptcpw(c) => AnyMultipathController::Mptcpw(c.build()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::multipath::test_support::{ack, add_paths, loss, views};

    #[test]
    fn every_algorithm_builds_from_its_name_and_runs() {
        let vs = views(&[0.05, 0.1], 1000);
        let paths = Paths(&vs);
        for alg in Algorithm::ALL {
            let name: Algorithm = alg.name().parse().unwrap();
            let mut c = MultipathConfig::new(name, Bytes(1000), WindowConfig::default())
                .build()
                .unwrap();
            assert_eq!(c.algorithm(), alg);
            add_paths(&mut c, 2, 1000);
            for _ in 0..100 {
                c.on_ack(PathId(0), &ack(1000), &paths);
                c.on_ack(PathId(1), &ack(1000), &paths);
            }
            c.on_congestion_event(PathId(0), &loss(), &paths);
            c.on_recovery_end(PathId(0), Instant::ZERO, &paths);
            assert!(c.window(PathId(0)) >= Bytes(1000), "{alg}");
            assert!(c.ssthresh(PathId(0)).is_some(), "{alg}");
            assert!(c.window(PathId(1)) > Bytes(2000), "{alg}");
            c.on_path_removed(PathId(1));
            assert_eq!(c.window(PathId(1)), Bytes::ZERO, "{alg}");
            assert_eq!(c.metrics(PathId(7)), Metrics::default(), "{alg}");
        }
    }

    #[test]
    fn linux_arithmetic_only_where_the_kernel_had_it() {
        for alg in Algorithm::ALL {
            let cfg = MultipathConfig::new(alg, Bytes(1000), WindowConfig::default());
            let r = cfg.with_arithmetic(Arithmetic::Linux);
            assert_eq!(r.is_ok(), alg.supports(Arithmetic::Linux), "{alg}");
            assert!(cfg.with_arithmetic(Arithmetic::Spec).is_ok());
        }
        let e = MultipathConfig::new(Algorithm::RpMpV2, Bytes(1000), WindowConfig::default())
            .with_counting(Counting::PerAckEvent)
            .unwrap_err();
        assert!(e.to_string().contains("rpmp-v2"));
    }

    #[test]
    fn bad_windows_are_errors_not_panics() {
        let w = WindowConfig::default().initial_window(0);
        for alg in Algorithm::ALL {
            let e = MultipathConfig::new(alg, Bytes(1000), w)
                .build()
                .unwrap_err();
            assert!(matches!(e, ConfigError::OutOfRange { .. }), "{alg}: {e}");
        }
        let e = MultipathConfig::new(Algorithm::Uncoupled, Bytes(0), WindowConfig::default())
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("mss"));
    }
}
