//! quinn's per-path congestion-control interface in front of one pathweave-cc multipath
//! controller per connection.
//!
//! quinn builds one [`congestion::Controller`] for each path of a connection through the
//! connection's [`congestion::ControllerFactory`], and gives it that path's events alone. A
//! coupled algorithm needs every path's window at once, so here the per-path controllers are
//! thin handles onto one [`Coupled`] state per connection, which holds the
//! [`AnyMultipathController`] and a [`PathView`] per path. A path joins when quinn builds its
//! controller and leaves when quinn drops it (an abandoned path's data is gone by then).
//!
//! How quinn's events become pathweave-cc's (iroh-quinn-proto 0.15, `connection/mod.rs`):
//!
//! * quinn calls `on_ack` once per newly acknowledged ack-eliciting packet, then `on_end_acks`
//!   once per ACK frame of that path. The handle adds the packets' sizes up without taking the
//!   lock and reports them at `on_end_acks` as one [`Ack`] per frame, as a TCP sender sees one
//!   cumulative ACK: the bytes of packets sent during the current recovery period with
//!   `in_recovery` set (RFC 9002 §7.3.2: they must not grow the window), then, if the frame
//!   acknowledges a packet sent after the period began, [`MultipathController::on_recovery_end`]
//!   and the remaining bytes as an ordinary ACK.
//! * The RTT sample of a frame is `now` minus the send time of its newest acknowledged packet
//!   (QUIC never retransmits a packet, so every sample is valid; the peer's ACK delay is not
//!   subtracted). The views' smoothed and minimum RTT are quinn's own (RFC 9002 §5, the ACK
//!   delay subtracted), as it stood before this frame: quinn updates its estimator only after
//!   the controller has seen the frame. Until quinn has a sample, they are the frame's.
//! * `on_congestion_event` for packets sent after the current recovery period began starts a
//!   new period: [`MultipathController::on_congestion_event`] (loss or ECN). Later losses of
//!   packets sent before it belong to the same period and are not reported again, as in
//!   quinn's own NewReno. Persistent congestion (RFC 9002 §7.6) is reported as a timeout,
//!   [`MultipathController::on_rto`]: both collapse the window. A probe timeout is not a
//!   congestion signal in QUIC (RFC 9002 §6.2) and quinn does not report it.
//! * quinn sends on a path while `in_flight + packet < window` (strictly less), where
//!   pathweave-cc's window is the most a path may have in flight; [`Controller::window`]
//!   answers one byte more than the controller's window so that both mean the same.
//! * Spurious-loss reports (`on_spurious_congestion_event`) are ignored: pathweave-cc's
//!   controllers have no undo.
//!
//! The handles take the connection's lock once per ACK frame, per congestion event and per
//! `window()` call; quinn drives a connection from one task, so the lock is uncontended. No
//! event allocates.

use pathweave_cc::cc::multipath::{AnyMultipathController, MultipathController, Paths};
use pathweave_cc::{
    Ack, Bytes, CongestionEvent, Duration, Instant, Metrics, PathId, PathView, Rto,
};
use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};
use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

/// The clock quinn's events carry.
type QuinnInstant = std::time::Instant;

/// What one path of a connection has done, for samples and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathSnapshot {
    /// The slot (pathweave-cc path id) of this path in the connection's controller.
    pub slot: u32,
    /// Whether quinn still holds this path's controller.
    pub open: bool,
    /// The controller's window in bytes.
    pub cwnd: u64,
    /// The controller's slow-start threshold in bytes, `None` while infinite.
    pub ssthresh: Option<u64>,
    /// Smoothed RTT of this path, seconds (`None` before the first acknowledgement).
    pub srtt: Option<f64>,
    /// Bytes in flight on the path at its last event.
    pub in_flight: u64,
    /// Bytes of ack-eliciting packets acknowledged on the path.
    pub acked_bytes: u64,
    /// Recovery periods started by loss or ECN.
    pub congestion_events: u64,
    /// Persistent-congestion collapses (reported to the controller as timeouts).
    pub persistent_congestion: u64,
    /// The controller's algorithm-specific state (α, ε, weights, …).
    pub metrics: Metrics,
}

