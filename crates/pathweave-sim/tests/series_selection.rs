//! `[series]` chooses which flows, link directions and columns the time series record: a run
//! records exactly the chosen rows and columns of what it records by default, the other
//! results do not change, the row limit counts only what is recorded, and every bad value is
//! refused with its field, its value and what is allowed.

mod common;
use common::*;
use pathweave_sim::results::{
    Results, SeriesChunk, FLOW_SERIES_COLUMNS, LINK_SERIES_COLUMNS, SUBFLOW_SERIES_COLUMNS,
};
use pathweave_sim::scenario::SeriesSpec;
use pathweave_sim::Scenario;

/// A two-path LIA connection, a Reno flow and a CBR flow over three links, one of them also
/// crossed in reverse, sampled every 100 ms for 10 s.
const MIXED: &str = r#"
duration = "10s"
sample_interval = "100ms"
[[link]]
name = "a"
rate = "10Mbps"
delay = "10ms"
queue = { type = "red", limit = "40pkt", min_th = 3, max_th = 12, max_p = 0.1 }
[[link]]
name = "b"
rate = "8Mbps"
delay = "20ms"
[[link]]
name = "c"
rate = "100Mbps"
delay = "1ms"
[[flow]]
name = "mp"
algorithm = "lia"
subflows = [{ path = ["c", "a"] }, { path = ["b"] }]
[[flow]]
name = "reno"
path = ["a"]
start = "1s"
[[flow]]
name = "udp"
path = ["~c", "b"]
traffic = { type = "cbr", rate = "1Mbps" }
"#;

/// `MIXED` with `series`: a `[series]` table goes at the end, a `series = ...` key at the top
/// (after the tables it would be a key of the last one).
fn text_with(series: &str) -> String {
    if series.starts_with('[') {
        format!("{MIXED}\n{series}\n")
    } else {
        format!("{series}\n{MIXED}")
    }
}

fn with_series(series: &str) -> Scenario {
    scenario(&text_with(series))
}

fn series_of(r: &Results) -> SeriesChunk {
    SeriesChunk {
        flows: r.flow_series.clone(),
        subflows: r.subflow_series.clone(),
        links: r.link_series.clone(),
    }
}

/// Everything but the series, as text (exact for floats, NaN included).
fn tables(r: &Results) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        r.flows, r.subflows, r.links, r.fairness, r.stats
    )
}

#[test]
fn without_series_everything_is_recorded() {
    let sc = scenario(MIXED);
    assert_eq!(sc.series, SeriesSpec::everything(&sc.flows));
    assert_eq!(with_series("series = true").series, sc.series);
    // Link directions crossed forward by some path: a and b forward, c forward (mp) and
    // reverse (udp), ascending.
    assert_eq!(sc.series.links, vec![0, 2, 4, 5]);
    assert!(sc.series.flows.iter().all(|&f| f));
}

#[test]
fn a_selection_records_exactly_the_chosen_rows_and_columns() {
    let full = run(&scenario(MIXED), None);
    assert!(!full.subflow_series.time_s.is_empty());
    for series in [
        "[series]\nflows = [\"mp\"]",
        "[series]\nflows = [\"udp\", \"reno\"]\nlinks = [\"b\", \"~c\"]",
        "[series]\nlinks = []\ncolumns = [\"cwnd_bytes\"]",
        "[series]\ncolumns = [\"link_series\", \"subflow_series.alpha\"]",
        "[series]\nflows = []\ncolumns = [\"rate_bps\", \"drops\", \"flow_series.srtt_s\"]",
        "[series]\ncolumns = [\"queue_packets\"]",
        "series = false",
    ] {
        let sc = with_series(series);
        let r = run(&sc, None);
        let mut expected = series_of(&full);
        sc.series.restrict(&mut expected);
        assert_eq!(
            format!("{:?}", series_of(&r)),
            format!("{expected:?}"),
            "{series}"
        );
        // What is recorded changes nothing else, to the last bit.
        assert_eq!(tables(&r), tables(&full), "{series}");
    }
}

#[test]
fn the_selection_is_what_was_asked_for() {
    let sc = with_series(
        "[series]\nflows = [\"reno\"]\nlinks = [\"~c\", \"a\"]\ncolumns = [\"cwnd_bytes\", \"red_average\"]",
    );
    let r = run(&sc, None);
    let f = &r.flow_series;
    assert!(!f.time_s.is_empty());
    assert!(f.flow.iter().all(|&i| i == 1));
    assert_eq!(f.cwnd_bytes.len(), f.time_s.len());
    assert!(f.ssthresh_bytes.is_empty() && f.srtt_s.is_empty() && f.rate_bps.is_empty());
    let s = &r.subflow_series;
    assert!(s.flow.iter().all(|&i| i == 1) && !s.time_s.is_empty());
    assert_eq!(s.cwnd_bytes.len(), s.time_s.len());
    assert!(s.alpha.is_empty() && s.rate_bps.is_empty());
    let l = &r.link_series;
    let mut links: Vec<u32> = l.link.clone();
    links.dedup();
    assert_eq!(&links[..2], &[0, 5]);
    assert!(l.link.iter().all(|&k| k == 0 || k == 5));
    assert_eq!(l.red_average.len(), l.time_s.len());
    assert!(l.queue_packets.is_empty() && l.drops.is_empty());
    // A flow that is not sampled still runs: the tables are those of the default run.
    assert_eq!(tables(&r), tables(&run(&scenario(MIXED), None)));

    // A direction no path crosses forward (here the ACKs of "a") can be chosen too.
    let r = run(&with_series("[series]\nlinks = [\"~a\"]"), None);
    assert!(!r.link_series.time_s.is_empty());
    assert!(r.link_series.link.iter().all(|&k| k == 1));

    // Nothing at all.
    let off = run(&with_series("series = false"), None);
    assert!(off.flow_series.time_s.is_empty());
    assert!(off.subflow_series.time_s.is_empty());
    assert!(off.link_series.time_s.is_empty());
}

