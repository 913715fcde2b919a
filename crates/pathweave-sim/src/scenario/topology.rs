//! `[topology]` and `[traffic]`: a generated datacenter fabric (FatTree, VL2, BCube) whose
//! cables become the scenario's first links, flows routed between named hosts (`from`, `to`)
//! over ECMP-hashed equal-cost paths, and generated traffic matrices.
//!
//! Invariant: the fabric's cable `c` is the scenario's link `c` (topology links come before
//! every `[[link]]`), so a fabric path's hops are scenario hops as they stand.

use super::links::LinkEvent;
use super::values::join;
use super::{FlowSpec, LinkSpec, Reader, SubflowSpec, MAX_SIZE_BYTES, R};
use crate::datacenter::traffic::{pairs, Pattern};
use crate::datacenter::{ecmp_choice, CableTier, Fabric, TopologyKind, MAX_HOSTS};
use crate::link::{Limit, LinkDirSpec, LossModel, QueueSpec};
use crate::quantity::clip;
use crate::rng::{Purpose, Stream};
use pathweave_cc::{Bandwidth, Duration, Instant};
use std::collections::HashMap;
use std::sync::Arc;
use toml::{Table, Value};

/// The default queue of a fabric's link directions: drop-tail, 100 packets.
pub const DEFAULT_FABRIC_QUEUE: Limit = Limit::Packets(100);

/// The default propagation delay of a fabric's cables: 10 µs.
pub const DEFAULT_FABRIC_DELAY: Duration = Duration::from_micros(10);

/// The most flows a `[traffic]` table may generate.
pub const MAX_TRAFFIC_FLOWS: u64 = 100_000;

/// The most subflows a routed flow may open (as for a flow with listed paths).
pub const MAX_SUBFLOWS: u64 = 64;

/// A scenario's generated fabric and what was routed over it.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologySpec {
    /// The fabric; its cable `c` is the scenario's link `c`.
    pub fabric: Fabric,
    /// Things worth telling the user about the routing (more subflows than paths).
    pub notes: Vec<String>,
}

const TOPOLOGY_KEYS: &[&str] = &[
    "type",
    "k",
    "da",
    "di",
    "hosts_per_tor",
    "n",
    "link_rate",
    "link_delay",
    "switch_rate",
    "oversubscription",
    "queue",
    "event",
];

/// The keys of `[traffic]` that are its own; the rest are passed to every generated flow as
/// a `[[flow]]` would give them (algorithm, controller parameters, TCP settings, group).
const TRAFFIC_KEYS: &[&str] = &[
    "pattern", "sources", "fanout", "subflows", "start", "size", "seed",
];

