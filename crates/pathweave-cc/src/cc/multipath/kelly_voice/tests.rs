//! Tests of the Kelly–Voice algorithm: vectors derived by hand from the formula (exact
//! rationals), the one-path NewReno trace, and the identities with OLIA (ε = 0) and Balia
//! (α_r = 1) at equal RTTs.

use proptest::prelude::*;

use super::*;
use crate::cc::multipath::balia::{self, BaliaConfig};
use crate::cc::multipath::coupled::fully_coupled_increase;
use crate::cc::multipath::olia::{self, OliaConfig, OliaSample};
use crate::cc::multipath::test_support::{
    ack, add_paths, assert_close, assert_same_as_reno, loss, samples, srtt_us as vec_srtt_us,
    views, Op,
};

const MSS: u64 = 1000;

/// One vector: windows in packets and RTTs in seconds, and per path the exact increase per
/// acknowledged packet `num/den`, the kernel counter step (2^−10 packet per ACK event), and the
/// ACK events the kernel needs for one packet (`None`: the step truncates to 0, a stall).
struct Vector {
    name: &'static str,
    w: &'static [u64],
    rtt: &'static [f64],
    inc: &'static [(u64, u64)],
    kernel_step: &'static [i64],
    acks_per_packet: &'static [Option<u64>],
}

// Derivations. Spec: Δw_r = (w_r/rtt_r²)/S², S = Σ_k w_k/rtt_k (Kelly & Voice 2005), worked
// in exact rationals. Kernel (mptcp_olia.c, ε = 0): srtt_k = 8·rtt_k in µs,
// D_r = 1 + Σ_k ⌊w_k·1024·srtt_r/srtt_k⌋, step = ⌊2^30·w_r/D_r²⌋, ACKs per packet = ⌈1023/step⌉.
const VECTORS: &[Vector] = &[
    // K1: S = 20/0.05 + 10/0.2 = 400 + 50 = 450, S² = 202500.
    //   r=0: (20/0.0025)/202500 = 8000/202500 = 16/405;  r=1: (10/0.04)/202500 = 250/202500 = 1/810.
    //   D_0 = 1 + 20480 + ⌊10240/4⌋ = 23041, ⌊2^30·20/23041²⌋ = ⌊40.45⌋ = 40 → ⌈1023/40⌉ = 26.
    //   D_1 = 1 + 20480·4 + 10240 = 92161, ⌊2^30·10/92161²⌋ = ⌊1.264⌋ = 1 → 1023.
    Vector {
        name: "K1",
        w: &[20, 10],
        rtt: &[0.05, 0.2],
        inc: &[(16, 405), (1, 810)],
        kernel_step: &[40, 1],
        acks_per_packet: &[Some(26), Some(1023)],
    },
    // K2: S = 40/0.04 + 20/0.08 + 20/0.02 = 1000 + 250 + 1000 = 2250, S² = 5062500.
    //   r=0: 25000/5062500 = 2/405;  r=1: 3125/5062500 = 1/1620;  r=2: 50000/5062500 = 4/405.
    //   D_0 = 1 + 40960 + 10240 + 40960 = 92161, ⌊2^30·40/92161²⌋ = ⌊5.06⌋ = 5 → 205.
    //   D_1 = 1 + 81920 + 20480 + 81920 = 184321, ⌊2^30·20/184321²⌋ = ⌊0.63⌋ = 0 → stall.
    //   D_2 = 1 + 20480 + 5120 + 20480 = 46081, ⌊2^30·20/46081²⌋ = ⌊10.11⌋ = 10 → 103.
    Vector {
        name: "K2",
        w: &[40, 20, 20],
        rtt: &[0.04, 0.08, 0.02],
        inc: &[(2, 405), (1, 1620), (4, 405)],
        kernel_step: &[5, 0, 10],
        acks_per_packet: &[Some(205), None, Some(103)],
    },
    // K3: S = 100/0.05 + 60/0.1 + 30/0.2 = 2000 + 600 + 150 = 2750, S² = 7562500.
    //   r=0: 40000/7562500 = 16/3025;  r=1: 6000/7562500 = 12/15125;  r=2: 750/7562500 = 3/30250.
    //   D_0 = 1 + 102400 + 30720 + 7680 = 140801, ⌊2^30·100/140801²⌋ = ⌊5.42⌋ = 5 → 205.
    //   D_1 = 1 + 204800 + 61440 + 15360 = 281601, ⌊2^30·60/281601²⌋ = ⌊0.81⌋ = 0 → stall.
    //   D_2 = 563201, ⌊2^30·30/563201²⌋ = 0 → stall.
    Vector {
        name: "K3",
        w: &[100, 60, 30],
        rtt: &[0.05, 0.1, 0.2],
        inc: &[(16, 3025), (12, 15125), (3, 30250)],
        kernel_step: &[5, 0, 0],
        acks_per_packet: &[Some(205), None, None],
    },
    // K4 (odd windows): S = 15/0.03 + 7/0.06 + 3/0.01 = 500 + 350/3 + 300 = 2750/3,
    //   S² = 7562500/9.  r=0: (15/0.0009)·9/7562500 = 150000/7562500 = 12/605;
    //   r=1: (7/0.0036)·9/7562500 = 17500/7562500 = 7/3025;
    //   r=2: (3/0.0001)·9/7562500 = 270000/7562500 = 108/3025.
    //   D_0 = 1 + 15360 + ⌊7168/2⌋ + 3072·3 = 28161, ⌊2^30·15/28161²⌋ = ⌊20.3⌋ = 20 → 52.
    //   D_1 = 1 + 30720 + 7168 + 18432 = 56321, ⌊2^30·7/56321²⌋ = ⌊2.37⌋ = 2 → 512.
    //   D_2 = 1 + 5120 + ⌊7168/6⌋ + 3072 = 9387, ⌊2^30·3/9387²⌋ = ⌊36.56⌋ = 36 → 29.
    Vector {
        name: "K4",
        w: &[15, 7, 3],
        rtt: &[0.03, 0.06, 0.01],
        inc: &[(12, 605), (7, 3025), (108, 3025)],
        kernel_step: &[20, 2, 36],
        acks_per_packet: &[Some(52), Some(512), Some(29)],
    },
];

