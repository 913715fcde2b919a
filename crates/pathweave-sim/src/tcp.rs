//! TCP connections, single-path or multipath. A connection has one or more subflows, each on
//! its own route with its own sequence space, scoreboard, RTT estimator, loss recovery and
//! retransmission timer; one [`MultipathController`] sets every subflow's window. A
//! single-path TCP flow is a connection with one subflow and an uncoupled controller.
//!
//! * [`subflow`] — one subflow's sender: slow start and congestion avoidance through the
//!   controller, fast retransmit, Reno (RFC 5681), NewReno (RFC 6582) or SACK (RFC 6675)
//!   recovery, RTO per RFC 6298 with backoff and Karn's rule.
//! * [`receiver`] — per-subflow cumulative ACKs with SACK blocks (RFC 2018) and delayed ACKs,
//!   and connection-level reassembly with an optional finite receive buffer.
//! * This module — the connection's sender: the data sequence, the scheduler that hands new
//!   data to subflows with window space, subflows joining and leaving, the application's
//!   traffic pattern.
//!
//! Sequence numbers count segments. Every segment carries `mss` payload bytes except the last
//! one of a sized transfer. A data segment carries its subflow sequence number and its
//! connection-level data sequence number (DSN); ACKs carry the subflow ACK, SACK blocks, the
//! cumulative data ACK and the receive window.

pub mod receiver;
pub mod subflow;

pub use receiver::{ReceiverStats, TcpReceiver};
pub use subflow::{Subflow, SubflowStats};

use crate::event::{ComponentId, Timer};
use crate::net::Net;
use crate::packet::{unfold, Packet, PacketKind};
use crate::rng::Stream;
use pathweave_cc::cc::multipath::{MultipathController, Paths};
use pathweave_cc::cc::{Ack, CongestionEvent, PathId, PathView, Rto};
use pathweave_cc::rtt::RtoConfig;
use pathweave_cc::{Bytes, Duration, Instant};
use std::collections::VecDeque;

/// The connection controller the simulator drives.
pub type Cc = pathweave_cc::cc::multipath::AnyMultipathController;

/// The connection's controller together with the window it left each path after its last
/// call. A window changes only when the controller is called, so the per-ACK readers (the
/// time integral and the sending loop) take it from here instead of asking the controller.
/// Any call may move any path's window (coupled controllers), so every path is refreshed.
#[repr(C)]
pub(crate) struct Control {
    /// Per path: the window in bytes and the same as a float, for the integral.
    windows: Vec<(u64, f64)>,
    pub(crate) cc: Cc,
}

impl Control {
    pub(crate) fn new(cc: Cc, paths: usize) -> Self {
        let mut c = Control {
            windows: vec![(0, 0.0); paths],
            cc,
        };
        c.refresh();
        c
    }

    fn refresh(&mut self) {
        for (i, w) in self.windows.iter_mut().enumerate() {
            let b = self.cc.window(PathId(i as u32)).0;
            *w = (b, b as f64);
        }
    }

    /// The window of path `p` in bytes.
    #[inline]
    pub(crate) fn window(&self, p: PathId) -> u64 {
        self.windows[p.0 as usize].0
    }

    /// The window of path `p` as a float.
    #[inline]
    pub(crate) fn window_f64(&self, p: usize) -> f64 {
        self.windows[p].1
    }

    pub(crate) fn on_path_added(&mut self, p: PathId, now: Instant, mss: Bytes) {
        self.cc.on_path_added(p, now, mss);
        self.refresh();
    }

    pub(crate) fn on_path_removed(&mut self, p: PathId) {
        self.cc.on_path_removed(p);
        self.refresh();
    }

    #[inline]
    pub(crate) fn on_ack(&mut self, p: PathId, ack: &Ack, paths: &Paths<'_>) {
        let w = self.cc.on_ack_window(p, ack, paths).0;
        // With one path the returned window is the only one that can have moved.
        match &mut self.windows[..] {
            [only] => *only = (w, w as f64),
            _ => self.refresh(),
        }
    }

    pub(crate) fn on_congestion_event(
        &mut self,
        p: PathId,
        ev: &CongestionEvent,
        paths: &Paths<'_>,
    ) {
        self.cc.on_congestion_event(p, ev, paths);
        self.refresh();
    }

    pub(crate) fn on_recovery_end(&mut self, p: PathId, now: Instant, paths: &Paths<'_>) {
        self.cc.on_recovery_end(p, now, paths);
        self.refresh();
    }

    pub(crate) fn on_rto(&mut self, p: PathId, rto: &Rto, paths: &Paths<'_>) {
        self.cc.on_rto(p, rto, paths);
        self.refresh();
    }
}

/// Loss-recovery algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Reno fast recovery (RFC 5681 §3.2): window inflation as in NewReno, but the first new
    /// ACK, partial or not, ends recovery. A second loss in the same window then waits for the
    /// retransmission timer, because a new fast retransmit needs an ACK beyond the highest
    /// segment sent when recovery began (ns-2 `Agent/TCP/Reno` with its default `bugfix_`).
    Reno,
    /// NewReno fast recovery with window inflation (RFC 6582).
    NewReno,
    /// Conservative SACK-based recovery with the pipe estimate (RFC 6675).
    Sack,
}

/// How new data is spread over subflows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerKind {
    /// The subflow with the lowest smoothed RTT that has window space gets new data first
    /// (the Linux MPTCP default); subflows without an RTT sample yet come last.
    MinRtt,
    /// Subflows with window space take one segment each in turn.
    RoundRobin,
    /// What Linux MPTCP does (`mptcp_subflow_get_send`, kernel 6.x): data is handed to a
    /// subflow ahead of its window, into the subflow's own send queue, in bursts of up to
    /// 64 kB, each to the subflow whose queue (sent and unsent) would drain soonest at its
    /// pacing rate, while that subflow's send buffer has room; the application may write only
    /// while the connection's data not yet acknowledged at the data level fits the sum of the
    /// subflows' send buffers, which grow with their windows and never shrink; and a
    /// connection-level timer resends the oldest unacknowledged data on an idle subflow
    /// (docs/simulator.md).
    Linux,
}

