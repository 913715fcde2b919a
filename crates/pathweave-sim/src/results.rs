//! What a run reports: per-flow and per-link tables, sampled time series and fairness, all
//! columnar so they cross into Python (and Parquet) without per-row conversion.

/// Per-flow results, one entry per flow in scenario order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowTable {
    /// Flow name.
    pub name: Vec<String>,
    /// Fairness group.
    pub group: Vec<String>,
    /// Algorithm ("reno", …) or "cbr".
    pub algorithm: Vec<String>,
    /// Start time (s).
    pub start_s: Vec<f64>,
    /// End of the measurement window (s): completion, stop or the end of the run.
    pub end_s: Vec<f64>,
    /// Payload delivered in order to the receiving application (bytes).
    pub delivered_bytes: Vec<u64>,
    /// In-order payload delivered per second of the window (bit/s).
    pub goodput_bps: Vec<f64>,
    /// Payload arriving at the receiver, duplicates included, per second (bit/s).
    pub throughput_bps: Vec<f64>,
    /// Data packets sent, retransmissions included.
    pub packets_sent: Vec<u64>,
    /// Retransmitted segments.
    pub retransmits: Vec<u64>,
    /// Retransmission timeouts.
    pub timeouts: Vec<u64>,
    /// Loss events (fast recoveries and first timeouts).
    pub loss_events: Vec<u64>,
    /// Loss events per data packet sent.
    pub loss_event_rate: Vec<f64>,
    /// Data packets of this flow dropped in the network.
    pub drops: Vec<u64>,
    /// Time-averaged congestion window (bytes).
    pub mean_cwnd_bytes: Vec<f64>,
    /// Time-averaged smoothed RTT (s).
    pub mean_srtt_s: Vec<f64>,
    /// Completion time of a sized transfer (s after its start), NaN otherwise.
    pub completion_s: Vec<f64>,
}

/// Per-subflow results of TCP flows: one row per subflow (a single-path flow has one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubflowTable {
    /// Flow index (row of the flow table).
    pub flow: Vec<u32>,
    /// Subflow index within its flow.
    pub subflow: Vec<u32>,
    /// The links of its path, joined by ">" (a "~" marks a reverse traversal).
    pub path: Vec<String>,
    /// Payload bytes acknowledged on this subflow.
    pub acked_bytes: Vec<u64>,
    /// Acknowledged payload per second of the flow's window (bit/s).
    pub throughput_bps: Vec<f64>,
    /// Data packets sent, retransmissions included.
    pub packets_sent: Vec<u64>,
    /// Retransmitted segments.
    pub retransmits: Vec<u64>,
    /// Data packets of this subflow the network dropped (queue or wire).
    pub drops: Vec<u64>,
    /// Retransmission timeouts.
    pub timeouts: Vec<u64>,
    /// Loss events (fast recoveries and first timeouts).
    pub loss_events: Vec<u64>,
    /// Loss events per data packet sent.
    pub loss_event_rate: Vec<f64>,
    /// Time-averaged congestion window while joined (bytes).
    pub mean_cwnd_bytes: Vec<f64>,
    /// Time-averaged smoothed RTT (s).
    pub mean_srtt_s: Vec<f64>,
}

/// Subflow time series: one row per TCP subflow per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubflowSeries {
    /// Sample time (s).
    pub time_s: Vec<f64>,
    /// Flow index.
    pub flow: Vec<u32>,
    /// Subflow index.
    pub subflow: Vec<u32>,
    /// Congestion window (bytes).
    pub cwnd_bytes: Vec<f64>,
    /// Slow-start threshold (bytes), NaN while infinite.
    pub ssthresh_bytes: Vec<f64>,
    /// Smoothed RTT (s), NaN before the first sample.
    pub srtt_s: Vec<f64>,
    /// Acknowledged payload over the last interval (bit/s).
    pub rate_bps: Vec<f64>,
    /// The controller's coupling factor where it has one (LIA α, Balia α_r), else NaN.
    pub alpha: Vec<f64>,
    /// OLIA's ε_r, else NaN.
    pub epsilon: Vec<f64>,
    /// A per-path weight (BMC's D, wVegas, EWTCP, RP-MP or MPVeno share), else NaN.
    pub weight: Vec<f64>,
    /// BMC's T_wr = (R/D)·T_J, else NaN.
    pub score: Vec<f64>,
    /// Veno's backlog estimate N in packets, else NaN.
    pub backlog_packets: Vec<f64>,
    /// Westwood's bandwidth estimate in bit/s, else NaN.
    pub bandwidth_estimate_bps: Vec<f64>,
}

/// Move the rows out of `v`, leaving it room for as many again: the sampler then fills the
/// next chunk of a run without growing the column from empty.
fn take_keeping_room<T>(v: &mut Vec<T>) -> Vec<T> {
    let room = Vec::with_capacity(v.len());
    std::mem::replace(v, room)
}

