//! Tests of BMC: the vectors W1–W4 (weighted AIMD, for BMC's subflows and for the single-path
//! weighted AIMD) and P1, P2 (proportion manager, P2 showing the clamp), the invariants
//! Σ D = P and D_min ≤ D ≤ P, NewReno equivalence with one path, and configuration errors.

use proptest::prelude::*;

use super::*;
use crate::cc::aimd::{increase_per_ack, loss_decrease, AimdConfig};
use crate::cc::multipath::test_support::{
    add_paths, assert_close, assert_same_as_reno, cases, loss, num, nums, views, Op,
};
use crate::cc::multipath::MultipathConfig;
use crate::cc::{Controller, NewReno, PathView, RenoConfig};
use serde_json::Value;

const MSS: u64 = 1000;

fn at(ms: u64) -> Instant {
    Instant(ms * 1_000_000)
}

fn ack_at(now: Instant, bytes: u64) -> Ack {
    Ack {
        now,
        bytes_acked: Bytes(bytes),
        rtt: None,
        in_recovery: false,
        cwnd_limited: true,
    }
}

/// A BMC with `cfg`, paths `0..n` added at time 0.
fn bmc(cfg: BmcConfig, n: usize) -> Bmc {
    let mut c = cfg.build().unwrap();
    add_paths(&mut c, n, MSS);
    c
}

fn weights(c: &Bmc, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| c.weight(PathId(i as u32)).unwrap())
        .collect()
}

fn assert_weights(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "weights {got:?}, expected {want:?}");
    }
}

/// The BMC vectors of one kind: `"aimd"` (W1–W4) or `"result"` (P1, P2).
fn bmc_cases(kind: &str) -> Vec<&'static Value> {
    cases("BMC").iter().filter(|c| !c[kind].is_null()).collect()
}

/// Acknowledges one window of path `p` in full segments.
fn ack_window(c: &mut Bmc, p: usize, paths: &Paths<'_>) {
    let id = PathId(p as u32);
    for _ in 0..c.window(id).0 / MSS {
        c.on_ack(id, &ack_at(Instant::ZERO, MSS), paths);
    }
}

#[test]
fn vectors_w_weighted_aimd_per_ack_per_rtt_loss_and_epoch() {
    let w_cases = bmc_cases("aimd");
    assert_eq!(w_cases.len(), 4);
    for case in w_cases {
        let (w, d) = (nums(&case["w"]), nums(&case["D"]));
        let p: f64 = d.iter().sum();
        let vs = views(&vec![0.1; w.len()], MSS);
        let paths = Paths(&vs);
        for (i, pp) in case["aimd"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let a = d[i] * d[i]; // §3.1: a = D²
            assert_close(a, num(&pp["a"]), 1e-12, "a");
            assert_close(
                increase_per_ack(a, w[i]),
                num(&pp["inc_per_ack"]),
                1e-12,
                "inc/ACK",
            );
            assert_close(
                loss_decrease(0.5, w[i]),
                num(&pp["loss_decrease"]),
                1e-12,
                "loss",
            );
            let epoch = epoch_rtts(a, 0.5, w[i]);
            assert_close(epoch, num(&pp["epoch_rtts"]), 1e-12, "epoch");

            // BMC's subflow: nothing until a window is acknowledged, then D² segments.
            let cfg = BmcConfig::new().flowshares(p).weights(&d);
            let mut c = bmc(cfg, w.len());
            let cwnd = (w[i] * MSS as f64) as u64;
            c.force(i, cwnd, cwnd);
            let id = PathId(i as u32);
            for _ in 1..w[i] as u64 {
                c.on_ack(id, &ack_at(Instant::ZERO, MSS), &paths);
            }
            assert_eq!(
                c.window(id).0,
                cwnd,
                "no growth before a window is acknowledged"
            );
            c.on_ack(id, &ack_at(Instant::ZERO, MSS), &paths);
            let grown = (c.window(id).0 - cwnd) as f64 / MSS as f64;
            assert_close(grown, num(&pp["inc_per_rtt"]), 1e-9, "BMC inc/RTT");
            assert_close(
                grown / w[i],
                num(&pp["inc_per_ack"]),
                1e-9,
                "BMC mean inc/ACK",
            );

            c.force(i, cwnd, cwnd);
            c.on_congestion_event(id, &loss(), &paths);
            let lost = w[i] - c.window(id).0 as f64 / MSS as f64;
            assert_close(lost, num(&pp["loss_decrease"]), 1e-12, "BMC loss Δ");

            // The same flow as a single-path weighted AIMD(D², ½).
            let mut s = crate::testing::TestSender::new(
                AimdConfig::new(Bytes(MSS), 2).weight(d[i]).build().unwrap(),
                Bytes(MSS),
            );
            // Slow start to 2w segments, then a loss: congestion avoidance at w, counter clear.
            while s.cc.window().0 < 2 * cwnd {
                s.ack_bytes(Bytes(MSS));
            }
            s.loss();
            assert_eq!(s.cc.window().0, cwnd);
            for _ in 0..cwnd / MSS {
                s.ack_bytes(Bytes(MSS));
            }
            let grown = (s.cc.window().0 - cwnd) as f64 / MSS as f64;
            assert_close(grown, num(&pp["inc_per_rtt"]), 1e-9, "AIMD inc/RTT");
            let before = s.cc.window().0 as f64 / MSS as f64;
            s.loss();
            let lost = before - s.cc.window().0 as f64 / MSS as f64;
            assert_close(lost, loss_decrease(0.5, before), 1e-3, "AIMD loss Δ");
        }

        // The automatic period is the longest epoch: losses at w on every path, R = 0.1 s.
        let cfg = BmcConfig::new().flowshares(p).weights(&d);
        let mut c = bmc(cfg, w.len());
        for (i, &wi) in w.iter().enumerate() {
            let cwnd = (wi * MSS as f64) as u64;
            c.force(i, cwnd, cwnd);
            c.on_congestion_event(PathId(i as u32), &loss(), &paths);
        }
        let longest = case["aimd"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pp| num(&pp["epoch_rtts"]))
            .fold(0.0, f64::max);
        let j = c.auto_period_for(&paths).unwrap();
        assert_close(j.as_secs_f64(), longest * 0.1, 1e-9, "auto period");
    }
}

