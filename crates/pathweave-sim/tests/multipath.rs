//! Multipath connections: subflows on their own routes, the data sequence reassembled at the
//! receiver, the scheduler, finite receive buffers, subflows joining and leaving.

mod common;
use common::*;

const TWO_PATHS: &str = r#"
duration = "30s"
[tcp]
recovery = "sack"
RECEIVE
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
queue = { type = "droptail", limit = "40pkt" }
LOSS
[[link]]
name = "b"
rate = "5Mbps"
delay = "30ms"
queue = { type = "droptail", limit = "40pkt" }
LOSS
[[flow]]
name = "mp"
algorithm = "reno"
TRAFFIC
subflows = [ { path = ["a"] }, { path = ["b"] SUB2 } ]
"#;

fn two_paths(receive: &str, loss: &str, traffic: &str, sub2: &str) -> String {
    TWO_PATHS
        .replace("RECEIVE", receive)
        .replace("LOSS", loss)
        .replace("TRAFFIC", traffic)
        .replace("SUB2", sub2)
}

/// A two-subflow connection ("mp") and a Reno flow on one 20 Mbit/s RED bottleneck.
fn one_bottleneck(duration: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[[link]]
name = "bn"
rate = "20Mbps"
delay = "10ms"
queue = {{ type = "red", limit = "100pkt", min_th = 10, max_th = 30 }}
[[link]]
name = "s{{i}}"
count = 3
rate = "1Gbps"
delay = "5ms"
queue = {{ type = "droptail", limit = "10000pkt" }}
[[flow]]
name = "mp"
subflows = [ {{ path = ["s0", "bn"] }}, {{ path = ["s1", "bn"] }} ]
[[flow]]
name = "reno"
path = ["s2", "bn"]
start = "3ms"
"#
    )
}

/// Uncoupled Reno on two disjoint paths fills both: the connection's goodput approaches the
/// sum of the two payload rates, and each subflow carries about its own path's rate.
#[test]
fn uncoupled_subflows_on_disjoint_paths_add_up() {
    let r = run(&scenario(&two_paths("", "", "", "")), None);
    let payload = 1000.0 / 1040.0;
    let g = r.flows.goodput_bps[0];
    assert!(g > 0.9 * 15e6 * payload && g <= 15e6 * payload, "{g}");
    assert_eq!(r.subflows.flow, [0, 0]);
    assert_eq!(r.subflows.path, ["a", "b"]);
    let (a, b) = (r.subflows.throughput_bps[0], r.subflows.throughput_bps[1]);
    assert!(a > 0.9 * 10e6 * payload && a <= 10e6 * payload, "{a}");
    assert!(b > 0.9 * 5e6 * payload && b <= 5e6 * payload, "{b}");
}

/// A sized transfer over two lossy subflows, with a small receive buffer and the second
/// subflow leaving midway: every byte arrives exactly once and in data-sequence order.
#[test]
fn a_transfer_survives_loss_a_small_buffer_and_a_subflow_leaving() {
    let text = two_paths(
        "receive_buffer = \"60KB\"",
        "loss = 0.01",
        "traffic = { type = \"transfer\", size = \"4000500B\" }",
        ", stop = \"2s\"",
    );
    let r = run(&scenario(&text), Some(4));
    assert_eq!(
        r.flows.delivered_bytes[0], 4_000_500,
        "every byte delivered once"
    );
    assert!(
        r.flows.completion_s[0].is_finite(),
        "the transfer completed"
    );
    // The second subflow carried data before it left; the first finished the job.
    assert!(r.subflows.acked_bytes[1] > 0);
    assert!(r.subflows.acked_bytes[0] > r.subflows.acked_bytes[1]);
}

#[test]
fn a_subflow_that_joins_later_carries_nothing_before_it_joins() {
    let text = two_paths("", "", "", ", start = \"10s\"").replace("sample_interval", "x");
    let text = text.replace(
        "duration = \"30s\"",
        "duration = \"30s\"\nsample_interval = \"1s\"",
    );
    let r = run(&scenario(&text), None);
    let s = &r.subflow_series;
    for k in 0..s.time_s.len() {
        if s.subflow[k] == 1 {
            assert!(
                s.time_s[k] > 10.0,
                "subflow 1 sampled before joining at {}",
                s.time_s[k]
            );
        }
    }
    let late = (0..s.time_s.len()).filter(|&k| s.subflow[k] == 1 && s.time_s[k] > 15.0);
    assert!(late.map(|k| s.rate_bps[k]).sum::<f64>() > 0.0);
}

