//! Links whose capacity comes from a Mahimahi trace (`rate = { trace = "FILE" }`): the same
//! results as the equivalent constant rate where the two definitions agree, delivery bounded
//! by the trace's opportunities, relative paths, shared loading and refused input.

mod common;

use common::{link_row, run, scenario};
use pathweave_sim::{Scenario, ScenarioError, Simulation};
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes of one delivery opportunity (Mahimahi's `PACKET_SIZE`).
const OPP: u64 = 1504;

/// A fresh directory for this test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pathweave-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write `text` to `dir/name` and return its path as a TOML-ready string.
fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// One opportunity per millisecond for a second: 1504 B × 8 / 1 ms = 12.032 Mbit/s.
fn every_ms() -> String {
    (1..=1000).map(|m| format!("{m}\n")).collect()
}

/// A single link of `rate` (a TOML value) and 10 ms, with the given flow table.
fn one_link(rate: &str, queue: &str, flow: &str, secs: u32) -> String {
    format!(
        "duration = \"{secs}s\"\nsample_interval = \"100ms\"\n[[link]]\nname = \"l\"\n\
         rate = {rate}\ndelay = \"10ms\"\nqueue = {queue}\n[[flow]]\nname = \"f\"\n\
         path = [\"l\"]\n{flow}\n"
    )
}

/// A CBR flow of 1504-byte datagrams at the trace's rate, one per millisecond from time 0:
/// each arrives at an opportunity's millisecond, so the FIFO link starts it at once and ends
/// it 1 ms later, exactly when the trace's next opportunity carries it. Every table and the
/// flow series agree byte for byte (the link series' queue does not: a packet waits in a
/// trace link's queue until its opportunity, as in Mahimahi's).
#[test]
fn full_size_packets_on_a_trace_of_one_opportunity_per_ms_match_12_032_mbps() {
    let d = dir("equal");
    let trace = write(&d, "ms.trace", &every_ms());
    let flow = "traffic = { type = \"cbr\", rate = \"12.032Mbps\", size = \"1504B\" }";
    let q = "{ type = \"droptail\", limit = \"100pkt\" }";
    let fixed = run(&scenario(&one_link("\"12.032Mbps\"", q, flow, 5)), None);
    let traced = run(
        &scenario(&one_link(&format!("{{ trace = {trace:?} }}"), q, flow, 5)),
        None,
    );
    // Compared as printed, where NaN (a CBR flow's mean window) equals NaN.
    let shown = |x: &dyn std::fmt::Debug| format!("{x:?}");
    assert_eq!(shown(&fixed.flows), shown(&traced.flows));
    assert_eq!(shown(&fixed.links), shown(&traced.links));
    assert_eq!(shown(&fixed.flow_series), shown(&traced.flow_series));
    // Datagram k, sent at k ms, leaves at k + 1 ms and arrives at k + 11 ms: those sent by
    // 4989 ms (4990 of them) have arrived at 5 s.
    let l = link_row(&traced, "l");
    assert_eq!(traced.links.rate_bps[l], 12_032_000.0);
    assert_eq!(traced.links.delivered_packets[l], 4990);
    assert_eq!(traced.links.delivered_bytes[l], 4990 * OPP);
}

/// A TCP flow of 1504-byte segments (1464 B of payload and 40 of header) over the trace and
/// over the equivalent constant rate: goodput within 0.5 %.
#[test]
fn tcp_over_a_trace_of_one_opportunity_per_ms_gets_the_goodput_of_12_032_mbps() {
    let d = dir("tcp");
    let trace = write(&d, "ms.trace", &every_ms());
    let flow = "mss = \"1464B\"\nheader = \"40B\"";
    let q = "{ type = \"droptail\", limit = \"60pkt\" }";
    let goodput = |rate: &str| {
        let r = run(&scenario(&one_link(rate, q, flow, 30)), None);
        r.flows.goodput_bps[0]
    };
    let fixed = goodput("\"12.032Mbps\"");
    let traced = goodput(&format!("{{ trace = {trace:?} }}"));
    let payload_capacity = 12_032_000.0 * 1464.0 / 1504.0;
    assert!(fixed > 0.9 * payload_capacity, "{fixed}");
    let diff = (traced - fixed).abs() / fixed;
    assert!(diff < 0.005, "trace {traced} vs constant {fixed}: {diff}");
}

/// The bursty trace: 200 ms of 20 opportunities per ms, then 200 ms of 2, repeating every
/// 400 ms (mean 11 per ms, 132.352 Mbit/s).
fn bursty() -> String {
    let mut s = String::new();
    for m in 1..=400u32 {
        let n = if m <= 200 { 20 } else { 2 };
        for _ in 0..n {
            s.push_str(&format!("{m}\n"));
        }
    }
    s
}

/// Opportunities of the bursty trace in (a, b] ms: 20 at each millisecond m with
/// ((m − 1) mod 400) < 200, else 2.
fn bursty_opportunities(a: u64, b: u64) -> u64 {
    (a + 1..=b)
        .map(|m| if (m - 1) % 400 < 200 { 20 } else { 2 })
        .sum()
}

/// A single TCP flow of 1504-byte packets on the bursty trace: the bytes the link delivers
/// in any 1 s window never exceed the opportunities' bytes in the window the packets left
/// the link (the window 10 ms of delay earlier), and over the run they reach 60 % of them.
#[test]
fn tcp_on_a_bursty_trace_stays_within_its_capacity_and_uses_most_of_it() {
    let d = dir("bursty");
    let trace = write(&d, "bursty.trace", &bursty());
    assert_eq!(bursty_opportunities(0, 400), 4400);
    let text = one_link(
        &format!("{{ trace = {trace:?} }}"),
        "{ type = \"droptail\", limit = \"3000pkt\" }",
        "mss = \"1464B\"\nheader = \"40B\"",
        20,
    );
    let sc = scenario(&text);
    let mut sim = Simulation::new(&sc, None);
    // The forward direction's delivered bytes every 100 ms.
    let mut delivered = vec![0u64];
    for k in 1..=200u64 {
        sim.run_until(pathweave_cc::Instant(k * 100_000_000));
        let r = sim.results();
        delivered.push(r.links.delivered_bytes[link_row(&r, "l")]);
    }
    sim.run();
    sim.check_conservation().unwrap();
    for k in 10..delivered.len() {
        let t = k as u64 * 100;
        let bytes = delivered[k] - delivered[k - 10];
        // Delivered in (t − 1000, t] ms: left the link in (t − 1010, t − 10] ms.
        let cap = bursty_opportunities((t - 1000).saturating_sub(10), t - 10) * OPP;
        assert!(bytes <= cap, "window ending at {t} ms: {bytes} B > {cap} B");
    }
    let total = *delivered.last().unwrap();
    let cap = bursty_opportunities(0, 20_000 - 10) * OPP;
    assert!(
        total as f64 >= 0.6 * cap as f64,
        "{total} B of {cap} B ({:.1} %)",
        100.0 * total as f64 / cap as f64
    );
}

/// The same scenario and seed give the same results, with random loss on a trace link.
#[test]
fn trace_links_are_deterministic() {
    let d = dir("determinism");
    let trace = write(&d, "bursty.trace", &bursty());
    let text = one_link(
        &format!("{{ trace = {trace:?} }}"),
        "{ type = \"red\", limit = \"400pkt\", min_th = \"auto\", max_th = \"auto\", w_q = \"auto\" }",
        "",
        5,
    )
    .replace("delay = \"10ms\"", "delay = \"10ms\"\nloss = 0.01");
    let sc = scenario(&text);
    let a = run(&sc, Some(3));
    let b = run(&scenario(&text), Some(3));
    // Compared as printed, where NaN (the columns Reno does not fill) equals NaN.
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert!(a.links.drops_wire[0] > 0);
}

/// A relative trace path is resolved against the scenario file's directory; the file is read
/// once for every direction and copy that names it, `reverse_trace` gives the reverse
/// direction its own, and the link table's rate is each direction's mean rate.
#[test]
fn traces_resolve_beside_the_scenario_and_are_shared() {
    let d = dir("relative");
    std::fs::create_dir_all(d.join("traces")).unwrap();
    write(&d.join("traces"), "down.trace", &bursty());
    write(&d.join("traces"), "up.trace", "0\n2\n");
    let text = "duration = \"1s\"\n[[link]]\nname = \"l{i}\"\ncount = 3\n\
                rate = { trace = \"traces/down.trace\", reverse_trace = \"traces/up.trace\" }\n\
                delay = \"5ms\"\n[[flow]]\nname = \"f\"\npath = [\"l0\", \"l1\", \"l2\"]\n";
    let file = d.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let sc = Scenario::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let down = sc.links[0].forward.trace.as_ref().unwrap();
    for l in &sc.links {
        assert!(Arc::ptr_eq(down, l.forward.trace.as_ref().unwrap()));
        // 4400 opportunities of 1504 B per 400 ms; 2 per 2 ms.
        assert_eq!(l.forward.rate.bps(), 4400 * OPP * 8 * 1000 / 400);
        assert_eq!(l.reverse.rate.bps(), OPP * 8 * 1000);
    }
    let r = run(&sc, None);
    let row = link_row(&r, "l0");
    assert_eq!(r.links.rate_bps[row], (4400 * OPP * 8 * 1000 / 400) as f64);
    // Parsed from text with no file, the same relative path is looked for in the current
    // directory, and is not there.
    match Scenario::parse(text, "t.toml", "t") {
        Err(ScenarioError::Invalid { field, .. }) => assert_eq!(field, "link[0].rate.trace"),
        other => panic!("{other:?}"),
    }
    assert!(Scenario::parse_in(text, "t.toml", "t", &d).is_ok());
}

/// Each bad trace is refused with one line naming the scenario file, the field, the trace
/// file and what is wrong.
#[test]
fn bad_traces_are_refused_with_one_line() {
    let d = dir("bad");
    let cases: Vec<(String, &str)> = vec![
        (write(&d, "empty.trace", ""), "the trace is empty"),
        (
            write(&d, "word.trace", "1\n2\nfast\n"),
            "line 3: \"fast\" is not",
        ),
        (write(&d, "neg.trace", "1\n-2\n"), "line 2: \"-2\" is not"),
        (
            write(&d, "down.trace", "5\n7\n6\n"),
            "line 3: 6 ms is before",
        ),
        (
            write(&d, "zero.trace", "0\n0\n0\n"),
            "the last timestamp is 0 ms",
        ),
        (
            d.join("absent.trace").display().to_string(),
            "cannot read the file",
        ),
        (d.display().to_string(), "a directory, not a regular file"),
    ];
    for (path, want) in cases {
        let text =
            one_link(&format!("{{ trace = {path:?} }}"), "{}", "", 1).replace("queue = {}\n", "");
        let e = Scenario::parse(&text, "bad.toml", "bad").expect_err(&path);
        let msg = e.to_string();
        assert!(msg.contains(want), "{path}: {msg}");
        assert!(msg.starts_with("bad.toml: link[0].rate.trace = "), "{msg}");
        assert!(msg.contains(&path), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }
}

/// A rate change on a trace link is refused; a delay change and an outage are not.
#[test]
fn a_trace_link_refuses_rate_changes_only() {
    let d = dir("events");
    let trace = write(&d, "ms.trace", &every_ms());
    let base = one_link(
        &format!("{{ trace = {trace:?} }}"),
        "{ type = \"droptail\", limit = \"50pkt\" }",
        "",
        2,
    )
    .replace("[[flow]]", "EVENT\n[[flow]]");
    let with = |e: &str| base.replace("EVENT", &format!("[[link.event]]\nat = \"1s\"\n{e}"));
    let e = Scenario::parse(&with("rate = \"5Mbps\""), "x.toml", "x").expect_err("rate");
    assert!(
        e.to_string()
            .contains("link[0].event[0].rate = \"5Mbps\": this link's rate comes from a trace"),
        "{e}"
    );
    for ok in ["delay = \"30ms\"", "down = \"200ms\""] {
        let r = run(&scenario(&with(ok)), None);
        assert!(r.flows.goodput_bps[0] > 0.0, "{ok}");
    }
}
