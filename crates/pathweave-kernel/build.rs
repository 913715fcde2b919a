//! Builds the shared arithmetic (src/bpf/pw_arith.h) into a static C library for the tests
//! and, with the `bpf` feature, compiles src/bpf/pw.bpf.c with clang and generates its
//! libbpf-rs skeleton. The BPF build needs clang, bpftool (to turn the running kernel's BTF
//! into vmlinux.h, unless PATHWEAVE_VMLINUX_H names one) and libbpf's headers.

use std::env;
#[cfg(feature = "bpf")]
use std::path::{Path, PathBuf};
#[cfg(feature = "bpf")]
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/bpf");
    println!("cargo:rerun-if-env-changed=PATHWEAVE_VMLINUX_H");
    cc::Build::new()
        .file("src/bpf/pw_arith.c")
        .include("src/bpf")
        .warnings(true)
        .extra_warnings(true)
        .compile("pw_arith");
    if env::var_os("CARGO_FEATURE_BPF").is_some() {
        build_bpf();
    }
}

#[cfg(feature = "bpf")]
fn build_bpf() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let vmlinux = vmlinux_header(&out);
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok("riscv64") => "riscv",
        Ok("s390x") => "s390",
        Ok("powerpc64") => "powerpc",
        Ok(other) => fail(&format!("no BPF target architecture is known for {other}")),
        Err(_) => "x86",
    };
    let include = vmlinux
        .parent()
        .unwrap_or(Path::new("."))
        .display()
        .to_string();
    let args = [
        format!("-I{include}"),
        "-Isrc/bpf".to_string(),
        format!("-D__TARGET_ARCH_{arch}"),
        "-Wall".to_string(),
    ];
    // The controllers, and the reference Reno of `pathweave kernel reference-reno`.
    for (source, skel) in [
        ("src/bpf/pw.bpf.c", "pw.skel.rs"),
        ("src/bpf/reno_ref.bpf.c", "reno_ref.skel.rs"),
    ] {
        let result = libbpf_cargo::SkeletonBuilder::new()
            .source(source)
            .clang_args(args.clone())
            .build_and_generate(out.join(skel));
        if let Err(e) = result {
            fail(&format!("compiling {source} failed: {e:#}"));
        }
    }
}

#[cfg(not(feature = "bpf"))]
fn build_bpf() {}

/// vmlinux.h from PATHWEAVE_VMLINUX_H, or generated from the running kernel's BTF.
#[cfg(feature = "bpf")]
fn vmlinux_header(out: &Path) -> PathBuf {
    if let Some(p) = env::var_os("PATHWEAVE_VMLINUX_H") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            fail(&format!(
                "PATHWEAVE_VMLINUX_H={} is not a file",
                p.display()
            ));
        }
        let dir = out.join("vmlinux");
        let _ = std::fs::create_dir_all(&dir);
        let dest = dir.join("vmlinux.h");
        if let Err(e) = std::fs::copy(&p, &dest) {
            fail(&format!("cannot copy {}: {e}", p.display()));
        }
        return dest;
    }
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        fail("the kernel has no BTF at /sys/kernel/btf/vmlinux; set PATHWEAVE_VMLINUX_H to a vmlinux.h");
    }
    let dir = out.join("vmlinux");
    let _ = std::fs::create_dir_all(&dir);
    let dest = dir.join("vmlinux.h");
    let bpftool = ["bpftool", "/usr/sbin/bpftool", "/sbin/bpftool"]
        .into_iter()
        .find(|b| Command::new(b).arg("version").output().is_ok())
        .unwrap_or_else(|| fail("bpftool is missing (apt-get install bpftool)"));
    let output = Command::new(bpftool)
        .args(["btf", "dump", "file"])
        .arg(btf)
        .args(["format", "c"])
        .output()
        .unwrap_or_else(|e| fail(&format!("running bpftool: {e}")));
    if !output.status.success() {
        fail(&format!(
            "bpftool btf dump failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if let Err(e) = std::fs::write(&dest, &output.stdout) {
        fail(&format!("writing {}: {e}", dest.display()));
    }
    dest
}

#[cfg(feature = "bpf")]
fn fail(msg: &str) -> ! {
    eprintln!(
        "pathweave-kernel: {msg}.\n\
         The `bpf` feature needs clang, bpftool, libbpf-dev, libelf-dev, zlib1g-dev and pkg-config \
         (Debian: apt-get install clang bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config) and \
         the kernel's BTF. Build with --no-default-features to leave the BPF programs out."
    );
    std::process::exit(1);
}
