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
