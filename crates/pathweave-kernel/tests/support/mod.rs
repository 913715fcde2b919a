//! Test beds for the root tests: two network namespaces joined by veth pairs (one per path,
//! addresses from 198.18.0.0/15), MPTCP limits and endpoints set, a pw_* controller as each
//! namespace's default, and a traffic generator in Python (IPPROTO_MPTCP sockets). Every
//! name carries the test's prefix; Drop removes the namespaces (and so the veths and the
//! sockets in them) and stops the processes, also when a test fails.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// Root tests run one at a time: they share the CPU and the kernel log.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

/// Why the root tests cannot run here, or None.
pub(crate) fn skip_reason() -> Option<String> {
    if !pathweave_kernel::loader::is_root() {
        return Some("needs root".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("the kernel has no BTF".into());
    }
    let mptcp = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").unwrap_or_default();
    if mptcp.trim() != "1" {
        return Some("MPTCP is not enabled (net.mptcp.enabled)".into());
    }
    for tool in ["ip", "python3"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("{tool} is missing"));
        }
    }
    None
}

/// The lock that serialises the root tests, or None (after printing why) where they cannot run.
pub(crate) fn root_test() -> Option<std::sync::MutexGuard<'static, ()>> {
    if let Some(why) = skip_reason() {
        println!("skipped: {why}");
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs a command, panicking with its output if it fails.
pub(crate) fn run(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A root test's guard (see [`root_test`]), its controllers' prefix and the tag its
/// namespaces carry; None, with the reason printed, where root tests cannot run.
pub(crate) fn root_setup(
    letter: char,
) -> Option<(
    std::sync::MutexGuard<'static, ()>,
    pathweave_kernel::Prefix,
    String,
)> {
    let guard = root_test()?;
    let p = pathweave_kernel::Prefix::new(&prefix(letter)).unwrap();
    let tag = format!("pwk{}", &p.as_str()[1..]);
    Some((guard, p, tag))
}

/// Counter `s` of a load, read now.
pub(crate) fn stat(l: &pathweave_kernel::loader::Loaded, s: pathweave_kernel::maps::Stat) -> u64 {
    stat_in(&l.stats().unwrap(), s)
}

/// Counter `s` in a reading of the counters.
pub(crate) fn stat_in(
    stats: &[(pathweave_kernel::maps::Stat, u64)],
    s: pathweave_kernel::maps::Stat,
) -> u64 {
    stats.iter().find(|(k, _)| *k == s).map_or(0, |(_, v)| *v)
}

/// Polls every 100 ms, up to `secs` seconds, until `f` gives a value.
pub(crate) fn poll<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    (0..secs * 10).find_map(|_| {
        let v = f();
        if v.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        v
    })
}

/// A test-unique prefix of at most 7 characters: `t`, 5 digits of the pid, a letter.
pub(crate) fn prefix(tag: char) -> String {
    format!("t{:05}{tag}", std::process::id() % 100_000)
}

/// argv: "mptcp" or "tcp", the listener's protocol (a plain TCP listener makes an MPTCP
/// client fall back to TCP).
pub(crate) const SERVER_PY: &str = r#"
import socket, sys, threading
proto = socket.IPPROTO_MPTCP if sys.argv[1] == "mptcp" else socket.IPPROTO_TCP
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5201))
s.listen(512)
print("ready", flush=True)
def serve(c):
    with c:
        while c.recv(262144):
            pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// argv: connections, concurrency, bytes per connection, seconds (0: as fast as possible;
/// otherwise each connection sends 16 KiB every 5 ms for that long). Prints "done OK FAILED".
pub(crate) const CLIENT_PY: &str = r#"
import socket, sys, threading, time
n, conc, size, secs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
payload = b"x" * 65536
ok = [0]; failed = [0]; lock = threading.Lock(); todo = list(range(n))
stop = threading.Event()
def watch():
    sys.stdin.read()
    stop.set()
threading.Thread(target=watch, daemon=True).start()
def one():
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_MPTCP)
    c.settimeout(30)
    try:
        c.connect(("198.18.0.1", 5201))
        left = size
        end = time.monotonic() + secs
        while left > 0 and secs == 0:
            left -= c.send(payload[:min(left, len(payload))])
        while secs > 0 and time.monotonic() < end and not stop.is_set():
            c.sendall(payload[:16384])
            time.sleep(0.005)
        c.shutdown(socket.SHUT_WR)
        c.recv(1)
        return True
    except OSError as e:
        print("error", e, file=sys.stderr, flush=True)
        return False
    finally:
        c.close()
def worker():
    while True:
        with lock:
            if not todo:
                return
            todo.pop()
        r = one()
        with lock:
            (ok if r else failed)[0] += 1
ts = [threading.Thread(target=worker) for _ in range(conc)]
[t.start() for t in ts]
[t.join() for t in ts]
print("done", ok[0], failed[0], flush=True)
"#;

/// Two namespaces, `paths` veth pairs, a server running.
pub(crate) struct Bed {
    pub(crate) server_ns: String,
    pub(crate) client_ns: String,
    server: Option<Child>,
}

impl Bed {
    /// Builds the bed with `cc` as both namespaces' default congestion control.
    pub(crate) fn new(tag: &str, paths: usize, cc: &str) -> Bed {
        Bed::with_listener(tag, paths, cc, "mptcp")
    }

