//! Tests of RP-MP v2 and MPTCP in bytes: the RPv2 vectors (R1, R2), and behaviour named by test.

use super::*;
use crate::cc::multipath::lia;
use crate::cc::multipath::test_support::{
    ack, add_paths, assert_close, assert_same_as_reno, cases, loss, num, nums, samples, views, Op,
};

const MTU: u64 = 1500;

fn rpmp(cfg: RpMpConfig, c: &[f64]) -> RpMpV2 {
    let mut x = cfg.build().unwrap();
    add_paths(&mut x, c.len(), MTU);
    for (i, &ci) in c.iter().enumerate() {
        x.force(i, ci as u64, ci as u64);
    }
    x
}

#[test]
fn vectors_rpv2_share_increase_and_decreases() {
    for case in cases("RPv2") {
        let (c, rtt) = (nums(&case["c_bytes"]), nums(&case["rtt"]));
        let s = samples(&c, &rtt);
        for (p, pp) in case["out"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let i = share(&s, p).unwrap();
            assert_close(i, num(&pp["share"]), 1e-12, "share");
            let inc = ca_increase(MTU as f64, i);
            assert_close(inc, num(&pp["ca_inc_bytes_per_cwnd_acked"]), 1e-9, "CA inc");
            let fr = fr_ssthresh(&s, p, MTU as f64).unwrap();
            assert_close(fr, num(&pp["fr_new_ssthresh"]), 1e-9, "FR ssthresh");
            let (amount, left) = paper_decrease(&s, p, MTU as f64).unwrap();
            assert_close(amount, num(&pp["paper_decrease_amount"]), 1e-9, "paper d_P");
            assert_close(left, num(&pp["paper_new_cwnd"]), 1e-9, "paper window");
        }
    }
}

#[test]
fn vectors_rpv2_controller_grows_and_decreases_as_the_reference() {
    for case in cases("RPv2") {
        let (c, rtt) = (nums(&case["c_bytes"]), nums(&case["rtt"]));
        let vs = views(&rtt, MTU);
        let paths = Paths(&vs);
        for (p, pp) in case["out"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let id = PathId(p as u32);
            let mut x = rpmp(RpMpConfig::new(), &c);
            for _ in 0..(c[p] as u64).div_ceil(MTU) {
                x.on_ack(id, &ack(MTU), &paths);
            }
            let grown = x.window(id).0 as f64 - c[p];
            let want = num(&pp["ca_inc_bytes_per_cwnd_acked"]).floor();
            assert_eq!(grown, want, "{} path {p}", case["state"]);
            let mut x = rpmp(RpMpConfig::new(), &c);
            x.on_congestion_event(id, &loss(), &paths);
            let ss = x.ssthresh(id).unwrap().0 as f64;
            assert_eq!(ss, num(&pp["fr_new_ssthresh"]).floor());
            let mut x = rpmp(RpMpConfig::new().decrease(RpMpDecrease::Paper), &c);
            x.on_congestion_event(id, &loss(), &paths);
            assert_eq!(x.window(id).0 as f64, num(&pp["paper_new_cwnd"]).floor());
        }
    }
}

#[test]
fn rpv2_timeout_subtracts_from_the_total_window() {
    // Equal RTTs, c = (30000, 15000): Δ = C/2, so ssthresh = C − C/2 = 22500 for either path,
    // then the C/2 rule leaves it (c_P − C/2 is smaller).
    let s = samples(&[30_000.0, 15_000.0], &[0.05, 0.05]);
    assert_close(
        rto_ssthresh(&s, 0, 1500.0).unwrap(),
        22_500.0,
        1e-9,
        "rto 0",
    );
    assert_close(
        rto_ssthresh(&s, 1, 1500.0).unwrap(),
        22_500.0,
        1e-9,
        "rto 1",
    );
    let vs = views(&[0.05, 0.05], MTU);
    let paths = Paths(&vs);
    let mut x = rpmp(RpMpConfig::new(), &[30_000.0, 15_000.0]);
    let rto = |repeated| Rto {
        now: Instant::ZERO,
        repeated,
    };
    x.on_rto(PathId(1), &rto(false), &paths);
    assert_eq!(x.ssthresh(PathId(1)), Some(Bytes(22_500)));
    assert_eq!(x.window(PathId(1)), Bytes(MTU));
    x.on_rto(PathId(1), &rto(true), &paths);
    assert_eq!(x.ssthresh(PathId(1)), Some(Bytes(22_500)));
}