/// Per-flow TCP settings.
#[derive(Clone, Copy, Debug)]
pub struct TcpConfig {
    /// Payload bytes per full segment.
    pub mss: u32,
    /// Header bytes added to each data segment on the wire.
    pub header: u32,
    /// Size of an ACK on the wire.
    pub ack_size: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Retransmission-timer settings.
    pub rto: RtoConfig,
    /// Delayed-ACK timeout, `None` to acknowledge every segment.
    pub delayed_ack: Option<Duration>,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupthresh: u32,
    /// Limited transmit (RFC 3042): each of the first two duplicate ACKs outside recovery
    /// lets one new segment out beyond the window.
    pub limited_transmit: bool,
    /// Proportional rate reduction (RFC 6937) during SACK recovery: how much is sent on each
    /// ACK is the delivered data scaled to the reduction, not `cwnd − pipe`.
    pub prr: bool,
    /// With SACK recovery, what the receiver SACKed survives a retransmission timeout, as in
    /// Linux: the timeout marks only the segments not SACKed as lost, they are resent in order
    /// as the window allows, and SACKed segments count neither as sent again nor as in flight.
    /// Otherwise the timeout forgets the SACKs (RFC 2018 §8) and goes back N over all of them.
    pub keep_sack_on_rto: bool,
    /// Congestion-window validation as Linux does it (`tcp_cwnd_validate`,
    /// `tcp_is_cwnd_limited`): each transmission records whether the flight reached the
    /// window, and an ACK grows the window only if the window was in use during the current
    /// window of data (or, in slow start, is below twice the largest flight of it). Without,
    /// every ACK of new data grows it.
    pub cwnd_validation: bool,
    /// Connection-level receive buffer in segments, `None` for unlimited.
    pub receive_buffer: Option<u32>,
    /// Multipath scheduler.
    pub scheduler: SchedulerKind,
    /// Under [`SchedulerKind::Linux`], data is pushed to a subflow in whole page fragments of
    /// the application's writes ([`MPTCP_FRAG_BYTES`]), as Linux MPTCP does, and the subflow
    /// cuts a push into full segments and one shorter last segment (see [`LinuxSend`]).
    /// Without, every segment carries `mss` payload bytes (the last of a sized transfer
    /// excepted).
    pub push_fragments: bool,
}

/// A period of an on/off source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Period {
    /// Mean length.
    pub mean: Duration,
    /// Exponentially distributed (otherwise fixed).
    pub exponential: bool,
}

/// What the application offers the sender.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Traffic {
    /// Always backlogged.
    Bulk,
    /// A transfer of this many bytes; the flow records its completion time.
    Transfer(u64),
    /// Backlogged during on periods, silent during off periods (starting with on).
    OnOff {
        /// On-period length.
        on: Period,
        /// Off-period length.
        off: Period,
    },
}

/// What the application does and when: the traffic pattern, the start, and when it stops
/// offering new data.
#[derive(Clone, Copy, Debug)]
pub struct Application {
    /// Traffic pattern.
    pub traffic: Traffic,
    /// When the connection starts.
    pub start: Instant,
    /// When it stops offering new data, if it does.
    pub stop: Option<Instant>,
}

/// Where a subflow runs and when.
#[derive(Clone, Copy, Debug)]
pub struct SubflowPlan {
    /// Route of its data packets.
    pub route: u32,
    /// Route of its ACKs.
    pub ack_route: u32,
    /// When it joins the connection (the connection's start at the earliest).
    pub join: Instant,
    /// When it leaves, if it does.
    pub leave: Option<Instant>,
    /// The round trip of its handshake (SYN to SYN-ACK), taken as its first RTT sample when
    /// it joins, as Linux's connecting side does (`tcp_clean_rtx_queue` acknowledging the
    /// SYN, for the first subflow and each MP_JOIN alike): its smoothed RTT, retransmission
    /// timer and pacing rate hold from its first data on. `None` without
    /// [`TcpConfig::handshakes`]: the first sample is the first data segment's.
    pub first_rtt: Option<Duration>,
}

/// The connection's data sequence as the subflows see it.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct DataSource {
    next: u64,
    /// The application has data up to (excluding) this DSN.
    limit: u64,
    /// The receiver accepts DSNs below this.
    window_edge: u64,
    data_una: u64,
    total: Option<u64>,
    mss: u32,
    last_payload: u32,
    /// DSNs of a subflow that left, to send again on the others.
    reinject: VecDeque<u64>,
}

impl DataSource {
    /// Payload of data segment `dsn`.
    pub(crate) fn payload(&self, dsn: u64) -> u32 {
        match self.total {
            Some(n) if dsn + 1 == n => self.last_payload,
            _ => self.mss,
        }
    }

    /// Payload bytes of data segments `from..to`: every one carries `mss` except the last of
    /// a sized transfer.
    #[inline]
    fn payload_between(&self, from: u64, to: u64) -> u64 {
        let full = (to - from) * self.mss as u64;
        match self.total {
            Some(n) if from < n && n <= to => full - self.mss as u64 + self.last_payload as u64,
            _ => full,
        }
    }

    /// The next DSN for a subflow with window space, if any may be sent.
    #[inline(never)]
    pub(crate) fn take(&mut self) -> Option<u64> {
        if let Some(d) = self.take_reinject() {
            return Some(d);
        }
        let end = self
            .limit
            .min(self.window_edge)
            .min(self.total.unwrap_or(u64::MAX));
        (self.next < end).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    /// The next DSN to send again, if any (never new data).
    fn take_reinject(&mut self) -> Option<u64> {
        while let Some(d) = self.reinject.pop_front() {
            if d >= self.data_una {
                return Some(d);
            }
        }
        None
    }

    fn has_data(&self) -> bool {
        !self.reinject.is_empty()
            || self.next
                < self
                    .limit
                    .min(self.window_edge)
                    .min(self.total.unwrap_or(u64::MAX))
    }
}

/// Where a subflow's new data comes from: the connection's data sequence (the simulator's
/// own schedulers pull from it) or, under [`SchedulerKind::Linux`], the subflow's send queue.
pub(crate) trait Source {
    /// The next DSN this subflow may send, if any.
    fn take(&mut self) -> Option<u64>;
    /// Payload of data segment `dsn`.
    fn payload(&self, dsn: u64) -> u32;
    /// Whether data waits to be sent (what [`Self::take`] would give, were the window open).
    fn pending(&self) -> bool;
}

impl Source for DataSource {
    #[inline(always)]
    fn take(&mut self) -> Option<u64> {
        DataSource::take(self)
    }

