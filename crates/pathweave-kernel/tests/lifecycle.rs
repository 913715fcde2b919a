//! The connection-state lifecycle on the real stack (root, BTF, MPTCP; skipped elsewhere
//! with the reason): entries appear with a connection's first subflow and go with its last,
//! whatever the number of connections, subflows joining and leaving, or concurrency.
#![cfg(feature = "bpf")]

mod support;

use pathweave_kernel::bmc::Manager;
use pathweave_kernel::loader::Loaded;
use pathweave_kernel::maps::{Conn, Slot, Stat, SLOTS, SLOT_USED};
use pathweave_kernel::{Algorithm, Prefix};
use std::time::Duration;
use support::{
    assert_nothing_left, kernel_log, poll, prefix, root_setup, root_test, stat, stat_in, wait_for,
    Bed,
};

/// Sockets the controllers initialised whose `release` has not run, leaving out those
/// initialised already closed: the kernel destroyed them before `init` and no `release`
/// follows; they never register.
fn unreleased(l: &Loaded) -> u64 {
    stat(l, Stat::Init) - stat(l, Stat::Release) - stat(l, Stat::InitClosed)
}

/// Entries left once every socket the controllers initialised has been released, or after
/// `secs` seconds, whichever is first. Now and then `release` runs minutes after a transfer
/// ended (100–180 s was seen). [`judge`] bounds what is left by the subflows whose
/// `release` has not run, and [`freed_without_release`] tells when the kernel freed
/// subflows without `release` (their connection's entry is then reclaimed at its close).
fn drain(l: &Loaded, secs: u64, bed: &Bed) -> usize {
    for _ in 0..secs * 10 {
        let n = l.connections().unwrap().len();
        if n == 0 || unreleased(l) == 0 {
            // Let a release that has counted itself finish its delete.
            std::thread::sleep(Duration::from_millis(100));
            return l.connections().unwrap().len();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = l.connections().unwrap().len();
    let alive = unreleased(l);
    println!("after {secs} s: {left} entries, {alive} initialised sockets not yet released");
    println!("{}", bed.sockets());
    println!(
        "sockstat (root namespace, TCP alloc is machine-wide): {}",
        std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default()
    );
    left
}

/// TCP sockets allocated on the whole machine (`alloc` in `/proc/net/sockstat`).
fn tcp_sockets_allocated() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "alloc")?;
    words.next()?.parse().ok()
}

/// How many of the subflows whose `release` has not run no longer exist: more initialised
/// than released, yet fewer TCP sockets on the whole machine than that. The kernel does this
/// now and then to a join racing its connection's close (tcp_v4_destroy_sock ran for them,
/// the controller's `release` did not); their slots go when their connection's entry is
/// reclaimed at its close.
fn freed_without_release(l: &Loaded, what: &str) -> u64 {
    let alive = unreleased(l);
    let allocated = tcp_sockets_allocated().unwrap_or(u64::MAX);
    let freed = alive.saturating_sub(allocated);
    if freed > 0 {
        println!(
            "{what}: at least {freed} subflows were freed without release ({alive} not \
             released, {allocated} TCP sockets on the machine); {} connection closes not \
             recorded (pw_conn_close skipped)",
            l.closes_not_recorded().unwrap()
        );
    }
    freed
}

/// Entries and subflows a test wrote into the map itself, standing in for the kernel (and
/// not deleted again by the test): the counters cannot know of them.
#[derive(Clone, Copy, Default)]
struct Injected {
    entries: u64,
    subflows: u64,
}

/// [`judge_with`] for a map only the controllers wrote.
fn judge(l: &Loaded, left: usize, what: &str) {
    judge_with(l, left, what, Injected::default());
}

