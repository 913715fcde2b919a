//! TCP endpoints: a sender with slow start and congestion avoidance through a
//! [`Controller`], fast retransmit, NewReno fast recovery (RFC 6582) or SACK-based loss
//! recovery (RFC 6675), and a retransmission timer per RFC 6298 with backoff and Karn's rule;
//! and a receiver with cumulative ACKs, SACK blocks (RFC 2018) and optional delayed ACKs.
//!
//! Sequence numbers count segments, not bytes: every segment carries `mss` payload bytes
//! except the last one of a sized transfer. The sender's scoreboard holds one record per
//! outstanding segment, `snd_una..snd_max`.

use crate::event::{ComponentId, Timer};
use crate::net::Net;
use crate::packet::{Packet, PacketKind, MAX_SACK_BLOCKS};
use crate::rng::Stream;
use pathweave_cc::cc::{
    Ack, AnyController, Cause, CongestionEvent, Controller, PathId, PathView, Rto,
};
use pathweave_cc::rtt::{RtoConfig, RttEstimator};
use pathweave_cc::{Bytes, Duration, Instant};
use std::collections::VecDeque;

/// Loss-recovery algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// NewReno fast recovery with window inflation (RFC 6582).
    NewReno,
    /// Conservative SACK-based recovery with the pipe estimate (RFC 6675).
    Sack,
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

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    sent: Instant,
    retx: bool,
    sacked: bool,
    lost: bool,
    rec_retx: bool,
}

/// Counters of a TCP sender.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    /// Data segments transmitted, retransmissions included.
    pub segments_sent: u64,
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Loss events: entries into fast recovery plus first timeouts.
    pub loss_events: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// When a sized transfer was fully acknowledged.
    pub completed_at: Option<Instant>,
    /// ∫ cwnd dt in byte-seconds, while active.
    pub cwnd_integral: f64,
    /// ∫ srtt dt in seconds², while active and once an RTT is known.
    pub srtt_integral: f64,
    /// Seconds over which `srtt_integral` was taken.
    pub srtt_time: f64,
    /// Seconds over which `cwnd_integral` was taken.
    pub active_time: f64,
}

/// The sending side of a TCP flow.
pub struct TcpSender {
    flow: u32,
    comp: ComponentId,
    cfg: TcpConfig,
    traffic: Traffic,
    cc: AnyController,
    rtt: RttEstimator,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    segs: VecDeque<Seg>,
    /// Segments the application has made available: `u64::MAX` when backlogged.
    limit: u64,
    total: Option<u64>,
    last_payload: u32,
    dupacks: u32,
    in_recovery: bool,
    recover: Option<u64>,
    inflation: u64,
    partial_seen: bool,
    high_sacked: u64,
    rto_at: Option<Instant>,
    rto_seq: Option<u64>,
    start: Instant,
    stop: Option<Instant>,
    started: bool,
    stopped: bool,
    toggle_at: Option<Instant>,
    on: bool,
    timer: Timer,
    rng: Stream,
    last_integrated: Instant,
    /// Counters.
    pub stats: SenderStats,
}

impl TcpSender {
    /// A sender for `flow` that becomes active at `start` and stops offering new data at `stop`.
    pub fn new(
        flow: u32,
        comp: ComponentId,
        cfg: TcpConfig,
        traffic: Traffic,
        cc: AnyController,
        window: (Instant, Option<Instant>),
        rng: Stream,
    ) -> Self {
        let (total, last_payload) = match traffic {
            Traffic::Transfer(bytes) => {
                let mss = cfg.mss as u64;
                let n = bytes.div_ceil(mss).max(1);
                (Some(n), (bytes - (n - 1) * mss) as u32)
            }
            _ => (None, cfg.mss),
        };
        TcpSender {
            flow,
            comp,
            cfg,
            traffic,
            cc,
            rtt: RttEstimator::new(cfg.rto),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            segs: VecDeque::new(),
            limit: 0,
            total,
            last_payload,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            inflation: 0,
            partial_seen: false,
            high_sacked: 0,
            rto_at: None,
            rto_seq: None,
            start: window.0,
            stop: window.1,
            started: false,
            stopped: false,
            toggle_at: None,
            on: false,
            timer: Timer::default(),
            rng,
            last_integrated: window.0,
            stats: SenderStats::default(),
        }
    }

    /// Schedule the first wake-up (the start time).
    pub fn init(&mut self, net: &mut Net) {
        self.timer.arm(self.start, self.comp, &mut net.sched);
    }