impl Reader<'_> {
    /// The fabric of `[topology]` and its links, in cable order.
    pub(super) fn topology(&self, v: &Value, duration: Duration) -> R<(Fabric, Vec<LinkSpec>)> {
        let path = "topology";
        let t = self.table(path, v)?;
        self.check_keys(t, path, TOPOLOGY_KEYS)?;
        let kind_v = t.get("type").ok_or_else(|| {
            self.missing(
                "topology.type",
                "give type = \"fat-tree\", \"vl2\" or \"bcube\"",
            )
        })?;
        let even = |key: &str, default: Option<u64>, max: u64| -> R<u32> {
            let f = join(path, key);
            let Some(v) = t.get(key) else {
                return match default {
                    Some(d) => Ok(d as u32),
                    None => Err(self.missing(&f, format!("give {key}, an even number ≥ 2"))),
                };
            };
            let x = self.whole(&f, v, 2, max)?;
            if x % 2 != 0 {
                return Err(self.invalid(
                    &f,
                    v,
                    format!("{key} must be even: a switch gives half its ports to each side"),
                ));
            }
            Ok(x as u32)
        };
        let allowed_for = |kind: &str, keys: &[&str]| -> R<()> {
            for key in [
                "k",
                "da",
                "di",
                "hosts_per_tor",
                "n",
                "switch_rate",
                "oversubscription",
            ] {
                if let Some(v) = t.get(key) {
                    if !keys.contains(&key) {
                        return Err(self.invalid(
                            &join(path, key),
                            v,
                            format!(
                                "{key} is not a parameter of type = \"{kind}\" (its parameters: \
                                 {})",
                                keys.join(", ")
                            ),
                        ));
                    }
                }
            }
            Ok(())
        };
        let kind = match self.string("topology.type", kind_v)? {
            "fat-tree" => {
                allowed_for("fat-tree", &["k", "oversubscription"])?;
                TopologyKind::FatTree {
                    k: even("k", None, 64)?,
                }
            }
            "vl2" => {
                allowed_for(
                    "vl2",
                    &[
                        "da",
                        "di",
                        "hosts_per_tor",
                        "switch_rate",
                        "oversubscription",
                    ],
                )?;
                let hosts_per_tor = match t.get("hosts_per_tor") {
                    Some(v) => self.whole("topology.hosts_per_tor", v, 1, 1024)? as u32,
                    None => 20,
                };
                TopologyKind::Vl2 {
                    da: even("da", None, 1024)?,
                    di: even("di", None, 1024)?,
                    hosts_per_tor,
                }
            }
            "bcube" => {
                allowed_for("bcube", &["n", "k"])?;
                let n = match t.get("n") {
                    Some(v) => self.whole("topology.n", v, 2, 256)? as u32,
                    None => {
                        return Err(self.missing("topology.n", "give n, the ports per switch (≥ 2)"))
                    }
                };
                let k = match t.get("k") {
                    Some(v) => self.whole("topology.k", v, 0, 7)? as u32,
                    None => {
                        return Err(self.missing("topology.k", "give k, the highest level (0 to 7)"))
                    }
                };
                TopologyKind::BCube { n, k }
            }
            _ => {
                return Err(self.invalid(
                    "topology.type",
                    kind_v,
                    "allowed: \"fat-tree\", \"vl2\", \"bcube\"",
                ))
            }
        };
        if kind.host_count().is_none() {
            return Err(self.invalid(
                path,
                v,
                format!(
                    "this {} would have more than {MAX_HOSTS} hosts; give smaller parameters",
                    kind.type_name()
                ),
            ));
        }
        let fabric = Fabric::new(kind);
        if fabric.hosts() < 2 {
            return Err(self.invalid(path, v, "the fabric has fewer than 2 hosts"));
        }

        let host_rate = match t.get("link_rate") {
            Some(v) => self.rate("topology.link_rate", v)?,
            None => {
                return Err(self.missing(
                    "topology.link_rate",
                    "give the hosts' link rate, e.g. link_rate = \"1Gbps\"",
                ))
            }
        };
        let delay = match t.get("link_delay") {
            Some(v) => self.time("topology.link_delay", v)?,
            None => DEFAULT_FABRIC_DELAY,
        };
        // VL2's switch-to-switch links are ten times the hosts' (1 and 10 Gbit/s in the paper).
        let switch_rate = match (t.get("switch_rate"), kind) {
            (Some(v), _) => self.rate("topology.switch_rate", v)?,
            (None, TopologyKind::Vl2 { .. }) => {
                Bandwidth::from_bps(host_rate.bps().saturating_mul(10))
            }
            (None, _) => host_rate,
        };
        let oversubscription = match t.get("oversubscription") {
            Some(v) => {
                let f = "topology.oversubscription";
                let x = self.number(f, v)?;
                if !(1.0..=1000.0).contains(&x) {
                    return Err(self.invalid(f, v, "must be from 1 (full bisection) to 1000"));
                }
                x
            }
            None => 1.0,
        };
        let fabric_rate =
            Bandwidth::from_bps((switch_rate.bps() as f64 / oversubscription).round() as u64);
        if fabric_rate.bps() == 0 {
            let v = t
                .get("oversubscription")
                .cloned()
                .unwrap_or(Value::Float(1.0));
            return Err(self.invalid(
                "topology.oversubscription",
                &v,
                "leaves the switch links with no rate",
            ));
        }
        let queue = |rate: Bandwidth| -> R<QueueSpec> {
            match t.get("queue") {
                Some(q) => self.queue(q, "topology.queue", rate, delay),
                None => Ok(QueueSpec::DropTail(DEFAULT_FABRIC_QUEUE)),
            }
        };
        let dir = |rate: Bandwidth| -> R<LinkDirSpec> {
            Ok(LinkDirSpec {
                rate,
                trace: None,
                delay,
                queue: queue(rate)?,
                loss: LossModel::None,
                jitter: Duration::ZERO,
            })
        };
        let host_dir = dir(host_rate)?;
        let fabric_dir = dir(fabric_rate)?;
        let mut events = self.topology_events(t, &fabric, duration)?;
        let mut links = Vec::with_capacity(fabric.cables());
        for c in 0..fabric.cables() {
            let spec = match fabric.cable_tier(c) {
                CableTier::Host => &host_dir,
                CableTier::Fabric => &fabric_dir,
            };
            links.push(LinkSpec {
                name: fabric.cable_name(c),
                forward: spec.clone(),
                reverse: spec.clone(),
                events: events.remove(&c).unwrap_or_default(),
            });
        }
        Ok((fabric, links))
    }

    /// `[[topology.event]]`: changes of generated links, each naming its cable with
    /// `link = "agg0_1-core2"`, by cable.
    fn topology_events(
        &self,
        t: &Table,
        fabric: &Fabric,
        duration: Duration,
    ) -> R<HashMap<usize, Vec<LinkEvent>>> {
        let mut out: HashMap<usize, Vec<LinkEvent>> = HashMap::new();
        let Some(ev) = t.get("event") else {
            return Ok(out);
        };
        let Value::Array(list) = ev else {
            return Err(self.invalid("topology.event", ev, "expected [[topology.event]] tables"));
        };
        let names: HashMap<String, usize> = (0..fabric.cables())
            .map(|c| (fabric.cable_name(c), c))
            .collect();
        let mut outages: HashMap<usize, Vec<super::links::Outage>> = HashMap::new();
        for (k, e) in list.iter().enumerate() {
            let epath = format!("topology.event[{k}]");
            let et = self.table(&epath, e)?;
            self.check_keys(et, &epath, &["link", "at", "rate", "delay", "down"])?;
            let lv = et.get("link").ok_or_else(|| {
                self.missing(
                    &join(&epath, "link"),
                    "give the generated link, e.g. link = \"agg0_0-core0\" (its two nodes)",
                )
            })?;
            let name = self.string(&join(&epath, "link"), lv)?;
            let Some(&c) = names.get(name) else {
                return Err(self.invalid(
                    &join(&epath, "link"),
                    lv,
                    format!(
                        "no generated link is called '{}'; a link is named by its two nodes, \
                         the lower first (e.g. '{}', '{}')",
                        clip(name),
                        fabric.cable_name(0),
                        fabric.cable_name(fabric.cables() - 1)
                    ),
                ));
            };
            let events = out.entry(c).or_default();
            if let Some(o) = self.link_event(et, &epath, duration, false, events)? {
                outages.entry(c).or_default().push(o);
            }
        }
        let mut cables: Vec<usize> = outages.keys().copied().collect();
        cables.sort_unstable();
        for c in cables {
            if let Some(list) = outages.get_mut(&c) {
                self.check_outages(list)?;
            }
        }
        for events in out.values_mut() {
            events.sort_by_key(|e| e.at);
        }
        Ok(out)
    }

    /// A flow's `from` and `to` hosts, if it gives them; `path`/`subflows` lists and `from`/
    /// `to` exclude each other, and `from`/`to` need a fabric.
    pub(super) fn flow_hosts(
        &self,
        t: &Table,
        path: &str,
        fabric: Option<&Fabric>,
    ) -> R<Option<(u32, u32)>> {
        let (from, to) = (t.get("from"), t.get("to"));
        let Some(given) = from.or(to) else {
            return Ok(None);
        };
        let key = if from.is_some() { "from" } else { "to" };
        if let Some(v) = t.get("path") {
            return Err(self.invalid(
                &join(path, "path"),
                v,
                "give either path (the links) or from/to (hosts of the [topology]), not both",
            ));
        }
        if let Some(v @ Value::Array(_)) = t.get("subflows") {
            return Err(self.invalid(
                &join(path, "subflows"),
                v,
                "with from/to, subflows is a number (how many ECMP-hashed subflows), not a list \
                 of paths",
            ));
        }
        let Some(fabric) = fabric else {
            return Err(self.invalid(
                &join(path, key),
                given,
                "from/to name hosts of a generated [topology] and this scenario has none; give \
                 path = [...] (the links), or add a [topology] table",
            ));
        };
        let host = |key: &str| -> R<u32> {
            let f = join(path, key);
            let Some(v) = t.get(key) else {
                return Err(self.missing(
                    &f,
                    "give both from and to, e.g. from = \"host0\", to = \"host5\"",
                ));
            };
            let name = self.string(&f, v)?;
            fabric.host(name).ok_or_else(|| {
                self.invalid(
                    &f,
                    v,
                    format!(
                        "no host is called '{}' (the hosts are host0 to host{})",
                        clip(name),
                        fabric.hosts() - 1
                    ),
                )
            })
        };
        let (s, d) = (host("from")?, host("to")?);
        if s == d {
            return Err(self.invalid(
                &join(path, "to"),
                &t["to"],
                "a flow's from and to must be different hosts",
            ));
        }
        Ok(Some((s, d)))
    }

    /// The subflows of a flow from host `src` to host `dst`: `subflows = N` (default 1), each
    /// on the equal-cost path its ECMP hash picks (see [`crate::datacenter::ecmp_hash`]).
    pub(super) fn routed_subflows(
        &self,
        t: &Table,
        path: &str,
        fabric: &Fabric,
        (src, dst): (u32, u32),
        route: Route,
    ) -> R<Vec<SubflowSpec>> {
        let n = match t.get("subflows") {
            Some(v) => self.whole(&join(path, "subflows"), v, 1, MAX_SUBFLOWS)?,
            None => 1,
        };
        let paths = fabric.path_count(src, dst);
        let mut hops = Vec::new();
        Ok((0..n)
            .map(|j| {
                let i = ecmp_choice(route.seed, route.connection as u64, j, paths);
                fabric.path(src, dst, i, &mut hops);
                SubflowSpec {
                    path: hops.clone(),
                    start: None,
                    stop: None,
                }
            })
            .collect())
    }

    /// The flows of `[traffic]`, in the order of their source host (and destination). `flow`
    /// reads each generated flow table as a `[[flow]]`, reporting errors under `traffic`.
    pub(super) fn traffic_tables(
        &self,
        v: &Value,
        fabric: Option<&Fabric>,
        seed: u64,
        duration: Duration,
    ) -> R<Vec<Table>> {
        let path = "traffic";
        let t = self.table(path, v)?;
        let Some(fabric) = fabric else {
            return Err(self.invalid(
                path,
                v,
                "a traffic matrix runs between the hosts of a generated [topology], and this \
                 scenario has none",
            ));
        };
        let pv = t.get("pattern").ok_or_else(|| {
            self.missing(
                "traffic.pattern",
                "give pattern = \"permutation\", \"random\", \"one-to-many\" or \"all-to-all\"",
            )
        })?;
        let hosts = fabric.hosts();
        let pattern = match self.string("traffic.pattern", pv)? {
            "permutation" => Pattern::Permutation,
            "random" => Pattern::Random,
            "all-to-all" => Pattern::AllToAll,
            "one-to-many" => {
                let sources = match t.get("sources") {
                    Some(v) => self.whole("traffic.sources", v, 1, hosts as u64)? as u32,
                    None => 1,
                };
                let fanout = match t.get("fanout") {
                    Some(v) => self.whole("traffic.fanout", v, 1, hosts as u64 - 1)? as u32,
                    None => {
                        return Err(self.missing(
                            "traffic.fanout",
                            format!(
                                "give fanout, how many hosts each source sends to (1 to {})",
                                hosts - 1
                            ),
                        ))
                    }
                };
                Pattern::OneToMany { sources, fanout }
            }
            _ => {
                return Err(self.invalid(
                    "traffic.pattern",
                    pv,
                    "allowed: \"permutation\", \"random\", \"one-to-many\", \"all-to-all\"",
                ))
            }
        };
        if !matches!(pattern, Pattern::OneToMany { .. }) {
            for key in ["sources", "fanout"] {
                if let Some(v) = t.get(key) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        format!("{key} is a parameter of pattern = \"one-to-many\" only"),
                    ));
                }
            }
        }
        let flows = pattern.flows(hosts);
        if flows > MAX_TRAFFIC_FLOWS {
            return Err(self.invalid(
                "traffic.pattern",
                pv,
                format!(
                    "would generate {flows} flows over {hosts} hosts, more than \
                     {MAX_TRAFFIC_FLOWS}; use a smaller topology or another pattern"
                ),
            ));
        }
        let seed = match t.get("seed") {
            Some(v) => self.whole("traffic.seed", v, 0, super::MAX_SEED)?,
            None => seed,
        };
        let start = self.start_spread(t, duration)?;
        let size = self.size_distribution(t)?;
        // Three streams: the matrix does not change when the starts or sizes do.
        let mut matrix = Stream::new(seed, Purpose::Traffic, 0);
        let mut starts = Stream::new(seed, Purpose::Traffic, 1);
        let mut sizes = Stream::new(seed, Purpose::Traffic, 2);
        let mut base = Table::new();
        for (k, v) in t {
            if !TRAFFIC_KEYS.contains(&k.as_str()) {
                base.insert(k.clone(), v.clone());
            }
        }
        for key in ["name", "from", "to", "path", "traffic", "count"] {
            if let Some(v) = base.get(key) {
                return Err(self.invalid(
                    &join(path, key),
                    v,
                    format!(
                        "{key} is set for each generated flow (flows are named h{{src}}-h{{dst}}; \
                         see pattern, start and size)"
                    ),
                ));
            }
        }
        if !base.contains_key("group") {
            base.insert("group".into(), Value::String("traffic".into()));
        }
        if let Some(v) = t.get("subflows") {
            base.insert("subflows".into(), v.clone());
        }
        let mut out = Vec::with_capacity(flows as usize);
        for (s, d) in pairs(pattern, hosts, &mut matrix) {
            let mut f = base.clone();
            f.insert("name".into(), Value::String(format!("h{s}-h{d}")));
            f.insert("from".into(), Value::String(format!("host{s}")));
            f.insert("to".into(), Value::String(format!("host{d}")));
            let at = start.draw(&mut starts);
            f.insert(
                "start".into(),
                Value::String(format!("{}ns", at.as_nanos())),
            );
            if let Some(b) = size.draw(&mut sizes) {
                let mut tt = Table::new();
                tt.insert("type".into(), Value::String("transfer".into()));
                tt.insert("size".into(), Value::String(format!("{b}B")));
                f.insert("traffic".into(), Value::Table(tt));
            }
            out.push(f);
        }
        Ok(out)
    }

    /// `start`: a time, or `{ uniform = ["0s", "100ms"] }` (each flow's start drawn uniformly
    /// from the interval, whole nanoseconds).
    fn start_spread(&self, t: &Table, duration: Duration) -> R<Spread> {
        let Some(v) = t.get("start") else {
            return Ok(Spread { from: 0, width: 0 });
        };
        let (from, to) = match v {
            Value::Table(st) => {
                self.check_keys(st, "traffic.start", &["uniform"])?;
                let f = "traffic.start.uniform";
                let bad = || {
                    self.invalid(
                        f,
                        v,
                        "expected two times, e.g. uniform = [\"0s\", \"100ms\"]",
                    )
                };
                let Some(Value::Array(a)) = st.get("uniform") else {
                    return Err(bad());
                };
                if a.len() != 2 {
                    return Err(bad());
                }
                let a0 = self.time(&format!("{f}[0]"), &a[0])?;
                let a1 = self.time(&format!("{f}[1]"), &a[1])?;
                if a1 < a0 {
                    return Err(self.invalid(f, v, "the interval's end comes before its start"));
                }
                (a0, a1)
            }
            _ => {
                let s = self.time("traffic.start", v)?;
                (s, s)
            }
        };
        if to >= duration {
            return Err(self.invalid(
                "traffic.start",
                v,
                "flows would start at or after the end of the simulation",
            ));
        }
        Ok(Spread {
            from: from.as_nanos(),
            width: to.as_nanos() - from.as_nanos(),
        })
    }

    /// `size`: absent (long-running flows), a size (`"1MB"`), `{ exponential = { mean } }` or
    /// `{ pareto = { mean, shape } }` with shape > 1.
    fn size_distribution(&self, t: &Table) -> R<Sizes> {
        let Some(v) = t.get("size") else {
            return Ok(Sizes::Bulk);
        };
        let Value::Table(st) = v else {
            return Ok(Sizes::Fixed(self.size("traffic.size", v)?));
        };
        self.check_keys(st, "traffic.size", &["exponential", "pareto"])?;
        let mean = |p: &str, d: &Table| -> R<f64> {
            match d.get("mean") {
                Some(m) => Ok(self.size(&join(p, "mean"), m)? as f64),
                None => Err(self.missing(&join(p, "mean"), "give the mean size, e.g. \"1MB\"")),
            }
        };
        match (st.get("exponential"), st.get("pareto")) {
            (Some(e), None) => {
                let p = "traffic.size.exponential";
                let d = self.table(p, e)?;
                self.check_keys(d, p, &["mean"])?;
                Ok(Sizes::Exponential(mean(p, d)?))
            }
            (None, Some(e)) => {
                let p = "traffic.size.pareto";
                let d = self.table(p, e)?;
                self.check_keys(d, p, &["mean", "shape"])?;
                let shape = match d.get("shape") {
                    Some(s) => {
                        let x = self.number(&join(p, "shape"), s)?;
                        if !(x > 1.0 && x <= 100.0) {
                            return Err(self.invalid(
                                &join(p, "shape"),
                                s,
                                "the shape must be above 1 (the mean is finite) and at most 100",
                            ));
                        }
                        x
                    }
                    None => return Err(self.missing(&join(p, "shape"), "give the shape, e.g. 1.2")),
                };
                Ok(Sizes::Pareto {
                    mean: mean(p, d)?,
                    shape,
                })
            }
            _ => Err(self.invalid(
                "traffic.size",
                v,
                "give a size (\"1MB\"), { exponential = { mean = \"1MB\" } } or { pareto = { mean \
                 = \"1MB\", shape = 1.2 } }",
            )),
        }
    }
}