/// A finite receive buffer bounds what the sender may have outstanding beyond the data ACK:
/// with a buffer far below the bandwidth-delay product the connection is window-limited.
#[test]
fn a_small_receive_buffer_limits_the_connection() {
    let open = run(&scenario(&two_paths("", "", "", "")), None);
    let tight = run(
        &scenario(&two_paths("receive_buffer = \"20KB\"", "", "", "")),
        None,
    );
    // 20 segments per smallest RTT (20 ms) bound the rate at 20·8000 bit / 20 ms = 8 Mbps.
    let g = tight.flows.goodput_bps[0];
    assert!(g < 8.0e6 * 1.01, "{g}");
    assert!(g < 0.7 * open.flows.goodput_bps[0]);
}

/// Uncoupled Reno subflows sharing one bottleneck with a Reno flow take about twice its share
/// (the unfairness coupled algorithms exist to remove).
#[test]
fn uncoupled_subflows_on_one_bottleneck_take_twice_a_single_flow() {
    let r = run(&scenario(&one_bottleneck("100s")), None);
    let ratio = r.flows.goodput_bps[0] / r.flows.goodput_bps[1];
    assert!(ratio > 1.6, "multipath / single = {ratio:.3}");
}

#[test]
fn round_robin_spreads_new_data_evenly_over_equal_paths() {
    let text = r#"
duration = "20s"
[tcp]
scheduler = "roundrobin"
[[link]]
name = "p{i}"
count = 2
rate = "10Mbps"
delay = "10ms"
queue = { type = "droptail", limit = "30pkt" }
[[flow]]
name = "mp"
subflows = [ { path = ["p0"] }, { path = ["p1"] } ]
"#;
    let r = run(&scenario(text), None);
    let (a, b) = (
        r.subflows.acked_bytes[0] as f64,
        r.subflows.acked_bytes[1] as f64,
    );
    assert!((a / b - 1.0).abs() < 0.05, "{a} vs {b}");
}

