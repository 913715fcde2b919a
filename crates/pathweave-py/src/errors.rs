//! Every error that crosses into Python is made here.
//!
//! * [`PathweaveError`] is the base class of everything pathweave raises.
//! * [`ScenarioError`] carries a [`pathweave_sim::ScenarioError`]: its `str()` is the Rust
//!   `Display` message, and its `file`, `field`, `value` and `message` attributes hold the
//!   parts (`None` where the variant has no such part).
//! * [`guard`] runs simulator code so that a panic becomes a `PathweaveError` instead of
//!   unwinding into the interpreter. The error names where the panic happened; the usual
//!   "thread panicked" report on stderr is kept for panics outside a guard, and inside one
//!   only when `RUST_BACKTRACE` asks for it.

use pathweave_sim::ScenarioError as SimScenarioError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::cell::{Cell, RefCell};
use std::panic::{self, catch_unwind, UnwindSafe};
use std::sync::Once;

pyo3::create_exception!(
    pathweave._core,
    PathweaveError,
    PyException,
    "Base class of every error raised by pathweave."
);

pyo3::create_exception!(
    pathweave._core,
    ScenarioError,
    PathweaveError,
    "A scenario could not be read or is invalid.\n\n\
     str() is the full message. The attributes `file`, `field`, `value` and `message` hold its \
     parts; each is None where it does not apply (an unreadable file has no field)."
);

pyo3::create_exception!(
    pathweave._core,
    EmulationRefused,
    PathweaveError,
    "A scenario cannot be emulated here: too large, an algorithm the kernel lacks, or a machine \
     without root, /dev/net/tun or MPTCP. Nothing was created."
);

pyo3::create_exception!(
    pathweave._core,
    EmulationError,
    PathweaveError,
    "An emulated run failed part-way; everything it created has been removed."
);

/// The parts of a scenario error, in attribute order: file, field, value, message.
fn parts(e: &SimScenarioError) -> [Option<&str>; 4] {
    match e {
        SimScenarioError::Io { file, message } | SimScenarioError::Syntax { file, message } => {
            [Some(file), None, None, Some(message)]
        }
        SimScenarioError::Missing {
            file,
            field,
            message,
        } => [Some(file), Some(field), None, Some(message)],
        SimScenarioError::Invalid {
            file,
            field,
            value,
            message,
        } => [Some(file), Some(field), Some(value), Some(message)],
    }
}

/// Convert a scenario error into a Python `ScenarioError` with its attributes set.
pub(crate) fn scenario_error(py: Python<'_>, e: &SimScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    for (name, part) in ["file", "field", "value", "message"]
        .into_iter()
        .zip(parts(e))
    {
        // Setting an attribute on a fresh exception instance only fails if memory runs out;
        // report that failure rather than an exception with missing attributes.
        if let Err(failure) = value.setattr(name, part) {
            return failure;
        }
    }
    err
}

thread_local! {
    /// Whether this thread is inside [`guard`].
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    /// Where the last guarded panic on this thread happened.
    static PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install, once per process, a panic hook that records the location of guarded panics and
/// hands every other panic to the hook that was there before.
fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(Cell::get) {
                return previous(info);
            }
            let location = info.location().map(|l| l.to_string());
            PANIC_LOCATION.with(|cell| *cell.borrow_mut() = location);
            if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
                previous(info);
            }
        }));
    });
}

/// Run `f`, turning a panic into an `Err` describing it.
///
/// The simulator is meant never to panic; if it does, the caller must treat the state `f`
/// touched as unusable.
pub(crate) fn guard<T>(f: impl FnOnce() -> T + UnwindSafe) -> Result<T, String> {
    install_panic_hook();
    let outer = GUARDED.with(|g| g.replace(true));
    let outcome = catch_unwind(f);
    GUARDED.with(|g| g.set(outer));
    outcome.map_err(|payload| {
        let what = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "unknown panic".to_string()
        };
        let at = PANIC_LOCATION
            .with(|cell| cell.borrow_mut().take())
            .map_or_else(String::new, |l| format!(" at {l}"));
        format!("internal error in the simulator{at}: {what} (please report this as a bug)")
    })
}

/// A `PathweaveError` carrying `message`.
pub(crate) fn pathweave_error(message: impl Into<String>) -> PyErr {
    PathweaveError::new_err(message.into())
}
