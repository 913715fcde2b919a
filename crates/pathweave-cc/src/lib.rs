//! pathweave-cc: congestion controllers with no I/O, no clock and no global randomness.
//!
//! The crate is driven by a transport (the pathweave simulator, or a real socket layer):
//! the transport measures round-trip times and bytes in flight and reports acknowledgements,
//! losses and timeouts; the controller owns its windows and answers `window()`.
//!
//! * [`units`] — newtypes for time, sizes and rates.
//! * [`rtt`] — the RFC 6298 round-trip-time estimator every transport shares.
//! * [`cc`] — the [`Controller`] and [`MultipathController`] traits and the algorithms:
//!   NewReno, weighted AIMD, Veno, Westwood+, and the multipath family in [`cc::multipath`]
//!   (LIA, OLIA, Balia, fully coupled, Kelly–Voice, EWTCP, RP-MP v2, MPTCP in bytes, wVegas,
//!   BMC, MPVeno, MPTCPW, wMPTCPW, uncoupled), built by name through [`MultipathConfig`] into
//!   an [`AnyMultipathController`].

pub mod cc;
pub mod rtt;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod units;

pub use cc::multipath::{
    Algorithm, AnyMultipathController, Arithmetic, ConfigError, Counting, MultipathConfig,
    MultipathController, Paths, WindowConfig,
};
pub use cc::{Ack, AnyController, CongestionEvent, Controller, Metrics, PathId, PathView, Rto};
pub use units::{Bandwidth, Bytes, Duration, Instant};
