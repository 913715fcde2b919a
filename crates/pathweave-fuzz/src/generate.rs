//! Structure-aware generation: a scenario document built table by table, with each value drawn
//! from a mix of valid quantities, boundary values, expressions and wrong types, so that both
//! the accepting paths and every refusal of the reader are reached.

use pathweave_sim::scenario::{control_parameter_names, TCP_KEYS};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::fmt::Write;

/// The random stream of input `index` under `seed`.
pub(crate) fn rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(index);
    r
}

fn below(r: &mut ChaCha8Rng, n: usize) -> usize {
    (r.next_u64() % n.max(1) as u64) as usize
}

fn chance(r: &mut ChaCha8Rng, percent: u64) -> bool {
    r.next_u64() % 100 < percent
}

fn pick<'a>(r: &mut ChaCha8Rng, items: &[&'a str]) -> &'a str {
    items[below(r, items.len())]
}

// In each of these lists the first entries (up to the `*_OK` count) are valid for the field.
const TIMES: &[&str] = &[
    "\"20ms\"",
    "\"1s\"",
    "\"2s\"",
    "\"(2+3)*4 ms\"",
    "\"1e3 us\"",
    "\"{n}/3 ms\"",
    "\"{i}00ms\"",
    "\"0s\"",
    "\"100s\"",
    "\"-5ms\"",
    "\"1e7 s\"",
    "\"1e8 s\"",
    "\"1e309 s\"",
    "\"5\"",
    "\"ms\"",
    "\"NaN ms\"",
    "\"2 ** 64 ns\"",
    "\"1/0 s\"",
    "\"((((((((1))))))))s\"",
    "\"3 parsecs\"",
];
const TIMES_OK: usize = 5;
const RATES: &[&str] = &[
    "\"10Mbps\"",
    "\"100Mbps\"",
    "\"1Gbps\"",
    "\"{n} Mbps\"",
    "\"2.5 Mbps\"",
    "\"0bps\"",
    "\"1bps\"",
    "\"10Tbps\"",
    "\"11Tbps\"",
    "\"-1Mbps\"",
    "\"1e20bps\"",
    "\"Mbps\"",
];
const RATES_OK: usize = 4;
const SIZES: &[&str] = &[
    "\"1000B\"",
    "\"1.5MB\"",
    "\"75pkt\"",
    "\"{n}0pkt\"",
    "\"0B\"",
    "\"1pkt\"",
    "\"1000GB\"",
    "\"1001GB\"",
    "\"-3pkt\"",
    "\"1e12B\"",
    "\"0.5pkt\"",
    "\"4294967296B\"",
];
const SIZES_OK: usize = 4;
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "-1",
    "0.5",
    "1e-9",
    "1e308",
    "-1e308",
    "9223372036854775807",
    "-9223372036854775808",
    "nan",
    "inf",
    "-inf",
    "0.1",
    "16",
    "1000",
    "3.0e2",
];
const ALGORITHMS: &[&str] = &[
    "reno",
    "veno",
    "westwood",
    "uncoupled",
    "lia",
    "olia",
    "balia",
    "wvegas",
    "ewtcp",
    "fully-coupled",
    "mpveno",
    "mptcpw",
    "wmptcpw",
    "aimd",
    "bmc",
    "rpmp-v2",
    "mptcp-bytes",
    "cubic",
    "LIA",
    "",
    "nonsense",
];

/// Any value: mostly one of the first `ok` entries of `kind` (valid for the field), sometimes
/// another entry of `kind`, sometimes a value of another kind altogether.
fn value_of(r: &mut ChaCha8Rng, kind: &[&str], ok: usize) -> String {
    match below(r, 100) {
        0 => pick(r, NUMBERS).to_string(),
        1 => pick(
            r,
            &["true", "false", "[]", "{}", "[1, \"a\"]", "\"\"", "\"x\""],
        )
        .to_string(),
        2 => format!("\"{}\"", pick(r, ALGORITHMS)),
        3 => pick(r, TIMES).to_string(),
        4..=9 => pick(r, kind).to_string(),
        _ => pick(r, &kind[..ok.clamp(1, kind.len())]).to_string(),
    }
}

/// `value_of` with the valid prefix of the shared lists known.
fn value(r: &mut ChaCha8Rng, kind: &[&str]) -> String {
    let ok = if std::ptr::eq(kind, TIMES) {
        TIMES_OK
    } else if std::ptr::eq(kind, RATES) {
        RATES_OK
    } else if std::ptr::eq(kind, SIZES) {
        SIZES_OK
    } else {
        kind.len()
    };
    value_of(r, kind, ok)
}

/// A name for item `n`; with `stamped` (a `count`) mostly one with `{i}` in it.
fn name(r: &mut ChaCha8Rng, prefix: &str, n: usize, stamped: bool) -> String {
    match below(r, 40) {
        0 => String::new(),
        1 => format!("{prefix} {n}"),
        2 => format!("{prefix}{{i}}"),
        _ if stamped => format!("{prefix}{n}_{{i}}"),
        _ => format!("{prefix}{n}"),
    }
}

