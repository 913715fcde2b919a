//! How [`Results`] cross into Python: a dict of tables, each a dict of columns.
//!
//! A numeric column is a `(dtype, data)` tuple: `dtype` is a numpy type string (`"<f8"`,
//! `"<u8"`, `"<u4"`) and `data` a `bytearray` of the values, little-endian, back to back, so
//! `numpy.frombuffer(data, dtype)` rebuilds the column without a copy (and writable, since
//! the bytearray is). A string column is a `list[str]`. Column names are the Rust field names,
//! unit suffix included. This keeps the crate free of a numpy dependency.
//!
//! Every table is destructured exhaustively, so a column added in pathweave-sim is a compile
//! error here until it is exported too.

use pathweave_sim::capture::{CaptureSummary, PacketLog};
use pathweave_sim::results::{
    FlowSeries, FlowTable, GroupFairness, LinkSeries, LinkTable, RunStats, SeriesChunk,
    SubflowSeries, SubflowTable,
};
use pathweave_sim::scenario::{Columns, SeriesSpec};
use pathweave_sim::Results;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict, PyList};

/// A number type that can be laid out as little-endian bytes for numpy.
trait Column: Copy {
    /// numpy's name for the type, byte order included.
    const DTYPE: &'static str;
    /// Bytes per value.
    const WIDTH: usize;
    /// Write the value's little-endian bytes into `out` (exactly `WIDTH` long).
    fn put(self, out: &mut [u8]);
}

macro_rules! column {
    ($t:ty, $dtype:literal) => {
        impl Column for $t {
            const DTYPE: &'static str = $dtype;
            const WIDTH: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}

column!(f64, "<f8");
column!(u64, "<u8");
column!(u32, "<u4");
column!(u8, "|u1");

/// Builds one table: a dict from column name to column.
struct Table<'py> {
    dict: Bound<'py, PyDict>,
}

impl<'py> Table<'py> {
    fn new(py: Python<'py>) -> Self {
        Table {
            dict: PyDict::new(py),
        }
    }

    fn num<T: Column>(self, name: &str, values: &[T]) -> PyResult<Self> {
        let py = self.dict.py();
        let data = PyByteArray::new_with(py, values.len() * T::WIDTH, |buf| {
            for (out, v) in buf.chunks_exact_mut(T::WIDTH).zip(values) {
                v.put(out);
            }
            Ok(())
        })?;
        self.dict.set_item(name, (T::DTYPE, data))?;
        Ok(self)
    }

    /// The column if the run records it (`on`), else nothing: a time-series column left out
    /// by the scenario's `[series]` is absent from the table, not empty.
    fn num_if<T: Column>(self, on: bool, name: &str, values: &[T]) -> PyResult<Self> {
        if on {
            self.num(name, values)
        } else {
            Ok(self)
        }
    }

    fn text(self, name: &str, values: &[String]) -> PyResult<Self> {
        let list = PyList::new(self.dict.py(), values)?;
        self.dict.set_item(name, list)?;
        Ok(self)
    }
}

fn flows<'py>(py: Python<'py>, t: &FlowTable) -> PyResult<Table<'py>> {
    let FlowTable {
        name,
        group,
        algorithm,
        start_s,
        end_s,
        delivered_bytes,
        goodput_bps,
        throughput_bps,
        packets_sent,
        retransmits,
        timeouts,
        loss_events,
        loss_event_rate,
        drops,
        mean_cwnd_bytes,
        mean_srtt_s,
        completion_s,
    } = t;
    Table::new(py)
        .text("name", name)?
        .text("group", group)?
        .text("algorithm", algorithm)?
        .num("start_s", start_s)?
        .num("end_s", end_s)?
        .num("delivered_bytes", delivered_bytes)?
        .num("goodput_bps", goodput_bps)?
        .num("throughput_bps", throughput_bps)?
        .num("packets_sent", packets_sent)?
        .num("retransmits", retransmits)?
        .num("timeouts", timeouts)?
        .num("loss_events", loss_events)?
        .num("loss_event_rate", loss_event_rate)?
        .num("drops", drops)?
        .num("mean_cwnd_bytes", mean_cwnd_bytes)?
        .num("mean_srtt_s", mean_srtt_s)?
        .num("completion_s", completion_s)
}

