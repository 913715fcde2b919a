//! A simulation: the network built from a [`Scenario`], the endpoints, the timeline of link
//! changes and the sampler, driven by one event loop.

use crate::capture::{Capture, CaptureSpec, CaptureSummary, PacketLog};
use crate::event::{ComponentId, Kind, Scheduler, Timer};
use crate::link::LinkDir;
use crate::net::{Net, Next, RouteInfo};
use crate::packet::PacketKind;
use crate::prefetch::prefetch;
use crate::quic::{self, QuicConn, QuicSender};
use crate::results::*;
use crate::rng::{Purpose, Stream};
use crate::scenario::{FlowKind, LinkChange, Scenario, Transport};
use crate::tcp::{Application, Cc, SubflowPlan, SubflowStats, TcpReceiver, TcpSender, Traffic};
use crate::topology;
use crate::udp::{CbrSender, CbrSink};
use pathweave_cc::cc::multipath::MultipathController;
use pathweave_cc::cc::PathId;
use pathweave_cc::Instant;
use std::path::Path;

/// A flow's endpoints, one entry of the flow table that every packet's delivery indexes.
/// `#[repr(u8)]` fixes the layout: the tag, then a TCP flow's sender pointer and its receiver
/// inline from byte 16, so a data segment's receiver state and an ACK's sender pointer share
/// the entry's first cache line (`TcpReceiver` checks its own offsets from there).
#[repr(u8, align(64))]
enum Flow {
    Tcp {
        snd: Box<TcpSender>,
        rcv: TcpReceiver,
    },
    Cbr {
        snd: CbrSender,
        sink: CbrSink,
    },
    /// A QUIC connection: both sides behind one pointer.
    Quic {
        conn: Box<QuicConn>,
    },
}

impl Flow {
    fn delivered(&self) -> u64 {
        match self {
            Flow::Tcp { rcv, .. } => rcv.stats.delivered,
            Flow::Cbr { sink, .. } => sink.bytes,
            Flow::Quic { conn } => conn.rcv.stats.delivered,
        }
    }
}

/// What the sampler and the results read of a congestion-controlled sender, TCP or QUIC,
/// path by path.
trait PathSender {
    fn integrate(&mut self, now: Instant);
    fn controller(&self) -> &Cc;
    /// Per path: whether it is open, its smoothed RTT in seconds (NaN before a sample) and
    /// its counters.
    fn path_stats(&self) -> impl Iterator<Item = (bool, f64, &SubflowStats)>;
}

impl PathSender for TcpSender {
    #[inline]
    fn integrate(&mut self, now: Instant) {
        TcpSender::integrate(self, now)
    }
    #[inline]
    fn controller(&self) -> &Cc {
        TcpSender::controller(self)
    }
    #[inline]
    fn path_stats(&self) -> impl Iterator<Item = (bool, f64, &SubflowStats)> {
        self.subflows()
            .iter()
            .map(|s| (s.is_active(), s.srtt_secs(), &s.stats))
    }
}

impl PathSender for QuicSender {
    fn integrate(&mut self, now: Instant) {
        QuicSender::integrate(self, now)
    }
    fn controller(&self) -> &Cc {
        QuicSender::controller(self)
    }
    fn path_stats(&self) -> impl Iterator<Item = (bool, f64, &SubflowStats)> {
        self.paths()
            .iter()
            .map(|p| (p.is_active(), p.srtt_secs(), &p.stats))
    }
}

/// One run of one scenario with one seed.
pub struct Simulation {
    scenario: Scenario,
    seed: u64,
    net: Net,
    flows: Vec<Flow>,
    timeline: Vec<(Instant, usize, LinkChange)>,
    timeline_pos: usize,
    timeline_timer: Timer,
    sampler_timer: Timer,
    next_sample: Instant,
    sampled_links: Vec<u32>,
    last_delivered: Vec<u64>,
    /// First slot of each flow's subflows in `last_acked`.
    sub_index: Vec<usize>,
    last_acked: Vec<u64>,
    /// Rows one sample adds at most to the flow and subflow series.
    flow_rows: usize,
    subflow_rows: usize,
    end: Instant,
    flow_series: FlowSeries,
    subflow_series: SubflowSeries,
    link_series: LinkSeries,
    /// Whether the event loop prefetches for the events ahead (see [`PREFETCH_MIN_FLOWS`]).
    prefetch: bool,
}

/// How many flows ahead the sampler prefetches each stage (see
/// [`Simulation::prefetch_sample`]).
const SAMPLE_AHEAD: usize = 8;

/// Runs with at least this many flows or subflows prefetch, in the event loop, what the next
/// events will read (see [`Simulation::prefetch_ahead`]); smaller runs take a loop without
/// it, the same instructions as before. A FatTree of k = 16 with 8 subflows per connection
/// (8,192 subflows over 6,144 link directions, about 400 MB) spent 12-23 % less CPU time
/// with it (three paired runs of its first 30 ms, huge pages on in both). At 10,000 flows the per-flow records (about 4 kB a flow with its
/// link rings) and the packets in flight exceed the last-level cache, and most of a packet's
/// reads miss; at 1,000 multipath connections they still fit, and the prefetches cost 6 % of
/// the wall time instead of saving any (15 % at 8 flows).
const PREFETCH_MIN_FLOWS: usize = 4096;

