//! pathweave-quic: pathweave-cc's multipath controllers inside a real multipath QUIC stack.
//!
//! * [`adapter`] — quinn's per-path congestion-control interface in front of one coupled
//!   controller per connection ([`adapter::Coupled`], [`adapter::CoupledFactory`]).
//! * [`socket`] — one UDP socket per local address, one path per socket.
//! * [`cert`] — a self-signed certificate per receiver, pinned by fingerprint at the sender.
//! * [`control`] — the controller `--algorithm NAME` names.
//! * [`cli`] — `pathweave quic serve | send`.
//! * [`transfer`] — the bulk-transfer protocol both ends speak, with its integrity check.
//! * [`endpoint`] — the receiver and the sender, for real hosts and for the emulator.
//! * [`probe`] — per-path samples into the simulator's result tables.
//!
//! The QUIC library is `iroh-quinn` (a quinn line with draft-ietf-quic-multipath): it builds
//! each path's controller through quinn's public `congestion::ControllerFactory`, and its
//! sending side pulls data into whichever path's window has room.

pub mod adapter;
pub mod cert;
pub mod cli;
pub mod control;
pub mod endpoint;
pub mod probe;
pub mod socket;
pub mod transfer;

pub use adapter::{Coupled, CoupledFactory, PathSnapshot};
pub use control::control;
pub use endpoint::{Amount, ReceiveOptions, Received, SendOptions, SendReport, Settings};
/// quinn's path identifier and counters, as [`endpoint::LivePath`] and
/// [`endpoint::PathSample`] carry them.
pub use quinn_proto::{PathId, PathStats};

/// What can go wrong, by what the user can do about it.
#[derive(Debug, thiserror::Error)]
pub enum QuicError {
    /// Bad input: an option, an address, an algorithm. Exit status 2.
    #[error("{0}")]
    Usage(String),
    /// Setting up TLS failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// A socket or the runtime failed.
    #[error("{0}")]
    Io(String),
    /// The peer did not answer in time.
    #[error("{0}")]
    Timeout(String),
    /// The connection failed or closed early.
    #[error("{0}")]
    Connection(String),
    /// The bytes the receiver got are not the bytes sent.
    #[error("{0}")]
    Transfer(String),
    /// Stopped by the caller (Ctrl-C, SIGTERM).
    #[error("stopped")]
    Stopped,
}

impl QuicError {
    /// The process exit status for this error: 2 for bad input, 130 when stopped, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            QuicError::Usage(_) => 2,
            QuicError::Stopped => 130,
            _ => 1,
        }
    }
}
