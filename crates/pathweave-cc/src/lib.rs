//! pathweave-cc: congestion controllers with no I/O, no clock and no global randomness.
//!
//! The crate is driven by a transport (the pathweave simulator, or a real socket layer):
//! the transport measures round-trip times and bytes in flight and reports acknowledgements,
//! losses and timeouts; the controller owns its windows and answers `window()`.
//!
//! * [`units`] — newtypes for time, sizes and rates.
//! * [`rtt`] — the RFC 6298 round-trip-time estimator every transport shares.
//! * [`cc`] — the [`Controller`](cc::Controller) and
//!   [`MultipathController`](cc::multipath::MultipathController) traits and the algorithms.

pub mod cc;
pub mod rtt;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod units;

pub use cc::{Ack, AnyController, CongestionEvent, Controller, Metrics, PathView, Rto};
pub use units::{Bandwidth, Bytes, Duration, Instant};