/// Rows of the queue log after which the capturing event loop hands control back (see
/// [`Simulation::run_capturing`]): about 40 MB of columns.
pub const LOG_CHUNK_ROWS: usize = 1 << 20;

impl Simulation {
    /// Build the network of `scenario`; `seed` overrides the scenario's own.
    pub fn new(scenario: &Scenario, seed: Option<u64>) -> Simulation {
        Self::with_scheduler(scenario, seed, Scheduler::new())
    }

    /// As [`Simulation::new`], on a given (empty) event queue: the tests pass
    /// [`Scheduler::reference`] to check the fast queue against it.
    pub fn with_scheduler(scenario: &Scenario, seed: Option<u64>, sched: Scheduler) -> Simulation {
        let seed = seed.unwrap_or(scenario.seed);
        let subflows: usize = scenario.flows.iter().map(|f| f.subflows.len()).sum();
        if crate::hugepages::wanted(scenario.flows.len(), subflows) {
            crate::hugepages::enable();
        }
        let links = topology::build_links(scenario, seed);
        // Routes: for each flow, each subflow's data route then its ACK route.
        let mut routes: Vec<Vec<u32>> = Vec::new();
        let mut flow_routes: Vec<Vec<(u32, u32)>> = Vec::with_capacity(scenario.flows.len());
        for f in &scenario.flows {
            let mut pairs = Vec::with_capacity(f.subflows.len());
            for sf in &f.subflows {
                let (fwd, rev) = topology::subflow_routes(sf);
                routes.push(fwd);
                routes.push(rev);
                pairs.push((routes.len() as u32 - 2, routes.len() as u32 - 1));
            }
            flow_routes.push(pairs);
        }
        // What each route carries: a subflow's data segments (whose size less the flow's
        // header bytes is the payload) or datagrams, then its ACKs.
        let mut info = Vec::with_capacity(routes.len());
        for (i, f) in scenario.flows.iter().enumerate() {
            let (kind, overhead) = match &f.kind {
                FlowKind::Tcp { cfg, .. } if cfg.transport == Transport::Quic => {
                    (PacketKind::Data, quic::DATA_WIRE_OVERHEAD)
                }
                FlowKind::Tcp { cfg, .. } => (PacketKind::Data, cfg.config().header),
                FlowKind::Cbr { .. } => (PacketKind::Datagram, 0),
            };
            for k in 0..flow_routes[i].len() {
                let route = |kind, overhead| RouteInfo {
                    flow: i as u32,
                    kind,
                    sub: k as u16,
                    overhead,
                };
                info.push(route(kind, overhead));
                info.push(route(PacketKind::Ack, 0));
            }
        }
        let mut net = Net::new(sched, links, &routes, &info, scenario.flows.len());
        let mut flows = Vec::with_capacity(scenario.flows.len());
        for (i, f) in scenario.flows.iter().enumerate() {
            let window = (f.start, f.stop);
            let pairs = &flow_routes[i];
            let flow = match &f.kind {
                FlowKind::Tcp {
                    cfg,
                    control,
                    traffic,
                } if cfg.transport == Transport::Quic => {
                    let Ok(cc) = control.config.build() else {
                        unreachable!("scenario validation builds every controller configuration")
                    };
                    let joins =
                        quic::handshake_joins(scenario, &f.subflows, f.start, cfg.handshakes);
                    let plans = subflow_plans(&f.subflows, pairs, joins);
                    let settings = quic::sender::QuicSettings {
                        max_udp_payload: quic::max_udp_payload(cfg.mss, cfg.header),
                        max_ack_delay: cfg.max_ack_delay,
                    };
                    let mut conn = QuicConn::new(
                        i as u32,
                        settings,
                        Application {
                            traffic: *traffic,
                            start: f.start,
                            stop: f.stop,
                        },
                        cc,
                        &plans,
                        Stream::new(seed, Purpose::Flow, i),
                    );
                    conn.init(&mut net);
                    Flow::Quic {
                        conn: Box::new(conn),
                    }
                }
                FlowKind::Tcp {
                    cfg,
                    control,
                    traffic,
                } => {
                    let c = cfg.config();
                    // The scenario validated the configuration, so building cannot fail.
                    let Ok(cc) = control.config.build() else {
                        unreachable!("scenario validation builds every controller configuration")
                    };
                    // With handshakes, a subflow's first data waits for its handshake (a
                    // header-only segment each way).
                    let joins: Vec<Instant> = if cfg.handshakes {
                        topology::handshake_joins(scenario, &f.subflows, f.start, cfg.ack_size)
                    } else {
                        f.subflows
                            .iter()
                            .map(|sf| sf.start.unwrap_or(f.start))
                            .collect()
                    };
                    let mut plans = subflow_plans(&f.subflows, pairs, joins);
                    if cfg.handshakes {
                        // The handshake's round trip is each subflow's first RTT sample.
                        for (p, sf) in plans.iter_mut().zip(&f.subflows) {
                            p.first_rtt = Some(topology::handshake_rtt(scenario, sf, cfg.ack_size));
                        }
                    }
                    let mut snd = TcpSender::new(
                        i as u32,
                        ComponentId::new(Kind::Sender, i),
                        c,
                        Application {
                            traffic: *traffic,
                            start: f.start,
                            stop: f.stop,
                        },
                        cc,
                        &plans,
                        Stream::new(seed, Purpose::Flow, i),
                    );
                    snd.init(&mut net);
                    let acks: Vec<u32> = pairs.iter().map(|p| p.1).collect();
                    let rcv =
                        TcpReceiver::new(i as u32, ComponentId::new(Kind::Receiver, i), &c, &acks);
                    Flow::Tcp {
                        snd: Box::new(snd),
                        rcv,
                    }
                }
                FlowKind::Cbr { rate, size } => {
                    let mut snd = CbrSender::new(
                        i as u32,
                        pairs[0].0,
                        ComponentId::new(Kind::Sender, i),
                        *rate,
                        *size,
                        window,
                    );
                    snd.init(&mut net);
                    Flow::Cbr {
                        snd,
                        sink: CbrSink::default(),
                    }
                }
            };
            flows.push(flow);
        }
        let timeline = topology::timeline(scenario);
        let mut sim = Simulation {
            seed,
            end: Instant(scenario.duration.as_nanos()),
            net,
            flows,
            timeline,
            timeline_pos: 0,
            timeline_timer: Timer::default(),
            sampler_timer: Timer::default(),
            next_sample: Instant(scenario.sample_interval.as_nanos()),
            sampled_links: scenario.series.sampled_links().to_vec(),
            last_delivered: vec![0; scenario.flows.len()],
            sub_index: scenario
                .flows
                .iter()
                .scan(0, |acc, f| {
                    let first = *acc;
                    *acc += f.subflows.len();
                    Some(first)
                })
                .collect(),
            last_acked: vec![0; scenario.flows.iter().map(|f| f.subflows.len()).sum()],
            flow_rows: (0..scenario.flows.len())
                .filter(|&i| scenario.series.samples_flow(i))
                .count(),
            subflow_rows: (scenario.flows.iter().enumerate())
                .filter(|&(i, _)| scenario.series.samples_subflows(i))
                .map(|(_, f)| f.subflows.len())
                .sum(),
            flow_series: FlowSeries::default(),
            subflow_series: SubflowSeries::default(),
            link_series: LinkSeries::default(),
            scenario: scenario.clone(),
            prefetch: scenario.flows.len().max(subflows) >= PREFETCH_MIN_FLOWS,
        };
        if let Some(&(t, _, _)) = sim.timeline.first() {
            sim.timeline_timer
                .arm(t, ComponentId::new(Kind::Timeline, 0), &mut sim.net.sched);
        }
        let t = sim.next_sample;
        sim.sampler_timer
            .arm(t, ComponentId::new(Kind::Sampler, 0), &mut sim.net.sched);
        sim
    }

    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.net.now
    }

    /// The end of the run.
    pub fn end(&self) -> Instant {
        self.end
    }

    /// Whether the run has reached its end.
    pub fn finished(&self) -> bool {
        self.net.now >= self.end
    }

    /// Events dispatched so far.
    pub fn events(&self) -> u64 {
        self.net.sched.events_processed()
    }

    /// Run until `limit` (or the end, whichever is first).
    pub fn run_until(&mut self, limit: Instant) {
        let limit = limit.min(self.end);
        if self.net.capture.is_some() {
            if self.run_capturing(limit) {
                return;
            }
        } else if self.prefetch {
            self.run_prefetching(limit);
        } else {
            self.run_plain(limit);
        }
        self.net.now = limit;
    }

    /// The event loop with the capture on; it returns early (true), at the time of the last
    /// event handled, once the queue log holds [`LOG_CHUNK_ROWS`] rows not yet taken, so a
    /// driver that takes them after each call keeps its memory bounded.
    #[inline(never)]
    fn run_capturing(&mut self, limit: Instant) -> bool {
        while let Some((t, c)) = self.net.sched.pop_until(limit) {
            self.net.now = t;
            self.dispatch::<true>(c);
            if self
                .net
                .capture
                .as_ref()
                .is_some_and(|c| c.log_pending() >= LOG_CHUNK_ROWS)
            {
                return true;
            }
        }
        false
    }

    /// Capture the packets of this run into `dir` (an existing, writable directory) as
    /// `spec` asks (see [`crate::capture`]). Only before the run has started.
    pub fn start_capture(&mut self, spec: &CaptureSpec, dir: &Path) -> Result<(), String> {
        if self.net.now != Instant::ZERO || self.net.counters.created != 0 {
            return Err("a capture must start before the simulation runs".to_string());
        }
        let cap = Capture::new(&self.scenario, self.seed, spec, dir, self.net.links.len())
            .map_err(|e| format!("cannot create the capture files in {}: {e}", dir.display()))?;
        self.net.capture = Some(Box::new(cap));
        Ok(())
    }

    /// Whether a capture is on.
    pub fn capturing(&self) -> bool {
        self.net.capture.is_some()
    }

    /// Move out the queue log's rows recorded since the start or the previous call.
    pub fn take_packet_log(&mut self) -> PacketLog {
        self.net.capture_advance_all();
        self.net
            .capture
            .as_mut()
            .map(|c| c.take_log())
            .unwrap_or_default()
    }

    /// Move out the capture's warnings raised since the last call.
    pub fn take_capture_warnings(&mut self) -> Vec<String> {
        self.net
            .capture
            .as_mut()
            .map(|c| c.take_warnings())
            .unwrap_or_default()
    }

    /// End the capture: log the transmissions started by now, write what is held back and
    /// close the files. The queue log's last rows stay for [`Simulation::take_packet_log`]
    /// until this call, which returns them with the summary.
    pub fn finish_capture(&mut self) -> Result<(CaptureSummary, PacketLog, Vec<String>), String> {
        self.net.capture_advance_all();
        let Some(mut cap) = self.net.capture.take() else {
            return Err("no capture is on".to_string());
        };
        let log = cap.take_log();
        let warnings = cap.take_warnings();
        let summary = cap.finish()?;
        Ok((summary, log, warnings))
    }

    // Each loop out of line, on its own: the compiler then inlines into the plain loop what
    // it inlined into the one loop there was before (with both in one function it did not).
    #[inline(never)]
    fn run_plain(&mut self, limit: Instant) {
        self.run_loop::<false>(limit);
    }

    #[inline(never)]
    fn run_prefetching(&mut self, limit: Instant) {
        self.run_loop::<true>(limit);
    }

    /// The event loop; with `PREFETCH`, each event first prefetches for the next ones.
    #[inline(always)]
    fn run_loop<const PREFETCH: bool>(&mut self, limit: Instant) {
        while let Some((t, c)) = self.net.sched.pop_until(limit) {
            if PREFETCH {
                self.prefetch_ahead();
            }
            self.net.now = t;
            self.dispatch::<false>(c);
        }
    }

    /// The link direction of event `k` ahead in the current run (0: the next event), if it
    /// is a link's.
    #[inline(always)]
    fn link_ahead(&self, k: usize) -> Option<&LinkDir> {
        let l = self.net.sched.ahead(k)?.link_index()?;
        self.net.links.get(l)
    }

    /// Prefetch, as a pipeline over the events ahead in the current run, what a link event
    /// reads, each stage from what the stage before brought in (counting the next event as
    /// the first ahead): for the fifth event ahead its link direction's two per-packet lines;
    /// for the fourth, reading the head packet from that record (where the ring keeps it
    /// inline), the hop table's entry for it; for the third, the slot behind the head, the
    /// head packet's pool record if it is an ACK kept there, and, from the hop table, either
    /// the next link direction's two lines or, if the packet's route ends there, its flow's
    /// entry (two lines); for the second, the ring slot the next link direction's admission
    /// reads first. A hint only: an event pushed in between, a stale event or a packet that
    /// does not arrive yet wastes a prefetch and changes nothing else.
    #[inline(always)]
    fn prefetch_ahead(&self) {
        if let Some(d) = self.link_ahead(4) {
            d.prefetch_hot();
        }
        // The hop table entry the third stage reads: at 8,192 subflows the table's routes
        // are spread over hundreds of kB, and a load of it that misses holds up the loop.
        if let Some((_, hop)) = self.link_ahead(3).and_then(LinkDir::head_tag) {
            prefetch(self.net.after_addr(hop));
        }
        // The slot the next link direction's admission reads first (`LinkDir::advance`),
        // from its record that the third stage brought in an event ago.
        if let Some((_, hop)) = self.link_ahead(1).and_then(LinkDir::head_tag) {
            if let Some(Next::Link(l)) = self.net.after(hop) {
                if let Some(s) = self.net.links.get(l).and_then(LinkDir::waiting_slot) {
                    prefetch(s);
                }
            }
        }
        let Some(d) = self.link_ahead(2) else {
            return;
        };
        let Some((word, hop)) = d.head_tag() else {
            return;
        };
        if let Some(id) = Net::pooled(word, hop) {
            prefetch(self.net.pool.header_addr(id));
        }
        if let Some(s) = d.second_slot() {
            prefetch(s);
        }
        match self.net.after(hop) {
            Some(Next::Link(l)) => {
                if let Some(n) = self.net.links.get(l) {
                    n.prefetch_hot();
                }
            }
            Some(Next::Flow(f)) => {
                if let Some(e) = self.flows.get(f) {
                    let a = (e as *const Flow).cast::<u8>();
                    prefetch(a);
                    prefetch(a.wrapping_add(64));
                }
            }
            None => {}
        }
    }

    /// Prefetch, while the sampler is at flow `i`, what it will read of the flows ahead: the
    /// sender record's sampled lines of flow `i + 2·SAMPLE_AHEAD`, and behind the pointers of
    /// flow `i + SAMPLE_AHEAD` (whose record came in `SAMPLE_AHEAD` flows ago) its first
    /// subflow's sampled line, its window table and its controller's paths. The walk over the
    /// flow table is sequential, which the hardware prefetches by itself; the records it
    /// points to are not.
    #[inline(always)]
    fn prefetch_sample(&self, i: usize) {
        if let Some(Flow::Tcp { snd, .. }) = self.flows.get(i + 2 * SAMPLE_AHEAD) {
            for a in snd.sample_lines() {
                prefetch(a);
            }
        }
        if let Some(Flow::Tcp { snd, .. }) = self.flows.get(i + SAMPLE_AHEAD) {
            for a in snd.sample_heap_lines() {
                prefetch(a);
            }
        }
    }

    /// Run to the end.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    #[inline(always)]
    fn dispatch<const CAPTURE: bool>(&mut self, c: ComponentId) {
        // Most events are a link's: one comparison tells them apart before the kind is decoded.
        if let Some(l) = c.link_index() {
            self.on_link::<CAPTURE>(l);
            return;
        }
        let i = c.index();
        match c.kind() {
            Kind::Link => unreachable!("link events are dispatched above"),
            Kind::Sender => match &mut self.flows[i] {
                Flow::Tcp { snd, .. } => snd.on_timer(&mut self.net),
                Flow::Cbr { snd, .. } => snd.on_timer(&mut self.net),
                Flow::Quic { conn } => conn.on_sender_timer(&mut self.net),
            },
            Kind::Receiver => match &mut self.flows[i] {
                Flow::Tcp { rcv, .. } => rcv.on_timer(&mut self.net),
                Flow::Quic { conn } => conn.on_receiver_timer(&mut self.net),
                Flow::Cbr { .. } => {}
            },
            Kind::Timeline => self.on_timeline(),
            Kind::Sampler => self.on_sample(),
        }
    }

    /// The event of link direction `l`: hand on every packet that has reached its far end,
    /// then wait for the next one.
    #[inline(always)]
    fn on_link<const CAPTURE: bool>(&mut self, l: usize) {
        if !self.net.links[l].fire(self.net.now) {
            return;
        }
        loop {
            let arrival = if CAPTURE {
                self.net.link_arrival_captured(l)
            } else {
                self.net.link_arrival(l)
            };
            let Some(arrival) = arrival else { break };
            let Some(d) = arrival else { continue };
            // The flow comes from the route, and with it the kind: the endpoint is reached
            // with what the link held of the packet, unless it is an ACK kept in the pool.
            match (&mut self.flows[d.flow], d.kind) {
                (Flow::Tcp { snd, .. }, PacketKind::Ack) => match d.pooled {
                    // Given back before the sender sends, which reuses the slot.
                    Some(id) => {
                        let p = self.net.take(id);
                        snd.on_ack(&p, &mut self.net)
                    }
                    None => snd.on_plain_ack(d.sub, d.seq, d.dsn, &mut self.net),
                },
                (Flow::Tcp { rcv, .. }, _) => {
                    rcv.on_segment(d.sub, d.seq, d.dsn, d.payload, &mut self.net)
                }
                (Flow::Cbr { sink, .. }, _) => {
                    sink.received += 1;
                    sink.bytes += d.payload as u64;
                }
                (Flow::Quic { conn }, PacketKind::Ack) => conn.on_ack(d.sub, d.seq, &mut self.net),
                (Flow::Quic { conn }, _) => {
                    conn.on_data(d.sub, d.seq, d.dsn, d.payload, &mut self.net)
                }
            }
        }
    }

    // Rare (link changes, samples): out of line, so that the event loop keeps no registers
    // or constants for them.
    #[inline(never)]
    fn on_timeline(&mut self) {
        let now = self.net.now;
        if !self.timeline_timer.fire(now) {
            return;
        }
        // The queue log reads the transmissions started before the change re-plans them.
        self.net.capture_advance_all();
        while let Some(&(t, k, change)) = self.timeline.get(self.timeline_pos) {
            if t > now {
                self.timeline_timer.arm(
                    t,
                    ComponentId::new(Kind::Timeline, 0),
                    &mut self.net.sched,
                );
                break;
            }
            self.timeline_pos += 1;
            topology::apply_change(&mut self.net.links, k, change, now, &mut self.net.sched);
        }
    }

    #[inline(never)]
    fn on_sample(&mut self) {
        let now = self.net.now;
        if !self.sampler_timer.fire(now) {
            return;
        }
        // The queue log reads the transmissions started before the sampler counts them out.
        self.net.capture_advance_all();
        let t = now.as_secs_f64();
        let dt = self.scenario.sample_interval.as_secs_f64();
        // Flows and subflows outside the selection still update their counters and integrals
        // here, so what is recorded never changes the other results.
        let flow_columns = self.scenario.series.flow_columns;
        let subflow_columns = self.scenario.series.subflow_columns;
        self.reserve_rows();
        for i in 0..self.flows.len() {
            if self.prefetch {
                self.prefetch_sample(i);
            }
            let f = &mut self.flows[i];
            let subflow_rows = self.scenario.series.samples_subflows(i);
            let delivered = f.delivered();
            let rate = (delivered - self.last_delivered[i]) as f64 * 8.0 / dt;
            self.last_delivered[i] = delivered;
            let first = self.sub_index[i];
            let rows = SampleRows {
                series: &mut self.subflow_series,
                columns: subflow_columns,
                record: subflow_rows,
                flow: i as u32,
                t,
                dt,
            };
            let (cwnd, ssthresh, srtt) = match f {
                Flow::Tcp { snd, .. } => {
                    let n = snd.subflows().len();
                    sample_paths(
                        &mut **snd,
                        now,
                        &mut self.last_acked[first..first + n],
                        rows,
                    )
                }
                Flow::Quic { conn } => {
                    let n = conn.snd.paths().len();
                    sample_paths(
                        &mut conn.snd,
                        now,
                        &mut self.last_acked[first..first + n],
                        rows,
                    )
                }
                Flow::Cbr { .. } => (f64::NAN, f64::NAN, f64::NAN),
            };
            if !self.scenario.series.samples_flow(i) {
                continue;
            }
            let s = &mut self.flow_series;
            s.time_s.push(t);
            s.flow.push(i as u32);
            let columns = [
                &mut s.cwnd_bytes,
                &mut s.ssthresh_bytes,
                &mut s.srtt_s,
                &mut s.rate_bps,
            ];
            for (k, (col, x)) in columns
                .into_iter()
                .zip([cwnd, ssthresh, srtt, rate])
                .enumerate()
            {
                if flow_columns.has(k) {
                    col.push(x);
                }
            }
        }
        topology::sample_links(
            &mut self.net.links,
            &self.sampled_links,
            self.scenario.series.link_columns,
            now,
            &mut self.link_series,
        );
        self.next_sample = now + self.scenario.sample_interval;
        if self.next_sample <= self.end {
            let t = self.next_sample;
            self.sampler_timer
                .arm(t, ComponentId::new(Kind::Sampler, 0), &mut self.net.sched);
        }
    }

    /// Make room for one sample's flow and subflow rows in the recorded columns: one
    /// allocation per column instead of repeated doubling (a chunk moved out by
    /// [`Simulation::take_series`] starts empty).
    fn reserve_rows(&mut self) {
        let series = &self.scenario.series;
        let (n, on) = (self.flow_rows, series.flow_columns);
        let s = &mut self.flow_series;
        if n > 0 {
            s.time_s.reserve(n);
            s.flow.reserve(n);
            for (k, col) in [
                &mut s.cwnd_bytes,
                &mut s.ssthresh_bytes,
                &mut s.srtt_s,
                &mut s.rate_bps,
            ]
            .into_iter()
            .enumerate()
            {
                if on.has(k) {
                    col.reserve(n);
                }
            }
        }
        let (n, on) = (self.subflow_rows, series.subflow_columns);
        let ss = &mut self.subflow_series;
        if n > 0 {
            ss.time_s.reserve(n);
            ss.flow.reserve(n);
            ss.subflow.reserve(n);
            for (k, col) in ss.value_columns().into_iter().enumerate() {
                if on.has(k) {
                    col.reserve(n);
                }
            }
        }
    }

    /// Check packet conservation, network-wide and per flow.
    pub fn check_conservation(&self) -> Result<(), String> {
        self.net.check_conservation()?;
        let mut in_links = vec![0u64; self.flows.len()];
        for l in &self.net.links {
            for (_, tag) in l.packets() {
                let r = self.net.route_of(tag);
                if r.kind != PacketKind::Ack {
                    in_links[r.flow as usize] += 1;
                }
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            let (sent, received) = match f {
                Flow::Tcp { snd, rcv } => (snd.segments_sent(), rcv.stats.segments),
                Flow::Cbr { snd, sink } => (snd.sent, sink.received),
                Flow::Quic { conn } => (conn.snd.segments_sent(), conn.rcv.stats.segments),
            };
            let drops = self.net.flow_drops[i];
            if sent != received + drops + in_links[i] {
                return Err(format!(
                    "flow {}: sent {sent} != received {received} + dropped {drops} + in links {}",
                    self.scenario.flows[i].name, in_links[i]
                ));
            }
        }
        Ok(())
    }

    /// The scenario being run.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Gather the results at the current time.
    pub fn results(&mut self) -> Results {
        let series = SeriesChunk {
            flows: self.flow_series.clone(),
            subflows: self.subflow_series.clone(),
            links: self.link_series.clone(),
        };
        self.build_results(series)
    }

    /// As [`Simulation::results`], moving the time series out instead of copying them, so
    /// the end of a long run does not briefly need twice their memory.
    pub fn into_results(mut self) -> Results {
        let series = SeriesChunk {
            flows: std::mem::take(&mut self.flow_series),
            subflows: std::mem::take(&mut self.subflow_series),
            links: std::mem::take(&mut self.link_series),
        };
        self.build_results(series)
    }

    /// Move out the time series sampled since the start or the previous call; later
    /// results hold only rows sampled after it. A driver that writes each chunk out as the
    /// run goes keeps the simulator's memory flat however long the simulated time.
    pub fn take_series(&mut self) -> SeriesChunk {
        // The next chunk is usually as long as this one: each column keeps room for it.
        SeriesChunk {
            flows: self.flow_series.take_rows(),
            subflows: self.subflow_series.take_rows(),
            links: self.link_series.take_rows(),
        }
    }

    fn build_results(&mut self, series: SeriesChunk) -> Results {
        let now = self.net.now;
        let mut ft = FlowTable::default();
        let mut st = SubflowTable::default();
        // Each subflow has a data route and an ACK route, flow after flow (see `new`).
        let mut route_base = 0usize;
        for (i, (spec, f)) in self
            .scenario
            .flows
            .iter()
            .zip(self.flows.iter_mut())
            .enumerate()
        {
            let start = spec.start.as_secs_f64();
            let mut end = spec.stop.map_or(now, |s| s.min(now)).as_secs_f64();
            let first_route = route_base;
            route_base += 2 * spec.subflows.len();
            let algorithm = match &spec.kind {
                FlowKind::Tcp { control, .. } => control.name.as_str(),
                FlowKind::Cbr { .. } => "cbr",
            };
            let completion = match f {
                Flow::Tcp { snd, .. } => {
                    snd.integrate(now);
                    snd.stats.completed_at
                }
                Flow::Quic { conn } => {
                    conn.snd.integrate(now);
                    conn.snd.stats.completed_at
                }
                Flow::Cbr { .. } => None,
            };
            if let Some(c) = completion {
                end = c.as_secs_f64();
            }
            let window = (end - start).max(1e-9);
            // Sums over subflows; a CBR flow has none and reports zeros.
            let (mut retx, mut timeouts, mut losses) = (0, 0, 0);
            let (mut cwnd_int, mut srtt_int, mut srtt_time, mut active) = (0.0, 0.0, 0.0, 0.0f64);
            let path_stats: Vec<SubflowStats> = match f {
                Flow::Tcp { snd, .. } => snd.path_stats().map(|(_, _, s)| *s).collect(),
                Flow::Quic { conn } => conn.snd.path_stats().map(|(_, _, s)| *s).collect(),
                Flow::Cbr { .. } => Vec::new(),
            };
            {
                for (k, s) in path_stats.into_iter().enumerate() {
                    retx += s.retransmits;
                    timeouts += s.timeouts;
                    losses += s.loss_events;
                    cwnd_int += s.cwnd_integral;
                    srtt_int += s.srtt_integral;
                    srtt_time += s.srtt_time;
                    active = active.max(s.active_time);
                    st.flow.push(i as u32);
                    st.subflow.push(k as u32);
                    st.path
                        .push(topology::path_label(&self.scenario, &spec.subflows[k]));
                    st.acked_bytes.push(s.bytes_acked);
                    st.throughput_bps.push(s.bytes_acked as f64 * 8.0 / window);
                    st.packets_sent.push(s.segments_sent);
                    st.retransmits.push(s.retransmits);
                    st.drops.push(self.net.route_drops[first_route + 2 * k]);
                    st.timeouts.push(s.timeouts);
                    st.loss_events.push(s.loss_events);
                    st.loss_event_rate
                        .push(ratio(s.loss_events, s.segments_sent));
                    st.mean_cwnd_bytes.push(if s.active_time > 0.0 {
                        s.cwnd_integral / s.active_time
                    } else {
                        f64::NAN
                    });
                    st.mean_srtt_s.push(if s.srtt_time > 0.0 {
                        s.srtt_integral / s.srtt_time
                    } else {
                        f64::NAN
                    });
                }
            }
            let (delivered, received, sent) = match f {
                Flow::Tcp { snd, rcv } => {
                    (rcv.stats.delivered, rcv.stats.bytes, snd.segments_sent())
                }
                Flow::Cbr { snd, sink } => (sink.bytes, sink.bytes, snd.sent),
                Flow::Quic { conn } => (
                    conn.rcv.stats.delivered,
                    conn.rcv.stats.bytes,
                    conn.snd.segments_sent(),
                ),
            };
            ft.name.push(spec.name.clone());
            ft.group.push(spec.group.clone());
            ft.algorithm.push(algorithm.to_string());
            ft.start_s.push(start);
            ft.end_s.push(end);
            ft.delivered_bytes.push(delivered);
            ft.goodput_bps.push(delivered as f64 * 8.0 / window);
            ft.throughput_bps.push(received as f64 * 8.0 / window);
            ft.packets_sent.push(sent);
            ft.retransmits.push(retx);
            ft.timeouts.push(timeouts);
            ft.loss_events.push(losses);
            ft.loss_event_rate.push(ratio(losses, sent));
            ft.drops.push(self.net.flow_drops[i]);
            ft.mean_cwnd_bytes.push(if active > 0.0 {
                cwnd_int / active
            } else {
                f64::NAN
            });
            ft.mean_srtt_s.push(if srtt_time > 0.0 {
                srtt_int / srtt_time
            } else {
                f64::NAN
            });
            ft.completion_s
                .push(completion.map_or(f64::NAN, |c| c.as_secs_f64() - start));
        }
        let lt = topology::link_table(&self.scenario, &self.net.links, now.as_secs_f64());
        let fairness = topology::fairness(&ft);
        let c = self.net.counters;
        Results {
            scenario: self.scenario.name.clone(),
            seed: self.seed,
            flows: ft,
            subflows: st,
            links: lt,
            flow_series: series.flows,
            subflow_series: series.subflows,
            link_series: series.links,
            fairness,
            stats: RunStats {
                simulated_s: now.as_secs_f64(),
                events: self.net.sched.events_processed(),
                packets_created: c.created,
                packets_delivered: c.delivered,
                packets_dropped: c.dropped_queue,
                packets_lost_on_wire: c.dropped_wire,
                packets_in_flight: self.net.in_links(),
                peak_packets: self.net.peak_packets(),
            },
        }
    }
}

