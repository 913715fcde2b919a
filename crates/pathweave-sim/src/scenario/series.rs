//! `[series]`: which flows, link directions and columns the time series record, or
//! `series = false` for none. Without the key every flow, every TCP subflow and every link
//! direction a path traverses forward is sampled, with every column.

use super::values::type_name;
use super::{FlowKind, FlowSpec, LinkSpec, Reader, R};
use crate::quantity::clip;
use crate::results::{
    FlowSeries, LinkSeries, SeriesChunk, SubflowSeries, FLOW_SERIES_COLUMNS, LINK_SERIES_COLUMNS,
    SUBFLOW_SERIES_COLUMNS,
};
use std::collections::{BTreeSet, HashMap};
use toml::Value;

/// A set of the value columns of one time series, by position in its column list
/// ([`FLOW_SERIES_COLUMNS`], [`SUBFLOW_SERIES_COLUMNS`] or [`LINK_SERIES_COLUMNS`]). The key
/// columns (`time_s`, `flow`, `subflow`, `link`) are not in it: a series that records any
/// column records its keys too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns(u32);

impl Columns {
    /// No column: the series is not recorded.
    pub const NONE: Columns = Columns(0);

    /// The first `n` columns.
    pub fn all(n: usize) -> Columns {
        Columns(((1u64 << n) - 1) as u32)
    }

    /// Whether column `k` is in the set.
    #[inline]
    pub fn has(self, k: usize) -> bool {
        self.0 & (1 << k) != 0
    }

    /// Whether any column is: whether the series is recorded at all.
    #[inline]
    pub fn any(self) -> bool {
        self.0 != 0
    }

    fn with(self, k: usize) -> Columns {
        Columns(self.0 | (1 << k))
    }
}

/// What the time series record.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesSpec {
    /// Per flow of [`Scenario::flows`](super::Scenario::flows): whether its rows (and those of
    /// its subflows) are recorded.
    pub flows: Vec<bool>,
    /// The link directions recorded (`2·link + reverse`), ascending.
    pub links: Vec<u32>,
    /// Columns of the flow series.
    pub flow_columns: Columns,
    /// Columns of the subflow series.
    pub subflow_columns: Columns,
    /// Columns of the link series.
    pub link_columns: Columns,
}

impl SeriesSpec {
    /// Every flow, every link direction a path traverses forward, every column: what a
    /// scenario without `[series]` records.
    pub fn everything(flows: &[FlowSpec]) -> SeriesSpec {
        SeriesSpec {
            flows: vec![true; flows.len()],
            links: data_directions(flows),
            flow_columns: Columns::all(FLOW_SERIES_COLUMNS.len()),
            subflow_columns: Columns::all(SUBFLOW_SERIES_COLUMNS.len()),
            link_columns: Columns::all(LINK_SERIES_COLUMNS.len()),
        }
    }

    /// Nothing: `series = false`.
    pub fn nothing(flows: &[FlowSpec]) -> SeriesSpec {
        SeriesSpec {
            flows: vec![false; flows.len()],
            links: Vec::new(),
            flow_columns: Columns::NONE,
            subflow_columns: Columns::NONE,
            link_columns: Columns::NONE,
        }
    }

    /// Whether flow `i`'s rows are recorded in the flow series.
    #[inline]
    pub fn samples_flow(&self, i: usize) -> bool {
        self.flow_columns.any() && self.flows[i]
    }

    /// Whether flow `i`'s subflows' rows are recorded in the subflow series.
    #[inline]
    pub fn samples_subflows(&self, i: usize) -> bool {
        self.subflow_columns.any() && self.flows[i]
    }

    /// The link directions sampled: none if the link series records no column.
    pub fn sampled_links(&self) -> &[u32] {
        if self.link_columns.any() {
            &self.links
        } else {
            &[]
        }
    }

    /// Rows one sample adds at most: one per recorded flow, one per subflow of a recorded
    /// TCP flow, one per recorded link direction.
    pub fn rows_per_sample(&self, flows: &[FlowSpec]) -> u64 {
        let mut rows = self.sampled_links().len() as u64;
        for (i, f) in flows.iter().enumerate() {
            rows += self.samples_flow(i) as u64;
            if self.samples_subflows(i) && matches!(f.kind, FlowKind::Tcp { .. }) {
                rows += f.subflows.len() as u64;
            }
        }
        rows
    }
}

