//! The top-level table: `name`, `description`, `duration`, `seed`, `sample_interval`, the
//! `[topology]` and `[traffic]` tables, the `[[link]]` and `[[flow]]` arrays, and an accepted
//! (but not expanded) `[sweep]` table; then the checks that span the whole scenario, such as
//! the time-series row limit.

use super::flows::{Links, TCP_KEYS};
use super::topology::{self, Route};
use super::{
    FlowKind, FlowSpec, LinkSpec, Reader, Scenario, SeriesSpec, TcpSettings, MAX_SAMPLE_ROWS,
    MAX_SEED, R,
};
use pathweave_cc::Duration;
use std::collections::{BTreeMap, HashMap};
use toml::{Table, Value};

impl Reader<'_> {
    pub(super) fn scenario(&self, root: &Table, default_name: &str) -> R<Scenario> {
        self.check_keys(
            root,
            "",
            &[
                "name",
                "description",
                "duration",
                "seed",
                "sample_interval",
                "tcp",
                "link",
                "flow",
                "series",
                "capture",
                "sweep",
                "topology",
                "traffic",
            ],
        )?;
        // `[sweep]` describes a grid of variants of this scenario; `pathweave sweep` expands it
        // and the simulator runs each resolved point, so here it only has to be a table.
        if let Some(v) = root.get("sweep") {
            self.table("sweep", v)?;
        }
        let name = match root.get("name") {
            Some(v) => self.scenario_name(v)?,
            None => default_name.to_string(),
        };
        let description = match root.get("description") {
            Some(v) => self.string("description", v)?.to_string(),
            None => String::new(),
        };
        let duration = match root.get("duration") {
            Some(v) => self.positive_time("duration", v)?,
            None => {
                return Err(self.missing(
                    "duration",
                    "give the simulated time, e.g. duration = \"100s\"",
                ))
            }
        };
        let seed = match root.get("seed") {
            Some(v) => self.seed(v)?,
            None => 1,
        };
        let sample_interval = match root.get("sample_interval") {
            Some(v) => self.positive_time("sample_interval", v)?,
            None => Duration::from_millis(100),
        };
        let tcp_defaults = match root.get("tcp") {
            Some(v) => {
                let t = self.table("tcp", v)?;
                self.check_keys(t, "tcp", TCP_KEYS)?;
                self.tcp_settings(t, "tcp", TcpSettings::default())?
            }
            None => TcpSettings::default(),
        };

        let mut links: Vec<LinkSpec> = Vec::new();
        // Each link's index by name (paths look their links up here), and the table that
        // defined it (for duplicates). A generated fabric's links come first.
        let mut link_index: HashMap<String, usize> = HashMap::new();
        let mut link_tables: Vec<usize> = Vec::new();
        let fabric = match root.get("topology") {
            Some(v) => {
                let (fabric, generated) = self.topology(v, duration)?;
                link_index.reserve(generated.len());
                for (c, l) in generated.iter().enumerate() {
                    link_index.insert(l.name.clone(), c);
                }
                links = generated;
                Some(fabric)
            }
            None => None,
        };
        let generated = links.len();
        for (k, t) in self.array_of_tables(root, "link")?.into_iter().enumerate() {
            let path = format!("link[{k}]");
            for copy in self.expand(t, &path)? {
                let l = self
                    .link(&copy.table, &path, duration)
                    .map_err(|e| copy.name_in(e))?;
                if let Some(&prev) = link_index.get(&l.name) {
                    let by = match prev.checked_sub(generated) {
                        Some(j) => format!("link[{}]", link_tables[j]),
                        None => "a link of [topology]".to_string(),
                    };
                    return Err(self.invalid(
                        &format!("{path}.name"),
                        &Value::String(l.name.clone()),
                        format!("duplicate link name (already used by {by}); names must be unique"),
                    ));
                }
                link_index.insert(l.name.clone(), links.len());
                link_tables.push(k);
                links.push(l);
            }
        }

        let mut flows: Vec<FlowSpec> = Vec::new();
        let mut flow_names: BTreeMap<String, String> = BTreeMap::new();
        let flow_tables = self.array_of_tables(root, "flow")?;
        if flow_tables.is_empty() && !root.contains_key("traffic") {
            return Err(self.missing(
                "flow",
                "a scenario needs at least one [[flow]] (or a [traffic] matrix over a [topology])",
            ));
        }
        let route = |connection: usize| Route { seed, connection };
        for (k, t) in flow_tables.into_iter().enumerate() {
            let path = format!("flow[{k}]");
            let group_default = t
                .get("name")
                .and_then(Value::as_str)
                .map(|s| {
                    s.replace("{i}", "")
                        .replace("{n}", "")
                        .trim_end_matches(['-', '_', '.'])
                        .to_string()
                })
                .unwrap_or_default();
            for copy in self.expand(t, &path)? {
                let f = self
                    .flow(
                        &copy.table,
                        &path,
                        Links {
                            list: &links,
                            index: &link_index,
                            fabric: fabric.as_ref(),
                            route: route(flows.len()),
                        },
                        &tcp_defaults,
                        &group_default,
                        duration,
                    )
                    .map_err(|e| copy.name_in(e))?;
                if let Some(prev) = flow_names.get(&f.name) {
                    return Err(self.invalid(
                        &format!("{path}.name"),
                        &Value::String(f.name.clone()),
                        format!(
                            "duplicate flow name (already used by {prev}); names must be unique"
                        ),
                    ));
                }
                flow_names.insert(f.name.clone(), path.clone());
                flows.push(f);
            }
        }
        if let Some(v) = root.get("traffic") {
            for table in self.traffic_tables(v, fabric.as_ref(), seed, duration)? {
                let links = Links {
                    list: &links,
                    index: &link_index,
                    fabric: fabric.as_ref(),
                    route: route(flows.len()),
                };
                let f = self.flow(&table, "traffic", links, &tcp_defaults, "", duration)?;
                if let Some(prev) = flow_names.get(&f.name) {
                    return Err(self.invalid(
                        "traffic",
                        &Value::String(f.name.clone()),
                        format!(
                            "generates flow {} whose name is already used by {prev}; rename \
                             that flow",
                            f.name
                        ),
                    ));
                }
                flow_names.insert(f.name.clone(), "traffic".to_string());
                flows.push(f);
            }
        }
        let topology = fabric.map(|f| topology::spec(f, &flows));
        let series = self.series(root.get("series"), &links, &link_index, &flows)?;
        self.check_sample_rows(root, duration, sample_interval, &flows, &series)?;
        let capture = self.capture(root.get("capture"), &links, &link_index)?;
        Ok(Scenario {
            source: self.file.to_string(),
            name,
            description,
            duration,
            seed,
            sample_interval,
            links,
            flows,
            series,
            capture,
            topology,
        })
    }

    /// `seed`: an integer from 0 to [`MAX_SEED`], the largest TOML integer. A float or an
    /// expression must be exact in floating point, so at most 2^53.
    fn seed(&self, v: &Value) -> R<u64> {
        const EXACT: u64 = 1 << 53;
        match v {
            Value::Integer(i) => u64::try_from(*i).map_err(|_| {
                self.invalid(
                    "seed",
                    v,
                    format!("expected a whole number from 0 to {MAX_SEED} (2^63 - 1, the largest TOML integer)"),
                )
            }),
            _ => {
                let x = self.number("seed", v)?;
                if x.fract() != 0.0 || !(0.0..=EXACT as f64).contains(&x) {
                    return Err(self.invalid(
                        "seed",
                        v,
                        format!(
                            "expected a whole number from 0 to {EXACT} (2^53, exact as a float \
                             or an expression); write a larger seed as a TOML integer, at most \
                             {MAX_SEED}"
                        ),
                    ));
                }
                Ok(x as u64)
            }
        }
    }

    /// The time series hold one row per sample for every recorded flow, subflow of a recorded
    /// TCP flow and recorded link direction; refuse a run whose samples or rows would exceed
    /// [`MAX_SAMPLE_ROWS`].
    fn check_sample_rows(
        &self,
        root: &Table,
        duration: Duration,
        interval: Duration,
        flows: &[FlowSpec],
        series: &SeriesSpec,
    ) -> R<()> {
        // The sampler fires at every multiple of the interval up to the end, whether or not
        // anything is recorded, so the samples themselves are bounded too.
        let samples = duration.as_nanos() / interval.as_nanos().max(1);
        let v = || {
            root.get("sample_interval")
                .cloned()
                .unwrap_or(Value::String("100ms".into()))
        };
        if samples > MAX_SAMPLE_ROWS {
            // The shortest interval that keeps the samples within the limit, rounded up to a
            // whole nanosecond.
            let shortest = duration.as_nanos().div_ceil(MAX_SAMPLE_ROWS);
            return Err(self.invalid(
                "sample_interval",
                &v(),
                format!(
                    "the run would take {samples} samples (duration / sample_interval), more \
                     than {MAX_SAMPLE_ROWS}; sample_interval must be at least duration / \
                     {MAX_SAMPLE_ROWS} ({shortest}ns for this duration), or use a shorter \
                     duration"
                ),
            ));
        }
        let rows = samples as u128 * series.rows_per_sample(flows) as u128;
        if rows > MAX_SAMPLE_ROWS as u128 {
            let recorded = (0..flows.len()).filter(|&i| series.samples_flow(i));
            let subflows: usize = flows
                .iter()
                .enumerate()
                .filter(|(i, f)| {
                    series.samples_subflows(*i) && matches!(f.kind, FlowKind::Tcp { .. })
                })
                .map(|(_, f)| f.subflows.len())
                .sum();
            return Err(self.invalid(
                "sample_interval",
                &v(),
                format!(
                    "the time series would hold {rows} rows ({samples} samples of {} flows, \
                     {subflows} TCP subflows and {} sampled link directions), more than \
                     {MAX_SAMPLE_ROWS}; use a longer sample_interval, a shorter duration or \
                     fewer flows, or record fewer flows, links or columns with [series]",
                    recorded.count(),
                    series.sampled_links().len()
                ),
            ));
        }
        Ok(())
    }

    /// The scenario's `name`: it labels results and names their default directory, so it
    /// must be one line of at most 200 characters that is usable as a file name (no `/` or
    /// `\`, not `.` or `..`).
    fn scenario_name(&self, v: &Value) -> R<String> {
        let s = self.string("name", v)?;
        if s.trim().is_empty()
            || s.chars().count() > 200
            || s.chars().any(|c| c.is_control() || c == '/' || c == '\\')
            || s == "."
            || s == ".."
        {
            return Err(self.invalid(
                "name",
                v,
                "a scenario name must be one line of 1 to 200 characters, not blank, without \
                 '/' or '\\', and not \".\" or \"..\" (it names the results directory)",
            ));
        }
        Ok(s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Scenario, ScenarioError, MAX_SAMPLE_ROWS};

    fn parse(interval_ns: u64, recorded: &str) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "duration = \"2s\"\nsample_interval = \"{interval_ns}ns\"\n{recorded}\n[[link]]\n\
             name = \"l\"\nrate = \"10Mbps\"\ndelay = \"10ms\"\n[[flow]]\nname = \"f\"\n\
             path = [\"l\"]\n"
        );
        Scenario::parse(&text, "x.toml", "x")
    }

    #[test]
    fn the_samples_are_bounded_even_when_nothing_is_recorded() {
        let shortest = 2_000_000_000 / MAX_SAMPLE_ROWS;
        for recorded in ["series = false", "[series]\nflows = []\nlinks = []"] {
            match parse(shortest - 1, recorded) {
                Err(ScenarioError::Invalid { field, value, .. }) => {
                    assert_eq!(field, "sample_interval");
                    assert_eq!(value, format!("\"{}ns\"", shortest - 1));
                }
                other => panic!("{recorded}: {other:?}"),
            }
            assert!(parse(1, recorded).is_err(), "{recorded}");
            assert!(parse(shortest, recorded).is_ok(), "{recorded}");
        }
    }
}
