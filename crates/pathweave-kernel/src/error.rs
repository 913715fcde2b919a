//! Errors of the loader and the command, each with the exit code it maps to: 2 for a machine
//! or an argument that cannot work (the message says what is missing and how to get it), 1
//! for a failure while loading or running.

use thiserror::Error;

/// What went wrong.
#[derive(Debug, Error)]
pub enum KernelError {
    /// Bad command-line input.
    #[error("{0}")]
    BadArgument(String),
    /// Not running as root; what was being done ("loading", "unloading", ...).
    #[error(
        "{0} BPF congestion controls needs root \
         (CAP_BPF and CAP_NET_ADMIN); run as root"
    )]
    NotRoot(&'static str),
    /// No kernel BTF.
    #[error(
        "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing); BPF struct_ops needs a \
         kernel built with CONFIG_DEBUG_INFO_BTF=y"
    )]
    NoBtf,
    /// The kernel cannot register a BPF tcp_congestion_ops.
    #[error(
        "this kernel does not support BPF struct_ops congestion control (needs Linux ≥ 5.13 \
         with CONFIG_BPF_JIT and CONFIG_BPF_SYSCALL; ≥ 6.4 for struct_ops links): {0}"
    )]
    NoStructOps(String),
    /// A name is registered by something that is not this prefix's pinned load.
    #[error(
        "the congestion control {0:?} is already registered by another program; unload it or \
         choose another prefix with --prefix"
    )]
    NameTaken(String),
    /// This prefix is already loaded.
    #[error(
        "the controllers with prefix {0:?} are already loaded; see `status`, or `unload` first"
    )]
    AlreadyLoaded(String),
    /// The prefix's pin directory holds what an earlier load left (some of its pins).
    #[error(
        "{dir} already holds pins ({found}) but not a whole load (missing: {missing}): what is \
         left of an earlier load that was partly removed or failed; remove it with \
         `pathweave kernel unload --prefix {prefix}`, then load again"
    )]
    StalePins {
        /// The pin directory.
        dir: String,
        /// What it holds.
        found: String,
        /// What a whole load would hold besides.
        missing: String,
        /// The prefix.
        prefix: String,
    },
    /// `status` could not read these directories under the pin root as loads (each reported).
    #[error(
        "status: {0} under /sys/fs/bpf/pathweave could not be read (see above); the other \
         prefixes are listed"
    )]
    BrokenPins(String),
    /// Nothing is loaded under this prefix.
    #[error("no controllers with prefix {0:?} are loaded")]
    NotLoaded(String),
    /// Built without the BPF toolchain.
    #[error(
        "this build of pathweave has no BPF programs (built without the `bpf` feature, e.g. \
         because clang, bpftool, libbpf-dev or libelf-dev were missing); install them \
         (Debian: apt-get install clang bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config)"
    )]
    NoBpfBuild,
    /// libbpf failed (verifier rejection, attach failure, …).
    #[error("{context}: {source}")]
    Bpf {
        /// What was being done.
        context: String,
        /// libbpf's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A file-system operation on the pins failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

impl KernelError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            KernelError::Bpf { .. } | KernelError::Io { .. } | KernelError::BrokenPins(_) => 1,
            _ => 2,
        }
    }

    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> KernelError {
        KernelError::Io {
            context: context.into(),
            source,
        }
    }
}
