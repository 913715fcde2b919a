//! One flow's two ends, whatever transport carries them: what their namespaces need before
//! they start, the receiving and sending applications on their threads, the real-time samples
//! of their congestion state, and what they report when the run ends.
//!
//! Every phase of a run ([`crate::run`]) sees one [`Endpoint`] per flow and nothing of its
//! transport. What differs by transport is the endpoint's [`Kind`]; each kind implements
//! [`Transport`], and so does [`Kind`], by a `match` with one arm per kind in each method:
//!
//! * [`kernel`]: kernel TCP or MPTCP sockets with bulk, sized or on/off traffic, sampled from
//!   `TCP_INFO` and `MPTCP_TCPINFO`;
//! * [`cbr`]: a UDP constant-rate source and its sink, without congestion state;
//! * [`quic`]: pathweave-quic's multipath QUIC receiver and sender, coupled over the paths;
//! * [`external`]: none at all: the run builds the flow's namespaces and links, and whoever
//!   asked for it runs their own applications there.
//!
//! A new kind is a module under `endpoint/` with a type that implements [`Transport`], a
//! variant of [`Kind`] with its arm in each method of `impl Transport for Kind` (the compiler
//! lists them), and the case of [`Endpoint::new`] that picks it for a flow. The phases do not
//! change.
//!
//! What every kind shares: [`Ends`] (the flow's namespaces, devices, addresses, start, stop
//! and seed) and [`FlowState`] (what its applications' threads write and the run reads).
//! Sampling is the same for every kind: [`Endpoint::sample`] turns the kind's
//! [`SubflowReading`]s into the flow and subflow series and keeps the running means that the
//! tables report. Invariant: subflow readings are indexed by scenario subflow, `0..n`.

mod cbr;
mod external;
mod kernel;
mod quic;

pub(crate) use cbr::UDP_OVERHEAD;
pub(crate) use quic::wire_size as quic_wire_size;

use crate::controllers::Controllers;
use crate::lab::{Lab, Netns};
use crate::{is_multipath, sys, Clock, EmuError, Options, TransferCheck};
use pathweave_sim::results::{FlowSeries, SubflowSeries};
use pathweave_sim::scenario::{FlowKind, FlowSpec, Transport as FlowTransport};
use pathweave_sim::tcp::Traffic;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How often a blocked application thread looks at the stop flag.
const TICK_NS: u64 = 20_000_000;

/// Where one flow's two ends live, the same for every kind.
#[derive(Clone, Debug)]
pub(crate) struct Ends {
    /// The flow's index in the scenario.
    pub index: usize,
    pub name: String,
    /// The namespaces of the two ends (clones hold them while the threads run).
    pub sender_ns: Netns,
    pub receiver_ns: Netns,
    /// TUN device names, one per subflow (the same name at both ends).
    pub devices: Vec<String>,
    /// The sender's address of each subflow (subflow 0's is where a connection starts).
    pub client: Vec<[u8; 4]>,
    /// The receiver's address.
    pub server: [u8; 4],
    /// When the sender starts and stops (ns since the run's epoch).
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    /// The key of the flow's byte stream and random periods.
    pub seed: u64,
}

/// What the applications of one flow share with the run, whatever their kind.
#[derive(Default)]
pub(crate) struct FlowState {
    /// Bytes delivered to the receiving application (a CBR sink counts datagrams' wire size).
    pub delivered: AtomicU64,
    /// Bytes the sending application handed to its socket.
    pub sent: AtomicU64,
    /// When the receiver had the whole transfer (ns since the epoch), `u64::MAX` until then.
    pub completed_ns: AtomicU64,
    /// The sending thread's id: its `/proc` entries show the sender namespace's counters.
    pub sender_tid: AtomicI32,
    /// Bytes received that differ from what was sent.
    pub mismatches: AtomicU64,
    /// FNV-1a of the bytes sent and received (sized transfers).
    pub sent_hash: AtomicU64,
    pub received_hash: AtomicU64,
    /// Whether the receiver saw the end of the stream.
    pub eof: AtomicBool,
    /// The first failure of either end.
    pub error: Mutex<Option<String>>,
}

