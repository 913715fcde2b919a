//! `pathweave kernel …` inside the extension: pathweave-kernel's own command line
//! ([`pathweave_kernel::cli`]), so an installed package loads, lists and unloads the BPF
//! controllers it was built with, without a binary of its own.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How a package built without the BPF programs gets them.
const REBUILD: &str = "then reinstall the package from its source so that it is built with \
                       them (pip install --force-reinstall --no-binary pathweave pathweave, or \
                       pip install --force-reinstall . in a checkout); `python3 \
                       build_support/pathweave_build.py` in a checkout says what the build \
                       finds";

/// Runs `pathweave kernel ARGV…` and returns its exit code. Messages go to the process's
/// standard output and error. The interpreter is released while it runs; a signal that
/// raises in Python (Ctrl-C) stops `bmc-manager` at its next check and is raised here once
/// the command has returned.
#[pyfunction]
pub(crate) fn kernel_main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("pw-kernel".to_string())
        .spawn(move || pathweave_kernel::cli::main(&argv, &flag, REBUILD))
        .map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start the command: {e}"))
        })?;
    let mut pending: Option<PyErr> = None;
    while !handle.is_finished() {
        py.detach(|| std::thread::sleep(std::time::Duration::from_millis(50)));
        if pending.is_none() {
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::Relaxed);
                pending = Some(e);
            }
        }
    }
    let code = handle.join().map_err(|_| {
        pyo3::exceptions::PyRuntimeError::new_err("pathweave kernel: the command panicked")
    })?;
    match pending {
        Some(e) => Err(e),
        None => Ok(code),
    }
}
