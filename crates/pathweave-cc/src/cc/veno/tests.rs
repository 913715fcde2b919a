//! Tests of TCP Veno, named by behaviour, through the scripted [`TestSender`].

use proptest::prelude::*;

use super::*;
use crate::cc::{Cause, NewReno, PathId};
use crate::testing::TestSender;
use crate::units::Instant;

const MSS: u64 = 1000;

fn veno(iw: u32) -> TestSender<Veno> {
    let cc = VenoConfig::new(RenoConfig::new(Bytes(MSS), iw))
        .build()
        .unwrap();
    TestSender::new(cc, Bytes(MSS))
}

fn ack(bytes: u64, rtt_ms: Option<u64>, in_recovery: bool) -> Ack {
    Ack {
        now: Instant::ZERO,
        bytes_acked: Bytes(bytes),
        rtt: rtt_ms.map(Duration::from_millis),
        in_recovery,
        cwnd_limited: true,
    }
}

#[test]
fn backlog_formula_is_expected_minus_actual_times_base_rtt() {
    // MPVeno vector V1, path 0: w = 30, RTT 60 ms, baseRTT 50 ms → 5 packets queued.
    assert!((backlog(30.0, 0.06, 0.05) - 5.0).abs() < 1e-12);
    assert_eq!(backlog(10.0, 0.05, 0.05), 0.0);
    assert_eq!(
        backlog(10.0, 0.04, 0.05),
        0.0,
        "RTT below baseRTT is no queue"
    );
    assert_eq!(backlog(10.0, 0.0, 0.05), 0.0);
    assert_eq!(backlog(f64::NAN, 0.1, 0.05), 0.0);
    assert_eq!(backlog(10.0, f64::INFINITY, 0.05), 0.0);
}

#[test]
fn zero_backlog_grows_as_reno_and_cuts_by_a_fifth() {
    let mut v = veno(10);
    let mut r = TestSender::new(NewReno::new(RenoConfig::new(Bytes(MSS), 10)), Bytes(MSS));
    for _ in 0..2 {
        v.ack_round();
        r.ack_round();
        assert_eq!(v.cc.window(), r.cc.window());
    }
    assert_eq!(v.cc.window(), Bytes(40_000));
    assert_eq!(v.cc.metrics().backlog, Some(0.0));
    v.loss();
    r.loss();
    // Fu & Liew: N < β means a random loss, w − w/5; Reno halves.
    assert_eq!(v.cc.window(), Bytes(32_000));
    assert_eq!(v.cc.ssthresh(), Some(Bytes(32_000)));
    assert_eq!(r.cc.window(), Bytes(20_000));
    // Congestion avoidance is Reno's: one segment per window acknowledged.
    for k in 1..=6 {
        v.ack_round();
        r.ack_round();
        assert_eq!(v.cc.window(), Bytes(32_000 + k * MSS));
        assert_eq!(r.cc.window(), Bytes(20_000 + k * MSS));
    }
}

#[test]
fn standing_queue_above_beta_grows_at_half_renos_rate_and_halves_on_loss() {
    let mut v = veno(10);
    v.ack_round();
    v.ack_round(); // 40 segments, no queue
    v.loss(); // random loss: 32 segments
              // A standing queue: N = w·(150 − 100)/150 = w/3 packets, above β = 3.
    v.rtt = Duration::from_millis(150);
    v.ack_round();
    v.ack_round();
    let w0 = v.cc.window().0;
    let n = v.cc.metrics().backlog.unwrap();
    assert!(
        (n - w0 as f64 / MSS as f64 / 3.0).abs() <= 1.0 / 3.0,
        "N = {n}"
    );
    for _ in 0..10 {
        v.ack_round();
    }
    // Ten rounds: Reno would add ten segments, congestive Veno adds five.
    assert_eq!(v.cc.window().0, w0 + 5 * MSS);
    v.loss();
    assert_eq!(
        v.cc.window().0,
        (w0 + 5 * MSS) / 2,
        "congestive loss halves"
    );
}

