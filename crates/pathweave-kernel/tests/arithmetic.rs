//! The shared header (src/bpf/pw_arith.h, the code the BPF programs run) against every
//! `linux`-mode vector of LIA, OLIA, Kelly–Voice and Balia and every weighted-AIMD vector in
//! reference/vectors.json, and against pathweave-cc's kernel arithmetic on random states.

use pathweave_cc::cc::aimd;
use pathweave_cc::cc::multipath::balia::kernel_recalc;
use pathweave_cc::cc::multipath::coupled::fully_coupled_ssthresh;
use pathweave_cc::cc::multipath::kelly_voice::kernel_counter_delta_no_epsilon;
use pathweave_cc::cc::multipath::lia::{kernel_alpha, kernel_threshold};
use pathweave_cc::cc::multipath::olia::{kernel_counter_delta, kernel_epsilon, KernelOliaSample};
use pathweave_cc::cc::multipath::KernelSample;
use pathweave_kernel::arith::{self, Sample, WEIGHT_ONE};
use proptest::prelude::*;
use serde_json::Value;

fn vectors() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../reference/vectors.json");
    let text = std::fs::read_to_string(p).expect("reference/vectors.json is vendored");
    serde_json::from_str(&text).expect("vectors.json parses")
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

fn u(v: &Value) -> u64 {
    v.as_u64().expect("an unsigned integer")
}

/// The kernel's srtt_us for an RTT in seconds: 8 × µs.
fn srtt_us(rtt: f64) -> u64 {
    (rtt * 8e6).round() as u64
}

fn samples(v: &Value, loss: Option<&str>) -> Vec<Sample> {
    let w = v["w"].as_array().unwrap();
    let rtt = v["rtt"].as_array().unwrap();
    (0..w.len())
        .map(|i| Sample {
            cwnd: u(&w[i]),
            srtt_us: srtt_us(f(&rtt[i])),
            loss_interval: loss.map_or(0, |k| u(&v[k][i])),
        })
        .collect()
}

/// ACK events until the counter grows the window by one packet.
fn events_per_packet(t: u64) -> u64 {
    let mut cnt = 0;
    let mut n = 1;
    while !arith::counter_step(&mut cnt, t) {
        n += 1;
    }
    n
}

#[test]
fn lia_reproduces_every_linux_vector() {
    let mut checked = 0;
    for v in vectors()["LIA"].as_array().unwrap() {
        let s = samples(v, None);
        let k = &v["kernel"];
        let (alpha, best) = arith::lia_alpha(&s).unwrap();
        assert_eq!(alpha, u(&k["alpha_fixed"]), "{}", v["state"]);
        assert_eq!(best as u64, u(&k["best_path"]), "{}", v["state"]);
        for (i, p) in k["per_path"].as_array().unwrap().iter().enumerate() {
            let t = arith::lia_threshold(alpha, s[i].cwnd);
            assert_eq!(t, u(&p["threshold"]), "{} path {i}", v["state"]);
            let inc = 1.0 / events_per_packet(t) as f64;
            assert!((inc - f(&p["inc_per_ack"])).abs() < 1e-12, "{}", v["state"]);
            assert_eq!(arith::reno_ssthresh(s[i].cwnd), u(&p["loss_new_ssthresh"]));
            checked += 1;
        }
    }
    assert_eq!(checked, 13, "LIA per-path vectors checked");
    println!("LIA: {checked} per-path linux vectors matched");
}

#[test]
fn olia_reproduces_every_linux_vector() {
    let mut checked = 0;
    for v in vectors()["OLIA"].as_array().unwrap() {
        let s = samples(v, Some("l_bytes"));
        let n = s.len() as u64;
        for (r, p) in v["kernel"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            let (num, den) = arith::olia_epsilon(&s, r, n);
            assert_eq!(
                num,
                p["eps_num"].as_i64().unwrap(),
                "{} path {r}",
                v["state"]
            );
            assert_eq!(den, u(&p["eps_den"]), "{} path {r}", v["state"]);
            let d = arith::olia_counter_delta(&s, r, num, den);
            assert_eq!(
                d,
                p["cnt_delta_per_ack"].as_i64().unwrap(),
                "{}",
                v["state"]
            );
            // ACK events to +1 packet (none when the counter does not rise).
            let mut cnt = 0i64;
            let mut acks = None;
            for e in 1..=100_000u64 {
                if arith::olia_counter_step(&mut cnt, d, s[r].cwnd) != s[r].cwnd {
                    acks = Some(e);
                    break;
                }
            }
            let acks = if d > 0 { acks } else { None };
            assert_eq!(
                acks,
                p["acks_per_plus1"].as_u64(),
                "{} path {r}",
                v["state"]
            );
            let loss = &v["ideal"]["per_path"][r]["loss_new_ssthresh_linux"];
            assert_eq!(arith::reno_ssthresh(s[r].cwnd), u(loss));
            checked += 1;
        }
    }
    assert_eq!(checked, 11, "OLIA per-path vectors checked");
    println!("OLIA: {checked} per-path linux vectors matched");
}