impl FlowState {
    fn new() -> FlowState {
        FlowState {
            completed_ns: AtomicU64::new(u64::MAX),
            ..FlowState::default()
        }
    }

    pub(crate) fn fail(&self, what: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(what);
        }
    }
}

/// What an endpoint needs of its two namespaces before it starts, beyond what every flow gets
/// (its devices, addresses and routes, one per subflow).
pub(crate) struct NamespaceNeeds {
    /// Written in both namespaces (`net.ipv4.tcp_sack`, …).
    pub sysctls: Vec<(&'static str, String)>,
    /// Every device's MTU (bytes): the largest packet the endpoint sends.
    pub mtu: u32,
    /// Appended to each of the sender's routes (` initcwnd 10 rto_min 200ms`).
    pub sender_route_options: String,
    /// Appended to each of the receiver's routes (` quickack 1`).
    pub receiver_route_options: String,
    /// `ip` commands run in each namespace after its addresses and routes (MPTCP limits and
    /// the path manager's endpoints).
    pub sender_commands: Vec<String>,
    pub receiver_commands: Vec<String>,
}

/// Subflow `k` joins (`join`) or leaves at `at` ns into the run, after the connection started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PathChange {
    pub at: u64,
    pub k: usize,
    pub join: bool,
}

/// The paths of multipath flow `f` after its first: those that open with the connection, and
/// the joins and leaves of the others (a subflow's `start` after the flow's, its `stop`), in
/// scenario order.
pub(crate) fn plan_paths(f: &FlowSpec) -> (Vec<usize>, Vec<PathChange>) {
    let mut initial = Vec::new();
    let mut changes = Vec::new();
    for (k, sf) in f.subflows.iter().enumerate().skip(1) {
        match sf.start {
            Some(t) if t > f.start => changes.push(PathChange {
                at: t.0,
                k,
                join: true,
            }),
            _ => initial.push(k),
        }
        if let Some(t) = sf.stop {
            changes.push(PathChange {
                at: t.0,
                k,
                join: false,
            });
        }
    }
    (initial, changes)
}

/// One subflow's congestion state and counters at one reading, whatever the transport.
/// Counters are cumulative since the connection started.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SubflowReading {
    pub cwnd_bytes: f64,
    /// NaN while the transport has none (the kernel's "infinite" ssthresh).
    pub ssthresh_bytes: f64,
    /// Smoothed RTT; NaN before the first measurement.
    pub srtt_s: f64,
    /// Bytes the receiver acknowledged on this subflow.
    pub acked_bytes: u64,
    /// Data packets sent, retransmissions included.
    pub packets_sent: u64,
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Loss events so far (a lower bound where the transport does not count them itself).
    pub loss_events: u64,
    /// The controller's own state (α, ε, weights, …) where the transport can read it.
    pub metrics: Option<pathweave_cc::Metrics>,
}

/// A flow's counters at the end of the run, summed over its subflows as its transport counts
/// them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct FlowCounters {
    pub packets_sent: u64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub loss_events: u64,
}

