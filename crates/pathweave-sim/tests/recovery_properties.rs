//! Loss recovery under random loss, for every recovery algorithm: a sized transfer delivers
//! exactly its bytes (nothing lost, nothing twice to the application), packets are conserved
//! (checked by `run`), and the same seed gives the same run.

mod common;
use common::*;
use proptest::prelude::*;

fn transfer(recovery: &str, loss: f64, rate_mbps: u32, buffer: u32, size_kb: u32) -> String {
    format!(
        r#"
duration = "120s"
[tcp]
recovery = "{recovery}"
[[link]]
name = "l"
rate = "{rate_mbps}Mbps"
delay = "10ms"
loss = {loss}
reverse_loss = {loss}
queue = {{ type = "droptail", limit = "{buffer}pkt" }}
[[flow]]
name = "bulk"
path = ["l"]
[[flow]]
name = "t"
path = ["l"]
traffic = {{ type = "transfer", size = "{size_kb}KB" }}
"#
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_recovery_delivers_a_transfer_exactly_once(
        recovery in prop::sample::select(vec!["reno", "newreno", "sack"]),
        loss in 0.0f64..0.05,
        rate_mbps in 1u32..20,
        buffer in 5u32..100,
        size_kb in 10u32..400,
        seed in 1u64..1000,
    ) {
        let sc = scenario(&transfer(recovery, loss, rate_mbps, buffer, size_kb));
        let a = run(&sc, Some(seed));
        prop_assert_eq!(a.flows.delivered_bytes[1], u64::from(size_kb) * 1000);
        prop_assert!(a.flows.completion_s[1].is_finite());
        let b = run(&sc, Some(seed));
        prop_assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    }
}