fn links<'py>(py: Python<'py>, t: &LinkTable) -> PyResult<Table<'py>> {
    let LinkTable {
        name,
        direction,
        rate_bps,
        arrivals,
        delivered_packets,
        delivered_bytes,
        utilization,
        drops_overflow,
        drops_early,
        drops_forced,
        drops_wire,
    } = t;
    Table::new(py)
        .text("name", name)?
        .text("direction", direction)?
        .num("rate_bps", rate_bps)?
        .num("arrivals", arrivals)?
        .num("delivered_packets", delivered_packets)?
        .num("delivered_bytes", delivered_bytes)?
        .num("utilization", utilization)?
        .num("drops_overflow", drops_overflow)?
        .num("drops_early", drops_early)?
        .num("drops_forced", drops_forced)?
        .num("drops_wire", drops_wire)
}

fn flow_series<'py>(py: Python<'py>, t: &FlowSeries, on: Columns) -> PyResult<Table<'py>> {
    let FlowSeries {
        time_s,
        flow,
        cwnd_bytes,
        ssthresh_bytes,
        srtt_s,
        rate_bps,
    } = t;
    Table::new(py)
        .num("time_s", time_s)?
        .num("flow", flow)?
        .num_if(on.has(0), "cwnd_bytes", cwnd_bytes)?
        .num_if(on.has(1), "ssthresh_bytes", ssthresh_bytes)?
        .num_if(on.has(2), "srtt_s", srtt_s)?
        .num_if(on.has(3), "rate_bps", rate_bps)
}

fn subflows<'py>(py: Python<'py>, t: &SubflowTable) -> PyResult<Table<'py>> {
    let SubflowTable {
        flow,
        subflow,
        path,
        acked_bytes,
        throughput_bps,
        packets_sent,
        retransmits,
        drops,
        timeouts,
        loss_events,
        loss_event_rate,
        mean_cwnd_bytes,
        mean_srtt_s,
    } = t;
    Table::new(py)
        .num("flow", flow)?
        .num("subflow", subflow)?
        .text("path", path)?
        .num("acked_bytes", acked_bytes)?
        .num("throughput_bps", throughput_bps)?
        .num("packets_sent", packets_sent)?
        .num("retransmits", retransmits)?
        .num("drops", drops)?
        .num("timeouts", timeouts)?
        .num("loss_events", loss_events)?
        .num("loss_event_rate", loss_event_rate)?
        .num("mean_cwnd_bytes", mean_cwnd_bytes)?
        .num("mean_srtt_s", mean_srtt_s)
}

fn subflow_series<'py>(py: Python<'py>, t: &SubflowSeries, on: Columns) -> PyResult<Table<'py>> {
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
    } = t;
    Table::new(py)
        .num("time_s", time_s)?
        .num("flow", flow)?
        .num("subflow", subflow)?
        .num_if(on.has(0), "cwnd_bytes", cwnd_bytes)?
        .num_if(on.has(1), "ssthresh_bytes", ssthresh_bytes)?
        .num_if(on.has(2), "srtt_s", srtt_s)?
        .num_if(on.has(3), "rate_bps", rate_bps)?
        .num_if(on.has(4), "alpha", alpha)?
        .num_if(on.has(5), "epsilon", epsilon)?
        .num_if(on.has(6), "weight", weight)?
        .num_if(on.has(7), "score", score)?
        .num_if(on.has(8), "backlog_packets", backlog_packets)?
        .num_if(on.has(9), "bandwidth_estimate_bps", bandwidth_estimate_bps)
}

fn link_series<'py>(py: Python<'py>, t: &LinkSeries, on: Columns) -> PyResult<Table<'py>> {
    let LinkSeries {
        time_s,
        link,
        queue_packets,
        queue_bytes,
        red_average,
        drops,
        wire_losses,
    } = t;
    Table::new(py)
        .num("time_s", time_s)?
        .num("link", link)?
        .num_if(on.has(0), "queue_packets", queue_packets)?
        .num_if(on.has(1), "queue_bytes", queue_bytes)?
        .num_if(on.has(2), "red_average", red_average)?
        .num_if(on.has(3), "drops", drops)?
        .num_if(on.has(4), "wire_losses", wire_losses)
}

fn fairness<'py>(py: Python<'py>, rows: &[GroupFairness]) -> PyResult<Table<'py>> {
    let mut group = Vec::with_capacity(rows.len());
    let mut flows = Vec::with_capacity(rows.len());
    let mut total = Vec::with_capacity(rows.len());
    let mut jain = Vec::with_capacity(rows.len());
    for row in rows {
        let GroupFairness {
            group: g,
            flows: n,
            total_goodput_bps: sum,
            jain: j,
        } = row;
        group.push(g.clone());
        flows.push(*n as u64);
        total.push(*sum);
        jain.push(*j);
    }
    Table::new(py)
        .text("group", &group)?
        .num("flows", &flows)?
        .num("total_goodput_bps", &total)?
        .num("jain", &jain)
}