fn windows(v: &Vector) -> Vec<f64> {
    v.w.iter().map(|&w| w as f64).collect()
}

fn kernel_samples(v: &Vector) -> Vec<KernelOliaSample> {
    (0..v.w.len())
        .map(|i| KernelOliaSample {
            cwnd: v.w[i],
            srtt_us: vec_srtt_us(v.rtt[i]),
            loss_interval: 0,
        })
        .collect()
}

/// A controller whose paths sit at windows `w` (packets) in congestion avoidance.
fn kv(arithmetic: Arithmetic, w: &[u64]) -> KellyVoice {
    let mut c = KellyVoiceConfig::new()
        .arithmetic(arithmetic)
        .build()
        .unwrap();
    add_paths(&mut c, w.len(), MSS);
    for (i, &wi) in w.iter().enumerate() {
        c.force(i, wi * MSS, wi * MSS);
    }
    c
}

#[test]
fn vectors_spec_increase_per_packet() {
    for v in VECTORS {
        let s = samples(&windows(v), v.rtt);
        for (r, &(num, den)) in v.inc.iter().enumerate() {
            let want = num as f64 / den as f64;
            assert_close(increase_per_ack(&s, r), want, 1e-12, v.name);
            // The same in bytes through the controller: one ACK of one segment adds
            // Δw_r·MSS bytes of credit.
            let vs = views(v.rtt, MSS);
            let mut c = kv(Arithmetic::Spec, v.w);
            c.on_ack(PathId(r as u32), &ack(MSS), &Paths(&vs));
            let credit = c.subflow(r).unwrap().credit();
            assert_close(credit, want * MSS as f64, 1e-9, v.name);
        }
    }
}