/// Where a sample's subflow rows go.
struct SampleRows<'a> {
    series: &'a mut SubflowSeries,
    columns: crate::scenario::Columns,
    /// Whether this flow's subflow rows are recorded.
    record: bool,
    flow: u32,
    t: f64,
    dt: f64,
}

/// Sample a sender's paths: their rows (if recorded) and the flow's summed cwnd and
/// ssthresh and smallest srtt over its open paths. `last_acked` holds the paths' acknowledged
/// bytes at the previous sample.
fn sample_paths<S: PathSender>(
    snd: &mut S,
    now: Instant,
    last_acked: &mut [u64],
    rows: SampleRows<'_>,
) -> (f64, f64, f64) {
    snd.integrate(now);
    let cc = snd.controller();
    let (mut cwnd, mut ssthresh, mut srtt) = (0.0, 0.0, f64::INFINITY);
    for (k, (active, r, stats)) in snd.path_stats().enumerate() {
        if !active {
            continue;
        }
        let m = cc.metrics(PathId(k as u32));
        cwnd += m.cwnd.0 as f64;
        ssthresh += m.ssthresh.map_or(f64::NAN, |b| b.0 as f64);
        srtt = srtt.min(r);
        let acked = stats.bytes_acked;
        let sub_rate = (acked - last_acked[k]) as f64 * 8.0 / rows.dt;
        last_acked[k] = acked;
        if !rows.record {
            continue;
        }
        let ss = &mut *rows.series;
        ss.time_s.push(rows.t);
        ss.flow.push(rows.flow);
        ss.subflow.push(k as u32);
        let values = [
            m.cwnd.0 as f64,
            m.ssthresh.map_or(f64::NAN, |b| b.0 as f64),
            r,
            sub_rate,
            m.alpha.unwrap_or(f64::NAN),
            m.epsilon.unwrap_or(f64::NAN),
            m.weight.unwrap_or(f64::NAN),
            m.score.unwrap_or(f64::NAN),
            m.backlog.unwrap_or(f64::NAN),
            m.bandwidth_bps.unwrap_or(f64::NAN),
        ];
        for (k, (col, x)) in ss.value_columns().into_iter().zip(values).enumerate() {
            if rows.columns.has(k) {
                col.push(x);
            }
        }
    }
    if !srtt.is_finite() {
        srtt = f64::NAN;
    }
    (cwnd, ssthresh, srtt)
}

