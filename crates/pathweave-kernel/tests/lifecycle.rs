//! The connection-state lifecycle on the real stack (root, BTF, MPTCP; skipped elsewhere
//! with the reason): entries appear with a connection's first subflow and go with its last,
//! whatever the number of connections, subflows joining and leaving, or concurrency.
#![cfg(feature = "bpf")]

mod support;

use pathweave_kernel::bmc::Manager;
use pathweave_kernel::loader::Loaded;
use pathweave_kernel::maps::Stat;
use pathweave_kernel::{Algorithm, Prefix};
use std::time::Duration;
use support::{assert_nothing_left, kernel_log, prefix, root_test, wait_for, Bed};

fn stat(l: &Loaded, s: Stat) -> u64 {
    l.stats()
        .unwrap()
        .into_iter()
        .find(|(k, _)| *k == s)
        .map_or(0, |(_, v)| v)
}

/// Polls until the map is empty (subflows are released shortly after close) or `secs` pass.
/// Entries left once every socket the controllers initialised has been released (or after
/// `secs` seconds, whichever is first). A subflow whose path was withdrawn can outlive its
/// transfer by its retransmission timeouts (107 s was seen): its entry rightly stays until
/// the kernel releases it, so the map is judged only once `release` has run for every `init`.
fn drain(l: &Loaded, secs: u64) -> usize {
    for _ in 0..secs * 10 {
        let n = l.connections().unwrap().len();
        if n == 0 || stat(l, Stat::Init) == stat(l, Stat::Release) {
            // Let a release that has counted itself finish its delete.
            std::thread::sleep(Duration::from_millis(100));
            return l.connections().unwrap().len();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = l.connections().unwrap().len();
    let alive = stat(l, Stat::Init) - stat(l, Stat::Release);
    println!("after {secs} s: {left} entries, {alive} initialised sockets not yet released");
    left
}

#[test]
fn a_thousand_connections_opened_and_closed_leave_the_map_empty() {
    let Some(_g) = root_test() else {
        return;
    };
    let p = Prefix::new(&prefix('a')).unwrap();
    let tag = format!("pwk{}", &p.as_str()[1..]);
    {
        let l = Loaded::load(&p).expect("the programs load and register");
        let bed = Bed::new(&tag, 2, &p.name(Algorithm::Lia));
        let out = wait_for(bed.client(1000, 1, 16_384, 0.0), 300).expect("the client finished");
        assert_eq!(out.trim(), "done 1000 0", "every connection completed");
        let left = drain(&l, 180);
        println!(
            "1000 connections: {left} entries left; created {}, deleted {}, subflows registered {}, \
             unregistered {}",
            stat(&l, Stat::ConnCreated),
            stat(&l, Stat::ConnDeleted),
            stat(&l, Stat::Registered),
            stat(&l, Stat::Unregistered)
        );
        if left != 0 {
            println!("counters: {:?}", l.stats().unwrap());
            for c in l.connections().unwrap() {
                println!("left: {c:?}");
            }
        }
        assert_eq!(
            left, 0,
            "connection entries left after every connection closed"
        );
        // Both ends run the controller: 1000 client and 1000 server connections.
        assert!(stat(&l, Stat::ConnCreated) >= 2000);
        assert_eq!(stat(&l, Stat::ConnCreated), stat(&l, Stat::ConnDeleted));
        assert_eq!(stat(&l, Stat::Registered), stat(&l, Stat::Unregistered));
        assert_eq!(stat(&l, Stat::ConnMissing), 0);
        drop(bed);
    }
    assert_nothing_left(&tag);
}

#[test]
fn sixty_four_connections_with_subflows_joining_and_leaving_run_clean() {
    let Some(_g) = root_test() else {
        return;
    };
    let log_before = kernel_log().len();
    for (i, algo) in Algorithm::ALL.into_iter().enumerate() {
        let p = Prefix::new(&prefix((b'b' + i as u8) as char)).unwrap();
        let tag = format!("pwk{}", &p.as_str()[1..]);
        {
            let l = Loaded::load(&p).expect("the programs pass the verifier");
            let bed = Bed::new(&tag, 3, &p.name(algo));
            let client = bed.client(64, 64, 0, 4.0);
            // Subflows leave and join while the transfers run.
            for round in 0..4 {
                std::thread::sleep(Duration::from_millis(300));
                let k = 1 + round % 2;
                bed.remove_endpoint(k);
                std::thread::sleep(Duration::from_millis(200));
                bed.add_endpoint(k);
            }
            let mid = l.connections().unwrap();
            if algo == Algorithm::Bmc {
                // The proportion manager's first period gives every connection its weights.
                let mut m = Manager::default();
                let updates = m.step(&mid, 1.0);
                assert_eq!(updates.len(), mid.len());
                for u in &updates {
                    l.set_weights(u.id, &u.weights).unwrap();
                }
                assert_eq!(l.weights().unwrap().len(), mid.len());
            }
            let joined = mid.iter().filter(|c| c.subflows >= 2).count();
            let out = wait_for(client, 120).unwrap_or_else(|| panic!("{algo}: transfers stalled"));
            assert_eq!(out.trim(), "done 64 0", "{algo}: every transfer completed");
            let left = drain(&l, 180);
            println!(
                "{algo}: 64 connections, {} entries mid-run ({joined} with two subflows or more), \
                 subflows registered {}, unregistered {}, {left} entries left",
                mid.len(),
                stat(&l, Stat::Registered),
                stat(&l, Stat::Unregistered)
            );
            assert_eq!(left, 0, "{algo}: entries left");
            // The last subflow of a connection also removes its BMC weights.
            assert!(l.weights().unwrap().is_empty(), "{algo}: weights left");
            // Both ends of the 64 connections hold an entry while they run.
            assert!(mid.len() >= 64, "{algo}: {} entries mid-run", mid.len());
            assert!(joined > 0, "{algo}: no connection had two subflows");
            // More subflows than connections registered: subflows did join.
            assert!(
                stat(&l, Stat::Registered) > stat(&l, Stat::ConnCreated),
                "{algo}: no joins"
            );
            assert_eq!(stat(&l, Stat::Registered), stat(&l, Stat::Unregistered));
            assert_eq!(stat(&l, Stat::ConnMissing), 0);
            drop(bed);
        }
        assert_nothing_left(&tag);
    }
    let log = kernel_log();
    let new: Vec<&String> = log.iter().skip(log_before).collect();
    let bad: Vec<&&String> = new
        .iter()
        .filter(|l| {
            let l = l.to_lowercase();
            l.contains("warning")
                || l.contains("bug:")
                || l.contains("rcu")
                || l.contains("lockdep")
        })
        .collect();
    assert!(bad.is_empty(), "kernel log warnings: {bad:#?}");
}