#[test]
fn columns_name_series_qualified_or_bare_columns() {
    let cols = |s: &str| with_series(&format!("[series]\ncolumns = {s}")).series;
    let s = cols("[\"subflow_series\"]");
    assert!(!s.flow_columns.any() && !s.link_columns.any());
    assert!((0..SUBFLOW_SERIES_COLUMNS.len()).all(|k| s.subflow_columns.has(k)));
    // A bare name is every series that has it.
    let s = cols("[\"srtt_s\"]");
    assert!(s.flow_columns.has(2) && s.subflow_columns.has(2) && !s.link_columns.any());
    let s = cols("[\"flow_series.srtt_s\", \"wire_losses\"]");
    assert!(s.flow_columns.has(2) && !s.subflow_columns.any() && s.link_columns.has(4));
    assert_eq!(FLOW_SERIES_COLUMNS[2], "srtt_s");
    assert_eq!(LINK_SERIES_COLUMNS[4], "wire_losses");
}

fn err(series: &str) -> String {
    match Scenario::parse(&text_with(series), "bad.toml", "bad") {
        Ok(_) => panic!("accepted:\n{series}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_series_values_name_the_field_the_value_and_what_is_allowed() {
    let cases: &[(&str, &[&str])] = &[
        (
            "series = \"off\"",
            &["bad.toml: series = \"off\"", "a string", "true or false"],
        ),
        ("series = 1", &["series = 1", "an integer"]),
        (
            "[series]\nflow = [\"mp\"]",
            &["series.flow = ", "unknown field", "links, flows, columns"],
        ),
        (
            "[series]\nlinks = \"a\"",
            &["series.links = \"a\"", "a list of link names"],
        ),
        (
            "[series]\nlinks = [\"a\", \"z\"]",
            &[
                "series.links[1] = \"z\"",
                "no link is called 'z'",
                "links: a, b, c",
            ],
        ),
        (
            "[series]\nlinks = [\"~q\"]",
            &[
                "series.links[0] = \"~q\"",
                "'q'",
                "\"~name\" for its reverse",
            ],
        ),
        (
            "[series]\nlinks = [3]",
            &["series.links[0] = 3", "expected a string"],
        ),
        (
            "[series]\nlinks = [\"a\", \"b\", \"a\"]",
            &[
                "series.links[2] = \"a\"",
                "listed twice (also series.links[0])",
            ],
        ),
        (
            "[series]\nflows = [\"mp\", \"tcp\"]",
            &[
                "series.flows[1] = \"tcp\"",
                "no flow is called 'tcp'",
                "flows: mp, reno, udp",
            ],
        ),
        (
            "[series]\nflows = { mp = true }",
            &["series.flows = {…}", "a list of flow names, found a table"],
        ),
        (
            "[series]\ncolumns = [\"cwnd\"]",
            &[
                "series.columns[0] = \"cwnd\"",
                "unknown column",
                "flow_series (cwnd_bytes, ssthresh_bytes, srtt_s, rate_bps)",
                "link_series (queue_packets",
            ],
        ),
        (
            "[series]\ncolumns = [\"link_series.alpha\"]",
            &[
                "series.columns[0] = \"link_series.alpha\"",
                "unknown column",
            ],
        ),
        (
            "[series]\ncolumns = [\"time_s\"]",
            &[
                "series.columns[0] = \"time_s\"",
                "key column",
                "list value columns",
            ],
        ),
        (
            "[series]\ncolumns = []",
            &["series.columns = []", "series = false"],
        ),
        (
            "[series]\ncolumns = [\"drops\", \"drops\"]",
            &["series.columns[1] = \"drops\"", "listed twice"],
        ),
    ];
    for (series, wants) in cases {
        let msg = err(series);
        for w in *wants {
            assert!(msg.contains(w), "{series:?}: {msg:?} lacks {w:?}");
        }
    }
}

#[test]
fn the_row_limit_counts_only_what_is_recorded() {
    // 2·10^6 samples of 3 flows, 3 TCP subflows and 4 link directions: 2·10^7 rows by
    // default, twice the limit.
    let long = MIXED
        .replace("duration = \"10s\"", "duration = \"2000s\"")
        .replace("sample_interval = \"100ms\"", "sample_interval = \"1ms\"");
    let msg = match Scenario::parse(&long, "bad.toml", "bad") {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    assert!(msg.contains("20000000 rows"), "{msg}");
    assert!(
        msg.contains("record fewer flows, links or columns with [series]"),
        "{msg}"
    );
    let ok = |series: &str| {
        let text = if series.starts_with('[') {
            format!("{long}\n{series}\n")
        } else {
            format!("{series}\n{long}")
        };
        Scenario::parse(&text, "t", "t").is_ok()
    };
    assert!(ok("series = false"));
    // Flows only: 3 rows per sample; 6·10^6 rows.
    assert!(ok("[series]\ncolumns = [\"flow_series\"]"));
    // Two links: 2 rows per sample.
    assert!(ok("[series]\nflows = []\nlinks = [\"a\", \"b\"]"));
    // The three TCP subflows and one link: 4 rows per sample; with the flow rows, 7 (over).
    assert!(ok(
        "[series]\nlinks = [\"a\"]\ncolumns = [\"subflow_series\", \"queue_packets\"]"
    ));
    assert!(!ok(
        "[series]\nlinks = [\"a\"]\ncolumns = [\"cwnd_bytes\", \"queue_packets\"]"
    ));
}
