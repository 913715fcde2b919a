//! `pathweave._core.toml_loads`: TOML text to plain Python objects, read by the same parser
//! the simulator uses, so the Python side (sweeps, `compare`) accepts exactly the scenario
//! files the simulator does — including TOML 1.1's multi-line inline tables, which the
//! standard library's `tomllib` rejects.

use crate::errors::scenario_error;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;

/// Parse TOML `text` into dicts, lists, str, int, float and bool; a date or time becomes its
/// TOML text. `label` names the source in errors.
///
/// Raises ScenarioError (with `file` and `message` set) for text that is not valid TOML.
#[pyfunction]
#[pyo3(signature = (text, label = "<string>"))]
pub(crate) fn toml_loads<'py>(
    py: Python<'py>,
    text: &str,
    label: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        scenario_error(py, &pathweave_sim::ScenarioError::syntax(label, text, &e))
    })?;
    table_to_py(py, &table)
}

fn table_to_py<'py>(py: Python<'py>, t: &toml::Table) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    for (k, v) in t {
        d.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(d.into_any())
}

fn value_to_py<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    use toml::Value;
    match v {
        Value::String(s) => s.into_bound_py_any(py),
        Value::Integer(i) => i.into_bound_py_any(py),
        Value::Float(f) => f.into_bound_py_any(py),
        Value::Boolean(b) => b.into_bound_py_any(py),
        Value::Datetime(dt) => dt.to_string().into_bound_py_any(py),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| value_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any())
        }
        Value::Table(t) => table_to_py(py, t),
    }
}
