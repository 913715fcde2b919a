//! Tests of MPTCPW and wMPTCPW: the increase formulas (γ = 1 against the LIA vectors, §13.1),
//! the Westwood+ decrease per path, the one-path reduction to Westwood+, and bad input.

use proptest::prelude::*;

use super::*;
use crate::cc::multipath::test_support::{
    ack, add_paths, assert_close, cases, loss, num, nums, samples, views,
};
use crate::cc::veno::tests::{ev, Ev};
use crate::cc::{Cause, Controller, PathView, RenoConfig, WestwoodConfig};
use crate::units::Duration;

const MSS: u64 = 1000;

#[test]
fn gamma_one_gives_lias_increase() {
    // δ_r/w_r = max_s(w_s/RTT_s²)/(Σ x_i)² = RFC 6356's α/W, capped by 1/w_r.
    for case in cases("LIA") {
        let (w, rtt) = (nums(&case["w"]), nums(&case["rtt"]));
        let s = samples(&w, &rtt);
        for (r, pp) in case["ideal"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let inc = mptcpw_increase_per_ack(&s, r, 1.0);
            assert_close(inc, num(&pp["inc_per_ack"]), 1e-9, "inc_per_ack");
        }
    }
}

#[test]
fn delta_follows_the_trade_off_parameter() {
    // w = (20, 10) packets, RTT = (0.1, 0.2) s: x = (200, 50), (Σx)² = 62 500.
    let s = samples(&[20.0, 10.0], &[0.1, 0.2]);
    // γ = 0: max_s(w_s²/RTT_s²) = max(40 000, 2 500), the same for every path.
    assert_close(delta(&s, 0, 0.0), 40_000.0 / 62_500.0, 1e-12, "γ = 0");
    assert_close(delta(&s, 1, 0.0), 40_000.0 / 62_500.0, 1e-12, "γ = 0");
    // γ = 1: w_r·max(w_s/RTT_s²) = w_r·2000.
    assert_close(delta(&s, 1, 1.0), 10.0 * 2000.0 / 62_500.0, 1e-12, "γ = 1");
    // γ = 2: w_r²·max(1/RTT_s²) = w_r²·100 — each path its own.
    assert_close(delta(&s, 0, 2.0), 400.0 * 100.0 / 62_500.0, 1e-12, "γ = 2");
    assert_close(delta(&s, 1, 2.0), 100.0 * 100.0 / 62_500.0, 1e-12, "γ = 2");
    // One path: δ = 1 for every γ, so the increase is Reno's 1/w.
    let one = samples(&[17.0], &[0.03]);
    for g in [0.0, 0.5, 1.0, 2.0] {
        assert_close(delta(&one, 0, g), 1.0, 1e-12, "one path");
        assert_close(
            mptcpw_increase_per_ack(&one, 0, g),
            1.0 / 17.0,
            1e-12,
            "Reno",
        );
    }
    assert_eq!(delta(&s, 5, 1.0), 0.0);
    assert_eq!(delta(&samples(&[0.0], &[0.1]), 0, 1.0), 0.0);
}

#[test]
fn wmptcpw_theta_is_the_largest_squared_share() {
    assert_close(wmptcpw_theta(&[3.0, 1.0]), 9.0 / 16.0, 1e-12, "θ");
    assert_close(wmptcpw_theta(&[5.0, 5.0]), 0.25, 1e-12, "equal");
    assert_close(wmptcpw_theta(&[7.0]), 1.0, 1e-12, "one path");
    assert_close(
        wmptcpw_theta(&[0.0, 0.0, 0.0]),
        1.0 / 9.0,
        1e-12,
        "no estimate",
    );
    assert_close(wmptcpw_theta(&[4.0, 0.0]), 1.0, 1e-12, "one estimate");
    assert_close(wmptcpw_theta(&[f64::NAN, 2.0]), 1.0, 1e-12, "NaN ignored");
    assert_eq!(wmptcpw_theta(&[]), 1.0);
}

/// Two paths in congestion avoidance at windows `w` (packets), estimates `bw` (bytes/s) and
/// RTTmin 50 ms.
fn forced(cfg: MptcpwConfig, w: [u64; 2], bw: [f64; 2]) -> Mptcpw {
    let mut c = cfg.build().unwrap();
    add_paths(&mut c, 2, MSS);
    for i in 0..2 {
        c.force(i, w[i] * MSS, bw[i], Duration::from_millis(50));
    }
    c
}

