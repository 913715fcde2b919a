//! Tests of weighted AIMD: NewReno equivalence for AIMD(1, ½) and D = 1, the increase and
//! decrease for other parameters, the paper's eq. 3.6 examples, and configuration errors. The
//! BMC vectors W1–W4 for a single weighted flow run in `multipath/bmc/tests.rs`, beside the
//! other vector tests.

use proptest::prelude::*;

use super::*;
use crate::cc::{Cause, NewReno, PathId, RenoConfig};
use crate::testing::TestSender;
use crate::units::{Duration, Instant};

const MSS: u64 = 1000;

fn aimd(cfg: AimdConfig) -> TestSender<Aimd> {
    TestSender::new(cfg.build().unwrap(), Bytes(MSS))
}

/// Acknowledges exactly one window of bytes in full segments (and one partial segment).
fn ack_window(s: &mut TestSender<Aimd>) {
    let w = s.cc.window().0;
    for _ in 0..w / MSS {
        s.ack_bytes(Bytes(MSS));
    }
    if w % MSS > 0 {
        s.ack_bytes(Bytes(w % MSS));
    }
}

/// Puts the controller in congestion avoidance at `segments` segments.
fn in_avoidance(cfg: AimdConfig, segments: u64) -> TestSender<Aimd> {
    let mut s = aimd(cfg);
    s.cc.cwnd = segments * MSS;
    s.cc.ssthresh = segments * MSS;
    s
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Ack { bytes: u64, in_recovery: bool },
    Loss,
    RecoveryEnd,
    Rto { repeated: bool },
}

fn op(max_ack: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..=max_ack, prop::bool::weighted(0.15))
            .prop_map(|(bytes, in_recovery)| Op::Ack { bytes, in_recovery }),
        1 => Just(Op::Loss),
        1 => Just(Op::RecoveryEnd),
        1 => any::<bool>().prop_map(|repeated| Op::Rto { repeated }),
    ]
}

fn apply<C: Controller>(c: &mut C, op: Op, view: &PathView) {
    let now = Instant::ZERO;
    match op {
        Op::Ack { bytes, in_recovery } => {
            let ack = Ack {
                now,
                bytes_acked: Bytes(bytes),
                rtt: view.srtt,
                in_recovery,
                cwnd_limited: true,
            };
            c.on_ack(&ack, view);
        }
        Op::Loss => {
            let ev = CongestionEvent {
                now,
                cause: Cause::Loss,
            };
            c.on_congestion_event(&ev, view);
        }
        Op::RecoveryEnd => c.on_recovery_end(now, view),
        Op::Rto { repeated } => c.on_rto(&Rto { now, repeated }, view),
    }
}

