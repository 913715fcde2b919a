//! Tests of LIA: the LIA vectors (§13.1) in both arithmetics, and behaviour named by test.

use proptest::prelude::*;

use super::*;
use crate::cc::multipath::test_support::{
    ack, add_paths, assert_close, assert_same_as_reno, cases, int, kernel_samples, loss, num, nums,
    samples, views, Op,
};
use crate::cc::Rto;

const MSS: u64 = 1000;

fn lia(arithmetic: Arithmetic, w: &[f64]) -> Lia {
    let mut c = LiaConfig::new().arithmetic(arithmetic).build().unwrap();
    add_paths(&mut c, w.len(), MSS);
    for (i, &wi) in w.iter().enumerate() {
        let cwnd = (wi * MSS as f64) as u64;
        c.force(i, cwnd, cwnd); // cwnd == ssthresh: congestion avoidance
    }
    c
}

#[test]
fn vectors_ideal_alpha_best_path_and_increase() {
    for case in cases("LIA") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let ideal = &case["ideal"];
        let s = samples(&w, &rtt);
        let a = alpha(&s).unwrap();
        assert_close(a, num(&ideal["alpha"]), 1e-9, "alpha");
        assert_eq!(best_path(&s), Some(int(&ideal["best_path"]) as usize));
        let total: f64 = w.iter().sum();
        for (i, pp) in ideal["per_path"].as_array().unwrap().iter().enumerate() {
            let inc = increase_per_ack(a, total, w[i]);
            assert_close(inc, num(&pp["inc_per_ack"]), 1e-9, "inc_per_ack");
            assert_close(a / total, num(&pp["coupled_term"]), 1e-9, "coupled term");
            assert_close(1.0 / w[i], num(&pp["tcp_term"]), 1e-12, "TCP term");
            assert_close(inc * w[i], num(&pp["inc_per_rtt"]), 1e-9, "inc_per_rtt");
            assert_eq!(pp["capped_by_tcp"].as_bool(), Some(a / total > 1.0 / w[i]));
        }
    }
}

#[test]
fn vectors_spec_controller_increase_and_loss() {
    for case in cases("LIA") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let vs = views(&rtt, MSS);
        let paths = Paths(&vs);
        for (i, pp) in case["ideal"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            // One ACK of one segment adds inc_per_ack segments of credit.
            let mut c = lia(Arithmetic::Spec, &w);
            c.on_ack(PathId(i as u32), &ack(MSS), &paths);
            let credit = c.subflow(i).unwrap().credit();
            let want = num(&pp["inc_per_ack"]) * MSS as f64;
            assert_close(credit, want, 1e-9, "per-ACK growth in bytes");
            // A loss halves the path (RFC 5681), floor 2 segments.
            let mut c = lia(Arithmetic::Spec, &w);
            c.on_congestion_event(PathId(i as u32), &loss(), &paths);
            let ss = c.ssthresh(PathId(i as u32)).unwrap().0 as f64 / MSS as f64;
            assert_close(ss, num(&pp["loss_new_ssthresh_rfc5681"]), 1e-9, "ssthresh");
            let dec = w[i] - c.window(PathId(i as u32)).0 as f64 / MSS as f64;
            if w[i] / 2.0 >= 2.0 {
                assert_close(dec, num(&pp["loss_decrease"]), 1e-9, "loss decrease");
            }
        }
    }
}

#[test]
fn vectors_kernel_alpha_threshold_and_ssthresh() {
    for case in cases("LIA") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let k = &case["kernel"];
        let ka = kernel_alpha(&kernel_samples(&w, &rtt)).unwrap();
        assert_eq!(ka.alpha, int(&k["alpha_fixed"]), "{}", case["state"]);
        assert_eq!(ka.best, int(&k["best_path"]) as usize, "{}", case["state"]);
        let total: u64 = w.iter().map(|&x| x as u64).sum();
        assert_close(
            kernel_alpha_equivalent(ka.alpha, total),
            num(&k["alpha_equiv"]),
            1e-12,
            "alpha_equiv",
        );
        for (i, pp) in k["per_path"].as_array().unwrap().iter().enumerate() {
            let t = kernel_threshold(ka.alpha, w[i] as u64);
            assert_eq!(t, int(&pp["threshold"]));
            assert_close(
                1.0 / (t + 1) as f64,
                num(&pp["inc_per_ack"]),
                1e-12,
                "1/(T+1)",
            );
        }
    }
}

