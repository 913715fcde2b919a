//! The sending side of a QUIC connection: per path a packet number space with its sent
//! packets, RTT estimator, loss detection and probe timeout (RFC 9002 §5–6), recovery periods
//! and persistent congestion (§7.3.2, §7.6) reported to the controller, and quinn's pacer;
//! per connection one stream whose lost data goes out again in new packets on any path
//! (RFC 9000 §13.3), and quinn's pull scheduler.
//!
//! The stream is cut into chunks of one full packet's stream data; a packet carries one
//! chunk (the last chunk of a sized transfer may be short), or none for a PING probe.
//!
//! Controller events (the mapping of pathweave-quic's adapter): per PATH_ACK frame that newly
//! acknowledges packets, the bytes (UDP payload) of those sent at or before the start of the
//! current recovery period in one `on_ack` with `in_recovery` set; then, if the frame
//! acknowledges packets sent after it, `on_recovery_end` (a recovery period ends when a
//! packet sent during it is acknowledged, RFC 9002 §7.3.2) and their bytes in one ordinary
//! `on_ack`. Both carry the time since the newest acknowledged packet was sent as the RTT.
//! `on_congestion_event` when packets are declared lost and the largest of them was sent
//! after the current recovery period started (one reduction per round trip, §7.3.2); that
//! starts a new period. Persistent congestion (§7.6) gives `on_rto` instead. A PTO calls
//! nothing (§6.2: a probe timeout is not a congestion signal).
//!
//! Invariants: `sent` holds exactly the packets `base_pn..next_pn` of a path; `in_flight`
//! is the size of those still in flight; a chunk is queued for retransmission at most once
//! at a time.

use super::recovery::{Pacer, QuicRtt, PACKET_THRESHOLD};
use super::{Wire, DATA_WIRE_OVERHEAD, LAZY_ACK_THRESHOLD, PACKET_OVERHEAD};
use crate::event::{ComponentId, Timer};
use crate::net::Net;
use crate::packet::{unfold, Packet, PacketKind};
use crate::rng::Stream;
use crate::tcp::{
    Application, Cc, ConnectionStats, Control, Period, SubflowPlan, SubflowStats, Traffic,
};
use pathweave_cc::cc::multipath::Paths;
use pathweave_cc::cc::{Ack, Cause, CongestionEvent, PathId, PathView, Rto};
use pathweave_cc::{Bytes, Duration, Instant};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A QUIC flow's settings.
#[derive(Clone, Copy, Debug)]
pub struct QuicSettings {
    /// The largest UDP payload (max_datagram_size, RFC 9002 §7).
    pub max_udp_payload: u32,
    /// The peer's max_ack_delay (RFC 9000 §18.2).
    pub max_ack_delay: Duration,
}

impl QuicSettings {
    /// Stream bytes in a full packet.
    pub fn chunk(&self) -> u32 {
        self.max_udp_payload - PACKET_OVERHEAD
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    InFlight,
    Acked,
    Lost,
}

/// A sent packet, kept until it and every packet below it are acknowledged or lost.
#[derive(Clone, Copy, Debug)]
struct Sent {
    time: Instant,
    /// Its chunk, or [`NO_CHUNK`] for a PING.
    chunk: u64,
    /// UDP payload bytes.
    size: u32,
    /// Stream bytes.
    payload: u32,
    fate: Fate,
}

const NO_CHUNK: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Active,
    Abandoned,
}

/// One path's sending side.
pub struct QuicPath {
    /// Counters: `segments_sent` counts packets, `retransmits` packets of stream data sent
    /// again, `timeouts` PTO expiries, `loss_events` window reductions (congestion events
    /// and persistent congestion).
    pub stats: SubflowStats,
    state: State,
    id: u16,
    plan: SubflowPlan,
    sent: VecDeque<Sent>,
    base_pn: u64,
    next_pn: u64,
    in_flight: u64,
    eliciting_in_flight: u64,
    largest_acked: Option<u64>,
    rtt: QuicRtt,
    srtt_s: f64,
    loss_time: Option<Instant>,
    pto_count: u32,
    loss_probes: u32,
    last_eliciting: Option<Instant>,
    /// When the current recovery period started (RFC 9002 §7.3.2).
    recovery_start: Option<Instant>,
    in_recovery: bool,
    first_after_rtt_sample: Option<u64>,
    pacer: Pacer,
    /// When the pacer lets the next packet out, if it holds one back.
    pace_at: Option<Instant>,
    /// The loss-detection timer: the loss time or the PTO.
    timer_at: Option<Instant>,
    last_integrated: Instant,
    /// ACK-only packets received on this path since the last lazy acknowledgement, and the
    /// largest of their numbers.
    acks_received: u64,
    largest_ack_id: Option<u64>,
    /// The ACK-only packet number expected next, to unfold the 32 bits a packet carries.
    next_ack_id: u64,
}