/// What each kind of endpoint does. The run never calls these directly: [`Endpoint`]
/// dispatches to its [`Kind`].
pub(crate) trait Transport {
    /// What the flow's namespaces need before either end starts.
    fn needs(&self, ends: &Ends) -> NamespaceNeeds;
    /// Subflows that join or leave after the flow's start, in scenario order (none unless
    /// the kind has path changes).
    fn path_changes(&self) -> Vec<PathChange> {
        Vec::new()
    }
    /// Inside the receiver's namespace, during setup, before any sender starts: open what
    /// the receiver listens on (nothing for a kind without a receiving application).
    fn listen(&self, ends: &Ends) -> Result<Option<OwnedFd>, String>;
    /// Start the receiving application on `listener` (see [`spawn_receiver`]).
    fn start_receiver(
        &self,
        ends: &Ends,
        listener: OwnedFd,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>>;
    /// Start the sending application (see [`spawn_sender`]), if the kind has one.
    fn start_sender(
        &self,
        ends: &Ends,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>>;
    /// Subflow `k` joins or leaves now (only kinds with path changes are asked).
    fn change_path(
        &self,
        _lab: &Lab,
        _ends: &Ends,
        _k: usize,
        _join: bool,
    ) -> Result<(), EmuError> {
        Ok(())
    }
    /// Whether the flow has congestion state per subflow (rows in the subflows table).
    fn has_subflows(&self) -> bool;
    /// The subflows' current state, by scenario subflow index; empty while there is none
    /// (before the connection, or for a transport without congestion state).
    fn read(&mut self, ends: &Ends, state: &FlowState) -> Vec<(usize, SubflowReading)>;
    /// Read the final counters, while both ends still run.
    fn finish(&mut self, state: &FlowState);
    /// The flow's counters at the end.
    fn counters(&self, state: &FlowState) -> FlowCounters;
}

/// The kinds of endpoint, dispatched statically: each method of [`Transport`] is a `match`
/// with one arm per kind.
// One per flow, at most MAX_FLOWS: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Kind {
    Kernel(kernel::Kernel),
    Cbr(cbr::Cbr),
    Quic(quic::Quic),
    External(external::External),
}

impl Transport for Kind {
    fn needs(&self, ends: &Ends) -> NamespaceNeeds {
        match self {
            Kind::Kernel(k) => k.needs(ends),
            Kind::Cbr(c) => c.needs(ends),
            Kind::Quic(q) => q.needs(ends),
            Kind::External(x) => x.needs(ends),
        }
    }

    fn path_changes(&self) -> Vec<PathChange> {
        match self {
            Kind::Kernel(k) => k.path_changes(),
            Kind::Cbr(c) => c.path_changes(),
            Kind::Quic(q) => q.path_changes(),
            Kind::External(x) => x.path_changes(),
        }
    }

    fn listen(&self, ends: &Ends) -> Result<Option<OwnedFd>, String> {
        match self {
            Kind::Kernel(k) => k.listen(ends),
            Kind::Cbr(c) => c.listen(ends),
            Kind::Quic(q) => q.listen(ends),
            Kind::External(x) => x.listen(ends),
        }
    }

    fn start_receiver(
        &self,
        ends: &Ends,
        listener: OwnedFd,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        match self {
            Kind::Kernel(k) => k.start_receiver(ends, listener, state, clock, stop),
            Kind::Cbr(c) => c.start_receiver(ends, listener, state, clock, stop),
            Kind::Quic(q) => q.start_receiver(ends, listener, state, clock, stop),
            Kind::External(x) => x.start_receiver(ends, listener, state, clock, stop),
        }
    }

    fn start_sender(
        &self,
        ends: &Ends,
        state: &Arc<FlowState>,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        match self {
            Kind::Kernel(k) => k.start_sender(ends, state, clock, stop),
            Kind::Cbr(c) => c.start_sender(ends, state, clock, stop),
            Kind::Quic(q) => q.start_sender(ends, state, clock, stop),
            Kind::External(x) => x.start_sender(ends, state, clock, stop),
        }
    }

    fn change_path(&self, lab: &Lab, ends: &Ends, k: usize, join: bool) -> Result<(), EmuError> {
        match self {
            Kind::Kernel(t) => t.change_path(lab, ends, k, join),
            Kind::Cbr(c) => c.change_path(lab, ends, k, join),
            Kind::Quic(q) => q.change_path(lab, ends, k, join),
            Kind::External(x) => x.change_path(lab, ends, k, join),
        }
    }

    fn has_subflows(&self) -> bool {
        match self {
            Kind::Kernel(k) => k.has_subflows(),
            Kind::Cbr(c) => c.has_subflows(),
            Kind::Quic(q) => q.has_subflows(),
            Kind::External(x) => x.has_subflows(),
        }
    }

    fn read(&mut self, ends: &Ends, state: &FlowState) -> Vec<(usize, SubflowReading)> {
        match self {
            Kind::Kernel(k) => k.read(ends, state),
            Kind::Cbr(c) => c.read(ends, state),
            Kind::Quic(q) => q.read(ends, state),
            Kind::External(x) => x.read(ends, state),
        }
    }

    fn finish(&mut self, state: &FlowState) {
        match self {
            Kind::Kernel(k) => k.finish(state),
            Kind::Cbr(c) => c.finish(state),
            Kind::Quic(q) => q.finish(state),
            Kind::External(x) => x.finish(state),
        }
    }

