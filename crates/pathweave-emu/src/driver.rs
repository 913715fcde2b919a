//! The real-time driver of the simulator's link models.
//!
//! The links are `pathweave_sim::link::LinkDir`s, the very code the discrete-event simulator
//! runs, with the same per-direction random streams; only the clock differs. The driver keeps
//! the simulator's `Scheduler` of link arrivals, timeline changes and samples, and replaces
//! "jump to the next event" with "sleep until the monotonic clock reaches it":
//!
//! 1. every event due by now is dispatched at its *planned* time, so the model's state is
//!    exactly what the simulator would compute for the same arrivals; only the moment a packet
//!    is written to its destination TUN device can be late, and that lateness is measured;
//! 2. packets waiting on the TUN devices are read and offered to the first link of their route
//!    at the current clock reading, which is never earlier than any event already dispatched;
//! 3. the thread sleeps until the next event or a readable device (see [`sys::Poller`]).
//!
//! Packets live in a pool of fixed-size buffers that grows in chunks and is reused, so the
//! per-packet path allocates nothing once the pool has reached its working size.

use crate::capture::{self, Recorder};
use crate::sys;
use hdrhistogram::Histogram;
use pathweave_cc::Instant;
use pathweave_sim::capture::{DropCause, LogEvent, LogRow, WIRE_LOSS};
use pathweave_sim::event::{ComponentId, Kind, Scheduler, Timer};
use pathweave_sim::link::{LinkDir, Offer};
use pathweave_sim::results::{LinkSeries, LINK_SERIES_COLUMNS};
use pathweave_sim::scenario::{Columns, LinkChange};
use pathweave_sim::topology;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Buffers added to the pool at a time.
const CHUNK: usize = 1024;
/// Packets read from one device before the others and the clock get a turn.
const READ_BUDGET: usize = 64;
/// After a packet or an event, keep polling without sleeping this long: replies and
/// back-to-back packets then find the thread awake (waking an idle virtual CPU can take
/// hundreds of microseconds).
const SPIN_AFTER_ACTIVITY_NS: u64 = 100_000;
/// Bounds of the early-wake margin before a deadline (see [`Pacer`]).
const MIN_MARGIN_NS: u64 = 20_000;
const MAX_MARGIN_NS: u64 = 400_000;
/// Polling that finds nothing is capped at `IDLE_BUDGET_NS` of every window, and the thread's
/// CPU time (work, polling and the cost of its sleeps) at `CPU_CAP_NS`: above that it naps
/// between events even while busy, so the real-time thread stays clear of the kernel's RT
/// throttling (`sched_rt_runtime_us`, 95 % of every second by default), which would stop it
/// for tens of milliseconds.
const SPIN_WINDOW_NS: u64 = 100_000_000;
const IDLE_BUDGET_NS: u64 = 30_000_000;
const CPU_CAP_NS: u64 = 70_000_000;
/// How often the thread's CPU clock (a system call) is read.
const CPU_READ_EVERY_NS: u64 = 1_000_000;
/// The shortest sleep of a thread out of CPU budget. On a virtual machine a sleep and its
/// wake-up cost the thread CPU time of their own (a real-time thread sleeping in `ppoll` for
/// 5, 30 or 100 µs was charged 20–22 µs of CPU per sleep on a 2-vCPU machine), so sleeping
/// between events a few microseconds apart costs more CPU than it frees; out of budget the
/// thread naps this long and then dispatches what fell due, late by at most this much plus
/// its wake-up.
const MIN_NAP_NS: u64 = 100_000;
/// SCHED_FIFO priority of the link thread (1–99; above ordinary threads, below the kernel's
/// own high-priority threads at 99).
const REALTIME_PRIORITY: i32 = 50;
/// Longest sleep, so a stop request is seen promptly.
const MAX_SLEEP_NS: u64 = 50_000_000;

