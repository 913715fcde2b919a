//! Samples of a sending connection's paths into the simulator's result tables, so that a QUIC
//! transfer, an emulated run and a simulated one are read the same way.

use crate::endpoint::{PathSample, SendReport};
use pathweave_sim::results::{FlowSeries, FlowTable, Results, SubflowSeries, SubflowTable};

/// Per-path counters at the previous sample, for rates.
#[derive(Clone, Copy, Debug, Default)]
struct Last {
    acked: u64,
}

/// Collects samples of one flow's paths.
#[derive(Debug, Default)]
pub struct Recorder {
    /// The flow's row in the tables.
    pub flow: u32,
    last_t: f64,
    last_delivered: u64,
    last: Vec<Last>,
    /// Flow series rows so far.
    pub flow_series: FlowSeries,
    /// Subflow (path) series rows so far.
    pub subflow_series: SubflowSeries,
    /// Time-weighted sums for the means: (Σ cwnd·dt, Σ srtt·dt, Σ dt) per path.
    sums: Vec<(f64, f64, f64)>,
}

fn nan_or(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

impl Recorder {
    /// A recorder for flow row `flow`.
    pub fn new(flow: u32) -> Recorder {
        Recorder {
            flow,
            ..Recorder::default()
        }
    }

    /// Records the paths at `t` seconds; `delivered` is the flow's data bytes so far.
    pub fn sample(&mut self, t: f64, delivered: u64, paths: &[PathSample]) {
        let dt = t - self.last_t;
        let mut cwnd_sum = 0.0;
        let mut ssthresh_sum = 0.0;
        let mut ssthresh_inf = false;
        let mut srtt_min = f64::NAN;
        for p in paths {
            let k = p.path.index;
            if self.last.len() <= k {
                self.last.resize(k + 1, Last::default());
                self.sums.resize(k + 1, (0.0, 0.0, 0.0));
            }
            let Some(s) = p.snapshot else { continue };
            if !s.open {
                continue;
            }
            let rate = if dt > 0.0 {
                (s.acked_bytes.saturating_sub(self.last[k].acked)) as f64 * 8.0 / dt
            } else {
                f64::NAN
            };
            self.last[k].acked = s.acked_bytes;
            let srtt = nan_or(s.srtt);
            let ss = &mut self.subflow_series;
            ss.time_s.push(t);
            ss.flow.push(self.flow);
            ss.subflow.push(k as u32);
            ss.cwnd_bytes.push(s.cwnd as f64);
            ss.ssthresh_bytes.push(nan_or(s.ssthresh.map(|x| x as f64)));
            ss.srtt_s.push(srtt);
            ss.rate_bps.push(rate);
            ss.alpha.push(nan_or(s.metrics.alpha));
            ss.epsilon.push(nan_or(s.metrics.epsilon));
            ss.weight.push(nan_or(s.metrics.weight));
            ss.score.push(nan_or(s.metrics.score));
            ss.backlog_packets.push(nan_or(s.metrics.backlog));
            ss.bandwidth_estimate_bps
                .push(nan_or(s.metrics.bandwidth_bps));
            cwnd_sum += s.cwnd as f64;
            match s.ssthresh {
                Some(x) => ssthresh_sum += x as f64,
                None => ssthresh_inf = true,
            }
            if srtt.is_finite() {
                srtt_min = srtt_min.min(srtt);
            }
            if dt > 0.0 {
                let sum = &mut self.sums[k];
                sum.0 += s.cwnd as f64 * dt;
                if srtt.is_finite() {
                    sum.1 += srtt * dt;
                }
                sum.2 += dt;
            }
        }
        let fs = &mut self.flow_series;
        fs.time_s.push(t);
        fs.flow.push(self.flow);
        fs.cwnd_bytes.push(cwnd_sum);
        fs.ssthresh_bytes
            .push(if ssthresh_inf { f64::NAN } else { ssthresh_sum });
        fs.srtt_s.push(srtt_min);
        fs.rate_bps.push(if dt > 0.0 {
            delivered.saturating_sub(self.last_delivered) as f64 * 8.0 / dt
        } else {
            f64::NAN
        });
        self.last_t = t;
        self.last_delivered = delivered;
    }

    /// Appends this flow's rows to the flow and subflow tables. `start_s` and `end_s` bound
    /// the measurement window; `delivered` is the data the receiver got.
    #[allow(clippy::too_many_arguments)]
    pub fn finish_tables(
        &self,
        name: &str,
        algorithm: &str,
        start_s: f64,
        end_s: f64,
        delivered: u64,
        completion_s: Option<f64>,
        paths: &[PathSample],
        path_names: &[String],
        flows: &mut FlowTable,
        subflows: &mut SubflowTable,
    ) {
        let window = (end_s - start_s).max(1e-9);
        let mut sent = 0u64;
        let mut lost = 0u64;
        let mut events = 0u64;
        let mut timeouts = 0u64;
        let mut cwnd_mean = 0.0;
        let mut srtt_mean = f64::NAN;
        for p in paths {
            let k = p.path.index;
            let st = p.stats.unwrap_or_default();
            let snap = p.snapshot.unwrap_or_default();
            let (c, r, d) = self.sums.get(k).copied().unwrap_or((0.0, 0.0, 0.0));
            let (mc, mr) = if d > 0.0 {
                (c / d, r / d)
            } else {
                (f64::NAN, f64::NAN)
            };
            sent += st.udp_tx.datagrams;
            lost += st.lost_packets;
            events += snap.congestion_events;
            timeouts += snap.persistent_congestion;
            if mc.is_finite() {
                cwnd_mean += mc;
            }
            if mr.is_finite() {
                srtt_mean = srtt_mean.min(mr);
            }
            subflows.flow.push(self.flow);
            subflows.subflow.push(k as u32);
            subflows
                .path
                .push(path_names.get(k).cloned().unwrap_or_default());
            subflows.acked_bytes.push(snap.acked_bytes);
            subflows
                .throughput_bps
                .push(snap.acked_bytes as f64 * 8.0 / window);
            subflows.packets_sent.push(st.udp_tx.datagrams);
            subflows.retransmits.push(st.lost_packets);
            subflows.drops.push(st.lost_packets);
            subflows.timeouts.push(snap.persistent_congestion);
            let ev = snap.congestion_events + snap.persistent_congestion;
            subflows.loss_events.push(ev);
            subflows.loss_event_rate.push(if st.udp_tx.datagrams > 0 {
                ev as f64 / st.udp_tx.datagrams as f64
            } else {
                0.0
            });
            subflows.mean_cwnd_bytes.push(mc);
            subflows.mean_srtt_s.push(mr);
        }
        flows.name.push(name.to_string());
        flows.group.push(name.to_string());
        flows.algorithm.push(algorithm.to_string());
        flows.start_s.push(start_s);
        flows.end_s.push(end_s);
        flows.delivered_bytes.push(delivered);
        flows.goodput_bps.push(delivered as f64 * 8.0 / window);
        flows.throughput_bps.push(delivered as f64 * 8.0 / window);
        flows.packets_sent.push(sent);
        flows.retransmits.push(lost);
        flows.timeouts.push(timeouts);
        flows.loss_events.push(events + timeouts);
        flows.loss_event_rate.push(if sent > 0 {
            (events + timeouts) as f64 / sent as f64
        } else {
            0.0
        });
        flows.drops.push(lost);
        flows.mean_cwnd_bytes.push(cwnd_mean);
        flows.mean_srtt_s.push(srtt_mean);
        flows.completion_s.push(completion_s.unwrap_or(f64::NAN));
    }
}

/// The results of one `quic send`, in the simulator's schema: one flow, one subflow row per
/// path, the series sampled while it ran.
pub fn send_results(
    rec: Recorder,
    report: &SendReport,
    algorithm: &str,
    path_names: &[String],
    seed: u64,
) -> Results {
    let mut r = Results {
        scenario: "quic-send".to_string(),
        seed,
        ..Results::default()
    };
    rec.finish_tables(
        "quic",
        algorithm,
        0.0,
        report.seconds,
        report.received_bytes,
        Some(report.seconds),
        &report.paths,
        path_names,
        &mut r.flows,
        &mut r.subflows,
    );
    r.flow_series = rec.flow_series;
    r.subflow_series = rec.subflow_series;
    r.stats.simulated_s = report.seconds;
    r
}