#[test]
fn vectors_loss_halves_the_window_of_the_lossy_path_only() {
    for v in VECTORS {
        let vs = views(v.rtt, MSS);
        let paths = Paths(&vs);
        for r in 0..v.w.len() {
            let p = PathId(r as u32);
            // Spec: w_r ← w_r/2 in bytes (15 packets → 7500 bytes), with RFC 5681's floor of
            // 2·MSS (3 packets → 2000 bytes, not 1500).
            let mut c = kv(Arithmetic::Spec, v.w);
            c.on_congestion_event(p, &loss(), &paths);
            let want = (v.w[r] * MSS / 2).max(2 * MSS);
            assert_eq!(c.window(p), Bytes(want), "{} path {r}", v.name);
            for k in (0..v.w.len()).filter(|&k| k != r) {
                assert_eq!(c.window(PathId(k as u32)), Bytes(v.w[k] * MSS));
            }
            // Linux: tcp_reno_ssthresh, max(⌊w/2⌋, 2) packets (K4: 15 → 7, 7 → 3, 3 → 2).
            let mut c = kv(Arithmetic::Linux, v.w);
            c.on_congestion_event(p, &loss(), &paths);
            let want = (v.w[r] / 2).max(2) * MSS;
            assert_eq!(c.ssthresh(p), Some(Bytes(want)), "{} path {r}", v.name);
        }
    }
}

#[test]
fn vectors_linux_counter_step_and_acks_per_packet() {
    for v in VECTORS {
        let k = kernel_samples(v);
        let vs = views(v.rtt, MSS);
        let paths = Paths(&vs);
        for r in 0..v.w.len() {
            let step = kernel_counter_delta_no_epsilon(&k, r);
            assert_eq!(step, v.kernel_step[r], "{} path {r}", v.name);
            let p = PathId(r as u32);
            let mut c = kv(Arithmetic::Linux, v.w);
            let before = c.window(p);
            let mut events = 0u64;
            while c.window(p) == before && events < 3000 {
                c.on_ack(p, &ack(MSS), &paths);
                events += 1;
            }
            match v.acks_per_packet[r] {
                Some(n) => {
                    assert_eq!(events, n, "{} path {r}", v.name);
                    assert_eq!(c.window(p), Bytes(before.0 + MSS));
                }
                None => assert_eq!(c.window(p), before, "{} path {r}: stall", v.name),
            }
        }
    }
}

#[test]
fn single_path_behaves_like_reno() {
    // Every 97 events: a loss, an ACK inside recovery, the end of recovery, and late in each
    // cycle a timeout (repeated in the later cycles); acknowledgements of one or two segments
    // in between, so slow start, recovery and congestion avoidance all occur.
    let ops: Vec<Op> = (0..500u64)
        .map(|k| match k % 97 {
            40 => Op::Loss,
            41 => Op::Ack {
                bytes: MSS,
                in_recovery: true,
            },
            45 => Op::RecoveryEnd,
            90 => Op::Rto { repeated: k > 250 },
            _ => Op::Ack {
                bytes: MSS * (1 + k % 2),
                in_recovery: false,
            },
        })
        .collect();
    for a in [Arithmetic::Spec, Arithmetic::Linux] {
        for idle_sibling in [false, true] {
            let c = KellyVoiceConfig::new().arithmetic(a).build().unwrap();
            assert_same_as_reno(c, MSS, 2, &ops, idle_sibling);
        }
    }
}

/// Window pairs (packets) at equal RTTs.
const EQUAL_RTT_PAIRS: &[[u64; 2]] = &[[10, 10], [30, 10], [12, 10], [7, 3], [2, 98]];

