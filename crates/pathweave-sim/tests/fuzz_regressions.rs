//! Inputs the fuzz harness (`crates/pathweave-fuzz`) once found failing, kept as tests: every
//! file in `tests/fuzz-regressions/` must be refused with an error or accepted and built,
//! without a panic. The file's first line says what went wrong and what is expected now.

use pathweave_sim::{Scenario, Simulation};
use std::path::Path;

#[test]
fn every_recorded_fuzz_input_is_refused_or_built_without_a_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("the regression directory exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    for path in paths {
        let bytes = std::fs::read(&path).expect("readable");
        let text = String::from_utf8_lossy(&bytes);
        let expect_ok = text.starts_with("# expect: ok");
        match Scenario::parse(&text, "fuzz.toml", "fuzz") {
            Ok(s) => {
                assert!(expect_ok, "{}: accepted, expected an error", path.display());
                drop(Simulation::new(&s, None));
            }
            Err(e) => {
                assert!(!expect_ok, "{}: refused: {e}", path.display());
                assert!(e.to_string().starts_with("fuzz.toml:"), "{e}");
            }
        }
    }
}
