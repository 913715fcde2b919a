//! Coupled congestion control for upstream Linux MPTCP as BPF `struct_ops`: `pw_lia`,
//! `pw_olia`, `pw_balia`, `pw_coupled` (fully coupled), `pw_bmc` (BMC's weighted AIMD) and
//! `pw_kv` (Kelly–Voice), with the integer arithmetic of `pathweave-cc`'s `linux` modes.
//!
//! * `src/bpf/pw_arith.h` — the arithmetic, shared by the BPF programs and [`arith`] (a C
//!   library the tests call through FFI, so the kernel's code is the code under test).
//! * `src/bpf/pw.bpf.c` — the controllers; `src/bpf/pw_intf.h` — the maps' layout, mirrored
//!   by [`maps`].
//! * [`loader`] (feature `bpf`) — loads the programs with libbpf-rs, pins their links under
//!   `/sys/fs/bpf/pathweave/PREFIX/`, unloads them and reports their state.
//! * [`reference`] (feature `bpf`) — `pwref_reno`, the kernel's Reno behind a struct_ops
//!   table, so the BPF statistics can time it beside the `pw_*` controllers.
//! * [`bmc`] — BMC's proportion manager in userspace, on `pathweave-cc`'s own code.
//!
//! Invariants: a connection's entry exists exactly while at least one of its subflows is
//! registered; a socket that is not a registered subflow of a connection with two usable
//! subflows runs Reno.

/// A module `$name` holding the libbpf-rs skeleton build.rs generated as `$file` in OUT_DIR.
/// Generated code: it calls libbpf through `unsafe` and is not held to the crate's lints.
#[cfg(feature = "bpf")]
macro_rules! bpf_skeleton {
    ($name:ident, $file:literal) => {
        #[allow(
            unsafe_code,
            missing_docs,
            unreachable_pub,
            clippy::all,
            clippy::pedantic,
            non_camel_case_types,
            dead_code
        )]
        mod $name {
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
    };
}

pub mod arith;
pub mod bmc;
pub mod cli;
pub mod error;
#[cfg(feature = "bpf")]
pub mod loader;
pub mod maps;
pub mod names;
#[cfg(feature = "bpf")]
pub mod reference;

pub use error::KernelError;
pub use names::{Algorithm, Prefix};

/// The version of the BPF programs (`PW_VERSION` in `pw_intf.h`), stored in the stats map.
pub const PROGRAM_VERSION: u64 = 7;

/// Whether this build contains the BPF programs.
pub const HAS_BPF: bool = cfg!(feature = "bpf");