    fn counters(&self, state: &FlowState) -> FlowCounters {
        match self {
            Kind::Kernel(k) => k.counters(state),
            Kind::Cbr(c) => c.counters(state),
            Kind::Quic(q) => q.counters(state),
            Kind::External(x) => x.counters(state),
        }
    }
}

/// Running figures of one subflow, the same for every kind.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SubflowAcc {
    /// The last reading (all zero if there was none).
    pub last: SubflowReading,
    pub cwnd_sum: f64,
    pub srtt_sum: f64,
    pub srtt_n: u64,
    pub samples: u64,
}

/// One flow's two ends: its kind, what its threads share, and its running figures.
pub(crate) struct Endpoint {
    ends: Ends,
    state: Arc<FlowState>,
    kind: Kind,
    /// The scenario's algorithm (`cbr` for a constant-rate flow).
    algorithm: String,
    /// The kernel congestion control its sockets run ("" if none).
    congestion: String,
    /// Whether it sends a given number of bytes, checked at the receiver.
    sized: bool,
    /// What the receiver opened during setup, until it starts.
    listener: Option<OwnedFd>,
    subs: Vec<SubflowAcc>,
    /// BMC's weight D and last T_wr per subflow, from the run's proportion manager (NaN for
    /// other algorithms).
    weights: Vec<f64>,
    scores: Vec<f64>,
    last_delivered: u64,
    /// Time-averaged connection-wide window.
    cwnd_sum: f64,
    cwnd_n: u64,
}

impl Endpoint {
    /// The endpoint of flow `f` between `ends`: kernel TCP or MPTCP on the congestion
    /// control `controllers` gives its algorithm (or `opts.reno_congestion` for Reno), or a
    /// UDP constant-rate source.
    pub(crate) fn new(
        f: &FlowSpec,
        ends: Ends,
        controllers: &Controllers,
        opts: &Options,
    ) -> Result<Endpoint, EmuError> {
        let n = ends.client.len();
        let (kind, algorithm, congestion, sized) = match &f.kind {
            _ if opts.is_external(f) => (
                Kind::External(external::External),
                "external".to_string(),
                String::new(),
                false,
            ),
            FlowKind::Tcp {
                control,
                cfg,
                traffic,
            } if cfg.transport == FlowTransport::Quic => {
                let wire = quic::wire_size(cfg.mss, cfg.header);
                let (initial, changes) = plan_paths(f);
                let deferred = (1..n).filter(|k| !initial.contains(k)).collect();
                let paths = (deferred, changes);
                let q = quic::Quic::new(&control.name, &control.config, *traffic, n, paths, wire)
                    .map_err(|e| EmuError::Setup(format!("flow {}: QUIC: {e}", f.name)))?;
                let sized = matches!(traffic, Traffic::Transfer(_));
                (Kind::Quic(q), control.name.clone(), String::new(), sized)
            }
            FlowKind::Tcp {
                control,
                cfg,
                traffic,
            } => {
                let cc = controllers.congestion(&control.name);
                let cc = match &opts.reno_congestion {
                    Some(other) if cc == "reno" => other.clone(),
                    _ => cc,
                };
                let k = kernel::Kernel::new(f, cfg, *traffic, is_multipath(f), cc.clone());
                let sized = matches!(traffic, Traffic::Transfer(_));
                (Kind::Kernel(k), control.name.clone(), cc, sized)
            }
            FlowKind::Cbr { rate, size } => {
                let c = cbr::Cbr::new(*rate, *size);
                (Kind::Cbr(c), "cbr".to_string(), String::new(), false)
            }
        };
        Ok(Endpoint {
            ends,
            state: Arc::new(FlowState::new()),
            kind,
            algorithm,
            congestion,
            sized,
            listener: None,
            subs: vec![SubflowAcc::default(); n],
            weights: vec![f64::NAN; n],
            scores: vec![f64::NAN; n],
            last_delivered: 0,
            cwnd_sum: 0.0,
            cwnd_n: 0,
        })
    }

    pub(crate) fn ends(&self) -> &Ends {
        &self.ends
    }