/// When the link thread sleeps and when it polls without sleeping.
///
/// A sleep ends late by the timer's and the CPU's wake-up latency, so the thread sleeps until
/// a margin before its next deadline and polls for the rest; the margin follows the measured
/// overshoot of earlier sleeps (a moving average, doubled, within
/// [`MIN_MARGIN_NS`, `MAX_MARGIN_NS`]). Within each window of [`SPIN_WINDOW_NS`], polling
/// that finds nothing may take [`IDLE_BUDGET_NS`] and the thread's CPU time may reach
/// [`CPU_CAP_NS`] before it stops polling. Only idle polling counts against the first, so a
/// busy thread does not spend it on work. Out of polling budget the thread sleeps to its next
/// deadline; out of CPU it sleeps at least [`MIN_NAP_NS`] at a time rather than between every
/// two events.
#[derive(Debug)]
struct Pacer {
    margin: u64,
    spin_until: u64,
    window_start: u64,
    /// Polling that found nothing, this window.
    idle: u64,
    /// The thread's CPU clock at the window's start, at its last reading, and when that was.
    cpu_start: u64,
    cpu: u64,
    cpu_read_at: u64,
    /// When the thread last planned or woke from a sleep.
    last: u64,
    /// Whether anything was dispatched or read since the last plan.
    worked: bool,
    /// Reads the thread's CPU clock (a fake one in tests).
    cpu_clock: fn() -> u64,
}

impl Pacer {
    fn new(cpu_clock: fn() -> u64) -> Self {
        let cpu = cpu_clock();
        Pacer {
            margin: 50_000,
            spin_until: 0,
            window_start: 0,
            idle: 0,
            cpu_start: cpu,
            cpu,
            cpu_read_at: 0,
            last: 0,
            worked: false,
            cpu_clock,
        }
    }

    fn activity(&mut self, now: u64) {
        self.spin_until = now + SPIN_AFTER_ACTIVITY_NS;
        self.worked = true;
    }

    /// `None` to poll without sleeping, or the sleep length and the time it aims at.
    fn plan(&mut self, now: u64, next: u64) -> Option<(u64, u64)> {
        if now >= self.cpu_read_at + CPU_READ_EVERY_NS {
            self.cpu = (self.cpu_clock)();
            self.cpu_read_at = now;
        }
        if now >= self.window_start + SPIN_WINDOW_NS {
            self.window_start = now;
            self.idle = 0;
            self.cpu_start = self.cpu;
        }
        if !self.worked {
            self.idle += now.saturating_sub(self.last);
        }
        self.worked = false;
        self.last = now;
        let to_next = next.saturating_sub(now);
        let spinning = now < self.spin_until || to_next <= self.margin;
        let cpu_left = self.cpu.saturating_sub(self.cpu_start) < CPU_CAP_NS;
        if spinning && cpu_left && self.idle < IDLE_BUDGET_NS {
            return None;
        }
        let target = if to_next > self.margin {
            next - self.margin
        } else {
            next
        };
        // Out of CPU the thread naps at least `MIN_NAP_NS` even with events due sooner (they
        // are dispatched late, and measured): a sleep costs tens of microseconds of CPU on a
        // virtual machine, so few long naps free more of it than one between every two events.
        let target = if cpu_left {
            target
        } else {
            target.max(now + MIN_NAP_NS)
        };
        match target.saturating_sub(now) {
            0 => None,
            wait => Some((wait.min(MAX_SLEEP_NS), target)),
        }
    }

    /// A sleeping poll returned at `now`; `target` is what it aimed at and `timed_out` whether
    /// it ended without a packet (only then does its overshoot say anything of the timer).
    fn slept(&mut self, target: u64, now: u64, timed_out: bool) {
        self.last = now;
        if timed_out {
            let over = now.saturating_sub(target);
            let m = (self.margin * 7 + 2 * over + MIN_MARGIN_NS) / 8;
            self.margin = m.clamp(MIN_MARGIN_NS, MAX_MARGIN_NS);
        }
    }
}

/// A TUN device the driver reads from and writes to.
pub(crate) struct Port {
    /// The device.
    pub fd: OwnedFd,
    /// The route a packet read here takes.
    pub route: u32,
}

/// One route: its link directions, the port its packets leave by, the flow it serves, the
/// subflow of the flow and whether it carries data (forward) or acknowledgements (reverse).
pub(crate) struct Route {
    pub hops: Vec<u32>,
    pub out_port: u32,
    pub flow: u32,
    pub subflow: u32,
    pub data: bool,
}

