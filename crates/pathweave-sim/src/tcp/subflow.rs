//! One subflow's sender: its sequence space and scoreboard, loss detection and recovery
//! (Reno, RFC 5681; NewReno, RFC 6582; or SACK, RFC 6675) and its retransmission timer
//! (RFC 6298, with exponential backoff and Karn's rule), with proportional rate reduction
//! (RFC 6937) in SACK recovery if asked. The window comes from the connection's controller,
//! new data from the connection's data sequence.
//!
//! Invariants: `snd_una ≤ snd_nxt ≤ snd_max`; `segs` holds exactly the segments
//! `snd_una..snd_max`; the controller hears of each recovery episode once, at its start and at
//! its end, and of each timeout.

use super::{Control as Cc, DataSource, Recovery, Source, SubflowPlan, TcpConfig};
use crate::net::Net;
use crate::packet::{Packet, PacketKind};
use pathweave_cc::cc::multipath::{MultipathController, Paths};
use pathweave_cc::cc::{Ack, Cause, CongestionEvent, PathId, PathView, Rto};
use pathweave_cc::rtt::{RtoRule, RttEstimator};
use pathweave_cc::{Bytes, Duration, Instant};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    sent: Instant,
    dsn: u64,
    payload: u32,
    retx: bool,
    sacked: bool,
    lost: bool,
    rec_retx: bool,
}

/// Counters of one subflow. What a sample reads comes first, then the counters every data
/// segment moves, so that each group shares a cache line (`#[repr(C)]` keeps the order).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct SubflowStats {
    /// Payload bytes cumulatively acknowledged on this subflow.
    pub bytes_acked: u64,
    /// ∫ cwnd dt in byte-seconds, while the connection is active and the subflow joined.
    pub cwnd_integral: f64,
    /// Seconds over which `cwnd_integral` was taken.
    pub active_time: f64,
    /// ∫ srtt dt in seconds², once an RTT is known.
    pub srtt_integral: f64,
    /// Seconds over which `srtt_integral` was taken.
    pub srtt_time: f64,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Active,
    Left,
}

/// The settings of [`TcpConfig`] a subflow reads as it sends and takes ACKs, kept beside its
/// sequence state rather than the whole configuration.
#[derive(Clone, Copy, Debug)]
struct Settings {
    mss: u32,
    header: u32,
    flow: u32,
    recovery: Recovery,
    limited_transmit: bool,
    prr: bool,
    keep_sack_on_rto: bool,
}

/// What a subflow keeps of its [`SubflowPlan`].
#[derive(Clone, Copy, Debug)]
struct Schedule {
    route: u32,
    join: Instant,
    leave: Option<Instant>,
}

/// One subflow's sending side.
///
/// Laid out in cache lines (`#[repr(C, align(64))]`, checked by `layout` below) for runs with
/// many flows, where a flow's state is out of cache whenever one of its packets comes: the
/// sequence state, the scoreboard and the window inflation; the state, the integrals and the
/// counters a sample reads (a sample reads this line only); the other counters and the
/// settings; the timer, the route and deadlines; the RTT estimator; then what only losses and
/// SACK recovery touch.
#[repr(C, align(64))]
pub struct Subflow {
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    segs: VecDeque<Seg>,
    inflation: u64,
    last_integrated: Instant,
    /// The smoothed RTT in seconds, kept with each sample for the time integral and the
    /// samples; NaN before the first RTT sample.
    srtt_s: f64,
    dupacks: u32,
    state: State,
    in_recovery: bool,
    id: u16,
    /// Counters.
    pub stats: SubflowStats,
    set: Settings,
    dupthresh: u32,
    partial_seen: bool,
    /// [`TcpConfig::cwnd_validation`] (beside the settings, in the padding their line has).
    cwnd_validation: bool,
    rto_at: Option<Instant>,
    plan: Schedule,
    recover: Option<u64>,
    rtt: RttEstimator,
    high_sacked: u64,
    /// Segments deemed lost by the last scoreboard update.
    lost_segs: u64,
    /// PRR's state in the current recovery (RFC 6937).
    prr: Prr,
    /// Segments the last ACK lets PRR send.
    prr_allow: u64,
    /// Segments the ACK being processed newly SACKed.
    newly_sacked: u64,
    rto_seq: Option<u64>,
    /// Congestion-window validation ([`TcpConfig::cwnd_validation`]), Linux's names in
    /// brackets: whether the window was in use during the current window of data
    /// (`is_cwnd_limited`), the largest flight of it otherwise (`max_packets_out`), and the
    /// sequence number that ends it (`cwnd_usage_seq`).
    usage_end: u64,
    max_out: u32,
    window_used: bool,
}

