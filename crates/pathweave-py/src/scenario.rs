//! `pathweave._core.Scenario`: a validated scenario, immutable from Python.
//!
//! Quantities cross the boundary as plain floats whose names carry the unit (`duration_s`).

use crate::errors::{guard, pathweave_error, scenario_error};
use pathweave_sim::datacenter::TopologyKind;
use pathweave_sim::scenario::{read_scenario_file, FlowKind, MAX_FILE_BYTES};
use pathweave_sim::Scenario;
use pyo3::prelude::*;
use pyo3::types::PyDict;
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

    /// The generated fabric of `[topology]`, or None: a dict with `type`, its parameters,
    /// `hosts`, `switches`, `links` (cables, each one duplex link) and `notes` (remarks on
    /// the routing, such as more subflows than equal-cost paths).
    #[getter]
    fn topology<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(t) = &self.inner.topology else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        let f = &t.fabric;
        d.set_item("type", f.kind.type_name())?;
        match f.kind {
            TopologyKind::FatTree { k } => d.set_item("k", k)?,
            TopologyKind::Vl2 {
                da,
                di,
                hosts_per_tor,
            } => {
                d.set_item("da", da)?;
                d.set_item("di", di)?;
                d.set_item("hosts_per_tor", hosts_per_tor)?;
            }
            TopologyKind::BCube { n, k } => {
                d.set_item("n", n)?;
                d.set_item("k", k)?;
            }
        }
        d.set_item("hosts", f.hosts())?;
        d.set_item("switches", f.switches())?;
        d.set_item("links", f.cables())?;
        d.set_item("notes", t.notes.clone())?;
        Ok(Some(d))
    }

    /// Each link direction's rate at time zero in bit/s: direction `2k` is link `k` forward,
    /// `2k + 1` its reverse.
    #[getter]
    fn link_direction_rates_bps(&self) -> Vec<u64> {
        self.inner
            .links
            .iter()
            .flat_map(|l| [l.forward.rate.bps(), l.reverse.rate.bps()])
            .collect()
    }

    /// The data routes of the congestion-controlled flows, flattened: `(flows, starts,
    /// directions)`, one entry of `flows` per route naming its flow's index, route `r`'s link
    /// directions (`2·link + reverse`) at `directions[starts[r]:starts[r + 1]]` (`starts` has
    /// one more entry). With `equal_cost`, a flow between the hosts of a `[topology]` has
    /// every equal-cost shortest path between them; otherwise (and for other flows) the paths
    /// of its subflows, in subflow order.
    #[pyo3(signature = (equal_cost = false))]
    fn flow_routes(&self, equal_cost: bool) -> (Vec<u32>, Vec<u64>, Vec<u32>) {
        let (mut flows, mut starts, mut dirs) = (Vec::new(), vec![0u64], Vec::new());
        let fabric = self.inner.topology.as_ref().map(|t| &t.fabric);
        let mut hops = Vec::new();
        let mut push =
            |flow: usize, path: &[pathweave_sim::scenario::Hop], starts: &mut Vec<u64>| {
                flows.push(flow as u32);
                dirs.extend(
                    path.iter()
                        .map(|h| (2 * h.link + h.reverse as usize) as u32),
                );
                starts.push(dirs.len() as u64);
            };
        for (i, f) in self.inner.flows.iter().enumerate() {
            if matches!(f.kind, FlowKind::Cbr { .. }) {
                continue;
            }
            match (equal_cost, f.hosts, fabric) {
                (true, Some((s, d)), Some(fabric)) => {
                    for p in 0..fabric.path_count(s, d) {
                        fabric.path(s, d, p, &mut hops);
                        push(i, &hops, &mut starts);
                    }
                }
                _ => {
                    for sf in &f.subflows {
                        push(i, &sf.path, &mut starts);
                    }
                }
            }
        }
        (flows, starts, dirs)
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
