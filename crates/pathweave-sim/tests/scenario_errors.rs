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