#[derive(Clone, Copy, Default)]
struct Meta {
    route: u32,
    hop: u16,
    len: u16,
}

struct Pool {
    slot: usize,
    chunks: Vec<Box<[u8]>>,
    meta: Vec<Meta>,
    free: Vec<u32>,
    limit: usize,
    live: usize,
    peak: usize,
}

impl Pool {
    fn new(slot: usize, limit: usize) -> Pool {
        Pool {
            slot,
            chunks: Vec::new(),
            meta: Vec::new(),
            free: Vec::new(),
            limit,
            live: 0,
            peak: 0,
        }
    }

    fn alloc(&mut self) -> Option<u32> {
        if self.free.is_empty() {
            let have = self.meta.len();
            if have >= self.limit {
                return None;
            }
            self.chunks
                .push(vec![0u8; self.slot * CHUNK].into_boxed_slice());
            self.meta.resize(have + CHUNK, Meta::default());
            self.free.extend((have as u32..(have + CHUNK) as u32).rev());
        }
        let id = self.free.pop()?;
        self.live += 1;
        self.peak = self.peak.max(self.live);
        Some(id)
    }

    fn free(&mut self, id: u32) {
        self.live -= 1;
        self.free.push(id);
    }

    fn buf(&mut self, id: u32) -> &mut [u8] {
        let (c, i) = (id as usize / CHUNK, id as usize % CHUNK);
        &mut self.chunks[c][i * self.slot..(i + 1) * self.slot]
    }

    /// The packet held in buffer `id`.
    fn packet(&self, id: u32) -> &[u8] {
        let (c, i) = (id as usize / CHUNK, id as usize % CHUNK);
        let len = self.meta[id as usize].len as usize;
        &self.chunks[c][i * self.slot..i * self.slot + len]
    }
}

/// What the driver counted.
#[derive(Clone, Debug, Default)]
pub struct DriverStats {
    /// Packets read from TUN devices.
    pub read: u64,
    /// Packets written to their destination device.
    pub written: u64,
    /// Packets dropped by queues (congestion) and lost on the wire (random loss).
    pub dropped_queue: u64,
    /// Random losses.
    pub lost_on_wire: u64,
    /// Packets dropped because the emulator could not keep up: the pool was at its limit or a
    /// destination device refused the write.
    pub emulator_drops: u64,
    /// Most packets held at once.
    pub peak_packets: u64,
    /// Events dispatched.
    pub events: u64,
    /// Data packets dropped per flow (queue or wire).
    pub flow_drops: Vec<u64>,
    /// Data packets dropped per route (a subflow's data route counts its own drops).
    pub route_drops: Vec<u64>,
    /// Bytes (IP packets) written to the destination device, per route.
    pub route_bytes: Vec<u64>,
    /// Packets inside links when the run ended.
    pub in_links: u64,
    /// Whether the link thread ran at real-time priority.
    pub realtime: bool,
    /// CPU time the link thread used during the run (ns), user and kernel: reading and
    /// writing the devices (a write runs the receiving stack's processing of the packet),
    /// the link models, sleeping and waking, and polling without sleeping.
    pub cpu_ns: u64,
}

/// The link emulator of one run.
pub(crate) struct Driver {
    pub links: Vec<LinkDir>,
    sched: Scheduler,
    routes: Vec<Route>,
    ports: Vec<Port>,
    pool: Pool,
    timeline: Vec<(Instant, usize, LinkChange)>,
    timeline_pos: usize,
    timeline_timer: Timer,
    sampler_timer: Timer,
    sample_interval: u64,
    sampled_links: Vec<u32>,
    pub link_series: LinkSeries,
    pub lateness: Histogram<u64>,
    /// Per packet read, an upper bound of how long it waited in its TUN device before the
    /// emulator read it: the read time minus the last time that device was seen empty.
    pub intake_wait: Histogram<u64>,
    /// Per port, the last time (since the epoch) the device was seen empty.
    seen_empty: Vec<u64>,
    /// Per port, whether its last read found it empty (rather than stopping at the budget).
    drained: Vec<bool>,
    pub stats: DriverStats,
    end: Instant,
    /// The capture, if the run is captured (see [`crate::capture`]).
    capture: Option<Box<Recorder>>,
    /// Per link direction, the packets that had started transmitting and not reached the
    /// far end when the run ended (counted for a capture only).
    pub in_flight_at_end: Vec<u64>,
}