    #[inline(always)]
    fn payload(&self, dsn: u64) -> u32 {
        DataSource::payload(self, dsn)
    }

    fn pending(&self) -> bool {
        self.has_data()
    }
}

/// A subflow's send queue under [`SchedulerKind::Linux`]: DSNs handed to it and not sent yet.
struct Assigned<'a> {
    queue: &'a mut VecDeque<u64>,
    data: &'a DataSource,
    /// The segments' lengths under [`TcpConfig::push_fragments`].
    bytes: Option<&'a ByteMap>,
}

impl Source for Assigned<'_> {
    fn take(&mut self) -> Option<u64> {
        self.queue.pop_front()
    }

    fn payload(&self, dsn: u64) -> u32 {
        match self.bytes {
            Some(m) => m.payload(dsn, self.data.mss),
            None => self.data.payload(dsn),
        }
    }

    fn pending(&self) -> bool {
        !self.queue.is_empty()
    }
}

/// Linux MPTCP's sending side (net/mptcp/protocol.c, kernel 6.x), for
/// [`SchedulerKind::Linux`]. Sizes are in payload bytes; the kernel counts the memory each
/// buffer takes (`sk_wmem_queued`, measured 4-5 % above the payload it holds on the emulated
/// paths), which is left out here.
///
/// * Send buffers (`tcp_sndbuf_expand`): a subflow's is `2 · per_mss · max(10, cwnd)` for the
///   largest window it has had, at most `tcp_wmem[2]` (4 MB), where `per_mss` is the memory of
///   one full-sized segment's buffer: the MSS plus `MAX_TCP_HEADER` (320) and the shared info
///   (320) rounded up to a power of two, plus the buffer head (256) — 2,304 bytes for the
///   1,000-byte MSS of a 1,040-byte MTU, which is what `ss -tm` reports as `tb` (69,120 to
///   746,496 bytes, every one a multiple of 4,608) on the emulated kernel. Linux grows a
///   buffer only at moments the subflow is not window-limited (`tcp_should_expand_sndbuf`),
///   so a subflow that joins beside a busy one keeps a smaller buffer than its largest window
///   asks for; docs/kernel.md measures what that changes. The connection's is `tcp_wmem[0]`
///   (4 kB) plus the sum of its subflows' (`__mptcp_sync_sndbuf`).
/// * The application writes while the data not yet acknowledged at the data level is below
///   the connection's send buffer (`sk_stream_memory_free` of the MPTCP socket).
/// * Pushing (`__mptcp_push_pending`, `mptcp_subflow_get_send`): among the subflows that may
///   send, the one with the smallest linger time, its queued bytes (sent and unsent) over its
///   smoothed pacing rate, gets a burst of `min(65,428 B, receive window left)` as long as its
///   queue is below its send buffer (checked per segment here, per data fragment of up to
///   32 kB in the kernel); the smoothed rate then moves toward the current pacing rate
///   weighted by the burst against the queue. The pacing rate (`tcp_update_pacing_rate`) is
///   `mss · max(cwnd, packets out) / srtt` times 2 below half of ssthresh and 1.2 above.
/// * Resending at the data level (`mptcp_retransmit_timer`, `__mptcp_retrans`): when the data
///   ACK has not moved for an interval (see [`linux_rtx_interval`]), up to 32 kB (one page
///   fragment of the application's writes) from the oldest unacknowledged DSN are queued on a
///   subflow with nothing outstanding and nothing queued, if there is one.
/// * Stale subflows (`mptcp_pm_subflow_chk_stale`, `net.mptcp.stale_loss_cnt` = 4): a subflow
///   with data pending that has heard nothing for more than four such intervals, while another
///   subflow has missed fewer than three, is passed by until its next ACK, and all the data not
///   yet acknowledged at the data level goes through the scheduler again.
pub(crate) struct LinuxSend {
    queues: Vec<VecDeque<u64>>,
    /// Per subflow: its send buffer in bytes.
    sndbuf: Vec<u64>,
    /// Per subflow: the smoothed pacing rate in bytes per second, 0 before the first burst.
    avg_pace: Vec<f64>,
    /// Memory the kernel charges per full-sized segment of window.
    per_mss: u64,
    /// When the connection-level retransmission timer fires, if it runs.
    rtx_at: Option<Instant>,
    /// The data ACK when the timer was last looked at.
    last_una: u64,
    /// Per subflow: whether an ACK arrived since the timer last fired.
    heard: Vec<bool>,
    /// Per subflow: timer intervals in a row with data pending and no ACK.
    stale_count: Vec<u32>,
    /// Per subflow: passed by the scheduler until its next ACK.
    stale: Vec<bool>,
    /// The segments' lengths, under [`TcpConfig::push_fragments`].
    bytes: Option<ByteMap>,
}

/// Where each data segment starts in the connection's byte stream, under
/// [`TcpConfig::push_fragments`], where segments are not all `mss` long: the starts of the
/// DSNs from the data ACK on (older ones are dropped as the data ACK passes them).
pub(crate) struct ByteMap {
    /// The first DSN whose start is kept.
    base: u64,
    /// The start byte of each DSN from `base` to the last one made.
    starts: VecDeque<u64>,
    /// The end of the last DSN made: where the next one starts.
    end: u64,
    /// A sized transfer's length in bytes.
    total: Option<u64>,
    /// DSNs below this may not grow any more: they were handed to a subflow again (resent at
    /// the data level, or rescheduled), so a copy may be on its way with its present length
    /// (the kernel freezes a mapping it resends, `mptcp_ext.frozen`).
    frozen: u64,
}

impl ByteMap {
    fn new(total: Option<u64>) -> Self {
        ByteMap {
            base: 0,
            starts: VecDeque::new(),
            end: 0,
            total,
            frozen: 0,
        }
    }