impl SeriesSpec {
    /// Drop from `c` the rows and columns this selection does not record: what an engine
    /// that samples everything (the emulator) reports under it. The simulator records only
    /// the selection in the first place, with the same result.
    pub fn restrict(&self, c: &mut SeriesChunk) {
        let keep: Vec<bool> = c
            .flows
            .flow
            .iter()
            .map(|&f| self.samples_flow(f as usize))
            .collect();
        let on = self.flow_columns;
        let FlowSeries {
            time_s,
            flow,
            cwnd_bytes,
            ssthresh_bytes,
            srtt_s,
            rate_bps,
        } = &mut c.flows;
        column(time_s, true, &keep);
        column(flow, true, &keep);
        for (k, col) in [cwnd_bytes, ssthresh_bytes, srtt_s, rate_bps]
            .into_iter()
            .enumerate()
        {
            column(col, on.has(k), &keep);
        }

        let keep: Vec<bool> = c
            .subflows
            .flow
            .iter()
            .map(|&f| self.samples_subflows(f as usize))
            .collect();
        let on = self.subflow_columns;
        let SubflowSeries {
            time_s,
            flow,
            subflow,
            cwnd_bytes,
            ssthresh_bytes,
            srtt_s,
            rate_bps,
            alpha,
            epsilon,
            weight,
            score,
            backlog_packets,
            bandwidth_estimate_bps,
        } = &mut c.subflows;
        column(time_s, true, &keep);
        column(flow, true, &keep);
        column(subflow, true, &keep);
        for (k, col) in [
            cwnd_bytes,
            ssthresh_bytes,
            srtt_s,
            rate_bps,
            alpha,
            epsilon,
            weight,
            score,
            backlog_packets,
            bandwidth_estimate_bps,
        ]
        .into_iter()
        .enumerate()
        {
            column(col, on.has(k), &keep);
        }

        let sampled = self.sampled_links();
        let keep: Vec<bool> = c
            .links
            .link
            .iter()
            .map(|l| sampled.binary_search(l).is_ok())
            .collect();
        let on = self.link_columns;
        let LinkSeries {
            time_s,
            link,
            queue_packets,
            queue_bytes,
            red_average,
            drops,
            wire_losses,
        } = &mut c.links;
        column(time_s, true, &keep);
        column(link, true, &keep);
        column(queue_packets, on.has(0), &keep);
        column(queue_bytes, on.has(1), &keep);
        column(red_average, on.has(2), &keep);
        column(drops, on.has(3), &keep);
        column(wire_losses, on.has(4), &keep);
    }
}

/// Keep the rows of `col` that `keep` marks, or none if the column is not recorded.
fn column<T>(col: &mut Vec<T>, recorded: bool, keep: &[bool]) {
    if !recorded {
        col.clear();
        return;
    }
    let mut rows = keep.iter();
    col.retain(|_| rows.next().copied().unwrap_or(false));
}

/// Every link direction some path traverses forward, ascending.
fn data_directions(flows: &[FlowSpec]) -> Vec<u32> {
    let set: BTreeSet<u32> = flows
        .iter()
        .flat_map(|f| &f.subflows)
        .flat_map(|sf| &sf.path)
        .map(|h| (2 * h.link + h.reverse as usize) as u32)
        .collect();
    set.into_iter().collect()
}

/// The three series as `columns` names them.
const SERIES: [(&str, &[&str]); 3] = [
    ("flow_series", &FLOW_SERIES_COLUMNS),
    ("subflow_series", &SUBFLOW_SERIES_COLUMNS),
    ("link_series", &LINK_SERIES_COLUMNS),
];

/// Key columns, always written with their series.
const KEYS: [&str; 4] = ["time_s", "flow", "subflow", "link"];