impl Driver {
    /// A driver for `links` and `routes` whose packets enter at `ports`; packets are at most
    /// `slot` bytes and at most `pool_limit` are held at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        links: Vec<LinkDir>,
        routes: Vec<Route>,
        ports: Vec<Port>,
        timeline: Vec<(Instant, usize, LinkChange)>,
        sample_interval: u64,
        sampled_links: Vec<u32>,
        end: Instant,
        slot: usize,
        pool_limit: usize,
        flows: usize,
    ) -> Driver {
        let n_routes = routes.len();
        // The binary-heap queue: an emulator holds few events, and its loop asks for the next
        // deadline after every step, which the heap answers in constant time.
        let mut sched = Scheduler::reference();
        let mut timeline_timer = Timer::default();
        if let Some(&(t, _, _)) = timeline.first() {
            timeline_timer.arm(t, ComponentId::new(Kind::Timeline, 0), &mut sched);
        }
        let mut sampler_timer = Timer::default();
        sampler_timer.arm(
            Instant(sample_interval),
            ComponentId::new(Kind::Sampler, 0),
            &mut sched,
        );
        let seen_empty = vec![0; ports.len()];
        let drained = vec![true; ports.len()];
        Driver {
            links,
            sched,
            routes,
            ports,
            seen_empty,
            drained,
            pool: Pool::new(slot, pool_limit),
            timeline,
            timeline_pos: 0,
            timeline_timer,
            sampler_timer,
            sample_interval,
            sampled_links,
            link_series: LinkSeries::default(),
            // 1 ns to 100 s at three significant digits.
            lateness: Histogram::new_with_bounds(1, 100_000_000_000, 3)
                .unwrap_or_else(|_| unreachable!("fixed, valid histogram bounds")),
            intake_wait: Histogram::new_with_bounds(1, 100_000_000_000, 3)
                .unwrap_or_else(|_| unreachable!("fixed, valid histogram bounds")),
            stats: DriverStats {
                flow_drops: vec![0; flows],
                route_drops: vec![0; n_routes],
                route_bytes: vec![0; n_routes],
                ..DriverStats::default()
            },
            end,
            capture: None,
            in_flight_at_end: Vec::new(),
        }
    }

    /// Capture the run through `recorder` (before it starts).
    pub(crate) fn set_capture(&mut self, recorder: Recorder) {
        self.capture = Some(Box::new(recorder));
    }

    /// Take the capture (after the run).
    pub(crate) fn take_capture(&mut self) -> Option<Recorder> {
        self.capture.take().map(|b| *b)
    }

    /// Run in real time from `epoch` (a `CLOCK_MONOTONIC` reading) until the scenario's end or
    /// until `stop` is set. Returns an error only for a device failure.
    pub(crate) fn run(&mut self, epoch: u64, stop: &AtomicBool) -> std::io::Result<()> {
        let cpu_start = sys::thread_cpu_ns();
        sys::set_timer_slack(1);
        // Real-time priority keeps other work on the machine from delaying packets; the
        // loop sleeps between events, and the kernel's RT throttling bounds it regardless.
        self.stats.realtime = sys::set_realtime(REALTIME_PRIORITY);
        let fds: Vec<_> = self.ports.iter().map(|p| p.fd.as_raw_fd()).collect();
        let mut poller = sys::Poller::new(&fds)?;
        let mut found = vec![false; fds.len()];
        let mut scratch = vec![0u8; self.pool.slot];
        let mut pacer = Pacer::new(sys::thread_cpu_ns);
        let start = sys::monotonic_ns().saturating_sub(epoch);
        self.seen_empty.fill(start);
        let last = loop {
            let now = Instant(sys::monotonic_ns().saturating_sub(epoch));
            if self.dispatch_due(now, epoch)? {
                pacer.activity(now.0);
            }
            if let Some(c) = self.capture.as_deref_mut() {
                c.tick(now.0);
            }
            if now >= self.end || stop.load(Ordering::Relaxed) {
                break now;
            }
            // Read whatever the last poll found waiting, stamped with a fresh clock reading.
            let mut any = false;
            for r in poller.ready() {
                if r.readable {
                    any |= self.read_port(r.index, epoch, &mut scratch)?;
                }
                if r.error {
                    return Err(std::io::Error::other(format!(
                        "TUN device {} reported an error",
                        r.index
                    )));
                }
            }
            if any {
                pacer.activity(sys::monotonic_ns().saturating_sub(epoch));
            }
            let now = sys::monotonic_ns().saturating_sub(epoch);
            let next = self
                .sched
                .next_time()
                .map_or(u64::MAX, |t| t.0)
                .min(self.end.0);
            match pacer.plan(now, next) {
                None => {
                    poller.wait(Some(0))?;
                }
                Some((timeout, target)) => {
                    let ready = poller.wait(Some(timeout))?;
                    let polled = sys::monotonic_ns().saturating_sub(epoch);
                    pacer.slept(target, polled, ready == 0);
                    // A packet that woke the thread from its sleep on a drained device is
                    // counted from the wake-up: the thread's own wake-up latency is not
                    // measured here (it is the same latency the pacer's margin absorbs).
                    for r in poller.ready() {
                        if r.readable && self.drained[r.index] {
                            self.seen_empty[r.index] = polled;
                        }
                    }
                }
            }
            // A device the poll did not find readable was empty when the poll returned.
            let polled = sys::monotonic_ns().saturating_sub(epoch);
            for r in poller.ready() {
                found[r.index] = r.readable;
            }
            for (seen, found) in self.seen_empty.iter_mut().zip(found.iter_mut()) {
                if !*found {
                    *seen = polled;
                }
                *found = false;
            }
        };
        self.end_capture(last);
        self.stats.cpu_ns = sys::thread_cpu_ns().saturating_sub(cpu_start);
        self.stats.events = self.sched.events_processed();
        self.stats.peak_packets = self.pool.peak as u64;
        self.stats.in_links = self.links.iter().map(|l| l.in_link() as u64).sum();
        Ok(())
    }

    fn read_port(&mut self, i: usize, epoch: u64, scratch: &mut [u8]) -> std::io::Result<bool> {
        let fd = self.ports[i].fd.as_raw_fd();
        let route = self.ports[i].route;
        let mut got = false;
        self.drained[i] = false;
        for _ in 0..READ_BUDGET {
            let Some(id) = self.pool.alloc() else {
                // Out of buffers: drain the packet and count it against the emulator.
                match sys::read_packet(fd, scratch)? {
                    Some(_) => {
                        self.stats.read += 1;
                        self.stats.emulator_drops += 1;
                        got = true;
                        continue;
                    }
                    None => {
                        self.seen_empty[i] = sys::monotonic_ns().saturating_sub(epoch);
                        self.drained[i] = true;
                        break;
                    }
                }
            };
            let n = match sys::read_packet(fd, self.pool.buf(id))? {
                Some(n) => n,
                None => {
                    self.pool.free(id);
                    self.seen_empty[i] = sys::monotonic_ns().saturating_sub(epoch);
                    self.drained[i] = true;
                    break;
                }
            };
            got = true;
            self.stats.read += 1;
            let now = Instant(sys::monotonic_ns().saturating_sub(epoch));
            // The packet arrived after the device was last seen empty.
            let waited = now.0.saturating_sub(self.seen_empty[i]).max(1);
            self.intake_wait.saturating_record(waited);
            self.pool.meta[id as usize] = Meta {
                route,
                hop: 0,
                len: n as u16,
            };
            self.enter_hop(id, now);
        }
        Ok(got)
    }

    fn enter_hop(&mut self, id: u32, now: Instant) {
        let m = self.pool.meta[id as usize];
        let link = self.routes[m.route as usize].hops[m.hop as usize] as usize;
        if self.capture.as_deref().is_some_and(|c| c.captures(link)) {
            return self.enter_hop_captured(id, now, link);
        }
        if self.links[link].offer(u64::from(id), m.len as u32, 0, now, &mut self.sched)
            == Offer::Dropped
        {
            self.queue_drop(id);
        }
    }

    /// A packet a queue dropped: count it and free its buffer.
    fn queue_drop(&mut self, id: u32) {
        let route = self.pool.meta[id as usize].route as usize;
        let r = &self.routes[route];
        self.stats.dropped_queue += 1;
        if r.data {
            self.stats.flow_drops[r.flow as usize] += 1;
            self.stats.route_drops[route] += 1;
        }
        self.pool.free(id);
    }

    /// [`Driver::enter_hop`] at a captured link direction: the transmissions started before
    /// `now` are logged, then the packet's enqueue (and its dequeue if it starts at once) or
    /// its drop, which its file records too.
    #[cold]
    #[inline(never)]
    fn enter_hop_captured(&mut self, id: u32, now: Instant, link: usize) {
        let Some(mut cap) = self.capture.take() else {
            return;
        };
        log_dequeues(
            &mut cap,
            &mut self.links[link],
            link,
            now,
            &self.pool,
            &self.routes,
        );
        let l = &mut self.links[link];
        let (waiting, _) = l.queue_len(now);
        let causes = l.drop_causes();
        let len = self.pool.meta[id as usize].len as u32;
        let offer = l.offer(u64::from(id), len, 0, now, &mut self.sched);
        let (p, b) = l.queue_len(now);
        let packet = self.pool.packet(id);
        let route = &self.routes[self.pool.meta[id as usize].route as usize];
        let row = |event, queue_packets, queue_bytes| LogRow {
            time: now,
            link_dir: link as u32,
            flow: route.flow,
            subflow: route.subflow,
            sequence: capture::sequence(packet, route.data),
            bytes: len,
            event,
            queue_packets,
            queue_bytes,
        };
        let accepted = offer == Offer::Accepted;
        if cap.events() {
            if accepted && p == waiting {
                cap.row(row(LogEvent::Enqueue, p + 1, b.0 + u64::from(len)));
                cap.row(row(LogEvent::Dequeue, p, b.0));
            } else {
                cap.row(row(capture::offer_event(accepted), p, b.0));
            }
        }
        if !accepted {
            let after = l.drop_causes();
            let cause = if after.1 > causes.1 {
                DropCause::Early
            } else if after.2 > causes.2 {
                DropCause::Forced
            } else {
                DropCause::Overflow
            };
            // Held back until the packets transmitted before it have been written.
            cap.packet(link, now, packet, Some(cause.comment()), true);
        }
        self.capture = Some(cap);
        if !accepted {
            self.queue_drop(id);
        }
    }

    /// Log the transmissions started by `now` at every captured link direction: before
    /// anything else reads a link's queue (a sample, a change to the link) and at the end.
    fn log_all_dequeues(&mut self, now: Instant) {
        let Some(cap) = self.capture.as_deref_mut() else {
            return;
        };
        for (d, l) in self.links.iter_mut().enumerate() {
            if cap.captures(d) {
                log_dequeues(cap, l, d, now, &self.pool, &self.routes);
            }
        }
    }

    /// At the end of the run (`now`): log the last dequeues and count, per captured link
    /// direction, the packets on the wire.
    fn end_capture(&mut self, now: Instant) {
        if self.capture.is_none() {
            return;
        }
        self.log_all_dequeues(now);
        self.in_flight_at_end = self
            .links
            .iter_mut()
            .map(|l| (l.in_link() as u64).saturating_sub(u64::from(l.queue_len(now).0)))
            .collect();
    }

    /// Dispatch every event due by `now`; true if there was one.
    fn dispatch_due(&mut self, now: Instant, epoch: u64) -> std::io::Result<bool> {
        let mut any = false;
        while let Some((t, c)) = self.sched.pop_until(now) {
            any = true;
            let i = c.index();
            match c.kind() {
                Kind::Link => {
                    if !self.links[i].fire(t) {
                        continue;
                    }
                    let captured = self.capture.as_deref().is_some_and(|c| c.captures(i));
                    loop {
                        let stamp = match captured {
                            true => self.egress_stamp(i, t),
                            false => None,
                        };
                        let Some(a) = self.links[i].pop_arrived(t) else {
                            break;
                        };
                        // The link hands back the buffer index it was offered.
                        let id = a.word as u32;
                        if let (Some(ts), Some(cap)) = (stamp, self.capture.as_deref_mut()) {
                            let comment = a.lost.then_some(WIRE_LOSS);
                            cap.packet(i, ts, self.pool.packet(id), comment, false);
                        }
                        match a.lost {
                            false => self.hop_done(id, t, epoch)?,
                            true => {
                                self.stats.lost_on_wire += 1;
                                let route = self.pool.meta[id as usize].route as usize;
                                if self.routes[route].data {
                                    self.stats.flow_drops[self.routes[route].flow as usize] += 1;
                                    self.stats.route_drops[route] += 1;
                                }
                                self.pool.free(id);
                            }
                        }
                    }
                    self.links[i].rearm(&mut self.sched);
                }
                Kind::Timeline => self.on_timeline(t),
                Kind::Sampler => self.on_sample(t),
                Kind::Sender | Kind::Receiver => {}
            }
        }
        Ok(any)
    }

    /// Before captured link direction `l` hands on its head packet at `now`: log the
    /// transmissions started by then, and return the head's stamp if it has arrived.
    #[cold]
    fn egress_stamp(&mut self, l: usize, now: Instant) -> Option<Instant> {
        let cap = self.capture.as_deref_mut()?;
        log_dequeues(cap, &mut self.links[l], l, now, &self.pool, &self.routes);
        self.links[l].head_egress(now)
    }

    fn hop_done(&mut self, id: u32, t: Instant, epoch: u64) -> std::io::Result<()> {
        let m = &mut self.pool.meta[id as usize];
        m.hop += 1;
        let (route, hop, len) = (m.route as usize, m.hop as usize, m.len as usize);
        if hop < self.routes[route].hops.len() {
            self.enter_hop(id, t);
            return Ok(());
        }
        let port = self.routes[route].out_port as usize;
        let fd = self.ports[port].fd.as_raw_fd();
        let released = sys::monotonic_ns().saturating_sub(epoch);
        let ok = sys::write_packet(fd, &self.pool.buf(id)[..len])?;
        self.pool.free(id);
        if ok {
            self.stats.written += 1;
            self.stats.route_bytes[route] += len as u64;
            // A histogram value of at least 1 ns: 0 is not representable.
            let late = released.saturating_sub(t.0).max(1);
            self.lateness.saturating_record(late);
        } else {
            self.stats.emulator_drops += 1;
        }
        Ok(())
    }

    fn on_timeline(&mut self, now: Instant) {
        if !self.timeline_timer.fire(now) {
            return;
        }
        self.log_all_dequeues(now);
        while let Some(&(t, k, change)) = self.timeline.get(self.timeline_pos) {
            if t > now {
                self.timeline_timer
                    .arm(t, ComponentId::new(Kind::Timeline, 0), &mut self.sched);
                break;
            }
            self.timeline_pos += 1;
            topology::apply_change(&mut self.links, k, change, now, &mut self.sched);
        }
    }

    fn on_sample(&mut self, now: Instant) {
        if !self.sampler_timer.fire(now) {
            return;
        }
        self.log_all_dequeues(now);
        // Every column; the run restricts the series to the scenario's [series] at the end.
        topology::sample_links(
            &mut self.links,
            &self.sampled_links,
            Columns::all(LINK_SERIES_COLUMNS.len()),
            now,
            &mut self.link_series,
        );
        let next = now.0 + self.sample_interval;
        if next <= self.end.0 {
            self.sampler_timer.arm(
                Instant(next),
                ComponentId::new(Kind::Sampler, 0),
                &mut self.sched,
            );
        }
    }
}

