//! The test bed's network namespaces, held by this process's file descriptors.
//!
//! [`Lab::add`] makes each namespace on a short-lived thread of its own: the thread unshares
//! its network namespace, opens it (`/proc/thread-self/ns/net`) and exits; the [`Netns`]
//! keeps the descriptor. Threads enter a namespace through it (`setns`), and `ip` runs inside
//! it the same way ([`Netns::command`]). Nothing is mounted: the kernel frees a namespace once
//! no descriptor, no thread inside it and no object made in it (a socket, a TUN descriptor)
//! holds it, so a run's namespaces go with its process however that ends (a return, an error,
//! a panic, SIGTERM, SIGKILL), and their TUN devices with them: those are created inside,
//! without persistence. Every child process (`ip`) gets SIGKILL should its thread of the
//! emulator die first.
//!
//! The names `PREFIX<run id>-<suffix>` ([`PREFIX`]) label the namespaces in reports. With
//! `PATHWEAVE_NAME_NAMESPACES=1` in the environment ([`NAME_NAMESPACES_VAR`]), a debugging
//! aid, the run also mounts each under /run/netns by that name while it lasts, for `ip netns
//! exec NAME`, and says on stderr where each is; the names are removed by [`Lab::remove`] or
//! when the [`Lab`] is dropped, and a name that cannot be removed is reported (returned by
//! `remove`, a warning on stderr from the drop), not ignored. A mount outlives a run killed
//! outright, as every namespace of earlier versions did; [`cleanup_leftovers`] removes those
//! with the prefix. The run id starts with the process id, so the clean-up leaves
//! running emulations alone; a process that started after the namespace was made has only
//! been given a dead run's id.

use crate::{sys, EmuError};
use std::collections::HashSet;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Every namespace the emulator makes starts with this.
pub const PREFIX: &str = "pwemu-";

/// The environment variable that, set to `1`, names a run's namespaces under /run/netns
/// while it lasts (for `ip netns exec`).
pub const NAME_NAMESPACES_VAR: &str = "PATHWEAVE_NAME_NAMESPACES";