    /// A DSN is handed out once more: no DSN made so far grows again.
    fn freeze(&mut self, next: u64) {
        self.frozen = self.frozen.max(next);
    }

    /// The start of DSN `d`, if kept (the end of the last DSN for the next one).
    fn start(&self, d: u64) -> Option<u64> {
        let k = usize::try_from(d.checked_sub(self.base)?).ok()?;
        match k.cmp(&self.starts.len()) {
            std::cmp::Ordering::Less => Some(self.starts[k]),
            std::cmp::Ordering::Equal => Some(self.end),
            std::cmp::Ordering::Greater => None,
        }
    }

    /// The payload of DSN `d`. A DSN below the data ACK, whose start is no longer kept, is
    /// taken as a full segment: only a subflow that still held it in its queue sends it.
    fn payload(&self, d: u64, mss: u32) -> u32 {
        match (self.start(d), self.start(d + 1)) {
            (Some(a), Some(b)) => (b - a) as u32,
            _ => mss,
        }
    }

    /// Payload bytes of DSNs `from..to`.
    fn between(&self, from: u64, to: u64, mss: u32) -> u64 {
        match (self.start(from), self.start(to)) {
            (Some(a), Some(b)) => b - a,
            _ => (to - from) * mss as u64,
        }
    }

    /// A new DSN `d` of `len` bytes at the end.
    fn push(&mut self, d: u64, len: u64) {
        debug_assert_eq!(d, self.base + self.starts.len() as u64);
        self.starts.push_back(self.end);
        self.end += len;
    }

    /// Forget the starts of the DSNs below `una`.
    fn trim(&mut self, una: u64) {
        while self.base < una && !self.starts.is_empty() {
            self.starts.pop_front();
            self.base += 1;
        }
    }
}

/// One data fragment of an application's writes: a 32,768-byte page fragment less the
/// fragment's own header (`struct mptcp_data_frag`, net/mptcp/protocol.h). The kernel's DSS
/// mappings on the emulated drop-tail paths end at multiples of it (docs/kernel.md).
pub(crate) const MPTCP_FRAG_BYTES: u64 = 32_728;

/// `MPTCP_SEND_BURST_SIZE`, net/mptcp/protocol.c.
const MPTCP_SEND_BURST_BYTES: u64 = 65_428;
/// `tcp_wmem` defaults (Documentation/networking/ip-sysctl.rst): minimum and maximum.
const TCP_WMEM_MIN: u64 = 4_096;
const TCP_WMEM_MAX: u64 = 4_194_304;
/// `TCP_INIT_CWND`, the least window a send buffer is sized for.
const TCP_INIT_CWND: u64 = 10;
/// One page fragment of an application's write: the most `__mptcp_retrans` resends at once.
const MPTCP_RETRANS_BYTES: u64 = 32_768;
/// The connection timer's interval when no subflow timer runs (`TCP_RTO_MIN`).
const TCP_RTO_MIN: Duration = Duration::from_millis(200);
/// `net.mptcp.stale_loss_cnt` default (Documentation/networking/mptcp-sysctl.rst).
const STALE_LOSS_CNT: u32 = 4;

impl LinuxSend {
    fn new(cfg: &TcpConfig, subflows: usize, transfer: Option<u64>) -> Self {
        // The kernel's MSS: the MTU less 40 bytes of IPv4 and TCP headers (no timestamps on
        // the emulated stacks).
        let mss = (cfg.mss + cfg.header).saturating_sub(40).max(cfg.mss) as u64;
        let per_mss = (mss + 320 + 320).next_power_of_two() + 256;
        LinuxSend {
            queues: (0..subflows).map(|_| VecDeque::new()).collect(),
            sndbuf: vec![2 * per_mss * TCP_INIT_CWND; subflows],
            avg_pace: vec![0.0; subflows],
            per_mss,
            rtx_at: None,
            last_una: 0,
            heard: vec![false; subflows],
            stale_count: vec![0; subflows],
            stale: vec![false; subflows],
            bytes: cfg.push_fragments.then(|| ByteMap::new(transfer)),
        }
    }
}

/// The connection-level retransmission interval (`mptcp_set_timeout`): the largest time left
/// on the retransmission timers of the subflows with data outstanding that have not missed an
/// interval (taken here as their whole timeout, which each ACK restarts), or `TCP_RTO_MIN`
/// when there is none.
fn linux_rtx_interval(subs: &[Subflow], stale_count: &[u32]) -> Duration {
    subs.iter()
        .zip(stale_count)
        .filter(|(s, &c)| s.is_active() && s.outstanding() > 0 && c == 0)
        .map(|(s, _)| s.rtt().rto())
        .max()
        .unwrap_or(TCP_RTO_MIN)
}

/// Linux's pacing rate of subflow `i` in bytes per second (`tcp_update_pacing_rate`); before
/// the first RTT sample the kernel does not divide by the RTT, which makes the rate huge, so
/// a fresh subflow is served first: here the RTT is taken as 1 µs then. On Linux the
/// handshake gives the sample before any data (`handshakes`, [`SubflowPlan::first_rtt`]); an
/// average seeded without one stays huge until the subflow is picked often enough.
fn linux_pacing_rate(s: &Subflow, i: usize, cc: &Control, mss: u64) -> f64 {
    let p = PathId(i as u32);
    let cwnd = cc.window(p) / mss;
    let ssthresh = cc.cc.ssthresh(p).map_or(u64::MAX, |b| b.0 / mss);
    let ratio = if cwnd < ssthresh / 2 { 2.0 } else { 1.2 };
    let srtt = s.srtt().map_or(1e-6, |d| d.as_secs_f64().max(1e-6));
    (mss * cwnd.max(s.outstanding())) as f64 * ratio / srtt
}

