//! The controller a `quic send --algorithm NAME` runs, built as a scenario flow's would be with
//! the algorithm's default parameters (a scenario's `transport = "quic"` flow sets them all).

use crate::QuicError;
use pathweave_cc::cc::multipath::{Algorithm, Arithmetic, MultipathConfig, WindowConfig};
use pathweave_cc::cc::{RenoConfig, VenoConfig, WestwoodConfig};
use pathweave_cc::Bytes;
use pathweave_sim::scenario::{algorithm_names, Control};

/// The configuration of algorithm `name` for paths whose largest UDP payload is `mss` bytes,
/// with `initial_window` segments and the given arithmetic (`None`: the algorithm's default).
pub fn control(
    name: &str,
    mss: u64,
    initial_window: u32,
    arithmetic: Option<Arithmetic>,
) -> Result<Control, QuicError> {
    let window = WindowConfig::default().initial_window(initial_window);
    let reno = RenoConfig::new(Bytes(mss), initial_window);
    let c = match name {
        "reno" | "newreno" => Control::Multipath(MultipathConfig::new(
            Algorithm::Uncoupled,
            Bytes(mss),
            window,
        )),
        "veno" => Control::Veno(VenoConfig::new(reno)),
        "westwood" => Control::Westwood(WestwoodConfig::new(reno)),
        other => match other.parse::<Algorithm>() {
            Ok(a) => Control::Multipath(MultipathConfig::new(a, Bytes(mss), window)),
            Err(_) => {
                return Err(QuicError::Usage(format!(
                    "--algorithm {other}: unknown (allowed: {})",
                    algorithm_names().join(", ")
                )))
            }
        },
    };
    let c = match (arithmetic, c) {
        (None, c) => c,
        (Some(a), Control::Multipath(m)) => Control::Multipath(
            m.with_arithmetic(a)
                .map_err(|e| QuicError::Usage(format!("--arithmetic: {e}")))?,
        ),
        (Some(Arithmetic::Spec), c) => c,
        (Some(_), _) => {
            return Err(QuicError::Usage(format!(
                "--arithmetic: {name} has only the spec arithmetic"
            )))
        }
    };
    c.validate()
        .map_err(|e| QuicError::Usage(format!("--algorithm {name}: {e}")))?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_algorithm_name_builds_and_others_are_named() {
        for name in algorithm_names() {
            control(name, 1200, 10, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let e = control("cubic", 1200, 10, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("cubic") && e.to_string().contains("olia"));
        // The kernel's arithmetic exists for LIA, not for BMC.
        assert!(control("lia", 1200, 10, Some(Arithmetic::Linux)).is_ok());
        assert!(control("bmc", 1200, 10, Some(Arithmetic::Linux)).is_err());
    }
}
