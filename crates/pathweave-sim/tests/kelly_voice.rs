//! The Kelly–Voice "Coupled" algorithm in the simulator: slow to give a path back its window
//! once competition has left it — the behaviour draft-walid-mptcp-congestion-control-04 §1 reports ("the Coupled
//! algorithm responds slowly in a dynamic network environment", after RFC 6356), and the reason
//! LIA, OLIA and Balia depart from it.

mod common;
use common::*;

/// Two paths into one shared bottleneck `bn` (40 Mbps): path 0 over `a` (60 Mbps) with a
/// round trip of 32 ms, path 1 over `s1` with 60 ms. Five Reno flows cross `a` from 100 s to
/// 160 s, pushing path 0's window down; afterwards path 0 is again as good as before.
const CROSS: &str = r#"
duration = "800s"
sample_interval = "100ms"
[[link]]
name = "bn"
rate = "40Mbps"
delay = "10ms"
queue = { type = "red", limit = "100pkt", min_th = 10, max_th = 30 }
[[link]]
name = "a"
rate = "60Mbps"
delay = "5ms"
queue = { type = "red", limit = "100pkt", min_th = 10, max_th = 30 }
[[link]]
name = "s0"
rate = "1Gbps"
delay = "1ms"
queue = { type = "droptail", limit = "10000pkt" }
[[link]]
name = "s1"
rate = "1Gbps"
delay = "20ms"
queue = { type = "droptail", limit = "10000pkt" }
[[link]]
name = "c{i}"
count = 5
rate = "1Gbps"
delay = "5ms"
queue = { type = "droptail", limit = "10000pkt" }
[[flow]]
name = "mp"
algorithm = "ALG"
subflows = [ { path = ["s0", "a", "bn"] }, { path = ["s1", "bn"] } ]
[[flow]]
name = "cross{i}"
count = 5
path = ["c{i}", "a"]
start = "100s"
stop = "160s"
"#;

const CROSS_START_S: f64 = 100.0;
const CROSS_STOP_S: f64 = 160.0;
const END_S: f64 = 800.0;
/// The simulator's default segment size, in bytes.
const MSS_BYTES: f64 = 1000.0;
/// The undisturbed interval whose mean window is "the average": after slow start, before the
/// cross traffic.
const BEFORE_S: (f64, f64) = (20.0, CROSS_START_S);

/// How path 0 of the connection fared: its mean window before the cross traffic, its mean
/// window over the last 20 s of the cross traffic, and the time from the cross traffic's stop
/// until its window first reached that average again (`None`: not by the end of the run).
struct Recovery {
    average_pkts: f64,
    pushed_down_pkts: f64,
    regained_after_s: Option<f64>,
}

fn recovery(alg: &str) -> Recovery {
    let r = run(&scenario(&CROSS.replace("ALG", alg)), None);
    let s = &r.subflow_series;
    let path0: Vec<(f64, f64)> = (0..s.time_s.len())
        .filter(|&k| s.flow[k] == 0 && s.subflow[k] == 0)
        .map(|k| (s.time_s[k], s.cwnd_bytes[k] / MSS_BYTES))
        .collect();
    let mean = |from: f64, to: f64| {
        let w: Vec<f64> = path0
            .iter()
            .filter(|(t, _)| (from..to).contains(t))
            .map(|&(_, w)| w)
            .collect();
        assert!(!w.is_empty(), "{alg}: no samples in [{from}, {to})");
        w.iter().sum::<f64>() / w.len() as f64
    };
    let average_pkts = mean(BEFORE_S.0, BEFORE_S.1);
    Recovery {
        average_pkts,
        pushed_down_pkts: mean(CROSS_STOP_S - 20.0, CROSS_STOP_S),
        regained_after_s: path0
            .iter()
            .find(|&&(t, w)| t >= CROSS_STOP_S && w >= average_pkts)
            .map(|&(t, _)| t - CROSS_STOP_S),
    }
}

/// With equal loss on a path its Kelly–Voice increase per round trip is `x_r²/(rtt_r·S²)`
/// (quadratic in the path's own rate), LIA's `x_r·α/W` (linear), so a path squeezed to a few
/// packets climbs back far more slowly under Kelly–Voice. The draft's claim is qualitative; we
/// ask for at least three times as long. A window that has not regained its average by the
/// end of the run counts with the time to the end, a lower bound on the true time.
#[test]
fn a_squeezed_path_regains_its_window_at_least_three_times_slower_than_under_lia() {
    let lia = recovery("lia");
    let kv = recovery("kelly-voice");
    let censored = END_S - CROSS_STOP_S;
    for (name, r) in [("lia", &lia), ("kelly-voice", &kv)] {
        println!(
            "{name}: path 0 mean window {:.1} pkt over {}–{} s, {:.1} pkt at the end of the \
             cross traffic; regained {}",
            r.average_pkts,
            BEFORE_S.0,
            BEFORE_S.1,
            r.pushed_down_pkts,
            match r.regained_after_s {
                Some(t) => format!("{t:.1} s after it left"),
                None => format!("not within {censored:.0} s (> {censored:.0} s)"),
            }
        );
        // The cross traffic really pushed the path down.
        assert!(
            r.pushed_down_pkts < r.average_pkts / 3.0,
            "{name}: {:.1} vs average {:.1}",
            r.pushed_down_pkts,
            r.average_pkts
        );
    }
    let lia_s = lia.regained_after_s.expect("LIA regains its average");
    let kv_s = kv.regained_after_s.unwrap_or(censored);
    let bound = if kv.regained_after_s.is_none() {
        " (a lower bound)"
    } else {
        ""
    };
    println!(
        "kelly-voice / lia recovery time: {:.1}{bound}",
        kv_s / lia_s
    );
    assert!(
        kv_s >= 3.0 * lia_s,
        "kelly-voice {kv_s:.1} s vs lia {lia_s:.1} s"
    );
}
