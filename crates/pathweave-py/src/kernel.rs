//! `pathweave kernel …` inside the extension: pathweave-kernel's own command line
//! ([`pathweave_kernel::cli`]), so an installed package loads, lists and unloads the BPF
//! controllers it was built with, without a binary of its own.

use pyo3::prelude::*;

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
    crate::interruptible::run(
        py,
        "pw-kernel",
        "pathweave kernel",
        move |stop| pathweave_kernel::cli::main(&argv, stop, REBUILD),
        pyo3::exceptions::PyRuntimeError::new_err,
    )
}
