//! `pathweave._core.Scenario`: a validated scenario, immutable from Python.
//!
//! Quantities cross the boundary as plain floats whose names carry the unit (`duration_s`).

use crate::errors::{guard, pathweave_error, scenario_error};
use pathweave_sim::scenario::{read_scenario_file, FlowKind, MAX_FILE_BYTES};
use pathweave_sim::Scenario;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// A validated scenario, read from a TOML file or text.
///
/// Build one with `load_scenario` or `parse_scenario`; it cannot be changed afterwards.
#[pyclass(module = "pathweave._core", name = "Scenario", frozen)]
pub(crate) struct PyScenario {
    pub(crate) inner: Scenario,
}

#[pymethods]
impl PyScenario {
    /// The scenario's name (its `name` field, else the file's stem).
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Free text from the `description` field ("" when absent).
    #[getter]
    fn description(&self) -> &str {
        &self.inner.description
    }

    /// Simulated time in seconds.
    #[getter]
    fn duration_s(&self) -> f64 {
        self.inner.duration.as_secs_f64()
    }

    /// The scenario's own seed, used when a run is given none.
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// Interval between time-series samples, in seconds.
    #[getter]
    fn sample_interval_s(&self) -> f64 {
        self.inner.sample_interval.as_secs_f64()
    }

    /// Flow names in scenario order (after `count` expansion).
    #[getter]
    fn flow_names(&self) -> Vec<String> {
        self.inner.flows.iter().map(|f| f.name.clone()).collect()
    }

    /// Each flow's segment payload size in bytes, in scenario order; None for a CBR flow.
    #[getter]
    fn flow_mss_bytes(&self) -> Vec<Option<u32>> {
        self.inner
            .flows
            .iter()
            .map(|f| match &f.kind {
                FlowKind::Tcp { cfg, .. } => Some(cfg.mss),
                FlowKind::Cbr { .. } => None,
            })
            .collect()
    }

    /// Link names in scenario order (after `count` expansion).
    #[getter]
    fn link_names(&self) -> Vec<String> {
        self.inner.links.iter().map(|l| l.name.clone()).collect()
    }

    /// Whether the scenario has a `[capture]` table.
    #[getter]
    fn has_capture(&self) -> bool {
        self.inner.capture.is_some()
    }

    /// Whether `[capture]` asks for the queue log (`events = true`).
    #[getter]
    fn capture_events(&self) -> bool {
        self.inner.capture.as_ref().is_some_and(|c| c.events)
    }

    /// The most time-series rows one sample adds: one per recorded flow, one per subflow of a
    /// recorded TCP flow and one per recorded link direction (see `[series]`).
    #[getter]
    fn series_rows_per_sample(&self) -> u64 {
        self.inner.series.rows_per_sample(&self.inner.flows)
    }

    /// The trace files its links replay (`rate = { trace = ... }`), as resolved when read,
    /// sorted, each once.
    #[getter]
    fn trace_files(&self) -> Vec<String> {
        let files: std::collections::BTreeSet<String> = self
            .inner
            .links
            .iter()
            .flat_map(|l| [&l.forward.trace, &l.reverse.trace])
            .flatten()
            .map(|t| t.path().to_string())
            .collect();
        files.into_iter().collect()
    }

    /// Where the scenario came from: the file path, or the label given to `parse_scenario`.
    #[getter]
    fn source(&self) -> &str {
        &self.inner.source
    }

    fn __repr__(&self) -> String {
        format!(
            "Scenario(name={:?}, duration_s={}, flows={}, links={}, source={:?})",
            self.inner.name,
            self.inner.duration.as_secs_f64(),
            self.inner.flows.len(),
            self.inner.links.len(),
            self.inner.source
        )
    }
}

/// Wrap the outcome of loading or parsing, mapping both errors and panics.
fn finish(
    py: Python<'_>,
    outcome: Result<Result<Scenario, pathweave_sim::ScenarioError>, String>,
) -> PyResult<PyScenario> {
    match outcome {
        Ok(Ok(inner)) => Ok(PyScenario { inner }),
        Ok(Err(e)) => Err(scenario_error(py, &e)),
        Err(panic) => Err(pathweave_error(panic)),
    }
}

/// Read and validate a scenario file of at most `max_bytes` (default 4 MiB).
///
/// Raises ScenarioError (with `file`, `field`, `value` and `message` set) when the file cannot
/// be read, is not a regular file, is too large, or is not a valid scenario.
#[pyfunction]
#[pyo3(signature = (path, max_bytes = None))]
pub(crate) fn load_scenario(
    py: Python<'_>,
    path: PathBuf,
    max_bytes: Option<u64>,
) -> PyResult<PyScenario> {
    let limit = max_bytes.unwrap_or(MAX_FILE_BYTES);
    finish(py, guard(|| Scenario::load_limited(&path, limit)))
}

/// The text of a scenario file: a regular file of at most `max_bytes` (default 4 MiB) of
/// UTF-8, checked before it is read. Raises ScenarioError naming the file otherwise.
#[pyfunction]
#[pyo3(signature = (path, max_bytes = None))]
pub(crate) fn read_scenario_text(
    py: Python<'_>,
    path: PathBuf,
    max_bytes: Option<u64>,
) -> PyResult<String> {
    let limit = max_bytes.unwrap_or(MAX_FILE_BYTES);
    read_scenario_file(&path, limit).map_err(|e| scenario_error(py, &e))
}

/// Validate scenario text; `label` stands for the file name in error messages.
///
/// An unnamed scenario takes the stem of `label` as its name, or "unnamed" when the label is
/// not a file name (such as the default "<string>"). Relative trace paths are resolved
/// against `base_dir`, by default the current directory.
#[pyfunction]
#[pyo3(signature = (text, label = "<string>", base_dir = None))]
pub(crate) fn parse_scenario(
    py: Python<'_>,
    text: &str,
    label: &str,
    base_dir: Option<PathBuf>,
) -> PyResult<PyScenario> {
    let default_name = match Path::new(label).file_stem() {
        Some(stem) if !label.starts_with('<') => stem.to_string_lossy().into_owned(),
        _ => "unnamed".to_string(),
    };
    let dir = base_dir.unwrap_or_default();
    finish(
        py,
        guard(|| Scenario::parse_in(text, label, &default_name, &dir)),
    )
}
