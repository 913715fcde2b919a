//! `pathweave._core.emulate`: run a scenario over real kernel stacks through the emulator.
//!
//! The run happens on a thread of its own while the interpreter is released
//! ([`crate::interruptible`]): a KeyboardInterrupt (Ctrl-C) or any exception a signal handler
//! raises (the CLI turns SIGTERM into one) stops the run, waits for its clean-up (namespaces,
//! devices, threads) and is re-raised.

use crate::errors::{EmulationError, EmulationRefused};
use crate::results::{capture_dict, results_dict};
use crate::scenario::PyScenario;
use pathweave_emu::{CaptureRequest, EmuError, Lateness, Options, Report};
use pathweave_sim::capture::CaptureSpec;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn to_py_err(e: EmuError) -> PyErr {
    match e {
        EmuError::Refused(_) | EmuError::Environment(_) => EmulationRefused::new_err(e.to_string()),
        _ => EmulationError::new_err(e.to_string()),
    }
}

/// Percentiles of a nanosecond histogram as a dict of milliseconds.
fn percentiles_ms<'py>(py: Python<'py>, lat: &Lateness) -> PyResult<Bound<'py, PyDict>> {
    let l = PyDict::new(py);
    l.set_item("packets", lat.count)?;
    l.set_item("mean_ms", lat.mean_ns / 1e6)?;
    for (k, v) in [
        ("p50_ms", lat.p50_ns),
        ("p90_ms", lat.p90_ns),
        ("p99_ms", lat.p99_ns),
        ("p999_ms", lat.p999_ns),
        ("max_ms", lat.max_ns),
    ] {
        l.set_item(k, v as f64 / 1e6)?;
    }
    Ok(l)
}

fn report_dict<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("run_id", &r.run_id)?;
    d.set_item("namespaces", PyList::new(py, &r.namespaces)?)?;
    d.set_item("kernel_algorithms", PyList::new(py, &r.kernel_algorithms)?)?;
    d.set_item("controllers_prefix", &r.controllers_prefix)?;
    d.set_item("weight_updates", r.weight_updates)?;
    let counters = PyDict::new(py);
    for (name, v) in &r.controller_counters {
        counters.set_item(name, v)?;
    }
    d.set_item("controller_counters", counters)?;
    d.set_item("lateness", percentiles_ms(py, &r.lateness)?)?;
    d.set_item("intake_wait", percentiles_ms(py, &r.intake_wait)?)?;
    d.set_item("lateness_limit_ms", r.lateness_limit_ns as f64 / 1e6)?;
    d.set_item("emulator_drops", r.emulator_drops)?;
    d.set_item("device_drops", r.device_drops)?;
    d.set_item("realtime_priority", r.realtime)?;
    d.set_item("link_thread_cpu_s", r.link_thread_cpu_s)?;
    d.set_item("packets_read", r.packets_read)?;
    d.set_item("reliable", r.reliable)?;
    d.set_item(
        "unreliable_because",
        PyList::new(py, &r.unreliable_because)?,
    )?;
    let transfers = PyList::empty(py);
    for t in &r.transfers {
        let x = PyDict::new(py);
        x.set_item("flow", t.flow)?;
        x.set_item("sent_bytes", t.sent_bytes)?;
        x.set_item("received_bytes", t.received_bytes)?;
        x.set_item("sent_fnv1a64", format!("{:016x}", t.sent_hash))?;
        x.set_item("received_fnv1a64", format!("{:016x}", t.received_hash))?;
        x.set_item("mismatched_bytes", t.mismatched_bytes)?;
        x.set_item("complete", t.complete)?;
        transfers.append(x)?;
    }
    d.set_item("transfers", transfers)?;
    d.set_item("wall_s", r.wall_s)?;
    Ok(d)
}

/// The capture as a dict (see `capture_dict`), each file with `in_flight_at_end`.
type Emulated<'py> = (
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Option<Bound<'py, PyDict>>,
);

