//! Tests of Balia: the Balia vectors (§13.3) in both arithmetics, and behaviour named by test.

use proptest::prelude::*;

use super::*;
use crate::cc::multipath::test_support::{
    ack, add_paths, assert_close, assert_same_as_reno, cases, int, kernel_samples, loss, num, nums,
    samples, views, Op,
};

fn balia(arithmetic: Arithmetic, w: &[f64], mss: u64) -> Balia {
    let mut c = BaliaConfig::new().arithmetic(arithmetic).build().unwrap();
    add_paths(&mut c, w.len(), mss);
    for (i, &wi) in w.iter().enumerate() {
        let cwnd = (wi * mss as f64) as u64;
        c.force(i, cwnd, cwnd);
    }
    c
}

#[test]
fn vectors_ideal_alpha_increase_and_decrease() {
    for case in cases("Balia") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let s = samples(&w, &rtt);
        for (r, pp) in case["ideal"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let a = alpha(&s, r).unwrap();
            assert_close(a, num(&pp["alpha"]), 1e-9, "alpha");
            let per_rtt = increase_per_ack(&s, r) * w[r];
            assert_close(per_rtt, num(&pp["inc_per_rtt"]), 1e-9, "inc_per_rtt");
            assert_close(
                increase_per_ack(&s, r),
                num(&pp["inc_per_ack"]),
                1e-9,
                "inc",
            );
            assert_close(
                decrease(w[r], a),
                num(&pp["loss_decrease"]),
                1e-9,
                "decrease",
            );
            assert_close(
                w[r] - decrease(w[r], a),
                num(&pp["new_window_after_loss"]),
                1e-9,
                "new window",
            );
        }
    }
}

#[test]
fn vectors_spec_controller_increase_and_loss() {
    const MSS: u64 = 1000;
    for case in cases("Balia") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let vs = views(&rtt, MSS);
        let paths = Paths(&vs);
        for (r, pp) in case["ideal"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let p = PathId(r as u32);
            let mut c = balia(Arithmetic::Spec, &w, MSS);
            c.on_ack(p, &ack(MSS), &paths);
            let want = num(&pp["inc_per_ack"]) * MSS as f64;
            assert_close(c.subflow(r).unwrap().0.credit(), want, 1e-9, "growth");
            assert_close(
                c.metrics(p).alpha.unwrap(),
                num(&pp["alpha"]),
                1e-9,
                "alpha",
            );
            let mut c = balia(Arithmetic::Spec, &w, MSS);
            c.on_congestion_event(p, &loss(), &paths);
            let left = c.window(p).0 as f64 / MSS as f64;
            assert_close(left, num(&pp["new_window_after_loss"]), 1e-9, "after loss");
        }
    }
}

#[test]
fn vectors_kernel_alpha_ai_md_and_ssthresh() {
    for case in cases("Balia") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let k = &case["kernel"];
        let mss = int(&k["mss"]);
        let ks = kernel_samples(&w, &rtt);
        for (r, pp) in k["per_path"].as_array().unwrap().iter().enumerate() {
            let got = kernel_recalc(&ks, r, mss).unwrap();
            let name = format!("{} path {r}", case["state"]);
            assert_eq!(got.alpha, int(&pp["alpha_int"]), "{name}");
            assert_eq!(got.scale_downs as u64, int(&pp["scale_downs"]), "{name}");
            assert_eq!(got.ai, int(&pp["ai"]), "{name}");
            assert_eq!(got.md, int(&pp["md"]), "{name}");
            assert_eq!(
                kernel_ssthresh(w[r] as u64, got.md),
                int(&pp["new_ssthresh"])
            );
            assert_close(
                1.0 / (got.ai + 1) as f64,
                num(&pp["inc_per_ack"]),
                1e-12,
                "1/(ai+1)",
            );
        }
    }
}