impl Subflow {
    pub(crate) fn new(flow: u32, id: u16, cfg: TcpConfig, plan: SubflowPlan) -> Self {
        // The handshake's round trip, if modelled, is the first sample: it is taken before
        // the subflow may send (the SYN-ACK of an MP_JOIN arrives a round trip before its
        // first data), and nothing reads a waiting subflow's estimator.
        let mut rtt = RttEstimator::new(cfg.rto);
        if let Some(r) = plan.first_rtt {
            rtt.on_sample(r);
        }
        let plan = Schedule {
            route: plan.route,
            join: plan.join,
            leave: plan.leave,
        };
        Subflow {
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            segs: VecDeque::new(),
            inflation: 0,
            last_integrated: plan.join,
            srtt_s: f64::NAN,
            dupacks: 0,
            state: State::Waiting,
            in_recovery: false,
            id,
            stats: SubflowStats::default(),
            set: Settings {
                mss: cfg.mss,
                header: cfg.header,
                flow,
                recovery: cfg.recovery,
                limited_transmit: cfg.limited_transmit,
                // Both work on the SACK scoreboard; the parser lets the linux profile set
                // them whatever the recovery, and they act under SACK recovery only.
                prr: cfg.prr && cfg.recovery == Recovery::Sack,
                keep_sack_on_rto: cfg.keep_sack_on_rto && cfg.recovery == Recovery::Sack,
            },
            dupthresh: cfg.dupthresh,
            partial_seen: false,
            cwnd_validation: cfg.cwnd_validation,
            rto_at: None,
            plan,
            recover: None,
            rtt,
            high_sacked: 0,
            lost_segs: 0,
            prr: Prr::default(),
            prr_allow: 0,
            newly_sacked: 0,
            rto_seq: None,
            usage_end: 0,
            max_out: 0,
            window_used: false,
        }
    }

    fn pid(&self) -> PathId {
        PathId(self.id as u32)
    }

    fn mss(&self) -> u64 {
        self.set.mss as u64
    }

    /// The RTT estimator, for traces.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The smoothed RTT.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// The smoothed RTT in seconds, NaN before the first sample: the same value as
    /// [`Subflow::srtt`] converted, read from the line a sample reads anyway.
    pub fn srtt_secs(&self) -> f64 {
        self.srtt_s
    }

    /// Whether the subflow has joined and not left.
    pub fn is_active(&self) -> bool {
        self.state == State::Active
    }