/// Hand data to the subflows' queues as Linux MPTCP does (see [`LinuxSend`]).
fn push_linux(st: &mut LinuxSend, subs: &[Subflow], cc: &Control, data: &mut DataSource) {
    let mss = data.mss as u64;
    let sndbuf_total: u64 = TCP_WMEM_MIN
        + subs
            .iter()
            .zip(&st.sndbuf)
            .filter(|(s, _)| s.is_active())
            .map(|(_, b)| b)
            .sum::<u64>();
    let queued =
        |st: &LinuxSend, i: usize| (subs[i].outstanding() + st.queues[i].len() as u64) * mss;
    // The application writes only while the connection's send buffer has room; data to send
    // again was written already.
    let buffer_full = |data: &DataSource| {
        data.reinject.is_empty() && data.next.saturating_sub(data.data_una) * mss >= sndbuf_total
    };
    loop {
        if buffer_full(data) || !data.has_data() {
            return;
        }
        let mut best: Option<(usize, f64)> = None;
        for (i, s) in subs.iter().enumerate() {
            if !s.is_active() || st.stale[i] {
                continue;
            }
            if st.avg_pace[i] == 0.0 {
                st.avg_pace[i] = linux_pacing_rate(s, i, cc, mss);
            }
            let linger = queued(st, i) as f64 / st.avg_pace[i];
            if best.is_none_or(|(_, l)| linger < l) {
                best = Some((i, linger));
            }
        }
        let Some((i, _)) = best else { return };
        let wmem = queued(st, i);
        if wmem >= st.sndbuf[i] {
            return;
        }
        let room = data
            .window_edge
            .saturating_sub(data.next)
            .saturating_mul(mss);
        let burst = MPTCP_SEND_BURST_BYTES.min(room);
        if burst == 0 {
            return;
        }
        let pace = linux_pacing_rate(&subs[i], i, cc, mss);
        st.avg_pace[i] =
            (st.avg_pace[i] * wmem as f64 + pace * burst as f64) / (burst + wmem) as f64;
        let pushed = if st.bytes.is_some() && data.reinject.is_empty() {
            push_fragments(st, i, burst, sndbuf_total, subs, data)
        } else {
            let mut pushed = 0;
            while pushed < burst && queued(st, i) < st.sndbuf[i] && !buffer_full(data) {
                // Under push_fragments only DSNs to send again come this way: new data is
                // cut into segments by `push_fragments`, the next time round.
                let next = if st.bytes.is_some() {
                    data.take_reinject()
                } else {
                    data.take()
                };
                let Some(d) = next else { break };
                if let Some(m) = st.bytes.as_mut() {
                    m.freeze(data.next); // a DSN rescheduled: its length is fixed
                }
                st.queues[i].push_back(d);
                pushed += match &st.bytes {
                    Some(m) => m.payload(d, data.mss),
                    None => data.payload(d),
                } as u64;
            }
            pushed
        };
        if pushed == 0 {
            return;
        }
    }
}

/// Push new data to subflow `i` as `__subflow_push_pending` does (net/mptcp/protocol.c,
/// kernel 6.x), under [`TcpConfig::push_fragments`]: the rest of the current data fragment
/// ([`MPTCP_FRAG_BYTES`]), then whole fragments, until the burst is spent, the subflow's send
/// buffer is full or the application has written nothing more, each checked only between
/// fragments; only the receive window stops a push inside a fragment. The subflow cuts what
/// it is given into segments of `mss` (its socket buffers hold a multiple of `mss`,
/// `tcp_xmit_size_goal`), so a push that does not end on a multiple of `mss` ends with a
/// short segment; a later push to the same subflow, while that segment waits in its queue
/// and nothing was pushed elsewhere in between, fills it first (`mptcp_skb_can_collapse_to`).
/// Returns the bytes pushed.
fn push_fragments(
    st: &mut LinuxSend,
    i: usize,
    burst: u64,
    sndbuf_total: u64,
    subs: &[Subflow],
    data: &mut DataSource,
) -> u64 {
    let mss = data.mss as u64;
    let Some(m) = st.bytes.as_mut() else {
        return 0;
    };
    let queue = &mut st.queues[i];
    let mut pushed = 0u64;
    'fragments: loop {
        let mut frag_end = (m.end / MPTCP_FRAG_BYTES + 1) * MPTCP_FRAG_BYTES;
        if let Some(t) = m.total {
            frag_end = frag_end.min(t);
        }
        while m.end < frag_end {
            // The subflow's unsent last segment, if it is the stream's last, grows first.
            let tail = data
                .next
                .checked_sub(1)
                .filter(|&d| d >= m.frozen && queue.back() == Some(&d));
            if let Some(d) = tail.filter(|&d| (m.payload(d, data.mss) as u64) < mss) {
                let add = (mss - m.payload(d, data.mss) as u64).min(frag_end - m.end);
                m.end += add;
                pushed += add;
                continue;
            }
            let Some(d) = data.take() else {
                break 'fragments;
            };
            let len = mss.min(frag_end - m.end);
            m.push(d, len);
            queue.push_back(d);
            pushed += len;
        }
        if m.total.is_some_and(|t| m.end >= t) {
            // The transfer's last byte is pushed: it ends at this DSN.
            data.total = Some(data.next);
            break;
        }
        let queued = (subs[i].outstanding() + queue.len() as u64) * mss;
        let written = data.next.saturating_sub(data.data_una) * mss;
        if pushed >= burst || queued >= st.sndbuf[i] || written >= sndbuf_total {
            break;
        }
    }
    pushed
}

/// Connection-level counters.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct ConnectionStats {
    /// When a sized transfer was fully acknowledged.
    pub completed_at: Option<Instant>,
    /// Payload bytes cumulatively acknowledged at the data level.
    pub bytes_acked: u64,
    /// Segments sent again on another subflow after their subflow left.
    pub reinjected: u64,
}

/// The sending side of a TCP connection.
///
/// Put `order` (the subflow indices) in the minimum-RTT scheduler's order: by smoothed RTT,
/// subflows without one last, ties by index. The keys are distinct, so any sort gives this
/// one order. `order` is usually sorted already or nearly, from the previous ACK: an
/// insertion sort over keys read once each (up to [`ORDER_KEYS`] subflows; more take the
/// library's sort) costs a few comparisons.
#[inline]
fn min_rtt_order(order: &mut [usize], subs: &[Subflow]) {
    let key = |i: usize| (subs[i].srtt().map_or(u64::MAX, |d| d.as_nanos()), i);
    if order.len() > ORDER_KEYS {
        order.sort_by_key(|&i| key(i));
        return;
    }
    let mut keys = [(0u64, 0usize); ORDER_KEYS];
    for (k, &i) in keys.iter_mut().zip(order.iter()) {
        *k = key(i);
    }
    let keys = &mut keys[..order.len()];
    for a in 1..keys.len() {
        let x = keys[a];
        let mut b = a;
        while b > 0 && keys[b - 1] > x {
            keys[b] = keys[b - 1];
            b -= 1;
        }
        keys[b] = x;
    }
    for (o, k) in order.iter_mut().zip(keys.iter()) {
        *o = k.1;
    }
}

