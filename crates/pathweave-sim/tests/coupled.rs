//! Coupled multipath congestion control in the simulator, against the design goals of
//! RFC 6356 §2: (1) improve throughput — do at least as well as one TCP on the best path;
//! (2) do no harm — take no more than one TCP from any shared resource.

mod common;
use common::*;

const SHARED: &str = r#"
duration = "100s"
[[link]]
name = "bn"
rate = "20Mbps"
delay = "10ms"
queue = { type = "red", limit = "100pkt", min_th = 10, max_th = 30 }
[[link]]
name = "s{i}"
count = 3
rate = "1Gbps"
delay = "5ms"
queue = { type = "droptail", limit = "10000pkt" }
[[flow]]
name = "mp"
algorithm = "ALG"
subflows = [ { path = ["s0", "bn"] }, { path = ["s1", "bn"] } ]
[[flow]]
name = "reno"
path = ["s2", "bn"]
start = "3ms"
"#;

/// Two subflows and one Reno flow through one bottleneck: a coupled connection takes about
/// one TCP's share, within [0.75, 1.33] of the Reno flow (goal 2).
#[test]
fn coupled_connections_take_one_share_of_a_shared_bottleneck() {
    for alg in [
        "lia",
        "olia",
        "balia",
        "fully-coupled",
        "kelly-voice",
        "ewtcp",
        "rpmp-v2",
        "mptcp-bytes",
        "wvegas",
    ] {
        let r = run(&scenario(&SHARED.replace("ALG", alg)), None);
        let ratio = r.flows.goodput_bps[0] / r.flows.goodput_bps[1];
        println!("{alg}: multipath / Reno = {ratio:.3}");
        assert!(
            (0.75..=1.33).contains(&ratio),
            "{alg}: multipath / Reno = {ratio:.3}"
        );
        assert_eq!(r.flows.algorithm[0], alg);
    }
}

#[test]
fn linux_arithmetic_runs_and_stays_fair_on_a_shared_bottleneck() {
    for alg in ["lia", "olia", "balia", "kelly-voice"] {
        let text = SHARED
            .replace("ALG", alg)
            .replace("algorithm", "arithmetic = \"linux\"\nalgorithm");
        let r = run(&scenario(&text), None);
        let ratio = r.flows.goodput_bps[0] / r.flows.goodput_bps[1];
        println!("{alg} (linux): multipath / Reno = {ratio:.3}");
        assert!(
            (0.5..=1.5).contains(&ratio),
            "{alg} (linux): multipath / Reno = {ratio:.3}"
        );
    }
}

/// Kelly–Voice in both arithmetics: the same seed gives the same run, the two arithmetics are
/// different controllers, and a misspelt name is refused with the choices.
#[test]
fn kelly_voice_runs_are_deterministic_in_both_arithmetics() {
    let text = |arith: &str| {
        SHARED
            .replace("ALG", "kelly-voice")
            .replace("algorithm", &format!("{arith}\nalgorithm"))
    };
    let mut goodput = Vec::new();
    for arith in ["", "arithmetic = \"linux\""] {
        let sc = scenario(&text(arith));
        let (a, b) = (run(&sc, Some(3)), run(&sc, Some(3)));
        assert!(format!("{a:?}") == format!("{b:?}"), "{arith}");
        goodput.push(a.flows.goodput_bps[0]);
    }
    assert_ne!(goodput[0], goodput[1]);
    let e = pathweave_sim::Scenario::parse(&SHARED.replace("ALG", "kelly_voice"), "t.toml", "t")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flow[0].algorithm") && e.contains("kelly-voice"),
        "{e}"
    );
}

const DISJOINT: &str = r#"
duration = "100s"
[[link]]
name = "p{i}"
count = 2
rate = "10Mbps"
delay = "10ms"
queue = { type = "red", limit = "100pkt", min_th = 10, max_th = 30 }
[[link]]
name = "s{i}"
count = 2
rate = "1Gbps"
delay = "5ms"
queue = { type = "droptail", limit = "10000pkt" }
[[link]]
name = "r{i}"
count = 2
rate = "1Gbps"
delay = "5ms"
queue = { type = "droptail", limit = "10000pkt" }
[[flow]]
name = "mp"
algorithm = "ALG"
subflows = [ { path = ["s0", "p0"] }, { path = ["s1", "p1"] } ]
[[flow]]
name = "reno{i}"
count = 2
path = ["r{i}", "p{i}"]
"#;

/// Two disjoint equal paths, each shared with one Reno flow. Goal 1: the connection gets at
/// least 0.9× what the Reno flow on the better path gets. Goal 2: no subflow takes more than
/// the Reno flow on its own link.
#[test]
fn coupled_connections_meet_goals_one_and_two_on_disjoint_paths() {
    for alg in ["lia", "olia", "balia", "ewtcp"] {
        let r = run(&scenario(&DISJOINT.replace("ALG", alg)), None);
        let best = r.flows.goodput_bps[1].max(r.flows.goodput_bps[2]);
        let total = r.flows.goodput_bps[0];
        assert!(
            total >= 0.9 * best,
            "{alg}: total {total:.0} vs best Reno {best:.0}"
        );
        for k in 0..2 {
            let sub = r.subflows.throughput_bps[k];
            let reno = r.flows.throughput_bps[1 + k];
            assert!(
                sub <= reno,
                "{alg}: subflow {k} {sub:.0} above the Reno flow on its link {reno:.0}"
            );
        }
    }
}

