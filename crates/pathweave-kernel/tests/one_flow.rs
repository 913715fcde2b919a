//! Each pw_* controller on a plain TCP flow (not MPTCP: Reno by design) over a 20 Mbit/s TBF
//! bottleneck with a small buffer halves its window on loss: every new ssthresh the sender
//! reports is half the window sampled just before it, as `tcp_reno_ssthresh` gives (root;
//! skipped elsewhere). Goodput against Reno over emulated delay needs the emulator.
#![cfg(feature = "bpf")]

mod support;

use pathweave_kernel::loader::Loaded;
use pathweave_kernel::{Algorithm, Prefix};
use support::{assert_nothing_left, prefix, root_test, run, wait_for, Bed};

/// Sends for 5 s on a plain TCP socket and samples TCP_INFO every millisecond; prints one
/// line "loss CWND_BEFORE NEW_SSTHRESH" per change of ssthresh.
const PLAIN_PY: &str = r#"
import socket, struct, threading, time
c = socket.create_connection(("198.18.0.1", 5201))
stop = time.monotonic() + 5
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
for e in events:
    print("loss", *e)
c.close()
"#;

#[test]
fn every_controller_on_plain_tcp_halves_its_window_on_loss() {
    let Some(_g) = root_test() else {
        return;
    };
    let p = Prefix::new(&prefix('p')).unwrap();
    let tag = format!("pwk{}", &p.as_str()[1..]);
    {
        let _l = Loaded::load(&p).expect("the programs load");
        for algo in Algorithm::ALL {
            let name = p.name(algo);
            let bed = Bed::new(&tag, 1, &name);
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
                .args(["netns", "exec", &bed.client_ns, "python3", "-c", PLAIN_PY])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let out = wait_for(child, 60).expect("the transfer finished");
            let mut lines = out.lines();
            assert_eq!(lines.next(), Some(name.as_str()), "the socket ran {name}");
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
                "{name}: {} congestion events, (cwnd before, new ssthresh) {:?}",
                events.len(),
                &events[..events.len().min(6)]
            );
            assert!(!events.is_empty(), "{name}: the bottleneck caused no loss");
            // Halving: ssthresh = max(⌊w/2⌋, 2) of the window at the loss, which the 1 ms
            // sample can trail by a few packets of growth. The first loss ends slow start,
            // where the window doubles within one sampling interval at this short RTT, so
            // only the losses in congestion avoidance are judged.
            let judged = &events[1..];
            let halved = judged
                .iter()
                .filter(|(w, ss)| (*ss as f64 - (*w as f64 / 2.0).max(2.0)).abs() <= 2.0)
                .count();
            assert!(
                halved * 10 >= judged.len() * 8,
                "{name}: {halved} of {} events halved: {events:?}",
                judged.len()
            );
            drop(bed);
        }
    }
    assert_nothing_left(&tag);
}