#[test]
fn rpv2_slow_start_is_scaled_by_the_share_unless_asked_not_to() {
    let vs = views(&[0.05, 0.05], MTU);
    let paths = Paths(&vs);
    let mut x = RpMpConfig::new().build().unwrap();
    add_paths(&mut x, 2, MTU);
    x.on_ack(PathId(0), &ack(MTU), &paths); // equal windows: share ½
    assert_eq!(x.window(PathId(0)), Bytes(2 * MTU + MTU / 2));
    let mut x = RpMpConfig::new()
        .slow_start(SlowStart::Uncoupled)
        .build()
        .unwrap();
    add_paths(&mut x, 2, MTU);
    x.on_ack(PathId(0), &ack(MTU), &paths);
    assert_eq!(x.window(PathId(0)), Bytes(3 * MTU));
}

#[test]
fn mptcp_alpha_is_lia_alpha_over_the_total_window() {
    let w = [30.0, 20.0];
    let rtt = [0.05, 0.1];
    let s = samples(&w, &rtt);
    let a = mptcp_alpha(&s).unwrap();
    assert_close(a * 50.0, lia::alpha(&s).unwrap(), 1e-12, "α·W = LIA α");
    // Per window acknowledged: α·c_P bytes = (α/W)·w_P packets, LIA's per-RTT increase.
    assert_close(
        mptcp_ca_increase(a, 30.0 * 1500.0, 1500.0),
        a * 45_000.0,
        1e-12,
        "inc",
    );
    assert_eq!(mptcp_ca_increase(1.0, 1e9, 1500.0), 1500.0);
    assert_eq!(mptcp_ss_increase(3000.0, 0.5, 1500.0, 2.0), 1500.0);
}

#[test]
fn mptcp_bytes_grows_lia_rate_per_window_and_times_out_to_four_mtu() {
    let vs = views(&[0.1, 0.1], MTU);
    let paths = Paths(&vs);
    let mut x = MptcpBytesConfig::new().build().unwrap();
    add_paths(&mut x, 2, MTU);
    x.force(0, 15_000, 15_000);
    x.force(1, 15_000, 15_000);
    for _ in 0..10 {
        x.on_ack(PathId(0), &ack(MTU), &paths);
    }
    // α* = 10/400 per packet: α*·c = 375 bytes per window.
    assert_eq!(x.window(PathId(0)), Bytes(15_375));
    assert_close(x.metrics(PathId(0)).alpha.unwrap(), 0.5, 1e-12, "LIA α");
    let rto = Rto {
        now: Instant::ZERO,
        repeated: false,
    };
    x.force(1, 6 * MTU, 6 * MTU);
    x.on_rto(PathId(1), &rto, &paths); // max(3·MTU, 4·MTU)
    assert_eq!(x.ssthresh(PathId(1)), Some(Bytes(4 * MTU)));
}

#[test]
fn single_path_behaves_like_reno() {
    let mut ops = vec![
        Op::Ack {
            bytes: MTU,
            in_recovery: false,
        };
        200
    ];
    ops.insert(25, Op::Loss);
    ops.insert(26, Op::RecoveryEnd);
    ops.insert(110, Op::Rto { repeated: false });
    assert_same_as_reno(RpMpConfig::new().build().unwrap(), MTU, 2, &ops, true);
    assert_same_as_reno(
        MptcpBytesConfig::new().build().unwrap(),
        MTU,
        2,
        &ops,
        false,
    );
}