#[test]
fn controller_applies_the_mptcpw_increase() {
    let rtt = [0.05, 0.2];
    let vs = views(&rtt, MSS);
    let paths = Paths(&vs);
    for gamma in [0.0, 1.0, 2.0] {
        let mut c = forced(MptcpwConfig::new().gamma(gamma), [30, 10], [0.0; 2]);
        let s = samples(&[30.0, 10.0], &rtt);
        for r in 0..2 {
            c.on_ack(PathId(r as u32), &ack(MSS), &paths);
            let credit = c.credit(r);
            let inc = mptcpw_increase_per_ack(&s, r, gamma);
            assert_close(credit, inc * MSS as f64, 1e-9, "one ACK");
            let d = c.metrics(PathId(r as u32)).alpha.unwrap();
            assert_close(d, delta(&s, r, gamma), 1e-9, "metrics.alpha = δ_r");
        }
    }
}

#[test]
fn controller_applies_the_wmptcpw_increase() {
    let vs = views(&[0.05, 0.2], MSS);
    let paths = Paths(&vs);
    let mut c = forced(MptcpwConfig::weighted(), [30, 10], [3e6, 1e6]);
    for (r, w) in [(0usize, 30.0), (1, 10.0)] {
        c.on_ack(PathId(r as u32), &ack(MSS), &paths);
        // θ/w_r per packet, θ = 3²/4² for both paths.
        assert_close(c.credit(r), 9.0 / 16.0 / w * MSS as f64, 1e-9, "one ACK");
        assert_close(
            c.metrics(PathId(r as u32)).alpha.unwrap(),
            9.0 / 16.0,
            1e-12,
            "θ",
        );
        let bps = c.metrics(PathId(r as u32)).bandwidth_bps.unwrap();
        assert_close(bps, [3e6, 1e6][r] * 8.0, 1e-12, "BWE in bit/s");
    }
}

#[test]
fn loss_then_recovery_end_sets_each_path_to_its_estimate_times_min_rtt() {
    let vs = views(&[0.05, 0.2], MSS);
    let paths = Paths(&vs);
    for cfg in [MptcpwConfig::new(), MptcpwConfig::weighted()] {
        // Path 0: 1 MB/s × 50 ms = 50 segments; path 1: 0.1 MB/s × 50 ms = 5 segments.
        let mut c = forced(cfg, [80, 40], [1e6, 1e5]);
        for (r, segs) in [(0usize, 50u64), (1, 5)] {
            let p = PathId(r as u32);
            let before = c.window(p).0;
            c.on_congestion_event(p, &loss(), &paths);
            assert_eq!(
                c.window(p).0,
                before / 2,
                "Westwood+ base: Reno during recovery"
            );
            c.on_recovery_end(p, Instant::ZERO, &paths);
            // Decrease: w_r ← B_r × RTT_min,r.
            assert_eq!(c.window(p), Bytes(segs * MSS), "{:?}", cfg.algorithm());
            assert_eq!(c.ssthresh(p), Some(Bytes(segs * MSS)));
        }
        // A timeout: ssthresh from the estimate, one segment.
        let rto = Rto {
            now: Instant::ZERO,
            repeated: false,
        };
        let mut c = forced(cfg, [80, 40], [1e6, 1e5]);
        c.on_rto(PathId(0), &rto, &paths);
        assert_eq!(c.window(PathId(0)), Bytes(MSS));
        assert_eq!(c.ssthresh(PathId(0)), Some(Bytes(50 * MSS)));
    }
}

#[test]
fn gamma_outside_zero_to_two_is_a_config_error_naming_it() {
    for g in [0.0, 0.5, 2.0] {
        assert!(MptcpwConfig::new().gamma(g).build().is_ok(), "γ = {g}");
    }
    for bad in [-0.5, 2.5, f64::NAN, f64::INFINITY] {
        for cfg in [MptcpwConfig::new(), MptcpwConfig::weighted()] {
            let e = cfg.gamma(bad).build().unwrap_err();
            assert!(
                matches!(
                    e,
                    ConfigError::OutOfRange {
                        parameter: "gamma",
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("allowed: 0 to 2"), "{e}");
        }
    }
    let e = MptcpwConfig::new().gamma(-1.0).build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "mptcpw: gamma = -1 is out of range (allowed: 0 to 2)"
    );
    let e = MptcpwConfig::weighted()
        .window(WindowConfig::default().initial_window(0))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("initial_window"), "{e}");
}

#[test]
fn names_select_the_variant() {
    assert_eq!(MptcpwConfig::new().algorithm(), Algorithm::Mptcpw);
    assert_eq!(MptcpwConfig::weighted().algorithm(), Algorithm::WMptcpw);
    assert_eq!(MptcpwConfig::new().gamma_value(), 1.0);
    assert_eq!(
        MptcpwConfig::weighted().variant_kind(),
        MptcpwVariant::Weighted
    );
    assert_eq!("wmptcpw".parse::<Algorithm>(), Ok(Algorithm::WMptcpw));
}