#[test]
fn multipath_scenario_mistakes_are_named() {
    let bad = [
        ("subflows = []", "flow[0].subflows"),
        (
            "subflows = [ { path = [\"nope\"] } ]",
            "flow[0].subflows[0].path[0]",
        ),
        (
            "subflows = [ { path = [\"a\"], start = \"99s\" } ]",
            "flow[0].subflows[0].start",
        ),
        (
            "subflows = [ { path = [\"a\"], colour = 1 } ]",
            "flow[0].subflows[0].colour",
        ),
        (
            "path = [\"a\"]\nsubflows = [ { path = [\"a\"] } ]",
            "flow[0].path",
        ),
    ];
    for (flow_line, field) in bad {
        let text = format!(
            "duration = \"10s\"\n[[link]]\nname = \"a\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n[[flow]]\nname = \"f\"\n{flow_line}\n"
        );
        let e = pathweave_sim::Scenario::parse(&text, "t.toml", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{e}");
    }
}

/// Every data packet a link drops belongs to exactly one subflow: on disjoint paths each
/// subflow's drops are its own link's, on a shared bottleneck the subflows' and the single
/// flow's drops add up to the bottleneck's, and a flow's drops are its subflows' sum.
#[test]
fn each_subflow_counts_the_drops_of_its_own_packets() {
    let link_drops = |r: &pathweave_sim::Results, name: &str| {
        let l = link_row(r, name);
        r.links.drops_overflow[l]
            + r.links.drops_early[l]
            + r.links.drops_forced[l]
            + r.links.drops_wire[l]
    };
    let r = run(&scenario(&two_paths("", "loss = 0.001", "", "")), None);
    let (a, b) = (link_drops(&r, "a"), link_drops(&r, "b"));
    assert!(a > 0 && b > 0, "both paths drop: {a}, {b}");
    assert_eq!(r.subflows.drops, [a, b]);
    assert_eq!(r.flows.drops[0], a + b);

    let r = run(&scenario(&one_bottleneck("20s")), None);
    let bn = link_drops(&r, "bn");
    assert!(
        r.subflows.drops.iter().all(|&d| d > 0),
        "{:?}",
        r.subflows.drops
    );
    assert_eq!(r.subflows.drops.iter().sum::<u64>(), bn);
    assert_eq!(r.flows.drops[0], r.subflows.drops[0] + r.subflows.drops[1]);
    assert_eq!(r.flows.drops[1], r.subflows.drops[2]);
}

/// `mptcp_options = true`: an MPTCP connection's segments give the DSS option's 24 bytes of
/// their payload to it (RFC 8684 §3.3, as Linux sends it), so the wire size stays
/// `mss + header` and the payload is `mss − 24`; its ACKs grow by the 8-byte data ACK. Flows
/// that are plain TCP keep their settings; a one-path flow of a multipath algorithm is an
/// MPTCP connection too.
#[test]
fn mptcp_options_take_the_dss_option_out_of_each_segment() {
    let text = r#"
duration = "10s"
[tcp]
mptcp_options = true
[[link]]
name = "l{i}"
count = 2
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "mp"
subflows = [ { path = ["l0"] }, { path = ["l1"] } ]
[[flow]]
name = "tcp"
path = ["l0"]
[[flow]]
name = "lia1"
algorithm = "lia"
path = ["l1"]
[[flow]]
name = "veno"
algorithm = "veno"
path = ["l1"]
"#;
    let sc = scenario(text);
    let settings: Vec<(u32, u32, u32, bool)> = sc
        .flows
        .iter()
        .map(|f| match &f.kind {
            pathweave_sim::scenario::FlowKind::Tcp { cfg, .. } => {
                (cfg.mss, cfg.header, cfg.ack_size, f.runs_as_mptcp())
            }
            _ => unreachable!("every flow is TCP"),
        })
        .collect();
    assert_eq!(
        settings,
        [
            (976, 64, 48, true),
            (1000, 40, 40, false),
            (976, 64, 48, true),
            (1000, 40, 40, false)
        ]
    );
    // Without the setting nothing changes, MPTCP or not.
    let plain = scenario(&text.replace("mptcp_options = true", ""));
    for f in &plain.flows {
        let pathweave_sim::scenario::FlowKind::Tcp { cfg, .. } = &f.kind else {
            unreachable!()
        };
        assert_eq!((cfg.mss, cfg.header, cfg.ack_size), (1000, 40, 40));
    }
}

/// On two disjoint paths alone, uncoupled subflows fill both links with packets of the same
/// wire size either way, so with the option each packet carries 976 of its 1040 bytes as
/// payload instead of 1000: the goodput bound falls from 15 Mbit/s × 1000/1040 to
/// 15 Mbit/s × 976/1040, which the run without the option exceeds. A sized transfer still
/// arrives exactly, in segments of 976 bytes.
#[test]
fn mptcp_options_cost_the_option_bytes_of_goodput_and_nothing_else() {
    let with = |t: &str| t.replace("[tcp]", "[tcp]\nmptcp_options = true");
    let plain = run(&scenario(&two_paths("", "", "", "")), None);
    let opt = run(&scenario(&with(&two_paths("", "", "", ""))), None);
    let bound = |payload: f64| 15e6 * payload / 1040.0;
    let (g0, g1) = (plain.flows.goodput_bps[0], opt.flows.goodput_bps[0]);
    assert!(g0 > bound(976.0) && g0 <= bound(1000.0), "{g0}");
    assert!(g1 > 0.9 * bound(976.0) && g1 <= bound(976.0), "{g1}");
    // Every packet on the wire is still mss + header = 1040 bytes.
    let a = link_row(&opt, "a");
    assert_eq!(
        opt.links.delivered_bytes[a],
        1040 * opt.links.delivered_packets[a]
    );

    let size = 4_000_500u64;
    let text = with(&two_paths(
        "",
        "loss = 0.01",
        &format!("traffic = {{ type = \"transfer\", size = \"{size}B\" }}"),
        "",
    ));
    let r = run(&scenario(&text), Some(4));
    assert_eq!(
        r.flows.delivered_bytes[0], size,
        "every byte delivered once"
    );
    let first_sends =
        r.subflows.packets_sent.iter().sum::<u64>() - r.subflows.retransmits.iter().sum::<u64>();
    assert_eq!(first_sends, size.div_ceil(976), "segments of 976 bytes");
}