    /// The scenario's algorithm, as the flows table names it.
    pub(crate) fn algorithm(&self) -> &str {
        &self.algorithm
    }

    /// The kernel congestion control the flow runs ("" if none).
    pub(crate) fn congestion(&self) -> &str {
        &self.congestion
    }

    /// What the flow's namespaces need before either end starts.
    pub(crate) fn needs(&self) -> NamespaceNeeds {
        self.kind.needs(&self.ends)
    }

    /// Subflows that join or leave after the flow's start.
    pub(crate) fn path_changes(&self) -> Vec<PathChange> {
        self.kind.path_changes()
    }

    /// Inside the receiver's namespace (on a setup thread), before any sender starts: open
    /// what the receiver listens on, kept until [`Endpoint::start_receiver`].
    pub(crate) fn listen(&mut self) -> Result<(), String> {
        self.listener = self.kind.listen(&self.ends)?;
        Ok(())
    }

    /// Start the receiving application, if the endpoint listens (see [`Endpoint::listen`]).
    pub(crate) fn start_receiver(
        &mut self,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        let listener = self.listener.take()?;
        self.kind
            .start_receiver(&self.ends, listener, &self.state, clock, stop)
    }

    /// Start the sending application, if the endpoint has one.
    pub(crate) fn start_sender(
        &self,
        clock: Clock,
        stop: &Arc<AtomicBool>,
    ) -> Option<JoinHandle<()>> {
        self.kind.start_sender(&self.ends, &self.state, clock, stop)
    }

    /// Subflow `k` joins or leaves now.
    pub(crate) fn change_path(&self, lab: &Lab, k: usize, join: bool) -> Result<(), EmuError> {
        self.kind.change_path(lab, &self.ends, k, join)
    }

    /// Whether the flow's applications run outside the emulator.
    pub(crate) fn is_external(&self) -> bool {
        matches!(self.kind, Kind::External(_))
    }

    /// The first failure of either end, if any.
    pub(crate) fn error(&self) -> Option<String> {
        self.state.error.lock().ok().and_then(|e| e.clone())
    }

    /// Take one sample at `t` seconds over an interval of `dt` seconds into the flow series
    /// `fs` and the subflow series `ss`. `weights` are BMC's current weights and scores, per
    /// subflow, for a flow the run's proportion manager runs.
    pub(crate) fn sample(
        &mut self,
        t: f64,
        dt: f64,
        weights: Option<(&[f64], &[f64])>,
        fs: &mut FlowSeries,
        ss: &mut SubflowSeries,
    ) {
        if self.is_external() {
            // Nothing to read: its applications are not the emulator's.
            return;
        }
        if let Some((w, sc)) = weights {
            self.weights.copy_from_slice(w);
            self.scores.copy_from_slice(sc);
        }
        let flow = self.ends.index as u32;
        let delivered = self.state.delivered.load(Ordering::Relaxed);
        let rate = delivered.saturating_sub(self.last_delivered) as f64 * 8.0 / dt;
        self.last_delivered = delivered;
        let (mut cwnd, mut ssthresh, mut srtt) = (f64::NAN, f64::NAN, f64::NAN);
        let readings = self.kind.read(&self.ends, &self.state);
        if !readings.is_empty() {
            (cwnd, ssthresh, srtt) = (0.0, 0.0, f64::INFINITY);
        }
        for (k, r) in readings {
            let acc = &mut self.subs[k];
            let sub_rate = r.acked_bytes.saturating_sub(acc.last.acked_bytes) as f64 * 8.0 / dt;
            acc.last = r;
            acc.samples += 1;
            acc.cwnd_sum += r.cwnd_bytes;
            if !r.srtt_s.is_nan() {
                acc.srtt_sum += r.srtt_s;
                acc.srtt_n += 1;
            }
            cwnd += r.cwnd_bytes;
            ssthresh += r.ssthresh_bytes;
            srtt = srtt.min(r.srtt_s);
            ss.time_s.push(t);
            ss.flow.push(flow);
            ss.subflow.push(k as u32);
            ss.cwnd_bytes.push(r.cwnd_bytes);
            ss.ssthresh_bytes.push(r.ssthresh_bytes);
            ss.srtt_s.push(r.srtt_s);
            ss.rate_bps.push(sub_rate);
            // The run's proportion manager's weights and scores where it runs one (BMC on the
            // kernel), else the controller's own where the transport exposes it (QUIC).
            let m = r.metrics.unwrap_or_default();
            let or_nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
            let own =
                |mine: f64, theirs: Option<f64>| if mine.is_nan() { or_nan(theirs) } else { mine };
            ss.weight.push(own(self.weights[k], m.weight));
            ss.score.push(own(self.scores[k], m.score));
            ss.alpha.push(or_nan(m.alpha));
            ss.epsilon.push(or_nan(m.epsilon));
            ss.backlog_packets.push(or_nan(m.backlog));
            ss.bandwidth_estimate_bps.push(or_nan(m.bandwidth_bps));
        }
        if cwnd.is_finite() {
            self.cwnd_sum += cwnd;
            self.cwnd_n += 1;
        }
        if !srtt.is_finite() {
            srtt = f64::NAN;
        }
        fs.time_s.push(t);
        fs.flow.push(flow);
        fs.cwnd_bytes.push(cwnd);
        fs.ssthresh_bytes.push(ssthresh);
        fs.srtt_s.push(srtt);
        fs.rate_bps.push(rate);
    }