#[test]
fn vectors_linux_controller_needs_t_plus_one_ack_events_and_halves_in_packets() {
    for case in cases("LIA") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let vs = views(&rtt, MSS);
        let paths = Paths(&vs);
        for (i, pp) in case["kernel"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let p = PathId(i as u32);
            let mut c = lia(Arithmetic::Linux, &w);
            let before = c.window(p);
            let mut events = 0;
            while c.window(p) == before {
                c.on_ack(p, &ack(MSS), &paths);
                events += 1;
                assert!(events <= 5000, "no growth");
            }
            assert_eq!(events, int(&pp["threshold"]) + 1, "{}", case["state"]);
            let mut c = lia(Arithmetic::Linux, &w);
            c.on_congestion_event(p, &loss(), &paths);
            let ss = c.ssthresh(p).unwrap().0;
            assert_eq!(ss, int(&pp["loss_new_ssthresh"]) * MSS, "{}", case["state"]);
        }
    }
}

#[test]
fn linux_alpha_metric_reports_the_kernel_value() {
    let vs = views(&[0.05, 0.1], MSS);
    let mut c = lia(Arithmetic::Linux, &[30.0, 20.0]); // vector L5
    c.on_ack(PathId(0), &ack(MSS), &Paths(&vs));
    let a = c.metrics(PathId(0)).alpha.unwrap();
    assert!((a - 0.1465).abs() < 1e-3, "{a}");
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
    ops.insert(50, Op::Loss);
    ops.insert(51, Op::RecoveryEnd);
    ops.insert(120, Op::Rto { repeated: false });
    ops.insert(121, Op::Rto { repeated: true });
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        let c = LiaConfig::new().arithmetic(a).build().unwrap();
        assert_same_as_reno(c, MSS, 2, &ops, false);
    }
}

#[test]
fn the_tcp_cap_binds_on_a_large_slow_path() {
    let s = samples(&[1.0, 100.0], &[0.01, 1.0]);
    let a = alpha(&s).unwrap();
    assert!(a / 101.0 > 1.0 / 100.0);
    assert_eq!(increase_per_ack(a, 101.0, 100.0), 1.0 / 100.0);
}

#[test]
fn no_growth_during_recovery() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = lia(Arithmetic::Spec, &[10.0, 10.0]);
    c.on_congestion_event(PathId(0), &loss(), &paths);
    let w = c.window(PathId(0));
    for _ in 0..100 {
        let a = Ack {
            in_recovery: true,
            cwnd_limited: true,
            ..ack(MSS)
        };
        c.on_ack(PathId(0), &a, &paths);
    }
    assert_eq!(c.window(PathId(0)), w);
    assert_eq!(c.subflow(0).unwrap().credit(), 0.0);
}

#[test]
fn loss_on_one_path_leaves_the_other_alone() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = lia(Arithmetic::Spec, &[10.0, 10.0]);
    c.on_congestion_event(PathId(0), &loss(), &paths);
    assert_eq!(c.window(PathId(0)), Bytes(5000));
    assert_eq!(c.window(PathId(1)), Bytes(10_000));
}

#[test]
fn repeated_rto_holds_ssthresh() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = lia(Arithmetic::Spec, &[40.0, 10.0]);
    let now = Instant::ZERO;
    c.on_rto(
        PathId(0),
        &Rto {
            now,
            repeated: false,
        },
        &paths,
    );
    assert_eq!(c.ssthresh(PathId(0)), Some(Bytes(20_000)));
    assert_eq!(c.window(PathId(0)), Bytes(MSS));
    c.on_rto(
        PathId(0),
        &Rto {
            now,
            repeated: true,
        },
        &paths,
    );
    assert_eq!(c.ssthresh(PathId(0)), Some(Bytes(20_000)));
    assert!(c.in_slow_start(PathId(0)));
}

#[test]
fn two_symmetric_paths_grow_at_half_the_reno_rate_each() {
    // L1: α = 1/2, so each path adds 1/40 segment per ACK; 40 ACKs add one segment.
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = lia(Arithmetic::Spec, &[10.0, 10.0]);
    for _ in 0..39 {
        c.on_ack(PathId(0), &ack(MSS), &paths);
    }
    assert_eq!(c.window(PathId(0)), Bytes(10_000));
    c.on_ack(PathId(0), &ack(MSS), &paths);
    assert_eq!(c.window(PathId(0)), Bytes(11_000));
}

#[test]
fn per_ack_event_counting_ignores_stretch_acks() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut per_event = LiaConfig::new()
        .counting(Counting::PerAckEvent)
        .build()
        .unwrap();
    add_paths(&mut per_event, 2, MSS);
    let mut per_packet = lia(Arithmetic::Spec, &[10.0, 10.0]);
    for i in 0..2 {
        per_event.force(i, 10_000, 10_000);
    }
    per_event.on_ack(PathId(0), &ack(2 * MSS), &paths);
    per_packet.on_ack(PathId(0), &ack(2 * MSS), &paths);
    let (e, p) = (
        per_event.subflow(0).unwrap().credit(),
        per_packet.subflow(0).unwrap().credit(),
    );
    assert_close(p, 2.0 * e, 1e-12, "two packets count twice");
}

