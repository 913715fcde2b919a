//! The test bed's network namespaces: created with names that carry [`PREFIX`] and the run id,
//! configured with iproute2, and deleted by [`Lab::remove`] or when the [`Lab`] is dropped —
//! on success, on error and on unwinding; a namespace that cannot be deleted is reported
//! (returned by `remove`, a warning on stderr from the drop), not ignored. A run killed outright leaves its namespaces behind; [`cleanup_leftovers`]
//! removes every namespace with the prefix. TUN devices need no cleanup: they are created
//! inside the namespaces, without persistence, and vanish when the process's descriptors close.
//! The run id starts with the process id, so the clean-up leaves running emulations alone;
//! a process that started after the namespace was made has only been given a dead run's id.

use crate::EmuError;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Every namespace the emulator makes starts with this.
pub const PREFIX: &str = "pwemu-";

/// Where iproute2 keeps named namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Run `ip` with `args`, feeding `stdin` if given; an error carries its stderr.
pub(crate) fn ip(args: &[&str], stdin: Option<&str>) -> Result<(), EmuError> {
    let mut cmd = Command::new("ip");
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
            .map_err(|e| EmuError::Setup(format!("ip {}: {e}", args.join(" "))))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| EmuError::Setup(format!("ip {}: {e}", args.join(" "))))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::Setup(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The namespaces of one run.
pub struct Lab {
    run_id: String,
    namespaces: Vec<String>,
}

impl Lab {
    /// A lab for run `run_id` (short, `[0-9a-z]`).
    pub fn new(run_id: &str) -> Lab {
        Lab {
            run_id: run_id.to_string(),
            namespaces: Vec::new(),
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Create namespace `PREFIX<run id>-<suffix>` and return its name.
    pub fn add(&mut self, suffix: &str) -> Result<String, EmuError> {
        let name = format!("{PREFIX}{}-{suffix}", self.run_id);
        ip(&["netns", "add", &name], None)?;
        self.namespaces.push(name.clone());
        Ok(name)
    }

    /// Apply iproute2 commands (one per line, without the leading `ip`) inside `ns`.
    pub fn batch(&self, ns: &str, commands: &[String]) -> Result<(), EmuError> {
        if commands.is_empty() {
            return Ok(());
        }
        let mut text = commands.join("\n");
        text.push('\n');
        ip(&["-n", ns, "-batch", "-"], Some(&text))
    }

    /// The namespaces made so far.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }
}

impl Lab {
    /// Delete the namespaces, the last made first. Returns those that could not be deleted,
    /// each with the reason; they stay for `pathweave emulate --cleanup`.
    pub fn remove(&mut self) -> Vec<(String, String)> {
        let mut failed = Vec::new();
        for ns in self.namespaces.drain(..).rev() {
            if let Err(e) = ip(&["netns", "delete", &ns], None) {
                failed.push((ns, e.to_string()));
            }
        }
        failed.reverse();
        failed
    }
}

impl Drop for Lab {
    /// Deletes what is left (on an error or an unwinding) and says on stderr what could not
    /// be deleted: nobody is left to return it to.
    fn drop(&mut self) {
        let failed = self.remove();
        if !failed.is_empty() {
            eprintln!("{}", not_removed_warning(&failed));
        }
    }
}

/// The warning for namespaces that could not be deleted (`(name, reason)` pairs): what is
/// left and how to remove it.
pub fn not_removed_warning(failed: &[(String, String)]) -> String {
    let names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
    let reasons: Vec<&str> = failed.iter().map(|(_, r)| r.as_str()).collect();
    format!(
        "pathweave: warning: {} emulation namespace(s) could not be deleted and are left \
         behind: {} ({}); once this process has ended, `pathweave emulate --cleanup` removes \
         them",
        names.len(),
        names.join(", "),
        reasons.join("; ")
    )
}

/// The path of a namespace's handle, for `setns`.
pub fn netns_path(ns: &str) -> String {
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
    match std::fs::metadata(netns_path(name)).and_then(|m| m.modified()) {
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
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some(
        UNIX_EPOCH + Duration::from_secs(boot) + Duration::from_nanos(ticks * (1_000_000_000 / hz)),
    )
}

/// Namespaces of emulations, running or left behind, optionally only those of process `pid`.
pub fn leftovers(pid: Option<u32>) -> Vec<String> {
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
}

/// Delete every namespace whose emulation is gone (its process no longer exists; a running
/// emulation's namespaces are kept), TUN devices with them; returns the names deleted.
pub fn cleanup_leftovers() -> Result<Vec<String>, EmuError> {
    let names: Vec<String> = leftovers(None)
        .into_iter()
        .filter(|n| owner(n).is_none_or(|p| !still_running(n, p)))
        .collect();
    let mut failed = Vec::new();
    for n in &names {
        if let Err(e) = ip(&["netns", "delete", n], None) {
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
