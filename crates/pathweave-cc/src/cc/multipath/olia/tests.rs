//! Tests of OLIA: the OLIA vectors (§13.2) in both arithmetics, and behaviour named by test.

use proptest::prelude::*;

use super::*;
use crate::cc::multipath::test_support::{
    ack, add_paths, assert_close, assert_same_as_reno, cases, indices, int, loss, num, nums,
    signed, srtt_us as vec_srtt_us, views, Op,
};

const MSS: u64 = 1000;

fn olia_samples(w: &[f64], rtt: &[f64], l: &[f64]) -> Vec<OliaSample> {
    (0..w.len())
        .map(|i| OliaSample {
            window: w[i],
            rtt: rtt[i],
            loss_interval: l[i],
        })
        .collect()
}

fn kernel(w: &[f64], rtt: &[f64], l: &[f64]) -> Vec<KernelOliaSample> {
    (0..w.len())
        .map(|i| KernelOliaSample {
            cwnd: w[i] as u64,
            srtt_us: vec_srtt_us(rtt[i]),
            loss_interval: l[i] as u64,
        })
        .collect()
}

fn olia(arithmetic: Arithmetic, w: &[f64], l: &[f64]) -> Olia {
    let mut c = OliaConfig::new().arithmetic(arithmetic).build().unwrap();
    add_paths(&mut c, w.len(), MSS);
    for i in 0..w.len() {
        let cwnd = (w[i] * MSS as f64) as u64;
        c.force(i, cwnd, cwnd, l[i] as u64);
    }
    c
}

fn state(case: &serde_json::Value) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    (nums(&case["w"]), nums(&case["rtt"]), nums(&case["l_bytes"]))
}

#[test]
fn vectors_ideal_sets_epsilon_and_increase() {
    for case in cases("OLIA") {
        let (w, rtt, l) = state(case);
        let ideal = &case["ideal"];
        let s = olia_samples(&w, &rtt, &l);
        let got = sets(&s);
        assert_eq!(got.max_window, indices(&ideal["M"]), "{}", case["state"]);
        assert_eq!(got.best, indices(&ideal["B"]), "{}", case["state"]);
        assert_eq!(got.best_not_max, indices(&ideal["B_minus_M"]));
        for (r, pp) in ideal["per_path"].as_array().unwrap().iter().enumerate() {
            let eps = epsilon(&s, r, w.len());
            assert_close(eps, num(&pp["eps"]), 1e-12, "eps");
            let inc = increase_per_ack(&s, r, eps);
            assert_close(inc, num(&pp["inc_per_ack"]), 1e-9, "inc_per_ack");
            assert_close(inc * w[r], num(&pp["inc_per_rtt"]), 1e-9, "inc_per_rtt");
            assert_close(
                increase_per_ack(&s, r, 0.0),
                num(&pp["first_term"]),
                1e-9,
                "first term",
            );
            assert_close(eps / w[r], num(&pp["second_term"]), 1e-9, "second term");
        }
    }
}

#[test]
fn vectors_spec_controller_increase_and_loss() {
    for case in cases("OLIA") {
        let (w, rtt, l) = state(case);
        let vs = views(&rtt, MSS);
        let paths = Paths(&vs);
        for (r, pp) in case["ideal"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let p = PathId(r as u32);
            let mut c = olia(Arithmetic::Spec, &w, &l);
            c.on_ack(p, &ack(MSS), &paths);
            let (sf, _) = c.subflow(r).unwrap();
            let want = num(&pp["inc_per_ack"]) * MSS as f64;
            assert_close(sf.credit(), want, 1e-9, "per-ACK growth in bytes");
            assert_close(c.metrics(p).epsilon.unwrap(), num(&pp["eps"]), 1e-12, "eps");
            let mut c = olia(Arithmetic::Spec, &w, &l);
            c.on_congestion_event(p, &loss(), &paths);
            let dec = (w[r] * MSS as f64 - c.window(p).0 as f64) / MSS as f64;
            assert_close(dec, num(&pp["loss_decrease"]), 1e-9, "loss decrease");
            let mut c = olia(Arithmetic::Linux, &w, &l);
            c.on_congestion_event(p, &loss(), &paths);
            let ss = c.ssthresh(p).unwrap().0;
            assert_eq!(ss, int(&pp["loss_new_ssthresh_linux"]) * MSS);
        }
    }
}