#[test]
fn vectors_p_proportion_manager_and_the_clamp() {
    let p_cases = bmc_cases("result");
    assert_eq!(p_cases.len(), 2);
    for case in p_cases {
        let (d, r, tj, k) = (
            nums(&case["D"]),
            nums(&case["R"]),
            nums(&case["TJ"]),
            num(&case["K"]),
        );
        let res = &case["result"];
        let scores: Vec<f64> = (0..2).map(|i| t_wr(r[i], d[i], tj[i])).collect();
        for (s, want) in scores.iter().zip(nums(&res["T_wr"])) {
            assert_close(*s, want, 1e-12, "T_wr");
        }
        let reduced = res["reduced"].as_u64().unwrap() as usize;
        let increased = res["increased"].as_u64().unwrap() as usize;
        let unclamped = nums(&res["D_new"]);
        assert_close(
            reduced_weight(d[reduced], k, 1.0),
            unclamped[reduced],
            1e-12,
            "eq. 3.8",
        );
        let negative = res["negative_weight"].as_bool().unwrap();
        let d_min = min_weight(1.0, 2);
        let mut w = d.clone();
        let mv = proportion_step(&mut w, &scores, k, 1.0, d_min, 0.0).unwrap();
        assert_eq!((mv.reduced, mv.increased), (reduced, increased));
        assert_eq!(mv.clamped, negative);
        let expected = if negative {
            // P2: eq. 3.8 gives −0.12; the weight stops at D_min = 0.005 and only 0.295 moves.
            let mut e = d.clone();
            e[increased] += d[reduced] - d_min;
            e[reduced] = d_min;
            e
        } else {
            assert_close(mv.delta, num(&res["delta"]), 1e-12, "Δ");
            unclamped
        };
        assert_weights(&w, &expected, 1e-12);

        // The same step through the controller: measured for J = 1 s, then any event.
        let cfg = BmcConfig::new()
            .weights(&d)
            .k(k)
            .period(Duration::from_secs(1));
        let mut c = bmc(cfg, 2);
        let vs = views(&r, MSS);
        let paths = Paths(&vs);
        for (i, &t) in tj.iter().enumerate() {
            c.force_measurement(i, Instant::ZERO, t as u64); // T_J·J bytes
        }
        c.on_ack(PathId(0), &ack_at(at(999), 0), &paths);
        assert_eq!(c.last_move(), None, "J has not elapsed");
        c.on_ack(PathId(0), &ack_at(at(1000), 0), &paths);
        assert_weights(&weights(&c, 2), &expected, 1e-12);
        for (i, want) in nums(&res["T_wr"]).into_iter().enumerate() {
            let got = c.metrics(PathId(i as u32)).score.unwrap();
            assert_close(got, want, 1e-12, "score in metrics");
        }
        assert_eq!(c.last_move().map(|m| m.clamped), Some(negative));
    }
}