    /// The controller, for traces.
    pub fn controller(&self) -> &AnyController {
        &self.cc
    }

    /// The RTT estimator, for traces.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Whether the flow has started and not yet finished.
    pub fn active(&self) -> bool {
        self.started && self.stats.completed_at.is_none() && !self.stopped
    }

    /// Whether this sender has started.
    pub fn started(&self) -> bool {
        self.started
    }

    fn payload(&self, seq: u64) -> u32 {
        match self.total {
            Some(n) if seq + 1 == n => self.last_payload,
            _ => self.cfg.mss,
        }
    }

    fn mss(&self) -> u64 {
        self.cfg.mss as u64
    }

    fn view(&self) -> PathView {
        let mut v = PathView::new(PathId(0), Bytes(self.mss()));
        v.srtt = self.rtt.srtt();
        v.min_rtt = self.rtt.min_rtt();
        v.latest_rtt = self.rtt.latest();
        v.in_flight = Bytes((self.snd_nxt - self.snd_una) * self.mss());
        v
    }

    /// Accumulate the time integrals of cwnd and srtt up to `now`.
    pub fn integrate(&mut self, now: Instant) {
        if !self.active() {
            self.last_integrated = now;
            return;
        }
        let dt = now.saturating_since(self.last_integrated).as_secs_f64();
        self.stats.cwnd_integral += self.cc.window().0 as f64 * dt;
        self.stats.active_time += dt;
        if let Some(s) = self.rtt.srtt() {
            self.stats.srtt_integral += s.as_secs_f64() * dt;
            self.stats.srtt_time += dt;
        }
        self.last_integrated = now;
    }

