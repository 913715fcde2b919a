//! Tests of wVegas: scripted rounds of RTT samples, and behaviour named by test.

use super::*;
use crate::cc::multipath::test_support::{ack, add_paths, assert_same_as_reno, loss, views, Op};

const MSS: u64 = 1000;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn vegas(cfg: WVegasConfig, n: usize) -> (WVegas, Vec<PathView>) {
    let mut c = cfg.build().unwrap();
    add_paths(&mut c, n, MSS);
    let mut vs = views(&vec![0.1; n], MSS);
    for v in &mut vs {
        v.in_flight = Bytes(5 * MSS);
    }
    (c, vs)
}

fn acks(c: &mut WVegas, p: u32, vs: &[PathView], rtt: u64, n: usize) {
    for _ in 0..n {
        let a = Ack {
            rtt: Some(ms(rtt)),
            ..ack(MSS)
        };
        c.on_ack(PathId(p), &a, &Paths(vs));
    }
}

/// One ACK that sets the base RTT (and ends the first, sample-poor round), then one round of
/// six ACKs at `rtt` ms ending with the round's boundary.
fn first_round(c: &mut WVegas, p: u32, vs: &[PathView], rtt: u64) {
    acks(c, p, vs, 100, 1);
    acks(c, p, vs, rtt, 6);
}

#[test]
fn leaves_slow_start_when_more_than_gamma_packets_queue() {
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        let (mut c, vs) = vegas(WVegasConfig::new().arithmetic(a), 2);
        c.force(0, 20 * MSS, INFINITE);
        first_round(&mut c, 0, &vs, 150);
        let (sf, _, _) = c.subflow(0).unwrap();
        // Five slow-start ACKs took the window to 26 segments before the round ended; then
        // target = 26·100/150 = 17.3 segments, and the window becomes target + 1.
        if a == Arithmetic::Linux {
            assert_eq!(sf.cwnd, 18 * MSS);
        } else {
            assert_eq!(sf.cwnd, 18_333);
        }
        assert_eq!(sf.ssthresh, sf.cwnd);
        assert!(!c.in_slow_start(PathId(0)));
    }
}

use crate::cc::multipath::subflow::INFINITE;

#[test]
fn weights_split_alpha_and_a_path_above_its_alpha_shrinks() {
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        let (mut c, vs) = vegas(WVegasConfig::new().arithmetic(a), 2);
        c.force(0, 20 * MSS, 10 * MSS);
        c.force(1, 20 * MSS, 10 * MSS);
        // Path 1 alone in its round: weight 1, α = 10 > diff = 6.7: it grows.
        first_round(&mut c, 1, &vs, 150);
        assert_eq!(c.window(PathId(1)), Bytes(21 * MSS));
        acks(&mut c, 1, &vs, 150, 1); // path 1 has a sample in the current round
                                      // Path 0 shares with path 1 (equal rates): weight ½, α = 5 < diff: it shrinks.
        first_round(&mut c, 0, &vs, 150);
        let (sf, alpha, _) = c.subflow(0).unwrap();
        assert_eq!(sf.cwnd, 19 * MSS);
        assert_eq!(alpha, 5.0);
        let m = c.metrics(PathId(0));
        assert!((m.weight.unwrap() - 0.5).abs() < 1e-9, "{m:?}");
    }
}

#[test]
fn queue_drain_halves_towards_the_base_rate() {
    let cfg = WVegasConfig::new().single_path_reno(false);
    let (mut c, vs) = vegas(cfg, 1);
    c.force(0, 20 * MSS, 10 * MSS);
    first_round(&mut c, 0, &vs, 110); // q = 10 ms is the smallest queueing delay
    assert_eq!(c.window(PathId(0)), Bytes(21 * MSS));
    acks(&mut c, 0, &vs, 130, 6); // q = 30 ms ≥ 2·10 ms: drain to w·base/(2·rtt)
    let w = c.window(PathId(0)).0;
    assert!((8000..9000).contains(&w), "{w}");
}

#[test]
fn a_loss_disables_wvegas_until_recovery_ends() {
    let (mut c, vs) = vegas(WVegasConfig::new(), 2);
    c.force(0, 20 * MSS, 10 * MSS);
    c.on_congestion_event(PathId(0), &loss(), &Paths(&vs));
    assert_eq!(c.window(PathId(0)), Bytes(10 * MSS));
    let a = Ack {
        in_recovery: true,
        cwnd_limited: true,
        rtt: Some(ms(100)),
        ..ack(MSS)
    };
    c.on_ack(PathId(0), &a, &Paths(&vs));
    assert_eq!(c.window(PathId(0)), Bytes(10 * MSS));
    c.on_recovery_end(PathId(0), Instant::ZERO, &Paths(&vs));
    let (_, alpha, weight) = c.subflow(0).unwrap();
    assert_eq!((alpha, weight), (2.0, 1.0));
}

#[test]
fn single_path_behaves_like_reno() {
    let mut ops = vec![
        Op::Ack {
            bytes: MSS,
            in_recovery: false,
        };
        200
    ];
    ops.insert(30, Op::Loss);
    ops.insert(31, Op::RecoveryEnd);
    ops.insert(120, Op::Rto { repeated: false });
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        let c = WVegasConfig::new().arithmetic(a).build().unwrap();
        assert_same_as_reno(c, MSS, 2, &ops, true);
    }
}

#[test]
fn out_of_range_parameters_are_errors() {
    assert!(WVegasConfig::new().gamma(-1.0).build().is_err());
    assert!(WVegasConfig::new().total_alpha(0.0).build().is_err());
    assert!(WVegasConfig::new().initial_alpha(f64::NAN).build().is_err());
    let e = WVegasConfig::new()
        .arithmetic(Arithmetic::Linux)
        .gamma(1.5)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("whole number"), "{e}");
    assert!(WVegasConfig::new().gamma(1.5).build().is_ok());
}
