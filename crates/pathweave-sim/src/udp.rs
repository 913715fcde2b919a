//! An unresponsive constant-bit-rate source and its sink.

use crate::event::{ComponentId, Timer};
use crate::net::Net;
use crate::packet::{Packet, PacketKind};
use pathweave_cc::{Bandwidth, Bytes, Duration, Instant};

/// A constant-rate datagram source.
pub struct CbrSender {
    flow: u32,
    route: u32,
    comp: ComponentId,
    size: u32,
    interval: Duration,
    start: Instant,
    stop: Option<Instant>,
    next: Option<Instant>,
    seq: u64,
    timer: Timer,
    /// Datagrams sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
}

impl CbrSender {
    /// A source of `size`-byte datagrams at `rate`, active between `start` and `stop`.
    pub fn new(
        flow: u32,
        route: u32,
        comp: ComponentId,
        rate: Bandwidth,
        size: u32,
        window: (Instant, Option<Instant>),
    ) -> Self {
        // The rate is validated as positive by the scenario; 1 s is a harmless fallback.
        let interval = rate
            .transmission_time(Bytes(size as u64))
            .unwrap_or(Duration::from_secs(1));
        CbrSender {
            flow,
            route,
            comp,
            size,
            interval,
            start: window.0,
            stop: window.1,
            next: Some(window.0),
            seq: 0,
            timer: Timer::default(),
            sent: 0,
            bytes_sent: 0,
        }
    }

    /// Schedule the first datagram.
    pub fn init(&mut self, net: &mut Net) {
        self.timer.arm(self.start, self.comp, &mut net.sched);
    }

    /// The timer fired: send one datagram and schedule the next.
    pub fn on_timer(&mut self, net: &mut Net) {
        let now = net.now;
        if !self.timer.fire(now) {
            return;
        }
        let Some(t) = self.next else { return };
        if t > now {
            self.timer.arm(t, self.comp, &mut net.sched);
            return;
        }
        if self.stop.is_some_and(|s| now >= s) {
            self.next = None;
            return;
        }
        let mut p = Packet::new(
            self.flow,
            self.route,
            PacketKind::Datagram,
            self.size,
            self.size,
        );
        p.seq = self.seq;
        self.seq += 1;
        self.sent += 1;
        self.bytes_sent += self.size as u64;
        net.send(&p);
        let n = t + self.interval;
        self.next = Some(n);
        self.timer.arm(n, self.comp, &mut net.sched);
    }
}

/// Counts what a CBR source delivers.
#[derive(Clone, Copy, Debug, Default)]
pub struct CbrSink {
    /// Datagrams received.
    pub received: u64,
    /// Bytes received.
    pub bytes: u64,
}