    /// Read the final counters, while both ends still run (before they are told to stop).
    pub(crate) fn finish(&mut self) {
        self.kind.finish(&self.state);
    }

    /// Bytes delivered to the receiving application.
    pub(crate) fn delivered(&self) -> u64 {
        self.state.delivered.load(Ordering::Relaxed)
    }

    /// When the receiver had the whole transfer (ns since the epoch), if it did.
    pub(crate) fn completed_ns(&self) -> Option<u64> {
        let c = self.state.completed_ns.load(Ordering::Relaxed);
        (c != u64::MAX).then_some(c)
    }

    /// The flow's counters at the end, as its transport counts them.
    pub(crate) fn counters(&self) -> FlowCounters {
        self.kind.counters(&self.state)
    }

    /// Each subflow's running figures, if the flow has congestion state per subflow.
    pub(crate) fn subflows(&self) -> Option<&[SubflowAcc]> {
        self.kind.has_subflows().then_some(self.subs.as_slice())
    }

    /// The connection-wide window, averaged over the samples that had one (NaN if none).
    pub(crate) fn mean_cwnd_bytes(&self) -> f64 {
        mean(self.cwnd_sum, self.cwnd_n)
    }

    /// The smoothed RTT, averaged over every subflow's samples that had one (NaN if none).
    pub(crate) fn mean_srtt_s(&self) -> f64 {
        let (sum, n) = self
            .subs
            .iter()
            .fold((0.0, 0u64), |(s, n), a| (s + a.srtt_sum, n + a.srtt_n));
        mean(sum, n)
    }

    /// The receiver's check of a sized transfer, once both ends have ended.
    pub(crate) fn transfer_check(&self) -> Option<TransferCheck> {
        let s = &self.state;
        self.sized.then(|| TransferCheck {
            flow: self.ends.index,
            sent_bytes: s.sent.load(Ordering::Relaxed),
            received_bytes: s.delivered.load(Ordering::Relaxed),
            sent_hash: s.sent_hash.load(Ordering::Relaxed),
            received_hash: s.received_hash.load(Ordering::Relaxed),
            mismatched_bytes: s.mismatches.load(Ordering::Relaxed),
            complete: s.eof.load(Ordering::Relaxed),
        })
    }
}

/// `sum / n`, NaN for no samples.
pub(crate) fn mean(sum: f64, n: u64) -> f64 {
    if n > 0 {
        sum / n as f64
    } else {
        f64::NAN
    }
}

pub(crate) fn io_err(what: &str, e: std::io::Error) -> String {
    format!("{what}: {e}")
}

/// Sleep until `t` ns after the epoch; false if `stop` was set first.
fn sleep_until(clock: &Clock, t: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock.now_ns();
        if now >= t {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_nanos((t - now).min(TICK_NS)));
    }
}