/// The fully coupled algorithm runs one AIMD over the total window and halves it on a loss on
/// any path, so it reacts to the sum of the paths' loss rates: with equal loss rates p on two
/// paths it behaves like one TCP at 2p, about 1/√2 ≈ 0.71 of a TCP on either path. That is the
/// shortfall LIA was designed to remove (Wischik et al., NSDI 2011 §2.2).
#[test]
fn fully_coupled_falls_short_of_one_tcp_on_disjoint_paths_as_theory_says() {
    let r = run(&scenario(&DISJOINT.replace("ALG", "fully-coupled")), None);
    let best = r.flows.goodput_bps[1].max(r.flows.goodput_bps[2]);
    let ratio = r.flows.goodput_bps[0] / best;
    assert!(
        (0.65..0.95).contains(&ratio),
        "fully coupled / best Reno = {ratio:.3}"
    );
    let lia = run(&scenario(&DISJOINT.replace("ALG", "lia")), None);
    assert!(lia.flows.goodput_bps[0] > r.flows.goodput_bps[0]);
}

#[test]
fn controller_mistakes_are_named() {
    let base = SHARED.replace("ALG", "lia");
    let cases = [
        (
            "algorithm = \"lia\"",
            "algorithm = \"lia\"\narithmetic = \"kernel\"",
            "flow[0].arithmetic",
        ),
        (
            "algorithm = \"lia\"",
            "algorithm = \"rpmp-v2\"\narithmetic = \"linux\"",
            "flow[0].arithmetic",
        ),
        (
            "algorithm = \"lia\"",
            "algorithm = \"lia\"\ncounting = \"sometimes\"",
            "flow[0].counting",
        ),
        (
            "algorithm = \"lia\"",
            "algorithm = \"wvegas\"\ncounting = \"per-packet\"",
            "flow[0].counting",
        ),
        (
            "algorithm = \"lia\"",
            "algorithm = \"lia2\"",
            "flow[0].algorithm",
        ),
    ];
    for (from, to, field) in cases {
        let text = base.replacen(from, to, 1);
        let e = pathweave_sim::Scenario::parse(&text, "t.toml", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{e}");
    }
}

/// With one subflow, every coupled algorithm is NewReno: the same scenario gives the same
/// results whichever algorithm the flow names.
#[test]
fn one_subflow_coupled_connections_trace_like_reno() {
    let text = |alg: &str| {
        format!(
            r#"
duration = "30s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "20ms"
queue = {{ type = "red", limit = "60pkt", min_th = 5, max_th = 15 }}
[[flow]]
name = "f"
algorithm = "{alg}"
path = ["l"]
"#
        )
    };
    let reno = run(&scenario(&text("reno")), None);
    for alg in ["lia", "olia", "balia", "kelly-voice"] {
        let r = run(&scenario(&text(alg)), None);
        assert_eq!(
            format!("{:?}", r.flow_series),
            format!("{:?}", reno.flow_series),
            "{alg}"
        );
        assert_eq!(r.flows.goodput_bps, reno.flows.goodput_bps, "{alg}");
    }
}

#[test]
fn algorithm_state_appears_in_the_subflow_series() {
    let r = run(&scenario(&SHARED.replace("ALG", "lia")), None);
    let s = &r.subflow_series;
    // Rows of the multipath flow (flow 0); the Reno flow's rows carry no α.
    let mp: Vec<usize> = (0..s.time_s.len())
        .filter(|&k| s.flow[k] == 0 && s.time_s[k] > 10.0)
        .collect();
    let alphas: Vec<f64> = mp.iter().map(|&k| s.alpha[k]).collect();
    assert!(!alphas.is_empty() && alphas.iter().all(|a| a.is_finite() && *a > 0.0));
    let r = run(&scenario(&SHARED.replace("ALG", "olia")), None);
    let s = &r.subflow_series;
    // OLIA (Khalili et al. 2012): with n = 2 paths, ε_r is 1/(n·|B\M|) = 1/2 for a best path
    // without the largest window, −1/(n·|M|) = −1/2 for a max-window path when some best path
    // lacks it, and 0 otherwise. Each subflow reports the ε of its latest update.
    let eps: Vec<f64> = (0..s.time_s.len())
        .filter(|&k| s.flow[k] == 0 && s.time_s[k] > 10.0)
        .map(|k| s.epsilon[k])
        .collect();
    assert!(!eps.is_empty());
    for e in &eps {
        assert!(
            [-0.5, 0.0, 0.5].iter().any(|v| (e - v).abs() < 1e-12),
            "ε = {e}"
        );
    }
    let r = run(&scenario(&SHARED.replace("ALG", "reno")), None);
    assert!(r.subflow_series.alpha.iter().all(|a| a.is_nan()));
}

#[test]
fn lia_with_the_approximate_maximum_runs_and_is_checked() {
    let approx = SHARED.replace("ALG", "lia").replace(
        "algorithm = \"lia\"",
        "algorithm = \"lia\"\nmaximum = \"approximate\"",
    );
    let r = run(&scenario(&approx), None);
    let ratio = r.flows.goodput_bps[0] / r.flows.goodput_bps[1];
    assert!(
        (0.75..=1.33).contains(&ratio),
        "approximate LIA / Reno = {ratio:.3}"
    );
    for (bad, field) in [
        ("maximum = \"roughly\"", "flow[0].maximum"),
        (
            "maximum = \"approximate\"\narithmetic = \"linux\"",
            "flow[0].maximum = \"approximate\": lia: the approximate maximum exists only with \
             arithmetic = \"spec\"",
        ),
    ] {
        let text = SHARED.replace("ALG", "lia").replace(
            "algorithm = \"lia\"",
            &format!("algorithm = \"lia\"\n{bad}"),
        );
        let e = pathweave_sim::Scenario::parse(&text, "t.toml", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{e}");
    }
}
