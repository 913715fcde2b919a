//! `pathweave._core.Simulation`: one run of one scenario, advanced from Python in steps.
//!
//! Invariants:
//! * simulated time only moves forward: `advance` to a time before `now_s` does nothing;
//! * the interpreter is released (`py.detach`) while events are processed, so other Python
//!   threads keep running;
//! * a panic inside the simulator is caught and the object is marked broken: every later call
//!   raises `PathweaveError` instead of touching state the panic may have left inconsistent.

use crate::errors::{guard, pathweave_error};
use crate::results::{capture_dict, packet_log_dict, results_dict, series_dict};
use crate::scenario::PyScenario;
use pathweave_cc::Instant;
use pathweave_sim::capture::CaptureSpec;
use pathweave_sim::Simulation;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::AssertUnwindSafe;

/// A running simulation of a scenario.
///
/// `Simulation(scenario, seed=None)` builds the network; `seed` overrides the scenario's own.
/// Call `advance(until_s)` until `finished`, then `results()`. Use one Simulation from one
/// thread at a time: while `advance` runs, other threads may run Python code but calls on this
/// object raise RuntimeError (already borrowed).
#[pyclass(module = "pathweave._core", name = "Simulation")]
pub(crate) struct PySimulation {
    /// None once a panic has made the state untrustworthy.
    sim: Option<Simulation>,
    scenario: Py<PyScenario>,
    seed: u64,
}

// `advance` moves `&mut Simulation` to a thread-agnostic closure while the interpreter is
// released, and Python objects may be used from any thread: both need these bounds.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Simulation>();
};

const BROKEN: &str = "this simulation stopped after an internal error; start a new one";

impl PySimulation {
    fn sim(&self) -> PyResult<&Simulation> {
        self.sim.as_ref().ok_or_else(|| pathweave_error(BROKEN))
    }

    /// Run `f` on the simulation, catching a panic and marking the simulation broken if one
    /// happens.
    fn with_sim<T>(&mut self, f: impl FnOnce(&mut Simulation) -> T) -> PyResult<T> {
        let sim = self.sim.as_mut().ok_or_else(|| pathweave_error(BROKEN))?;
        match guard(AssertUnwindSafe(|| f(sim))) {
            Ok(v) => Ok(v),
            Err(message) => {
                self.sim = None;
                Err(pathweave_error(message))
            }
        }
    }
}

fn seconds(t: Instant) -> f64 {
    t.0 as f64 / 1e9
}

#[pymethods]
impl PySimulation {
    #[new]
    #[pyo3(signature = (scenario, seed = None))]
    fn new(scenario: Bound<'_, PyScenario>, seed: Option<Bound<'_, PyAny>>) -> PyResult<Self> {
        let seed = match seed {
            None => None,
            Some(s) => Some(s.extract::<u64>().map_err(|_| {
                PyValueError::new_err(format!(
                    "seed must be an integer from 0 to 2**64 - 1, not {}",
                    s.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
                ))
            })?),
        };
        let spec = &scenario.get().inner;
        let sim =
            guard(AssertUnwindSafe(|| Simulation::new(spec, seed))).map_err(pathweave_error)?;
        Ok(PySimulation {
            seed: seed.unwrap_or(spec.seed),
            sim: Some(sim),
            scenario: scenario.unbind(),
        })
    }

    /// Run until simulated time `until_s` (seconds) or the end, whichever comes first.
    ///
    /// The interpreter is released while it runs. A time at or before `now_s` does nothing;
    /// `float("inf")` runs to the end. Raises ValueError for NaN or a negative time.
    fn advance(&mut self, py: Python<'_>, until_s: f64) -> PyResult<()> {
        if until_s.is_nan() || until_s < 0.0 {
            return Err(PyValueError::new_err(format!(
                "until_s must be a time in seconds ≥ 0, not {until_s}"
            )));
        }
        let sim = self.sim()?;
        let (now, end) = (sim.now(), sim.end());
        // Saturating float-to-int conversion: infinity and huge times land on the end.
        let target = Instant((until_s * 1e9).round() as u64).min(end);
        if target <= now {
            return Ok(());
        }
        py.detach(|| self.with_sim(|s| s.run_until(target)))
    }

    /// Current simulated time in seconds.
    #[getter]
    fn now_s(&self) -> PyResult<f64> {
        Ok(seconds(self.sim()?.now()))
    }