impl SubflowSeries {
    /// The rows so far, leaving each column room for as many again.
    pub(crate) fn take_rows(&mut self) -> Self {
        SubflowSeries {
            time_s: take_keeping_room(&mut self.time_s),
            flow: take_keeping_room(&mut self.flow),
            subflow: take_keeping_room(&mut self.subflow),
            cwnd_bytes: take_keeping_room(&mut self.cwnd_bytes),
            ssthresh_bytes: take_keeping_room(&mut self.ssthresh_bytes),
            srtt_s: take_keeping_room(&mut self.srtt_s),
            rate_bps: take_keeping_room(&mut self.rate_bps),
            alpha: take_keeping_room(&mut self.alpha),
            epsilon: take_keeping_room(&mut self.epsilon),
            weight: take_keeping_room(&mut self.weight),
            score: take_keeping_room(&mut self.score),
            backlog_packets: take_keeping_room(&mut self.backlog_packets),
            bandwidth_estimate_bps: take_keeping_room(&mut self.bandwidth_estimate_bps),
        }
    }

    /// The value columns, in the order of [`SUBFLOW_SERIES_COLUMNS`] (which a scenario's
    /// `[series]` column selection indexes).
    pub fn value_columns(&mut self) -> [&mut Vec<f64>; 10] {
        [
            &mut self.cwnd_bytes,
            &mut self.ssthresh_bytes,
            &mut self.srtt_s,
            &mut self.rate_bps,
            &mut self.alpha,
            &mut self.epsilon,
            &mut self.weight,
            &mut self.score,
            &mut self.backlog_packets,
            &mut self.bandwidth_estimate_bps,
        ]
    }
}

/// Per-link-direction results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkTable {
    /// Link name.
    pub name: Vec<String>,
    /// "forward" or "reverse".
    pub direction: Vec<String>,
    /// Rate at the end of the run (bit/s).
    pub rate_bps: Vec<f64>,
    /// Packets offered.
    pub arrivals: Vec<u64>,
    /// Packets delivered to the next hop.
    pub delivered_packets: Vec<u64>,
    /// Bytes delivered to the next hop.
    pub delivered_bytes: Vec<u64>,
    /// Delivered bits over the run divided by the rate.
    pub utilization: Vec<f64>,
    /// Buffer-overflow drops.
    pub drops_overflow: Vec<u64>,
    /// RED early drops.
    pub drops_early: Vec<u64>,
    /// RED forced drops.
    pub drops_forced: Vec<u64>,
    /// Random losses on the wire.
    pub drops_wire: Vec<u64>,
}

/// Flow time series: one row per flow per sample. For a multipath connection `cwnd_bytes`
/// and `ssthresh_bytes` sum its subflows and `srtt_s` is the smallest subflow srtt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowSeries {
    /// Sample time (s).
    pub time_s: Vec<f64>,
    /// Flow index.
    pub flow: Vec<u32>,
    /// Congestion window (bytes).
    pub cwnd_bytes: Vec<f64>,
    /// Slow-start threshold (bytes), NaN while infinite.
    pub ssthresh_bytes: Vec<f64>,
    /// Smoothed RTT (s), NaN before the first sample.
    pub srtt_s: Vec<f64>,
    /// Goodput over the last interval (bit/s).
    pub rate_bps: Vec<f64>,
}

impl FlowSeries {
    /// The rows so far, leaving each column room for as many again.
    pub(crate) fn take_rows(&mut self) -> Self {
        FlowSeries {
            time_s: take_keeping_room(&mut self.time_s),
            flow: take_keeping_room(&mut self.flow),
            cwnd_bytes: take_keeping_room(&mut self.cwnd_bytes),
            ssthresh_bytes: take_keeping_room(&mut self.ssthresh_bytes),
            srtt_s: take_keeping_room(&mut self.srtt_s),
            rate_bps: take_keeping_room(&mut self.rate_bps),
        }
    }
}

/// Link time series: one row per sampled link direction per sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkSeries {
    /// Sample time (s).
    pub time_s: Vec<f64>,
    /// Link-direction index (2·link + reverse).
    pub link: Vec<u32>,
    /// Packets waiting.
    pub queue_packets: Vec<u32>,
    /// Bytes waiting.
    pub queue_bytes: Vec<u64>,
    /// RED's average queue, NaN for drop-tail.
    pub red_average: Vec<f64>,
    /// Congestive drops so far.
    pub drops: Vec<u64>,
    /// Wire losses so far.
    pub wire_losses: Vec<u64>,
}