/// Subflows up to which [`min_rtt_order`] sorts on the stack.
const ORDER_KEYS: usize = 16;

/// Laid out in cache lines (`#[repr(C, align(64))]`, checked by `layout` below) for runs with
/// many flows: what every ACK and timer event reads (the subflows, the counters and flags a
/// sample also reads; the scheduler order, the path views, the timer and the schedule; the
/// data sequence; the windows) comes first, the controller next, the traffic pattern's state
/// and random stream last.
#[repr(C, align(64))]
pub struct TcpSender {
    subs: Vec<Subflow>,
    /// Connection-level counters.
    pub stats: ConnectionStats,
    started: bool,
    stopped: bool,
    on: bool,
    scheduler: SchedulerKind,
    comp: ComponentId,
    order: Vec<usize>,
    views: Vec<PathView>,
    timer: Timer,
    start: Instant,
    stop: Option<Instant>,
    toggle_at: Option<Instant>,
    data: DataSource,
    rr_next: usize,
    cc: Control,
    flow: u32,
    traffic: Traffic,
    rng: Stream,
    /// Linux MPTCP's send queues and buffers, under [`SchedulerKind::Linux`] only.
    linux: Option<Box<LinuxSend>>,
}

impl TcpSender {
    /// A connection for `flow` with the given subflows, driven by `app`.
    pub fn new(
        flow: u32,
        comp: ComponentId,
        cfg: TcpConfig,
        app: Application,
        cc: Cc,
        plans: &[SubflowPlan],
        rng: Stream,
    ) -> Self {
        let traffic = app.traffic;
        let transfer = match traffic {
            Traffic::Transfer(bytes) => Some(bytes),
            _ => None,
        };
        // Under push_fragments a sized transfer's segments are known as it is pushed: its
        // last DSN is set when its last byte is (see `push_fragments`).
        let fragments = cfg.push_fragments && cfg.scheduler == SchedulerKind::Linux;
        let (total, last_payload) = match traffic {
            Traffic::Transfer(_) if fragments => (None, cfg.mss),
            Traffic::Transfer(bytes) => {
                let mss = cfg.mss as u64;
                let n = bytes.div_ceil(mss).max(1);
                (Some(n), (bytes - (n - 1) * mss) as u32)
            }
            _ => (None, cfg.mss),
        };
        let subs: Vec<Subflow> = plans
            .iter()
            .enumerate()
            .map(|(i, p)| Subflow::new(flow, i as u16, cfg, *p))
            .collect();
        let views = (0..subs.len())
            .map(|i| {
                let mut v = PathView::new(PathId(i as u32), Bytes(cfg.mss as u64));
                v.can_send = false;
                v
            })
            .collect();
        TcpSender {
            order: (0..subs.len()).collect(),
            subs,
            stats: ConnectionStats::default(),
            started: false,
            stopped: false,
            on: false,
            scheduler: cfg.scheduler,
            comp,
            views,
            timer: Timer::default(),
            start: app.start,
            stop: app.stop,
            toggle_at: None,
            data: DataSource {
                next: 0,
                limit: 0,
                window_edge: u64::MAX,
                data_una: 0,
                total,
                mss: cfg.mss,
                last_payload,
                reinject: VecDeque::new(),
            },
            rr_next: 0,
            cc: Control::new(cc, plans.len()),
            flow,
            traffic,
            rng,
            linux: (cfg.scheduler == SchedulerKind::Linux)
                .then(|| Box::new(LinuxSend::new(&cfg, plans.len(), transfer))),
        }
    }

    /// Schedule the first wake-up (the start time).
    pub fn init(&mut self, net: &mut Net) {
        self.timer.arm(self.start, self.comp, &mut net.sched);
    }

    /// The controller, for traces.
    pub fn controller(&self) -> &Cc {
        &self.cc.cc
    }

    /// The lines of this record a sample reads, for a prefetch hint: the first (the
    /// subflows' and counters' fields) and every line of the control, from its window
    /// table's pointer to the end of the controller (an uncoupled controller keeps its
    /// paths' pointer at the end of a 200-byte enum).
    #[inline(always)]
    pub(crate) fn sample_lines(&self) -> impl Iterator<Item = *const u8> {
        let a = (self as *const Self).cast::<u8>();
        let cc = std::mem::offset_of!(TcpSender, cc);
        let end = cc + std::mem::size_of::<Control>() - 1;
        // The record is aligned to a line, so these are its lines' first bytes.
        let control = (cc / 64..=end / 64).map(move |l| a.wrapping_add(64 * l));
        std::iter::once(a).chain(control)
    }

    /// The lines a sample reads behind this record's pointers (the first subflow's sampled
    /// line, the window table and the controller's paths), for a prefetch hint: reading the
    /// pointers is cheap once [`TcpSender::sample_lines`] were fetched.
    #[inline(always)]
    pub(crate) fn sample_heap_lines(&self) -> [*const u8; 3] {
        let sub = self.subs.as_ptr().cast::<u8>().wrapping_add(64);
        let windows = self.cc.windows.as_ptr().cast::<u8>();
        [sub, windows, self.cc.cc.state_addr().unwrap_or(windows)]
    }

    /// The subflows.
    pub fn subflows(&self) -> &[Subflow] {
        &self.subs
    }

    /// Whether the connection has started and still offers data.
    pub fn active(&self) -> bool {
        self.started && self.stats.completed_at.is_none() && !self.stopped
    }

    /// Data segments of the connection in the network (sent and not yet acknowledged).
    pub fn flow_id(&self) -> u32 {
        self.flow
    }

    /// Accumulate every subflow's time integrals up to `now`.
    #[inline]
    pub fn integrate(&mut self, now: Instant) {
        let active = self.active();
        for (i, s) in self.subs.iter_mut().enumerate() {
            s.integrate(now, active, self.cc.window_f64(i));
        }
    }