#[test]
fn paper_examples_of_the_reduction() {
    // §3.2: D = 1/2, K = 1 gives 1/4; D = 4/5, K = 1 gives 16/25.
    assert_close(reduced_weight(0.5, 1.0, 1.0), 0.25, 1e-15, "1/2");
    assert_close(reduced_weight(0.8, 1.0, 1.0), 0.64, 1e-15, "4/5");
    // With P flowshares the rule works on D/P, so D = 1 of P = 2 still moves.
    assert_close(reduced_weight(1.0, 1.0, 2.0), 0.5, 1e-15, "P = 2");
}

#[test]
fn equal_scores_move_nothing_and_ties_go_to_the_lower_id() {
    let mut w = vec![0.5, 0.5];
    assert_eq!(
        proportion_step(&mut w, &[3.0, 3.0], 1.0, 1.0, 0.005, 0.0),
        None
    );
    let mut w = vec![0.25, 0.25, 0.5];
    let mv = proportion_step(&mut w, &[1.0, 1.0, 2.0], 1.0, 1.0, 0.005, 0.0).unwrap();
    assert_eq!((mv.reduced, mv.increased), (0, 2));
    let mut w = vec![0.5, 0.5];
    let mv = proportion_step(&mut w, &[f64::NAN, 1.0], 1.0, 1.0, 0.005, 0.0);
    assert_eq!(mv, None, "a non-finite score takes no part");
}

#[test]
fn scores_within_the_dead_band_move_nothing() {
    // Largest/smallest = 1.4: inside a band of 0.5, outside one of 0.3.
    let mut w = vec![0.5, 0.5];
    assert_eq!(
        proportion_step(&mut w, &[1.0, 1.4], 1.0, 1.0, 0.005, 0.5),
        None
    );
    assert_eq!(w, [0.5, 0.5]);
    let mv = proportion_step(&mut w, &[1.0, 1.4], 1.0, 1.0, 0.005, 0.3).unwrap();
    // Outside the band the move is eq. 3.8's whole step, (D - D^2)*K = 1/4 at D = 1/2.
    assert_eq!((mv.reduced, mv.increased), (0, 1));
    assert_close(mv.delta, 0.25, 1e-15, "step");
    assert_eq!(w, [0.25, 0.75]);
}

#[test]
fn a_controller_with_a_dead_band_holds_its_weights_inside_it() {
    // Equal RTTs and weights, so T_wr is in the ratio of the bytes measured: 1.8 here.
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    for (band, moves) in [(1.0, false), (0.5, true), (0.0, true)] {
        let cfg = BmcConfig::new()
            .tolerance(band)
            .period(Duration::from_millis(200));
        assert_eq!(cfg.dead_band(), band);
        let mut c = bmc(cfg, 2);
        c.force_measurement(0, Instant::ZERO, 18_000);
        c.force_measurement(1, Instant::ZERO, 10_000);
        c.on_ack(PathId(0), &ack_at(at(200), 0), &paths);
        assert_close(
            c.metrics(PathId(0)).score.unwrap() / c.metrics(PathId(1)).score.unwrap(),
            1.8,
            1e-12,
            "score ratio",
        );
        let want: &[f64] = if moves { &[0.75, 0.25] } else { &[0.5, 0.5] };
        assert_eq!(c.last_move().is_some(), moves, "band {band}");
        assert_weights(&weights(&c, 2), want, 1e-15);
    }
}