impl LinkSeries {
    /// The rows so far, leaving each column room for as many again.
    pub(crate) fn take_rows(&mut self) -> Self {
        LinkSeries {
            time_s: take_keeping_room(&mut self.time_s),
            link: take_keeping_room(&mut self.link),
            queue_packets: take_keeping_room(&mut self.queue_packets),
            queue_bytes: take_keeping_room(&mut self.queue_bytes),
            red_average: take_keeping_room(&mut self.red_average),
            drops: take_keeping_room(&mut self.drops),
            wire_losses: take_keeping_room(&mut self.wire_losses),
        }
    }
}

/// Jain's fairness index of goodput within one group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupFairness {
    /// The group.
    pub group: String,
    /// Flows in it.
    pub flows: usize,
    /// Sum of goodputs (bit/s).
    pub total_goodput_bps: f64,
    /// (Σx)² / (n·Σx²).
    pub jain: f64,
}

/// Jain's index of `xs`: 1 when all are equal, 1/n when one takes everything.
pub fn jain_index(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        return 1.0;
    }
    s * s / (xs.len() as f64 * s2)
}

/// Run-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Simulated seconds.
    pub simulated_s: f64,
    /// Events dispatched.
    pub events: u64,
    /// Packets created.
    pub packets_created: u64,
    /// Packets delivered to endpoints.
    pub packets_delivered: u64,
    /// Packets dropped by queues.
    pub packets_dropped: u64,
    /// Packets lost on the wire.
    pub packets_lost_on_wire: u64,
    /// Packets still inside links at the end.
    pub packets_in_flight: u64,
    /// Most packets alive at once (pool size).
    pub peak_packets: u64,
}

/// Everything a run reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results {
    /// Scenario name.
    pub scenario: String,
    /// Seed used.
    pub seed: u64,
    /// Per-flow table.
    pub flows: FlowTable,
    /// Per-subflow table (TCP flows).
    pub subflows: SubflowTable,
    /// Per-link-direction table.
    pub links: LinkTable,
    /// Flow time series.
    pub flow_series: FlowSeries,
    /// Subflow time series (TCP flows).
    pub subflow_series: SubflowSeries,
    /// Link time series.
    pub link_series: LinkSeries,
    /// Jain's index per group, in group-name order.
    pub fairness: Vec<GroupFairness>,
    /// Counters.
    pub stats: RunStats,
}

/// The time series sampled over a stretch of a run (see `Simulation::take_series`), in the
/// layout of the series in [`Results`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesChunk {
    /// Flow time series.
    pub flows: FlowSeries,
    /// Subflow time series.
    pub subflows: SubflowSeries,
    /// Link time series.
    pub links: LinkSeries,
}

/// The value columns of [`FlowSeries`], in field order (`time_s` and `flow` are its keys).
pub const FLOW_SERIES_COLUMNS: [&str; 4] = ["cwnd_bytes", "ssthresh_bytes", "srtt_s", "rate_bps"];

/// The value columns of [`SubflowSeries`], in field order (`time_s`, `flow` and `subflow` are
/// its keys).
pub const SUBFLOW_SERIES_COLUMNS: [&str; 10] = [
    "cwnd_bytes",
    "ssthresh_bytes",
    "srtt_s",
    "rate_bps",
    "alpha",
    "epsilon",
    "weight",
    "score",
    "backlog_packets",
    "bandwidth_estimate_bps",
];

/// The value columns of [`LinkSeries`], in field order (`time_s` and `link` are its keys).
pub const LINK_SERIES_COLUMNS: [&str; 5] = [
    "queue_packets",
    "queue_bytes",
    "red_average",
    "drops",
    "wire_losses",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_and_one_over_n_for_a_monopoly() {
        assert!((jain_index(&[3.0, 3.0, 3.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+2)^2 / (2·(1+4)) = 0.9
        assert!((jain_index(&[1.0, 2.0]) - 0.9).abs() < 1e-12);
    }

    /// The field names of a struct as `{:?}` prints them, in order.
    fn fields(debug: &str) -> Vec<String> {
        debug
            .split([',', '{'])
            .skip(1)
            .filter_map(|p| p.split_once(':').map(|(k, _)| k.trim().to_string()))
            .collect()
    }

    #[test]
    fn column_lists_follow_the_series_fields() {
        let keys_then = |keys: &[&str], cols: &[&str]| -> Vec<String> {
            keys.iter().chain(cols).map(|s| s.to_string()).collect()
        };
        assert_eq!(
            fields(&format!("{:?}", FlowSeries::default())),
            keys_then(&["time_s", "flow"], &FLOW_SERIES_COLUMNS)
        );
        assert_eq!(
            fields(&format!("{:?}", SubflowSeries::default())),
            keys_then(&["time_s", "flow", "subflow"], &SUBFLOW_SERIES_COLUMNS)
        );
        assert_eq!(
            fields(&format!("{:?}", LinkSeries::default())),
            keys_then(&["time_s", "link"], &LINK_SERIES_COLUMNS)
        );
    }
}