    /// Send what the windows allow, new data going to subflows in scheduler order.
    #[inline(always)]
    fn schedule(&mut self, net: &mut Net, acked: Option<usize>) {
        let n = self.subs.len();
        // Subflow-internal work first: retransmissions do not need the scheduler.
        match self.scheduler {
            SchedulerKind::MinRtt => {
                if n > 1 {
                    min_rtt_order(&mut self.order, &self.subs);
                }
                for k in 0..n {
                    // A single path needs no order (and its vector is a cache line of its own).
                    let i = if n == 1 { 0 } else { self.order[k] };
                    self.subs[i].send(
                        net,
                        &mut self.cc,
                        &mut self.views,
                        &mut self.data,
                        usize::MAX,
                    );
                }
            }
            SchedulerKind::RoundRobin => loop {
                let mut any = false;
                for k in 0..n {
                    let i = (self.rr_next + k) % n;
                    if self.subs[i].send(net, &mut self.cc, &mut self.views, &mut self.data, 1) > 0
                    {
                        any = true;
                        self.rr_next = (i + 1) % n;
                    }
                }
                if !any || !self.data.has_data() {
                    break;
                }
            },
            SchedulerKind::Linux => self.schedule_linux(net, acked),
        }
    }

    /// [`SchedulerKind::Linux`]: grow the send buffers, push data into the subflows' queues,
    /// then let every subflow send from its own queue.
    #[inline(never)]
    fn schedule_linux(&mut self, net: &mut Net, acked: Option<usize>) {
        let Some(st) = self.linux.as_deref_mut() else {
            return;
        };
        if let Some(i) = acked {
            // Traffic on a subflow makes a stale one usable again (`mptcp_subflow_active`).
            st.heard[i] = true;
            st.stale[i] = false;
        }
        let mss = self.data.mss as u64;
        for (i, s) in self.subs.iter().enumerate() {
            if s.is_active() {
                let cwnd = self.cc.window(PathId(i as u32)) / mss;
                let want = (2 * st.per_mss * cwnd.max(TCP_INIT_CWND)).min(TCP_WMEM_MAX);
                st.sndbuf[i] = st.sndbuf[i].max(want);
            }
        }
        push_linux(st, &self.subs, &self.cc, &mut self.data);
        for (i, s) in self.subs.iter_mut().enumerate() {
            let mut src = Assigned {
                queue: &mut st.queues[i],
                data: &self.data,
                bytes: st.bytes.as_ref(),
            };
            s.send(net, &mut self.cc, &mut self.views, &mut src, usize::MAX);
        }
        // The connection-level retransmission timer runs while data is not acknowledged at
        // the data level, restarted by every advance of the data ACK (`__mptcp_clean_una`).
        if self.data.data_una != st.last_una {
            st.last_una = self.data.data_una;
            st.rtx_at = None;
        }
        if self.data.next <= self.data.data_una {
            st.rtx_at = None;
        } else if st.rtx_at.is_none() {
            st.rtx_at = Some(net.now + linux_rtx_interval(&self.subs, &st.stale_count));
        }
        // The sender's timer keeps only its earliest deadline; `arm` adds the others.
        if let Some(t) = st.rtx_at {
            self.timer.arm(t, self.comp, &mut net.sched);
        }
    }

    /// The connection-level retransmission timer fired: queue the oldest unacknowledged data
    /// on a subflow that has nothing outstanding and nothing queued, and restart the timer.
    fn linux_retransmit(&mut self, now: Instant) {
        let Some(st) = self.linux.as_deref_mut() else {
            return;
        };
        if st.rtx_at.is_none_or(|t| now < t) {
            return;
        }
        st.rtx_at = None;
        if self.data.next <= self.data.data_una {
            return;
        }
        // `mptcp_subflow_get_retrans` and the stale check (`mptcp_pm_subflow_chk_stale`): a
        // subflow with data pending that heard nothing for more than `STALE_LOSS_CNT` of these
        // intervals, while another is not in that state, is stale: the scheduler passes it by
        // until it hears from its peer again, and everything not yet acknowledged at the data
        // level is handed to the scheduler once more (`__mptcp_retransmit_pending_data`).
        let n = self.subs.len();
        for i in 0..n {
            let pending = self.subs[i].outstanding() > 0 || !st.queues[i].is_empty();
            st.stale_count[i] = if pending && !st.heard[i] {
                st.stale_count[i] + 1
            } else {
                0
            };
            st.heard[i] = false;
        }
        for i in 0..n {
            let active = |j: usize| self.subs[j].is_active() && !st.stale[j];
            if !active(i) || st.stale_count[i] <= STALE_LOSS_CNT {
                continue;
            }
            let alternative = (0..n)
                .any(|j| j != i && active(j) && st.stale_count[j] < (STALE_LOSS_CNT - 1).max(1));
            if alternative {
                st.stale[i] = true;
                self.data.reinject.clear();
                self.data
                    .reinject
                    .extend(self.data.data_una..self.data.next);
                self.stats.reinjected += self.data.next - self.data.data_una;
            }
        }
        let idle = (0..n).find(|&i| {
            self.subs[i].is_active() && self.subs[i].outstanding() == 0 && st.queues[i].is_empty()
        });
        if let Some(i) = idle {
            let segments = (MPTCP_RETRANS_BYTES / self.data.mss as u64).max(1);
            let end = self.data.next.min(self.data.data_una + segments);
            if let Some(m) = st.bytes.as_mut() {
                m.freeze(self.data.next);
            }
            for d in self.data.data_una..end {
                st.queues[i].push_back(d);
                self.stats.reinjected += 1;
            }
        }
        st.rtx_at = Some(now + linux_rtx_interval(&self.subs, &st.stale_count));
    }

    /// An ACK without SACK blocks and with an unlimited window arrived on subflow `sub`,
    /// carrying the low 32 bits of its cumulative ACK and data ACK (see
    /// [`crate::packet::unfold`]).
    #[inline(always)]
    pub fn on_plain_ack(&mut self, sub: u16, ack: u32, data_ack: u32, net: &mut Net) {
        let near = self.subs.get(sub as usize).map_or(0, |s| s.snd_una());
        let mut p = Packet::new(self.flow, 0, PacketKind::Ack, 0, 0);
        p.sub = sub;
        p.seq = unfold(near, ack);
        p.dsn = unfold(self.data.data_una, data_ack);
        self.on_ack(&p, net)
    }

