//! Transfers between a receiver and a sender on this host's loopback addresses (no privileges
//! needed): two paths from 127.0.0.1 and 127.0.0.2.
#![allow(clippy::disallowed_methods)]

use pathweave_cc::cc::multipath::{Algorithm, MultipathConfig, WindowConfig};
use pathweave_cc::Bytes;
use pathweave_quic::endpoint::{Receiver, ReceiverLive, SenderLive};
use pathweave_quic::{Amount, QuicError, ReceiveOptions, SendOptions, Settings};
use pathweave_sim::scenario::Control;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn control(a: Algorithm) -> Control {
    Control::Multipath(MultipathConfig::new(
        a,
        Bytes(1200),
        WindowConfig::default(),
    ))
}

struct Running {
    addr: SocketAddr,
    fingerprint: String,
    stop: Arc<AtomicBool>,
    done: Arc<Mutex<Vec<pathweave_quic::Received>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn receiver() -> Running {
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Mutex::new(Vec::new()));
    let (s, d) = (Arc::clone(&stop), Arc::clone(&done));
    let thread = std::thread::spawn(move || {
        let r = Receiver::bind(ReceiveOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            settings: Settings::default(),
            transfers: None,
        })
        .unwrap();
        tx.send((r.local_addr().unwrap(), r.fingerprint())).unwrap();
        let live = Arc::new(ReceiverLive::default());
        r.run(&live, &s, |x| d.lock().unwrap().push(x.clone()))
            .unwrap();
    });
    let (addr, fingerprint) = rx.recv().unwrap();
    Running {
        addr,
        fingerprint,
        stop,
        done,
        thread: Some(thread),
    }
}

fn options(r: &Running, from: &[&str], a: Algorithm, amount: Amount) -> SendOptions {
    SendOptions {
        to: r.addr,
        from: from.iter().map(|x| x.parse::<IpAddr>().unwrap()).collect(),
        algorithm: a.name().to_string(),
        control: control(a),
        fingerprint: r.fingerprint.clone(),
        amount,
        settings: Settings::default(),
        connect_timeout: Duration::from_secs(5),
        seed: 7,
        deferred: Vec::new(),
    }
}

#[test]
fn a_two_path_transfer_arrives_intact_and_uses_both_paths() {
    let r = receiver();
    let opts = options(
        &r,
        &["127.0.0.1", "127.0.0.2"],
        Algorithm::Lia,
        Amount::Bytes(8_000_000),
    );
    let live = Arc::new(SenderLive::default());
    let report = pathweave_quic::endpoint::send(&opts, &live, &AtomicBool::new(false)).unwrap();
    assert!(report.intact(), "{report:?}");
    assert_eq!(report.sent_bytes, 8_000_000);
    assert_eq!(report.paths.len(), 2);
    // Each path joined the coupled controller in its own slot.
    let slots: Vec<_> = report.paths.iter().map(|p| p.path.slot).collect();
    assert_eq!(slots, vec![Some(0), Some(1)]);
    // Both paths carried data, and the acknowledged UDP payload covers every data byte sent
    // (it is data plus headers and frames: it cannot be less).
    let acked: Vec<u64> = report
        .paths
        .iter()
        .map(|p| p.snapshot.unwrap().acked_bytes)
        .collect();
    assert!(acked.iter().all(|&a| a > 0), "{acked:?}");
    assert!(acked.iter().sum::<u64>() >= report.sent_bytes, "{acked:?}");
    // The receiver saw the same transfer.
    let t0 = Instant::now();
    while r.done.lock().unwrap().is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = r.done.lock().unwrap()[0].clone();
    assert_eq!(got.bytes, 8_000_000);
    assert_eq!(got.sha256, report.sent_sha256);
    assert!(got.error.is_none(), "{got:?}");
}

#[test]
fn a_wrong_fingerprint_is_refused() {
    let r = receiver();
    let mut opts = options(
        &r,
        &["127.0.0.1"],
        Algorithm::Uncoupled,
        Amount::Bytes(1000),
    );
    opts.fingerprint = "0".repeat(64);
    let live = Arc::new(SenderLive::default());
    let e = pathweave_quic::endpoint::send(&opts, &live, &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(e, QuicError::Connection(_)), "{e}");
    assert!(
        e.to_string().contains("fingerprint") || e.to_string().contains("certificate"),
        "{e}"
    );
}