#[test]
fn congestive_growth_alternates_per_window_as_linux() {
    let mut v = veno(10);
    v.ack_round();
    v.ack_round();
    v.loss(); // 32 segments
    v.rtt = Duration::from_millis(150);
    let mut trace = Vec::new();
    for _ in 0..6 {
        v.ack_round();
        trace.push(v.cc.window().0 / MSS);
    }
    // tcp_veno.c: veno->inc starts at 1, so the first completed window adds a segment.
    assert_eq!(trace, [33, 33, 34, 34, 35, 35]);
}

#[test]
fn reno_until_three_rtt_samples_then_veno() {
    let mut st = VenoState::default();
    for k in 0..3 {
        assert!(!st.assess(40 * MSS, MSS, 3.0), "{k} samples");
        st.observe(&ack(MSS, Some(100 + 50 * k), false), Bytes(0));
    }
    assert!(st.assess(40 * MSS, MSS, 3.0));
    // Rounds of one ACK here (nothing in flight): the RTT is the latest sample, 200 ms.
    assert!((st.backlog().unwrap() - 20.0).abs() < 1e-9);
    assert!(st.congestive());
    // ACKs without samples (Karn) keep the estimate.
    st.observe(&ack(MSS, None, false), Bytes(0));
    assert!(st.assess(40 * MSS, MSS, 3.0));
    assert!((st.backlog().unwrap() - 20.0).abs() < 1e-9);
}

#[test]
fn rtt_is_the_smallest_sample_of_the_last_round() {
    let mut r = RttRounds::default();
    // The first ACK closes an empty round; the next round covers the 3000 bytes in flight.
    r.on_ack(1000, Some(Duration::from_millis(120)), 3000);
    assert_eq!(r.rtt(), Some(Duration::from_millis(120)));
    r.on_ack(1000, Some(Duration::from_millis(110)), 3000);
    r.on_ack(1000, Some(Duration::from_millis(130)), 3000);
    // Still the last complete round's minimum until the round ends.
    assert_eq!(r.rtt(), Some(Duration::from_millis(120)));
    r.on_ack(1000, Some(Duration::from_millis(140)), 3000);
    assert_eq!(r.rtt(), Some(Duration::from_millis(110)));
    assert_eq!(r.base(), Some(Duration::from_millis(110)));
    assert_eq!(r.samples(), 4);
    // A zero sample counts as 1 ns (tcp_veno: "Never allow zero rtt or baseRTT").
    r.on_ack(0, Some(Duration::ZERO), 0);
    assert_eq!(r.base(), Some(Duration(1)));
}

#[test]
fn a_loss_before_any_estimate_is_taken_as_random() {
    // Linux's zeroed veno->diff: below β until Veno has computed one.
    let mut v = veno(10);
    v.loss();
    assert_eq!(v.cc.window(), Bytes(8_000));
    assert_eq!(v.cc.metrics().backlog, None);
}

#[test]
fn loss_never_takes_ssthresh_below_two_segments() {
    let mut v = veno(2);
    for _ in 0..5 {
        v.loss();
    }
    assert_eq!(v.cc.window(), Bytes(2 * MSS));
    assert_eq!(v.cc.ssthresh(), Some(Bytes(2 * MSS)));
}

#[test]
fn timeout_is_newreno_and_a_repeated_one_holds_ssthresh() {
    let mut v = veno(10);
    v.ack_round();
    v.ack_round();
    v.rtt = Duration::from_millis(300); // a queue does not change the timeout rule
    v.ack_round();
    v.rto(false);
    assert_eq!(v.cc.window(), Bytes(MSS));
    assert_eq!(v.cc.ssthresh(), Some(Bytes(40_000)));
    v.rto(true);
    assert_eq!(v.cc.ssthresh(), Some(Bytes(40_000)));
    v.ack_round();
    assert_eq!(v.cc.window(), Bytes(2 * MSS), "slow start again");
}

#[test]
fn no_growth_during_recovery() {
    let mut v = veno(10);
    v.ack_round();
    let ev = CongestionEvent {
        now: v.now,
        cause: Cause::Loss,
    };
    v.cc.on_congestion_event(&ev, &v.path);
    let w = v.cc.window();
    v.ack_in_recovery(50);
    assert_eq!(v.cc.window(), w);
    v.cc.on_recovery_end(v.now, &v.path);
    assert_eq!(v.cc.window(), w);
}