/// Replays `ops` on a NewReno and on `cfg`, and checks the window and threshold agree after
/// every event.
fn assert_same_trace_as_newreno(cfg: AimdConfig, abc: u32, ops: &[Op]) {
    let mut reno_cfg = RenoConfig::new(cfg.mss(), cfg.initial_window);
    reno_cfg.abc_limit = abc;
    let mut reno = NewReno::new(reno_cfg);
    let mut c = cfg.abc_limit(abc).build().unwrap();
    let mut view = PathView::new(PathId(0), cfg.mss());
    view.srtt = Some(Duration::from_millis(40));
    for (k, &o) in ops.iter().enumerate() {
        apply(&mut reno, o, &view);
        apply(&mut c, o, &view);
        assert_eq!(
            (c.window(), c.ssthresh()),
            (reno.window(), reno.ssthresh()),
            "diverged after event {k} ({o:?})"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn aimd_one_half_gives_the_newreno_trace(
        ops in prop::collection::vec(op(5000), 1..400),
        mss in prop_oneof![Just(1u64), Just(536u64), Just(1000u64), Just(1448u64)],
        iw in 1u32..11,
        abc in 1u32..4,
    ) {
        let cfg = AimdConfig::new(Bytes(mss), iw).increase(1.0).decrease(0.5);
        assert_same_trace_as_newreno(cfg, abc, &ops);
    }

    #[test]
    fn weight_one_gives_the_newreno_trace(
        ops in prop::collection::vec(op(5000), 1..400),
        mss in prop_oneof![Just(1000u64), Just(1448u64)],
        iw in 1u32..11,
    ) {
        assert_same_trace_as_newreno(AimdConfig::new(Bytes(mss), iw).weight(1.0), 2, &ops);
    }

    #[test]
    fn windows_stay_above_their_floors_for_any_parameters(
        ops in prop::collection::vec(op(1 << 40), 1..300),
        a in 1e-4f64..256.0,
        b in 0.001f64..0.999,
        mss in prop_oneof![Just(1u64), Just(1448u64), Just(1u64 << 29)],
    ) {
        let cfg = AimdConfig::new(Bytes(mss), 10).increase(a).decrease(b);
        let mut c = cfg.build().unwrap();
        let view = PathView::new(PathId(0), Bytes(mss));
        for &o in &ops {
            apply(&mut c, o, &view);
            prop_assert!(c.window().0 >= mss);
            if let Some(s) = c.ssthresh() {
                prop_assert!(s.0 >= 2 * mss);
            }
        }
    }
}

#[test]
fn congestion_avoidance_adds_a_segments_per_window_acknowledged() {
    for a in [0.04, 0.25, 0.64, 1.0, 1.44, 3.0] {
        let mut s = in_avoidance(AimdConfig::new(Bytes(MSS), 2).increase(a), 20);
        let mut expected = 20.0 * MSS as f64;
        for _ in 0..5 {
            ack_window(&mut s);
            expected += a * MSS as f64;
            // Whole bytes only; the fraction waits in the credit.
            assert_eq!(s.cc.window().0, expected.floor() as u64, "a = {a}");
        }
    }
}

#[test]
fn weighted_flow_adds_d_squared_segments_per_window() {
    let mut s = in_avoidance(AimdConfig::new(Bytes(MSS), 2).weight(0.5), 10);
    ack_window(&mut s);
    assert_eq!(s.cc.window(), Bytes(10_250)); // + D² = 0.25 segment
    assert_eq!(s.cc.config().decrease_fraction(), 0.5);
}

#[test]
fn loss_removes_the_fraction_b_of_the_window() {
    for (b, after) in [(0.5, 10_000), (0.2, 16_000), (0.125, 17_500), (0.9, 2_000)] {
        let mut s = in_avoidance(AimdConfig::new(Bytes(MSS), 2).decrease(b), 20);
        s.loss();
        assert_eq!(s.cc.window(), Bytes(after), "b = {b}");
        assert_eq!(s.cc.ssthresh(), Some(Bytes(after)), "b = {b}");
    }
}

#[test]
fn loss_never_takes_ssthresh_below_two_segments() {
    let mut s = aimd(AimdConfig::new(Bytes(MSS), 2).decrease(0.99));
    for _ in 0..3 {
        s.loss();
    }
    assert_eq!(s.cc.ssthresh(), Some(Bytes(2 * MSS)));
    assert_eq!(s.cc.window(), Bytes(2 * MSS));
}

#[test]
fn no_growth_during_recovery() {
    let mut s = in_avoidance(AimdConfig::new(Bytes(MSS), 2).weight(0.7), 30);
    s.cc.on_congestion_event(
        &CongestionEvent {
            now: Instant::ZERO,
            cause: Cause::Loss,
        },
        &s.path,
    );
    let w = s.cc.window();
    s.ack_in_recovery(100);
    assert_eq!(s.cc.window(), w);
}

#[test]
fn repeated_rto_holds_ssthresh_and_uses_b() {
    let mut s = in_avoidance(AimdConfig::new(Bytes(MSS), 2).decrease(0.25), 40);
    s.rto(false);
    assert_eq!(s.cc.ssthresh(), Some(Bytes(30_000)));
    assert_eq!(s.cc.window(), Bytes(MSS));
    s.rto(true);
    assert_eq!(s.cc.ssthresh(), Some(Bytes(30_000)));
}

#[test]
fn slow_start_is_newreno_whatever_the_weight() {
    let mut s = aimd(AimdConfig::new(Bytes(MSS), 2).weight(0.2));
    s.ack_round();
    assert_eq!(s.cc.window(), Bytes(4000));
    s.ack_bytes(Bytes(10_000)); // one stretch ACK: at most L = 2 segments
    assert_eq!(s.cc.window(), Bytes(6000));
}

#[test]
fn paper_examples_of_equal_throughput_parameters() {
    // BMC §3.1 after eq. 3.6: AIMD(1/2, 4/5) gets half, AIMD(3/4, 8/13) three quarters.
    assert!((equivalent_weight(0.5, 0.8) - 0.5).abs() < 1e-12);
    assert!((equivalent_weight(0.75, 8.0 / 13.0) - 0.75).abs() < 1e-12);
    assert!((equivalent_weight(1.0, 0.5) - 1.0).abs() < 1e-12);
    // D = 2/3 follows AIMD(4/9, 1/2).
    let c = AimdConfig::new(Bytes(MSS), 2).weight(2.0 / 3.0);
    assert!((c.increase_per_rtt() - 4.0 / 9.0).abs() < 1e-12);
    let m = c.build().unwrap().metrics();
    assert_eq!(m.weight, Some(2.0 / 3.0));
}

#[test]
fn last_setter_wins_between_weight_and_parameters() {
    let c = AimdConfig::new(Bytes(MSS), 2).weight(0.5).increase(2.0);
    assert_eq!(
        c.shape(),
        AimdShape::Params {
            increase: 2.0,
            decrease: 0.5
        }
    );
    let c = c.decrease(0.3).weight(0.9);
    assert_eq!(c.shape(), AimdShape::Weight(0.9));
    assert!((c.increase_per_rtt() - 0.81).abs() < 1e-12);
}

#[test]
fn bad_parameters_are_errors_naming_the_parameter_value_and_range() {
    let base = AimdConfig::new(Bytes(MSS), 2);
    let cases: [(AimdConfig, &str, &str); 12] = [
        (base.weight(-0.5), "weight = -0.5", "0 < D <= 16"),
        (base.weight(0.0), "weight = 0", "0 < D <= 16"),
        (base.weight(17.0), "weight = 17", "0 < D <= 16"),
        (base.weight(f64::NAN), "weight = NaN", "0 < D <= 16"),
        (base.increase(0.0), "a = 0", "0 < a <= 256"),
        (base.increase(300.0), "a = 300", "0 < a <= 256"),
        (base.decrease(0.0), "b = 0", "0 < b < 1"),
        (base.decrease(1.0), "b = 1", "0 < b < 1"),
        (base.decrease(-0.5), "b = -0.5", "0 < b < 1"),
        (base.decrease(f64::INFINITY), "b = inf", "0 < b < 1"),
        (AimdConfig::new(Bytes(0), 2), "mss = 0", "bytes"),
        (
            AimdConfig::new(Bytes(MSS), 0),
            "initial_window = 0",
            "segments",
        ),
    ];
    for (cfg, what, allowed) in cases {
        let e = cfg.build().unwrap_err();
        assert!(matches!(e, ConfigError::OutOfRange { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with("aimd: "), "{msg}");
        assert!(msg.contains(what), "{msg} lacks {what}");
        assert!(msg.contains(allowed), "{msg} lacks {allowed}");
    }
    assert!(base.abc_limit(0).validate().is_err());
    assert!(base.weight(16.0).validate().is_ok());
}

#[test]
fn the_default_is_newreno_and_the_window_settings_apply() {
    let c = AimdConfig::new(Bytes(MSS), 2)
        .window(WindowConfig::default().initial_window(10).abc_limit(3));
    assert_eq!((c.increase_per_rtt(), c.decrease_fraction()), (1.0, 0.5));
    let a = c.build().unwrap();
    assert_eq!(a.window(), Bytes(10 * MSS));
    assert_eq!(a.ssthresh(), None);
    assert_eq!(a.metrics().weight, Some(1.0));
}

#[test]
fn epoch_and_per_ack_helpers() {
    assert_eq!(increase_per_ack(0.25, 10.0), 0.025);
    assert_eq!(increase_per_ack(1.0, 0.0), 0.0);
    assert_eq!(loss_decrease(0.5, 25.0), 12.5);
    assert_eq!(epoch_rtts(1.0, 0.5, 25.0), 13.5);
    assert!(epoch_rtts(0.0, 0.5, 25.0).is_infinite());
}
