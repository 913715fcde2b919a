//! Property tests over every built-in multipath controller: with one usable path each one is
//! NewReno, byte for byte; windows and thresholds never fall below their floors.

use proptest::prelude::*;

use crate::cc::multipath::test_support::{ack, add_paths, apply, assert_same_as_reno, views, Op};
use crate::cc::multipath::{
    Algorithm, Arithmetic, Counting, MultipathConfig, MultipathController, Paths, WindowConfig,
};
use crate::cc::{Ack, PathId, PathView};
use crate::units::{Bytes, Duration};

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (1u64..=3000, prop::bool::weighted(0.15))
            .prop_map(|(bytes, in_recovery)| Op::Ack { bytes, in_recovery }),
        1 => Just(Op::Loss),
        1 => Just(Op::RecoveryEnd),
        1 => any::<bool>().prop_map(|repeated| Op::Rto { repeated }),
    ]
}

fn extreme_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop_oneof![0u64..=3000, 0u64..=1 << 40], any::<bool>())
            .prop_map(|(bytes, in_recovery)| Op::Ack { bytes, in_recovery }),
        1 => Just(Op::Loss),
        1 => Just(Op::RecoveryEnd),
        1 => any::<bool>().prop_map(|repeated| Op::Rto { repeated }),
    ]
}

/// Every configuration worth checking: each algorithm, each arithmetic it has, and for the
/// kernel algorithms both countings.
fn configs(mss: u64, initial_window: u32) -> Vec<MultipathConfig> {
    let w = WindowConfig::default().initial_window(initial_window);
    let mut out = Vec::new();
    for alg in Algorithm::ALL {
        let base = MultipathConfig::new(alg, Bytes(mss), w);
        for a in [Arithmetic::Spec, Arithmetic::Linux] {
            let Ok(c) = base.with_arithmetic(a) else {
                continue;
            };
            match (
                c.with_counting(Counting::PerPacket),
                c.with_counting(Counting::PerAckEvent),
            ) {
                (Ok(x), Ok(y)) => out.extend([x, y]),
                _ => out.push(c),
            }
        }
    }
    out
}

/// The smallest ssthresh each algorithm allows, in segments.
fn ssthresh_floor(c: &MultipathConfig) -> u64 {
    match c {
        MultipathConfig::Balia(b) if b.arithmetic_mode() == Arithmetic::Linux => 1,
        MultipathConfig::FullyCoupled(_) | MultipathConfig::RpMpV2(_) => 1,
        MultipathConfig::WVegas(_) => 1,
        _ => 2,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn one_usable_path_gives_the_newreno_trace(
        ops in prop::collection::vec(op(), 1..300),
        mss in prop_oneof![Just(1000u64), Just(1448u64)],
        iw in 1u32..11,
        idle_sibling in any::<bool>(),
    ) {
        // MPVeno's one-path base is Veno and MPTCPW's Westwood+ (their tests check those).
        let reno_based = |c: &MultipathConfig| {
            !matches!(c, MultipathConfig::MpVeno(_) | MultipathConfig::Mptcpw(_))
        };
        for cfg in configs(mss, iw).into_iter().filter(reno_based) {
            let c = cfg.build().unwrap();
            assert_same_as_reno(c, mss, iw, &ops, idle_sibling);
        }
    }

    #[test]
    fn windows_never_fall_below_their_floors(
        ops in prop::collection::vec((op(), 0usize..3), 1..300),
        rtts in prop::collection::vec(1u32..300, 3),
        n in 2usize..4,
    ) {
        let mss = 1000;
        let rtt: Vec<f64> = rtts[..n].iter().map(|&r| r as f64 / 1000.0).collect();
        let vs = views(&rtt, mss);
        let paths = Paths(&vs);
        for cfg in configs(mss, 2) {
            let floor = ssthresh_floor(&cfg) * mss;
            let mut c = cfg.build().unwrap();
            add_paths(&mut c, n, mss);
            for &(o, p) in &ops {
                apply(&mut c, PathId((p % n) as u32), o, &paths);
                for i in 0..n {
                    let id = PathId(i as u32);
                    prop_assert!(c.window(id).0 >= mss, "{:?}: cwnd {}", cfg, c.window(id));
                    if let Some(s) = c.ssthresh(id) {
                        prop_assert!(s.0 >= floor, "{:?}: ssthresh {}", cfg, s);
                    }
                }
            }
        }
    }

    /// Linux's `tcp_is_cwnd_limited`: an ACK that finds the window not in use moves no
    /// window and no threshold, in slow start or congestion avoidance, after any history.
    #[test]
    fn an_ack_of_a_window_not_in_use_grows_nothing(
        ops in prop::collection::vec((op(), 0usize..3), 0..200),
        bytes in 1u64..=3000,
        on in 0usize..3,
        rtts in prop::collection::vec(1u32..300, 3),
        n in 1usize..4,
    ) {
        let mss = 1000;
        let rtt: Vec<f64> = rtts[..n].iter().map(|&r| r as f64 / 1000.0).collect();
        let vs = views(&rtt, mss);
        let paths = Paths(&vs);
        for cfg in configs(mss, 2) {
            let mut c = cfg.build().unwrap();
            add_paths(&mut c, n, mss);
            for &(o, p) in &ops {
                apply(&mut c, PathId((p % n) as u32), o, &paths);
            }
            let state = |c: &crate::cc::multipath::AnyMultipathController| {
                (0..n)
                    .map(|i| (c.window(PathId(i as u32)), c.ssthresh(PathId(i as u32))))
                    .collect::<Vec<_>>()
            };
            let before = state(&c);
            let p = PathId((on % n) as u32);
            let idle = Ack {
                cwnd_limited: false,
                rtt: paths.get(p).and_then(|v| v.srtt),
                ..ack(bytes)
            };
            c.on_ack(p, &idle, &paths);
            prop_assert_eq!(state(&c), before, "{:?}", cfg);
        }
    }

    #[test]
    fn extreme_inputs_never_panic(
        ops in prop::collection::vec((extreme_op(), 0usize..4), 1..150),
        mss in prop_oneof![Just(1u64), Just(1448u64), Just(1u64 << 29)],
        rtts in prop::collection::vec(
            prop_oneof![Just(None), any::<u64>().prop_map(Some), (0u64..10_000_000_000).prop_map(Some)],
            3,
        ),
        can_send in prop::collection::vec(any::<bool>(), 3),
        in_flight in any::<u64>(),
    ) {
        let vs: Vec<PathView> = (0..3)
            .map(|i| {
                let mut v = PathView::new(PathId(i as u32), Bytes(mss));
                v.srtt = rtts[i].map(Duration);
                v.can_send = can_send[i];
                v.in_flight = Bytes(in_flight);
                v
            })
            .collect();
        let paths = Paths(&vs);
        for cfg in configs(mss, 10) {
            let mut c = cfg.build().unwrap();
            add_paths(&mut c, 3, mss);
            // Path 3 is unknown to the controller and missing from the views.
            for &(o, p) in &ops {
                apply(&mut c, PathId(p as u32), o, &paths);
                let id = PathId(p as u32);
                let _ = (c.window(id), c.metrics(id), c.in_slow_start(id));
            }
        }
    }
}