#[test]
fn a_path_without_rtt_is_left_out_of_the_sums() {
    let mut vs = views(&[0.1, 0.1, 0.1], MSS);
    vs[2].srtt = None;
    let paths = Paths(&vs);
    let mut c = lia(Arithmetic::Spec, &[10.0, 10.0, 10.0]);
    c.on_ack(PathId(0), &ack(MSS), &paths);
    // Two usable paths of 10: α = 1/2, increase 1/40 per ACK.
    assert_close(c.subflow(0).unwrap().credit(), 25.0, 1e-9, "credit");
    assert_eq!(c.subflow(2).unwrap().ssthresh, 10_000);
}

proptest! {
    #[test]
    fn increase_is_rfc6356_alpha_over_the_total_capped_at_reno(
        paths in prop::collection::vec((1u32..100_000, 1u32..2_000), 2..6),
    ) {
        let w: Vec<f64> = paths.iter().map(|&(w, _)| w as f64).collect();
        let rtt: Vec<f64> = paths.iter().map(|&(_, r)| r as f64 / 1000.0).collect();
        let a = alpha(&samples(&w, &rtt)).unwrap();
        let total: f64 = w.iter().sum();
        // RFC 6356 §3: α = W·max(w_i/rtt_i²)/(Σ w_i/rtt_i)², computed here on its own.
        let best = w.iter().zip(&rtt).map(|(w, r)| w / (r * r)).fold(0.0, f64::max);
        let sum: f64 = w.iter().zip(&rtt).map(|(w, r)| w / r).sum();
        let want = total * best / (sum * sum);
        prop_assert!((a - want).abs() <= 1e-9 * want, "α {} against {}", a, want);
        for &wi in &w {
            let inc = increase_per_ack(a, total, wi);
            prop_assert!((inc - (want / total).min(1.0 / wi)).abs() <= 1e-9 / wi);
        }
    }

    #[test]
    fn controller_growth_per_ack_never_exceeds_reno(
        w in prop::collection::vec(2u64..500, 2..5),
        rtt in prop::collection::vec(1u32..500, 5),
        on in 0usize..5,
        segments in 1u64..4,
    ) {
        let n = w.len();
        let p = on % n;
        let rtt: Vec<f64> = rtt[..n].iter().map(|&r| r as f64 / 1000.0).collect();
        let vs = views(&rtt, MSS);
        let wf: Vec<f64> = w.iter().map(|&x| x as f64).collect();
        let mut c = lia(Arithmetic::Spec, &wf);
        let before = c.window(PathId(p as u32)).0;
        c.on_ack(PathId(p as u32), &ack(segments * MSS), &Paths(&vs));
        let grown = (c.window(PathId(p as u32)).0 - before) as f64;
        let growth = grown + c.subflow(p).unwrap().credit();
        let reno = (segments * MSS) as f64 * MSS as f64 / before as f64;
        prop_assert!(growth <= reno * (1.0 + 1e-12), "{} > {}", growth, reno);
    }
}

/// Raiciu et al.'s kernel module (González Usach and Kühlewind, "Implementation and Evaluation of
/// Coupled Congestion Control for Multipath TCP", EUNICE 2012 §3) keeps an approximate maximum of
/// w/rtt²: a larger value replaces it, as does any value from the path that set it; a smaller value
/// from another path goes unseen.
#[test]
fn approximate_maximum_follows_its_owner_and_larger_values_only() {
    let mut c = LiaConfig::new().approximate_max(true).build().unwrap();
    let s = |w: f64| PathSample {
        window: w,
        rtt: 0.5,
    };
    c.samples = vec![s(10.0), s(10.0)];
    // Path 0 sets the maximum 10/0.25 = 40; α = 20·40/(40)² = 0.5 (binary-exact RTT).
    let a = c.approximate_alpha(PathId(0), s(10.0)).unwrap();
    assert!((a - 0.5).abs() < 1e-12);
    // Path 1 reports 20: smaller and not the owner, so the maximum stays 40.
    c.samples = vec![s(10.0), s(5.0)];
    c.approximate_alpha(PathId(1), s(5.0)).unwrap();
    assert_eq!(c.approx, Some((0, 40.0)));
    // The owner reports 16: the maximum follows it down.
    c.samples = vec![s(4.0), s(5.0)];
    c.approximate_alpha(PathId(0), s(4.0)).unwrap();
    assert_eq!(c.approx, Some((0, 16.0)));
    // Path 1's 20 is now larger and takes over; the exact α agrees again.
    let a = c.approximate_alpha(PathId(1), s(5.0)).unwrap();
    assert_eq!(c.approx, Some((1, 20.0)));
    assert!((a - alpha(&c.samples).unwrap()).abs() < 1e-12);
    // Linux arithmetic has its own best-path rule.
    assert!(LiaConfig::new()
        .approximate_max(true)
        .arithmetic(Arithmetic::Linux)
        .validate()
        .is_err());
}
