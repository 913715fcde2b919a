//! Long native work that Python's signals can stop: the work runs on a thread of its own while
//! the interpreter is released, and every 50 ms the calling thread takes the interpreter back
//! to let Python's signal handlers run. A KeyboardInterrupt (Ctrl-C), or any exception a
//! handler raises (the CLI turns SIGTERM into one), sets the work's stop flag; the work is
//! waited for (so that it cleans up) and the exception is raised once it has returned.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs `work` on a thread named `name` with a stop flag, as above. `what` names the work in
/// the errors for a thread that could not start or that panicked.
pub(crate) fn run<T, F>(
    py: Python<'_>,
    name: &str,
    what: &str,
    work: F,
    error: fn(String) -> PyErr,
) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&AtomicBool) -> T + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || work(&flag))
        .map_err(|e| error(format!("cannot start {what}: {e}")))?;
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
    let value = handle
        .join()
        .map_err(|_| error(format!("{what} panicked")))?;
    match pending {
        Some(e) => Err(e),
        None => Ok(value),
    }
}
