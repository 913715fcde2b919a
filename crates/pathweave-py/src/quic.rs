//! `pathweave quic …` inside the extension: pathweave-quic's command line
//! ([`pathweave_quic::cli`]); a `send` also hands back its tables for the Python side to write.

use pathweave_sim::results::{FLOW_SERIES_COLUMNS, LINK_SERIES_COLUMNS, SUBFLOW_SERIES_COLUMNS};
use pathweave_sim::scenario::{Columns, SeriesSpec};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Runs `pathweave quic ARGV…`; returns the exit code and, for a `send` that completed, its
/// results as a dict (the layout of a run's). Messages go to the process's standard output
/// and error. Ctrl-C stops it at its next check and is raised once it has returned.
#[pyfunction]
pub(crate) fn quic_main<'py>(
    py: Python<'py>,
    argv: Vec<String>,
) -> PyResult<(i32, Option<Bound<'py, PyDict>>)> {
    let finished = crate::interruptible::run(
        py,
        "pw-quic",
        "pathweave quic",
        move |stop| pathweave_quic::cli::main(&argv, stop),
        pyo3::exceptions::PyRuntimeError::new_err,
    )?;
    let series = SeriesSpec {
        flows: vec![true],
        links: Vec::new(),
        flow_columns: Columns::all(FLOW_SERIES_COLUMNS.len()),
        subflow_columns: Columns::all(SUBFLOW_SERIES_COLUMNS.len()),
        link_columns: Columns::all(LINK_SERIES_COLUMNS.len()),
    };
    let results = finished
        .results
        .map(|r| crate::results::results_dict(py, &r, &series))
        .transpose()?;
    Ok((finished.code, results))
}