/// Emulate `scenario` in real time; returns `(results, report, capture)` as dicts, `capture`
/// None unless `capture_dir` (an existing directory) was given: then the packets the links
/// carry are captured there as the scenario's `[capture]` asks (every link direction with the
/// defaults without one), and `capture` says what was written, with the queue log's rows.
///
/// Raises `EmulationRefused` when the scenario or the machine cannot be emulated (nothing was
/// created) and `EmulationError` when the run failed; either way nothing is left behind.
#[pyfunction]
#[pyo3(signature = (scenario, seed = None, max_load_bps = None, reno_congestion = None, external = Vec::new(), capture_dir = None))]
pub(crate) fn emulate<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyScenario>,
    seed: Option<u64>,
    max_load_bps: Option<u64>,
    reno_congestion: Option<String>,
    external: Vec<String>,
    capture_dir: Option<std::path::PathBuf>,
) -> PyResult<Emulated<'py>> {
    let spec = scenario.get().inner.clone();
    let capture = capture_dir.map(|dir| CaptureRequest {
        dir,
        spec: spec
            .capture
            .clone()
            .unwrap_or_else(|| CaptureSpec::everything(spec.links.len())),
    });
    let mut opts = Options {
        seed,
        reno_congestion,
        external,
        capture,
        ..Options::default()
    };
    if let Some(m) = max_load_bps {
        opts.max_load_bps = m;
    }
    // Refusals come back at once, before any thread or namespace exists.
    pathweave_emu::check_scenario(&spec, &opts).map_err(to_py_err)?;
    let outcome = crate::interruptible::run(
        py,
        "pw-emulate",
        "the emulator",
        move |stop| pathweave_emu::emulate(&spec, &opts, stop),
        EmulationError::new_err,
    )?;
    let o = outcome.map_err(to_py_err)?;
    let series = &scenario.get().inner.series;
    let capture = match o.capture {
        Some(c) => {
            let d = capture_dict(py, &c.summary, &c.log, c.warnings)?;
            if let Some(files) = d.get_item("files")? {
                for (k, n) in c.in_flight_at_end.iter().enumerate() {
                    files.get_item(k)?.set_item("in_flight_at_end", n)?;
                }
            }
            Some(d)
        }
        None => None,
    };
    Ok((
        results_dict(py, &o.results, series)?,
        report_dict(py, &o.report)?,
        capture,
    ))
}

/// Remove the namespaces mounted under /run/netns by emulations whose process is gone (runs
/// that named theirs with `PATHWEAVE_NAME_NAMESPACES=1`, or older versions); returns their
/// names.
#[pyfunction]
pub(crate) fn emulate_cleanup() -> PyResult<Vec<String>> {
    pathweave_emu::cleanup_leftovers().map_err(to_py_err)
}

/// Namespaces of emulations present now: those mounted under /run/netns, by name, and with
/// `pid` only process `pid`'s, followed by the namespaces the live process holds, as
/// `/proc/<pid>/…` paths for `nsenter --net=…` (see `pathweave_emu::leftovers`).
#[pyfunction]
#[pyo3(signature = (pid = None))]
pub(crate) fn emulate_leftovers(pid: Option<u32>) -> Vec<String> {
    pathweave_emu::leftovers(pid)
}

/// Raise `EmulationRefused` if `scenario` cannot be emulated; touches nothing.
#[pyfunction]
#[pyo3(signature = (scenario, max_load_bps = None, reno_congestion = None, external = Vec::new()))]
pub(crate) fn emulate_check(
    scenario: &Bound<'_, PyScenario>,
    max_load_bps: Option<u64>,
    reno_congestion: Option<String>,
    external: Vec<String>,
) -> PyResult<()> {
    let mut opts = Options {
        reno_congestion,
        external,
        ..Options::default()
    };
    if let Some(m) = max_load_bps {
        opts.max_load_bps = m;
    }
    pathweave_emu::check_scenario(&scenario.get().inner, &opts).map_err(to_py_err)
}