#[test]
fn equal_rtts_increase_is_olias_first_term_exactly() {
    let rtt = [0.1, 0.1];
    let vs = views(&rtt, MSS);
    let paths = Paths(&vs);
    for w in EQUAL_RTT_PAIRS {
        let wf = [w[0] as f64, w[1] as f64];
        // ℓ larger on the larger window, by far more than the ACKs below add: the best path
        // stays in M, so B\M = ∅ and ε = 0.
        let l = [w[0] as f64 * 1e8, w[1] as f64 * 1e8];
        let os: Vec<OliaSample> = (0..2)
            .map(|i| OliaSample {
                window: wf[i],
                rtt: rtt[i],
                loss_interval: l[i],
            })
            .collect();
        let s = samples(&wf, &rtt);
        for r in 0..2 {
            assert_eq!(olia::epsilon(&os, r, 2), 0.0, "{w:?}");
            let first_term = olia::increase_per_ack(&os, r, 0.0);
            assert_eq!(increase_per_ack(&s, r), first_term, "{w:?} path {r}");
            // With equal RTTs the first term is w_r/W².
            let total = wf[0] + wf[1];
            assert_close(first_term, wf[r] / (total * total), 1e-12, "w_r/W²");
        }
        // The controllers agree, to the bit, on the growth one ACK makes.
        for r in 0..2 {
            let p = PathId(r as u32);
            let mut o = OliaConfig::new().build().unwrap();
            add_paths(&mut o, 2, MSS);
            for i in 0..2 {
                o.force(i, w[i] * MSS, w[i] * MSS, l[i] as u64);
            }
            o.on_ack(p, &ack(MSS), &paths);
            assert_eq!(o.metrics(p).epsilon, Some(0.0));
            let mut c = kv(Arithmetic::Spec, w);
            c.on_ack(p, &ack(MSS), &paths);
            let (o_credit, c_credit) = (
                o.subflow(r).unwrap().0.credit(),
                c.subflow(r).unwrap().credit(),
            );
            assert_eq!(c_credit, o_credit, "{w:?} path {r}");
        }
        // Linux: the same counter step, so the first packet of growth comes at the same ACK
        // (or neither grows). After it OLIA's sets change (M = {r}) and ε no longer vanishes.
        for r in 0..2 {
            let p = PathId(r as u32);
            let mut o = OliaConfig::new()
                .arithmetic(Arithmetic::Linux)
                .build()
                .unwrap();
            add_paths(&mut o, 2, MSS);
            for i in 0..2 {
                o.force(i, w[i] * MSS, w[i] * MSS, l[i] as u64);
            }
            let mut c = kv(Arithmetic::Linux, w);
            let before = c.window(p);
            for _ in 0..1500 {
                o.on_ack(p, &ack(MSS), &paths);
                c.on_ack(p, &ack(MSS), &paths);
                assert_eq!(c.window(p), o.window(p), "{w:?} path {r}");
                if c.window(p) != before {
                    break;
                }
            }
        }
    }
}

#[test]
fn equal_rtts_increase_is_balias_with_alpha_one() {
    let rtt = [0.1, 0.1];
    for w in EQUAL_RTT_PAIRS {
        let wf = [w[0] as f64, w[1] as f64];
        let s = samples(&wf, &rtt);
        let x: Vec<f64> = (0..2).map(|i| wf[i] / rtt[i]).collect();
        let total = x[0] + x[1];
        for r in 0..2 {
            let kv_inc = increase_per_ack(&s, r);
            // Peng et al. (draft-walid-mptcp-congestion-control-04 §3), α_r set to 1:
            // x_r/(rtt_r·X²)·(1+α_r)/2·(4+α_r)/5 = x_r/(rtt_r·X²).
            let alpha_one = 1.0;
            let draft =
                x[r] / (rtt[r] * total * total) * (1.0 + alpha_one) / 2.0 * (4.0 + alpha_one) / 5.0;
            assert_close(kv_inc, draft, 1e-12, "Balia with α_r = 1");
            // Balia's own code: on the path of the largest rate α_r = 1 and the increases
            // agree; on a slower path α_r > 1 and Balia grows faster than Kelly–Voice.
            let a = balia::alpha(&s, r).unwrap();
            let b_inc = balia::increase_per_ack(&s, r);
            if a == 1.0 {
                assert_close(b_inc, kv_inc, 1e-12, "Balia at α_r = 1");
            } else {
                assert!(a > 1.0 && b_inc > kv_inc, "{w:?} path {r}: α = {a}");
            }
        }
    }
    // Through the controllers, at equal windows (α_r = 1 on both paths).
    let vs = views(&rtt, MSS);
    let paths = Paths(&vs);
    let mut b = BaliaConfig::new().build().unwrap();
    add_paths(&mut b, 2, MSS);
    b.force(0, 10 * MSS, 10 * MSS);
    b.force(1, 10 * MSS, 10 * MSS);
    let mut c = kv(Arithmetic::Spec, &[10, 10]);
    b.on_ack(PathId(0), &ack(MSS), &paths);
    c.on_ack(PathId(0), &ack(MSS), &paths);
    assert_eq!(b.metrics(PathId(0)).alpha, Some(1.0));
    let (b_credit, c_credit) = (
        b.subflow(0).unwrap().0.credit(),
        c.subflow(0).unwrap().credit(),
    );
    assert_close(c_credit, b_credit, 1e-12, "credit");
    assert_close(
        c_credit,
        10.0 / 400.0 * MSS as f64,
        1e-12,
        "w/W² per packet",
    );
}

