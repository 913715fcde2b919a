//! pathweave-sim: a packet-level discrete-event simulator for congestion control.
//!
//! * [`datacenter`] generates FatTree, VL2 and BCube fabrics, their ECMP routes and traffic
//!   matrices, which `[topology]` and `[traffic]` scenario tables expand into links and flows.
//! * [`scenario`] reads and validates TOML scenario files into a [`Scenario`].
//! * [`sim::Simulation`] builds the network and runs it; [`results::Results`] is what it reports.
//! * [`link`], [`red`], [`tcp`], [`quic`] and [`udp`] are the network elements and endpoints.
//! * [`event`], [`packet`] and [`net`] are the engine: integer-nanosecond time, at most one
//!   pending event per component, packets carried in their link slots.
//! * [`capture`] writes pcapng captures of link directions and the per-packet queue log.
//! * [`hugepages`] is a global allocator that binaries install to back many-flow runs with
//!   huge pages.
//!
//! The same scenario and seed always give the same results, bit for bit.

pub mod capture;
pub mod datacenter;
pub mod event;
pub mod hugepages;
pub mod link;
pub mod net;
pub mod packet;
mod prefetch;
pub mod quantity;
pub mod quic;
pub mod red;
pub mod results;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod tcp;
pub mod topology;
pub mod udp;

pub use results::Results;
pub use scenario::{Scenario, ScenarioError};
pub use sim::Simulation;

/// Load, run and check a scenario in one call.
pub fn run_scenario(scenario: &Scenario, seed: Option<u64>) -> Results {
    let mut sim = Simulation::new(scenario, seed);
    sim.run();
    sim.results()
}