    /// Segments sent and not yet acknowledged on this subflow.
    pub fn outstanding(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    pub(crate) fn should_join(&self, now: Instant) -> bool {
        self.state == State::Waiting && now >= self.plan.join
    }

    pub(crate) fn should_leave(&self, now: Instant) -> bool {
        self.state == State::Active && self.plan.leave.is_some_and(|t| now >= t)
    }

    pub(crate) fn rto_due(&self, now: Instant) -> bool {
        self.state == State::Active && self.rto_at.is_some_and(|t| now >= t)
    }

    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        match self.state {
            State::Waiting => Some(self.plan.join),
            State::Active => {
                let leave = self.plan.leave;
                match (self.rto_at, leave) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            State::Left => None,
        }
    }

    pub(crate) fn stop_timer(&mut self) {
        self.rto_at = None;
    }

    /// Join the connection: the controller learns of the path.
    pub(crate) fn join(&mut self, now: Instant, cc: &mut Cc, views: &mut [PathView]) {
        self.state = State::Active;
        self.last_integrated = now;
        // A handshake's sample (see `new`) counts from here on.
        self.srtt_s = self.rtt.srtt().map_or(f64::NAN, Duration::as_secs_f64);
        cc.on_path_added(self.pid(), now, Bytes(self.mss()));
        views[self.id as usize].can_send = true;
    }

    /// Leave the connection; returns the DSNs it had not seen acknowledged, for reinjection.
    pub(crate) fn leave(&mut self, cc: &mut Cc, views: &mut [PathView]) -> Vec<u64> {
        self.state = State::Left;
        self.rto_at = None;
        cc.on_path_removed(self.pid());
        views[self.id as usize].can_send = false;
        self.segs
            .iter()
            .filter(|s| !s.sacked)
            .map(|s| s.dsn)
            .collect()
    }

    /// Accumulate the time integrals of cwnd and srtt up to `now`.
    #[inline]
    pub(crate) fn integrate(&mut self, now: Instant, connection_active: bool, cwnd: f64) {
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

    /// Refresh this path's view before a controller call.
    fn refresh(&self, views: &mut [PathView]) {
        let v = &mut views[self.id as usize];
        v.srtt = self.rtt.srtt();
        v.min_rtt = self.rtt.min_rtt();
        v.latest_rtt = self.rtt.latest();
        v.in_flight = Bytes((self.snd_nxt - self.snd_una) * self.mss());
    }

    fn transmit(&mut self, seq: u64, net: &mut Net) {
        let now = net.now;
        if seq == self.snd_max {
            // New segments are pushed by `send_new`.
            return;
        }
        let k = (seq - self.snd_una) as usize;
        let s = &mut self.segs[k];
        s.sent = now;
        s.retx = true;
        let (dsn, payload) = (s.dsn, s.payload);
        self.stats.retransmits += 1;
        self.emit(seq, dsn, payload, net);
    }

    #[inline]
    fn send_new(&mut self, dsn: u64, payload: u32, net: &mut Net) {
        let seq = self.snd_max;
        self.segs.push_back(Seg {
            sent: net.now,
            dsn,
            payload,
            ..Seg::default()
        });
        self.snd_max += 1;
        self.emit(seq, dsn, payload, net);
    }

    fn emit(&mut self, seq: u64, dsn: u64, payload: u32, net: &mut Net) {
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += payload as u64;
        let mut p = Packet::new(
            self.set.flow,
            self.plan.route,
            PacketKind::Data,
            payload + self.set.header,
            payload,
        );
        p.sub = self.id;
        p.seq = seq;
        p.dsn = dsn;
        net.send(&p);
        // RFC 6298 (5.1): start the timer when data is sent and it is not running.
        if self.rto_at.is_none() {
            self.rto_at = Some(net.now + self.rtt.rto());
        }
    }

    /// Send what the window allows, taking at most `max_new` new segments from `data`.
    /// Returns the number of new segments sent.
    #[inline(always)]
    pub(crate) fn send<S: Source>(
        &mut self,
        net: &mut Net,
        cc: &mut Cc,
        views: &mut [PathView],
        data: &mut S,
        max_new: usize,
    ) -> usize {
        if self.state != State::Active {
            return 0;
        }
        if self.in_recovery && self.set.recovery == Recovery::Sack {
            let (sent, full) = self.sack_send(net, cc, data, max_new);
            if self.cwnd_validation {
                self.validate_window(sent, full, data);
            }
            return sent;
        }
        let _ = views;
        let wnd = ((cc.window(self.pid()) + self.inflation) / self.mss()).max(1);
        // RFC 3042 limited transmit: outside recovery the first two duplicate ACKs each let
        // one *new* segment out beyond the window; cwnd is unchanged.
        let limited = if self.set.limited_transmit && !self.in_recovery {
            u64::from(self.dupacks.min(2))
        } else {
            0
        };
        // After a timeout that kept the SACKs (Linux's loss state, until the ACK passes what
        // was outstanding then), SACKed segments below snd_nxt are not in flight.
        let (sent, full) =
            if self.set.keep_sack_on_rto && self.recover.is_some_and(|r| self.snd_una <= r) {
                self.send_kept_sacks(net, data, (wnd, limited), max_new)
            } else {
                self.send_window::<false, S>(net, data, (wnd, limited), max_new)
            };
        if self.cwnd_validation {
            self.validate_window(sent, full, data);
        }
        sent
    }

    /// Linux's `tcp_cwnd_validate`, after a transmission attempt that sent `sent` new
    /// segments and left the flight at the window (`full`) or not. Linux calls it from
    /// `tcp_write_xmit`, which runs only while data waits to be sent, and only if it sent
    /// something or found the window full. The current window of data ends at the highest
    /// sequence sent when it was last recorded; until the ACK passes it, a window found in use
    /// stays in use, and one not in use records the largest flight.
    #[inline]
    fn validate_window<S: Source>(&mut self, sent: usize, full: bool, data: &S) {
        if sent == 0 && !(full && data.pending()) {
            return;
        }
        let out = (self.snd_max - self.snd_una).min(u32::MAX as u64) as u32;
        if self.snd_una >= self.usage_end || full || (!self.window_used && out > self.max_out) {
            self.window_used = full;
            self.max_out = out;
            self.usage_end = self.snd_max;
        }
    }

    /// Whether the window counts as in use for growth (Linux's `tcp_is_cwnd_limited`): found
    /// in use during the current window of data, or in slow start below twice the largest
    /// flight of it. Always true without [`TcpConfig::cwnd_validation`].
    #[inline]
    fn window_in_use(&self, cc: &Cc) -> bool {
        if !self.cwnd_validation || self.window_used {
            return true;
        }
        let p = self.pid();
        MultipathController::in_slow_start(&cc.cc, p)
            && cc.window(p) / self.mss() < 2 * u64::from(self.max_out)
    }

    /// [`Self::send_window`] in the loss state after a timeout that kept the SACKs, out of
    /// line so that the common path carries none of its accounting.
    #[cold]
    fn send_kept_sacks<S: Source>(
        &mut self,
        net: &mut Net,
        data: &mut S,
        window: (u64, u64),
        max_new: usize,
    ) -> (usize, bool) {
        self.send_window::<true, S>(net, data, window, max_new)
    }

    /// Send within `window` = (segments, extra segments limited transmit allows for new
    /// data): first go back over what a timeout left outstanding, skipping what the receiver
    /// SACKed, then new data, at most `max_new` segments. With `KEEP_SACKS` the SACKed
    /// segments below snd_nxt do not count as in flight. Returns the new segments sent and
    /// whether the flight was left at the window.
    #[inline(always)]
    fn send_window<const KEEP_SACKS: bool, S: Source>(
        &mut self,
        net: &mut Net,
        data: &mut S,
        window: (u64, u64),
        max_new: usize,
    ) -> (usize, bool) {
        let (wnd, limited) = window;
        let mut sacked_below = if KEEP_SACKS {
            let upto = (self.snd_nxt - self.snd_una) as usize;
            self.segs.iter().take(upto).filter(|s| s.sacked).count() as u64
        } else {
            0
        };
        let mut sent_new = 0;
        let full = loop {
            let extra = if self.snd_nxt >= self.snd_max {
                limited
            } else {
                0
            };
            if self.snd_nxt - self.snd_una - sacked_below >= wnd + extra {
                break true;
            }
            if self.snd_nxt < self.snd_max {
                // Go-back-N after a timeout: resend what was outstanding.
                let seq = self.snd_nxt;
                self.snd_nxt += 1;
                if !self.segs[(seq - self.snd_una) as usize].sacked {
                    self.transmit(seq, net);
                } else if KEEP_SACKS {
                    sacked_below += 1;
                }
                continue;
            }
            if sent_new >= max_new {
                break false;
            }
            let Some(dsn) = data.take() else {
                break false;
            };
            self.send_new(dsn, data.payload(dsn), net);
            self.snd_nxt = self.snd_max;
            sent_new += 1;
        };
        (sent_new, full)
    }

    /// Linux restarts the retransmission timer whenever it retransmits the first
    /// unacknowledged segment (`tcp_xmit_retransmit_queue`), so a fast retransmission has a
    /// full RTO to be acknowledged; RFC 6298 restarts it only on ACKs of new data (5.3).
    fn restart_timer_on_head_retransmission(&mut self, now: Instant) {
        if self.rtt.rule() == RtoRule::Linux {
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    /// RFC 6675 §5: send while `cwnd − pipe ≥ 1 SMSS`, choosing segments by NextSeg().
    /// Returns the new segments sent and whether the window (or PRR's allowance) ran out.
    fn sack_send<S: Source>(
        &mut self,
        net: &mut Net,
        cc: &mut Cc,
        data: &mut S,
        max_new: usize,
    ) -> (usize, bool) {
        let mut pipe = self.update_scoreboard();
        let cwnd_segs = cc.window(self.pid()) / self.mss();
        let prr = self.set.prr;
        let mut cursor = 0usize;
        let mut sent_new = 0;
        // RFC 6675 §5 sends while cwnd − pipe ≥ 1 SMSS; PRR sends what the last ACK allowed.
        while if prr {
            self.prr_allow > 0
        } else {
            cwnd_segs > pipe
        } {
            if prr {
                self.prr_allow -= 1;
                self.prr.out += 1;
            }
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
            if sent_new < max_new {
                if let Some(dsn) = data.take() {
                    self.send_new(dsn, data.payload(dsn), net);
                    self.snd_nxt = self.snd_max;
                    sent_new += 1;
                    pipe += 1;
                    continue;
                }
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
                None => {
                    if prr {
                        // Nothing went out: the allowance stays for a later call.
                        self.prr_allow += 1;
                        self.prr.out -= 1;
                    }
                    return (sent_new, false);
                }
            }
        }
        (sent_new, true)
    }

    /// Mark segments lost per RFC 6675 IsLost() and return the pipe estimate (segments).
    fn update_scoreboard(&mut self) -> u64 {
        let thresh = self.dupthresh as u64;
        let mut above = 0u64;
        let mut pipe = 0u64;
        let mut lost = 0u64;
        for s in self.segs.iter_mut().rev() {
            if s.sacked {
                above += 1;
                continue;
            }
            s.lost = above >= thresh;
            if !s.lost {
                pipe += 1;
            } else {
                lost += 1;
            }
            if s.rec_retx {
                pipe += 1;
            }
        }
        self.lost_segs = lost;
        pipe
    }

    /// What this ACK lets the subflow send under PRR ([`prr_sndcnt`]), from the data it
    /// reports delivered (`delivered` segments, cumulatively acknowledged or newly SACKed).
    fn prr_step(&mut self, delivered: u64, una_advanced: bool, cc: &Cc) {
        let lost_before = self.lost_segs;
        self.prr.delivered += delivered;
        let pipe = self.update_scoreboard();
        // A safe ACK advances snd_una and shows no further loss.
        let safe = una_advanced && self.lost_segs <= lost_before;
        let sndcnt = prr_sndcnt(
            self.prr,
            cc.window(self.pid()) / self.mss(),
            pipe,
            delivered,
            safe,
        );
        // The fast retransmit goes out whatever the arithmetic says.
        self.prr_allow = if self.prr.out == 0 {
            sndcnt.max(1)
        } else {
            sndcnt
        };
    }

    fn enter_recovery(
        &mut self,
        net: &mut Net,
        cc: &mut Cc,
        views: &mut [PathView],
        data: &mut DataSource,
    ) {
        let now = net.now;
        trim(&mut self.segs);
        self.in_recovery = true;
        self.recover = Some(self.snd_max - 1);
        self.partial_seen = false;
        self.stats.loss_events += 1;
        self.refresh(views);
        cc.on_congestion_event(
            self.pid(),
            &CongestionEvent {
                now,
                cause: Cause::Loss,
            },
            &Paths(views),
        );
        match self.set.recovery {
            Recovery::Reno | Recovery::NewReno => {
                // RFC 5681 §3.2 steps 2–4, RFC 6582 §3.2 steps 2–3: retransmit, inflate by the
                // three duplicates.
                self.inflation = 3 * self.mss();
                self.transmit(self.snd_una, net);
                self.restart_timer_on_head_retransmission(now);
            }
            Recovery::Sack => {
                for s in self.segs.iter_mut() {
                    s.rec_retx = false;
                }
                // RFC 6675 §5 step 4.3: the first segment presumed lost goes out at once.
                self.update_scoreboard();
                if self.set.prr {
                    // RFC 6937 §3, on entering recovery; this ACK's SACKs count as delivered.
                    self.prr = Prr {
                        recover_fs: self.snd_max - self.snd_una,
                        delivered: 0,
                        out: 0,
                    };
                    self.prr_step(self.newly_sacked, false, cc);
                    self.prr_allow -= 1;
                    self.prr.out += 1;
                }
                if let Some(s) = self.segs.front_mut() {
                    s.lost = true;
                    s.rec_retx = true;
                }
                self.transmit(self.snd_una, net);
                self.restart_timer_on_head_retransmission(now);
                self.sack_send(net, cc, data, 0);
            }
        }
    }

    fn apply_sack(&mut self, p: &Packet) {
        self.newly_sacked = 0;
        for (s, e) in p.sack_blocks() {
            let lo = s.max(self.snd_una);
            let hi = e.min(self.snd_max);
            for seq in lo..hi {
                let seg = &mut self.segs[(seq - self.snd_una) as usize];
                self.newly_sacked += u64::from(!seg.sacked);
                seg.sacked = true;
            }
            if hi > lo {
                self.high_sacked = self.high_sacked.max(hi);
            }
        }
    }

    /// The oldest unacknowledged segment.
    #[inline(always)]
    pub(crate) fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// An ACK for this subflow arrived.
    pub(crate) fn on_ack(
        &mut self,
        p: &Packet,
        net: &mut Net,
        cc: &mut Cc,
        views: &mut [PathView],
        data: &mut DataSource,
    ) {
        if self.state != State::Active {
            return;
        }
        let now = net.now;
        let ack = p.ack().min(self.snd_max);
        if self.set.recovery == Recovery::Sack {
            self.apply_sack(p);
        }
        if ack > self.snd_una {
            let newly = (ack - self.snd_una) as usize;
            let last = self.segs[newly - 1];
            // Karn: only a segment sent once gives an unambiguous sample.
            let sample = (!last.retx).then(|| now.saturating_since(last.sent));
            if let Some(r) = sample {
                self.rtt.on_sample(r);
                self.srtt_s = self.rtt.srtt().map_or(f64::NAN, Duration::as_secs_f64);
            }
            // PRR counts what this ACK delivered: the newly SACKed and, of the segments it
            // acknowledges cumulatively, those not SACKed before.
            let unsacked = if self.in_recovery && self.set.prr {
                self.segs.iter().take(newly).filter(|s| !s.sacked).count() as u64
            } else {
                0
            };
            let mut bytes = 0u64;
            for _ in 0..newly {
                if let Some(s) = self.segs.pop_front() {
                    bytes += s.payload as u64;
                }
            }
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.dupacks = 0;
            self.stats.bytes_acked += bytes;
            let ackev = Ack {
                now,
                bytes_acked: Bytes(bytes),
                rtt: sample,
                in_recovery: self.in_recovery,
                cwnd_limited: self.window_in_use(cc),
            };
            self.refresh(views);
            cc.on_ack(self.pid(), &ackev, &Paths(views));
            if self.in_recovery {
                let full = self.recover.is_some_and(|r| ack > r);
                if full || self.set.recovery == Recovery::Reno {
                    // Full ACK: recovery ends, the window deflates to ssthresh (RFC 6582 step 3).
                    // Reno ends it on any new ACK (RFC 5681 §3.2 step 6); holes left in the
                    // window then wait for the timer, as the check on `recover` below keeps a
                    // new fast retransmit back until the ACK passes it.
                    self.in_recovery = false;
                    self.inflation = 0;
                    self.refresh(views);
                    cc.on_recovery_end(self.pid(), now, &Paths(views));
                    self.rto_at = Some(now + self.rtt.rto());
                } else if self.set.recovery == Recovery::NewReno {
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
                    if self.set.prr {
                        self.prr_step(unsacked + self.newly_sacked, true, cc);
                    }
                }
            } else {
                // RFC 6298 (5.3): new data acknowledged restarts the timer.
                self.rto_at = Some(now + self.rtt.rto());
            }
            if self.snd_una == self.snd_max {
                self.rto_at = None; // (5.2)
            }
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            self.dupacks += 1;
            if self.in_recovery {
                if self.set.recovery != Recovery::Sack {
                    self.inflation += self.mss();
                } else if self.set.prr {
                    self.prr_step(self.newly_sacked, false, cc);
                }
            } else {
                let lost_head = self.set.recovery == Recovery::Sack && {
                    self.update_scoreboard();
                    self.segs.front().is_some_and(|s| s.lost)
                };
                if (self.dupacks >= self.dupthresh || lost_head)
                    // RFC 6582 §3.2 step 1: only if the ACK covers more than `recover`.
                    && self.recover.is_none_or(|r| self.snd_una > r)
                {
                    self.enter_recovery(net, cc, views, data);
                }
            }
        }
    }

    /// The retransmission timer expired.
    pub(crate) fn on_rto(
        &mut self,
        net: &mut Net,
        cc: &mut Cc,
        views: &mut [PathView],
        data: &mut DataSource,
    ) {
        let now = net.now;
        self.rto_at = None;
        if self.snd_una == self.snd_max {
            return;
        }
        trim(&mut self.segs);
        let repeated = self.rto_seq == Some(self.snd_una);
        self.stats.timeouts += 1;
        if !repeated {
            self.stats.loss_events += 1;
        }
        self.refresh(views);
        cc.on_rto(self.pid(), &Rto { now, repeated }, &Paths(views));
        self.rtt.back_off();
        self.rto_seq = Some(self.snd_una);
        self.in_recovery = false;
        self.inflation = 0;
        self.dupacks = 0;
        self.recover = Some(self.snd_max - 1);
        // RFC 2018 §8: the receiver may have reneged, so forget its SACKs; Linux keeps them
        // (and marks the rest lost) unless it has seen reneging, which this receiver never does.
        let keep = self.set.keep_sack_on_rto;
        if !keep {
            self.high_sacked = 0;
        }
        // Only SACK recovery marks segments SACKed, lost or retransmitted in recovery (from
        // SACK blocks, `update_scoreboard` and `sack_send`): without it every flag here is
        // already clear, and the walk over the outstanding segments is skipped.
        if self.set.recovery == Recovery::Sack {
            for s in self.segs.iter_mut() {
                s.sacked &= keep;
                s.lost = false;
                s.rec_retx = false;
            }
        }
        // (5.4) retransmit the earliest unacknowledged segment; go back N from there.
        self.snd_nxt = self.snd_una + 1;
        self.transmit(self.snd_una, net);
        self.rto_at = Some(now + self.rtt.rto()); // (5.5)–(5.6)
        let _ = data;
    }
}

/// Records a deque keeps room for whatever it held before: below this, spare room is kept.
pub(crate) const TRIM_FLOOR: usize = 64;

/// Give back most of a deque's spare room once it holds less than a quarter of its capacity
/// (and more than [`TRIM_FLOOR`] records would fit): a `VecDeque` keeps the capacity of the
/// most it ever held, so without this a run's memory follows the largest windows and
/// reordering of its past, not its present — at 10,000 flows, slow start's early overshoot
/// held several times the records in use. Called once per loss event, so each shrink (one
/// copy of what is held) is paid for by the window's fall, and the factor-of-four band keeps
/// a window's ordinary sawtooth from shrinking and growing the deque in turn.
pub(crate) fn trim<T>(records: &mut VecDeque<T>) {
    let keep = records.len().max(TRIM_FLOOR);
    if records.capacity() > 4 * keep {
        records.shrink_to(2 * keep);
    }
}

/// PRR's state in one recovery, in segments.
#[derive(Clone, Copy, Debug, Default)]
struct Prr {
    /// The flight size when recovery began.
    recover_fs: u64,
    /// Data delivered to the receiver since (this ACK's included).
    delivered: u64,
    /// Data sent since.
    out: u64,
}

/// Segments an ACK lets out in proportional rate reduction (RFC 6937 §3), given `ssthresh`,
/// the `pipe` after the ACK and the `delivered` data it reported. While pipe is above
/// ssthresh, sending follows the delivered data scaled by ssthresh / RecoverFS, so the flight
/// comes down to ssthresh evenly over the recovery; at or below ssthresh (the slow-start
/// reduction bound, PRR-SSRB) it may climb back towards ssthresh by at most the data
/// delivered, plus one segment on a safe ACK — the rule of RFC 6937's revision
/// (draft-ietf-tcpm-prr-rfc6937bis), which Linux's `tcp_cwnd_reduction` also follows.
fn prr_sndcnt(prr: Prr, ssthresh: u64, pipe: u64, delivered: u64, safe: bool) -> u64 {
    if pipe > ssthresh {
        (prr.delivered * ssthresh)
            .div_ceil(prr.recover_fs.max(1))
            .saturating_sub(prr.out)
    } else {
        let limit = prr.delivered.saturating_sub(prr.out).max(delivered) + u64::from(safe);
        limit.min(ssthresh - pipe)
    }
}

#[cfg(test)]
mod layout {
    use super::{Settings, Subflow, SubflowStats};
    use std::mem::{align_of, offset_of, size_of};

    /// What an ACK or a data segment touches fills the first six lines of an aligned
    /// subflow (the sequence state; the state and the integrals; the counters and settings;
    /// the timer, route and deadlines; the RTT estimator), and a sample reads the second line
    /// only; recovery's state lies beyond.
    #[test]
    fn subflow_fields_sit_in_their_cache_lines() {
        assert_eq!(align_of::<Subflow>(), 64);
        assert_eq!(size_of::<Subflow>(), 448);
        assert_eq!(size_of::<Settings>(), 16);
        let line = |off: usize| off / 64;
        let last = |off: usize, size: usize| line(off + size - 1);
        assert_eq!(line(offset_of!(Subflow, snd_una)), 0);
        assert_eq!(line(offset_of!(Subflow, segs)), 0);
        assert_eq!(line(offset_of!(Subflow, inflation)), 0);
        // What a sample reads.
        assert_eq!(line(offset_of!(Subflow, last_integrated)), 1);
        assert_eq!(line(offset_of!(Subflow, srtt_s)), 1);
        assert_eq!(line(offset_of!(Subflow, state)), 1);
        let sampled = offset_of!(SubflowStats, srtt_time) + 8;
        assert_eq!(last(offset_of!(Subflow, stats), sampled), 1);
        assert_eq!(line(offset_of!(Subflow, stats) + sampled), 2);
        assert_eq!(last(offset_of!(Subflow, set), size_of::<Settings>()), 2);
        assert_eq!(line(offset_of!(Subflow, cwnd_validation)), 2);
        assert_eq!(line(offset_of!(Subflow, rto_at)), 3);
        assert_eq!(line(offset_of!(Subflow, recover) + 15), 3);
        assert_eq!(line(offset_of!(Subflow, rtt)), 4);
    }
}

#[cfg(test)]
mod tests {
    use super::{prr_sndcnt, trim, Prr, TRIM_FLOOR};
    use std::collections::VecDeque;

    #[test]
    fn trimming_keeps_the_records_and_gives_back_room_below_a_quarter() {
        let mut d: VecDeque<u64> = (0..4096).collect();
        d.drain(..4000);
        trim(&mut d);
        // 96 held, the floor 64: capacity falls to about 192, far below the 4096 it had.
        assert!(
            d.capacity() >= 192 && d.capacity() < 512,
            "{}",
            d.capacity()
        );
        assert!(d.iter().copied().eq(4000..4096));
        // A quarter or more of the capacity in use: nothing moves.
        let cap = d.capacity();
        d.drain(..40);
        trim(&mut d);
        assert_eq!(d.capacity(), cap);
        // Within four floors nothing is trimmed either, however little is held.
        let mut small: VecDeque<u64> = VecDeque::with_capacity(4 * TRIM_FLOOR);
        small.push_back(1);
        let cap = small.capacity();
        trim(&mut small);
        assert_eq!(small.capacity(), cap);
    }

    /// A window of 20 segments, the first lost, ssthresh 10 (RFC 6937's setting: Reno halving
    /// after one loss). Each duplicate ACK delivers one segment. While the flight is above
    /// ssthresh PRR sends ssthresh/RecoverFS = one segment for every two delivered (the fast
    /// retransmit on the first), and the recovery ends with exactly ssthresh segments sent and
    /// in flight; RFC 6675 instead sends nothing until the flight falls to cwnd.
    #[test]
    fn one_loss_sends_one_segment_per_two_acks() {
        let (fs, ssthresh) = (20, 10);
        let mut out = 0;
        let mut pipe: u64 = 19; // the lost segment has left the pipe
        for k in 1..=19 {
            pipe -= 1; // one more segment delivered
            let above = pipe > ssthresh;
            let prr = Prr {
                recover_fs: fs,
                delivered: k,
                out,
            };
            let mut n = prr_sndcnt(prr, ssthresh, pipe, 1, false);
            if out == 0 {
                n = n.max(1);
            }
            out += n;
            pipe += n;
            if above {
                assert!(n <= 1, "ACK {k}: {n} segments at once");
                assert_eq!(out, k.div_ceil(2), "ACK {k}: sent so far");
            }
        }
        assert_eq!(out, ssthresh, "ssthresh segments sent over the recovery");
        assert_eq!(pipe, ssthresh, "the flight ends at ssthresh");
    }

    /// Below ssthresh PRR-SSRB grows the flight back by at most what was delivered (one
    /// more on a safe ACK), and never past ssthresh.
    #[test]
    fn below_ssthresh_the_flight_grows_back_by_the_delivered_data() {
        let prr = Prr {
            recover_fs: 20,
            delivered: 12,
            out: 10,
        };
        // pipe 4, ssthresh 10: room for 6; max(12 − 10, 3) = 3 delivered, +1 if safe.
        assert_eq!(prr_sndcnt(prr, 10, 4, 3, false), 3);
        assert_eq!(prr_sndcnt(prr, 10, 4, 3, true), 4);
        // Little room left: ssthresh − pipe bounds it.
        assert_eq!(prr_sndcnt(prr, 10, 9, 3, true), 1);
        assert_eq!(prr_sndcnt(prr, 10, 10, 3, true), 0);
    }
}
