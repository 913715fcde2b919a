//! Tests of TCP Westwood+ and its bandwidth estimator, named by behaviour.

use proptest::prelude::*;

use super::*;
use crate::cc::veno::tests::{ev, run};
use crate::cc::{Cause, NewReno, PathId};
use crate::testing::TestSender;

const MSS: u64 = 1000;

fn westwood(iw: u32) -> WestwoodPlus {
    WestwoodConfig::new(RenoConfig::new(Bytes(MSS), iw))
        .build()
        .unwrap()
}

/// Feeds `c` one ACK of one segment every `MSS/rate` seconds for `duration`, with RTT
/// samples cycling through `rtts_ms`; returns the time after the last ACK.
fn stream(
    c: &mut WestwoodPlus,
    mut now: Instant,
    bytes_per_sec: f64,
    duration: Duration,
    rtts_ms: &[u64],
) -> Instant {
    let view = PathView::new(PathId(0), Bytes(MSS));
    let gap = Duration::from_secs_f64(MSS as f64 / bytes_per_sec);
    let end = now + duration;
    let mut k = 0;
    while now < end {
        now += gap;
        let a = Ack {
            now,
            bytes_acked: Bytes(MSS),
            rtt: Some(Duration::from_millis(rtts_ms[k % rtts_ms.len()])),
            in_recovery: false,
            cwnd_limited: true,
        };
        c.on_ack(&a, &view);
        k += 1;
    }
    now
}

fn loss_event(now: Instant) -> CongestionEvent {
    CongestionEvent {
        now,
        cause: Cause::Loss,
    }
}

#[test]
fn estimate_converges_to_the_rate_of_the_ack_stream() {
    let mut c = westwood(10);
    let rate = 1.25e6; // 10 Mbit/s
    let now = stream(&mut c, Instant::ZERO, rate, Duration::from_secs(3), &[100]);
    let est = c.estimator().bytes_per_sec();
    assert!((est - rate).abs() / rate < 0.1, "estimate {est} for {rate}");
    assert_eq!(c.metrics().bandwidth_bps, Some(est * 8.0));
    // A step to four times the rate: the two 7/8 filters follow within 5 s (≈ 50 windows).
    let rate = 5e6;
    stream(&mut c, now, rate, Duration::from_secs(5), &[100]);
    let est = c.estimator().bytes_per_sec();
    assert!((est - rate).abs() / rate < 0.1, "estimate {est} for {rate}");
}

#[test]
fn window_after_loss_and_recovery_end_is_estimate_times_min_rtt() {
    let mut c = westwood(10);
    let view = PathView::new(PathId(0), Bytes(MSS));
    // RTT samples between 80 and 120 ms: RTTmin = 80 ms.
    let now = stream(
        &mut c,
        Instant::ZERO,
        1.25e6,
        Duration::from_secs(3),
        &[100, 80, 120],
    );
    assert_eq!(c.estimator().rtt_min(), Some(Duration::from_millis(80)));
    let before = c.window().0;
    c.on_congestion_event(&loss_event(now), &view);
    // During recovery: Reno halving (Linux .ssthresh = tcp_reno_ssthresh).
    assert_eq!(c.window().0, (before / 2).max(2 * MSS));
    c.on_recovery_end(now, &view);
    let bwe = c.estimator().bytes_per_sec();
    let expected = ((bwe * 0.08 / MSS as f64).floor() as u64).max(2) * MSS;
    assert_eq!(c.window().0, expected);
    assert_eq!(c.ssthresh(), Some(Bytes(expected)));
    // About 1.25 MB/s × 80 ms = 100 segments.
    assert!((c.window().0 as f64 / 100_000.0 - 1.0).abs() < 0.1);
    // Then congestion avoidance as Reno: one segment per window acknowledged.
    let mut s = TestSender::new(c, Bytes(MSS));
    s.now = now;
    s.ack_round();
    assert_eq!(s.cc.window().0, expected + MSS);
}

#[test]
fn timeout_sets_ssthresh_from_the_estimate_and_resets_rtt_min() {
    let mut c = westwood(10);
    let view = PathView::new(PathId(0), Bytes(MSS));
    let now = stream(&mut c, Instant::ZERO, 2.5e6, Duration::from_secs(2), &[40]);
    let expected = c.estimator().window(MSS).unwrap();
    assert!((expected as f64 / 100_000.0 - 1.0).abs() < 0.1); // 2.5 MB/s × 40 ms
    c.on_rto(
        &Rto {
            now,
            repeated: false,
        },
        &view,
    );
    assert_eq!(c.window(), Bytes(MSS));
    assert_eq!(c.ssthresh(), Some(Bytes(expected)));
    c.on_rto(
        &Rto {
            now,
            repeated: true,
        },
        &view,
    );
    assert_eq!(
        c.ssthresh(),
        Some(Bytes(expected)),
        "a repeated timeout holds it"
    );
    // "Update RTT_min when next ack arrives": a longer path after the timeout.
    stream(&mut c, now, 1e5, Duration::from_millis(20), &[60]);
    assert_eq!(c.estimator().rtt_min(), Some(Duration::from_millis(60)));
}

