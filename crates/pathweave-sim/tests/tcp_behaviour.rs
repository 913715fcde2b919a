//! Single-path TCP behaviour against independent references: link capacity, the
//! Mathis et al. square-root formula, Jain's index, RTT bias, and packet conservation.

mod common;
use common::*;

/// One Reno flow over a link whose buffer is one bandwidth-delay product: after the first
/// halving the window never falls below the BDP, so the link stays busy (≥ 95 %).
#[test]
fn one_reno_flow_fills_a_bdp_buffered_link() {
    // 10 Mbps, RTT 2·(20 + 1) ms = 42 ms → BDP = 52.5 kB ≈ 51 packets of 1040 B.
    let sc = scenario(
        r#"
duration = "60s"
[[link]]
name = "access"
rate = "1Gbps"
delay = "1ms"
queue = { type = "droptail", limit = "10000pkt" }
[[link]]
name = "bn"
rate = "10Mbps"
delay = "20ms"
queue = { type = "droptail", limit = "51pkt" }
[[flow]]
name = "reno"
path = ["access", "bn"]
"#,
    );
    let r = run(&sc, None);
    let l = link_row(&r, "bn");
    assert!(
        r.links.utilization[l] >= 0.95,
        "utilisation {}",
        r.links.utilization[l]
    );
    // Goodput is the payload share of the wire rate: at most 10 Mbps · 1000/1040.
    let payload_rate = 10e6 * 1000.0 / 1040.0;
    let g = r.flows.goodput_bps[0];
    assert!((0.95 * payload_rate..=payload_rate).contains(&g), "{g}");
}

/// One Reno flow on a 1 Gbps, 25 ms path with Bernoulli loss `p` and a buffer it never fills,
/// so the RTT stays at its 50 ms base.
fn lossy_path(p: f64, recovery: &str, duration: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[tcp]
recovery = "{recovery}"
[[link]]
name = "lossy"
rate = "1Gbps"
delay = "25ms"
loss = {p}
queue = {{ type = "droptail", limit = "100000pkt" }}
[[flow]]
name = "reno"
path = ["lossy"]
"#
    )
}

/// Mathis, Semke, Mahdavi & Ott (1997): a Reno flow with random loss p gets
/// MSS/RTT·√(3/(2p)). Ample buffers and a fast link keep the RTT at its base value.
#[test]
fn reno_under_random_loss_follows_the_square_root_formula() {
    for p in [0.001f64, 0.01] {
        let r = run(&scenario(&lossy_path(p, "newreno", "200s")), Some(3));
        let rtt = 0.050;
        let predicted = 1000.0 * 8.0 / rtt * (3.0 / (2.0 * p)).sqrt();
        let got = r.flows.goodput_bps[0];
        let err = (got - predicted).abs() / predicted;
        assert!(
            err <= 0.25,
            "p = {p}: goodput {got:.0} vs formula {predicted:.0} ({:.1} %)",
            err * 100.0
        );
    }
}