    /// Simulated time at which the run ends, in seconds.
    #[getter]
    fn end_s(&self) -> PyResult<f64> {
        Ok(seconds(self.sim()?.end()))
    }

    /// Whether the run has reached its end.
    #[getter]
    fn finished(&self) -> PyResult<bool> {
        Ok(self.sim()?.finished())
    }

    /// Events processed so far.
    #[getter]
    fn events(&self) -> PyResult<u64> {
        Ok(self.sim()?.events())
    }

    /// The seed in use (the one given, else the scenario's).
    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }

    /// The scenario being run.
    #[getter]
    fn scenario(&self, py: Python<'_>) -> Py<PyScenario> {
        self.scenario.clone_ref(py)
    }

    /// Results at the current time: a dict of tables (see the type stub for the layout).
    ///
    /// The time series hold the rows sampled since the last `take_series` (all of them if it
    /// was never called).
    fn results<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let results = py.detach(|| self.with_sim(|s| s.results()))?;
        results_dict(py, &results, &self.scenario.get().inner.series)
    }

    /// Move out the time series sampled since the start or the previous call: a dict of the
    /// tables `flow_series`, `subflow_series` and `link_series`. A driver that writes each
    /// one out as the run goes keeps memory flat however long the simulated time.
    fn take_series<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let chunk = self.with_sim(|s| s.take_series())?;
        series_dict(py, &chunk, &self.scenario.get().inner.series)
    }

    /// Capture this run into the existing directory `directory` as the scenario's
    /// `[capture]` asks (every link direction with the defaults without one): a pcapng file
    /// per link direction and, with `events`, the queue log for `take_packet_log`. Only
    /// before the first `advance`. Raises PathweaveError if the files cannot be created.
    fn start_capture(&mut self, directory: std::path::PathBuf) -> PyResult<()> {
        let spec = {
            let sc = &self.scenario.get().inner;
            sc.capture
                .clone()
                .unwrap_or_else(|| CaptureSpec::everything(sc.links.len()))
        };
        self.with_sim(|s| s.start_capture(&spec, &directory))?
            .map_err(pathweave_error)
    }

    /// Move out the queue log's rows recorded since the start or the previous call: a dict
    /// of columns (`time_s`, `link_dir`, `flow`, `subflow`, `sequence`, `bytes`, `event`,
    /// `queue_bytes`, `queue_packets`; `link_dir` is 2·link + reverse, `event` a code
    /// 0 enqueue, 1 drop, 2 dequeue). With a capture whose queue log is on, `advance` may
    /// return before its target time once many rows wait here.
    fn take_packet_log<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let log = self.with_sim(|s| s.take_packet_log())?;
        packet_log_dict(py, &log)
    }

    /// The capture's warnings raised since the last call (a file that reached max_bytes, the
    /// queue log reaching max_events), one line each.
    fn take_capture_warnings(&mut self) -> PyResult<Vec<String>> {
        self.with_sim(|s| s.take_capture_warnings())
    }

    /// End the capture and close its files: a dict with `files` (a list of dicts: `name`,
    /// `link`, `direction`, `packets`, `bytes`, `truncated`), `log_rows`, `log_truncated`,
    /// the queue log's last rows as `log` and the last `warnings`. Raises PathweaveError if a
    /// file could not be written.
    fn finish_capture<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (summary, log, warnings) = self
            .with_sim(|s| s.finish_capture())?
            .map_err(pathweave_error)?;
        capture_dict(py, &summary, &log, warnings)
    }

    /// Check that every packet sent is accounted for (delivered, dropped or still in a link).
    ///
    /// Raises PathweaveError naming the first flow that breaks conservation.
    fn check_conservation(&mut self) -> PyResult<()> {
        self.with_sim(|s| s.check_conservation())?
            .map_err(|e| pathweave_error(format!("packet conservation violated: {e}")))
    }

    fn __repr__(&self) -> String {
        let name = &self.scenario.get().inner.name;
        match &self.sim {
            Some(s) => format!(
                "Simulation(scenario={name:?}, seed={}, now_s={}, end_s={})",
                self.seed,
                seconds(s.now()),
                seconds(s.end())
            ),
            None => format!("Simulation(scenario={name:?}, seed={}, broken)", self.seed),
        }
    }
}
