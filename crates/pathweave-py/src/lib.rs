//! `pathweave._core`: the PyO3 glue between the pathweave simulator and Python.
//!
//! Glue only: no simulation logic lives here. The module exposes
//! * `load_scenario(path)` and `parse_scenario(text, label)` returning a [`Scenario`];
//! * `Simulation(scenario, seed)`, advanced in steps with the interpreter released;
//! * `emulate(scenario, seed)`, the same run over real kernel stacks (pathweave-emu);
//! * `kernel_main(argv)`, the command line `pathweave kernel …` (pathweave-kernel's own);
//! * `toml_loads(text, label)`, TOML through the simulator's own parser ([`toml_doc`]);
//! * `PathweaveError` and its subclass `ScenarioError` (see [`errors`]).
//!
//! Results cross as dicts of columns ([`results`]); the typed facade in `python/pathweave`
//! turns them into pandas DataFrames. `python/pathweave/_core.pyi` describes this module and
//! must change with it.
//!
//! [`Scenario`]: scenario::PyScenario

mod emulate;
mod errors;
mod interruptible;
mod kernel;
mod quic;
mod results;
mod scenario;
mod simulation;
mod toml_doc;

use pyo3::prelude::*;

/// The module's own allocations go through the system allocator, with huge pages behind the
/// heap of many-flow runs (see `pathweave_sim::hugepages`).
#[global_allocator]
static ALLOC: pathweave_sim::hugepages::HugePages = pathweave_sim::hugepages::HugePages;

/// Native core of pathweave (private: use the `pathweave` package).
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Whether `emulate` loads pathweave-kernel's BPF controllers for coupled algorithms.
    m.add(
        "EMULATE_LOADS_CONTROLLERS",
        pathweave_emu::LOADS_CONTROLLERS,
    )?;
    // Whether this build holds the BPF controllers (`pathweave kernel load` can load them).
    m.add("KERNEL_HAS_BPF", pathweave_kernel::HAS_BPF)?;
    m.add("PathweaveError", py.get_type::<errors::PathweaveError>())?;
    m.add("ScenarioError", py.get_type::<errors::ScenarioError>())?;
    m.add(
        "EmulationRefused",
        py.get_type::<errors::EmulationRefused>(),
    )?;
    m.add("EmulationError", py.get_type::<errors::EmulationError>())?;
    m.add_class::<scenario::PyScenario>()?;
    m.add_class::<simulation::PySimulation>()?;
    m.add_function(wrap_pyfunction!(scenario::load_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(scenario::parse_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(scenario::read_scenario_text, m)?)?;
    m.add_function(wrap_pyfunction!(toml_doc::toml_loads, m)?)?;
    m.add_function(wrap_pyfunction!(emulate::emulate, m)?)?;
    m.add_function(wrap_pyfunction!(emulate::emulate_cleanup, m)?)?;
    m.add_function(wrap_pyfunction!(emulate::emulate_check, m)?)?;
    m.add_function(wrap_pyfunction!(emulate::emulate_leftovers, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_main, m)?)?;
    m.add_function(wrap_pyfunction!(quic::quic_main, m)?)?;
    Ok(())
}