/// Where iproute2 keeps named namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Run `ip` with `args`, inside namespace `ns` if given, feeding `stdin` if given; an error
/// carries its stderr.
pub(crate) fn ip(args: &[&str], stdin: Option<&str>, ns: Option<&Netns>) -> Result<(), EmuError> {
    let what = match ns {
        Some(ns) => format!("ip {} (in namespace {})", args.join(" "), ns.name()),
        None => format!("ip {}", args.join(" ")),
    };
    let mut cmd = match ns {
        Some(ns) => ns.command("ip"),
        None => sys::command("ip", None),
    };
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        EmuError::Environment(format!(
            "cannot run `ip` (iproute2): {e}; install iproute2 (Debian: apt-get install iproute2)"
        ))
    })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .map_err(|e| EmuError::Setup(format!("{what}: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| EmuError::Setup(format!("{what}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::Setup(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// One network namespace of a run: its name and a descriptor that holds it. Clones share the
/// descriptor; the namespace lives at least as long as any of them.
#[derive(Clone, Debug)]
pub struct Netns {
    name: String,
    fd: Arc<OwnedFd>,
}

impl Netns {
    /// The namespace's name (`PREFIX<run id>-<suffix>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where another process finds it while this one lives: `/proc/<pid>/fd/<n>`, for
    /// `nsenter --net=…`.
    pub fn handle(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }

    /// Move the calling thread into the namespace.
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        sys::enter_netns(self.fd.as_fd())
    }

    /// A command that runs `program` inside the namespace and dies with the calling thread
    /// (see [`sys::command`]).
    pub(crate) fn command(&self, program: &str) -> Command {
        sys::command(program, Some(self.fd.clone()))
    }
}

/// Whether [`NAME_NAMESPACES_VAR`] asks for named namespaces.
pub(crate) fn names_asked() -> bool {
    std::env::var(NAME_NAMESPACES_VAR).is_ok_and(|v| v.trim() == "1")
}

/// The namespaces of one run.
pub struct Lab {
    run_id: String,
    /// Whether the namespaces are also mounted under /run/netns by name.
    named: bool,
    namespaces: Vec<Netns>,
    /// The names mounted under /run/netns and not yet removed.
    mounted: Vec<String>,
}

impl Lab {
    /// A lab for run `run_id` (short, `[0-9a-z]`); its namespaces are named under /run/netns
    /// when the environment asks for it ([`NAME_NAMESPACES_VAR`]).
    pub fn new(run_id: &str) -> Lab {
        Lab::with_names(run_id, names_asked())
    }

    /// A lab for run `run_id` whose namespaces are also mounted under /run/netns by name
    /// while it lasts when `named`.
    pub fn with_names(run_id: &str, named: bool) -> Lab {
        Lab {
            run_id: run_id.to_string(),
            named,
            namespaces: Vec::new(),
            mounted: Vec::new(),
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Create namespace `PREFIX<run id>-<suffix>`, held by the returned handle (and by the
    /// lab until [`Lab::remove`]).
    pub fn add(&mut self, suffix: &str) -> Result<Netns, EmuError> {
        let name = format!("{PREFIX}{}-{suffix}", self.run_id);
        let named = self.named;
        let label = name.clone();
        // The thread ends in the new namespace and takes nothing else with it: only the
        // descriptor holds the namespace when it has gone.
        let fd = std::thread::Builder::new()
            .name("pw-emu-netns".to_string())
            .spawn(move || -> Result<OwnedFd, EmuError> {
                let fd = sys::unshare_netns()
                    .map_err(|e| EmuError::Setup(format!("creating namespace {label}: {e}")))?;
                if named {
                    // `ip netns attach NAME ID` mounts /proc/ID/ns/net: this thread's, the new
                    // namespace.
                    ip(
                        &["netns", "attach", &label, &sys::gettid().to_string()],
                        None,
                        None,
                    )?;
                }
                Ok(fd)
            })
            .map_err(|e| EmuError::Setup(format!("starting a thread for namespace {name}: {e}")))?
            .join()
            .map_err(|_| {
                EmuError::Setup(format!("the thread making namespace {name} panicked"))
            })??;
        let ns = Netns {
            name: name.clone(),
            fd: Arc::new(fd),
        };
        if named {
            self.mounted.push(name.clone());
            eprintln!(
                "pathweave: namespace {name}: `ip netns exec {name} …` while the run lasts \
                 (or `nsenter --net={} …`)",
                ns.handle()
            );
        }
        self.namespaces.push(ns.clone());
        Ok(ns)
    }

    /// Apply iproute2 commands (one per line, without the leading `ip`) inside `ns`.
    pub fn batch(&self, ns: &Netns, commands: &[String]) -> Result<(), EmuError> {
        if commands.is_empty() {
            return Ok(());
        }
        let mut text = commands.join("\n");
        text.push('\n');
        ip(&["-batch", "-"], Some(&text), Some(ns))
    }

    /// The names of the namespaces made so far.
    pub fn names(&self) -> Vec<String> {
        self.namespaces.iter().map(|n| n.name.clone()).collect()
    }

    /// The namespaces made so far.
    pub fn namespaces(&self) -> &[Netns] {
        &self.namespaces
    }
}

impl Lab {
    /// Let go of the namespaces: remove their names from /run/netns if they have any, the
    /// last made first, and close the lab's descriptors (a namespace goes once its other
    /// holders, [`Netns`] clones, threads inside it, its sockets and devices, have gone too).
    /// Returns the names that could not be removed, each with the reason; they stay, and with
    /// them their namespaces, for `pathweave emulate --cleanup`.
    pub fn remove(&mut self) -> Vec<(String, String)> {
        let mut failed = Vec::new();
        for name in self.mounted.drain(..).rev() {
            if let Err(e) = ip(&["netns", "delete", &name], None, None) {
                failed.push((name, e.to_string()));
            }
        }
        failed.reverse();
        self.namespaces.clear();
        failed
    }
}

impl Drop for Lab {
    /// Lets go of what is left (on an error or an unwinding) and says on stderr which names
    /// could not be removed: nobody is left to return them to.
    fn drop(&mut self) {
        let failed = self.remove();
        if !failed.is_empty() {
            eprintln!("{}", not_removed_warning(&failed));
        }
    }
}

/// The warning for namespace names that could not be removed (`(name, reason)` pairs): what
/// is left and how to remove it.
pub fn not_removed_warning(failed: &[(String, String)]) -> String {
    let names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
    let reasons: Vec<&str> = failed.iter().map(|(_, r)| r.as_str()).collect();
    format!(
        "pathweave: warning: {} emulation namespace(s) could not be deleted from {NETNS_DIR} \
         and are left behind: {} ({}); once this process has ended, `pathweave emulate \
         --cleanup` removes them",
        names.len(),
        names.join(", "),
        reasons.join("; ")
    )
}

/// The path of a named namespace's mount.
fn mount_path(ns: &str) -> String {
    format!("{NETNS_DIR}/{ns}")
}

/// The process that made namespace `name` (`PREFIX<pid>-<nonce>-…`, pid in hex).
pub fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    u32::from_str_radix(rest.split('-').next()?, 16).ok()
}

/// Whether the emulation that made namespace `name` still runs: its process exists and
/// started before the namespace was made. A process that started later has only been given
/// the dead one's process id.
fn still_running(name: &str, pid: u32) -> bool {
    let Some(started) = process_start(pid) else {
        return false; // gone (or unreadable, which the kernel gives only for a gone process)
    };
    match std::fs::metadata(mount_path(name)).and_then(|m| m.modified()) {
        Ok(made) => !made_before(made, started),
        Err(_) => true, // cannot tell: keep it, as a running emulation's
    }
}

/// Whether a namespace made at `made` predates a process started at `started`, by more
/// than the two seconds the start time's whole-second boot time can be off.
fn made_before(made: SystemTime, started: SystemTime) -> bool {
    made + Duration::from_secs(2) < started
}

/// When process `pid` started, from `/proc/<pid>/stat` (clock ticks since boot) and the boot
/// time in `/proc/stat`; None if the process does not exist.
fn process_start(pid: u32) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses): the state is
    // field 3 of proc(5), the start time field 22.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    let hz = sys::clock_ticks()?;
    Some(
        UNIX_EPOCH + Duration::from_secs(boot) + Duration::from_nanos(ticks * (1_000_000_000 / hz)),
    )
}

/// The inode of the network namespace a `/proc` namespace link points to (`net:[4026531840]`);
/// None if it does not exist or is not a network namespace.
fn netns_inode(link: &str) -> Option<u64> {
    let target = std::fs::read_link(link).ok()?;
    target
        .to_str()?
        .strip_prefix("net:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The entries of directory `dir` that are numbers (descriptors, thread ids), in order.
fn numbered(dir: &str) -> Vec<u32> {
    let mut n: Vec<u32> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    n.sort_unstable();
    n
}

/// The processes other than this one whose main thread is in one of `namespaces`, with their
/// command names, by process id.
pub fn processes_in(namespaces: &[&Netns]) -> Vec<(u32, String)> {
    use std::os::unix::fs::MetadataExt;
    let inodes: HashSet<u64> = namespaces
        .iter()
        .filter_map(|ns| std::fs::metadata(ns.handle()).ok().map(|m| m.ino()))
        .collect();
    let me = std::process::id();
    numbered("/proc")
        .into_iter()
        .filter(|&pid| pid != me)
        .filter(|pid| {
            netns_inode(&format!("/proc/{pid}/ns/net")).is_some_and(|i| inodes.contains(&i))
        })
        .map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            (pid, comm.trim().to_string())
        })
        .collect()
}

/// Stop the processes in `namespaces` (see [`processes_in`]): SIGTERM, then SIGKILL to those
/// still there after `grace`. Returns the processes found, by id and command name.
pub fn stop_processes_in(namespaces: &[&Netns], grace: Duration) -> Vec<(u32, String)> {
    let found = processes_in(namespaces);
    let signal_all = |sig: i32, which: &[(u32, String)]| {
        for (pid, _) in which {
            // SAFETY: kill(2) with a process id and a signal number has no memory effects.
            unsafe {
                libc::kill(*pid as libc::pid_t, sig);
            }
        }
    };
    signal_all(libc::SIGTERM, &found);
    let deadline = sys::monotonic_ns() + grace.as_nanos() as u64;
    loop {
        let left = processes_in(namespaces);
        if left.is_empty() {
            break;
        }
        if sys::monotonic_ns() >= deadline {
            signal_all(libc::SIGKILL, &left);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    found
}

/// The network namespaces live process `pid` holds besides its own and the initial one, each
/// once, with its inode: by a descriptor (`/proc/<pid>/fd/<n>`, in descriptor order), else
/// by a thread inside it (`/proc/<pid>/task/<tid>/ns/net`). Either path enters it with
/// `nsenter --net=PATH` while the process holds it. Empty for a process that is gone.
pub fn held(pid: u32) -> Vec<(String, u64)> {
    let mut seen: HashSet<u64> = ["/proc/1/ns/net".to_string(), format!("/proc/{pid}/ns/net")]
        .iter()
        .filter_map(|l| netns_inode(l))
        .collect();
    let fds = numbered(&format!("/proc/{pid}/fd"))
        .into_iter()
        .map(|fd| format!("/proc/{pid}/fd/{fd}"));
    let tasks = numbered(&format!("/proc/{pid}/task"))
        .into_iter()
        .map(|tid| format!("/proc/{pid}/task/{tid}/ns/net"));
    fds.chain(tasks)
        .filter_map(|path| {
            let ino = netns_inode(&path)?;
            seen.insert(ino).then_some((path, ino))
        })
        .collect()
}

/// Namespaces with [`PREFIX`] mounted under /run/netns (named by a run with
/// [`NAME_NAMESPACES_VAR`], or left by an older version), optionally only those of process
/// `pid`, by name, with the inode of the namespace each holds if readable.
fn mounted(pid: Option<u32>) -> Vec<(String, Option<u64>)> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(PREFIX))
        .filter(|n| pid.is_none() || owner(n) == pid)
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            use std::os::unix::fs::MetadataExt;
            let ino = std::fs::metadata(mount_path(&n)).ok().map(|m| m.ino());
            (n, ino)
        })
        .collect()
}

/// Namespaces of emulations present now. Without `pid`: those mounted under /run/netns with
/// [`PREFIX`] (of runs that named theirs, running or killed, or left by older versions). With
/// `pid`: those of them process `pid` made, by name, then the namespaces the live process
/// holds (see [`held`]) that have no name, as `/proc/<pid>/…` paths for `nsenter --net=…`.
pub fn leftovers(pid: Option<u32>) -> Vec<String> {
    let named = mounted(pid);
    let Some(pid) = pid else {
        return named.into_iter().map(|(n, _)| n).collect();
    };
    let inodes: HashSet<u64> = named.iter().filter_map(|&(_, ino)| ino).collect();
    let mut out: Vec<String> = named.into_iter().map(|(n, _)| n).collect();
    out.extend(
        held(pid)
            .into_iter()
            .filter(|(_, ino)| !inodes.contains(ino))
            .map(|(path, _)| path),
    );
    out
}

/// Delete every namespace mounted under /run/netns with [`PREFIX`] whose emulation is gone
/// (its process no longer exists; a running emulation's are kept); returns the names deleted.
/// Only runs that named their namespaces ([`NAME_NAMESPACES_VAR`]) and were killed, or older
/// versions, leave any: the others' namespaces go with their process.
pub fn cleanup_leftovers() -> Result<Vec<String>, EmuError> {
    let names: Vec<String> = mounted(None)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| owner(n).is_none_or(|p| !still_running(n, p)))
        .collect();
    let mut failed = Vec::new();
    for n in &names {
        if let Err(e) = ip(&["netns", "delete", n], None, None) {
            // `ip`'s own message names the namespace and the reason.
            failed.push(match e {
                EmuError::Setup(m) => m,
                other => other.to_string(),
            });
        }
    }
    if failed.is_empty() {
        Ok(names)
    } else {
        Err(EmuError::Failed(format!(
            "could not delete {} of {} namespace(s) left behind: {}",
            failed.len(),
            names.len(),
            failed.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Why this process cannot make namespaces, if it cannot.
    /// Held by each test that makes namespaces: one at a time, because the kernel gives a
    /// new namespace the inode number a removed one had, and a test that checks that its
    /// namespace's inode is gone would find another test's.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cannot_make_namespaces() -> Option<&'static str> {
        if sys::euid() != 0
            || !sys::has_cap(sys::CAP_SYS_ADMIN)
            || !sys::has_cap(sys::CAP_NET_ADMIN)
        {
            return Some("needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN");
        }
        if sys::command("ip", None).arg("-V").output().is_err() {
            return Some("needs iproute2's ip");
        }
        None
    }

    /// Every network namespace anything on this machine can still reach: a process or a
    /// thread inside it, a descriptor of it, or a mount of it (as this process sees them).
    fn reachable() -> HashSet<u64> {
        let mut found = HashSet::new();
        for pid in numbered("/proc") {
            found.extend(netns_inode(&format!("/proc/{pid}/ns/net")));
            for tid in numbered(&format!("/proc/{pid}/task")) {
                found.extend(netns_inode(&format!("/proc/{pid}/task/{tid}/ns/net")));
            }
            for fd in numbered(&format!("/proc/{pid}/fd")) {
                found.extend(netns_inode(&format!("/proc/{pid}/fd/{fd}")));
            }
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        found.extend(mounts.lines().filter_map(|l| {
            let root = l.split_whitespace().nth(3)?;
            root.strip_prefix("net:[")?
                .strip_suffix(']')?
                .parse::<u64>()
                .ok()
        }));
        found
    }

    /// The interfaces of `ns`, as `ip` run inside it lists them.
    fn interfaces(ns: &Netns) -> String {
        let out = ns
            .command("ip")
            .args(["-o", "link", "show"])
            .output()
            .expect("ip link");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_namespace_lives_only_as_long_as_something_of_the_process_holds_it() {
        if let Some(why) = cannot_make_namespaces() {
            println!("skipped: {why}");
            return;
        }
        let _serial = one_at_a_time();
        let pid = std::process::id();
        let mut lab = Lab::with_names(&format!("{pid:x}-t0"), false);
        let ns = lab.add("0s").expect("a namespace");
        let ino = netns_inode(&ns.handle()).expect("the descriptor is a network namespace");
        assert!(held(pid).iter().any(|&(_, i)| i == ino));
        assert!(leftovers(Some(pid)).contains(&ns.handle()));
        assert!(
            !Path::new(&mount_path(ns.name())).exists(),
            "nothing is mounted"
        );
        assert!(!leftovers(None).contains(&ns.name().to_string()));
        // `ip` runs inside it: its loopback device, and a TUN device made inside, whose
        // interface lives exactly as long as its descriptor (not persistent).
        lab.batch(&ns, &["link set lo up".to_string()])
            .expect("ip -batch");
        let inside = ns.clone();
        let tun = std::thread::spawn(move || {
            inside.enter().expect("setns");
            sys::open_tun("pw-t0-0").expect("a TUN device")
        })
        .join()
        .expect("the TUN thread");
        let links = interfaces(&ns);
        assert!(links.contains(": lo: <LOOPBACK,UP"), "{links}");
        assert!(links.contains(": pw-t0-0: "), "{links}");
        let mut root = sys::command("ip", None);
        let root = root.args(["-o", "link", "show"]).output().expect("ip link");
        assert!(!String::from_utf8_lossy(&root.stdout).contains("pw-t0-0"));
        drop(tun);
        assert!(!interfaces(&ns).contains("pw-t0-"));
        // Once the lab and the last handle let go, nothing reaches it any more.
        assert!(lab.remove().is_empty());
        assert!(reachable().contains(&ino), "the handle still holds it");
        drop(ns);
        assert!(
            !reachable().contains(&ino),
            "the namespace outlived its descriptors"
        );
        assert!(!leftovers(Some(pid))
            .iter()
            .any(|l| netns_inode(l) == Some(ino)));
    }

    #[test]
    fn a_named_namespace_has_its_name_only_while_the_lab_holds_it() {
        if let Some(why) = cannot_make_namespaces() {
            println!("skipped: {why}");
            return;
        }
        let _serial = one_at_a_time();
        let pid = std::process::id();
        let mut lab = Lab::with_names(&format!("{pid:x}-t1"), true);
        let ns = lab.add("0r").expect("a named namespace");
        let ino = netns_inode(&ns.handle()).expect("a network namespace");
        let named = mounted(Some(pid));
        assert!(
            named.contains(&(ns.name().to_string(), Some(ino))),
            "{named:?}"
        );
        // Listed once, by its name.
        let left = leftovers(Some(pid));
        assert!(left.contains(&ns.name().to_string()), "{left:?}");
        assert!(!left.contains(&ns.handle()), "{left:?}");
        drop(ns);
        let failed = lab.remove();
        assert!(failed.is_empty(), "{failed:?}");
        assert!(!Path::new(&mount_path(&format!("{PREFIX}{pid:x}-t1-0r"))).exists());
        assert!(!reachable().contains(&ino));
    }

    #[test]
    fn a_failed_namespace_command_names_the_namespace() {
        if let Some(why) = cannot_make_namespaces() {
            println!("skipped: {why}");
            return;
        }
        let _serial = one_at_a_time();
        let mut lab = Lab::with_names(&format!("{:x}-t2", std::process::id()), false);
        let ns = lab.add("1s").expect("a namespace");
        let e = lab
            .batch(&ns, &["link set pw-none up".to_string()])
            .expect_err("no such device");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("(in namespace {})", ns.name())),
            "{msg}"
        );
        assert!(msg.contains("pw-none"), "{msg}");
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the wall clock is what the start time is read against
    fn this_process_started_before_now_and_after_boot() {
        let started = process_start(std::process::id()).expect("our own start time");
        let now = SystemTime::now();
        assert!(
            started <= now + Duration::from_secs(2),
            "{started:?} after {now:?}"
        );
        // The test process started within the last hour, not at the epoch or at boot.
        assert!(now.duration_since(started).unwrap_or_default() < Duration::from_secs(3600));
        assert!(process_start(u32::MAX).is_none());
    }

    #[test]
    fn a_namespace_older_than_its_process_belongs_to_a_dead_run() {
        let t = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert!(made_before(t, t + Duration::from_secs(60)));
        // Within the boot time's rounding: taken as the run that made it.
        assert!(!made_before(t, t + Duration::from_secs(1)));
        assert!(!made_before(t + Duration::from_secs(5), t));
    }

    #[test]
    fn the_owner_is_read_from_the_name() {
        assert_eq!(owner("pwemu-1a2b-00-3s"), Some(0x1a2b));
        assert_eq!(owner("pwemu-zz-00-3s"), None);
        assert_eq!(owner("other-1a2b-00-3s"), None);
    }
}