/// The counters balance against the map, and every entry left is held by a subflow whose
/// `release` has not run:
/// * slots: every registration gave its slot back, or was still registered when its entry
///   was reclaimed (connection closed, or stale at a reused address), or holds a slot now;
/// * entries: every entry started (created, or reset from a stale one) was deleted by its
///   last subflow, reclaimed, found stale, or is still there;
/// * a subflow learns of its entry's reclaim at most once (then runs Reno).
fn judge_with(l: &Loaded, left: usize, what: &str, injected: Injected) {
    freed_without_release(l, what);
    let alive = unreleased(l);
    // The counters and the map read together: again while a late release changes them.
    let (stats, conns) = (0..50)
        .find_map(|_| {
            let before = l.stats().unwrap();
            let conns = l.connections().unwrap();
            (l.stats().unwrap() == before).then_some((before, conns))
        })
        .expect("the counters settle");
    let at = |s: Stat| stat_in(&stats, s);
    let held: u64 = conns.iter().map(|c| u64::from(c.subflows)).sum();
    if left != 0 || held != 0 {
        println!("{what}: counters {stats:?}");
        for c in &conns {
            println!("{what}: left {c:?}");
        }
    }
    assert_eq!(
        at(Stat::Registered) + injected.subflows,
        at(Stat::Unregistered) + at(Stat::ReclaimedSubflows) + held,
        "{what}: registrations do not balance"
    );
    // A stale entry's reset ends the earlier connection's entry and starts the new one's
    // in its place: it counts on both sides.
    assert_eq!(
        at(Stat::ConnCreated) + at(Stat::Stale) + injected.entries,
        at(Stat::ConnDeleted) + at(Stat::Reclaimed) + at(Stat::Stale) + conns.len() as u64,
        "{what}: entries do not balance"
    );
    assert!(
        at(Stat::ConnMissing) <= at(Stat::ReclaimedSubflows),
        "{what}: more subflows found their entry gone than were reclaimed"
    );
    assert!(
        left as u64 <= alive,
        "{what}: {left} entries left, {alive} sockets not released"
    );
    if alive > 0 {
        println!("{what}: {alive} sockets not yet released by the kernel hold {left} entries");
    }
}