/// The time series of `c` as a dict of the tables `flow_series`, `subflow_series` and
/// `link_series`, each with the columns `series` records.
pub(crate) fn series_dict<'py>(
    py: Python<'py>,
    c: &SeriesChunk,
    series: &SeriesSpec,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    put_series(&out, &c.flows, &c.subflows, &c.links, series)?;
    Ok(out)
}

fn put_series(
    out: &Bound<'_, PyDict>,
    flows: &FlowSeries,
    subflows: &SubflowSeries,
    links: &LinkSeries,
    series: &SeriesSpec,
) -> PyResult<()> {
    let py = out.py();
    out.set_item(
        "flow_series",
        flow_series(py, flows, series.flow_columns)?.dict,
    )?;
    out.set_item(
        "subflow_series",
        subflow_series(py, subflows, series.subflow_columns)?.dict,
    )?;
    out.set_item(
        "link_series",
        link_series(py, links, series.link_columns)?.dict,
    )?;
    Ok(())
}

/// The whole of `r` as a dict: `scenario` (str), `seed` (int), the tables `flows`,
/// `subflows`, `links`, `flow_series`, `subflow_series`, `link_series`, `fairness`, and `stats`
/// (a dict of plain numbers). The series hold the columns `series` records.
pub(crate) fn results_dict<'py>(
    py: Python<'py>,
    r: &Results,
    series: &SeriesSpec,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("scenario", &r.scenario)?;
    out.set_item("seed", r.seed)?;
    out.set_item("flows", flows(py, &r.flows)?.dict)?;
    out.set_item("links", links(py, &r.links)?.dict)?;
    out.set_item("subflows", subflows(py, &r.subflows)?.dict)?;
    put_series(
        &out,
        &r.flow_series,
        &r.subflow_series,
        &r.link_series,
        series,
    )?;
    out.set_item("fairness", fairness(py, &r.fairness)?.dict)?;
    let RunStats {
        simulated_s,
        events,
        packets_created,
        packets_delivered,
        packets_dropped,
        packets_lost_on_wire,
        packets_in_flight,
        peak_packets,
    } = r.stats;
    let stats = PyDict::new(py);
    stats.set_item("simulated_s", simulated_s)?;
    stats.set_item("events", events)?;
    stats.set_item("packets_created", packets_created)?;
    stats.set_item("packets_delivered", packets_delivered)?;
    stats.set_item("packets_dropped", packets_dropped)?;
    stats.set_item("packets_lost_on_wire", packets_lost_on_wire)?;
    stats.set_item("packets_in_flight", packets_in_flight)?;
    stats.set_item("peak_packets", peak_packets)?;
    out.set_item("stats", stats)?;
    Ok(out)
}

/// The queue log's columns as they leave the simulator: `link_dir` (`2·link + reverse`) and
/// `event` (a code into `LOG_EVENTS`) are turned into names on the Python side.
pub(crate) fn packet_log_dict<'py>(py: Python<'py>, l: &PacketLog) -> PyResult<Bound<'py, PyDict>> {
    let PacketLog {
        time_s,
        link_dir,
        flow,
        subflow,
        sequence,
        bytes,
        event,
        queue_bytes,
        queue_packets,
    } = l;
    Ok(Table::new(py)
        .num("time_s", time_s)?
        .num("link_dir", link_dir)?
        .num("flow", flow)?
        .num("subflow", subflow)?
        .num("sequence", sequence)?
        .num("bytes", bytes)?
        .num("event", event)?
        .num("queue_bytes", queue_bytes)?
        .num("queue_packets", queue_packets)?
        .dict)
}

/// A finished capture as a dict: `files` (a list of dicts: `name`, `link`, `direction`,
/// `packets`, `bytes`, `truncated`), `log_rows`, `log_truncated`, the queue log's last rows as
/// `log` and the last `warnings`.
pub(crate) fn capture_dict<'py>(
    py: Python<'py>,
    summary: &CaptureSummary,
    log: &PacketLog,
    warnings: Vec<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let files = PyList::empty(py);
    for f in &summary.files {
        let d = PyDict::new(py);
        d.set_item("name", &f.name)?;
        d.set_item("link", &f.link)?;
        d.set_item("direction", &f.direction)?;
        d.set_item("packets", f.packets)?;
        d.set_item("bytes", f.bytes)?;
        d.set_item("truncated", f.truncated)?;
        files.append(d)?;
    }
    out.set_item("files", files)?;
    out.set_item("log_rows", summary.log_rows)?;
    out.set_item("log_truncated", summary.log_truncated)?;
    out.set_item("log", packet_log_dict(py, log)?)?;
    out.set_item("warnings", warnings)?;
    Ok(out)
}