#[test]
fn one_path_with_one_flowshare_is_newreno() {
    let ops = [
        Op::Ack {
            bytes: 1000,
            in_recovery: false,
        },
        Op::Loss,
        Op::RecoveryEnd,
    ];
    let mut script = Vec::new();
    for _ in 0..50 {
        script.extend(ops);
        script.extend(std::iter::repeat_n(
            Op::Ack {
                bytes: 1000,
                in_recovery: false,
            },
            200,
        ));
    }
    for idle_sibling in [false, true] {
        let c = BmcConfig::new().build().unwrap();
        assert_same_as_reno(c, MSS, 2, &script, idle_sibling);
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Ack(u64, bool),
    Loss,
    RecoveryEnd,
    Rto(bool),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        12 => (0u64..=3000, prop::bool::weighted(0.15)).prop_map(|(b, r)| Ev::Ack(b, r)),
        1 => Just(Ev::Loss),
        1 => Just(Ev::RecoveryEnd),
        1 => any::<bool>().prop_map(Ev::Rto),
    ]
}

fn apply_at(c: &mut Bmc, p: PathId, e: Ev, now: Instant, paths: &Paths<'_>) {
    match e {
        Ev::Ack(bytes, in_recovery) => {
            let a = Ack {
                in_recovery,
                cwnd_limited: true,
                ..ack_at(now, bytes)
            };
            c.on_ack(p, &a, paths);
        }
        Ev::Loss => c.on_congestion_event(p, &CongestionEvent { now, ..loss() }, paths),
        Ev::RecoveryEnd => c.on_recovery_end(p, now, paths),
        Ev::Rto(repeated) => c.on_rto(p, &Rto { now, repeated }, paths),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn steps_conserve_the_sum_and_keep_weights_in_range(
        raw in prop::collection::vec(1e-3f64..10.0, 2..9),
        p in 0.05f64..16.0,
        k in 1e-3f64..3.999,
        band in prop_oneof![Just(0.0f64), 0.0f64..2.0],
        rounds in prop::collection::vec(prop::collection::vec(0.0f64..1e6, 8), 1..60),
    ) {
        let n = raw.len();
        let d_min = min_weight(p, n);
        let mut w = raw.clone();
        rebalance(&mut w, p, d_min);
        for scores in &rounds {
            let before: f64 = w.iter().sum();
            let _ = proportion_step(&mut w, &scores[..n], k, p, d_min, band);
            let after: f64 = w.iter().sum();
            prop_assert!((after - before).abs() <= 1e-12, "step changed Σ D: {before} → {after}");
            prop_assert!((after - p).abs() <= 1e-12, "Σ D = {after}, P = {p}");
            for &d in &w {
                prop_assert!(d >= d_min && d <= p, "D = {d} outside [{d_min}, {p}]");
            }
        }
    }

    #[test]
    fn the_controller_keeps_sum_p_and_the_floor_through_any_events(
        evs in prop::collection::vec((ev(), 0usize..4, 0u64..300), 1..400),
        rtts in prop::collection::vec(5u64..200, 4),
        p in prop_oneof![Just(1.0f64), 0.1f64..16.0],
        k in 1e-3f64..3.999,
        band in prop_oneof![Just(0.0f64), 0.0f64..2.0],
        period_ms in prop_oneof![Just(None), (1u64..500).prop_map(Some)],
        churn in prop::collection::vec((0usize..4, any::<bool>()), 0..6),
    ) {
        let mut cfg = BmcConfig::new().flowshares(p).k(k).tolerance(band);
        if let Some(ms) = period_ms {
            cfg = cfg.period(Duration::from_millis(ms));
        }
        let mut c = bmc(cfg, 4);
        let mut vs = views(&rtts.iter().map(|&r| r as f64 / 1000.0).collect::<Vec<_>>(), MSS);
        let mut now = Instant::ZERO;
        let churn_every = evs.len() / (churn.len() + 1) + 1;
        for (step, &(e, path, dt_ms)) in evs.iter().enumerate() {
            if step % churn_every == churn_every - 1 {
                if let Some(&(q, add)) = churn.get(step / churn_every) {
                    if add {
                        c.on_path_added(PathId(q as u32), now, Bytes(MSS));
                        vs[q].can_send = true;
                    } else {
                        c.on_path_removed(PathId(q as u32));
                        vs[q].can_send = false;
                    }
                }
            }
            now += Duration::from_millis(dt_ms);
            apply_at(&mut c, PathId(path as u32), e, now, &Paths(&vs));
            let held: Vec<f64> = (0..4).filter_map(|i| c.weight(PathId(i))).collect();
            if !held.is_empty() {
                let d_min = min_weight(p, held.len());
                let sum: f64 = held.iter().sum();
                prop_assert!((sum - p).abs() <= 1e-12, "Σ D = {sum}, P = {p}");
                for &d in &held {
                    prop_assert!(d >= d_min * (1.0 - 1e-12) && d <= p, "D = {d}");
                }
            }
            for i in 0..4 {
                let m = c.metrics(PathId(i));
                prop_assert_eq!(m.weight, c.weight(PathId(i)));
                if m.weight.is_some() {
                    prop_assert!(m.cwnd.0 >= MSS);
                    prop_assert!(m.ssthresh.is_none_or(|s| s.0 >= 2 * MSS));
                }
            }
        }
    }

    #[test]
    fn one_path_is_newreno_even_when_the_manager_runs(
        evs in prop::collection::vec((ev(), 0u64..200), 1..400),
        mss in prop_oneof![Just(1000u64), Just(1448u64)],
    ) {
        let cfg = BmcConfig::new().period(Duration::from_millis(50));
        let mut c = cfg.build().unwrap();
        c.on_path_added(PathId(0), Instant::ZERO, Bytes(mss));
        let mut reno = NewReno::new(RenoConfig::new(Bytes(mss), 2));
        let mut v = PathView::new(PathId(0), Bytes(mss));
        v.srtt = Some(Duration::from_millis(30));
        let vs = [v];
        let mut now = Instant::ZERO;
        for &(e, dt) in &evs {
            now += Duration::from_millis(dt);
            apply_at(&mut c, PathId(0), e, now, &Paths(&vs));
            match e {
                Ev::Ack(bytes, in_recovery) => {
                    reno.on_ack(&Ack { in_recovery, ..ack_at(now, bytes) }, &v);
                }
                Ev::Loss => reno.on_congestion_event(&loss(), &v),
                Ev::RecoveryEnd => reno.on_recovery_end(now, &v),
                Ev::Rto(repeated) => reno.on_rto(&Rto { now, repeated }, &v),
            }
            prop_assert_eq!(c.window(PathId(0)), reno.window());
            prop_assert_eq!(c.ssthresh(PathId(0)), reno.ssthresh());
            prop_assert_eq!(c.weight(PathId(0)), Some(1.0));
        }
    }
}

#[test]
fn initial_weights_equal_given_or_from_rate_hints() {
    let c = bmc(BmcConfig::new(), 3);
    assert_weights(&weights(&c, 3), &[1.0 / 3.0; 3], 1e-15);
    let c = bmc(BmcConfig::new().weights(&[0.7, 0.3]), 2);
    assert_weights(&weights(&c, 2), &[0.7, 0.3], 1e-15);
    // §3.3: a 100 Mbit/s and a 10 Mbit/s interface.
    let c = bmc(BmcConfig::new().rate_hints(&[100e6, 10e6]), 2);
    assert_weights(&weights(&c, 2), &[10.0 / 11.0, 1.0 / 11.0], 1e-15);
    let c = bmc(BmcConfig::new().flowshares(2.0).weights(&[1.5, 0.5]), 2);
    assert_weights(&weights(&c, 2), &[1.5, 0.5], 1e-15);
    // A path beyond the list counts as the list's mean.
    let c = bmc(BmcConfig::new().weights(&[0.7, 0.3]), 3);
    assert_weights(&weights(&c, 3), &[0.7 / 1.5, 0.3 / 1.5, 0.5 / 1.5], 1e-15);
}

#[test]
fn joining_and_leaving_paths_renormalise_to_p() {
    let mut c = bmc(BmcConfig::new().weights(&[0.5, 0.3, 0.2]), 3);
    c.on_path_removed(PathId(1));
    assert_eq!(c.weight(PathId(1)), None);
    assert_weights(
        &[c.weight(PathId(0)).unwrap(), c.weight(PathId(2)).unwrap()],
        &[0.5 / 0.7, 0.2 / 0.7],
        1e-15,
    );
    // Learned proportions survive a join: 3:1 stays 3:1 among the old paths.
    let mut c = bmc(BmcConfig::new(), 2);
    c.force_weights(&[0.75, 0.25]);
    c.on_path_added(PathId(2), Instant::ZERO, Bytes(MSS));
    assert_weights(&weights(&c, 3), &[0.5, 1.0 / 6.0, 1.0 / 3.0], 1e-15);
    // The last path leaving leaves nothing to renormalise; a new one gets all of P.
    for i in 0..3 {
        c.on_path_removed(PathId(i));
    }
    c.on_path_added(PathId(1), Instant::ZERO, Bytes(MSS));
    assert_eq!(c.weight(PathId(1)), Some(1.0));
}

#[test]
fn a_path_that_cannot_send_lends_its_weight() {
    let mut vs = views(&[0.05, 0.05], MSS);
    vs[1].can_send = false;
    let paths = Paths(&vs);
    let mut c = bmc(BmcConfig::new(), 2);
    c.force(0, 10 * MSS, 10 * MSS);
    ack_window(&mut c, 0, &paths);
    assert_eq!(
        c.window(PathId(0)),
        Bytes(11 * MSS),
        "D = 1 in use: one segment"
    );
    assert_eq!(
        c.weight(PathId(0)),
        Some(0.5),
        "the held weight is unchanged"
    );
    vs[1].can_send = true;
    let paths = Paths(&vs);
    c.force(0, 10 * MSS, 10 * MSS);
    ack_window(&mut c, 0, &paths);
    assert_eq!(
        c.window(PathId(0)),
        Bytes(10 * MSS + MSS / 4),
        "D = ½: a quarter segment"
    );
}

#[test]
fn a_period_shorter_than_the_rtt_is_raised_to_it() {
    let cfg = BmcConfig::new().period(Duration::from_millis(1));
    let mut c = bmc(cfg, 2);
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    c.force_measurement(0, Instant::ZERO, 10_000);
    c.force_measurement(1, Instant::ZERO, 1_000);
    c.on_ack(PathId(0), &ack_at(at(50), 0), &paths);
    assert_eq!(c.last_move(), None);
    assert_eq!(c.metrics(PathId(0)).score, None);
    c.on_ack(PathId(0), &ack_at(at(100), 0), &paths);
    assert!(c.last_move().is_some());
    assert_weights(&weights(&c, 2), &[0.75, 0.25], 1e-15);
}

#[test]
fn the_manager_waits_for_the_first_loss_and_can_be_turned_off() {
    let vs = views(&[0.02, 0.02], MSS);
    let paths = Paths(&vs);
    let cfg = BmcConfig::new().period(Duration::from_secs(1));
    for (cfg, moves) in [(cfg, true), (cfg.proportion_manager(false), false)] {
        let mut c = bmc(cfg, 2);
        // Slow start only: nothing is measured, so no period ends however long it runs.
        for t in 0..2000 {
            c.on_ack(PathId(0), &ack_at(at(t * 10), MSS), &paths);
        }
        assert_eq!(c.last_move(), None);
        for i in 0..2 {
            let id = PathId(i);
            c.on_congestion_event(
                id,
                &CongestionEvent {
                    now: at(20_000),
                    ..loss()
                },
                &paths,
            );
        }
        // Path 0 delivers ten times what path 1 does for a few seconds.
        for t in 0..500 {
            let now = at(20_000 + t * 10);
            c.on_ack(PathId(0), &ack_at(now, 10 * MSS), &paths);
            c.on_ack(PathId(1), &ack_at(now, MSS), &paths);
        }
        let w = weights(&c, 2);
        assert_eq!(w[0] > 0.5, moves, "{w:?}");
        assert_eq!(c.metrics(PathId(1)).score.is_some(), moves);
    }
}

#[test]
fn bad_configurations_name_the_parameter_value_and_range() {
    let cases: Vec<(BmcConfig, &str)> = vec![
        (
            BmcConfig::new().weights(&[0.5, 0.4]),
            "bmc: weights sum to 0.9",
        ),
        (
            BmcConfig::new().weights(&[0.6, 0.6, -0.2]),
            "bmc: weights = -0.2",
        ),
        (
            BmcConfig::new().weights(&[0.999, 0.001]),
            "bmc: weights = 0.001",
        ),
        (BmcConfig::new().weights(&[]), "bmc: weights has 0 values"),
        (
            BmcConfig::new().weights(&[1.0 / 17.0; 17]),
            "bmc: weights has 17 values",
        ),
        (
            BmcConfig::new().rate_hints(&[10.0, 0.0]),
            "bmc: rate_hints = 0",
        ),
        (
            BmcConfig::new().rate_hints(&[f64::INFINITY]),
            "bmc: rate_hints = inf",
        ),
        (BmcConfig::new().k(0.0), "bmc: k = 0 "),
        (BmcConfig::new().k(4.0), "bmc: k = 4 "),
        (BmcConfig::new().k(-1.0), "bmc: k = -1 "),
        (BmcConfig::new().k(f64::NAN), "bmc: k = NaN"),
        (BmcConfig::new().period(Duration::ZERO), "bmc: period = 0 "),
        (BmcConfig::new().flowshares(0.0), "bmc: flowshares = 0 "),
        (BmcConfig::new().flowshares(17.0), "bmc: flowshares = 17 "),
    ];
    for (cfg, want) in cases {
        let e = cfg.build().unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(want),
            "{msg:?} does not start with {want:?}"
        );
        assert!(msg.contains("allowed") || msg.contains("must sum"), "{msg}");
        // The same error through the registry.
        let via_registry = MultipathConfig::Bmc(cfg).build().unwrap_err();
        assert_eq!(via_registry.to_string(), msg);
    }
    let e = BmcConfig::new()
        .weights(&[0.5, 0.4])
        .validate()
        .unwrap_err();
    assert!(e.to_string().contains("P = 1 (within 0.000000001)"), "{e}");
    let e = BmcConfig::new().k(4.0).validate().unwrap_err();
    assert!(e.to_string().ends_with("(allowed: 0 < K < 4)"), "{e}");
    for bad in [-0.1, 10.5, f64::NAN] {
        let e = BmcConfig::new().tolerance(bad).validate().unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("tolerance"), "{msg}");
        assert!(msg.ends_with("(allowed: 0 <= tolerance <= 10)"), "{msg}");
    }
    assert!(BmcConfig::new().tolerance(0.0).validate().is_ok());
    assert!(BmcConfig::new().tolerance(10.0).validate().is_ok());
    // Within the tolerance is fine, beyond it is not.
    assert!(BmcConfig::new()
        .weights(&[0.6, 0.4 + 5e-10])
        .validate()
        .is_ok());
    assert!(BmcConfig::new()
        .weights(&[0.6, 0.4 + 2e-9])
        .validate()
        .is_err());
    assert!(BmcConfig::new()
        .k(3.99)
        .period(Duration::from_nanos(1))
        .validate()
        .is_ok());
}