/// Padhye, Firoiu, Towsley & Kurose (1998) model Reno with its timeouts: with one ACK per
/// segment, B(p) = 1 / (RTT·√(2p/3) + T0·min(1, 3·√(3p/8))·p·(1 + 32p²)) segments per
/// second. On a fast, lossy 50 ms path the RTO sits at its 200 ms floor, so T0 = 0.2 s. Reno
/// recovery (`recovery = "reno"`) gets within 10 % of it up to 2 % loss, where the
/// square-root formula, which ignores timeouts, is already 20 % high; NewReno, which repairs
/// multi-loss windows without the timer, times out less and does at least as well.
#[test]
fn reno_recovery_under_random_loss_follows_the_padhye_model() {
    let text = |p: f64, recovery: &str| lossy_path(p, recovery, "400s");
    for p in [0.005f64, 0.01, 0.02] {
        let reno = run(&scenario(&text(p, "reno")), Some(1));
        let newreno = run(&scenario(&text(p, "newreno")), Some(1));
        let rtt = reno.flows.mean_srtt_s[0];
        let t0 = 0.2;
        let timeouts = t0 * (3.0 * (3.0 * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
        let predicted = 1.0 / (rtt * (2.0 * p / 3.0).sqrt() + timeouts);
        let got = reno.flows.goodput_bps[0] / 8000.0;
        let err = (got - predicted).abs() / predicted;
        assert!(
            err <= 0.10,
            "p = {p}: {got:.1} segments/s vs model {predicted:.1} ({:.1} %)",
            err * 100.0
        );
        assert!(reno.flows.timeouts[0] > newreno.flows.timeouts[0]);
        assert!(newreno.flows.goodput_bps[0] >= reno.flows.goodput_bps[0]);
    }
}

fn jain_of(r: &pathweave_sim::Results) -> f64 {
    pathweave_sim::results::jain_index(&r.flows.goodput_bps)
}

/// Equal-RTT flows sharing one bottleneck converge to equal shares (Chiu & Jain 1989):
/// Jain's index ≥ 0.95 over 100 s, on drop-tail and on RED.
#[test]
fn equal_rtt_flows_share_fairly_on_droptail_and_red() {
    for n in [2usize, 8, 32] {
        for queue in [
            r#"{ type = "droptail", limit = "100pkt" }"#,
            r#"{ type = "red", limit = "100pkt", min_th = 10, max_th = 30 }"#,
        ] {
            let sc = scenario(&dumbbell(n, "20Mbps", "20ms", queue, "2ms", 100));
            let r = run(&sc, None);
            let j = jain_of(&r);
            assert!(j >= 0.95, "n = {n}, queue {queue}: Jain {j:.4}");
            let l = link_row(&r, "bn");
            assert!(
                r.links.utilization[l] > 0.8,
                "n = {n}: utilisation {}",
                r.links.utilization[l]
            );
        }
    }
}

/// Reno's rate is inversely proportional to RTT at equal loss rate; with RED (loss roughly
/// equal per packet) the short flow of half the RTT gets between 1.5× and 3× the long one.
#[test]
fn halving_the_rtt_roughly_doubles_the_share() {
    let sc = scenario(
        r#"
duration = "100s"
[[link]]
name = "bn"
rate = "20Mbps"
delay = "5ms"
queue = { type = "red", limit = "100pkt", min_th = 10, max_th = 30 }
[[link]]
name = "near"
rate = "1Gbps"
delay = "10ms"
queue = { type = "droptail", limit = "10000pkt" }
[[link]]
name = "far"
rate = "1Gbps"
delay = "25ms"
queue = { type = "droptail", limit = "10000pkt" }
[[flow]]
name = "short"
path = ["near", "bn"]
[[flow]]
name = "long"
path = ["far", "bn"]
start = "7ms"
"#,
    );
    // Base RTTs: 2·(10+5) = 30 ms and 2·(25+5) = 60 ms.
    let r = run(&sc, None);
    let ratio =
        r.flows.goodput_bps[flow_row(&r, "short")] / r.flows.goodput_bps[flow_row(&r, "long")];
    assert!((1.5..=3.0).contains(&ratio), "short/long = {ratio:.3}");
}

/// Under saturating load RED keeps its average queue between min_th and max_th.
#[test]
fn red_average_stays_between_the_thresholds_under_load() {
    let sc = scenario(&dumbbell(
        16,
        "10Mbps",
        "20ms",
        r#"{ type = "red", limit = "200pkt", min_th = 20, max_th = 60, max_p = 0.1, w_q = 0.002 }"#,
        "2ms",
        100,
    ));
    let r = run(&sc, None);
    let bn = 0u32; // the bottleneck is link 0, forward direction
    let s = &r.link_series;
    let avgs: Vec<f64> = (0..s.time_s.len())
        .filter(|&k| s.link[k] == bn && s.time_s[k] >= 20.0)
        .map(|k| s.red_average[k])
        .collect();
    let mean = avgs.iter().sum::<f64>() / avgs.len() as f64;
    assert!(mean > 20.0 && mean < 60.0, "mean RED average {mean:.2}");
    let l = link_row(&r, "bn");
    assert!(r.links.drops_early[l] > 0, "RED made early drops");
}

/// RFC 3042 (limited transmit): with windows of a few segments, a loss often leaves fewer than
/// three segments behind it to produce duplicate ACKs, and only a timeout recovers. Letting
/// the first two duplicates each send a new segment restores fast retransmit in many of those
/// cases: fewer timeouts and more goodput at 5 % random loss, where the window averages about
/// five segments. Off, the run is the default's byte for byte.
#[test]
fn limited_transmit_turns_timeouts_into_fast_retransmits() {
    let text = |lt: &str| {
        format!(
            r#"
duration = "200s"
[tcp]
{lt}
[[link]]
name = "l"
rate = "2Mbps"
delay = "5ms"
loss = 0.05
queue = {{ type = "droptail", limit = "100pkt" }}
[[flow]]
name = "reno"
path = ["l"]
"#
        )
    };
    let off = run(&scenario(&text("limited_transmit = false")), None);
    let default = run(&scenario(&text("")), None);
    assert_eq!(format!("{:?}", off.flows), format!("{:?}", default.flows));
    let on = run(&scenario(&text("limited_transmit = true")), None);
    let (t_off, t_on) = (off.flows.timeouts[0], on.flows.timeouts[0]);
    assert!(
        t_off >= 50,
        "the small windows time out without it: {t_off}"
    );
    assert!(2 * t_on <= t_off, "timeouts {t_on} with, {t_off} without");
    assert!(on.flows.goodput_bps[0] > 1.1 * off.flows.goodput_bps[0]);
}