fn queue(r: &mut ChaCha8Rng) -> String {
    if chance(r, 50) {
        format!("{{ type = \"droptail\", limit = {} }}", value(r, SIZES))
    } else {
        let mut q = String::from("{ type = \"red\"");
        for key in [
            "limit",
            "min_th",
            "max_th",
            "max_p",
            "w_q",
            "gentle",
            "mode",
            "mean_pkt_size",
        ] {
            if chance(r, 60) {
                let v = match key {
                    "limit" | "mean_pkt_size" => value(r, SIZES),
                    "gentle" => value(r, &["true", "false"]),
                    "mode" => value(r, &["\"packets\"", "\"bytes\"", "\"auto\""]),
                    "max_p" | "w_q" => value(r, &["0.1", "0.002", "\"auto\"", "1", "0"]),
                    _ => value(r, NUMBERS),
                };
                let _ = write!(q, ", {key} = {v}");
            }
        }
        q + " }"
    }
}

fn loss(r: &mut ChaCha8Rng) -> String {
    match below(r, 3) {
        0 => value(r, &["0.01", "0", "1", "0.5", "1.5", "-0.1"]),
        1 => format!(
            "{{ model = \"bernoulli\", p = {} }}",
            value(r, &["0.01", "2"])
        ),
        _ => format!(
            "{{ model = \"gilbert-elliott\", good_to_bad = {}, bad_to_good = {}, loss_bad = {} }}",
            value(r, &["0.01", "0", "1"]),
            value(r, &["0.1", "0", "1"]),
            value(r, &["1", "0.5"])
        ),
    }
}

fn link(r: &mut ChaCha8Rng, out: &mut String, n: usize) {
    out.push_str("\n[[link]]\n");
    let stamped = chance(r, 15);
    let _ = writeln!(out, "name = \"{}\"", name(r, "l", n, stamped));
    if stamped {
        // Now and then a count near the reader's limit, which is slow to expand by design.
        let count = if chance(r, 1) { "100000" } else { "3" };
        let _ = writeln!(
            out,
            "count = {}",
            value_of(r, &[count, "2", "1", "0", "-1"], 3)
        );
    }
    if chance(r, 95) {
        let _ = writeln!(out, "rate = {}", value(r, RATES));
    }
    if chance(r, 90) {
        let _ = writeln!(out, "delay = {}", value(r, TIMES));
    }
    if chance(r, 60) {
        let _ = writeln!(out, "queue = {}", queue(r));
    }
    if chance(r, 25) {
        let _ = writeln!(out, "loss = {}", loss(r));
    }
    if chance(r, 10) {
        let _ = writeln!(out, "reverse_loss = {}", loss(r));
    }
    if chance(r, 15) {
        let mut events = Vec::new();
        for _ in 0..below(r, 4) {
            let what = pick(r, &["rate", "delay", "down", "down"]);
            let v = match what {
                "rate" => value(r, RATES),
                "delay" => value(r, TIMES),
                _ => value(r, TIMES),
            };
            events.push(format!("{{ at = {}, {what} = {v} }}", value(r, TIMES)));
        }
        let _ = writeln!(out, "event = [{}]", events.join(", "));
    }
}

fn path(r: &mut ChaCha8Rng, links: usize) -> String {
    let hops: Vec<String> = (0..1 + below(r, 3))
        .map(|_| {
            let rev = if chance(r, 10) { "~" } else { "" };
            match below(r, 10) {
                0 => "\"nowhere\"".to_string(),
                1 => format!("\"{rev}l{{i}}\""),
                _ => format!("\"{rev}l{}\"", below(r, links)),
            }
        })
        .collect();
    format!("[{}]", hops.join(", "))
}

