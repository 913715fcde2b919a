//! Scenarios with a generated fabric: `[topology]`, `from`/`to` flows, `[traffic]` and
//! `[[topology.event]]`, read and run end to end. Expected counts come from the topologies'
//! definitions.

mod common;

use pathweave_sim::datacenter::{ecmp_choice, Fabric, TopologyKind};
use pathweave_sim::scenario::LinkChange;
use pathweave_sim::{Scenario, ScenarioError};

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, "dc.toml", "dc")
}

fn fat_tree(k: u32, rest: &str) -> String {
    format!(
        "duration = \"200ms\"\nseed = 3\n[topology]\ntype = \"fat-tree\"\nk = {k}\n\
         link_rate = \"100Mbps\"\n{rest}"
    )
}

fn error(text: &str) -> (String, String) {
    match parse(text) {
        Err(ScenarioError::Invalid { field, message, .. })
        | Err(ScenarioError::Missing { field, message, .. }) => (field, message),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn a_fat_tree_becomes_one_link_per_cable() {
    let sc = parse(&fat_tree(4, "[traffic]\npattern = \"permutation\"\n")).unwrap();
    let topo = sc.topology.as_ref().unwrap();
    assert_eq!(topo.fabric.hosts(), 16);
    assert_eq!(topo.fabric.switches(), 20);
    assert_eq!(sc.links.len(), 48);
    assert_eq!(sc.flows.len(), 16);
    // Host links at the link rate, default queue 100 packets, default delay 10 µs.
    let l = &sc.links[0];
    assert_eq!(l.name, "host0-edge0_0");
    assert_eq!(l.forward.rate.bps(), 100_000_000);
    assert_eq!(l.forward.delay.as_nanos(), 10_000);
    for f in &sc.flows {
        let (s, d) = f.hosts.unwrap();
        assert_eq!(f.name, format!("h{s}-h{d}"));
        assert_eq!(f.subflows.len(), 1);
    }
}

#[test]
fn routed_subflows_follow_the_ecmp_hash() {
    let text = fat_tree(
        4,
        "[[flow]]\nname = \"a\"\nalgorithm = \"lia\"\nfrom = \"host0\"\nto = \"host15\"\n\
         subflows = 8\n",
    );
    let sc = parse(&text).unwrap();
    let f = &sc.flows[0];
    assert_eq!(f.subflows.len(), 8);
    let fabric = Fabric::new(TopologyKind::FatTree { k: 4 });
    let mut hops = Vec::new();
    for (j, sf) in f.subflows.iter().enumerate() {
        // Connection 0, seed 3, 4 equal-cost paths between pods 0 and 3.
        fabric.path(0, 15, ecmp_choice(3, 0, j as u64, 4), &mut hops);
        assert_eq!(sf.path, hops);
    }
    assert_eq!(
        parse(&text).unwrap(),
        sc,
        "the same text gives the same routes"
    );
    // 8 subflows over 4 paths: noted.
    let notes = &sc.topology.as_ref().unwrap().notes;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("8 subflows over 4 paths"), "{notes:?}");
}

#[test]
fn vl2_and_bcube_scenarios_read() {
    let vl2 = parse(
        "duration = \"1s\"\n[topology]\ntype = \"vl2\"\nda = 4\ndi = 4\nlink_rate = \"1Gbps\"\n\
         [traffic]\npattern = \"random\"\n",
    )
    .unwrap();
    let f = &vl2.topology.as_ref().unwrap().fabric;
    // 4 ToRs of 20 hosts; 4 + 4 + 2 switches; 80 + 8 + 8 cables.
    assert_eq!((f.hosts(), f.switches(), f.cables()), (80, 10, 96));
    // Switch links 10× the hosts' by default.
    let uplink = vl2.link_index("tor0-agg0").unwrap();
    assert_eq!(vl2.links[uplink].forward.rate.bps(), 10_000_000_000);
    let bcube = parse(
        "duration = \"1s\"\n[topology]\ntype = \"bcube\"\nn = 4\nk = 1\nlink_rate = \"1Gbps\"\n\
         [traffic]\npattern = \"all-to-all\"\n",
    )
    .unwrap();
    let f = &bcube.topology.as_ref().unwrap().fabric;
    assert_eq!((f.hosts(), f.switches(), f.cables()), (16, 8, 32));
    assert_eq!(bcube.flows.len(), 16 * 15);
}

#[test]
fn oversubscription_slows_the_switch_links() {
    let sc = parse(&fat_tree(
        4,
        "oversubscription = 4\n[traffic]\npattern = \"random\"\n",
    ))
    .unwrap();
    let host = sc.link_index("host0-edge0_0").unwrap();
    let up = sc.link_index("edge0_0-agg0_0").unwrap();
    let core = sc.link_index("agg0_0-core0").unwrap();
    assert_eq!(sc.links[host].forward.rate.bps(), 100_000_000);
    assert_eq!(sc.links[up].forward.rate.bps(), 25_000_000);
    assert_eq!(sc.links[core].forward.rate.bps(), 25_000_000);
}

#[test]
fn a_topology_event_changes_a_generated_link() {
    let sc = parse(&fat_tree(
        4,
        "[[topology.event]]\nlink = \"agg0_0-core0\"\nat = \"50ms\"\ndown = \"20ms\"\n\
         [traffic]\npattern = \"permutation\"\n",
    ))
    .unwrap();
    let l = &sc.links[sc.link_index("agg0_0-core0").unwrap()];
    let changes: Vec<LinkChange> = l.events.iter().map(|e| e.change).collect();
    assert_eq!(changes, vec![LinkChange::Down, LinkChange::Up]);
    let (field, message) = error(&fat_tree(
        4,
        "[[topology.event]]\nlink = \"agg0_0-core9\"\nat = \"50ms\"\ndown = \"20ms\"\n\
         [traffic]\npattern = \"permutation\"\n",
    ));
    assert_eq!(field, "topology.event[0].link");
    assert!(message.contains("no generated link"), "{message}");
}

#[test]
fn generated_traffic_is_seeded() {
    let text = |seed: u32| {
        format!(
            "duration = \"1s\"\nseed = {seed}\n[topology]\ntype = \"fat-tree\"\nk = 8\n\
             link_rate = \"1Gbps\"\n[traffic]\npattern = \"permutation\"\n\
             start = {{ uniform = [\"0s\", \"100ms\"] }}\n\
             size = {{ pareto = {{ mean = \"1MB\", shape = 1.2 }} }}\n"
        )
    };
    let a = parse(&text(1)).unwrap();
    assert_eq!(a, parse(&text(1)).unwrap());
    assert_ne!(a.flows, parse(&text(2)).unwrap().flows);
    assert!(a.flows.iter().all(|f| f.start.as_nanos() <= 100_000_000));
}

#[test]
fn bad_topologies_and_routes_are_refused_with_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (&fat_tree(5, "[traffic]\npattern = \"permutation\"\n"), "topology.k", "even"),
        (&fat_tree(0, "[traffic]\npattern = \"permutation\"\n"), "topology.k", ""),
        (&fat_tree(66, "[traffic]\npattern = \"permutation\"\n"), "topology.k", ""),
        (
            &fat_tree(4, "[traffic]\npattern = \"ring\"\n"),
            "traffic.pattern",
            "allowed",
        ),
        (
            &fat_tree(4, "[[flow]]\nname = \"a\"\nfrom = \"host0\"\nto = \"host16\"\n"),
            "flow[0].to",
            "no host is called 'host16'",
        ),
        (
            &fat_tree(4, "[[flow]]\nname = \"a\"\nfrom = \"host0\"\nto = \"host1\"\npath = [\"host0-edge0_0\"]\n"),
            "flow[0].path",
            "not both",
        ),
        (
            "duration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n\
             [[flow]]\nname = \"a\"\nfrom = \"host0\"\nto = \"host1\"\n",
            "flow[0].from",
            "has none",
        ),
        (
            &fat_tree(4, "[[flow]]\nname = \"a\"\nfrom = \"host0\"\nto = \"host0\"\n"),
            "flow[0].to",
            "different",
        ),
        (
            &fat_tree(4, "[[flow]]\nname = \"a\"\nfrom = \"host0\"\nto = \"host1\"\nsubflows = 65\n"),
            "flow[0].subflows",
            "",
        ),
        (
            "duration = \"1s\"\n[topology]\ntype = \"torus\"\nlink_rate = \"1Gbps\"\n",
            "topology.type",
            "allowed",
        ),
        (
            "duration = \"1s\"\n[topology]\ntype = \"bcube\"\nn = 4\nk = 1\nlink_rate = \"1Gbps\"\noversubscription = 2\n",
            "topology.oversubscription",
            "not a parameter",
        ),
        (
            "duration = \"1s\"\n[topology]\ntype = \"bcube\"\nn = 64\nk = 3\nlink_rate = \"1Gbps\"\n",
            "topology",
            "more than 65536 hosts",
        ),
    ];
    for (text, field, needle) in cases {
        let (f, m) = error(text);
        assert_eq!(&f, field, "{m}");
        assert!(m.contains(needle), "{field}: {m}");
    }
    let (f, m) = error(
        "duration = \"1s\"\n[topology]\ntype = \"bcube\"\nn = 20\nk = 1\nlink_rate = \"1Gbps\"\n\
         [traffic]\npattern = \"all-to-all\"\n",
    );
    assert_eq!(f, "traffic.pattern");
    assert!(m.contains("more than 100000"), "{m}");
}

/// A k = 4 FatTree permutation runs: every flow delivers, none faster than its host link.
#[test]
fn a_fat_tree_permutation_runs() {
    let sc = parse(&fat_tree(
        4,
        "[traffic]\npattern = \"permutation\"\nalgorithm = \"lia\"\nsubflows = 4\n",
    ))
    .unwrap();
    let r = common::run(&sc, None);
    for (name, g) in r.flows.name.iter().zip(&r.flows.goodput_bps) {
        assert!(*g > 1e6, "{name}: {g}");
        assert!(*g <= 100e6, "{name}: {g}");
    }
}