impl QuicPath {
    fn new(id: u16, plan: SubflowPlan) -> Self {
        QuicPath {
            stats: SubflowStats::default(),
            state: State::Waiting,
            id,
            plan,
            sent: VecDeque::new(),
            base_pn: 0,
            next_pn: 0,
            in_flight: 0,
            eliciting_in_flight: 0,
            largest_acked: None,
            rtt: QuicRtt::default(),
            srtt_s: f64::NAN,
            loss_time: None,
            pto_count: 0,
            loss_probes: 0,
            last_eliciting: None,
            recovery_start: None,
            in_recovery: false,
            first_after_rtt_sample: None,
            pacer: Pacer::new(Duration::ZERO, 0, 0, plan.join),
            pace_at: None,
            timer_at: None,
            last_integrated: plan.join,
            acks_received: 0,
            largest_ack_id: None,
            next_ack_id: 0,
        }
    }

    /// Whether the path is open (validated and not abandoned).
    pub fn is_active(&self) -> bool {
        self.state == State::Active
    }

    /// The smoothed RTT in seconds, NaN before the first sample.
    pub fn srtt_secs(&self) -> f64 {
        self.srtt_s
    }

    /// The RTT estimator.
    pub fn rtt(&self) -> &QuicRtt {
        &self.rtt
    }

    /// UDP payload bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    fn pid(&self) -> PathId {
        PathId(self.id as u32)
    }

    fn refresh(&self, views: &mut [PathView]) {
        let v = &mut views[self.id as usize];
        v.srtt = self.rtt.smoothed();
        v.min_rtt = self.rtt.min();
        v.latest_rtt = self.rtt.latest();
        v.in_flight = Bytes(self.in_flight);
    }

    fn integrate(&mut self, now: Instant, connection_active: bool, cwnd: f64) {
        if !connection_active || self.state != State::Active {
            self.last_integrated = now;
            return;
        }
        let dt = now.saturating_since(self.last_integrated).as_secs_f64();
        self.stats.cwnd_integral += cwnd * dt;
        self.stats.active_time += dt;
        if !self.srtt_s.is_nan() {
            self.stats.srtt_integral += self.srtt_s * dt;
            self.stats.srtt_time += dt;
        }
        self.last_integrated = now;
    }

    /// Drop the packets at the front that are acknowledged or lost.
    fn trim(&mut self) {
        while let Some(s) = self.sent.front() {
            if s.fate == Fate::InFlight {
                break;
            }
            self.sent.pop_front();
            self.base_pn += 1;
        }
    }

    /// Take packet `k` (index into `sent`) out of flight.
    fn settle(&mut self, k: usize, fate: Fate) -> Sent {
        let s = &mut self.sent[k];
        s.fate = fate;
        self.in_flight -= s.size as u64;
        self.eliciting_in_flight -= 1;
        *s
    }

    /// Set the loss-detection timer (RFC 9002 §6.2.1, quinn `set_loss_detection_timer`):
    /// the loss time if a packet awaits it, else the PTO from the last ack-eliciting packet
    /// while one is in flight.
    fn set_timer(&mut self, max_ack_delay: Duration) {
        self.timer_at = match (self.loss_time, self.last_eliciting) {
            (Some(t), _) => Some(t),
            (None, Some(last)) if self.eliciting_in_flight > 0 => {
                Some(last + self.rtt.pto(max_ack_delay, self.pto_count))
            }
            _ => None,
        };
    }
}

/// The connection's stream: chunks handed out in order, lost ones queued to go out again
/// first (quinn's `SendBuffer` sends retransmissions before new data, lowest offset first).
struct StreamSend {
    next: u64,
    /// The application has offered chunks below this.
    limit: u64,
    total: Option<u64>,
    chunk: u32,
    last_payload: u32,
    lost: BinaryHeap<Reverse<u64>>,
    /// Chunks below this are acknowledged.
    una: u64,
    /// Per chunk from `una`: 0 outstanding, 1 acknowledged, 2 queued to go out again.
    marks: VecDeque<u8>,
}

const ACKED: u8 = 1;
const QUEUED: u8 = 2;

impl StreamSend {
    fn payload(&self, c: u64) -> u32 {
        match self.total {
            Some(n) if c + 1 == n => self.last_payload,
            _ => self.chunk,
        }
    }

    fn mark(&mut self, c: u64) -> Option<&mut u8> {
        let k = c.checked_sub(self.una)? as usize;
        if self.marks.len() <= k {
            self.marks.resize(k + 1, 0);
        }
        self.marks.get_mut(k)
    }

    /// Chunk `c` was acknowledged; returns its bytes if it had not been.
    fn acked(&mut self, c: u64) -> Option<u32> {
        let m = self.mark(c)?;
        if *m == ACKED {
            return None;
        }
        *m = ACKED;
        while self.marks.front() == Some(&ACKED) {
            self.marks.pop_front();
            self.una += 1;
        }
        Some(self.payload(c))
    }

    /// Chunk `c` was in a lost packet: send it again unless it is acknowledged or queued.
    fn lost(&mut self, c: u64) {
        if let Some(m) = self.mark(c) {
            if *m == 0 {
                *m = QUEUED;
                self.lost.push(Reverse(c));
            }
        }
    }