#[test]
fn vectors_kernel_epsilon_and_counter_delta() {
    for case in cases("OLIA") {
        let (w, rtt, l) = state(case);
        let k = kernel(&w, &rtt, &l);
        for (r, pp) in case["kernel"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let eps = kernel_epsilon(&k, r, w.len() as u64);
            assert_eq!(
                eps.num,
                signed(&pp["eps_num"]),
                "{} path {r}",
                case["state"]
            );
            assert_eq!(eps.den, int(&pp["eps_den"]), "{} path {r}", case["state"]);
            let d = kernel_counter_delta(&k, r, eps);
            assert_eq!(
                d,
                signed(&pp["cnt_delta_per_ack"]),
                "{} path {r}",
                case["state"]
            );
        }
    }
}

#[test]
fn vectors_linux_controller_moves_the_window_after_the_counter_fills() {
    for case in cases("OLIA") {
        let (w, rtt, l) = state(case);
        let vs = views(&rtt, MSS);
        let paths = Paths(&vs);
        for (r, pp) in case["kernel"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let p = PathId(r as u32);
            let d = signed(&pp["cnt_delta_per_ack"]);
            let mut c = olia(Arithmetic::Linux, &w, &l);
            let before = c.window(p);
            let mut events = 0u64;
            while c.window(p) == before && events < 2000 {
                c.on_ack(p, &ack(MSS), &paths);
                events += 1;
            }
            match pp["acks_per_plus1"].as_u64() {
                Some(n) => {
                    assert_eq!(events, n, "{} path {r}", case["state"]);
                    assert_eq!(c.window(p).0, before.0 + MSS);
                }
                None if d < 0 => {
                    assert_eq!(events, 1023u64.div_ceil(d.unsigned_abs()));
                    assert_eq!(c.window(p).0, before.0 - MSS);
                }
                None => assert_eq!(c.window(p), before, "stall: {}", case["state"]),
            }
        }
    }
}

#[test]
fn single_path_behaves_like_reno() {
    let mut ops = vec![
        Op::Ack {
            bytes: MSS,
            in_recovery: false,
        };
        300
    ];
    ops.insert(40, Op::Loss);
    ops.insert(45, Op::RecoveryEnd);
    ops.insert(200, Op::Rto { repeated: false });
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        let c = OliaConfig::new().arithmetic(a).build().unwrap();
        assert_same_as_reno(c, MSS, 2, &ops, true);
    }
}

#[test]
fn a_max_window_path_shrinks_when_a_better_path_has_room() {
    // O4: path 0 has the larger window but path 1 the longer inter-loss distance.
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = olia(Arithmetic::Spec, &[12.0, 10.0], &[1e5, 3e5]);
    for _ in 0..60 {
        c.on_ack(PathId(0), &ack(MSS), &paths);
    }
    assert_eq!(c.window(PathId(0)), Bytes(11_000));
}

#[test]
fn loss_markers_shift_once_per_episode_and_not_on_repeated_timeouts() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = olia(Arithmetic::Spec, &[10.0, 10.0], &[5000.0, 5000.0]);
    for _ in 0..8 {
        c.on_ack(PathId(0), &ack(MSS), &paths);
    }
    assert_eq!(c.subflow(0).unwrap().1, 8000); // ℓ2 = 8000 > ℓ1 = 5000
    c.on_congestion_event(PathId(0), &loss(), &paths);
    assert_eq!(c.subflow(0).unwrap().1, 8000); // ℓ1 = 8000, ℓ2 = 0
    c.on_congestion_event(PathId(0), &loss(), &paths); // same episode: no shift
    assert_eq!(c.subflow(0).unwrap().1, 8000);
    c.on_recovery_end(PathId(0), Instant::ZERO, &paths);
    c.on_ack(PathId(0), &ack(MSS), &paths);
    let rto = |repeated| Rto {
        now: Instant::ZERO,
        repeated,
    };
    c.on_rto(PathId(0), &rto(false), &paths);
    assert_eq!(c.subflow(0).unwrap().1, 1000); // ℓ1 = 1000 now, ℓ2 = 0
    c.on_ack(PathId(0), &ack(MSS), &paths);
    c.on_rto(PathId(0), &rto(true), &paths);
    assert_eq!(c.subflow(0).unwrap().1, 1000);
}