#[test]
fn a_thousand_connections_opened_and_closed_leave_the_map_empty() {
    let Some((_g, p, tag)) = root_setup('a') else {
        return;
    };
    {
        let l = Loaded::load(&p).expect("the programs load and register");
        let bed = Bed::new(&tag, 2, &p.name(Algorithm::Lia));
        let out = wait_for(bed.client(1000, 1, 16_384, 0.0), 300).expect("the client finished");
        assert_eq!(out.trim(), "done 1000 0", "every connection completed");
        let left = drain(&l, 60, &bed);
        println!(
            "1000 connections: {left} entries left; created {}, deleted {}, subflows registered {}, \
             unregistered {}, initialised closed {}",
            stat(&l, Stat::ConnCreated),
            stat(&l, Stat::ConnDeleted),
            stat(&l, Stat::Registered),
            stat(&l, Stat::Unregistered),
            stat(&l, Stat::InitClosed)
        );
        judge(&l, left, "1000 connections");
        // Both ends run the controller: 1000 client and 1000 server connections.
        assert!(stat(&l, Stat::ConnCreated) >= 2000);
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
            // Paced transfers that last until the client is told to stop (closing its stdin),
            // so that they outlast the path changes however slowly a busy machine runs them.
            let mut client = bed.client(64, 64, 0, 60.0);
            // The connections are open (both ends hold entries) before paths change; a busy
            // machine can take seconds to start the client.
            for _ in 0..300 {
                if l.connections().unwrap().len() >= 128 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
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
            drop(client.stdin.take());
            let out = wait_for(client, 120).unwrap_or_else(|| panic!("{algo}: transfers stalled"));
            assert_eq!(out.trim(), "done 64 0", "{algo}: every transfer completed");
            let left = drain(&l, 60, &bed);
            println!(
                "{algo}: 64 connections, {} entries mid-run ({joined} with two subflows or more), \
                 subflows registered {}, unregistered {}, {left} entries left, {} re-initialised, \
                 {} initialised closed",
                mid.len(),
                stat(&l, Stat::Registered),
                stat(&l, Stat::Unregistered),
                stat(&l, Stat::Reinit),
                stat(&l, Stat::InitClosed)
            );
            judge(&l, left, &algo.to_string());
            // The last subflow of a connection also removes its BMC weights.
            assert!(
                l.weights().unwrap().len() <= left,
                "{algo}: weights of closed connections left"
            );
            // Both ends of the 64 connections hold an entry while they run.
            assert!(mid.len() >= 64, "{algo}: {} entries mid-run", mid.len());
            assert!(joined > 0, "{algo}: no connection had two subflows");
            // More subflows than connections registered: subflows did join.
            assert!(
                stat(&l, Stat::Registered) > stat(&l, Stat::ConnCreated),
                "{algo}: no joins"
            );
            drop(bed);
            if left > 0 {
                // Whether deleting the namespaces makes the kernel release what it kept.
                let gone = (0..300).any(|_| {
                    std::thread::sleep(Duration::from_millis(100));
                    l.connections().unwrap().is_empty()
                });
                println!(
                    "{algo}: namespaces deleted; map empty within 30 s: {gone}; counters {:?}",
                    l.stats().unwrap()
                );
            }
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

#[test]
fn subflows_joining_while_connections_close_leave_nothing_behind() {
    let Some((_g, p, tag)) = root_setup('j') else {
        return;
    };
    {
        let l = Loaded::load(&p).expect("the programs load and register");
        let bed = Bed::new(&tag, 3, &p.name(Algorithm::Lia));
        // Short paced connections, 64 at a time, while both extra paths are withdrawn and
        // announced again every 20 ms: joins start on connections that are closing.
        let client = bed.client(3000, 64, 0, 0.2);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flapper = {
            let stop = stop.clone();
            let ns = bed.client_ns.clone();
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && rounds < 1500 {
                    for k in 1..3 {
                        Bed::endpoint(&ns, k, false);
                        Bed::endpoint(&ns, k, true);
                    }
                    rounds += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                rounds
            })
        };
        let out = wait_for(client, 300);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let rounds = flapper.join().unwrap();
        let out = out.expect("the client finished");
        assert!(out.trim().starts_with("done "), "client: {out}");
        let left = drain(&l, 60, &bed);
        println!(
            "3000 connections, {rounds} path rounds: {}; {left} entries left; registered {}, \
             unregistered {}, initialised closed {}, re-initialised {}",
            out.trim(),
            stat(&l, Stat::Registered),
            stat(&l, Stat::Unregistered),
            stat(&l, Stat::InitClosed),
            stat(&l, Stat::Reinit)
        );
        judge(&l, left, "joins while closing");
        // Whatever the kernel freed without release, no entry outlives its connection: one
        // more connection starting and ending sweeps those of every connection closed since
        // the last sweep, and what is left belongs to connections still open.
        let out = wait_for(bed.client(1, 1, 16_384, 0.0), 60).expect("one more connection");
        assert_eq!(out.trim(), "done 1 0");
        let left = drain(&l, 10, &bed);
        let open = bed.open_connections();
        println!(
            "after one more connection: {left} entries left, {open} connections open; \
             reclaimed {} entries holding {} subflows, {} stale, {} joins refused, {} closes \
             not recorded",
            stat(&l, Stat::Reclaimed),
            stat(&l, Stat::ReclaimedSubflows),
            stat(&l, Stat::Stale),
            stat(&l, Stat::ConnGone),
            l.closes_not_recorded().unwrap()
        );
        judge(&l, left, "joins while closing, one more connection");
        assert!(
            left <= open,
            "{left} entries outlive their connections ({open} open; {} closes not recorded): \
             {:?}",
            l.closes_not_recorded().unwrap(),
            l.connections().unwrap()
        );
        drop(bed);
    }
    assert_nothing_left(&tag);
}

/// One more short connection, whose first subflow's `init` sweeps the closed connections.
fn one_more_connection(bed: &Bed) {
    let out = wait_for(bed.client(1, 1, 16_384, 0.0), 60).expect("one more connection");
    assert_eq!(out.trim(), "done 1 0");
}

/// A subflow the kernel frees without `release` keeps its slot, so its connection's last
/// real subflow does not delete the entry; the connection's close must reclaim it. The test
/// stands in for the kernel: while a transfer runs, it gives each end's entry a phantom
/// subflow in the last slot, which nothing will ever release. A second transfer, still
/// running when the first ends, then ends too: its last subflows' `release` sweeps. (A new
/// connection would do as well, but its socket is usually allocated at the address the
/// closed one freed, and then its first subflow resets the entry as stale instead.)
#[test]
fn an_entry_whose_subflow_vanished_is_reclaimed_after_its_connection_closes() {
    let Some((_g, p, tag)) = root_setup('v') else {
        return;
    };
    {
        let l = Loaded::load(&p).expect("the programs load and register");
        let bed = Bed::new(&tag, 2, &p.name(Algorithm::Lia));
        let both_subflows = |n: usize| {
            poll(20, || {
                let c = l.connections().unwrap();
                (c.len() == n && c.iter().all(|c| c.subflows == 2)).then_some(c)
            })
        };
        let mut first = bed.client(1, 1, 0, 30.0);
        let live = both_subflows(2).expect("both ends hold an entry with two subflows");
        let mut second = bed.client(1, 1, 0, 30.0);
        both_subflows(4).expect("and both ends of a second connection");
        let before = l.stats().unwrap();
        let phantom = SLOTS - 1;
        for c in &live {
            let mut c = c.clone();
            assert_eq!(c.used & (1 << phantom), 0, "the last slot is free");
            c.subflows += 1;
            c.used |= 1 << phantom;
            c.slots[phantom] = Slot {
                flags: SLOT_USED,
                ..Slot::default()
            };
            l.write_connection(&c).unwrap();
        }
        let phantoms = |now: &[Conn]| {
            live.iter()
                .filter(|c| now.iter().any(|n| n.key == c.key && n.token == c.token))
                .count()
        };
        drop(first.stdin.take());
        let out = wait_for(first, 60).expect("the first transfer ended");
        assert_eq!(out.trim(), "done 1 0");
        // The real subflows go; the phantoms keep both entries.
        std::thread::sleep(Duration::from_millis(500));
        let now = l.connections().unwrap();
        assert_eq!(
            phantoms(&now),
            2,
            "the phantoms hold their entries: {now:?}"
        );
        drop(second.stdin.take());
        let out = wait_for(second, 60).expect("the second transfer ended");
        assert_eq!(out.trim(), "done 1 0");
        let left = drain(&l, 10, &bed);
        let after = l.stats().unwrap();
        let grew = |s: Stat| stat_in(&after, s) - stat_in(&before, s);
        println!(
            "phantoms: reclaimed {} entries holding {} subflows, {} stale; {left} entries left; \
             counters {after:?}",
            grew(Stat::Reclaimed),
            grew(Stat::ReclaimedSubflows),
            grew(Stat::Stale)
        );
        assert_eq!(
            phantoms(&l.connections().unwrap()),
            0,
            "the entries of the closed connection outlive it"
        );
        assert_eq!(grew(Stat::Stale), 0, "no address was reused");
        assert!(
            grew(Stat::Reclaimed) >= 2,
            "both entries counted as reclaimed"
        );
        assert!(
            grew(Stat::ReclaimedSubflows) >= 2,
            "the phantoms counted as reclaimed subflows"
        );
        judge_with(
            &l,
            left,
            "phantom subflows",
            Injected {
                entries: 0,
                subflows: 2,
            },
        );
        assert_eq!(left, 0, "every connection has ended");
        drop(bed);
    }
    assert_nothing_left(&tag);
}

/// An entry still at an address when a new connection's socket is allocated there (its own
/// connection's close missed) is reset by the new connection's first subflow, and the BMC
/// weights of the earlier connection go with it. The test stands in for the kernel: it
/// writes such entries at the addresses MPTCP sockets of closed connections had, then opens
/// connections until the allocator hands one of those addresses out again.
#[test]
fn an_entry_left_at_a_reused_address_is_reset_by_the_next_connection_there() {
    let Some((_g, p, tag)) = root_setup('r') else {
        return;
    };
    {
        let l = Loaded::load(&p).expect("the programs load and register");
        let bed = Bed::new(&tag, 1, &p.name(Algorithm::Lia));
        // Addresses of MPTCP sockets: both ends of eight connections.
        let mut client = bed.client(8, 8, 0, 30.0);
        let seen = poll(20, || {
            let c = l.connections().unwrap();
            (c.len() >= 16).then_some(c)
        })
        .expect("both ends of eight connections hold entries");
        drop(client.stdin.take());
        let out = wait_for(client, 60).expect("the transfers ended");
        assert_eq!(out.trim(), "done 8 0");
        assert_eq!(
            drain(&l, 30, &bed),
            0,
            "the connections' entries went with them"
        );
        const FAKE_ID: u64 = 1 << 62;
        let fakes: Vec<Conn> = seen
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut f = Conn {
                    key: c.key,
                    algo: Algorithm::Lia.id(),
                    subflows: 1,
                    used: 1,
                    // Not the token of the connection that had the address: its close, if
                    // recorded, must not reclaim this entry.
                    token: c.token ^ 0xa5a5_a5a5,
                    id: FAKE_ID + i as u64,
                    ..Conn::default()
                };
                f.slots[0].flags = SLOT_USED;
                f
            })
            .collect();
        let mut weights = [0u32; SLOTS];
        weights[0] = 1 << 16;
        for f in &fakes {
            l.write_connection(f).unwrap();
            l.set_weights(f.id, &weights).unwrap();
        }
        let before = l.stats().unwrap();
        let mut tries = 0;
        let reused = poll(60, || {
            one_more_connection(&bed);
            tries += 1;
            (stat(&l, Stat::Stale) > stat_in(&before, Stat::Stale) || tries >= 200).then_some(())
        });
        let after = l.stats().unwrap();
        let grew = |s: Stat| stat_in(&after, s) - stat_in(&before, s);
        let now = l.connections().unwrap();
        let kept: Vec<&Conn> = fakes
            .iter()
            .filter(|f| now.iter().any(|n| n.key == f.key && n.token == f.token))
            .collect();
        let reset = fakes.len() - kept.len();
        println!(
            "{} fake entries; after {tries} connections {reset} reset ({} stale counted), \
             {} still there",
            fakes.len(),
            grew(Stat::Stale),
            kept.len()
        );
        assert!(reused.is_some(), "connections kept coming");
        assert!(
            grew(Stat::Stale) >= 1,
            "none of {tries} new connections reset an entry at one of {} reused addresses",
            fakes.len()
        );
        assert_eq!(
            grew(Stat::Stale),
            reset as u64,
            "every reset is counted once"
        );
        assert!(
            grew(Stat::ReclaimedSubflows) >= reset as u64,
            "the fake subflows of reset entries counted as reclaimed"
        );
        let held = l.weights().unwrap();
        for f in &fakes {
            let still = kept.iter().any(|k| k.key == f.key);
            assert_eq!(
                held.iter().any(|(id, _)| *id == f.id),
                still,
                "connection {:#x}: BMC weights kept {still}",
                f.key
            );
        }
        // The rest are the test's to remove.
        for k in &kept {
            assert!(l.delete_connection(k.key, k.id));
        }
        let left = drain(&l, 10, &bed);
        judge_with(
            &l,
            left,
            "reused addresses",
            Injected {
                entries: reset as u64,
                subflows: reset as u64,
            },
        );
        assert_eq!(left, 0);
        drop(bed);
    }
    assert_nothing_left(&tag);
}