#[test]
fn vectors_linux_controller_needs_ai_plus_one_events_and_uses_md() {
    for case in cases("Balia") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let k = &case["kernel"];
        let mss = int(&k["mss"]);
        let vs = views(&rtt, mss);
        let paths = Paths(&vs);
        for (r, pp) in k["per_path"].as_array().unwrap().iter().enumerate() {
            let p = PathId(r as u32);
            let mut c = balia(Arithmetic::Linux, &w, mss);
            let before = c.window(p);
            let mut events = 0;
            while c.window(p) == before && events <= 5000 {
                c.on_ack(p, &ack(mss), &paths);
                events += 1;
            }
            assert_eq!(events, int(&pp["ai"]) + 1, "{} path {r}", case["state"]);
            let mut c = balia(Arithmetic::Linux, &w, mss);
            c.on_congestion_event(p, &loss(), &paths);
            assert_eq!(c.ssthresh(p).unwrap().0, int(&pp["new_ssthresh"]) * mss);
        }
    }
}

#[test]
fn linux_decrease_uses_the_md_of_the_last_recalculation() {
    // B2 windows, recalculated; then path 1's sibling grows without a recalculation on path 1.
    let mss = 1448;
    let vs = views(&[0.05, 0.1], mss);
    let paths = Paths(&vs);
    let mut c = balia(Arithmetic::Linux, &[20.0, 10.0], mss);
    c.on_ack(PathId(1), &ack(mss), &paths); // caches ai = 62, md = 7
    assert_eq!(c.subflow(1).unwrap().1.unwrap().md, 7);
    c.force_sibling_window(0, 2 * mss);
    c.on_congestion_event(PathId(1), &loss(), &paths);
    assert_eq!(c.ssthresh(PathId(1)), Some(Bytes(3 * mss)));
}

impl Balia {
    fn force_sibling_window(&mut self, p: usize, cwnd: u64) {
        if let Some(Some(st)) = self.paths.get_mut(p) {
            st.sf.cwnd = cwnd;
        }
    }
}

#[test]
fn single_path_behaves_like_reno() {
    let mut ops = vec![
        Op::Ack {
            bytes: 1448,
            in_recovery: false,
        };
        300
    ];
    ops.insert(30, Op::Loss);
    ops.insert(31, Op::RecoveryEnd);
    ops.insert(150, Op::Loss);
    ops.insert(151, Op::RecoveryEnd);
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        let c = BaliaConfig::new().arithmetic(a).build().unwrap();
        assert_same_as_reno(c, 1448, 2, &ops, false);
    }
}

#[test]
fn the_slow_path_loses_up_to_three_quarters() {
    let vs = views(&[0.05, 0.1], 1000);
    let paths = Paths(&vs);
    let mut c = balia(Arithmetic::Spec, &[40.0, 10.0], 1000);
    c.on_congestion_event(PathId(1), &loss(), &paths);
    // α = 8 → min(α, 1.5) = 1.5: 10 − 7.5 = 2.5 segments.
    assert_eq!(c.window(PathId(1)), Bytes(2500));
    c.on_congestion_event(PathId(0), &loss(), &paths);
    assert_eq!(c.window(PathId(0)), Bytes(20_000));
}

proptest! {
    #[test]
    fn increase_never_exceeds_reno(
        paths in prop::collection::vec((1u32..100_000, 1u32..2_000), 2..6),
    ) {
        let w: Vec<f64> = paths.iter().map(|&(w, _)| w as f64).collect();
        let rtt: Vec<f64> = paths.iter().map(|&(_, r)| r as f64 / 1000.0).collect();
        let s = samples(&w, &rtt);
        let ks = kernel_samples(&w, &rtt);
        for (r, &wr) in w.iter().enumerate() {
            prop_assert!(increase_per_ack(&s, r) <= (1.0 / wr) * (1.0 + 1e-12));
            let k = kernel_recalc(&ks, r, 1448).unwrap();
            prop_assert!(k.ai + 1 >= wr as u64, "ai {} w {}", k.ai, wr);
            let a = alpha(&s, r).unwrap();
            let d = decrease(wr, a);
            prop_assert!(d >= wr / 2.0 - 1e-9 && d <= 0.75 * wr + 1e-9);
        }
    }
}