/// A receiving application on a thread of its own: `body` runs until `stop`, and its error
/// fails the flow. The thread stays in the caller's namespace: the listener was made in the
/// receiver's, and what it accepts stays there.
fn spawn_receiver<F>(
    ends: &Ends,
    state: &Arc<FlowState>,
    clock: Clock,
    stop: &Arc<AtomicBool>,
    body: F,
) -> Option<JoinHandle<()>>
where
    F: FnOnce(&Ends, &FlowState, &Clock, &AtomicBool) -> Result<(), String> + Send + 'static,
{
    let (ends, state, stop) = (ends.clone(), state.clone(), stop.clone());
    Some(std::thread::spawn(move || {
        if let Err(e) = body(&ends, &state, &clock, &stop) {
            state.fail(format!("flow {}: receiver: {e}", ends.name));
        }
    }))
}

/// A sending application on a thread of its own: the thread moves into the sender's
/// namespace, records its id, waits for the flow's start and runs `body`, whose error fails
/// the flow; then it stays until `stop`, so that the namespace's counters stay readable.
fn spawn_sender<F>(
    ends: &Ends,
    state: &Arc<FlowState>,
    clock: Clock,
    stop: &Arc<AtomicBool>,
    body: F,
) -> Option<JoinHandle<()>>
where
    F: FnOnce(&Ends, &FlowState, &Clock, &AtomicBool) -> Result<(), String> + Send + 'static,
{
    let (ends, state, stop) = (ends.clone(), state.clone(), stop.clone());
    Some(std::thread::spawn(move || {
        let r = ends
            .sender_ns
            .enter()
            .map_err(|e| io_err("entering the sender's namespace", e))
            .and_then(|()| {
                state.sender_tid.store(sys::gettid(), Ordering::Relaxed);
                if !sleep_until(&clock, ends.start_ns, &stop) {
                    return Ok(());
                }
                body(&ends, &state, &clock, &stop)
            });
        if let Err(e) = r {
            state.fail(format!("flow {}: sender: {e}", ends.name));
        }
        // Keep the thread (and so the namespace's counters) reachable until the run ends.
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_nanos(TICK_NS));
        }
    }))
}

/// The sysctls every namespace gets (a constant-rate flow's too, SACK on).
fn namespace_sysctls(sack: bool) -> Vec<(&'static str, String)> {
    vec![
        ("net.ipv4.tcp_sack", (sack as u8).to_string()),
        // 20-byte TCP headers, as the scenario's header size assumes.
        ("net.ipv4.tcp_timestamps", "0".to_string()),
        ("net.ipv4.tcp_ecn", "0".to_string()),
        // Classic loss recovery, as the simulator models it: no RACK, no tail loss probe,
        // no F-RTO (Linux's PRR and limited transmit cannot be switched off).
        ("net.ipv4.tcp_recovery", "0".to_string()),
        ("net.ipv4.tcp_early_retrans", "0".to_string()),
        ("net.ipv4.tcp_frto", "0".to_string()),
        ("net.ipv4.tcp_no_metrics_save", "1".to_string()),
        // One segment per send, as the simulator sends: Linux's default builds frames of
        // at least two segments (`tcp_min_tso_segs = 2`) and may hold one back until the
        // window has room for both, which made the emulated dumbbell's arrivals burstier
        // (RED average 4.17 against 4.01 packets) and its total 1.2 % lower
        // (docs/emulation.md).
        ("net.ipv4.tcp_min_tso_segs", "1".to_string()),
        // The simulator's receive buffer is unlimited unless the scenario sets one (then
        // SO_RCVBUF, see the kernel kind's `listen`). A connection whose subflow stalls in a timeout
        // holds everything the other subflows deliver meanwhile: start both buffers at
        // 8 MB (Linux's defaults start at 128 and 16 kB and autotune up) so that the real
        // stack's buffers are not what limits it.
        ("net.ipv4.tcp_rmem", BIG_BUFFERS.to_string()),
        ("net.ipv4.conf.all.rp_filter", "0".to_string()),
        ("net.ipv4.conf.default.rp_filter", "0".to_string()),
    ]
}

/// `tcp_rmem` in every namespace: minimum, initial and largest buffer (bytes).
const BIG_BUFFERS: &str = "4096 8388608 33554432";

/// An address as `a.b.c.d`.
pub(crate) fn dotted(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}