/// What a routed flow's ECMP hash covers beside its subflow's index.
#[derive(Clone, Copy, Debug)]
pub(super) struct Route {
    /// The scenario seed.
    pub(super) seed: u64,
    /// The flow's index among the scenario's flows.
    pub(super) connection: usize,
}

/// Generated start times: uniform over `from .. from + width` nanoseconds.
struct Spread {
    from: u64,
    width: u64,
}

impl Spread {
    fn draw(&self, rng: &mut Stream) -> Instant {
        if self.width == 0 {
            return Instant(self.from);
        }
        Instant(self.from + rng.below(self.width + 1))
    }
}

/// Generated transfer sizes.
enum Sizes {
    /// Long-running flows.
    Bulk,
    Fixed(u64),
    Exponential(f64),
    /// Pareto of the given mean: scale x_m = mean·(shape − 1)/shape, x = x_m·U^(−1/shape).
    Pareto {
        mean: f64,
        shape: f64,
    },
}

impl Sizes {
    /// A size in bytes, at least 1 and at most [`MAX_SIZE_BYTES`]; `None` for long-running
    /// flows.
    fn draw(&self, rng: &mut Stream) -> Option<u64> {
        let x = match *self {
            Sizes::Bulk => return None,
            Sizes::Fixed(b) => return Some(b),
            Sizes::Exponential(mean) => rng.exponential(mean),
            Sizes::Pareto { mean, shape } => {
                mean * (shape - 1.0) / shape * rng.uniform().powf(-1.0 / shape)
            }
        };
        Some((x.round() as u64).clamp(1, MAX_SIZE_BYTES))
    }
}

/// The notes about routed flows: those with more subflows than equal-cost paths.
pub(super) fn routing_notes(fabric: &Fabric, flows: &[FlowSpec]) -> Vec<String> {
    let mut crowded = flows.iter().filter_map(|f| {
        let (s, d) = f.hosts?;
        let paths = fabric.path_count(s, d);
        (f.subflows.len() as u64 > paths).then_some((f, paths))
    });
    let Some((first, paths)) = crowded.next() else {
        return Vec::new();
    };
    let n = 1 + crowded.count();
    vec![format!(
        "{n} flow{} more subflows than equal-cost paths between {} hosts (e.g. {}: {} \
         subflows over {paths} path{}); subflows hashed onto one path share it",
        if n == 1 { " has" } else { "s have" },
        if n == 1 { "its" } else { "their" },
        first.name,
        first.subflows.len(),
        if paths == 1 { "" } else { "s" }
    )]
}

/// A fabric shared by the scenario and its results.
pub(super) fn spec(fabric: Fabric, flows: &[FlowSpec]) -> Arc<TopologySpec> {
    let notes = routing_notes(&fabric, flows);
    Arc::new(TopologySpec { fabric, notes })
}