    /// Drop queued chunks acknowledged since they were queued.
    fn drop_stale(&mut self) {
        while let Some(&Reverse(c)) = self.lost.peek() {
            if self.mark(c).is_some_and(|m| *m == QUEUED) {
                return;
            }
            self.lost.pop();
        }
    }

    fn has_data(&mut self) -> bool {
        self.drop_stale();
        !self.lost.is_empty() || self.next < self.limit.min(self.total.unwrap_or(u64::MAX))
    }

    /// The next chunk to send and whether it is sent again.
    fn take(&mut self) -> Option<(u64, bool)> {
        self.drop_stale();
        if let Some(Reverse(c)) = self.lost.pop() {
            if let Some(m) = self.mark(c) {
                *m = 0;
            }
            return Some((c, true));
        }
        let end = self.limit.min(self.total.unwrap_or(u64::MAX));
        (self.next < end).then(|| {
            self.next += 1;
            (self.next - 1, false)
        })
    }
}

/// The sending side of a QUIC connection.
pub struct QuicSender {
    paths: Vec<QuicPath>,
    views: Vec<PathView>,
    cc: Control,
    stream: StreamSend,
    /// Connection-level counters (`bytes_acked`: stream bytes acknowledged, each once).
    pub stats: ConnectionStats,
    set: QuicSettings,
    flow: u32,
    comp: ComponentId,
    timer: Timer,
    started: bool,
    stopped: bool,
    on: bool,
    start: Instant,
    stop: Option<Instant>,
    toggle_at: Option<Instant>,
    traffic: Traffic,
    rng: Stream,
}

impl QuicSender {
    pub(crate) fn new(
        flow: u32,
        comp: ComponentId,
        set: QuicSettings,
        app: Application,
        cc: Cc,
        plans: &[SubflowPlan],
        rng: Stream,
    ) -> Self {
        let chunk = set.chunk();
        let (total, last_payload) = match app.traffic {
            Traffic::Transfer(bytes) => {
                let n = bytes.div_ceil(chunk as u64).max(1);
                (Some(n), (bytes - (n - 1) * chunk as u64) as u32)
            }
            _ => (None, chunk),
        };
        let mss = Bytes(set.max_udp_payload as u64);
        QuicSender {
            paths: plans
                .iter()
                .enumerate()
                .map(|(k, p)| QuicPath::new(k as u16, *p))
                .collect(),
            views: (0..plans.len())
                .map(|k| {
                    let mut v = PathView::new(PathId(k as u32), mss);
                    v.can_send = false;
                    v
                })
                .collect(),
            cc: Control::new(cc, plans.len()),
            stream: StreamSend {
                next: 0,
                limit: 0,
                total,
                chunk,
                last_payload,
                lost: BinaryHeap::new(),
                una: 0,
                marks: VecDeque::new(),
            },
            stats: ConnectionStats::default(),
            set,
            flow,
            comp,
            timer: Timer::default(),
            started: false,
            stopped: false,
            on: false,
            start: app.start,
            stop: app.stop,
            toggle_at: None,
            traffic: app.traffic,
            rng,
        }
    }

    pub(crate) fn init(&mut self, net: &mut Net) {
        self.timer.arm(self.start, self.comp, &mut net.sched);
    }

    /// The paths.
    pub fn paths(&self) -> &[QuicPath] {
        &self.paths
    }

    /// The controller, for traces.
    pub fn controller(&self) -> &Cc {
        &self.cc.cc
    }

    /// Whether the connection has started and still offers data.
    pub fn active(&self) -> bool {
        self.started && self.stats.completed_at.is_none() && !self.stopped
    }

    /// Packets sent on all paths, for conservation checks.
    pub fn segments_sent(&self) -> u64 {
        self.paths.iter().map(|p| p.stats.segments_sent).sum()
    }

    /// The path whose reverse route the receiver's ACK-only packets take: quinn builds them
    /// on the first path in `PathId` order that is open, so path 0 while it is.
    pub(crate) fn ack_path(&self) -> usize {
        self.paths.iter().position(QuicPath::is_active).unwrap_or(0)
    }

    /// Accumulate every path's time integrals up to `now`.
    pub fn integrate(&mut self, now: Instant) {
        let active = self.active();
        for (k, p) in self.paths.iter_mut().enumerate() {
            p.integrate(now, active, self.cc.window_f64(k));
        }
    }