#[test]
fn a_silent_peer_times_out_at_the_stated_limit() {
    // A bound UDP socket that never answers.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut opts = SendOptions {
        to: silent.local_addr().unwrap(),
        from: vec!["127.0.0.1".parse().unwrap()],
        algorithm: "lia".into(),
        control: control(Algorithm::Lia),
        fingerprint: "0".repeat(64),
        amount: Amount::Bytes(1000),
        settings: Settings::default(),
        connect_timeout: Duration::from_millis(800),
        seed: 1,
        deferred: Vec::new(),
    };
    opts.settings.path_idle_timeout = Duration::from_secs(1);
    let t0 = Instant::now();
    let live = Arc::new(SenderLive::default());
    let e = pathweave_quic::endpoint::send(&opts, &live, &AtomicBool::new(false)).unwrap_err();
    let took = t0.elapsed();
    assert!(matches!(e, QuicError::Timeout(_)), "{e}");
    assert!(e.to_string().contains("0.8 s"), "{e}");
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[test]
fn a_from_address_not_on_this_host_is_named() {
    let r = receiver();
    let opts = options(
        &r,
        &["127.0.0.1", "198.18.255.254"],
        Algorithm::Lia,
        Amount::Bytes(1000),
    );
    let live = Arc::new(SenderLive::default());
    let e = pathweave_quic::endpoint::send(&opts, &live, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("198.18.255.254"), "{e}");
}

#[test]
fn every_multipath_algorithm_and_single_path_base_runs_a_transfer() {
    let r = receiver();
    let names = pathweave_sim::scenario::algorithm_names();
    assert!(names.len() >= 17, "{names:?}");
    let controls = names.iter().map(|n| {
        (
            n.to_string(),
            pathweave_quic::control(n, 1200, 10, None).unwrap(),
        )
    });
    for (name, c) in controls {
        let mut opts = options(
            &r,
            &["127.0.0.1", "127.0.0.2"],
            Algorithm::Lia,
            Amount::Bytes(2_000_000),
        );
        opts.algorithm = name.clone();
        opts.control = c;
        let live = Arc::new(SenderLive::default());
        let report = pathweave_quic::endpoint::send(&opts, &live, &AtomicBool::new(false))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(report.intact(), "{name}: {report:?}");
        assert_eq!(report.paths.len(), 2, "{name}");
    }
}

#[test]
fn a_deferred_path_joins_when_asked_carries_data_and_leaves_when_asked() {
    let r = receiver();
    let mut opts = options(
        &r,
        &["127.0.0.1", "127.0.0.2"],
        Algorithm::Lia,
        Amount::Duration(Duration::from_millis(2500)),
    );
    opts.deferred = vec![1];
    let live = Arc::new(SenderLive::default());
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (live, stop) = (Arc::clone(&live), Arc::clone(&stop));
        std::thread::spawn(move || pathweave_quic::endpoint::send(&opts, &live, &stop))
    };
    let open_paths = |live: &SenderLive| -> Vec<usize> {
        live.sample()
            .iter()
            .filter(|p| p.snapshot.is_some_and(|s| s.open))
            .map(|p| p.path.index)
            .collect()
    };
    std::thread::sleep(Duration::from_millis(400));
    let before = open_paths(&live);
    live.change_path(1, true);
    std::thread::sleep(Duration::from_millis(700));
    let joined = open_paths(&live);
    let acked_on_1 = live
        .sample()
        .iter()
        .filter(|p| p.path.index == 1)
        .filter_map(|p| p.snapshot.map(|s| s.acked_bytes))
        .max();
    live.change_path(1, false);
    std::thread::sleep(Duration::from_millis(1200));
    let after = open_paths(&live);
    let report = sender.join().unwrap().unwrap();
    assert_eq!(before, vec![0], "only path 0 until path 1 is asked for");
    assert_eq!(joined, vec![0, 1], "path 1 open once asked for");
    assert!(acked_on_1.is_some_and(|a| a > 0), "{acked_on_1:?}");
    assert_eq!(after, vec![0], "path 1 closed once asked to leave");
    assert!(report.intact(), "{report:?}");
}
