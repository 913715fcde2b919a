//! `pathweave-kernel load | unload | status | bmc-manager`: the command line of
//! [`pathweave_kernel::cli`] as a binary of its own, for machines without Python. The Python
//! package reaches the same code as `pathweave kernel …`. Exit codes: 0 success, 1 a failure
//! while loading or running, 2 bad input or a machine that cannot run BPF congestion control.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Ctrl-C and SIGTERM end the process as they would any other; the controllers a load
    // pinned stay, and nothing else outlives it.
    let stop = AtomicBool::new(false);
    let code = pathweave_kernel::cli::main(
        &args,
        &stop,
        "then rebuild this binary (make kernel, or cargo build --release -p pathweave-kernel)",
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