#[test]
fn olia_max_window_path_shrinks_in_the_kernel_counter() {
    // O4: the largest window loses a packet after ⌈1023/17⌉ = 61 ACK events.
    let v = &vectors()["OLIA"][3];
    let s = samples(v, Some("l_bytes"));
    let (num, den) = arith::olia_epsilon(&s, 0, 2);
    let d = arith::olia_counter_delta(&s, 0, num, den);
    let mut cnt = 0;
    let shrunk = (1..=100).find(|_| arith::olia_counter_step(&mut cnt, d, 12) == 11);
    assert_eq!(shrunk, Some(61));
}

/// ACK events of step `d` on OLIA's counter until the window grows by one packet (None when
/// the step is not positive: the window never grows).
fn olia_acks_per_packet(d: i64, cwnd: u64) -> Option<u64> {
    let mut cnt = 0i64;
    let acks = (1..=100_000u64).find(|_| arith::olia_counter_step(&mut cnt, d, cwnd) != cwnd);
    if d > 0 {
        acks
    } else {
        None
    }
}

#[test]
fn kelly_voice_reproduces_every_vector() {
    let mut checked = 0;
    for v in vectors()["KV"].as_array().unwrap() {
        let s = samples(v, None);
        let state = &v["state"];
        let n = s.len() as f64;
        for (r, p) in v["kernel"]["per_path"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            // The kernel's step, its ACKs per packet and its loss response: exact.
            let d = arith::kv_counter_delta(&s, r);
            assert_eq!(
                d,
                p["cnt_delta_per_ack"].as_i64().unwrap(),
                "{state} path {r}"
            );
            assert_eq!(
                olia_acks_per_packet(d, s[r].cwnd),
                p["acks_per_plus1"].as_u64(),
                "{state} path {r}"
            );
            assert_eq!(arith::kv_ssthresh(s[r].cwnd), u(&p["loss_new_ssthresh"]));
            // The same step as OLIA's with ε = 0 (mptcp_olia.c's own form of the quotient).
            assert_eq!(
                arith::olia_counter_delta(&s, r, 0, 1),
                d,
                "{state} path {r}"
            );
            // Against the real-valued increase (ALGORITHMS.md §1.5): with X = 2^10·Σ_k
            // w_k·rtt_r/rtt_k the ideal step is 2^30·w_r/X² = 1024·Δw_r, and the kernel's
            // denominator 1 + Σ_k ⌊…⌋ lies in (X − n + 1, X + 1], so the step lies between the
            // floors of 1024·Δw_r·(X/(X + 1))² and 1024·Δw_r·(X/(X − n + 1))².
            let ideal = &v["ideal"]["per_path"][r];
            let exact = u(&ideal["inc_num"]) as f64 / u(&ideal["inc_den"]) as f64;
            assert!((exact - f(&ideal["inc_per_ack"])).abs() < 1e-15);
            let rtt = |k: usize| f(&v["rtt"][k]);
            let x: f64 = (0..s.len())
                .map(|k| 1024.0 * s[k].cwnd as f64 * rtt(r) / rtt(k))
                .sum();
            let lo = (1024.0 * exact * (x / (x + 1.0)).powi(2) - 1e-9).floor() as i64;
            let hi = (1024.0 * exact * (x / (x - n + 1.0)).powi(2) + 1e-9).floor() as i64;
            assert!(
                (lo..=hi).contains(&d),
                "{state} path {r}: step {d} outside [{lo}, {hi}] from the ideal {exact}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 11, "Kelly–Voice per-path vectors checked");
    println!("Kelly–Voice: {checked} per-path linux vectors matched");
}

#[test]
fn balia_reproduces_every_linux_vector() {
    let mut checked = 0;
    for v in vectors()["Balia"].as_array().unwrap() {
        let s = samples(v, None);
        let k = &v["kernel"];
        let mss = u(&k["mss"]);
        for (r, p) in k["per_path"].as_array().unwrap().iter().enumerate() {
            let b = arith::balia_recalc(&s, r, mss).unwrap();
            let state = &v["state"];
            assert_eq!(b.alpha, u(&p["alpha_int"]), "{state} path {r}");
            assert_eq!(b.scale_downs, u(&p["scale_downs"]), "{state} path {r}");
            assert_eq!(b.ai, u(&p["ai"]), "{state} path {r}");
            assert_eq!(b.md, u(&p["md"]), "{state} path {r}");
            let ss = arith::balia_ssthresh(s[r].cwnd, b.md);
            assert_eq!(ss, u(&p["new_ssthresh"]), "{state} path {r}");
            let inc = 1.0 / events_per_packet(b.ai) as f64;
            assert!(
                (inc - f(&p["inc_per_ack"])).abs() < 1e-12,
                "{state} path {r}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 10, "Balia per-path vectors checked");
    println!("Balia: {checked} per-path linux vectors matched");
}

#[test]
fn weighted_aimd_reproduces_every_vector() {
    let mut checked = 0;
    for v in vectors()["BMC"].as_array().unwrap() {
        let Some(paths) = v.get("aimd").map(|a| a["per_path"].as_array().unwrap()) else {
            continue; // P1/P2 are the proportion manager's (src/bmc.rs tests them)
        };
        for (i, p) in paths.iter().enumerate() {
            let w = u(&v["w"][i]);
            let d = f(&p["D"]);
            let weight = (d * WEIGHT_ONE as f64).round() as u64;
            // ACKs of one packet each until the window grows: 1/inc_per_ack to within the
            // weight's 2^-16 rounding.
            let mut acc = 0;
            let acks = (1..=1_000_000u64)
                .find(|_| arith::aimd_step(&mut acc, w, weight, 1) > 0)
                .unwrap();
            let want = 1.0 / f(&p["inc_per_ack"]);
            assert!(
                (acks as f64 - want).abs() <= 1.0 + want * 1e-4,
                "{} path {i}: {acks} ACKs, want {want}",
                v["state"]
            );
            let same = aimd::increase_per_ack(d * d, w as f64);
            assert!((same - f(&p["inc_per_ack"])).abs() < 1e-12);
            // b = ½ in whole packets: ssthresh ⌊w/2⌋, so the cut is the vector's w/2 rounded up.
            let cut = w - arith::aimd_ssthresh(w);
            assert_eq!(cut, f(&p["loss_decrease"]).ceil() as u64);
            assert!((aimd::loss_decrease(0.5, w as f64) - f(&p["loss_decrease"])).abs() < 1e-12);
            checked += 1;
        }
    }
    assert_eq!(checked, 7, "weighted AIMD per-path vectors checked");
    println!("weighted AIMD: {checked} per-path vectors matched");
}

#[test]
fn bmc_weights_in_use_are_shares_of_the_usable_subflows() {
    let half = WEIGHT_ONE / 2;
    assert_eq!(arith::bmc_effective_weight(&[half, half], 0), half);
    // A missing weight counts as the equal share; a lone subflow is Reno.
    assert_eq!(arith::bmc_effective_weight(&[0, 0], 1), half);
    assert_eq!(
        arith::bmc_effective_weight(&[WEIGHT_ONE / 5], 0),
        WEIGHT_ONE
    );
}

#[test]
fn fully_coupled_matches_pathweave_cc() {
    for (own, total) in [(10u64, 15u64), (10, 10), (3, 20), (40, 41), (1, 1)] {
        let want = fully_coupled_ssthresh(own as f64, total as f64, 2.0, 1.0).floor() as u64;
        assert_eq!(arith::coupled_ssthresh(own, total), want, "{own}/{total}");
    }
    // Δw = acked/W: W ACKs of one packet grow the window by one.
    let mut cnt = 0;
    let grown: u64 = (0..30).map(|_| arith::coupled_step(&mut cnt, 15, 1)).sum();
    assert_eq!(grown, 2);
}

fn kernel(s: &[Sample]) -> Vec<KernelSample> {
    s.iter()
        .map(|x| KernelSample {
            cwnd: x.cwnd,
            srtt_us: x.srtt_us,
        })
        .collect()
}

/// Paths from `(cwnd, srtt_us, loss_interval)` triples.
fn paths(v: Vec<(u64, u64, u64)>) -> Vec<Sample> {
    v.into_iter()
        .map(|(cwnd, srtt_us, loss_interval)| Sample {
            cwnd,
            srtt_us,
            loss_interval,
        })
        .collect()
}

fn state() -> impl Strategy<Value = Vec<Sample>> {
    // Windows up to 1000 packets, RTTs from 10 to 100 ms and loss intervals up to 1 MB, where
    // no 64-bit intermediate overflows. Beyond them (OLIA's squared rate sum at RTT ratios
    // of a few hundred, ℓ·srtt² for large ℓ) the header saturates, as the 64-bit kernel code
    // overflowed, while pathweave-cc computes in 128 bits.
    prop::collection::vec((1u64..1000, 80_000u64..800_000, 0u64..1_000_000), 1..=4).prop_map(paths)
}

proptest! {
    #[test]
    fn the_header_agrees_with_pathweave_cc(s in state(), mss in 500u64..9000) {
        let k = kernel_alpha(&kernel(&s)).unwrap();
        let (alpha, best) = arith::lia_alpha(&s).unwrap();
        prop_assert_eq!((alpha, best), (k.alpha, k.best));
        for (r, x) in s.iter().enumerate() {
            prop_assert_eq!(arith::lia_threshold(alpha, x.cwnd), kernel_threshold(k.alpha, x.cwnd));
            let b = arith::balia_recalc(&s, r, mss).unwrap();
            let c = kernel_recalc(&kernel(&s), r, mss).unwrap();
            prop_assert_eq!((b.alpha, b.scale_downs as u32, b.ai, b.md), (c.alpha, c.scale_downs, c.ai, c.md));
            let o: Vec<KernelOliaSample> = s.iter().map(|y| KernelOliaSample {
                cwnd: y.cwnd, srtt_us: y.srtt_us, loss_interval: y.loss_interval,
            }).collect();
            let e = kernel_epsilon(&o, r, s.len() as u64);
            let (num, den) = arith::olia_epsilon(&s, r, s.len() as u64);
            prop_assert_eq!((num, den), (e.num, e.den));
            prop_assert_eq!(arith::olia_counter_delta(&s, r, num, den), kernel_counter_delta(&o, r, e));
            let kv = arith::kv_counter_delta(&s, r);
            prop_assert_eq!(kv, kernel_counter_delta_no_epsilon(&o, r));
            prop_assert_eq!(kv, arith::olia_counter_delta(&s, r, 0, 1));
        }
    }
}

#[test]
fn loss_states_clear_the_counter_and_others_keep_it() {
    // include/net/tcp.h: Open 0, Disorder 1, CWR 2, Recovery 3, Loss 4. The kernel clears
    // snd_cwnd_cnt in tcp_init_cwnd_reduction (CWR, recovery) and tcp_enter_loss (timeout).
    let cleared: Vec<u32> = (0..8).filter(|&s| arith::state_clears_counter(s)).collect();
    assert_eq!(cleared, [2, 3, 4]);
}

proptest! {
    #[test]
    fn products_compare_exactly_beyond_64_bits(
        a in 0u64..1 << 32,
        b in prop_oneof![any::<u64>(), Just(u64::MAX)],
        c in 0u64..1 << 32,
        d in any::<u64>(),
    ) {
        // a and c below 2^32, as the kernel's u32 loss markers are (the function's contract).
        let exact = |a: u64, b: u64, c: u64, d: u64| (a as u128 * b as u128).cmp(&(c as u128 * d as u128));
        prop_assert_eq!(arith::mul_cmp(a, b, c, d), exact(a, b, c, d));
        // Equal products that differ only beyond 64 bits, and ones a unit apart.
        prop_assert_eq!(arith::mul_cmp(a, d, a, d), std::cmp::Ordering::Equal);
        if a > 0 && d > 0 {
            prop_assert_eq!(arith::mul_cmp(a, d, a, d - 1), std::cmp::Ordering::Greater);
        }
    }
}

#[test]
fn olia_finds_the_best_path_where_its_products_pass_64_bits() {
    // ALGORITHMS.md §2.3 item 6: at 100 ms (srtt_us = 800,000) ℓ·srtt² passes 2^64 for ℓ
    // above about 29 MB. With ℓ = 30 and 60 MB on equal RTTs the second path is the best by
    // ℓ/srtt², and as it also has the larger window B\M is empty: ε = 0 on both paths.
    let s = [
        Sample {
            cwnd: 10,
            srtt_us: 800_000,
            loss_interval: 30_000_000,
        },
        Sample {
            cwnd: 30,
            srtt_us: 800_000,
            loss_interval: 60_000_000,
        },
    ];
    for r in 0..2 {
        assert_eq!(arith::olia_epsilon(&s, r, 2).0, 0, "path {r}");
    }
}

fn long_path_state() -> impl Strategy<Value = Vec<Sample>> {
    // The kernel's loss markers and srtt_us are u32: ℓ and srtt below 2^32, so ℓ·srtt² stays
    // below 2^96, where the header's comparisons are exact. Small ranges of each make ties
    // (the exact-equality test of B\M) likely.
    let ell = prop_oneof![0u64..4, (1u64 << 28)..(1u64 << 32), Just(40_000_000u64)];
    let srtt = prop_oneof![Just(800_000u64), Just(1_600_000u64), 1u64..u32::MAX as u64];
    prop::collection::vec((1u64..40, srtt, ell), 1..=4).prop_map(paths)
}

proptest! {
    #[test]
    fn olia_epsilon_agrees_with_pathweave_cc_on_long_paths(s in long_path_state()) {
        let o: Vec<KernelOliaSample> = s.iter().map(|y| KernelOliaSample {
            cwnd: y.cwnd, srtt_us: y.srtt_us, loss_interval: y.loss_interval,
        }).collect();
        for r in 0..s.len() {
            let e = kernel_epsilon(&o, r, s.len() as u64);
            prop_assert_eq!(arith::olia_epsilon(&s, r, s.len() as u64), (e.num, e.den));
        }
    }
}

fn u32_state() -> impl Strategy<Value = Vec<Sample>> {
    // The kernel's snd_cwnd and srtt_us are u32. Small and extreme values of each, so that
    // rate sums below and past 2^32 (the saturation of their square) both occur.
    let cwnd = prop_oneof![1u64..64, 1u64..=u32::MAX as u64];
    let srtt = prop_oneof![1u64..16, 8_000u64..8_000_000, 1u64..=u32::MAX as u64];
    prop::collection::vec((cwnd, srtt, Just(0u64)), 1..=8).prop_map(paths)
}

proptest! {
    /// Kelly–Voice's step is exact over the whole range of the kernel's fields: pathweave-cc
    /// computes it in 128 bits, where nothing saturates below a step of one.
    #[test]
    fn kelly_voice_agrees_with_pathweave_cc_over_u32_fields(s in u32_state()) {
        let o: Vec<KernelOliaSample> = s.iter().map(|y| KernelOliaSample {
            cwnd: y.cwnd, srtt_us: y.srtt_us, loss_interval: 0,
        }).collect();
        for r in 0..s.len() {
            let want = kernel_counter_delta_no_epsilon(&o, r);
            prop_assert_eq!(arith::kv_counter_delta(&s, r), want, "path {}", r);
        }
    }
}

#[test]
fn kelly_voice_with_equal_rtts_adds_w_r_over_w_squared() {
    // ALGORITHMS.md §1.5: at equal RTTs Δw_r = w_r/W². W = 100, w = (2, 98): 2·2^10/10^4 and
    // 98·2^10/10^4 in 2^−10 packet, less the kernel's +1 in the denominator (1 + 102400).
    let s = paths(vec![(2, 800_000, 0), (98, 800_000, 0)]);
    assert_eq!(arith::kv_counter_delta(&s, 0), 0); // ⌊0.2048·(102400/102401)²⌋
    assert_eq!(arith::kv_counter_delta(&s, 1), 10); // ⌊10.035…⌋
                                                    // A missing path, or no paths, adds nothing.
    assert_eq!(arith::kv_counter_delta(&s, 2), 0);
    assert_eq!(arith::kv_counter_delta(&[], 0), 0);
}
