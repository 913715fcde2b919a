//! The fast event queue against the reference binary heap: random scenarios (drop-tail and
//! RED queues, random and bursty loss, rate and delay changes, outages, TCP with every
//! recovery mode, multipath connections, CBR, sized and on/off traffic) run on both queues
//! with the same seed must give identical results, down to the last event count and float.

use pathweave_sim::event::Scheduler;
use pathweave_sim::{Results, Scenario, Simulation};

/// xorshift64*: enough to pick scenario parameters reproducibly.
struct Pick(u64);

impl Pick {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn one<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn random_scenario(case: u64) -> String {
    let mut p = Pick(case.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut t = String::new();
    t += &format!(
        "duration = \"{}s\"\nsample_interval = \"{}ms\"\n[tcp]\nrecovery = \"{}\"\ndelayed_ack = {}\n",
        3 + p.below(5),
        50 + 50 * p.below(10),
        p.one(&["reno", "newreno", "sack"]),
        p.below(2) == 0,
    );
    let links = 2 + p.below(3) as usize;
    for l in 0..links {
        t += &format!(
            "[[link]]\nname = \"l{l}\"\nrate = \"{}Mbps\"\ndelay = \"{}ms\"\n",
            1 + p.below(40),
            p.below(30)
        );
        t += match p.below(4) {
            0 => "queue = { type = \"droptail\", limit = \"20pkt\" }\n",
            1 => "queue = { type = \"droptail\", limit = \"30000B\" }\n",
            2 => "queue = { type = \"red\", limit = \"40pkt\", min_th = 3, max_th = 12, max_p = 0.2, w_q = 0.01 }\n",
            _ => "queue = { type = \"red\", limit = \"40pkt\", min_th = 3, max_th = 12, gentle = false, mean_pkt_size = \"1040B\" }\n",
        };
        t += match p.below(5) {
            0 => "loss = 0.002\n",
            1 => "loss = { model = \"gilbert-elliott\", good_to_bad = 0.01, bad_to_good = 0.2, loss_good = 0.0, loss_bad = 0.3 }\n",
            _ => "",
        };
        for k in 0..p.below(3) {
            // One event per second at most, outages shorter than that: they never overlap.
            let at = 1000 * k + p.below(500);
            t += &format!("[[link.event]]\nat = \"{at}ms\"\n");
            t += &match p.below(3) {
                0 => format!("rate = \"{}Mbps\"\n", 1 + p.below(40)),
                1 => format!("delay = \"{}ms\"\n", p.below(50)),
                _ => format!("down = \"{}ms\"\n", 1 + p.below(400)),
            };
        }
    }
    let flows = 1 + p.below(5);
    for f in 0..flows {
        let a = p.below(links as u64);
        let b = p.below(links as u64);
        t += &format!(
            "[[flow]]\nname = \"f{f}\"\nstart = \"{}ms\"\n",
            p.below(500)
        );
        match p.below(6) {
            0 => {
                t += &format!(
                    "path = [\"l{a}\"]\ntraffic = {{ type = \"cbr\", rate = \"{}Mbps\", size = \"1000B\" }}\n",
                    1 + p.below(5)
                )
            }
            1 | 2 if a != b => {
                t += &format!(
                    "algorithm = \"{}\"\nsubflows = [ {{ path = [\"l{a}\"] }}, {{ path = [\"l{b}\"], start = \"{}ms\" }} ]\n",
                    p.one(&["lia", "olia", "balia", "reno"]),
                    p.below(1000)
                )
            }
            3 => {
                t += &format!(
                    "path = [\"l{a}\"]\ntraffic = {{ type = \"transfer\", size = \"{}kB\" }}\n",
                    50 + p.below(2000)
                )
            }
            4 => t += &format!("path = [\"l{a}\"]\ntraffic = {{ type = \"onoff\", on = \"300ms\", off = \"200ms\" }}\n"),
            _ => {
                if a == b {
                    t += &format!("path = [\"l{a}\"]\n");
                } else {
                    t += &format!("path = [\"l{a}\", \"l{b}\"]\n");
                }
            }
        }
    }
    t
}

fn results_with(sc: &Scenario, seed: u64, sched: Scheduler) -> Results {
    let mut sim = Simulation::with_scheduler(sc, Some(seed), sched);
    sim.run();
    sim.check_conservation().unwrap_or_else(|e| panic!("{e}"));
    sim.results()
}

fn run_with(sc: &Scenario, seed: u64, sched: Scheduler) -> String {
    // Debug formatting prints every float exactly and NaN as NaN.
    format!("{:?}", results_with(sc, seed, sched))
}

#[test]
fn random_scenarios_give_identical_results_on_the_fast_and_the_reference_queue() {
    let mut ran = 0;
    for case in 0..40u64 {
        let text = random_scenario(case);
        let sc = match Scenario::parse(&text, "<random>", "random") {
            Ok(sc) => sc,
            Err(e) => panic!("generated scenario {case} is invalid: {e}\n{text}"),
        };
        let fast = run_with(&sc, case, Scheduler::new());
        let reference = run_with(&sc, case, Scheduler::reference());
        assert!(
            fast == reference,
            "case {case}: results differ between the queues\n{text}"
        );
        ran += 1;
    }
    assert_eq!(ran, 40);
}

/// Hundreds of flows behind a 2 Gbit/s bottleneck: the queue's buckets (262 µs each) hold
/// hundreds of events, so the fast queue splits them into sub-buckets while the bottleneck
/// pushes its next departure a few microseconds ahead. Both queues must still agree exactly.
#[test]
fn crowded_buckets_give_identical_results_on_the_fast_and_the_reference_queue() {
    let text = r#"
duration = "1s"
sample_interval = "100ms"
[tcp]
recovery = "sack"
[[link]]
name = "bottleneck"
rate = "2Gbps"
delay = "5ms"
queue = { type = "red", limit = "2000pkt", min_th = 200, max_th = 600, max_p = 0.1, w_q = "auto" }
[[link]]
name = "src{i}"
count = 300
rate = "100Mbps"
delay = "1ms"
queue = { type = "droptail", limit = "200pkt" }
[[link]]
name = "dst{i}"
count = 300
rate = "100Mbps"
delay = "{n}/100 ms"
queue = { type = "droptail", limit = "200pkt" }
[[flow]]
name = "f{i}"
count = 300
path = ["src{i}", "bottleneck", "dst{i}"]
start = "{i}/1000 ms"
"#;
    let sc = Scenario::parse(text, "<crowded>", "crowded").expect("valid scenario");
    let r = results_with(&sc, 3, Scheduler::new());
    let reference = run_with(&sc, 3, Scheduler::reference());
    assert!(
        format!("{r:?}") == reference,
        "results differ between the queues"
    );
    // The load that makes buckets crowded: more than 128 events handed out per 262,144 ns
    // bucket on average (the size above which the fast queue splits a bucket). A build that
    // counted splits saw 2,870 in this run, of buckets of up to 228 events.
    let buckets = r.stats.simulated_s * 1e9 / 262_144.0;
    let per_bucket = r.stats.events as f64 / buckets;
    assert!(per_bucket > 128.0, "{per_bucket} events per bucket");
}