#[test]
fn a_small_path_grows_in_proportion_to_its_share_unlike_fully_coupled() {
    // Equal RTTs, w = (2, 98): Kelly–Voice adds w_r/W² = 2/10^4 per packet, 4/10^4 per round
    // trip; the fully coupled rule adds 1/W = 1/100 per packet, 2/100 per round trip.
    let s = samples(&[2.0, 98.0], &[0.05, 0.05]);
    assert_close(increase_per_ack(&s, 0), 2e-4, 1e-12, "w_r/W²");
    let fc = fully_coupled_increase(1.0, 100.0);
    assert_close(
        increase_per_ack(&s, 0) / fc,
        2.0 / 100.0,
        1e-12,
        "ratio w_r/W",
    );
}

#[test]
fn per_ack_event_counting_counts_one_packet_per_ack() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut per_packet = kv(Arithmetic::Spec, &[10, 10]);
    per_packet.on_ack(PathId(0), &ack(2 * MSS), &paths);
    let mut c = KellyVoiceConfig::new()
        .counting(Counting::PerAckEvent)
        .build()
        .unwrap();
    add_paths(&mut c, 2, MSS);
    c.force(0, 10 * MSS, 10 * MSS);
    c.force(1, 10 * MSS, 10 * MSS);
    c.on_ack(PathId(0), &ack(2 * MSS), &paths);
    // 10/20² = 1/40 packet per counted packet: 50 bytes for two packets, 25 for one event.
    assert_close(
        per_packet.subflow(0).unwrap().credit(),
        50.0,
        1e-9,
        "per packet",
    );
    assert_close(c.subflow(0).unwrap().credit(), 25.0, 1e-9, "per ACK event");
    assert_eq!(c.config().counting_mode(), Counting::PerAckEvent);
}

#[test]
fn a_path_in_recovery_counts_with_its_ssthresh() {
    let vs = views(&[0.1, 0.1], MSS);
    let paths = Paths(&vs);
    let mut c = kv(Arithmetic::Spec, &[10, 20]);
    c.on_congestion_event(PathId(1), &loss(), &paths);
    assert!(c.subflow(1).unwrap().in_recovery);
    // Path 1 counts as its ssthresh, 10: the increase on path 0 is 10/20² per packet.
    c.on_ack(PathId(0), &ack(MSS), &paths);
    assert_close(c.subflow(0).unwrap().credit(), 25.0, 1e-9, "credit");
    // No growth from ACKs in recovery.
    let before = c.window(PathId(1));
    for _ in 0..100 {
        let a = Ack {
            in_recovery: true,
            cwnd_limited: true,
            ..ack(MSS)
        };
        c.on_ack(PathId(1), &a, &paths);
    }
    assert_eq!(c.window(PathId(1)), before);
}

#[test]
fn linux_arithmetic_is_accepted_and_reported() {
    let c = KellyVoiceConfig::new().arithmetic(Arithmetic::Linux);
    assert!(c.build().is_ok());
    assert_eq!(c.arithmetic_mode(), Arithmetic::Linux);
    assert_eq!(c.counting_mode(), Counting::PerAckEvent);
    let e = KellyVoiceConfig::new()
        .window(WindowConfig::default().initial_window(0))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("initial_window"), "{e}");
}

proptest! {
    /// Kelly–Voice never grows a path faster than Reno would (w_r/rtt_r ≤ S, so
    /// (w_r/rtt_r²)/S² ≤ 1/w_r).
    #[test]
    fn increase_never_exceeds_renos(
        paths in prop::collection::vec((1u32..500, 1u32..400), 1..6),
        r in 0usize..6,
    ) {
        let w: Vec<f64> = paths.iter().map(|p| p.0 as f64).collect();
        let rtt: Vec<f64> = paths.iter().map(|p| p.1 as f64 / 1000.0).collect();
        let s = samples(&w, &rtt);
        let r = r % s.len();
        let inc = increase_per_ack(&s, r);
        prop_assert!(inc > 0.0 && inc <= 1.0 / w[r] * (1.0 + 1e-12), "{} vs {}", inc, 1.0 / w[r]);
    }
}
