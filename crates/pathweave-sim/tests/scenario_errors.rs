//! Bad scenarios are rejected with a message naming the field, the value and what is allowed.

use pathweave_sim::{Scenario, ScenarioError};

const GOOD: &str = r#"
duration = "10s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "f"
path = ["l"]
"#;

fn err(text: &str) -> String {
    match Scenario::parse(text, "bad.toml", "bad") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_reference_scenario_is_valid() {
    let sc = Scenario::parse(GOOD, "good.toml", "good").unwrap();
    assert_eq!(sc.name, "good");
    assert_eq!(sc.links.len(), 1);
    assert_eq!(sc.flows[0].group, "f");
}

#[test]
fn each_mistake_names_its_field_and_value() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "rate = \"10Mbps\"",
            "rate = \"-5Mbps\"",
            &["link[0].rate", "-5Mbps", "positive"],
        ),
        (
            "rate = \"10Mbps\"",
            "rate = \"0Mbps\"",
            &["link[0].rate", "0Mbps"],
        ),
        (
            "rate = \"10Mbps\"",
            "rate = \"10Mbit\"",
            &["link[0].rate", "unknown unit 'Mbit'", "Mbps"],
        ),
        (
            "rate = \"10Mbps\"",
            "rate = 10",
            &["link[0].rate", "integer"],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nrecovery = \"tahoe\"",
            &[
                "flow[0].recovery",
                "tahoe",
                "\"reno\", \"newreno\", \"sack\"",
            ],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10 parsecs\"",
            &["link[0].delay", "parsecs"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\njitter = \"-20us\"",
            &["link[0].jitter", "-20us", "negative"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\njitter = 20",
            &["link[0].jitter", "a time such as"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"0s\"",
            &["duration", "greater than zero"],
        ),
        ("duration = \"10s\"", "", &["duration is missing"]),
        (
            "path = [\"l\"]",
            "path = [\"nowhere\"]",
            &["flow[0].path[0]", "nowhere", "links: l"],
        ),
        (
            "path = [\"l\"]",
            "path = []",
            &["flow[0].path", "at least one link"],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nlimited_transmit = \"yes\"",
            &["flow[0].limited_transmit", "yes", "true or false"],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nprr = true",
            &["flow[0].prr", "needs recovery = \"sack\""],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nprr = 1",
            &["flow[0].prr", "true or false"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nname = \"\"",
            &["name", "1 to 200 characters", "results directory"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nname = \"../../evil\"",
            &["name", "../../evil", "without '/'"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nname = \"two\\nlines\"",
            &["name", "one line"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\nname = \"..\"",
            &["name", "not \".\" or \"..\""],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nkeep_sack_on_rto = true",
            &[
                "flow[0].keep_sack_on_rto",
                "needs recovery = \"sack\"",
                "scoreboard",
            ],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nrecovery = \"newreno\"\nkeep_sack_on_rto = 0",
            &["flow[0].keep_sack_on_rto", "true or false"],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nmptcp_options = \"yes\"",
            &["flow[0].mptcp_options", "yes", "true or false"],
        ),
        (
            "path = [\"l\"]",
            "path = [\"l\"]\nalgorithm = \"lia\"\nmptcp_options = true\nmss = \"24B\"",
            &["flow[0].mss", "24B", "DSS", "at least 25B"],
        ),
        (
            "name = \"f\"",
            "name = \"f\"\nalgorithm = \"cubicx\"",
            &["flow[0].algorithm", "cubicx", "reno"],
        ),
        (
            "name = \"f\"",
            "name = \"f\"\nstart = \"20s\"",
            &["flow[0].start", "end of the simulation"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nlaser = true",
            &["link[0].laser", "unknown field", "rate"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nloss = 1.5",
            &["link[0].loss", "between 0 and 1"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nqueue = { type = \"fifo\" }",
            &["link[0].queue.type", "droptail"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nqueue = { type = \"red\", min_th = 20, max_th = 10 }",
            &["link[0].queue.max_th", "min_th < max_th"],
        ),
        (
            "name = \"l\"",
            "name = \"l\"\ncount = 2",
            &["link[0].count", "{i}"],
        ),
        (
            "duration = \"10s\"",
            "duration = \"10s\"\n[broken",
            &["not valid TOML", "line"],
        ),
    ];
    for (from, to, needles) in cases {
        let text = GOOD.replacen(from, to, 1);
        let msg = err(&text);
        assert!(msg.starts_with("bad.toml"), "{msg}");
        for n in *needles {
            assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
        }
    }
}

#[test]
fn duplicate_names_are_rejected() {
    let text = format!("{GOOD}\n[[link]]\nname = \"l\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n");
    assert!(err(&text).contains("duplicate link name"));
    let text = format!("{GOOD}\n[[flow]]\nname = \"f\"\npath = [\"l\"]\n");
    assert!(err(&text).contains("duplicate flow name"));
}

#[test]
fn errors_are_structured() {
    match Scenario::parse(&GOOD.replace("10Mbps", "-1Mbps"), "x.toml", "x") {
        Err(ScenarioError::Invalid {
            file, field, value, ..
        }) => {
            assert_eq!(
                (file.as_str(), field.as_str(), value.as_str()),
                ("x.toml", "link[0].rate", "\"-1Mbps\"")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_shipped_scenario_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 1);
}

#[test]
fn counted_items_substitute_their_index() {
    let text = r#"
duration = "1s"
[[link]]
name = "a{i}"
count = 3
rate = "10Mbps"
delay = "{n}/3 ms"
[[flow]]
name = "f{i}"
count = 3
path = ["a{i}"]
"#;
    let sc = Scenario::parse(text, "t", "t").unwrap();
    assert_eq!(
        sc.links.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["a0", "a1", "a2"]
    );
    // n/3 ms for n = 1, 2, 3, rounded to the nanosecond.
    assert_eq!(sc.links[1].forward.delay.as_nanos(), 666_667);
    assert_eq!(sc.flows[2].subflows[0].path[0].link, 2);
    assert_eq!(sc.flows[2].group, "f");
}

#[test]
fn a_bad_value_in_a_counted_copy_names_the_copy() {
    // Copies 0-2 start before the 3 s end; copy 3 ("f3", start 3 s) is the first that does
    // not, so the error must point at it, not just at the table.
    let flows = r#"
duration = "3s"
[[link]]
name = "a{i}"
count = 5
rate = "10Mbps"
delay = "1ms"
[[flow]]
name = "f{i}"
count = 5
path = ["a{i}"]
start = "{i} s"
"#;
    let msg = err(flows);
    for n in [
        "flow[0].start",
        "i = 3",
        "\"f3\"",
        "count = 5",
        "end of the simulation",
    ] {
        assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
    }
    // The same for a link's copy: 2 - i ms is negative from i = 3 on.
    let links = flows.replace("delay = \"1ms\"", "delay = \"2 - {i} ms\"");
    let msg = err(&links);
    for n in ["link[0].delay", "i = 3", "\"a3\"", "count = 5"] {
        assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
    }
    // A table without `count` has no copy to name.
    let msg = err(&GOOD.replace("rate = \"10Mbps\"", "rate = \"-1Mbps\""));
    assert!(!msg.contains("copy"), "{msg}");
}

fn red_of(queue: &str, rate: &str, delay: &str) -> Result<pathweave_sim::red::RedParams, String> {
    let text = GOOD
        .replacen("rate = \"10Mbps\"", &format!("rate = \"{rate}\""), 1)
        .replacen(
            "delay = \"10ms\"",
            &format!("delay = \"{delay}\"\nqueue = {queue}"),
            1,
        );
    let sc = Scenario::parse(&text, "bad.toml", "bad").map_err(|e| e.to_string())?;
    match &sc.links[0].forward.queue {
        pathweave_sim::link::QueueSpec::Red(p) => Ok(*p),
        other => panic!("{other:?}"),
    }
}

#[test]
fn red_auto_parameters_resolve_from_the_link() {
    // ns-2.35: ptc = rate / (8 · mean_pkt_size); min_th = max(5, target_delay · ptc / 2);
    // max_th = 3 · min_th; w_q = 1 − exp(−1 / (10 · max(0.1 s, 3 · (delay + 1/ptc)) · ptc)).
    let auto = r#"{ type = "red", min_th = "auto", max_th = "auto", w_q = "auto", mode = "bytes", mean_pkt_size = "500B" }"#;
    let p = red_of(auto, "40Mbps", "30ms").unwrap();
    let ptc = 40e6 / (8.0 * 500.0); // 10 000 packets/s
    assert!((p.min_th - 0.005 * ptc / 2.0).abs() < 1e-9, "{p:?}"); // 25
    assert!((p.max_th - 75.0).abs() < 1e-9, "{p:?}");
    let rtt: f64 = 3.0 * (0.030 + 1.0 / ptc); // 0.0903 s, below the 100 ms floor
    assert!(rtt < 0.1);
    assert!((p.w_q - (1.0 - (-1.0 / (10.0 * 0.1 * ptc)).exp())).abs() < 1e-15);
    assert!(p.bytes && p.mean_pktsize == 500);

    // A long link: the RTT guess exceeds 100 ms and sets w_q; target_delay moves min_th.
    let q = r#"{ type = "red", min_th = "auto", max_th = "auto", w_q = "auto", target_delay = "20ms" }"#;
    let p = red_of(q, "32Mbps", "90ms").unwrap();
    let ptc = 32e6 / (8.0 * 500.0); // the default mean packet, 500 B: 8000 packets/s
    assert!((p.min_th - 0.020 * ptc / 2.0).abs() < 1e-9, "{p:?}"); // 80
    assert!((p.max_th - 240.0).abs() < 1e-9, "{p:?}");
    let rtt = 3.0 * (0.090 + 1.0 / ptc);
    assert!((p.w_q - (1.0 - (-1.0 / (10.0 * rtt * ptc)).exp())).abs() < 1e-15);

    // Slow links keep the floor of 5 packets; "auto" max_th follows a given min_th.
    let p = red_of(r#"{ type = "red", min_th = "auto" }"#, "1Mbps", "10ms").unwrap();
    assert_eq!((p.min_th, p.max_th, p.w_q), (5.0, 15.0, 0.002));
    let p = red_of(
        r#"{ type = "red", min_th = 8, max_th = "auto" }"#,
        "1Mbps",
        "10ms",
    )
    .unwrap();
    assert_eq!((p.min_th, p.max_th), (8.0, 24.0));
}

#[test]
fn red_auto_mistakes_name_what_is_allowed() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{ type = "red", min_th = "automatic" }"#,
            &["link[0].queue.min_th", "automatic", "\"auto\""],
        ),
        (
            r#"{ type = "red", max_th = true }"#,
            &["link[0].queue.max_th", "a number of packets or \"auto\""],
        ),
        (
            r#"{ type = "red", w_q = 0 }"#,
            &["link[0].queue.w_q", "(0, 1]", "\"auto\""],
        ),
        (
            r#"{ type = "red", w_q = "Auto" }"#,
            &["link[0].queue.w_q", "\"auto\""],
        ),
        (
            r#"{ type = "red", target_delay = "10ms" }"#,
            &["link[0].queue.target_delay", "min_th = \"auto\""],
        ),
        (
            r#"{ type = "red", min_th = "auto", target_delay = "0ms" }"#,
            &["link[0].queue.target_delay", "greater than zero"],
        ),
        (
            // A size is a drop-tail limit; RED's is in packets even in byte mode.
            r#"{ type = "red", mode = "bytes", limit = "50KB" }"#,
            &["link[0].queue.limit", "\"50pkt\"", "units of mean_pkt_size"],
        ),
        (
            // 40 Mbps: the automatic min_th is 25, above the given max_th.
            r#"{ type = "red", min_th = "auto", max_th = 20 }"#,
            &[
                "link[0].queue.max_th",
                "min_th < max_th",
                "min_th = 25",
                "\"auto\" resolved",
            ],
        ),
    ];
    for (queue, needles) in cases {
        let msg = red_of(queue, "40Mbps", "10ms").unwrap_err();
        assert!(msg.starts_with("bad.toml"), "{msg}");
        for n in *needles {
            assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
        }
    }
}

/// `GOOD` with `from` replaced by `to` must be refused with every needle in the message.
fn refused(from: &str, to: &str, needles: &[&str]) {
    let text = GOOD.replacen(from, to, 1);
    assert_ne!(text, GOOD, "{from:?} is not in GOOD");
    let msg = err(&text);
    assert!(msg.starts_with("bad.toml"), "{msg}");
    for n in needles {
        assert!(msg.contains(n), "{to:?}: message {msg:?} lacks {n:?}");
    }
}

/// `GOOD` with `from` replaced by `to` is valid.
fn accepted(from: &str, to: &str) -> Scenario {
    let text = GOOD.replacen(from, to, 1);
    assert_ne!(text, GOOD, "{from:?} is not in GOOD");
    Scenario::parse(&text, "good.toml", "good").unwrap_or_else(|e| panic!("{to:?}: {e}"))
}

const PATH: &str = "path = [\"l\"]";

#[test]
fn deeply_nested_or_long_expressions_are_refused_without_overflowing_the_stack() {
    let dur = "duration = \"10s\"";
    let parens = format!(
        "duration = \"{}1{} s\"",
        "(".repeat(40_000),
        ")".repeat(40_000)
    );
    refused(dur, &parens, &["duration", "characters long (at most 256)"]);
    let minus = format!("duration = \"{}1 s\"", "-".repeat(100_000));
    refused(dur, &minus, &["duration", "characters long (at most 256)"]);
    // Short enough, but deeper than 64 levels.
    let deep = format!("duration = \"{}1{} s\"", "(".repeat(65), ")".repeat(65));
    refused(dur, &deep, &["duration", "nested too deeply", "64 levels"]);
    let minus = format!("duration = \"{}1 s\"", "-".repeat(66));
    refused(dur, &minus, &["duration", "nested too deeply"]);
    let ok = format!("duration = \"{}10{} s\"", "(".repeat(64), ")".repeat(64));
    assert_eq!(accepted(dur, &ok).duration.as_nanos(), 10_000_000_000);
}

#[test]
fn scientific_notation_takes_signed_exponents() {
    let delay = |d: &str| {
        accepted("delay = \"10ms\"", &format!("delay = \"{d}\"")).links[0]
            .forward
            .delay
            .as_nanos()
    };
    assert_eq!(delay("1e-3 s"), 1_000_000);
    assert_eq!(delay("2.5E+2 ms"), 250_000_000);
    assert_eq!(delay("1e3us"), 1_000_000);
    assert_eq!(delay("1e-3-1e-4 s"), 900_000);
    assert_eq!(delay("(1e-3+1e-3)*2 s"), 4_000_000);
    refused(
        "delay = \"10ms\"",
        "delay = \"1e s\"",
        &["link[0].delay", "'1e' is not a number"],
    );
}

#[test]
fn out_of_range_quantities_are_refused_after_the_unit_not_clamped() {
    let cbr = |rate: &str| format!("{PATH}\ntraffic = {{ type = \"cbr\", rate = \"{rate}\" }}");
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("rate = \"10Mbps\"", "rate = \"1e300 Gbps\"".into(), vec!["link[0].rate", "at most 10Tbps"]),
        ("rate = \"10Mbps\"", "rate = \"1e15Mbps\"".into(), vec!["link[0].rate", "at most 10Tbps"]),
        (PATH, cbr("1e300 Gbps"), vec!["flow[0].traffic.rate", "at most 10Tbps"]),
        // 10 Tbps is a valid link rate, but a cbr flow would send a datagram every 1 ns.
        (PATH, cbr("10Tbps"), vec!["flow[0].traffic.rate", "at least 100 ns", "80000Mbps"]),
        ("delay = \"10ms\"", "delay = \"1e300s\"".into(), vec!["link[0].delay", "at most 10000000s"]),
        ("duration = \"10s\"", "duration = \"1e300 min\"".into(), vec!["bad.toml: duration = ", "at most 10000000s"]),
        (PATH, format!("{PATH}\nstop = \"1e300s\""), vec!["flow[0].stop", "at most 10000000s"]),
        (PATH, format!("{PATH}\nmin_rto = \"1e300s\""), vec!["flow[0].min_rto", "at most 10000000s"]),
        (PATH, format!("{PATH}\nmin_rto = \"61s\""), vec!["flow[0].min_rto", "at most 60s"]),
        (PATH, format!("{PATH}\ndelayed_ack = \"1e300s\""), vec!["flow[0].delayed_ack", "at most"]),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\n[[link.event]]\nat = \"1s\"\ndown = \"1e300s\"".into(),
            vec!["link[0].event[0].down", "at most 10000000s"],
        ),
        (
            PATH,
            format!("{PATH}\ntraffic = {{ type = \"onoff\", on = \"1e300s\", off = \"1s\" }}"),
            vec!["flow[0].traffic.on", "at most 10000000s"],
        ),
        (
            PATH,
            format!("{PATH}\nalgorithm = \"bmc\"\nperiod = \"1e300s\""),
            vec!["flow[0].period", "at most 10000000s"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nqueue = { type = \"red\", min_th = \"auto\", target_delay = \"1e300 min\" }".into(),
            vec!["link[0].queue.target_delay", "at most 10000000s"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nqueue = { type = \"droptail\", limit = \"1e300 GB\" }".into(),
            vec!["link[0].queue.limit", "at most 1000GB"],
        ),
        (
            PATH,
            format!("{PATH}\ntraffic = {{ type = \"transfer\", size = \"1e300 GB\" }}"),
            vec!["flow[0].traffic.size", "at most 1000GB"],
        ),
        (PATH, format!("{PATH}\nreceive_buffer = \"1e300 GB\""), vec!["flow[0].receive_buffer", "at most 1000GB"]),
        // 999 GB of 1-byte segments does not fit the u32 segment count.
        (
            PATH,
            format!("{PATH}\nmss = \"1B\"\nreceive_buffer = \"999GB\""),
            vec!["flow[0].receive_buffer", "999000000000 segments", "larger mss"],
        ),
        (PATH, format!("{PATH}\nheader = \"4294967336B\""), vec!["flow[0].header", "from 0B to 1500B"]),
        (PATH, format!("{PATH}\nheader = \"1501B\""), vec!["flow[0].header", "from 0B to 1500B"]),
        (PATH, format!("{PATH}\nheader = \"0 parsecs\""), vec!["flow[0].header", "unknown unit 'parsecs'"]),
        (PATH, format!("{PATH}\nheader = \"0xyz\""), vec!["flow[0].header", "unknown unit 'xyz'"]),
        (PATH, format!("{PATH}\nheader = \"0pkt\""), vec!["flow[0].header", "unknown unit 'pkt'"]),
        (PATH, format!("{PATH}\nheader = \"0s\""), vec!["flow[0].header", "unknown unit 's'"]),
        // Fields with forms besides a quantity name them when given neither.
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nqueue = { type = \"droptail\", limit = \"40pkts\" }".into(),
            vec!["link[0].queue.limit", "unknown unit 'pkts' (allowed: pkt, B, KB"],
        ),
        (
            PATH,
            format!("{PATH}\ndelayed_ack = \"yes\""),
            vec!["flow[0].delayed_ack", "unknown unit 'yes'", "ms", "or true", "or false"],
        ),
        (
            PATH,
            format!("{PATH}\nreceive_buffer = \"big\""),
            vec!["flow[0].receive_buffer", "unknown unit 'big'", "or false (unlimited)"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nqueue = { type = \"red\", max_th = inf }".into(),
            vec!["link[0].queue.max_th = inf", "finite"],
        ),
        (
            PATH,
            format!("{PATH}\nalgorithm = \"bmc\"\nk = nan"),
            vec!["flow[0].k = nan", "finite"],
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nloss = nan".into(),
            vec!["link[0].loss = nan", "finite"],
        ),
    ];
    for (from, to, needles) in &cases {
        refused(from, to, needles);
    }
    // A real zero header is zero; the largest values in range are accepted.
    let f = |to: &str| accepted(PATH, &format!("{PATH}\n{to}"));
    match f("header = \"0B\"").flows[0].kind {
        pathweave_sim::scenario::FlowKind::Tcp { cfg, .. } => assert_eq!(cfg.header, 0),
        ref other => panic!("{other:?}"),
    }
    accepted("rate = \"10Mbps\"", "rate = \"10Tbps\"");
    accepted("delay = \"10ms\"", "delay = \"1e7 s\"");
    accepted(
        PATH,
        &format!("{PATH}\ntraffic = {{ type = \"transfer\", size = \"1000GB\" }}"),
    );
    // The interval times a million used to overflow and refuse this with a false message.
    let sc = accepted(
        "duration = \"10s\"",
        "duration = \"10s\"\nsample_interval = \"18446744073710ns\"",
    );
    assert_eq!(sc.sample_interval.as_nanos(), 18_446_744_073_710);
}

#[test]
fn the_sample_limit_counts_every_row_of_every_series() {
    let text = r#"
duration = "1000s"
sample_interval = "1ms"
[[link]]
name = "l{i}"
count = 2000
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "f{i}"
count = 2000
path = ["l{i}"]
"#;
    let msg = err(text);
    for n in [
        "bad.toml: sample_interval = \"1ms\"",
        "6000000000 rows",
        "1000000 samples of 2000 flows, 2000 TCP subflows and 2000 sampled link directions",
        "more than 10000000",
        "longer sample_interval, a shorter duration or fewer flows",
    ] {
        assert!(msg.contains(n), "{msg:?} lacks {n:?}");
    }
    // One flow over one link: 3 rows per sample, so 3.3 million samples fit.
    let one = GOOD.replacen(
        "duration = \"10s\"",
        "duration = \"3333s\"\nsample_interval = \"1ms\"",
        1,
    );
    assert!(Scenario::parse(&one, "t", "t").is_ok());
    let over = one.replacen("3333s", "3334s", 1);
    assert!(err(&over).contains("10002000 rows"));
}

const BMC3: &str = r#"
duration = "10s"
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
[[link]]
name = "b"
rate = "10Mbps"
delay = "10ms"
[[flow]]
name = "f"
algorithm = "bmc"
PARAMS
subflows = [{ path = ["a"] }, { path = ["b"] }SUBFLOWS]
"#;

fn bmc(params: &str, more_subflows: &str) -> Result<Scenario, String> {
    let text = BMC3
        .replace("PARAMS", params)
        .replace("SUBFLOWS", more_subflows);
    Scenario::parse(&text, "bad.toml", "bad").map_err(|e| e.to_string())
}

#[test]
fn contradictions_are_refused() {
    // BMC lists longer than the subflows name subflows that do not exist; a shorter list is
    // bmc.rs's documented rule (a subflow past the end takes the list's mean).
    let e = bmc("weights = [0.25, 0.25, 0.25, 0.25]", "").unwrap_err();
    assert!(
        e.contains("flow[0].weights") && e.contains("4 values for 2 subflows"),
        "{e}"
    );
    let e = bmc("rate_hints = [1, 2, 3]", "").unwrap_err();
    assert!(
        e.contains("flow[0].rate_hints") && e.contains("3 values for 2 subflows"),
        "{e}"
    );
    bmc(
        "weights = [0.5, 0.5]",
        ", { path = [\"a\"], start = \"1s\" }",
    )
    .unwrap();
    bmc("weights = [0.25, 0.75]", "").unwrap();

    // A subflow that joins at or after its flow stops.
    let e = bmc("stop = \"5s\"", ", { path = [\"a\"], start = \"5s\" }").unwrap_err();
    assert!(
        e.contains("flow[0].subflows[2].start") && e.contains("after the flow stops"),
        "{e}"
    );
    let e = bmc("", ", { path = [\"a\"], start = \"3s\", stop = \"3s\" }").unwrap_err();
    assert!(
        e.contains("flow[0].subflows[2].stop") && e.contains("after the subflow starts"),
        "{e}"
    );
    // Several subflows on the same path are legitimate.
    bmc("", ", { path = [\"a\"] }, { path = [\"a\"] }").unwrap();

    // Overlapping or touching outages of one link.
    let outage = |a: &str, b: &str| {
        format!(
            "delay = \"10ms\"\n[[link.event]]\nat = \"{a}\"\ndown = \"2s\"\n[[link.event]]\nat = \"{b}\"\ndown = \"2s\""
        )
    };
    refused(
        "delay = \"10ms\"",
        &outage("1s", "2s"),
        &[
            "link[0].event[1].at",
            "outage of link[0].event[0] (1 s to 3 s)",
            "must not overlap",
        ],
    );
    refused(
        "delay = \"10ms\"",
        &outage("5s", "3s"),
        &[
            "link[0].event[0].at",
            "outage of link[0].event[1] (3 s to 5 s)",
        ],
    );
    accepted("delay = \"10ms\"", &outage("1s", "3.5s"));

    // A path that crosses one link twice.
    refused(
        PATH,
        "path = [\"l\", \"l\"]",
        &["flow[0].path[1]", "already on this path (flow[0].path[0])"],
    );
    refused(
        PATH,
        "path = [\"l\", \"~l\"]",
        &["flow[0].path[1]", "at most once, in either direction"],
    );

    // TCP settings on a cbr flow are refused like algorithm is.
    for (key, value) in [
        ("mss", "\"500B\""),
        ("min_rto", "\"1s\""),
        ("recovery", "\"sack\""),
        ("header", "\"20B\""),
        ("initial_window", "4"),
        ("delayed_ack", "true"),
        ("limited_transmit", "true"),
        ("prr", "false"),
        ("mptcp_options", "true"),
        ("handshakes", "true"),
        ("keep_sack_on_rto", "true"),
        ("ack_size", "\"40B\""),
        ("receive_buffer", "\"1MB\""),
        ("scheduler", "\"roundrobin\""),
    ] {
        let to =
            format!("{PATH}\ntraffic = {{ type = \"cbr\", rate = \"1Mbps\" }}\n{key} = {value}");
        refused(
            PATH,
            &to,
            &[&format!("flow[0].{key}"), "TCP setting", "cbr"],
        );
    }
}

#[test]
fn controller_range_errors_name_their_own_key() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("bmc", "k = 5", &["flow[0].k = 5", "0 < K < 4"]),
        (
            "bmc",
            "tolerance = 11",
            &["flow[0].tolerance = 11", "0 <= tolerance <= 10"],
        ),
        (
            "bmc",
            "flowshares = 0",
            &["flow[0].flowshares = 0", "0 < P <= 16"],
        ),
        (
            "bmc",
            "weights = [0.5, 0.4]",
            &["flow[0].weights = [0.5, 0.4]", "sum to 0.9"],
        ),
        (
            "bmc",
            "weights = [0.5, -0.5]",
            &["flow[0].weights[1] = -0.5", "D_min"],
        ),
        (
            "bmc",
            "rate_hints = [1, 0]",
            &["flow[0].rate_hints[1] = 0", "positive rate"],
        ),
        (
            "aimd",
            "weight = 17",
            &["flow[0].weight = 17", "0 < D <= 16"],
        ),
        ("aimd", "a = 300", &["flow[0].a = 300", "0 < a <= 256"]),
        ("aimd", "b = 1", &["flow[0].b = 1", "0 < b < 1"]),
        ("veno", "beta = -1", &["flow[0].beta = -1", "above 0"]),
        ("mpveno", "beta = 0", &["flow[0].beta = 0", "above 0"]),
        ("mptcpw", "gamma = 3", &["flow[0].gamma = 3", "0 to 2"]),
        (
            "lia",
            "maximum = \"approximate\"\narithmetic = \"linux\"",
            &[
                "flow[0].maximum = \"approximate\"",
                "only with arithmetic = \"spec\"",
            ],
        ),
    ];
    for (alg, params, needles) in cases {
        let to = format!("{PATH}\nalgorithm = \"{alg}\"\n{params}");
        refused(PATH, &to, needles);
    }
}

#[test]
fn long_values_are_echoed_truncated() {
    let long = "x".repeat(1_000_000);
    // The value once in the field's value and once in the message, each cut at 80 characters.
    let short = |m: &str| m.chars().take(300).collect::<String>();
    let msg = err(&GOOD.replacen("delay = \"10ms\"", &format!("delay = \"5 {long}\""), 1));
    assert!(
        msg.len() < 600 && msg.matches("…").count() == 2,
        "{}",
        short(&msg)
    );
    assert!(
        msg.contains("link[0].delay") && msg.contains("unknown unit"),
        "{msg}"
    );
    let msg = err(&GOOD.replacen("name = \"l\"", &format!("name = \"l\"\n{long} = 1"), 1));
    assert!(
        msg.len() < 600 && msg.contains("unknown field"),
        "{}",
        short(&msg)
    );
    let msg = err(&GOOD.replacen(PATH, &format!("path = [\"{long}\"]"), 1));
    assert!(
        msg.len() < 600 && msg.contains("no link is called"),
        "{}",
        short(&msg)
    );
    let expr = format!("delay = \"{} ms\"", "1+".repeat(500_000) + "1");
    let msg = err(&GOOD.replacen("delay = \"10ms\"", &expr, 1));
    assert!(
        msg.len() < 600 && msg.contains("characters long"),
        "{}",
        short(&msg)
    );
}

#[test]
fn the_seed_takes_any_toml_integer_from_zero() {
    let seed = |s: &str| {
        accepted(
            "duration = \"10s\"",
            &format!("duration = \"10s\"\nseed = {s}"),
        )
    };
    assert_eq!(seed("9223372036854775807").seed, i64::MAX as u64);
    assert_eq!(seed("4398046510081").seed, 4_398_046_510_081);
    assert_eq!(seed("\"2*3\"").seed, 6);
    refused(
        "duration = \"10s\"",
        "duration = \"10s\"\nseed = -1",
        &["seed = -1", "0 to 9223372036854775807"],
    );
    refused(
        "duration = \"10s\"",
        "duration = \"10s\"\nseed = 1e300",
        &["seed = 1000000000", "…: expected", "as a TOML integer"],
    );
    refused(
        "duration = \"10s\"",
        "duration = \"10s\"\nseed = 1.5",
        &["seed = 1.5", "whole number"],
    );
}