#[test]
fn sampling_window_is_never_shorter_than_50ms() {
    let mut e = BandwidthEstimator::new();
    let rtt = Some(Duration::from_millis(10));
    for ms in 0..=50 {
        e.on_ack(Instant::ZERO + Duration::from_millis(ms), Bytes(MSS), rtt);
    }
    assert_eq!(e.bits_per_sec(), None, "50 ms is not more than 50 ms");
    e.on_ack(Instant::ZERO + Duration::from_millis(51), Bytes(MSS), rtt);
    // The first ACK only starts the window; 50 segments over 51 ms fill both stages.
    let first = 50_000.0 / 0.051;
    assert!((e.bytes_per_sec() - first).abs() < 1e-6 * first);
}

#[test]
fn later_samples_pass_through_two_seven_eighths_filters() {
    let mut e = BandwidthEstimator::new();
    let rtt = Some(Duration::from_millis(100));
    let t = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
    e.on_ack(t(0), Bytes(0), rtt);
    e.on_ack(t(50), Bytes(100_000), rtt);
    e.on_ack(t(200), Bytes(0), rtt); // closes [0, 200 ms]: 100 kB / 0.2 s
    let s1 = 500_000.0;
    assert!((e.bytes_per_sec() - s1).abs() < 1e-6);
    e.on_ack(t(300), Bytes(300_000), rtt);
    e.on_ack(t(400), Bytes(0), rtt); // closes [200, 400 ms]: 300 kB / 0.2 s
    let s2 = 1_500_000.0;
    let ns = (7.0 * s1 + s2) / 8.0;
    let est = (7.0 * s1 + ns) / 8.0;
    assert!((e.bytes_per_sec() - est).abs() < 1e-6);
}

#[test]
fn growth_is_newreno_until_a_loss() {
    let mut w = TestSender::new(westwood(2), Bytes(MSS));
    let mut r = TestSender::new(NewReno::new(RenoConfig::new(Bytes(MSS), 2)), Bytes(MSS));
    for _ in 0..6 {
        w.ack_round();
        r.ack_round();
        assert_eq!(w.cc.window(), r.cc.window());
    }
}

#[test]
fn recovery_end_without_a_loss_changes_nothing() {
    let mut c = westwood(10);
    let view = PathView::new(PathId(0), Bytes(MSS));
    let now = stream(&mut c, Instant::ZERO, 1e6, Duration::from_secs(1), &[100]);
    let (w, s) = (c.window(), c.ssthresh());
    c.on_recovery_end(now, &view);
    assert_eq!((c.window(), c.ssthresh()), (w, s));
}

#[test]
fn acks_in_recovery_feed_the_estimate_but_not_the_window() {
    let mut c = westwood(10);
    let view = PathView::new(PathId(0), Bytes(MSS));
    c.on_congestion_event(&loss_event(Instant::ZERO), &view);
    let w = c.window();
    for ms in 0..300 {
        let a = Ack {
            now: Instant::ZERO + Duration::from_millis(ms),
            bytes_acked: Bytes(MSS),
            rtt: Some(Duration::from_millis(100)),
            in_recovery: true,
            cwnd_limited: true,
        };
        c.on_ack(&a, &view);
    }
    assert_eq!(c.window(), w);
    assert!(c.estimator().bytes_per_sec() > 0.0);
}

#[test]
fn without_an_rtt_sample_a_loss_keeps_renos_values() {
    let mut c = westwood(10);
    let view = PathView::new(PathId(0), Bytes(MSS));
    c.on_congestion_event(&loss_event(Instant::ZERO), &view);
    c.on_recovery_end(Instant::ZERO, &view);
    assert_eq!(c.window(), Bytes(5 * MSS));
    c.on_rto(
        &Rto {
            now: Instant::ZERO,
            repeated: false,
        },
        &view,
    );
    assert_eq!(
        c.ssthresh(),
        Some(Bytes(2500)),
        "NewReno's max(cwnd/2, 2·MSS)"
    );
}

#[test]
fn bad_window_settings_are_errors() {
    let e = WestwoodConfig::new(RenoConfig::new(Bytes(0), 2))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("westwood: mss = 0"), "{e}");
    let e = WestwoodConfig::new(RenoConfig::new(Bytes(MSS), 0))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("initial_window"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn windows_never_fall_below_their_floors(evs in prop::collection::vec(ev(false), 1..400)) {
        let mut c = westwood(2);
        run(&mut c, MSS, &evs, |c| {
            assert!(c.window().0 >= MSS);
            if let Some(s) = c.ssthresh() {
                assert!(s.0 >= 2 * MSS);
            }
            if let Some(b) = c.metrics().bandwidth_bps {
                assert!(b >= 0.0 && b.is_finite());
            }
        });
    }

    #[test]
    fn extreme_input_never_panics(
        evs in prop::collection::vec(ev(true), 1..200),
        mss in prop_oneof![Just(1u64), Just(1448u64), Just(1u64 << 29)],
    ) {
        let mut c = WestwoodConfig::new(RenoConfig::new(Bytes(mss), 1000)).build().unwrap();
        run(&mut c, mss, &evs, |c| {
            let _ = (c.window(), c.metrics());
        });
    }
}