/// Log the dequeues of link direction `d` (`link`): the transmissions started by `now` that
/// were still counted as waiting.
fn log_dequeues(
    cap: &mut Recorder,
    link: &mut LinkDir,
    d: usize,
    now: Instant,
    pool: &Pool,
    routes: &[Route],
) {
    if !cap.events() {
        return;
    }
    link.advance_logged(now, |start, word, size, _, (queue_packets, queue_bytes)| {
        let id = word as u32;
        let route = &routes[pool.meta[id as usize].route as usize];
        cap.row(LogRow {
            time: start,
            link_dir: d as u32,
            flow: route.flow,
            subflow: route.subflow,
            sequence: capture::sequence(pool.packet(id), route.data),
            bytes: size,
            event: LogEvent::Dequeue,
            queue_packets,
            queue_bytes,
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// The fake thread CPU clock the tests' pacers read.
        static CPU: Cell<u64> = const { Cell::new(0) };
    }

    fn fake_cpu() -> u64 {
        CPU.with(Cell::get)
    }

    fn pacer() -> Pacer {
        CPU.with(|c| c.set(0));
        Pacer::new(fake_cpu)
    }

    /// Poll every `step` ns from `from` for `span` ns with events `gap` ahead, busy (`work`) or
    /// not, the CPU clock running with the wall clock; returns how many plans said "poll".
    fn poll_for(p: &mut Pacer, from: u64, span: u64, step: u64, gap: u64, work: bool) -> u64 {
        let mut polls = 0;
        let mut t = from;
        while t < from + span {
            CPU.with(|c| c.set(c.get() + step));
            if work {
                p.activity(t);
            }
            if p.plan(t, t + gap).is_none() {
                polls += 1;
            }
            t += step;
        }
        polls
    }

    #[test]
    fn work_does_not_spend_the_idle_polling_budget() {
        let mut p = pacer();
        // A thread busy for 60 ms of a window (events 5 µs apart, each iteration working)
        // polls throughout: 60 ms is past the 30 ms idle budget but below the CPU cap.
        let n = poll_for(&mut p, 0, 60_000_000, 10_000, 5_000, true);
        assert_eq!(n, 6_000);
    }

    #[test]
    fn idle_polling_stops_at_its_budget_and_then_sleeps_to_the_deadline() {
        let mut p = pacer();
        let n = poll_for(&mut p, 0, 40_000_000, 10_000, 5_000, false);
        // 30 ms of 10 µs idle polls, then sleeps.
        assert!((2_999..=3_001).contains(&n), "{n} polls");
        // Out of idle budget but not of CPU: the sleep ends at the deadline, however near.
        let now = 40_000_000;
        let (wait, target) = p.plan(now, now + 5_000).expect("a sleep");
        assert_eq!((wait, target), (5_000, now + 5_000));
    }

    #[test]
    fn out_of_cpu_the_thread_naps_and_a_new_window_restores_polling() {
        let mut p = pacer();
        // Busy: polls until the thread's CPU time reaches the cap (70 ms), then stops.
        let n = poll_for(&mut p, 0, 90_000_000, 10_000, 5_000, true);
        let cap = CPU_CAP_NS / 10_000;
        assert!(
            n >= cap - 100 && n <= cap + 100,
            "{n} polls against a cap of {cap}"
        );
        // With the next event 5 µs away it naps the minimum instead.
        let now = 90_000_000;
        p.activity(now);
        let (wait, target) = p.plan(now, now + 5_000).expect("a nap");
        assert_eq!((wait, target), (MIN_NAP_NS, now + MIN_NAP_NS));
        // A far deadline: the sleep aims at the margin before it, as in budget.
        let (_, target) = p.plan(now, now + 10_000_000).expect("a sleep");
        assert_eq!(target, now + 10_000_000 - p.margin);
        // The next window polls again.
        p.slept(target, 100_000_000, true);
        let n = poll_for(&mut p, 100_000_000, 1_000_000, 10_000, 5_000, true);
        assert_eq!(n, 100);
    }

    #[test]
    fn a_sleep_that_ends_late_widens_the_margin_and_a_packet_wake_up_does_not() {
        let mut p = pacer();
        let m = p.margin;
        p.slept(1_000_000, 1_000_000 + 10_000, false);
        assert_eq!(p.margin, m, "a packet woke it: nothing learnt of the timer");
        p.slept(1_000_000, 1_000_000 + 200_000, true);
        assert!(p.margin > m, "{} after {m}", p.margin);
        for _ in 0..100 {
            p.slept(0, 10_000_000, true);
        }
        assert_eq!(p.margin, MAX_MARGIN_NS);
    }
}
