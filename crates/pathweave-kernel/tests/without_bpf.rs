//! A build without the BPF toolchain (`--no-default-features`): the command explains what is
//! missing and exits 2.
#![cfg(not(feature = "bpf"))]

#[test]
fn every_command_says_the_bpf_part_was_not_built() {
    for cmd in ["load", "unload", "status", "bmc-manager"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_pathweave-kernel"))
            .arg(cmd)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("no BPF programs") && e.contains("apt-get install"),
            "{e}"
        );
    }
}