#[test]
fn beta_must_be_positive_and_finite() {
    let base = VenoConfig::new(RenoConfig::new(Bytes(MSS), 2));
    assert_eq!(base.beta_value(), 3.0);
    assert!(base.beta(0.5).build().is_ok());
    for bad in [0.0, -3.0, f64::NAN, f64::INFINITY, 1e7] {
        let e = base.beta(bad).build().unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::OutOfRange {
                    algorithm: "veno",
                    parameter: "beta",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("above 0"), "{e}");
    }
    let e = VenoConfig::new(RenoConfig::new(Bytes(0), 2))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("veno: mss = 0"), "{e}");
}

/// One scripted event for the property tests: an ACK with an optional RTT sample and the
/// bytes left in flight, a loss, the end of recovery, or a timeout.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    Ack {
        bytes: u64,
        rtt_us: Option<u64>,
        in_flight: u64,
        in_recovery: bool,
    },
    Loss,
    RecoveryEnd,
    Rto(bool),
}

pub(crate) fn ev(extreme: bool) -> impl Strategy<Value = Ev> {
    let bytes = if extreme {
        prop_oneof![0u64..=3000, Just(u64::MAX), 0u64..=1 << 40].boxed()
    } else {
        (1u64..=3000).boxed()
    };
    let rtt = if extreme {
        prop_oneof![Just(None), any::<u64>().prop_map(Some)].boxed()
    } else {
        prop::option::weighted(0.9, 10_000u64..400_000).boxed()
    };
    prop_oneof![
        12 => (bytes, rtt, any::<u64>(), prop::bool::weighted(0.1)).prop_map(
            |(bytes, rtt_us, in_flight, in_recovery)| Ev::Ack {
                bytes,
                rtt_us,
                in_flight: in_flight % (1 << 30),
                in_recovery,
            }
        ),
        1 => Just(Ev::Loss),
        1 => Just(Ev::RecoveryEnd),
        1 => any::<bool>().prop_map(Ev::Rto),
    ]
}

pub(crate) fn run<C: Controller>(c: &mut C, mss: u64, evs: &[Ev], mut check: impl FnMut(&C)) {
    let mut view = PathView::new(PathId(0), Bytes(mss));
    let mut now = Instant::ZERO;
    for &e in evs {
        now += Duration::from_millis(1);
        match e {
            Ev::Ack {
                bytes,
                rtt_us,
                in_flight,
                in_recovery,
            } => {
                view.in_flight = Bytes(in_flight);
                let a = Ack {
                    now,
                    bytes_acked: Bytes(bytes),
                    rtt: rtt_us.map(|us| Duration(us.saturating_mul(1000))),
                    in_recovery,
                    cwnd_limited: true,
                };
                c.on_ack(&a, &view);
            }
            Ev::Loss => c.on_congestion_event(
                &CongestionEvent {
                    now,
                    cause: Cause::Loss,
                },
                &view,
            ),
            Ev::RecoveryEnd => c.on_recovery_end(now, &view),
            Ev::Rto(repeated) => c.on_rto(&Rto { now, repeated }, &view),
        }
        check(c);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn windows_never_fall_below_their_floors(
        evs in prop::collection::vec(ev(false), 1..400),
        beta in 0.5f64..8.0,
    ) {
        let mut c = VenoConfig::new(RenoConfig::new(Bytes(MSS), 2)).beta(beta).build().unwrap();
        run(&mut c, MSS, &evs, |c| {
            assert!(c.window().0 >= MSS);
            if let Some(s) = c.ssthresh() {
                assert!(s.0 >= 2 * MSS);
            }
            if let Some(n) = c.metrics().backlog {
                assert!(n >= 0.0 && n.is_finite());
            }
        });
    }

    #[test]
    fn extreme_input_never_panics(
        evs in prop::collection::vec(ev(true), 1..200),
        mss in prop_oneof![Just(1u64), Just(1448u64), Just(1u64 << 29)],
    ) {
        let mut c = VenoConfig::new(RenoConfig::new(Bytes(mss), 1000)).build().unwrap();
        run(&mut c, mss, &evs, |c| {
            let _ = (c.window(), c.metrics());
        });
    }
}