    /// An ACK-only packet arrived on the reverse route of path `route`.
    pub(crate) fn on_ack_packet(&mut self, route: usize, low: u32, wire: &mut Wire, net: &mut Net) {
        let now = net.now;
        self.integrate(now);
        let Some(rp) = self.paths.get_mut(route) else {
            return;
        };
        let id = unfold(rp.next_ack_id, low);
        let Some((_, words)) = wire.find_ack(route, id as u32) else {
            return;
        };
        rp.next_ack_id = rp.next_ack_id.max(id + 1);
        rp.acks_received += 1;
        rp.largest_ack_id = Some(rp.largest_ack_id.map_or(id, |l| l.max(id)));
        let tape = wire.tape(route);
        let frames = tape[2] as usize;
        let mut at = 3;
        for _ in 0..frames {
            let (path, largest, delay, n) = (
                tape[at] as usize,
                tape[at + 1],
                Duration(tape[at + 2]),
                tape[at + 3] as usize,
            );
            let ranges = tape.range(at + 4..at + 4 + 2 * n);
            self.on_path_ack(path, largest, delay, ranges, now);
            at += 4 + 2 * n;
        }
        wire.pop_ack(route, words);
        if self.stream.total.is_some_and(|n| self.stream.una >= n)
            && self.stats.completed_at.is_none()
        {
            self.stats.completed_at = Some(now);
        }
        self.schedule(wire, net);
        self.arm(net);
    }

