//! External flows (`pathweave emulate --external NAME`): the emulator builds the flow's two
//! namespaces, devices, addresses and routes and runs its links, but starts no application.
//! Whoever asked for it runs their own (`ip netns exec NAME …`, with the names and addresses
//! the run announces on stderr), for instance `pathweave quic serve` and `pathweave quic send`,
//! or any other program that speaks IP.
//!
//! The flow's scenario algorithm, traffic, start and stop do not apply: the applications
//! decide them. The emulator sees packets, not application bytes: the flow's rows report the
//! IP bytes its data routes delivered (`throughput_bps`), no goodput, and no subflow state.

use super::{
    namespace_sysctls, Ends, FlowCounters, FlowState, NamespaceNeeds, SubflowReading, Transport,
};
use crate::Clock;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The devices' MTU for an external flow: Ethernet's, so that an application finds what it
/// would on an ordinary host.
pub(crate) const EXTERNAL_MTU: u32 = 1500;

/// A flow whose applications run outside the emulator.
pub(crate) struct External;

impl Transport for External {
    fn needs(&self, _ends: &Ends) -> NamespaceNeeds {
        NamespaceNeeds {
            sysctls: namespace_sysctls(true),
            mtu: EXTERNAL_MTU,
            sender_route_options: String::new(),
            receiver_route_options: String::new(),
            sender_commands: Vec::new(),
            receiver_commands: Vec::new(),
        }
    }

    fn listen(&self, _ends: &Ends) -> Result<Option<OwnedFd>, String> {
        Ok(None)
    }

    fn start_receiver(
        &self,
        _ends: &Ends,
        _listener: OwnedFd,
        _state: &Arc<FlowState>,
        _clock: Clock,
        _stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        None
    }

    fn start_sender(
        &self,
        _ends: &Ends,
        _state: &Arc<FlowState>,
        _clock: Clock,
        _stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        None
    }

    fn has_subflows(&self) -> bool {
        false
    }

    fn read(&mut self, _ends: &Ends, _state: &FlowState) -> Vec<(usize, SubflowReading)> {
        Vec::new()
    }

    fn finish(&mut self, _state: &FlowState) {}

    fn counters(&self, _state: &FlowState) -> FlowCounters {
        FlowCounters::default()
    }
}