impl Reader<'_> {
    /// `series`: absent or `true` for everything, `false` for nothing, or a table of
    /// `links`, `flows` and `columns`, each narrowing what is recorded.
    pub(super) fn series(
        &self,
        v: Option<&Value>,
        links: &[LinkSpec],
        link_index: &HashMap<String, usize>,
        flows: &[FlowSpec],
    ) -> R<SeriesSpec> {
        let t = match v {
            None | Some(Value::Boolean(true)) => return Ok(SeriesSpec::everything(flows)),
            Some(Value::Boolean(false)) => return Ok(SeriesSpec::nothing(flows)),
            Some(Value::Table(t)) => t,
            Some(v) => {
                return Err(self.invalid(
                    "series",
                    v,
                    format!(
                        "expected a [series] table (links, flows, columns), or true or false, \
                         found {}",
                        type_name(v)
                    ),
                ))
            }
        };
        self.check_keys(t, "series", &["links", "flows", "columns"])?;
        let mut spec = SeriesSpec::everything(flows);
        if let Some(v) = t.get("links") {
            let mut dirs = BTreeSet::new();
            for (k, item, s) in self.name_list("series.links", v, "link names")? {
                let (reverse, name) = match s.strip_prefix('~') {
                    Some(n) => (true, n),
                    None => (false, s),
                };
                let Some(&link) = link_index.get(name) else {
                    let known: Vec<String> = links.iter().take(12).map(|l| clip(&l.name)).collect();
                    let more = if links.len() > 12 { ", …" } else { "" };
                    return Err(self.invalid(
                        &format!("series.links[{k}]"),
                        item,
                        format!(
                            "no link is called '{}' (links: {}{more}); write \"name\" for a \
                             link's forward direction, \"~name\" for its reverse",
                            clip(name),
                            known.join(", ")
                        ),
                    ));
                };
                dirs.insert((2 * link + reverse as usize) as u32);
            }
            spec.links = dirs.into_iter().collect();
        }
        if let Some(v) = t.get("flows") {
            let index: HashMap<&str, usize> = flows
                .iter()
                .enumerate()
                .map(|(i, f)| (f.name.as_str(), i))
                .collect();
            spec.flows = vec![false; flows.len()];
            for (k, item, s) in self.name_list("series.flows", v, "flow names")? {
                let Some(&i) = index.get(s) else {
                    let known: Vec<String> = flows.iter().take(12).map(|f| clip(&f.name)).collect();
                    let more = if flows.len() > 12 { ", …" } else { "" };
                    return Err(self.invalid(
                        &format!("series.flows[{k}]"),
                        item,
                        format!(
                            "no flow is called '{}' (flows: {}{more})",
                            clip(s),
                            known.join(", ")
                        ),
                    ));
                };
                spec.flows[i] = true;
            }
        }
        if let Some(v) = t.get("columns") {
            let names = self.name_list("series.columns", v, "column names")?;
            if names.is_empty() {
                return Err(self.invalid(
                    "series.columns",
                    v,
                    "an empty list records no column; write series = false to turn the time \
                     series off",
                ));
            }
            let mut chosen = [Columns::NONE; 3];
            for (k, item, s) in names {
                if !self.column(s, &mut chosen) {
                    let field = format!("series.columns[{k}]");
                    let message = if KEYS.contains(&s) {
                        format!(
                            "{s} is a key column, written with every series that is recorded; \
                             list value columns ({})",
                            allowed_columns()
                        )
                    } else {
                        format!("unknown column (allowed: {})", allowed_columns())
                    };
                    return Err(self.invalid(&field, item, message));
                }
            }
            [spec.flow_columns, spec.subflow_columns, spec.link_columns] = chosen;
        }
        Ok(spec)
    }

    /// Add the column(s) `s` names to `chosen`: a series (`"link_series"`, all its columns),
    /// a qualified column (`"subflow_series.alpha"`) or a bare column name (every series
    /// that has it). Whether `s` named anything.
    fn column(&self, s: &str, chosen: &mut [Columns; 3]) -> bool {
        let mut found = false;
        for (j, (series, columns)) in SERIES.iter().enumerate() {
            if s == *series {
                chosen[j] = Columns::all(columns.len());
                found = true;
                continue;
            }
            let bare = match s.split_once('.') {
                Some((prefix, rest)) if prefix == *series => rest,
                Some(_) => continue,
                None => s,
            };
            if let Some(k) = columns.iter().position(|c| *c == bare) {
                chosen[j] = chosen[j].with(k);
                found = true;
            }
        }
        found
    }

    /// A list of distinct strings: `(index, item, text)` per item.
    fn name_list<'v>(
        &self,
        field: &str,
        v: &'v Value,
        what: &str,
    ) -> R<Vec<(usize, &'v Value, &'v str)>> {
        let Value::Array(items) = v else {
            return Err(self.invalid(
                field,
                v,
                format!("expected a list of {what}, found {}", type_name(v)),
            ));
        };
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(items.len());
        let mut out = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            let f = format!("{field}[{k}]");
            let s = self.string(&f, item)?;
            if let Some(j) = seen.insert(s, k) {
                return Err(self.invalid(&f, item, format!("listed twice (also {field}[{j}])")));
            }
            out.push((k, item, s));
        }
        Ok(out)
    }
}

/// The names `columns` accepts, for error messages.
fn allowed_columns() -> String {
    let mut out = Vec::new();
    for (series, columns) in SERIES {
        out.push(format!("{series} ({})", columns.join(", ")));
    }
    format!(
        "a series name, a column of one or a series-qualified column such as \
         \"subflow_series.alpha\"; {}",
        out.join("; ")
    )
}