#[test]
fn builds_by_name_with_defaults() {
    let cfg = MultipathConfig::new(
        "bmc".parse().unwrap(),
        Bytes(MSS),
        crate::cc::multipath::WindowConfig::default(),
    );
    let MultipathConfig::Bmc(b) = cfg else {
        panic!("not BMC: {cfg:?}");
    };
    assert_eq!(b.flowshares_p(), 1.0);
    assert_eq!(b.gain_k(), 1.0);
    assert_eq!(b.period_rule(), Period::Auto);
    assert_eq!(b.initial_weights(), InitialWeights::Equal);
    assert!(b.manages_proportions());
    let mut c = cfg.build().unwrap();
    add_paths(&mut c, 2, MSS);
    let m = c.metrics(PathId(1));
    assert_eq!((m.weight, m.score), (Some(0.5), None));
}

#[test]
fn rebalance_raises_weights_below_the_floor() {
    let mut w = vec![0.999, 0.0005, 0.0005];
    let d_min = min_weight(1.0, 3);
    rebalance(&mut w, 1.0, d_min);
    assert!(w[1] == d_min && w[2] == d_min, "{w:?}");
    assert!((w.iter().sum::<f64>() - 1.0).abs() <= 1e-15);
    let mut w = vec![f64::NAN, -1.0];
    rebalance(&mut w, 2.0, min_weight(2.0, 2));
    assert_eq!(w, [1.0, 1.0]);
}