    fn transmit(&mut self, seq: u64, net: &mut Net) {
        let now = net.now;
        let payload = self.payload(seq);
        if seq == self.snd_max {
            self.segs.push_back(Seg {
                sent: now,
                ..Seg::default()
            });
            self.snd_max += 1;
        } else {
            let s = &mut self.segs[(seq - self.snd_una) as usize];
            s.sent = now;
            s.retx = true;
            self.stats.retransmits += 1;
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += payload as u64;
        let mut p = Packet::new(
            self.flow,
            PacketKind::Data,
            payload + self.cfg.header,
            payload,
        );
        p.seq = seq;
        net.send(p);
        // RFC 6298 (5.1): start the timer when data is sent and it is not running.
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    fn has_new_data(&self) -> bool {
        self.snd_max < self.limit && self.total.is_none_or(|n| self.snd_max < n)
    }

    /// Send what the window allows.
    fn try_send(&mut self, net: &mut Net) {
        if self.in_recovery && self.cfg.recovery == Recovery::Sack {
            self.sack_send(net);
            return;
        }
        let wnd = (self.cc.window().0 + self.inflation) / self.mss();
        loop {
            if self.snd_nxt - self.snd_una >= wnd.max(1) {
                break;
            }
            if self.snd_nxt < self.snd_max {
                // Go-back-N after a timeout: resend what was outstanding.
                let seq = self.snd_nxt;
                self.snd_nxt += 1;
                if !self.segs[(seq - self.snd_una) as usize].sacked {
                    self.transmit(seq, net);
                }
                continue;
            }
            if !self.has_new_data() {
                break;
            }
            let seq = self.snd_max;
            self.transmit(seq, net);
            self.snd_nxt = self.snd_max;
        }
        self.arm(net);
    }

    /// RFC 6675 §5: send while `cwnd − pipe ≥ 1 SMSS`, choosing segments by NextSeg().
    fn sack_send(&mut self, net: &mut Net) {
        let mut pipe = self.update_scoreboard();
        let cwnd_segs = self.cc.window().0 / self.mss();
        let mut cursor = 0usize;
        while cwnd_segs > pipe {
            // (1) the lowest segment deemed lost and not yet retransmitted in this recovery.
            while cursor < self.segs.len() {
                let s = &self.segs[cursor];
                if s.lost && !s.rec_retx && !s.sacked {
                    break;
                }
                cursor += 1;
            }
            if cursor < self.segs.len() {
                self.segs[cursor].rec_retx = true;
                let seq = self.snd_una + cursor as u64;
                self.transmit(seq, net);
                pipe += 1;
                continue;
            }
            // (2) new data.
            if self.has_new_data() {
                let seq = self.snd_max;
                self.transmit(seq, net);
                self.snd_nxt = self.snd_max;
                pipe += 1;
                continue;
            }
            // (3) a hole below the highest SACKed segment not yet retransmitted.
            let rescue = (0..self.segs.len()).find(|&i| {
                let s = &self.segs[i];
                !s.sacked && !s.rec_retx && self.snd_una + (i as u64) < self.high_sacked
            });
            match rescue {
                Some(i) => {
                    self.segs[i].rec_retx = true;
                    self.transmit(self.snd_una + i as u64, net);
                    pipe += 1;
                }
                None => break,
            }
        }
        self.arm(net);
    }

    /// Mark segments lost per RFC 6675 IsLost() and return the pipe estimate (segments).
    fn update_scoreboard(&mut self) -> u64 {
        let thresh = self.cfg.dupthresh as u64;
        let mut above = 0u64;
        let mut pipe = 0u64;
        for s in self.segs.iter_mut().rev() {
            if s.sacked {
                above += 1;
                continue;
            }
            s.lost = above >= thresh;
            if !s.lost {
                pipe += 1;
            }
            if s.rec_retx {
                pipe += 1;
            }
        }
        pipe
    }

    fn enter_recovery(&mut self, net: &mut Net) {
        let now = net.now;
        self.in_recovery = true;
        self.recover = Some(self.snd_max - 1);
        self.partial_seen = false;
        self.stats.loss_events += 1;
        let v = self.view();
        self.cc.on_congestion_event(
            &CongestionEvent {
                now,
                cause: Cause::Loss,
            },
            &v,
        );
        match self.cfg.recovery {
            Recovery::NewReno => {
                // RFC 6582 §3.2 step 2–3: retransmit, inflate by the three duplicates.
                self.inflation = 3 * self.mss();
                self.transmit(self.snd_una, net);
                self.try_send(net);
            }
            Recovery::Sack => {
                for s in self.segs.iter_mut() {
                    s.rec_retx = false;
                }
                // RFC 6675 §5 step 4.3: the first segment presumed lost goes out at once.
                self.update_scoreboard();
                if let Some(s) = self.segs.front_mut() {
                    s.lost = true;
                    s.rec_retx = true;
                }
                self.transmit(self.snd_una, net);
                self.sack_send(net);
            }
        }
    }

    fn apply_sack(&mut self, p: &Packet) {
        for &(s, e) in &p.sack[..p.nsack as usize] {
            let lo = s.max(self.snd_una);
            let hi = e.min(self.snd_max);
            for seq in lo..hi {
                self.segs[(seq - self.snd_una) as usize].sacked = true;
            }
            if hi > lo {
                self.high_sacked = self.high_sacked.max(hi);
            }
        }
    }

    /// An ACK arrived.
    pub fn on_ack(&mut self, p: &Packet, net: &mut Net) {
        let now = net.now;
        self.integrate(now);
        let ack = p.ack.min(self.snd_max);
        if self.cfg.recovery == Recovery::Sack {
            self.apply_sack(p);
        }
        if ack > self.snd_una {
            let newly = ack - self.snd_una;
            let last = self.segs[(newly - 1) as usize];
            // Karn: only a segment sent once gives an unambiguous sample.
            let sample = (!last.retx).then(|| now.saturating_since(last.sent));
            if let Some(r) = sample {
                self.rtt.on_sample(r);
            }
            let bytes: u64 = (self.snd_una..ack).map(|s| self.payload(s) as u64).sum();
            self.segs.drain(..newly as usize);
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.dupacks = 0;
            self.stats.bytes_acked += bytes;
            let ackev = Ack {
                now,
                bytes_acked: Bytes(bytes),
                rtt: sample,
                in_recovery: self.in_recovery,
            };
            if self.in_recovery {
                let v = self.view();
                self.cc.on_ack(&ackev, &v);
                if self.recover.is_some_and(|r| ack > r) {
                    // Full ACK: recovery ends, the window deflates to ssthresh (RFC 6582 step 3).
                    self.in_recovery = false;
                    self.inflation = 0;
                    let v = self.view();
                    self.cc.on_recovery_end(now, &v);
                    self.rto_at = Some(now + self.rtt.rto());
                } else if self.cfg.recovery == Recovery::NewReno {
                    // Partial ACK: retransmit the next hole, deflate by the amount acknowledged
                    // and add back one segment; reset the timer on the first one only.
                    self.inflation = self.inflation.saturating_sub(bytes) + self.mss();
                    self.transmit(self.snd_una, net);
                    if !self.partial_seen {
                        self.partial_seen = true;
                        self.rto_at = Some(now + self.rtt.rto());
                    }
                } else {
                    self.rto_at = Some(now + self.rtt.rto());
                }
            } else {
                let v = self.view();
                self.cc.on_ack(&ackev, &v);
                // RFC 6298 (5.3): new data acknowledged restarts the timer.
                self.rto_at = Some(now + self.rtt.rto());
            }
            if self.snd_una == self.snd_max {
                self.rto_at = None; // (5.2)
            }
            if self.total.is_some_and(|n| self.snd_una >= n) && self.stats.completed_at.is_none() {
                self.stats.completed_at = Some(now);
                self.rto_at = None;
            }
            self.try_send(net);
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            self.dupacks += 1;
            if self.in_recovery {
                if self.cfg.recovery == Recovery::NewReno {
                    self.inflation += self.mss();
                }
                self.try_send(net);
            } else {
                let lost_head = self.cfg.recovery == Recovery::Sack && {
                    self.update_scoreboard();
                    self.segs.front().is_some_and(|s| s.lost)
                };
                if (self.dupacks >= self.cfg.dupthresh || lost_head)
                    // RFC 6582 §3.2 step 1: only if the ACK covers more than `recover`.
                    && self.recover.is_none_or(|r| self.snd_una > r)
                {
                    self.enter_recovery(net);
                } else {
                    self.arm(net);
                }
            }
        }
    }

    fn on_rto(&mut self, net: &mut Net) {
        let now = net.now;
        self.rto_at = None;
        if self.snd_una == self.snd_max {
            return;
        }
        let repeated = self.rto_seq == Some(self.snd_una);
        self.stats.timeouts += 1;
        if !repeated {
            self.stats.loss_events += 1;
        }
        let v = self.view();
        self.cc.on_rto(&Rto { now, repeated }, &v);
        self.rtt.back_off();
        self.rto_seq = Some(self.snd_una);
        self.in_recovery = false;
        self.inflation = 0;
        self.dupacks = 0;
        self.recover = Some(self.snd_max - 1);
        self.high_sacked = 0;
        for s in self.segs.iter_mut() {
            s.sacked = false;
            s.lost = false;
            s.rec_retx = false;
        }
        // (5.4) retransmit the earliest unacknowledged segment; go back N from there.
        self.snd_nxt = self.snd_una + 1;
        self.transmit(self.snd_una, net);
        self.rto_at = Some(now + self.rtt.rto()); // (5.5)–(5.6)
        self.try_send(net);
    }

    fn period(&mut self, p: Period) -> Duration {
        if p.exponential {
            Duration::from_secs_f64(self.rng.exponential(p.mean.as_secs_f64()))
        } else {
            p.mean
        }
    }

    /// The sender's timer fired.
    pub fn on_timer(&mut self, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        self.integrate(now);
        if !self.started && now >= self.start {
            self.started = true;
            self.last_integrated = now;
            self.limit = u64::MAX;
            if let Traffic::OnOff { on, .. } = self.traffic {
                self.on = true;
                self.toggle_at = Some(now + self.period(on));
            }
            self.try_send(net);
        }
        if self.stop.is_some_and(|t| now >= t) && !self.stopped {
            self.stopped = true;
            self.limit = self.snd_max;
            self.toggle_at = None;
        }
        if let (Some(t), Traffic::OnOff { on, off }) = (self.toggle_at, self.traffic) {
            if now >= t {
                self.on = !self.on;
                if self.on {
                    self.limit = u64::MAX;
                    self.toggle_at = Some(now + self.period(on));
                    self.try_send(net);
                } else {
                    self.limit = self.snd_max;
                    self.toggle_at = Some(now + self.period(off));
                }
            }
        }
        if self.rto_at.is_some_and(|t| now >= t) {
            self.on_rto(net);
        }
        self.arm(net);
    }

    fn arm(&mut self, net: &mut Net) {
        let next = [
            (!self.started).then_some(self.start),
            self.stop.filter(|_| self.started && !self.stopped),
            self.toggle_at,
            self.rto_at,
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(t) = next {
            self.timer.arm(t, self.comp, &mut net.sched);
        }
    }

    /// Data segments this flow has in links or queues right now (for conservation checks).
    pub fn outstanding(&self) -> u64 {
        self.snd_max - self.snd_una
    }
}

/// Counters of a TCP receiver.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverStats {
    /// Data segments received, duplicates included.
    pub segments: u64,
    /// Payload bytes received, duplicates included.
    pub bytes: u64,
    /// Payload bytes delivered in order to the application.
    pub delivered: u64,
    /// ACKs sent.
    pub acks_sent: u64,
}

/// The receiving side of a TCP flow.
pub struct TcpReceiver {
    flow: u32,
    comp: ComponentId,
    rcv_nxt: u64,
    /// Payload of segment `rcv_nxt + k` if held out of order, else 0.
    ooo: VecDeque<u32>,
    ooo_held: u32,
    last_seq: u64,
    sack: bool,
    delayed_ack: Option<Duration>,
    ack_size: u32,
    unacked: u32,
    delack_at: Option<Instant>,
    timer: Timer,
    /// Counters.
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    /// A receiver for `flow`.
    pub fn new(flow: u32, comp: ComponentId, cfg: &TcpConfig) -> Self {
        TcpReceiver {
            flow,
            comp,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            ooo_held: 0,
            last_seq: 0,
            sack: cfg.recovery == Recovery::Sack,
            delayed_ack: cfg.delayed_ack,
            ack_size: cfg.ack_size,
            unacked: 0,
            delack_at: None,
            timer: Timer::default(),
            stats: ReceiverStats::default(),
        }
    }

    /// A data segment arrived.
    pub fn on_data(&mut self, p: &Packet, net: &mut Net) {
        self.stats.segments += 1;
        self.stats.bytes += p.payload as u64;
        let seq = p.seq;
        self.last_seq = seq;
        let immediate = if seq < self.rcv_nxt {
            true // a duplicate: tell the sender at once
        } else if seq == self.rcv_nxt {
            let had_gap = self.ooo_held > 0;
            self.stats.delivered += p.payload as u64;
            self.rcv_nxt += 1;
            self.ooo.pop_front();
            while let Some(&held) = self.ooo.front() {
                if held == 0 {
                    break;
                }
                self.stats.delivered += held as u64;
                self.ooo_held -= 1;
                self.rcv_nxt += 1;
                self.ooo.pop_front();
            }
            if self.ooo_held == 0 {
                self.ooo.clear();
            }
            // RFC 5681 §4.2: acknowledge at once a segment that fills a gap.
            had_gap
        } else {
            let k = (seq - self.rcv_nxt) as usize;
            if self.ooo.len() <= k {
                self.ooo.resize(k + 1, 0);
            }
            if self.ooo[k] == 0 {
                self.ooo[k] = p.payload;
                self.ooo_held += 1;
            }
            true // out of order: a duplicate ACK at once
        };
        match self.delayed_ack {
            Some(d) if !immediate => {
                self.unacked += 1;
                // RFC 5681 §4.2: at least every second full-sized segment.
                if self.unacked >= 2 {
                    self.send_ack(net);
                } else {
                    let t = net.now + d;
                    self.delack_at = Some(t);
                    self.timer.arm(t, self.comp, &mut net.sched);
                }
            }
            _ => self.send_ack(net),
        }
    }

    fn send_ack(&mut self, net: &mut Net) {
        self.unacked = 0;
        self.delack_at = None;
        self.stats.acks_sent += 1;
        let mut p = Packet::new(self.flow, PacketKind::Ack, self.ack_size, 0);
        p.ack = self.rcv_nxt;
        if self.sack && self.ooo_held > 0 {
            self.fill_sack(&mut p);
        }
        net.send(p);
    }

    /// RFC 2018 §4: the first block holds the most recently received segment; the others
    /// follow in ascending order.
    fn fill_sack(&self, p: &mut Packet) {
        let mut blocks = [(0u64, 0u64); 8];
        let mut n = 0;
        let mut first = None;
        let mut k = 0;
        while k < self.ooo.len() {
            if self.ooo[k] == 0 {
                k += 1;
                continue;
            }
            let s = k;
            while k < self.ooo.len() && self.ooo[k] != 0 {
                k += 1;
            }
            let b = (self.rcv_nxt + s as u64, self.rcv_nxt + k as u64);
            if b.0 <= self.last_seq && self.last_seq < b.1 {
                first = Some(b);
            } else if n < blocks.len() {
                blocks[n] = b;
                n += 1;
            }
        }
        let mut out = 0;
        if let Some(b) = first {
            p.sack[0] = b;
            out = 1;
        }
        for &b in &blocks[..n] {
            if out == MAX_SACK_BLOCKS {
                break;
            }
            p.sack[out] = b;
            out += 1;
        }
        p.nsack = out as u8;
    }

    /// The delayed-ACK timer fired.
    pub fn on_timer(&mut self, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        match self.delack_at {
            Some(t) if t <= now => self.send_ack(net),
            Some(t) => self.timer.arm(t, self.comp, &mut net.sched),
            None => {}
        }
    }
}