    /// An ACK arrived on one of the subflows.
    pub fn on_ack(&mut self, p: &Packet, net: &mut Net) {
        let now = net.now;
        self.integrate(now);
        let i = p.sub as usize;
        if let Some(s) = self.subs.get_mut(i) {
            s.on_ack(p, net, &mut self.cc, &mut self.views, &mut self.data);
        }
        // Data level: the cumulative data ACK and the receive window.
        let data_ack = p.data_ack();
        if data_ack > self.data.data_una {
            let map = self.linux.as_deref_mut().and_then(|st| st.bytes.as_mut());
            let bytes = match map {
                Some(m) => {
                    let b = m.between(self.data.data_una, data_ack, self.data.mss);
                    m.trim(data_ack);
                    b
                }
                None => self.data.payload_between(self.data.data_una, data_ack),
            };
            self.stats.bytes_acked += bytes;
            self.data.data_una = data_ack;
        }
        self.data.window_edge = match p.rwnd {
            u32::MAX => u64::MAX,
            w => data_ack + w as u64,
        };
        if self.data.total.is_some_and(|n| self.data.data_una >= n)
            && self.stats.completed_at.is_none()
        {
            self.stats.completed_at = Some(now);
            for s in &mut self.subs {
                s.stop_timer();
            }
        }
        self.schedule(net, Some(i));
        self.arm(net);
    }

    fn period(&mut self, p: Period) -> Duration {
        if p.exponential {
            Duration::from_secs_f64(self.rng.exponential(p.mean.as_secs_f64()))
        } else {
            p.mean
        }
    }

    /// The connection's timer fired: start/stop, traffic toggles, joins, leaves, timeouts.
    pub fn on_timer(&mut self, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        self.integrate(now);
        if !self.started && now >= self.start {
            self.started = true;
            self.data.limit = u64::MAX;
            if let Traffic::OnOff { on, .. } = self.traffic {
                self.on = true;
                self.toggle_at = Some(now + self.period(on));
            }
        }
        if self.stop.is_some_and(|t| now >= t) && !self.stopped {
            self.stopped = true;
            self.data.limit = self.data.next;
            self.toggle_at = None;
        }
        if let (Some(t), Traffic::OnOff { on, off }) = (self.toggle_at, self.traffic) {
            if now >= t {
                self.on = !self.on;
                if self.on {
                    self.data.limit = u64::MAX;
                    self.toggle_at = Some(now + self.period(on));
                } else {
                    self.data.limit = self.data.next;
                    self.toggle_at = Some(now + self.period(off));
                }
            }
        }
        if self.started {
            for i in 0..self.subs.len() {
                let s = &mut self.subs[i];
                if s.should_join(now) {
                    s.join(now, &mut self.cc, &mut self.views);
                }
                if s.should_leave(now) {
                    let mut orphans = s.leave(&mut self.cc, &mut self.views);
                    if let Some(st) = self.linux.as_deref_mut() {
                        orphans.extend(st.queues[i].drain(..));
                    }
                    for d in orphans {
                        if d >= self.data.data_una {
                            self.data.reinject.push_back(d);
                            self.stats.reinjected += 1;
                        }
                    }
                }
                if s.rto_due(now) {
                    s.on_rto(net, &mut self.cc, &mut self.views, &mut self.data);
                }
            }
            if self.linux.is_some() {
                self.linux_retransmit(now);
            }
            self.schedule(net, None);
        }
        self.arm(net);
    }

    #[inline]
    fn arm(&mut self, net: &mut Net) {
        // The earliest of the start, the stop, the next traffic toggle and every subflow's
        // join, leave or retransmission deadline.
        let mut next = if self.started {
            match self.stop {
                Some(t) if !self.stopped => t,
                _ => Instant::MAX,
            }
        } else {
            self.start
        };
        if let Some(t) = self.toggle_at {
            next = next.min(t);
        }
        for s in &self.subs {
            if let Some(t) = s.next_deadline() {
                next = next.min(t);
            }
        }
        // Usually the pending event is already early enough (the retransmission deadline
        // only moves later on an ACK), so the push stays out of line.
        if next != Instant::MAX && self.timer.would_arm(next) {
            self.arm_at(next, net);
        }
    }

    #[inline(never)]
    fn arm_at(&mut self, t: Instant, net: &mut Net) {
        self.timer.arm(t, self.comp, &mut net.sched);
    }

    /// Data segments sent on all subflows (retransmissions included), for conservation checks.
    pub fn segments_sent(&self) -> u64 {
        self.subs.iter().map(|s| s.stats.segments_sent).sum()
    }
}

#[cfg(test)]
mod layout {
    use super::{Control, DataSource, TcpSender};
    use std::mem::{align_of, offset_of, size_of};

    /// What an ACK or a timer event of the connection reads fills the first five lines of an
    /// aligned sender, up to the windows at the head of the controller; a sample reads the
    /// first and the windows.
    #[test]
    fn sender_fields_sit_in_their_cache_lines() {
        assert_eq!(align_of::<TcpSender>(), 64);
        let line = |off: usize| off / 64;
        assert_eq!(line(offset_of!(TcpSender, subs)), 0);
        assert_eq!(line(offset_of!(TcpSender, stats)), 0);
        assert_eq!(line(offset_of!(TcpSender, comp) + 3), 0);
        assert_eq!(line(offset_of!(TcpSender, order)), 1);
        assert_eq!(line(offset_of!(TcpSender, start) + 7), 1);
        assert_eq!(line(offset_of!(TcpSender, stop)), 2);
        let data_end = offset_of!(TcpSender, data) + size_of::<DataSource>() - 1;
        assert_eq!(line(data_end), 3);
        assert_eq!(offset_of!(TcpSender, cc), 256);
        assert_eq!(offset_of!(Control, windows), 0);
        assert!(size_of::<TcpSender>() <= 1024);
    }
}