    /// The same with the server listening on `listener` ("mptcp" or "tcp").
    pub(crate) fn with_listener(tag: &str, paths: usize, cc: &str, listener: &str) -> Bed {
        let server_ns = format!("{tag}-s");
        let client_ns = format!("{tag}-c");
        let mut bed = Bed {
            server_ns: server_ns.clone(),
            client_ns: client_ns.clone(),
            server: None,
        };
        run(&["ip", "netns", "add", &server_ns]);
        run(&["ip", "netns", "add", &client_ns]);
        for ns in [&server_ns, &client_ns] {
            run(&["ip", "-n", ns, "link", "set", "lo", "up"]);
            for setting in [
                format!("net.ipv4.tcp_congestion_control={cc}"),
                "net.mptcp.enabled=1".into(),
            ] {
                run(&["ip", "netns", "exec", ns, "sysctl", "-qw", &setting]);
            }
            run(&[
                "ip",
                "-n",
                ns,
                "mptcp",
                "limits",
                "set",
                "subflows",
                "4",
                "add_addr_accepted",
                "4",
            ]);
        }
        for k in 0..paths {
            let a = format!("{tag}{k}s");
            let b = format!("{tag}{k}c");
            run(&[
                "ip", "link", "add", &a, "netns", &server_ns, "type", "veth", "peer", "name", &b,
                "netns", &client_ns,
            ]);
            run(&[
                "ip",
                "-n",
                &server_ns,
                "addr",
                "add",
                &format!("198.18.{k}.1/24"),
                "dev",
                &a,
            ]);
            run(&[
                "ip",
                "-n",
                &client_ns,
                "addr",
                "add",
                &format!("198.18.{k}.2/24"),
                "dev",
                &b,
            ]);
            run(&["ip", "-n", &server_ns, "link", "set", &a, "up"]);
            run(&["ip", "-n", &client_ns, "link", "set", &b, "up"]);
            if k > 0 {
                bed.add_endpoint(k);
            }
        }
        let mut server = Command::new("ip")
            .args([
                "netns", "exec", &server_ns, "python3", "-c", SERVER_PY, listener,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server");
        let mut line = String::new();
        let stdout = server.stdout.take().expect("piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("server output");
        assert_eq!(line.trim(), "ready", "the server did not start");
        bed.server = Some(server);
        bed
    }

    /// Announces path k's client address as a subflow endpoint (id k).
    pub(crate) fn add_endpoint(&self, k: usize) {
        Bed::endpoint(&self.client_ns, k, true);
    }

    /// Withdraws path k's endpoint: its subflows close.
    pub(crate) fn remove_endpoint(&self, k: usize) {
        Bed::endpoint(&self.client_ns, k, false);
    }

    /// Adds (announcing its address as a subflow endpoint, id k) or deletes path k's
    /// endpoint in the client namespace `client_ns`.
    pub(crate) fn endpoint(client_ns: &str, k: usize, add: bool) {
        let id = k.to_string();
        if !add {
            run(&[
                "ip", "-n", client_ns, "mptcp", "endpoint", "delete", "id", &id,
            ]);
            return;
        }
        let addr = format!("198.18.{k}.2");
        let dev = format!("{}{k}c", &client_ns[..client_ns.len() - 2]);
        run(&[
            "ip", "-n", client_ns, "mptcp", "endpoint", "add", &addr, "dev", &dev, "id", &id,
            "subflow",
        ]);
    }

    /// Every TCP and MPTCP socket in both namespaces, with timers and internals (`ss -tanoi`,
    /// `ss -Manoi`): printed when a socket outlives its transfer.
    pub(crate) fn sockets(&self) -> String {
        let mut out = String::new();
        for ns in [&self.server_ns, &self.client_ns] {
            for kind in ["-tanoi", "-Manoi"] {
                let o = Command::new("ip")
                    .args(["netns", "exec", ns, "ss", kind])
                    .output();
                out += &format!("--- {ns}: ss {kind}\n");
                match o {
                    Ok(o) => out += &String::from_utf8_lossy(&o.stdout),
                    Err(e) => out += &format!("ss: {e}\n"),
                }
            }
        }
        out
    }

    /// MPTCP connections in both namespaces that have not closed (`ss -MHna` less the
    /// listeners and the closed or unconnected sockets).
    pub(crate) fn open_connections(&self) -> usize {
        let mut n = 0;
        for ns in [&self.server_ns, &self.client_ns] {
            let o = Command::new("ip")
                .args(["netns", "exec", ns, "ss", "-MHna"])
                .output()
                .expect("run ss");
            n += String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| {
                    let state = l.split_whitespace().next().unwrap_or("");
                    !matches!(state, "" | "LISTEN" | "UNCONN" | "CLOSE")
                })
                .count();
        }
        n
    }

    /// Starts the client: `n` connections, `conc` at a time, `bytes` each, or, if `secs > 0`,
    /// paced until the client's stdin closes, for at most `secs` seconds each.
    pub(crate) fn client(&self, n: usize, conc: usize, bytes: usize, secs: f64) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.client_ns, "python3", "-c", CLIENT_PY])
            .args([
                n.to_string(),
                conc.to_string(),
                bytes.to_string(),
                secs.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the client")
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        for ns in [&self.server_ns, &self.client_ns] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Waits for a child up to `secs` seconds; kills it and returns None on a timeout.
pub(crate) fn wait_for(mut child: Child, secs: u64) -> Option<String> {
    for _ in 0..secs * 10 {
        if let Ok(Some(_)) = child.try_wait() {
            let out = child.wait_with_output().ok()?;
            return Some(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// The kernel log lines so far.
pub(crate) fn kernel_log() -> Vec<String> {
    Command::new("dmesg")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Nothing named after `tag` is left: namespaces, links, pins.
pub(crate) fn assert_nothing_left(tag: &str) {
    let ns = run(&["ip", "netns", "list"]);
    assert!(!ns.contains(tag), "namespaces left: {ns}");
    let links = run(&["ip", "-o", "link"]);
    assert!(!links.contains(tag), "links left: {links}");
}