/// Applies a scripted event at `now` to path 0 of `mp` and to `single`.
fn apply_both<C: Controller>(
    mp: &mut Mptcpw,
    single: &mut C,
    e: Ev,
    now: Instant,
    vs: &mut [PathView],
) {
    let p = PathId(0);
    match e {
        Ev::Ack {
            bytes,
            rtt_us,
            in_flight,
            in_recovery,
        } => {
            vs[0].in_flight = Bytes(in_flight);
            let a = Ack {
                now,
                bytes_acked: Bytes(bytes),
                rtt: rtt_us.map(|us| Duration(us * 1000)),
                in_recovery,
                cwnd_limited: true,
            };
            mp.on_ack(p, &a, &Paths(vs));
            single.on_ack(&a, &vs[0]);
        }
        Ev::Loss => {
            let ev = CongestionEvent {
                now,
                cause: Cause::Loss,
            };
            mp.on_congestion_event(p, &ev, &Paths(vs));
            single.on_congestion_event(&ev, &vs[0]);
        }
        Ev::RecoveryEnd => {
            mp.on_recovery_end(p, now, &Paths(vs));
            single.on_recovery_end(now, &vs[0]);
        }
        Ev::Rto(repeated) => {
            let rto = Rto { now, repeated };
            mp.on_rto(p, &rto, &Paths(vs));
            single.on_rto(&rto, &vs[0]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn one_usable_path_gives_the_westwood_trace(
        evs in prop::collection::vec((ev(false), 0u64..30), 1..400),
        weighted in any::<bool>(),
        gamma in 0.0f64..=2.0,
        iw in 1u32..11,
        idle_sibling in any::<bool>(),
    ) {
        let cfg = if weighted { MptcpwConfig::weighted() } else { MptcpwConfig::new() };
        let mut mp = cfg
            .gamma(gamma)
            .window(WindowConfig::default().initial_window(iw))
            .build()
            .unwrap();
        let mut ww = WestwoodConfig::new(RenoConfig::new(Bytes(MSS), iw)).build().unwrap();
        let n = if idle_sibling { 2 } else { 1 };
        add_paths(&mut mp, n, MSS);
        let mut vs = views(&[0.05, 0.02], MSS);
        vs[1].can_send = false;
        let mut now = Instant::ZERO;
        for (k, &(e, gap_ms)) in evs.iter().enumerate() {
            now += Duration::from_millis(gap_ms);
            apply_both(&mut mp, &mut ww, e, now, &mut vs[..n]);
            let m = mp.metrics(PathId(0));
            let got = (m.cwnd, m.ssthresh, m.bandwidth_bps);
            let w = ww.metrics();
            prop_assert_eq!(got, (w.cwnd, w.ssthresh, w.bandwidth_bps), "after {} ({:?})", k, e);
        }
    }

    #[test]
    fn coupled_windows_never_fall_below_their_floors(
        evs in prop::collection::vec((ev(false), 0usize..3, 0u64..30), 1..300),
        rtts in prop::collection::vec(1u32..300, 3),
        weighted in any::<bool>(),
        gamma in 0.0f64..=2.0,
    ) {
        let rtt: Vec<f64> = rtts.iter().map(|&r| r as f64 / 1000.0).collect();
        let mut vs = views(&rtt, MSS);
        let cfg = if weighted { MptcpwConfig::weighted() } else { MptcpwConfig::new() };
        let mut c = cfg.gamma(gamma).build().unwrap();
        add_paths(&mut c, 3, MSS);
        let mut now = Instant::ZERO;
        for &(e, p, gap_ms) in &evs {
            now += Duration::from_millis(gap_ms);
            let id = PathId(p as u32);
            match e {
                Ev::Ack { bytes, rtt_us, in_flight, in_recovery } => {
                    vs[p].in_flight = Bytes(in_flight);
                    let a = Ack {
                        now,
                        bytes_acked: Bytes(bytes),
                        rtt: rtt_us.map(|us| Duration(us * 1000)),
                        in_recovery,
                        cwnd_limited: true,
                    };
                    c.on_ack(id, &a, &Paths(&vs));
                }
                Ev::Loss => c.on_congestion_event(id, &loss(), &Paths(&vs)),
                Ev::RecoveryEnd => c.on_recovery_end(id, now, &Paths(&vs)),
                Ev::Rto(repeated) => c.on_rto(id, &Rto { now, repeated }, &Paths(&vs)),
            }
            for i in 0..3 {
                let id = PathId(i as u32);
                prop_assert!(c.window(id).0 >= MSS);
                if let Some(s) = c.ssthresh(id) {
                    prop_assert!(s.0 >= 2 * MSS);
                }
                if let Some(a) = c.metrics(id).alpha {
                    prop_assert!(a.is_finite() && a >= 0.0);
                }
            }
        }
    }
}