    /// A PATH_ACK frame for path `k` (quinn `inner_on_ack_received`, RFC 9002 §A.7).
    fn on_path_ack<'a>(
        &mut self,
        k: usize,
        largest: u64,
        ack_delay: Duration,
        mut ranges: impl Iterator<Item = &'a u64>,
        now: Instant,
    ) {
        let mad = self.set.max_ack_delay;
        let Some(p) = self.paths.get_mut(k) else {
            return;
        };
        // PATH_ACKs of an abandoned path are ignored (draft-ietf-quic-multipath §3.4.3).
        if p.state != State::Active || largest >= p.next_pn {
            return;
        }
        if p.largest_acked.is_none_or(|l| largest > l) {
            p.largest_acked = Some(largest);
        }
        // Bytes of packets sent at or before the current recovery period's start, and after.
        let start = p.recovery_start;
        let (mut old_bytes, mut fresh_bytes, mut payload) = (0u64, 0u64, 0u64);
        let mut newest: Option<(u64, Instant)> = None;
        while let (Some(&lo), Some(&hi)) = (ranges.next(), ranges.next()) {
            let from = lo.max(p.base_pn);
            let to = hi.min(p.next_pn);
            for pn in from..to.max(from) {
                let i = (pn - p.base_pn) as usize;
                if p.sent[i].fate != Fate::InFlight {
                    continue;
                }
                let s = p.settle(i, Fate::Acked);
                if start.is_some_and(|r| s.time <= r) {
                    old_bytes += s.size as u64;
                } else {
                    fresh_bytes += s.size as u64;
                }
                if s.chunk != NO_CHUNK {
                    payload += s.payload as u64;
                    if let Some(b) = self.stream.acked(s.chunk) {
                        self.stats.bytes_acked += b as u64;
                    }
                }
                if newest.is_none_or(|(n, _)| pn > n) {
                    newest = Some((pn, s.time));
                }
            }
        }
        let Some((newest_pn, newest_sent)) = newest else {
            return;
        };
        p.stats.bytes_acked += payload;
        // RFC 9002 §5.1: a sample if the largest acknowledged is newly acknowledged (and
        // ack-eliciting, as every packet here is); §5.3: ack_delay at most max_ack_delay.
        let sample = (newest_pn == largest).then(|| now.saturating_since(newest_sent));
        if let Some(rtt) = sample {
            p.rtt.update(ack_delay.min(mad), rtt);
            p.srtt_s = p.rtt.get().as_secs_f64();
            if p.first_after_rtt_sample.is_none() {
                p.first_after_rtt_sample = Some(p.next_pn);
            }
        }
        // The controller's sample: the time since the newest acknowledged packet was sent
        // (the adapter's, which cannot see quinn's estimator update in time).
        let cc_rtt = Some(now.saturating_since(newest_sent));
        p.refresh(&mut self.views);
        let pid = p.pid();
        if old_bytes > 0 {
            let ack = Ack {
                now,
                bytes_acked: Bytes(old_bytes),
                rtt: cc_rtt,
                in_recovery: true,
                cwnd_limited: true,
            };
            self.cc.on_ack(pid, &ack, &Paths(&self.views));
        }
        if fresh_bytes > 0 {
            let p = &mut self.paths[k];
            if p.in_recovery {
                p.in_recovery = false;
                self.cc.on_recovery_end(pid, now, &Paths(&self.views));
            }
            let ack = Ack {
                now,
                bytes_acked: Bytes(fresh_bytes),
                rtt: cc_rtt,
                in_recovery: false,
                cwnd_limited: true,
            };
            self.cc.on_ack(pid, &ack, &Paths(&self.views));
        }
        self.detect_lost(k, now, true);
        let p = &mut self.paths[k];
        p.pto_count = 0;
        p.trim();
        p.set_timer(mad);
    }

    /// Declare lost the packets below the largest acknowledged one that are three packets
    /// below it or sent a time threshold ago (RFC 9002 §6.1, quinn `detect_lost_packets`),
    /// look for persistent congestion among them (§7.6.2), and tell the controller.
    fn detect_lost(&mut self, k: usize, now: Instant, due_to_ack: bool) {
        let mad = self.set.max_ack_delay;
        let p = &mut self.paths[k];
        p.loss_time = None;
        let Some(largest) = p.largest_acked else {
            return;
        };
        let loss_delay = p.rtt.loss_delay();
        let period = p.rtt.congestion_period(mad);
        let mut largest_lost_sent: Option<Instant> = None;
        let mut persistent = false;
        let mut run_start: Option<Instant> = None;
        let mut prev: Option<u64> = None;
        for pn in p.base_pn..largest.min(p.next_pn) {
            let i = (pn - p.base_pn) as usize;
            let s = p.sent[i];
            if s.fate != Fate::InFlight {
                continue;
            }
            if prev != Some(pn.wrapping_sub(1)) {
                // An acknowledged (or earlier lost) packet lies between: a new run.
                run_start = None;
            }
            prev = Some(pn);
            if now.saturating_since(s.time) >= loss_delay || largest >= pn + PACKET_THRESHOLD {
                p.settle(i, Fate::Lost);
                if s.chunk != NO_CHUNK {
                    self.stream.lost(s.chunk);
                }
                largest_lost_sent = Some(s.time);
                if due_to_ack {
                    match run_start {
                        // §7.6.2: two lost ack-eliciting packets more than the period apart,
                        // with none acknowledged between them.
                        Some(t) if s.time.saturating_since(t) > period => persistent = true,
                        // Only packets sent after the first RTT sample count.
                        None if p.first_after_rtt_sample.is_some_and(|f| f < pn) => {
                            run_start = Some(s.time)
                        }
                        _ => {}
                    }
                }
            } else {
                // The first packet not yet lost: the later ones are not either.
                p.loss_time = Some(s.time + loss_delay);
                break;
            }
        }
        let Some(lost_sent) = largest_lost_sent else {
            return;
        };
        let new_period = p.recovery_start.is_none_or(|r| lost_sent > r);
        if !(persistent || new_period) {
            return;
        }
        p.recovery_start = Some(now);
        p.in_recovery = true;
        p.stats.loss_events += 1;
        p.refresh(&mut self.views);
        let pid = p.pid();
        if persistent {
            // §7.6.2: the window collapses; the controller's timeout reaction.
            let rto = Rto {
                now,
                repeated: false,
            };
            self.cc.on_rto(pid, &rto, &Paths(&self.views));
        } else {
            let ev = CongestionEvent {
                now,
                cause: Cause::Loss,
            };
            self.cc.on_congestion_event(pid, &ev, &Paths(&self.views));
        }
    }

    /// Send what the windows, the pacers and the probes allow (quinn `poll_transmit`): each
    /// packet goes on the first path, in `PathId` order, that may send one; a path is
    /// blocked when `in_flight + max_udp_payload > cwnd` (quinn's congestion check against
    /// the adapter's window, one byte above the controller's), unless
    /// a probe is due, and when its pacer holds the packet back.
    fn schedule(&mut self, wire: &mut Wire, net: &mut Net) {
        let now = net.now;
        let mtu = self.set.max_udp_payload as u64;
        loop {
            let mut sent = false;
            for k in 0..self.paths.len() {
                let window = self.cc.window(PathId(k as u32));
                let p = &mut self.paths[k];
                if p.state != State::Active {
                    continue;
                }
                let probe = p.loss_probes > 0;
                // The adapter answers quinn one byte above the controller's window, so that
                // quinn's `in_flight + size < window` lets a window of n packets carry n.
                if !probe && (p.in_flight + mtu > window || !self.stream.has_data()) {
                    continue;
                }
                if let Some(t) = p.pacer.delay(p.rtt.get(), mtu, mtu, window, now) {
                    p.pace_at = Some(t);
                    continue;
                }
                p.pace_at = None;
                if probe {
                    p.loss_probes -= 1;
                }
                self.send_packet(k, wire, net);
                sent = true;
                break;
            }
            if !sent {
                return;
            }
        }
    }

    /// One packet on path `k`: lost data first, then new data, else (a probe with nothing
    /// to send) a PING.
    fn send_packet(&mut self, k: usize, wire: &mut Wire, net: &mut Net) {
        let now = net.now;
        let (chunk, payload, again) = match self.stream.take() {
            Some((c, again)) => (c, self.stream.payload(c), again),
            None => (NO_CHUNK, 0, false),
        };
        let mad = self.set.max_ack_delay;
        let p = &mut self.paths[k];
        let size = payload + PACKET_OVERHEAD;
        let pn = p.next_pn;
        p.next_pn += 1;
        p.sent.push_back(Sent {
            time: now,
            chunk,
            size,
            payload,
            fate: Fate::InFlight,
        });
        p.in_flight += size as u64;
        p.eliciting_in_flight += 1;
        p.last_eliciting = Some(now);
        p.pacer.on_transmit(size as u64);
        p.stats.segments_sent += 1;
        p.stats.bytes_sent += payload as u64;
        if again {
            p.stats.retransmits += 1;
        }
        let mut pkt = Packet::new(
            self.flow,
            p.plan.route,
            PacketKind::Data,
            payload + DATA_WIRE_OVERHEAD,
            payload,
        );
        pkt.sub = p.id;
        pkt.seq = pn;
        pkt.dsn = if chunk == NO_CHUNK { 0 } else { chunk };
        net.send(&pkt);
        // quinn acknowledges the peer's ACK-only packets in the next packet on their path
        // once more than LAZY_ACK_THRESHOLD arrived (`maybe_ack_non_eliciting`).
        if p.acks_received > LAZY_ACK_THRESHOLD {
            if let Some(id) = p.largest_ack_id {
                wire.push_ack_of_acks(k, pn, id);
            }
            p.acks_received = 0;
        }
        if p.loss_time.is_none() {
            p.set_timer(mad);
        }
    }

    fn period(&mut self, p: Period) -> Duration {
        if p.exponential {
            Duration::from_secs_f64(self.rng.exponential(p.mean.as_secs_f64()))
        } else {
            p.mean
        }
    }

    /// The sender's timer fired: start and stop, traffic toggles, paths opening and being
    /// abandoned, loss timers and PTOs, pacing.
    pub(crate) fn on_timer(&mut self, wire: &mut Wire, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        self.integrate(now);
        if !self.started && now >= self.start {
            self.started = true;
            self.stream.limit = u64::MAX;
            if let Traffic::OnOff { on, .. } = self.traffic {
                self.on = true;
                self.toggle_at = Some(now + self.period(on));
            }
        }
        if self.stop.is_some_and(|t| now >= t) && !self.stopped {
            self.stopped = true;
            self.stream.limit = self.stream.next;
            self.toggle_at = None;
        }
        if let (Some(t), Traffic::OnOff { on, off }) = (self.toggle_at, self.traffic) {
            if now >= t {
                self.on = !self.on;
                if self.on {
                    self.stream.limit = u64::MAX;
                    self.toggle_at = Some(now + self.period(on));
                } else {
                    self.stream.limit = self.stream.next;
                    self.toggle_at = Some(now + self.period(off));
                }
            }
        }
        if self.started {
            for k in 0..self.paths.len() {
                self.path_timers(k, now);
            }
            self.schedule(wire, net);
        }
        self.arm(net);
    }

    fn path_timers(&mut self, k: usize, now: Instant) {
        let mad = self.set.max_ack_delay;
        let mtu = self.set.max_udp_payload as u64;
        let p = &mut self.paths[k];
        if p.state == State::Waiting && now >= p.plan.join {
            // The path is validated: the controller learns of it (RFC 9002 §7.2: a new path
            // starts with the initial window and a fresh RTT estimator).
            p.state = State::Active;
            p.last_integrated = now;
            self.views[k].can_send = true;
            self.cc.on_path_added(PathId(k as u32), now, Bytes(mtu));
            let window = self.cc.window(PathId(k as u32));
            let p = &mut self.paths[k];
            p.pacer = Pacer::new(p.rtt.get(), window, mtu, now);
        }
        let p = &mut self.paths[k];
        if p.state == State::Active && p.plan.leave.is_some_and(|t| now >= t) {
            self.abandon(k);
            return;
        }
        let p = &mut self.paths[k];
        if p.state != State::Active {
            return;
        }
        if p.pace_at.is_some_and(|t| now >= t) {
            p.pace_at = None;
        }
        if p.timer_at.is_none_or(|t| now < t) {
            return;
        }
        if p.loss_time.is_some() {
            // Time-threshold loss (RFC 9002 §6.1.2).
            self.detect_lost(k, now, false);
            let p = &mut self.paths[k];
            p.trim();
            p.set_timer(mad);
        } else {
            // A probe timeout (§6.2.4): two probe packets, no congestion signal.
            p.stats.timeouts += 1;
            p.loss_probes = p.loss_probes.saturating_add(2);
            p.pto_count = p.pto_count.saturating_add(1);
            p.set_timer(mad);
        }
    }

    /// Abandon path `k` (its subflow's `stop`): what it has in flight is declared lost
    /// without a congestion signal and its data goes out on the other paths (quinn
    /// `discard_path`); the controller forgets the path.
    fn abandon(&mut self, k: usize) {
        let p = &mut self.paths[k];
        p.state = State::Abandoned;
        for i in 0..p.sent.len() {
            if p.sent[i].fate == Fate::InFlight {
                let s = p.settle(i, Fate::Lost);
                if s.chunk != NO_CHUNK {
                    self.stream.lost(s.chunk);
                }
            }
        }
        p.trim();
        p.timer_at = None;
        p.pace_at = None;
        p.loss_time = None;
        p.loss_probes = 0;
        self.views[k].can_send = false;
        self.cc.on_path_removed(PathId(k as u32));
    }

    fn arm(&mut self, net: &mut Net) {
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
        for p in &self.paths {
            let t = match p.state {
                State::Waiting => Some(p.plan.join),
                State::Active => [p.plan.leave, p.timer_at, p.pace_at]
                    .into_iter()
                    .flatten()
                    .min(),
                State::Abandoned => None,
            };
            if let Some(t) = t {
                next = next.min(t);
            }
        }
        if next != Instant::MAX {
            self.timer.arm(next, self.comp, &mut net.sched);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Kind, Scheduler};
    use crate::link::{Limit, LinkDir, LinkDirSpec, LossModel, QueueSpec};
    use crate::net::RouteInfo;
    use crate::rng::{LazyStream, Purpose};
    use pathweave_cc::cc::multipath::{Algorithm, MultipathConfig, WindowConfig};
    use pathweave_cc::Bandwidth;

    const MTU: u32 = 1012;

    fn ms(x: u64) -> Instant {
        Instant(x * 1_000_000)
    }

    /// A sender on one path of a fast link, uncoupled Reno with a 10-packet window, and its
    /// network (the packets are never delivered: the tests acknowledge by hand).
    fn setup() -> (QuicSender, Wire, Net) {
        let links = (0..2)
            .map(|i| {
                let spec = LinkDirSpec {
                    rate: Bandwidth::from_bps(1_000_000_000),
                    trace: None,
                    delay: Duration::from_millis(1),
                    queue: QueueSpec::DropTail(Limit::Packets(1000)),
                    loss: LossModel::None,
                    jitter: Duration::ZERO,
                };
                LinkDir::new(
                    &spec,
                    ComponentId::new(Kind::Link, i),
                    LazyStream::new(1, Purpose::Link, i),
                )
            })
            .collect();
        let info = |kind, overhead| RouteInfo {
            flow: 0,
            kind,
            sub: 0,
            overhead,
        };
        let net = Net::new(
            Scheduler::new(),
            links,
            &[vec![0], vec![1]],
            &[
                info(PacketKind::Data, DATA_WIRE_OVERHEAD),
                info(PacketKind::Ack, 0),
            ],
            1,
        );
        let cc = MultipathConfig::new(
            Algorithm::Uncoupled,
            Bytes(MTU as u64),
            WindowConfig::default().initial_window(10),
        )
        .build()
        .expect("uncoupled Reno builds");
        let plan = SubflowPlan {
            route: 0,
            ack_route: 1,
            join: Instant::ZERO,
            leave: None,
            first_rtt: None,
        };
        let mut s = QuicSender::new(
            0,
            ComponentId::new(Kind::Sender, 0),
            QuicSettings {
                max_udp_payload: MTU,
                max_ack_delay: Duration::from_millis(25),
            },
            Application {
                traffic: Traffic::Bulk,
                start: Instant::ZERO,
                stop: None,
            },
            cc,
            &[plan],
            Stream::new(1, Purpose::Flow, 0),
        );
        s.started = true;
        s.stream.limit = u64::MAX;
        s.path_timers(0, Instant::ZERO);
        (s, Wire::new(1), net)
    }

    fn send(s: &mut QuicSender, w: &mut Wire, net: &mut Net, at: Instant, n: usize) {
        net.now = at;
        for _ in 0..n {
            s.send_packet(0, w, net);
        }
    }

    /// A PATH_ACK of path 0 for the half-open packet ranges `ranges`, arriving at `at`.
    fn ack(s: &mut QuicSender, at: Instant, ranges: &[(u64, u64)]) {
        let words: Vec<u64> = ranges.iter().flat_map(|&(lo, hi)| [lo, hi]).collect();
        let largest = ranges.iter().map(|r| r.1 - 1).max().unwrap_or(0);
        s.on_path_ack(0, largest, Duration::ZERO, words.iter(), at);
    }

    /// What became of packet `pn`, which carried chunk `pn` (the tests send no data twice):
    /// a packet trimmed from the record was lost if its chunk waits to go out again.
    fn fate(s: &QuicSender, pn: u64) -> Fate {
        let p = &s.paths[0];
        match pn.checked_sub(p.base_pn) {
            Some(k) if (k as usize) < p.sent.len() => p.sent[k as usize].fate,
            _ => match pn.checked_sub(s.stream.una) {
                Some(k) if s.stream.marks.get(k as usize) == Some(&QUEUED) => Fate::Lost,
                _ => Fate::Acked,
            },
        }
    }

    /// RFC 9002 §6.1.1: a packet is lost once a packet three numbers above it is
    /// acknowledged; one round trip later a packet sent after the reduction ends the
    /// recovery period (§7.3.2), and ACKs of packets sent before it do not grow the window.
    #[test]
    fn packet_threshold_declares_loss_and_reduces_once() {
        let (mut s, mut w, mut net) = setup();
        send(&mut s, &mut w, &mut net, ms(0), 6);
        ack(&mut s, ms(10), &[(1, 4)]);
        // largest 3 = 0 + 3: packet 0 is lost; 4 and 5 are above the largest.
        assert_eq!(fate(&s, 0), Fate::Lost);
        assert_eq!(s.paths[0].stats.loss_events, 1);
        assert_eq!(s.paths[0].recovery_start, Some(ms(10)));
        // Slow start added 2 MSS (RFC 3465 cap) to 10, then the loss halved 12: 6 MSS.
        let w1 = s.cc.window(PathId(0));
        assert_eq!(w1, 6 * MTU as u64);
        // Its chunk goes out again first, in a new packet.
        assert_eq!(s.stream.take(), Some((0, true)));
        ack(&mut s, ms(11), &[(1, 6)]);
        assert_eq!(s.cc.window(PathId(0)), w1, "grew during recovery");
        assert!(s.paths[0].in_recovery);
        send(&mut s, &mut w, &mut net, ms(12), 1);
        ack(&mut s, ms(22), &[(1, 7)]);
        assert!(!s.paths[0].in_recovery);
        assert_eq!(s.paths[0].stats.loss_events, 1);
    }

    /// RFC 9002 §6.1.2: a packet below the largest acknowledged but within the packet
    /// threshold is lost 9/8 of an RTT after it was sent, when the loss timer fires.
    #[test]
    fn time_threshold_declares_loss_when_the_timer_fires() {
        let (mut s, mut w, mut net) = setup();
        send(&mut s, &mut w, &mut net, ms(0), 2);
        ack(&mut s, ms(100), &[(1, 2)]);
        assert_eq!(fate(&s, 0), Fate::InFlight);
        // srtt = latest = 100 ms: loss delay 112.5 ms from the packet's sending.
        let t = Instant(112_500_000);
        assert_eq!(s.paths[0].timer_at, Some(t));
        s.path_timers(0, Instant(112_499_999));
        assert_eq!(fate(&s, 0), Fate::InFlight);
        s.path_timers(0, t);
        assert_eq!(fate(&s, 0), Fate::Lost);
        assert_eq!(s.paths[0].stats.loss_events, 1);
    }

    /// RFC 9002 §6.2: with no ACK the PTO fires at srtt + 4·rttvar + max_ack_delay after
    /// the last packet (333 + 666 + 25 ms before any sample), sends two probes, doubles,
    /// and leaves the window alone.
    #[test]
    fn pto_fires_doubles_and_is_no_congestion_signal() {
        let (mut s, mut w, mut net) = setup();
        let before = s.cc.window(PathId(0));
        send(&mut s, &mut w, &mut net, ms(0), 1);
        assert_eq!(s.paths[0].timer_at, Some(ms(1024)));
        s.path_timers(0, ms(1024));
        let p = &s.paths[0];
        assert_eq!((p.stats.timeouts, p.loss_probes, p.pto_count), (1, 2, 1));
        assert_eq!(p.timer_at, Some(ms(2048)));
        assert_eq!(s.cc.window(PathId(0)), before);
        // The probes bypass the window: with the window full they still go out.
        s.paths[0].in_flight = before;
        net.now = ms(1024);
        s.schedule(&mut w, &mut net);
        assert_eq!((s.paths[0].loss_probes, s.paths[0].next_pn), (1, 2));
        // The second waits for the pacer (quinn paces probes too).
        net.now = s.paths[0].pace_at.expect("paced");
        s.schedule(&mut w, &mut net);
        assert_eq!((s.paths[0].loss_probes, s.paths[0].next_pn), (0, 3));
    }

    /// RFC 9002 §7.6: ack-eliciting packets sent after the first RTT sample and lost over
    /// more than (srtt + 4·rttvar + max_ack_delay)·3 with none acknowledged between them are
    /// persistent congestion: the controller's timeout collapses the window to one packet.
    #[test]
    fn persistent_congestion_collapses_the_window() {
        let (mut s, mut w, mut net) = setup();
        send(&mut s, &mut w, &mut net, ms(0), 1);
        // srtt 100 ms, rttvar 50; the loss ACK's sample of 100 ms makes rttvar 37.5 ms, so
        // the period is (100 + 150 + 25)·3 = 825 ms.
        ack(&mut s, ms(100), &[(0, 1)]);
        send(&mut s, &mut w, &mut net, ms(150), 1); // pn 1: not after the first sample
        send(&mut s, &mut w, &mut net, ms(200), 1); // pn 2
        send(&mut s, &mut w, &mut net, ms(1300), 4); // pn 3..6
        ack(&mut s, ms(1400), &[(6, 7)]);
        for pn in 1..=3 {
            assert_eq!(fate(&s, pn), Fate::Lost, "packet {pn}");
        }
        assert_eq!(s.cc.window(PathId(0)), MTU as u64);
        // Packets 800 ms apart, less than the 825 ms period: no persistent congestion.
        let (mut s, mut w, mut net) = setup();
        send(&mut s, &mut w, &mut net, ms(0), 1);
        ack(&mut s, ms(100), &[(0, 1)]);
        send(&mut s, &mut w, &mut net, ms(150), 1);
        send(&mut s, &mut w, &mut net, ms(200), 1);
        send(&mut s, &mut w, &mut net, ms(1000), 4);
        ack(&mut s, ms(1100), &[(6, 7)]);
        assert_eq!(fate(&s, 3), Fate::Lost);
        assert!(
            s.cc.window(PathId(0)) > MTU as u64,
            "800 ms < 825 ms is no persistence"
        );
    }
}
