//! The `pathweave-kernel` command: exit codes and messages for bad input and for machines or
//! states that cannot work, and a load → status → unload round trip (root; skipped elsewhere).
#![cfg(feature = "bpf")]

mod support;

use pathweave_kernel::loader::Loaded;
use pathweave_kernel::{Algorithm, Prefix};
use std::process::{Command, Output};
use support::{prefix, root_test};

fn kernel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pathweave-kernel"))
        .args(args)
        .output()
        .expect("the command runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_arguments_exit_2_naming_what_is_allowed() {
    let o = kernel(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("allowed: load, unload, status, bmc-manager"));
    let o = kernel(&["load", "--prefix", "Bad-Name"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("a-z"), "{}", stderr(&o));
    let o = kernel(&["bmc-manager", "--k", "9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--k"), "{}", stderr(&o));
    let o = kernel(&["status", "--verbose"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("panicked"));
}

#[test]
fn without_root_each_command_exits_2_naming_itself() {
    if Command::new("setpriv").arg("--version").output().is_err()
        || !pathweave_kernel::loader::is_root()
    {
        println!("skipped: needs root and setpriv to drop privileges");
        return;
    }
    // Each command names what it was asked to do.
    for (args, doing) in [
        (&["load", "--prefix", "nobody"][..], "loading BPF"),
        (&["unload", "--prefix", "nobody"][..], "unloading BPF"),
        (&["status"][..], "reading the status of BPF"),
    ] {
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_pathweave-kernel"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(doing) && e.contains("needs root"),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn load_status_unload_round_trip_and_names_taken() {
    let Some(_g) = root_test() else {
        return;
    };
    let p = prefix('y');
    // A name registered by another program (here an unpinned load of this test) is refused.
    {
        let other = Loaded::load(&Prefix::new(&p).unwrap()).unwrap();
        let o = kernel(&["load", "--prefix", &p]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("registered by another program"),
            "{}",
            stderr(&o)
        );
        drop(other);
    }
    // Unregistration after the links drop is asynchronous.
    let name = Prefix::new(&p).unwrap().name(Algorithm::Lia);
    for _ in 0..50 {
        if !pathweave_kernel::loader::available().contains(&name) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = kernel(&["load", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let loaded = String::from_utf8_lossy(&o.stdout).into_owned();
    let result = std::panic::catch_unwind(|| {
        let available = pathweave_kernel::loader::available();
        // Every controller is registered, and the command names each.
        for a in Algorithm::ALL {
            let n = Prefix::new(&p).unwrap().name(a);
            assert!(available.contains(&n), "{n} not registered: {available:?}");
            assert!(loaded.contains(&n), "{n} not named: {loaded}");
        }
        let again = kernel(&["load", "--prefix", &p]);
        assert_eq!(again.status.code(), Some(2));
        assert!(
            stderr(&again).contains("already loaded"),
            "{}",
            stderr(&again)
        );
        let s = kernel(&["status", "--prefix", &p]);
        assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
        let out = String::from_utf8_lossy(&s.stdout).into_owned();
        let version = format!("program version {}", pathweave_kernel::PROGRAM_VERSION);
        assert!(out.contains(&version), "{out}");
        assert!(
            out.contains(&format!("{p}_coupled")) && out.contains("registered"),
            "{out}"
        );
        // status lists every controller, pinned and registered.
        for a in Algorithm::ALL {
            let n = Prefix::new(&p).unwrap().name(a);
            let line = out
                .lines()
                .find(|l| l.split_whitespace().next() == Some(&n));
            assert!(
                line.is_some_and(|l| !l.contains("not pinned") && !l.contains("not registered")),
                "{n}: {out}"
            );
        }
    });
    let o = kernel(&["unload", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!Prefix::new(&p).unwrap().pin_dir().exists());
    let o = kernel(&["unload", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no controllers"), "{}", stderr(&o));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn reference_reno_is_registered_until_stdin_closes_and_only_once() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let Some(_g) = root_test() else {
        return;
    };
    let name = pathweave_kernel::reference::NAME;
    let registered = || {
        pathweave_kernel::loader::available()
            .iter()
            .any(|n| n == name)
    };
    assert!(!registered(), "{name} is registered before the test");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathweave-kernel"))
        .arg("reference-reno")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("a line");
    assert_eq!(line.trim(), name);
    assert!(
        registered(),
        "{name} is not registered while the command runs"
    );
    // A second registration under the same name is refused, naming it.
    let o = kernel(&["reference-reno", "--duration", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(name), "{}", stderr(&o));
    drop(child.stdin.take());
    let status = child.wait().expect("the command ends");
    assert!(status.success());
    assert!(
        !registered(),
        "{name} is still registered after the command ended"
    );
}

/// Waits up to 5 s for the controllers of prefix `p` to be registered (`true`) or not.
fn wait_registered(p: &str, want: bool) -> bool {
    let name = Prefix::new(p).unwrap().name(Algorithm::Lia);
    for _ in 0..50 {
        if pathweave_kernel::loader::available().contains(&name) == want {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

/// The names pinned under `dir`, sorted.
fn pins(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_load_over_a_partly_removed_one_is_refused_and_registers_nothing() {
    let Some(_g) = root_test() else {
        return;
    };
    let p = prefix('q');
    let dir = Prefix::new(&p).unwrap().pin_dir();
    let o = kernel(&["load", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let result = std::panic::catch_unwind(|| {
        // Remove the links' pins by hand: the controllers unregister, the maps stay pinned.
        for n in ["lia", "olia", "balia", "coupled", "bmc", "kv", "conn_close"] {
            std::fs::remove_file(dir.join(n)).unwrap();
        }
        assert!(wait_registered(&p, false), "{p}_lia stayed registered");
        let left = pins(&dir);
        assert_eq!(left, ["bmc_weights", "conns", "stats"]);
        let again = kernel(&["load", "--prefix", &p]);
        assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
        let err = stderr(&again);
        assert!(err.contains(&dir.display().to_string()), "{err}");
        assert!(err.contains("bmc_weights, conns, stats"), "{err}");
        assert!(err.contains("missing: lia, olia"), "{err}");
        assert!(
            err.contains(&format!("pathweave kernel unload --prefix {p}")),
            "{err}"
        );
        // Nothing of the refused load stays: no pin added, nothing registered.
        assert_eq!(pins(&dir), left);
        assert!(
            wait_registered(&p, false),
            "the refused load stayed registered"
        );
    });
    let o = kernel(&["unload", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.exists());
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    // The directory gone, the prefix loads again.
    let o = kernel(&["load", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = kernel(&["unload", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn status_lists_every_load_beside_a_stale_directory_and_names_it() {
    let Some(_g) = root_test() else {
        return;
    };
    let p = prefix('s');
    let stale = prefix('z');
    let stale_dir = Prefix::new(&stale).unwrap().pin_dir();
    let o = kernel(&["load", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let result = std::panic::catch_unwind(|| {
        std::fs::create_dir(&stale_dir).unwrap();
        let s = kernel(&["status"]);
        let out = String::from_utf8_lossy(&s.stdout).into_owned();
        let err = stderr(&s);
        assert_eq!(s.status.code(), Some(1), "{out}{err}");
        assert!(out.contains(&format!("prefix {p} ")), "{out}");
        assert!(out.contains(&format!("{p}_bmc")), "{out}");
        assert!(out.contains(&format!("{p}_kv")), "{out}");
        assert!(err.contains(&stale_dir.display().to_string()), "{err}");
        assert!(
            err.contains(&format!("pathweave kernel unload --prefix {stale}")),
            "{err}"
        );
        let o = kernel(&["unload", "--prefix", &stale]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(out.contains("no controller was pinned under"), "{out}");
        assert!(!stale_dir.exists());
        let s = kernel(&["status"]);
        assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    });
    let _ = std::fs::remove_dir(&stale_dir);
    let o = kernel(&["unload", "--prefix", &p]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn unload_unmounts_the_bpf_file_system_that_load_mounted() {
    let Some(_g) = root_test() else {
        return;
    };
    if Command::new("unshare").arg("--version").output().is_err() {
        println!("skipped: needs unshare (util-linux)");
        return;
    }
    // In a mount namespace of its own, where /sys/fs/bpf starts unmounted and /run is empty
    // (bpffs mounts are separate instances, so the machine's pins are not touched).
    let bin = env!("CARGO_BIN_EXE_pathweave-kernel");
    let p = prefix('m');
    let script = format!(
        "set -e; mount -t tmpfs none /run; umount /sys/fs/bpf 2>/dev/null || true; \
         mounted() {{ awk '$2 == \"/sys/fs/bpf\" && $3 == \"bpf\"' /proc/self/mounts | grep -q .; }}; \
         if mounted; then echo 'still mounted'; exit 3; fi; \
         {bin} load --prefix {p} >/dev/null; mounted && echo 'mounted by load'; \
         {bin} unload --prefix {p} >/dev/null; if mounted; then echo 'left mounted'; \
         else echo 'unmounted by unload'; fi; \
         mount -t bpf bpf /sys/fs/bpf; {bin} load --prefix {p} >/dev/null; \
         {bin} unload --prefix {p} >/dev/null; mounted && echo 'kept mounted'"
    );
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["mounted by load", "unmounted by unload", "kept mounted"],
        "{}",
        stderr(&o)
    );
}