fn flow(r: &mut ChaCha8Rng, out: &mut String, n: usize, links: usize) {
    out.push_str("\n[[flow]]\n");
    let stamped = chance(r, 15);
    let _ = writeln!(out, "name = \"{}\"", name(r, "f", n, stamped));
    if stamped {
        let _ = writeln!(out, "count = {}", value(r, &["2", "4", "1", "0", "-2"]));
    }
    if chance(r, 20) {
        let _ = writeln!(out, "group = \"g{}\"", below(r, 2));
    }
    if chance(r, 85) {
        let _ = writeln!(out, "algorithm = \"{}\"", pick(r, ALGORITHMS));
    }
    let mut used = Vec::new();
    for _ in 0..below(r, 4) {
        // The format's own parameter names, the shared ones, and one it does not know.
        let names: Vec<&str> = control_parameter_names()
            .chain(["arithmetic", "counting", "bogus"])
            .collect();
        let key = pick(r, &names);
        if used.contains(&key) || chance(r, 50) {
            continue;
        }
        used.push(key);
        let v = value(
            r,
            &[
                "0.5",
                "2",
                "[0.25, 0.75]",
                "[1, 2, 3]",
                "\"exact\"",
                "\"approximate\"",
                "\"linux\"",
                "\"per-packet\"",
                "\"coupled\"",
                "\"200ms\"",
                "\"auto\"",
            ],
        );
        let _ = writeln!(out, "{key} = {v}");
    }
    if chance(r, 70) {
        let _ = writeln!(out, "path = {}", path(r, links));
    } else {
        let subs: Vec<String> = (0..below(r, 4))
            .map(|_| {
                let mut s = format!("{{ path = {}", path(r, links));
                if chance(r, 30) {
                    let _ = write!(s, ", start = {}", value(r, TIMES));
                }
                if chance(r, 20) {
                    let _ = write!(s, ", stop = {}", value(r, TIMES));
                }
                s + " }"
            })
            .collect();
        let _ = writeln!(out, "subflows = [{}]", subs.join(", "));
    }
    if chance(r, 25) {
        let traffic = match below(r, 4) {
            0 => "\"bulk\"".to_string(),
            1 => format!("{{ type = \"transfer\", size = {} }}", value(r, SIZES)),
            2 => format!(
                "{{ type = \"onoff\", on = {}, off = {} }}",
                value(r, TIMES),
                value(r, TIMES)
            ),
            _ => format!("{{ type = \"cbr\", rate = {} }}", value(r, RATES)),
        };
        let _ = writeln!(out, "traffic = {traffic}");
    }
    for key in ["start", "stop"] {
        if chance(r, 25) {
            let _ = writeln!(out, "{key} = {}", value(r, TIMES));
        }
    }
    for _ in 0..below(r, 3) {
        let key = pick(r, TCP_KEYS);
        if used.contains(&key) {
            continue;
        }
        used.push(key);
        let v = value(
            r,
            &["\"1000B\"", "\"40B\"", "2", "\"200ms\"", "\"sack\"", "true"],
        );
        let _ = writeln!(out, "{key} = {v}");
    }
}

/// One generated scenario document.
pub(crate) fn scenario(r: &mut ChaCha8Rng) -> String {
    let mut out = String::new();
    if chance(r, 90) {
        let _ = writeln!(out, "name = \"gen\"");
    }
    for key in ["duration", "sample_interval"] {
        if chance(r, 85) {
            let _ = writeln!(out, "{key} = {}", value(r, TIMES));
        }
    }
    if chance(r, 40) {
        let _ = writeln!(
            out,
            "seed = {}",
            value_of(r, &["1", "7", "42", "0", "-1", "0.5"], 4)
        );
    }
    if chance(r, 15) {
        out.push_str("\n[tcp]\n");
        let mut used = Vec::new();
        for _ in 0..1 + below(r, 3) {
            let key = pick(r, TCP_KEYS);
            if used.contains(&key) {
                continue;
            }
            used.push(key);
            let v = value(
                r,
                &[
                    "\"sack\"",
                    "\"newreno\"",
                    "\"1448B\"",
                    "3",
                    "\"round-robin\"",
                ],
            );
            let _ = writeln!(out, "{key} = {v}");
        }
    }
    if chance(r, 10) {
        let _ = writeln!(
            out,
            "\n[sweep]\nseeds = {}\n[sweep.grid]\n\"link[0].rate\" = [\"1Mbps\", \"2Mbps\"]",
            value(r, &["2", "[1, 2]"])
        );
    }
    let links = 1 + below(r, 5);
    for n in 0..links {
        link(r, &mut out, n);
    }
    for n in 0..1 + below(r, 4) {
        flow(r, &mut out, n, links);
    }
    if chance(r, 15) {
        series(r, &mut out, links);
    }
    out
}

/// A `[series]` table: some links (a few reversed or unknown), flows and columns (a few of
/// them keys, unknown or qualified with the wrong series).
fn series(r: &mut ChaCha8Rng, out: &mut String, links: usize) {
    out.push_str("\n[series]\n");
    if chance(r, 60) {
        let names: Vec<String> = (0..below(r, 4))
            .map(|_| {
                let rev = if chance(r, 20) { "~" } else { "" };
                match below(r, 10) {
                    0 => "\"nowhere\"".to_string(),
                    _ => format!("\"{rev}l{}\"", below(r, links)),
                }
            })
            .collect();
        let _ = writeln!(out, "links = [{}]", names.join(", "));
    }
    if chance(r, 60) {
        let names: Vec<String> = (0..below(r, 4))
            .map(|_| format!("\"f{}\"", below(r, 5)))
            .collect();
        let _ = writeln!(out, "flows = [{}]", names.join(", "));
    }
    if chance(r, 60) {
        let names: Vec<String> = (0..below(r, 4))
            .map(|_| {
                let c = pick(
                    r,
                    &[
                        "cwnd_bytes",
                        "queue_packets",
                        "flow_series",
                        "link_series",
                        "subflow_series.alpha",
                        "link_series.alpha",
                        "time_s",
                        "nothing",
                    ],
                );
                format!("\"{c}\"")
            })
            .collect();
        let _ = writeln!(out, "columns = [{}]", names.join(", "));
    }
    if chance(r, 5) {
        let _ = writeln!(out, "rows = {}", value(r, &["1", "true"]));
    }
}