#[test]
fn the_linux_counter_survives_a_loss_and_the_spec_credit_does_not() {
    // mptcp_olia.c clears its private counter only in init, so what a path has counted
    // before a loss or a timeout still counts after it: five ACKs at w = 10 of W = 20 with
    // equal RTTs and ε = 0 count ⌊1024·10/20²⌋ = 25 each (§2.2), and the spec's rule credits
    // 10/20² of a packet each (§2.1). The credit restarts at a loss.
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let rto = Rto {
        now: Instant::ZERO,
        repeated: false,
    };
    for a in [Arithmetic::Linux, Arithmetic::Spec] {
        let mut c = olia(a, &[10.0, 10.0], &[1e5, 1e5]);
        for _ in 0..5 {
            c.on_ack(PathId(0), &ack(MSS), &paths);
        }
        let counted = |c: &Olia| {
            let (sf, _) = c.subflow(0).unwrap();
            (sf.cnt, sf.credit())
        };
        let (cnt, credit) = counted(&c);
        match a {
            Arithmetic::Linux => assert_eq!(cnt, 5 * 25),
            Arithmetic::Spec => {
                assert_close(credit, 5.0 * 10.0 / 400.0 * MSS as f64, 1e-9, "credit")
            }
        }
        let kept = if a == Arithmetic::Linux { cnt } else { 0 };
        c.on_congestion_event(PathId(0), &loss(), &paths);
        assert_eq!(counted(&c), (kept, 0.0));
        c.on_recovery_end(PathId(0), Instant::ZERO, &paths);
        c.on_rto(PathId(0), &rto, &paths);
        assert_eq!(counted(&c), (kept, 0.0));
    }
}

#[test]
fn a_path_in_recovery_counts_with_its_ssthresh() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = olia(Arithmetic::Spec, &[10.0, 20.0], &[1e5, 1e5]);
    c.on_congestion_event(PathId(1), &loss(), &paths);
    let (sf, _) = c.subflow(1).unwrap();
    assert!(sf.in_recovery);
    assert_eq!(sf.effective_window(), 10_000);
    // Both windows now count as 10: M = {0, 1}, ε = 0, increase w/W² = 10/400 per ACK.
    c.on_ack(PathId(0), &ack(MSS), &paths);
    assert_close(c.subflow(0).unwrap().0.credit(), 25.0, 1e-9, "credit");
}

proptest! {
    #[test]
    fn epsilon_terms_sum_to_zero(
        paths in prop::collection::vec((1u32..5, 1u32..4, 0u32..4), 1..7),
    ) {
        let w: Vec<f64> = paths.iter().map(|p| p.0 as f64).collect();
        let rtt: Vec<f64> = paths.iter().map(|p| p.1 as f64 / 100.0).collect();
        let l: Vec<f64> = paths.iter().map(|p| p.2 as f64 * 1e4).collect();
        let s = olia_samples(&w, &rtt, &l);
        let n = s.len();
        let sum: f64 = (0..n).map(|r| epsilon(&s, r, n)).sum();
        prop_assert!(sum.abs() < 1e-12, "spec sum {}", sum);
        let k = kernel(&w, &rtt, &l);
        let sum: f64 = (0..n).map(|r| kernel_epsilon(&k, r, n as u64).value()).sum();
        prop_assert!(sum.abs() < 1e-12, "kernel sum {}", sum);
    }
}