fn ratio(events: u64, packets: u64) -> f64 {
    if packets > 0 {
        events as f64 / packets as f64
    } else {
        0.0
    }
}

/// Unused traffic variants are still matched here so adding one is a compile error elsewhere.
#[allow(dead_code)]
fn _traffic_is_exhaustive(t: Traffic) -> bool {
    matches!(
        t,
        Traffic::Bulk | Traffic::Transfer(_) | Traffic::OnOff { .. }
    )
}

/// Each subflow's routes, first data and leave, for a sender (TCP or QUIC) to build from.
fn subflow_plans(
    subflows: &[crate::scenario::SubflowSpec],
    pairs: &[(u32, u32)],
    joins: Vec<Instant>,
) -> Vec<SubflowPlan> {
    subflows
        .iter()
        .zip(pairs)
        .zip(joins)
        .map(|((sf, &(route, ack_route)), join)| SubflowPlan {
            route,
            ack_route,
            join,
            leave: sf.stop,
            first_rtt: None,
        })
        .collect()
}

#[cfg(test)]
mod layout {
    use super::Flow;
    use std::mem::{align_of, size_of};

    /// A flow entry is three aligned cache lines: the tag, the sender's pointer and the
    /// receiver (whose fields `tcp::receiver` places from byte 16).
    #[test]
    fn flow_entries_are_three_aligned_lines() {
        assert_eq!(align_of::<Flow>(), 64);
        assert_eq!(size_of::<Flow>(), 192);
    }
}

#[cfg(test)]
mod prefetching {
    use super::Simulation;
    use crate::Scenario;

    /// The prefetching event loop and sampler give the same results as the plain ones. They
    /// only run from `PREFETCH_MIN_FLOWS` flows on, so here they are switched on by hand.
    #[test]
    fn prefetching_changes_no_result() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        for file in [
            "scenarios/dumbbell.toml",
            "scenarios/lia-two-links/s1.toml",
            "bench/scenarios/dumbbell-droptail.toml",
            "scenarios/bmc-bundles/bmc-n16.toml",
        ] {
            let path = format!("{root}/{file}");
            let sc = Scenario::load(std::path::Path::new(&path))
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            let run = |prefetch: bool| {
                let mut sim = Simulation::new(&sc, Some(7));
                sim.prefetch = prefetch;
                sim.run();
                // Debug text: every f64 in its shortest round-trip form, NaNs included.
                format!("{} {:?}", sim.events(), sim.results())
            };
            assert!(
                run(false) == run(true),
                "{file}: prefetching changed the results"
            );
        }
    }
}
