//! Each pw_* controller on a plain TCP flow, and on an MPTCP connection fallen back to TCP
//! (both Reno by design), over a 20 Mbit/s TBF bottleneck with a small buffer halves its
//! window on loss: every new ssthresh the sender reports is half the window sampled just
//! before it, as `tcp_reno_ssthresh` gives (root; skipped elsewhere). Goodput against Reno,
//! and losses in the steady state, need the emulator's delay (`tests/test_kernel_emulate.py`).
#![cfg(feature = "bpf")]

mod support;

use pathweave_kernel::loader::Loaded;
use pathweave_kernel::maps::Stat;
use pathweave_kernel::Algorithm;
use support::{assert_nothing_left, poll, root_setup, run, stat, wait_for, Bed};

/// Sends for 2 s on a TCP socket (argv: "tcp", or "mptcp" for an MPTCP socket, which falls
/// back to TCP against the plain listener) and samples TCP_INFO every millisecond; prints
/// the controller's name, whether the socket fell back, and one line
/// "loss CWND_BEFORE NEW_SSTHRESH" per change of ssthresh.
const PLAIN_PY: &str = r#"
import socket, struct, sys, threading, time
mptcp = sys.argv[1] == "mptcp"
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM,
                  socket.IPPROTO_MPTCP if mptcp else socket.IPPROTO_TCP)
c.connect(("198.18.0.1", 5201))
stop = time.monotonic() + 2
def send():
    data = b"x" * 65536
    while time.monotonic() < stop:
        c.sendall(data)
t = threading.Thread(target=send); t.start()
last_cwnd, last_ss, events = None, None, []
while time.monotonic() < stop:
    info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    ss, cwnd = struct.unpack_from("II", info, 76)
    if last_ss is not None and ss != last_ss and ss < 1 << 30:
        events.append((last_cwnd, ss))
    last_cwnd, last_ss = cwnd, ss
    time.sleep(0.001)
t.join()
print(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode())
# SOL_MPTCP (284), MPTCP_INFO (1): refused once the connection has fallen back to TCP.
try:
    c.getsockopt(284, 1, 64)
    print("mptcp")
except OSError:
    print("fallback" if mptcp else "tcp")
for e in events:
    print("loss", *e)
c.close()
"#;

/// Runs PLAIN_PY with `client` ("tcp" or "mptcp") against a `listener` ("tcp" or "mptcp")
/// through a 20 Mbit/s TBF with a 15 kB buffer, the bed's default controller `name`; checks
/// that the socket ran `name`, reports `kind` ("tcp", "fallback", "mptcp"), and that the
/// losses in congestion avoidance halved its window.
fn halves_its_window(tag: &str, name: &str, listener: &str, client: &str, kind: &str) {
    let bed = Bed::with_listener(tag, 1, name, listener);
    let dev = format!("{tag}0c");
    run(&[
        "ip",
        "netns",
        "exec",
        &bed.client_ns,
        "tc",
        "qdisc",
        "add",
        "dev",
        &dev,
        "root",
        "tbf",
        "rate",
        "20mbit",
        "burst",
        "16kb",
        "limit",
        "15kb",
    ]);
    let child = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &bed.client_ns,
            "python3",
            "-c",
            PLAIN_PY,
            client,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_for(child, 60).expect("the transfer finished");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(name), "the socket ran {name}");
    assert_eq!(lines.next(), Some(kind), "{name}: the connection is {kind}");
    let events: Vec<(u64, u64)> = lines
        .filter_map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            (v.len() == 2).then(|| (v[0], v[1]))
        })
        .collect();
    println!(
        "{name} ({kind}): {} congestion events, (cwnd before, new ssthresh) {:?}",
        events.len(),
        &events[..events.len().min(6)]
    );
    // Halving: ssthresh = max(⌊w/2⌋, 2) of the window at the loss, which the 1 ms sample can
    // trail by a few packets of growth. Only decreases are congestion events: a connection
    // can also start from the threshold the namespace's route cache kept (ssthresh = w).
    // The shaper is the sender's own qdisc, whose backpressure (TCP small queues) keeps the
    // window from growing once it carries the rate, so the losses are few: the first slow
    // start's, and any later ones.
    let judged: Vec<&(u64, u64)> = events.iter().filter(|(w, ss)| ss < w).collect();
    assert!(
        !judged.is_empty(),
        "{name}: the bottleneck caused no loss: {events:?}"
    );
    let halved = judged
        .iter()
        .filter(|(w, ss)| (*ss as f64 - (*w as f64 / 2.0).max(2.0)).abs() <= 2.0)
        .count();
    assert!(
        halved * 10 >= judged.len() * 8,
        "{name}: {halved} of {} events halved: {events:?}",
        judged.len()
    );
}

#[test]
fn every_controller_on_plain_tcp_halves_its_window_on_loss() {
    let Some((_g, p, tag)) = root_setup('p') else {
        return;
    };
    {
        let l = Loaded::load(&p).expect("the programs load");
        for algo in Algorithm::ALL {
            halves_its_window(&tag, &p.name(algo), "tcp", "tcp", "tcp");
        }
        // Plain TCP sockets never take part in the coupled state.
        assert!(l.connections().unwrap().is_empty());
        assert_eq!(stat(&l, Stat::Registered), 0);
        assert!(stat(&l, Stat::PlainTcp) >= Algorithm::ALL.len() as u64);
    }
    assert_nothing_left(&tag);
}

/// An MPTCP connection that falls back to TCP (its peer does not speak MPTCP) is one
/// subflow: each controller runs Reno's rule on it, and its entry goes with it.
#[test]
fn every_controller_on_a_connection_fallen_back_to_tcp_halves_its_window_on_loss() {
    let Some((_g, p, tag)) = root_setup('f') else {
        return;
    };
    {
        let l = Loaded::load(&p).expect("the programs load");
        for algo in Algorithm::ALL {
            halves_its_window(&tag, &p.name(algo), "tcp", "mptcp", "fallback");
        }
        let gone = poll(10, || l.connections().unwrap().is_empty().then_some(()));
        assert!(
            gone.is_some(),
            "the fallen-back connections' entries are gone"
        );
        println!("counters after fallback: {:?}", l.stats().unwrap());
        assert_eq!(
            stat(&l, Stat::Registered),
            stat(&l, Stat::Unregistered) + stat(&l, Stat::ReclaimedSubflows),
            "every registration ended"
        );
    }
    assert_nothing_left(&tag);
}
