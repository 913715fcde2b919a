//! Test helpers: the reference test vectors (`reference/vectors.json`, produced by
//! `reference/vectors.py`), path views at given RTTs, events, and the scripted operations the
//! property tests replay against NewReno.

use std::sync::OnceLock;

use serde_json::Value;

use crate::cc::multipath::{KernelSample, MultipathController, PathSample, Paths};
use crate::cc::{
    Ack, Cause, CongestionEvent, Controller, NewReno, PathId, PathView, RenoConfig, Rto,
};
use crate::units::{Bytes, Duration, Instant};

/// The vectors file, relative to this crate's manifest: `reference/` at the repository root.
const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../reference/vectors.json");

/// The parsed vectors file.
pub(crate) fn vectors() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    V.get_or_init(|| {
        let text = std::fs::read_to_string(VECTORS)
            .unwrap_or_else(|e| panic!("cannot read {VECTORS}: {e}"));
        serde_json::from_str(&text).expect("vectors.json is valid JSON")
    })
}

/// The vectors of one algorithm (`"LIA"`, `"OLIA"`, `"Balia"`, `"RPv2"`).
pub(crate) fn cases(algorithm: &str) -> &'static [Value] {
    vectors()[algorithm]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("no {algorithm} vectors"))
}

/// A number.
pub(crate) fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// An integer.
pub(crate) fn int(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// A signed integer.
pub(crate) fn signed(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A list of numbers.
pub(crate) fn nums(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(num)
        .collect()
}

/// A list of indices.
pub(crate) fn indices(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|x| int(x) as usize)
        .collect()
}

/// `|a − b| ≤ tol·max(1, |b|)`.
#[track_caller]
pub(crate) fn assert_close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * b.abs().max(1.0),
        "{what}: got {a}, expected {b}"
    );
}

/// The vectors' kernel RTT: `round(rtt·10^6) << 3` (`vectors.py` `srtt_us`).
pub(crate) fn srtt_us(rtt: f64) -> u64 {
    ((rtt * 1e6).round() as u64) << 3
}

/// Real-valued samples from windows in packets and RTTs in seconds.
pub(crate) fn samples(w: &[f64], rtt: &[f64]) -> Vec<PathSample> {
    w.iter()
        .zip(rtt)
        .map(|(&window, &rtt)| PathSample { window, rtt })
        .collect()
}

/// Kernel samples from windows in packets and RTTs in seconds.
pub(crate) fn kernel_samples(w: &[f64], rtt: &[f64]) -> Vec<KernelSample> {
    w.iter()
        .zip(rtt)
        .map(|(&w, &r)| KernelSample {
            cwnd: w as u64,
            srtt_us: srtt_us(r),
        })
        .collect()
}

/// Views of established paths with the given smoothed RTTs (seconds).
pub(crate) fn views(rtts: &[f64], mss: u64) -> Vec<PathView> {
    rtts.iter()
        .enumerate()
        .map(|(i, &r)| {
            let mut v = PathView::new(PathId(i as u32), Bytes(mss));
            let d = Duration::from_secs_f64(r);
            v.srtt = Some(d);
            v.min_rtt = Some(d);
            v.latest_rtt = Some(d);
            v
        })
        .collect()
}

/// An ACK of `bytes` outside recovery.
pub(crate) fn ack(bytes: u64) -> Ack {
    Ack {
        now: Instant::ZERO,
        bytes_acked: Bytes(bytes),
        rtt: None,
        in_recovery: false,
        cwnd_limited: true,
    }
}

/// A loss detected by duplicate ACKs.
pub(crate) fn loss() -> CongestionEvent {
    CongestionEvent {
        now: Instant::ZERO,
        cause: Cause::Loss,
    }
}

/// Adds paths `0..n` with segment size `mss`.
pub(crate) fn add_paths<C: MultipathController>(c: &mut C, n: usize, mss: u64) {
    for i in 0..n {
        c.on_path_added(PathId(i as u32), Instant::ZERO, Bytes(mss));
    }
}

/// One transport event, as the property tests script them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    /// An ACK of this many bytes, in or out of recovery.
    Ack { bytes: u64, in_recovery: bool },
    /// Loss recovery starts.
    Loss,
    /// Loss recovery ends.
    RecoveryEnd,
    /// The retransmission timer fires.
    Rto { repeated: bool },
}

/// Applies `op` to path `p` of a multipath controller.
pub(crate) fn apply<C: MultipathController>(c: &mut C, p: PathId, op: Op, paths: &Paths<'_>) {
    let now = Instant::ZERO;
    match op {
        Op::Ack { bytes, in_recovery } => {
            let a = Ack {
                in_recovery,
                cwnd_limited: true,
                rtt: paths.get(p).and_then(|v| v.srtt),
                ..ack(bytes)
            };
            c.on_ack(p, &a, paths);
        }
        Op::Loss => c.on_congestion_event(p, &loss(), paths),
        Op::RecoveryEnd => c.on_recovery_end(p, now, paths),
        Op::Rto { repeated } => c.on_rto(p, &Rto { now, repeated }, paths),
    }
}

/// Applies `op` to a single-path controller.
pub(crate) fn apply_single<C: Controller>(c: &mut C, op: Op, view: &PathView) {
    let now = Instant::ZERO;
    match op {
        Op::Ack { bytes, in_recovery } => {
            let a = Ack {
                in_recovery,
                cwnd_limited: true,
                rtt: view.srtt,
                ..ack(bytes)
            };
            c.on_ack(&a, view);
        }
        Op::Loss => c.on_congestion_event(&loss(), view),
        Op::RecoveryEnd => c.on_recovery_end(now, view),
        Op::Rto { repeated } => c.on_rto(&Rto { now, repeated }, view),
    }
}

/// Replays `ops` on path 0 of `mp` and on a NewReno with the same segment size and initial
/// window, and checks the windows and thresholds agree after every event. With
/// `idle_sibling`, a second path exists that may not send, so path 0 is the only usable one.
pub(crate) fn assert_same_as_reno<C: MultipathController>(
    mut mp: C,
    mss: u64,
    initial_window: u32,
    ops: &[Op],
    idle_sibling: bool,
) {
    let mut reno = NewReno::new(RenoConfig::new(Bytes(mss), initial_window));
    let mut vs = views(&[0.05, 0.02], mss);
    vs[1].can_send = false;
    let n = if idle_sibling { 2 } else { 1 };
    add_paths(&mut mp, n, mss);
    let paths = Paths(&vs[..n]);
    for (k, &op) in ops.iter().enumerate() {
        apply(&mut mp, PathId(0), op, &paths);
        apply_single(&mut reno, op, &vs[0]);
        assert_eq!(
            (mp.window(PathId(0)), mp.ssthresh(PathId(0))),
            (reno.window(), reno.ssthresh()),
            "diverged after event {k} ({op:?})"
        );
    }
}