/// Per-path bookkeeping beside the controller's own state.
#[derive(Debug)]
struct Slot {
    /// quinn's controller handles for this path (quinn clones one when a path migrates).
    handles: u32,
    /// ACK frames that gave an RTT sample.
    samples: u64,
    acked_bytes: u64,
    congestion_events: u64,
    persistent_congestion: u64,
}

#[derive(Debug)]
struct Inner {
    cc: AnyMultipathController,
    /// One view per slot, indexed by the slot number.
    views: Vec<PathView>,
    slots: Vec<Slot>,
    /// Time zero of the controller's clock: the first path's creation.
    epoch: QuinnInstant,
}

impl Inner {
    fn instant(&self, t: QuinnInstant) -> Instant {
        Instant(t.saturating_duration_since(self.epoch).as_nanos() as u64)
    }
}

/// The congestion state of one connection, shared by the controllers of all its paths.
#[derive(Debug)]
pub struct Coupled {
    inner: Mutex<Inner>,
}

impl Coupled {
    /// A connection's shared state around `cc`, a freshly built controller with no paths;
    /// `epoch` is the connection's time zero.
    pub fn new(cc: AnyMultipathController, epoch: QuinnInstant) -> Arc<Coupled> {
        Arc::new(Coupled {
            inner: Mutex::new(Inner {
                cc,
                views: Vec::new(),
                slots: Vec::new(),
                epoch,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain numbers behind; carry on with them.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many paths have ever joined (open or not).
    pub fn slots(&self) -> usize {
        self.lock().slots.len()
    }

    /// The state of path `slot`, if it ever joined.
    pub fn snapshot(&self, slot: u32) -> Option<PathSnapshot> {
        let g = self.lock();
        let s = g.slots.get(slot as usize)?;
        let v = g.views[slot as usize];
        let p = PathId(slot);
        let metrics = g.cc.metrics(p);
        Some(PathSnapshot {
            slot,
            open: s.handles > 0,
            cwnd: g.cc.window(p).0,
            ssthresh: g.cc.ssthresh(p).map(|b| b.0),
            srtt: v.srtt.map(|d| d.as_secs_f64()),
            in_flight: v.in_flight.0,
            acked_bytes: s.acked_bytes,
            congestion_events: s.congestion_events,
            persistent_congestion: s.persistent_congestion,
            metrics,
        })
    }

    /// Which slot the controller quinn reports for a path (from
    /// `quinn::Connection::congestion_state`) is, if it is one of ours.
    pub fn slot_of(controller: Box<dyn Controller>) -> Option<u32> {
        controller
            .into_any()
            .downcast::<PathController>()
            .ok()
            .map(|c| c.slot)
    }

    fn join(self: &Arc<Self>, now: QuinnInstant, mtu: u16) -> PathController {
        let mut g = self.lock();
        let slot = g.slots.len() as u32;
        let mss = Bytes(u64::from(mtu));
        let t = g.instant(now);
        g.views.push(PathView::new(PathId(slot), mss));
        g.slots.push(Slot {
            handles: 1,
            samples: 0,
            acked_bytes: 0,
            congestion_events: 0,
            persistent_congestion: 0,
        });
        g.cc.on_path_added(PathId(slot), t, mss);
        PathController {
            shared: Arc::clone(self),
            slot,
            pending: Pending::default(),
            recovery_start: None,
            in_recovery: false,
        }
    }
}

/// Builds the per-path controllers of one connection: give each connection a factory of its
/// own (quinn's `TransportConfig::congestion_controller_factory`).
#[derive(Debug)]
pub struct CoupledFactory {
    shared: Arc<Coupled>,
}

impl CoupledFactory {
    /// A factory whose paths all join `shared`.
    pub fn new(shared: Arc<Coupled>) -> Arc<CoupledFactory> {
        Arc::new(CoupledFactory { shared })
    }
}

impl ControllerFactory for CoupledFactory {
    fn build(self: Arc<Self>, now: QuinnInstant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(self.shared.join(now, current_mtu))
    }
}

/// Acknowledgements of one ACK frame, added up as quinn reports them packet by packet.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    /// Bytes of packets sent at or before the recovery period's start.
    recovery_bytes: u64,
    /// Bytes of packets sent after it (or outside recovery).
    fresh_bytes: u64,
    newest_sent: Option<QuinnInstant>,
    /// quinn's smoothed and minimum RTT as it passed them with the packets.
    quinn_rtt: Option<(std::time::Duration, std::time::Duration)>,
}

/// One path's controller as quinn sees it: a handle onto the connection's [`Coupled`] state.
#[derive(Debug)]
pub struct PathController {
    shared: Arc<Coupled>,
    slot: u32,
    pending: Pending,
    /// Start of the current (or last) recovery period.
    recovery_start: Option<QuinnInstant>,
    in_recovery: bool,
}

impl PathController {
    fn id(&self) -> PathId {
        PathId(self.slot)
    }

    /// One newly acknowledged packet, sent at `sent`, of `bytes` bytes (quinn's `on_ack`
    /// without its RTT estimator, which the adapter does not read).
    pub fn acked(&mut self, sent: QuinnInstant, bytes: u64) {
        let p = &mut self.pending;
        p.newest_sent = Some(p.newest_sent.map_or(sent, |t| t.max(sent)));
        // A packet sent before the current (or last) recovery period began never grows the
        // window, even when it is acknowledged after the period ended (as quinn's NewReno).
        if self.recovery_start.is_some_and(|r| sent <= r) {
            p.recovery_bytes += bytes;
        } else {
            p.fresh_bytes += bytes;
        }
    }
}

impl Drop for PathController {
    fn drop(&mut self) {
        let mut g = self.shared.lock();
        let i = self.slot as usize;
        let Some(s) = g.slots.get_mut(i) else { return };
        s.handles = s.handles.saturating_sub(1);
        if s.handles == 0 {
            g.views[i].can_send = false;
            g.views[i].in_flight = Bytes::ZERO;
            g.cc.on_path_removed(PathId(self.slot));
        }
    }
}

impl Controller for PathController {
    fn on_sent(&mut self, _now: QuinnInstant, bytes: u64, _last_packet_number: u64) {
        let mut g = self.shared.lock();
        let v = &mut g.views[self.slot as usize];
        v.in_flight = Bytes(v.in_flight.0 + bytes);
    }

    fn on_ack(
        &mut self,
        _now: QuinnInstant,
        sent: QuinnInstant,
        bytes: u64,
        _app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.pending.quinn_rtt = Some((rtt.get(), rtt.min()));
        self.acked(sent, bytes);
    }

    fn on_end_acks(
        &mut self,
        now: QuinnInstant,
        in_flight: u64,
        _app_limited: bool,
        _largest_packet_num_acked: Option<u64>,
    ) {
        let pending = std::mem::take(&mut self.pending);
        let p = self.id();
        let i = self.slot as usize;
        let mut g = self.shared.lock();
        let t = g.instant(now);
        g.views[i].in_flight = Bytes(in_flight);
        let Some(newest) = pending.newest_sent else {
            return;
        };
        let sample = Duration(now.saturating_duration_since(newest).as_nanos() as u64);
        let Inner {
            cc, views, slots, ..
        } = &mut *g;
        let s = &mut slots[i];
        s.acked_bytes += pending.recovery_bytes + pending.fresh_bytes;
        let v = &mut views[i];
        let nanos = |d: std::time::Duration| Duration(d.as_nanos() as u64);
        match pending.quinn_rtt {
            Some((srtt, min)) if s.samples > 0 => {
                v.srtt = Some(nanos(srtt));
                v.min_rtt = Some(nanos(min).min(sample));
            }
            _ => {
                v.srtt = Some(sample);
                v.min_rtt = Some(v.min_rtt.map_or(sample, |m| m.min(sample)));
            }
        }
        s.samples += 1;
        v.latest_rtt = Some(sample);
        if pending.recovery_bytes > 0 {
            let ack = Ack {
                now: t,
                bytes_acked: Bytes(pending.recovery_bytes),
                rtt: Some(sample),
                in_recovery: true,
                cwnd_limited: true,
            };
            cc.on_ack(p, &ack, &Paths(views));
        }
        if pending.fresh_bytes > 0 {
            if self.in_recovery {
                self.in_recovery = false;
                cc.on_recovery_end(p, t, &Paths(views));
            }
            let ack = Ack {
                now: t,
                bytes_acked: Bytes(pending.fresh_bytes),
                rtt: Some(sample),
                in_recovery: false,
                cwnd_limited: true,
            };
            cc.on_ack(p, &ack, &Paths(views));
        }
    }

    fn on_congestion_event(
        &mut self,
        now: QuinnInstant,
        sent: QuinnInstant,
        is_persistent_congestion: bool,
        is_ecn: bool,
        lost_bytes: u64,
    ) {
        let p = self.id();
        let i = self.slot as usize;
        let mut g = self.shared.lock();
        let t = g.instant(now);
        let Inner {
            cc, views, slots, ..
        } = &mut *g;
        let v = &mut views[i];
        v.in_flight = Bytes(v.in_flight.0.saturating_sub(lost_bytes));
        let s = &mut slots[i];
        if is_persistent_congestion {
            s.persistent_congestion += 1;
            self.recovery_start = Some(now);
            self.in_recovery = false;
            cc.on_rto(
                p,
                &Rto {
                    now: t,
                    repeated: false,
                },
                &Paths(views),
            );
            return;
        }
        if self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        self.recovery_start = Some(now);
        self.in_recovery = true;
        s.congestion_events += 1;
        let cause = if is_ecn {
            pathweave_cc::cc::Cause::Ecn
        } else {
            pathweave_cc::cc::Cause::Loss
        };
        cc.on_congestion_event(p, &CongestionEvent { now: t, cause }, &Paths(views));
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        // The controllers keep the segment size they joined with; the view follows the path.
        let mut g = self.shared.lock();
        g.views[self.slot as usize].mss = Bytes(u64::from(new_mtu));
    }

    fn window(&self) -> u64 {
        self.shared.lock().cc.window(self.id()).0 + 1
    }

    fn metrics(&self) -> ControllerMetrics {
        let g = self.shared.lock();
        let mut m = ControllerMetrics::default();
        m.congestion_window = g.cc.window(self.id()).0;
        m.ssthresh = g.cc.ssthresh(self.id()).map(|b| b.0);
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        let mut g = self.shared.lock();
        if let Some(s) = g.slots.get_mut(self.slot as usize) {
            s.handles += 1;
        }
        Box::new(PathController {
            shared: Arc::clone(&self.shared),
            slot: self.slot,
            pending: Pending::default(),
            recovery_start: self.recovery_start,
            in_recovery: self.in_recovery,
        })
    }

    fn initial_window(&self) -> u64 {
        self.window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathweave_cc::cc::multipath::{Algorithm, MultipathConfig, WindowConfig};
    use std::time::Duration as StdDuration;

    const MSS: u64 = 1200;

    fn connection(a: Algorithm) -> (Arc<Coupled>, Arc<CoupledFactory>, QuinnInstant) {
        #[allow(clippy::disallowed_methods)]
        let t0 = QuinnInstant::now();
        let cc = MultipathConfig::new(a, Bytes(MSS), WindowConfig::default())
            .build()
            .unwrap();
        let shared = Coupled::new(cc, t0);
        (Arc::clone(&shared), CoupledFactory::new(shared), t0)
    }

    fn ms(t0: QuinnInstant, n: u64) -> QuinnInstant {
        t0 + StdDuration::from_millis(n)
    }

    #[test]
    fn quinn_sees_the_window_as_a_strict_bound() {
        let (shared, f, t0) = connection(Algorithm::Uncoupled);
        let c = f.build(t0, MSS as u16);
        let cc_window = shared.snapshot(0).unwrap().cwnd;
        let iw = u64::from(WindowConfig::default().initial_segments());
        assert_eq!(cc_window, iw * MSS);
        // quinn sends while in_flight + size < window: one byte more lets exactly `iw` fit.
        assert_eq!(c.window(), cc_window + 1);
    }

    #[test]
    fn one_ack_frame_is_one_ack_however_many_packets_it_covers() {
        let (shared, f, t0) = connection(Algorithm::Uncoupled);
        let c = f.build(t0, MSS as u16);
        let mut c = *c.into_any().downcast::<PathController>().unwrap();
        for i in 0..4 {
            c.on_sent(ms(t0, i), MSS, i);
        }
        for i in 0..4 {
            c.acked(ms(t0, i), MSS);
        }
        c.on_end_acks(ms(t0, 50), 0, false, Some(3));
        let s = shared.snapshot(0).unwrap();
        // Slow start with appropriate byte counting (RFC 3465 §2.2, L segments per ACK): one
        // ACK of 4 packets grows the window by L segments, not 4.
        let w = WindowConfig::default();
        let abc = u64::from(w.abc_segments()).min(4);
        assert_eq!(s.cwnd, u64::from(w.initial_segments()) * MSS + abc * MSS);
        assert_eq!(s.acked_bytes, 4 * MSS);
        // The RTT sample is now minus the newest packet's send time: 50 − 3 = 47 ms.
        assert!((s.srtt.unwrap() - 0.047).abs() < 1e-9, "{:?}", s.srtt);
        assert_eq!(s.in_flight, 0);
    }

    #[test]
    fn one_reduction_per_recovery_period_and_none_for_older_packets() {
        let (shared, f, t0) = connection(Algorithm::Uncoupled);
        let c = f.build(t0, MSS as u16);
        let mut c = *c.into_any().downcast::<PathController>().unwrap();
        // Grow the window in slow start first, so that halving it stays above RFC 5681's
        // floor of two segments.
        for i in 0..10 {
            c.acked(ms(t0, i), 2 * MSS);
            c.on_end_acks(ms(t0, 5 + i), 0, false, None);
        }
        let w0 = shared.snapshot(0).unwrap().cwnd;
        assert!(w0 >= 8 * MSS, "{w0}");
        // Loss of a packet sent at 10 ms, detected at 100 ms: the window halves (RFC 5681
        // eq. 4 with FlightSize ≈ the window; pathweave-cc NewReno halves the window).
        c.on_congestion_event(ms(t0, 100), ms(t0, 10), false, false, MSS);
        let w1 = shared.snapshot(0).unwrap().cwnd;
        assert_eq!(w1, w0 / 2);
        // Another loss of a packet sent before the period began: same period, no change.
        c.on_congestion_event(ms(t0, 120), ms(t0, 90), false, false, MSS);
        assert_eq!(shared.snapshot(0).unwrap().cwnd, w1);
        assert_eq!(shared.snapshot(0).unwrap().congestion_events, 1);
        // Acknowledgements of packets sent before the period do not grow the window.
        c.acked(ms(t0, 50), MSS);
        c.on_end_acks(ms(t0, 130), 0, false, None);
        assert_eq!(shared.snapshot(0).unwrap().cwnd, w1);
        // Packets sent after it end the period; in congestion avoidance a window's worth of
        // acknowledged bytes grows the window by one segment (RFC 5681 §3.1, RFC 3465 §2.1).
        let mut acked = 0;
        let mut t = 110;
        while acked < w1 {
            c.acked(ms(t0, t), MSS);
            c.on_end_acks(ms(t0, t + 60), 0, false, None);
            acked += MSS;
            t += 1;
        }
        let w2 = shared.snapshot(0).unwrap().cwnd;
        assert_eq!(w2, w1 + MSS);
        // A loss of a packet sent after the period began starts a new one.
        c.on_congestion_event(ms(t0, 200), ms(t0, 150), false, false, MSS);
        assert_eq!(shared.snapshot(0).unwrap().congestion_events, 2);
        assert!(shared.snapshot(0).unwrap().cwnd < w2);
    }

    #[test]
    fn persistent_congestion_collapses_the_window_like_a_timeout() {
        let (shared, f, t0) = connection(Algorithm::Lia);
        let c = f.build(t0, MSS as u16);
        let mut c = *c.into_any().downcast::<PathController>().unwrap();
        c.on_congestion_event(ms(t0, 900), ms(t0, 10), true, false, 5 * MSS);
        let s = shared.snapshot(0).unwrap();
        // RFC 5681 §3.1: after a timeout the loss window is one segment.
        assert_eq!(s.cwnd, MSS);
        assert_eq!(s.persistent_congestion, 1);
        // quinn may still send one packet.
        assert_eq!(c.window(), MSS + 1);
    }

    #[test]
    fn paths_join_in_order_and_leave_when_quinn_drops_the_last_handle() {
        let (shared, f, t0) = connection(Algorithm::Lia);
        let a = Arc::clone(&f).build(t0, MSS as u16);
        let b = f.build(t0, MSS as u16);
        assert_eq!(shared.slots(), 2);
        // A clone (quinn's `congestion_state`, or a migration) names the same slot and does
        // not take the path away when dropped.
        let probe = b.clone_box();
        assert_eq!(Coupled::slot_of(probe), Some(1));
        assert!(shared.snapshot(1).unwrap().open);
        drop(b);
        assert!(!shared.snapshot(1).unwrap().open);
        assert!(shared.snapshot(0).unwrap().open);
        drop(a);
        assert!(!shared.snapshot(0).unwrap().open);
    }

    #[test]
    fn a_coupled_increase_sees_every_path() {
        // LIA (RFC 6356 §3): with two equal paths the increase per ACK on one path is capped
        // by α·bytes·MSS/cwnd_total, less than an uncoupled Reno path's bytes·MSS/cwnd.
        let run = |a: Algorithm| {
            let (shared, f, t0) = connection(a);
            let p0 = Arc::clone(&f).build(t0, MSS as u16);
            let p1 = f.build(t0, MSS as u16);
            let mut p0 = *p0.into_any().downcast::<PathController>().unwrap();
            let mut p1 = *p1.into_any().downcast::<PathController>().unwrap();
            // Leave slow start on both paths, then give both an RTT sample.
            p0.on_congestion_event(ms(t0, 5), ms(t0, 1), false, false, MSS);
            p1.on_congestion_event(ms(t0, 5), ms(t0, 1), false, false, MSS);
            for (i, p) in [&mut p0, &mut p1].into_iter().enumerate() {
                p.acked(ms(t0, 10 + i as u64), MSS);
                p.on_end_acks(ms(t0, 60), 0, false, None);
            }
            let before = shared.snapshot(0).unwrap().cwnd;
            p0.acked(ms(t0, 20), MSS);
            p0.on_end_acks(ms(t0, 70), 0, false, None);
            shared.snapshot(0).unwrap().cwnd - before
        };
        let coupled = run(Algorithm::Lia);
        let uncoupled = run(Algorithm::Uncoupled);
        assert!(coupled < uncoupled, "LIA {coupled} vs Reno {uncoupled}");
    }
}
