//! One emulated run, in four phases ([`emulate`]): build the test bed, start the link driver
//! and the endpoints, sample in real time until the scenario's end, then stop everything,
//! tear it down and report.

use crate::capture::{CaptureOutput, Recorder};
use crate::controllers::Controllers;
use crate::driver::{Driver, Port, Route};
use crate::endpoint::{dotted, mean, Endpoint, Ends};
use crate::lab::{self, Lab, Netns};
use crate::{
    check_environment, check_scenario, is_multipath, sys, Clock, EmuError, Lateness, Options,
    Report,
};
use pathweave_cc::Instant;
use pathweave_sim::results::*;
use pathweave_sim::scenario::Scenario;
use pathweave_sim::topology;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How often the orchestrator wakes to check on the run between samples.
const TICK_NS: u64 = 20_000_000;
/// Transmit queue of every TUN device, in packets (the kernel's default is 500). A burst that
/// finds the emulator busy waits here instead of being dropped unseen; the wait is measured
/// (`Report::intake_wait`) and judged like lateness.
const TUN_QUEUE: u32 = 4096;
/// Packets the emulator buffers at most (in pool slots).
const POOL_LIMIT: usize = 1 << 18;

/// Sets the run's stop flag when dropped, so no thread outlives an error or a panic.
struct HaltOnDrop(Arc<AtomicBool>);

impl Drop for HaltOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A path change of flow `flow` (see [`crate::endpoint::PathChange`]).
struct PathChange {
    at: u64,
    flow: usize,
    k: usize,
    join: bool,
}

/// Run `scenario` over real kernel stacks, in real time. `stop` ends the run early (the caller
/// sets it on Ctrl-C or SIGTERM). The namespaces are held by this process's descriptors and
/// threads alone (see [`crate::lab`]): they go on every way out, a killed process included.
///
/// A run has four phases: [`TestBed::build`], [`TestBed::start`], [`TestBed::run`] and
/// [`TestBed::collect`]. On any way out before `collect` ends, an error or a panic, the
/// [`Running`] threads are told to stop first (`HaltOnDrop`), then the test bed is dropped:
/// the endpoints, the namespaces and, last, the run's controllers.
pub fn emulate(
    scenario: &Scenario,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<crate::Outcome, EmuError> {
    check_scenario(scenario, opts)?;
    check_environment(
        scenario
            .flows
            .iter()
            .any(|f| is_multipath(f) && !opts.is_external(f)),
    )?;
    let (mut bed, links) = TestBed::build(scenario, opts, stop)?;
    let running = bed.start(links)?;
    let sampled = bed.run(&running, stop);
    bed.collect(running, sampled)
}

/// One run's test bed, from [`TestBed::build`] to [`TestBed::collect`]. Fields drop in
/// declaration order: the endpoints (and any listener not started) before the namespaces, and
/// the controllers last, so that they outlive every socket of the run.
struct TestBed<'a> {
    /// Stops what runs in external flows' namespaces, first of all.
    externals: Externals,
    scenario: &'a Scenario,
    /// The links' random streams' seed.
    seed: u64,
    id: String,
    /// One per flow, in scenario order.
    endpoints: Vec<Endpoint>,
    /// Every flow's path changes, by time.
    path_changes: Vec<PathChange>,
    lab: Lab,
    controllers: Controllers,
    /// When the build began (`CLOCK_MONOTONIC`, ns), for the report's wall time.
    wall_start: u64,
}

/// One flow's TUN descriptors, one per subflow at each end.
struct FlowDevices {
    sender: Vec<OwnedFd>,
    receiver: Vec<OwnedFd>,
}

/// What [`TestBed::start`] set going; dropping it tells every thread to stop.
struct Running {
    _halt_on_drop: HaltOnDrop,
    halt: Arc<AtomicBool>,
    clock: Clock,
    /// The link thread, which hands back its driver when it ends.
    links: JoinHandle<(Driver, std::io::Result<()>)>,
    /// The receiving and sending applications' threads.
    apps: Vec<JoinHandle<()>>,
}

/// How the real-time loop of [`TestBed::run`] ended, and what it sampled.
struct Sampled {
    /// An interruption, a flow's failure, or a controller's or path change's error.
    outcome: Result<(), EmuError>,
    /// When the link thread ended before the scenario's end (its reason comes with its
    /// result).
    links_stopped_at: Option<u64>,
    flow_series: FlowSeries,
    subflow_series: SubflowSeries,
}

impl<'a> TestBed<'a> {
    /// Build the test bed: the run's controllers, two namespaces per flow and its endpoint
    /// between them, each namespace's sysctls, devices, addresses, routes and MPTCP endpoints,
    /// the receivers' listeners, and the links through the devices (returned, not started).
    fn build(
        scenario: &'a Scenario,
        opts: &Options,
        stop: &AtomicBool,
    ) -> Result<(TestBed<'a>, Driver), EmuError> {
        let seed = opts.seed.unwrap_or(scenario.seed);
        let (id, number) = run_id();
        // Each path of each flow has a sender address of its own.
        let mut addrs = Vec::with_capacity(scenario.flows.len());
        let mut p = 0usize;
        for f in &scenario.flows {
            let n = f.subflows.len();
            addrs.push((0..n).map(|k| client_addr(p + k)).collect::<Vec<_>>());
            p += n;
        }
        let external: Vec<bool> = scenario.flows.iter().map(|f| opts.is_external(f)).collect();
        // Declared before the namespaces and the endpoints, so it is dropped after them.
        let controllers = Controllers::prepare(scenario, number, &addrs, &external)?;
        // External flows' applications find their namespaces by name.
        let mut lab = Lab::with_names(&id, lab::names_asked() || external.contains(&true));
        let wall_start = sys::monotonic_ns();
        let mut endpoints = Vec::with_capacity(scenario.flows.len());
        for (i, (f, client)) in scenario.flows.iter().zip(addrs).enumerate() {
            check_stop(stop)?;
            let sender_ns = lab.add(&format!("{i}s"))?;
            let receiver_ns = lab.add(&format!("{i}r"))?;
            let n = f.subflows.len();
            let ends = Ends {
                index: i,
                name: f.name.clone(),
                sender_ns,
                receiver_ns,
                devices: (0..n).map(|k| format!("pw-{id}-{k}")).collect(),
                client,
                server: server_addr(i),
                start_ns: f.start.0,
                stop_ns: f.stop.map(|s| s.0),
                seed: seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            };
            endpoints.push(Endpoint::new(f, ends, &controllers, opts)?);
        }
        let externals = Externals(
            endpoints
                .iter()
                .zip(&external)
                .filter(|(_, &x)| x)
                .map(|(e, _)| e.ends().clone())
                .collect(),
        );
        let mut bed = TestBed {
            externals,
            scenario,
            seed,
            id,
            endpoints,
            path_changes: Vec::new(),
            lab,
            controllers,
            wall_start,
        };
        let devices = bed.configure(stop)?;
        let mut links = bed.links(devices);
        if let Some(c) = &opts.capture {
            let names: Vec<&str> = scenario.links.iter().map(|l| l.name.as_str()).collect();
            let recorder = Recorder::start(&c.spec, &c.dir, &names).map_err(|e| {
                EmuError::Setup(format!(
                    "creating the capture files in {}: {e}",
                    c.dir.display()
                ))
            })?;
            links.set_capture(recorder);
        }
        Ok((bed, links))
    }

    /// Configure each flow's namespaces: sysctls, devices and the receiver's listener first,
    /// then addresses, routes and what its endpoint needs besides (MPTCP endpoints).
    fn configure(&mut self, stop: &AtomicBool) -> Result<Vec<FlowDevices>, EmuError> {
        let mut devices = Vec::with_capacity(self.endpoints.len());
        for (i, endpoint) in self.endpoints.iter_mut().enumerate() {
            check_stop(stop)?;
            let needs = endpoint.needs();
            let e = endpoint.ends().clone();
            let (sender, ()) =
                prepare_namespace(&e.sender_ns, &needs.sysctls, &e.devices, || Ok(()))?;
            let (receiver, ()) =
                prepare_namespace(&e.receiver_ns, &needs.sysctls, &e.devices, || {
                    endpoint.listen()
                })?;
            devices.push(FlowDevices { sender, receiver });

            let server = dotted(e.server);
            let mut snd = vec!["link set lo up".to_string()];
            let mut rcv = vec![
                "link set lo up".to_string(),
                format!("addr add {server}/32 dev lo"),
            ];
            for (k, dev) in e.devices.iter().enumerate() {
                let c = dotted(e.client[k]);
                for cmds in [&mut snd, &mut rcv] {
                    cmds.push(format!(
                        "link set {dev} mtu {} txqueuelen {TUN_QUEUE} up",
                        needs.mtu
                    ));
                }
                snd.push(format!("addr add {c}/32 dev {dev}"));
                let opts = &needs.sender_route_options;
                if k == 0 {
                    snd.push(format!("route add {server}/32 dev {dev} src {c}{opts}"));
                } else {
                    snd.push(format!("rule add from {c}/32 table {}", 100 + k));
                    snd.push(format!(
                        "route add {server}/32 dev {dev} src {c}{opts} table {}",
                        100 + k
                    ));
                }
                rcv.push(format!(
                    "route add {c}/32 dev {dev} src {server}{}",
                    needs.receiver_route_options
                ));
            }
            snd.extend(needs.sender_commands);
            rcv.extend(needs.receiver_commands);
            self.path_changes
                .extend(endpoint.path_changes().into_iter().map(|c| PathChange {
                    at: c.at,
                    flow: i,
                    k: c.k,
                    join: c.join,
                }));
            self.lab.batch(&e.sender_ns, &snd)?;
            self.lab.batch(&e.receiver_ns, &rcv)?;
        }
        self.path_changes.sort_by_key(|c| c.at);
        Ok(devices)
    }

    /// The links, exactly as the simulator builds them, and the routes through them from
    /// each flow's `devices`.
    fn links(&self, devices: Vec<FlowDevices>) -> Driver {
        let scenario = self.scenario;
        let links = topology::build_links(scenario, self.seed);
        let mut routes = Vec::new();
        let mut ports = Vec::new();
        let mut sampled = std::collections::BTreeSet::new();
        for (i, (f, d)) in scenario.flows.iter().zip(devices).enumerate() {
            for (k, ((sf, sfd), rfd)) in f.subflows.iter().zip(d.sender).zip(d.receiver).enumerate()
            {
                let (fwd, rev) = topology::subflow_routes(sf);
                sampled.extend(fwd.iter().copied());
                let (sp, rp) = (ports.len() as u32, ports.len() as u32 + 1);
                let (fr, rr) = (routes.len() as u32, routes.len() as u32 + 1);
                ports.push(Port { fd: sfd, route: fr });
                ports.push(Port { fd: rfd, route: rr });
                routes.push(Route {
                    hops: fwd,
                    out_port: rp,
                    flow: i as u32,
                    subflow: k as u32,
                    data: true,
                });
                routes.push(Route {
                    hops: rev,
                    out_port: sp,
                    flow: i as u32,
                    subflow: k as u32,
                    data: false,
                });
            }
        }
        let max_mtu = self
            .endpoints
            .iter()
            .map(|e| e.needs().mtu)
            .max()
            .unwrap_or(1500);
        let slot = (max_mtu as usize + 64).next_multiple_of(64);
        Driver::new(
            links,
            routes,
            ports,
            topology::timeline(scenario),
            scenario.sample_interval.0,
            sampled.into_iter().collect(),
            Instant(scenario.duration.0),
            slot,
            POOL_LIMIT,
            scenario.flows.len(),
        )
    }

    /// Start the run: its clock and the link thread, then every flow's receiver, then every
    /// sender (each waits for its flow's start). The links go first, so that no packet waits
    /// in a device for them.
    fn start(&mut self, mut links: Driver) -> Result<Running, EmuError> {
        let halt = Arc::new(AtomicBool::new(false));
        // Whatever happens from here on, the threads are told to stop.
        let halt_on_drop = HaltOnDrop(halt.clone());
        let clock = Clock::start();
        let links_halt = halt.clone();
        let epoch = clock.epoch();
        let links = std::thread::Builder::new()
            .name("pw-emu-links".to_string())
            .spawn(move || {
                let r = links.run(epoch, &links_halt);
                (links, r)
            })
            .map_err(|e| EmuError::Setup(format!("starting the link thread: {e}")))?;
        let mut apps = Vec::with_capacity(2 * self.endpoints.len());
        for e in &mut self.endpoints {
            apps.extend(e.start_receiver(clock, &halt));
        }
        for e in &self.endpoints {
            apps.extend(e.start_sender(clock, &halt));
        }
        self.externals.announce(self.scenario.duration.0);
        Ok(Running {
            _halt_on_drop: halt_on_drop,
            halt,
            clock,
            links,
            apps,
        })
    }

    /// The real-time loop, until the scenario's end or the first of: `stop`, a flow's
    /// failure, the link thread's early end, a controller's or a path change's error. Each
    /// turn runs the controllers' periodic work, takes the samples that are due and makes the
    /// path changes that are due, then sleeps until the next (at most [`TICK_NS`]).
    fn run(&mut self, running: &Running, stop: &AtomicBool) -> Sampled {
        let end_ns = self.scenario.duration.0;
        let interval = self.scenario.sample_interval.0;
        let mut flow_series = FlowSeries::default();
        let mut subflow_series = SubflowSeries::default();
        let mut next_sample = interval;
        let mut next_change = 0usize;
        let mut outcome: Result<(), EmuError> = Ok(());
        let mut links_stopped_at = None;
        loop {
            let now = running.clock.now_ns();
            if stop.load(Ordering::Relaxed) {
                outcome = Err(EmuError::Interrupted);
                break;
            }
            if let Some(e) = self.endpoints.iter().find_map(Endpoint::error) {
                outcome = Err(EmuError::Failed(e));
                break;
            }
            if running.links.is_finished() && now < end_ns {
                links_stopped_at = Some(now);
                break;
            }
            if let Err(e) = self.controllers.tick(now as f64 / 1e9) {
                outcome = Err(e);
                break;
            }
            while next_sample <= end_ns && now >= next_sample {
                let t = next_sample as f64 / 1e9;
                for (i, e) in self.endpoints.iter_mut().enumerate() {
                    e.sample(
                        t,
                        interval as f64 / 1e9,
                        self.controllers.weights(i),
                        &mut flow_series,
                        &mut subflow_series,
                    );
                }
                next_sample += interval;
            }
            while let Some(c) = self.path_changes.get(next_change).filter(|c| c.at <= now) {
                if let Err(e) = self.endpoints[c.flow].change_path(&self.lab, c.k, c.join) {
                    outcome = Err(e);
                    break;
                }
                next_change += 1;
            }
            if outcome.is_err() || now >= end_ns {
                break;
            }
            let wake = next_sample.min(end_ns).min(
                self.path_changes
                    .get(next_change)
                    .map_or(u64::MAX, |c| c.at),
            );
            std::thread::sleep(std::time::Duration::from_nanos(
                wake.saturating_sub(now).clamp(1, TICK_NS),
            ));
        }
        Sampled {
            outcome,
            links_stopped_at,
            flow_series,
            subflow_series,
        }
    }

    /// End the run and report it: read the endpoints' final counters and the devices' drops
    /// while everything still runs, stop and join every thread, remove the namespaces, then
    /// assemble the results tables and the report. The run's error, if it had one, is
    /// returned instead (after the threads have ended).
    fn collect(mut self, running: Running, sampled: Sampled) -> Result<crate::Outcome, EmuError> {
        for e in &mut self.endpoints {
            e.finish();
        }
        let device_drops = self
            .endpoints
            .iter()
            .flat_map(|e| [&e.ends().sender_ns, &e.ends().receiver_ns])
            .map(device_tx_drops)
            .sum();
        running.halt.store(true, Ordering::Relaxed);
        for t in running.apps {
            let _ = t.join();
        }
        let (mut driver, driver_result) = running
            .links
            .join()
            .map_err(|_| EmuError::Failed("the link emulator thread panicked".to_string()))?;
        if let Some(at) = sampled.links_stopped_at {
            return Err(EmuError::Failed(early_stop_message(at, &driver_result)));
        }
        sampled.outcome?;
        driver_result.map_err(|e| EmuError::Failed(format!("link emulator: {e}")))?;
        let wall_s = (sys::monotonic_ns() - self.wall_start) as f64 / 1e9;
        self.externals.stop();
        let namespaces = self.lab.names();
        let not_removed = self.lab.remove();
        if !not_removed.is_empty() {
            eprintln!("{}", lab::not_removed_warning(&not_removed));
        }

        let capture = self.finish_capture(&mut driver)?;
        let results = self.results(&driver, sampled.flow_series, sampled.subflow_series);
        let left = not_removed.into_iter().map(|(n, _)| n).collect();
        let report = self.report(&driver, device_drops, wall_s, namespaces, left);
        Ok(crate::Outcome {
            results,
            report,
            capture,
        })
    }

    /// Close the capture's files (after the link thread ended) and gather what it wrote.
    fn finish_capture(&self, driver: &mut Driver) -> Result<Option<CaptureOutput>, EmuError> {
        let Some(recorder) = driver.take_capture() else {
            return Ok(None);
        };
        let dirs = recorder.dirs();
        let (summary, log, warnings) = recorder
            .finish()
            .map_err(|e| EmuError::Failed(format!("capture: {e}")))?;
        let in_flight_at_end = dirs
            .iter()
            .map(|&d| driver.in_flight_at_end.get(d).copied().unwrap_or(0))
            .collect();
        Ok(Some(CaptureOutput {
            summary,
            log,
            warnings,
            in_flight_at_end,
        }))
    }
}
/// The ends of the flows whose applications run outside the emulator. Dropping it stops
/// whatever still runs in their namespaces, on every way out of a run.
struct Externals(Vec<Ends>);

impl Externals {
    /// Say on stderr, once the links run, where each external flow's ends are: one line in a
    /// fixed form per flow (`pathweave: external flow NAME: sender NS ADDR[,ADDR…] receiver
    /// NS ADDR`), then how to use it.
    fn announce(&self, end_ns: u64) {
        for e in &self.0 {
            let clients: Vec<String> = e.client.iter().map(|a| dotted(*a)).collect();
            eprintln!(
                "pathweave: external flow {}: sender {} {} receiver {} {}",
                e.name,
                e.sender_ns.name(),
                clients.join(","),
                e.receiver_ns.name(),
                dotted(e.server)
            );
        }
        if !self.0.is_empty() {
            eprintln!(
                "pathweave: the links run until {:.1} s from now; start the external flows' \
                 applications with `ip netns exec NAMESPACE …` (subflow k leaves from the k-th \
                 sender address); whatever still runs there at the end is stopped",
                end_ns as f64 / 1e9
            );
        }
    }

    /// Stop what runs in the external flows' namespaces (SIGTERM, SIGKILL after a second)
    /// and say so on stderr.
    fn stop(&mut self) {
        let ends = std::mem::take(&mut self.0);
        let namespaces: Vec<&Netns> = ends
            .iter()
            .flat_map(|e| [&e.sender_ns, &e.receiver_ns])
            .collect();
        if namespaces.is_empty() {
            return;
        }
        let stopped = lab::stop_processes_in(&namespaces, std::time::Duration::from_secs(1));
        if !stopped.is_empty() {
            let list: Vec<String> = stopped.iter().map(|(p, c)| format!("{c} ({p})")).collect();
            eprintln!(
                "pathweave: stopped {} process(es) still running in the external flows' \
                 namespaces at the end of the run: {}",
                stopped.len(),
                list.join(", ")
            );
        }
    }
}

impl Drop for Externals {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A sender address (path `p`, counted over all flows' subflows) in 198.18.0.0/16.
fn client_addr(p: usize) -> [u8; 4] {
    let n = p as u32 + 1;
    [198, 18, (n >> 8) as u8, n as u8]
}

/// Flow `i`'s receiver address in 198.19.0.0/16.
fn server_addr(i: usize) -> [u8; 4] {
    let n = i as u32 + 1;
    [198, 19, (n >> 8) as u8, n as u8]
}

/// `<pid>-<nonce>` in hex: the owning process is in every name, so a clean-up can tell a
/// killed run's named namespaces from a running one's. Also returns the two as one number
/// (`pid << 8 | nonce`), which names the run's BPF controllers.
fn run_id() -> (String, u64) {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed) & 0xff;
    let pid = std::process::id();
    (
        format!("{pid:x}-{n:02x}"),
        u64::from(pid) << 8 | u64::from(n),
    )
}

/// Inside namespace `ns`, on a thread of its own: write `sysctls`, open TUN `devices`, then
/// run `then` (a receiver's listener). Returns the TUN descriptors and what `then` returned.
fn prepare_namespace<T: Send>(
    ns: &Netns,
    sysctls: &[(&str, String)],
    devices: &[String],
    then: impl FnOnce() -> Result<T, String> + Send,
) -> Result<(Vec<OwnedFd>, T), EmuError> {
    let name = ns.name();
    std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<(Vec<OwnedFd>, T), EmuError> {
                ns.enter()
                    .map_err(|e| EmuError::Setup(format!("entering namespace {name}: {e}")))?;
                for (key, value) in sysctls {
                    let path = format!("/proc/sys/{}", key.replace('.', "/"));
                    std::fs::write(&path, value).map_err(|e| {
                        EmuError::Setup(format!("{name}: sysctl {key}={value}: {e}"))
                    })?;
                }
                let mut fds = Vec::with_capacity(devices.len());
                for d in devices {
                    fds.push(
                        sys::open_tun(d)
                            .map_err(|e| EmuError::Setup(format!("{name}: TUN device {d}: {e}")))?,
                    );
                }
                let t = then().map_err(|e| EmuError::Setup(format!("{name}: {e}")))?;
                Ok((fds, t))
            })
            .join()
            .map_err(|_| EmuError::Setup("a setup thread panicked".to_string()))?
    })
}

/// `Interrupted` once `stop` is set. Setup checks it before each flow's namespaces, so a stop
/// during a large run's setup takes effect within one flow's setup (what was made is removed
/// as on any setup error), not after all of them.
fn check_stop(stop: &AtomicBool) -> Result<(), EmuError> {
    if stop.load(Ordering::Relaxed) {
        return Err(EmuError::Interrupted);
    }
    Ok(())
}

/// Why a run ended when its link thread stopped `at_ns` into it, before the scenario's end:
/// the thread's own error, if it returned one.
fn early_stop_message(at_ns: u64, result: &std::io::Result<()>) -> String {
    let at = at_ns as f64 / 1e9;
    match result {
        Err(e) => format!("the link emulator stopped early, at {at:.3} s: {e}"),
        Ok(()) => format!("the link emulator stopped early, at {at:.3} s, without an error"),
    }
}

/// Packets the TUN devices of `ns` dropped on transmit (kernel to emulator): the fourth
/// figure after "TX:" in `ip -s -o link` (bytes, packets, errors, dropped).
fn device_tx_drops(ns: &Netns) -> u64 {
    let Ok(out) = ns
        .command("ip")
        .args(["-s", "-o", "link", "show"])
        .stdin(std::process::Stdio::null())
        .output()
    else {
        return 0;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains(": pw-"))
        .filter_map(|l| {
            let tx = l.split("TX:").nth(1)?;
            tx.split(|c: char| c.is_whitespace() || c == '\\')
                .filter_map(|t| t.parse::<u64>().ok())
                .nth(3)
        })
        .sum()
}

impl TestBed<'_> {
    /// The emulator's report on the run: its timing and whether it can be trusted, the
    /// transfers' checks, and what the run was made of (`namespaces`, of which
    /// `namespaces_left` could not be removed).
    fn report(
        &self,
        driver: &Driver,
        device_drops: u64,
        wall_s: f64,
        namespaces: Vec<String>,
        namespaces_left: Vec<String>,
    ) -> Report {
        let (scenario, endpoints, id) = (self.scenario, &self.endpoints, &self.id);
        let lateness = Lateness::of(&driver.lateness);
        let intake_wait = Lateness::of(&driver.intake_wait);
        let min_delay = scenario
            .links
            .iter()
            .flat_map(|l| [l.forward.delay.0, l.reverse.delay.0])
            .filter(|&d| d > 0)
            .min()
            .unwrap_or(1_000_000);
        let limit = min_delay / 10;
        let mut why = Vec::new();
        if lateness.p99_ns > limit {
            why.push(format!(
                "p99 lateness {:.3} ms exceeds a tenth of the smallest link delay ({:.3} ms)",
                lateness.p99_ns as f64 / 1e6,
                limit as f64 / 1e6
            ));
        }
        if intake_wait.p99_ns > limit {
            why.push(format!(
                "p99 intake wait {:.3} ms (a packet's time in its TUN device before the emulator \
                 read it, at most) exceeds a tenth of the smallest link delay ({:.3} ms)",
                intake_wait.p99_ns as f64 / 1e6,
                limit as f64 / 1e6
            ));
        }
        if driver.stats.emulator_drops > 0 {
            why.push(format!(
                "the emulator dropped {} packets because it fell behind",
                driver.stats.emulator_drops
            ));
        }
        if device_drops > 0 {
            why.push(format!(
                "the TUN devices dropped {device_drops} packets before the emulator read them"
            ));
        }
        let transfers = endpoints
            .iter()
            .filter_map(Endpoint::transfer_check)
            .collect();
        Report {
            run_id: id.to_string(),
            namespaces,
            namespaces_left,
            kernel_algorithms: endpoints
                .iter()
                .map(|e| e.congestion().to_string())
                .collect(),
            controllers_prefix: self.controllers.prefix().to_string(),
            weight_updates: self.controllers.weight_updates,
            controller_counters: self.controllers.counters(),
            lateness,
            intake_wait,
            lateness_limit_ns: limit,
            emulator_drops: driver.stats.emulator_drops,
            device_drops,
            realtime: driver.stats.realtime,
            link_thread_cpu_s: driver.stats.cpu_ns as f64 / 1e9,
            packets_read: driver.stats.read,
            reliable: why.is_empty(),
            unreliable_because: why,
            transfers,
            wall_s,
        }
    }

    /// The results tables, in the simulator's schema.
    fn results(
        &self,
        driver: &Driver,
        flow_series: FlowSeries,
        subflow_series: SubflowSeries,
    ) -> Results {
        let (scenario, endpoints, seed) = (self.scenario, &self.endpoints, self.seed);
        let end = scenario.duration.as_secs_f64();
        let mut ft = FlowTable::default();
        let mut st = SubflowTable::default();
        // Each subflow has a data route and a reverse route, flow after flow (see `TestBed::links`).
        let mut route_base = 0usize;
        for (i, (spec, e)) in scenario.flows.iter().zip(endpoints).enumerate() {
            let first_route = route_base;
            route_base += 2 * spec.subflows.len();
            let start = spec.start.as_secs_f64();
            let completion = e.completed_ns().map(|c| c as f64 / 1e9);
            let stop = spec.stop.map_or(end, |s| s.as_secs_f64().min(end));
            let window = (completion.unwrap_or(stop) - start).max(1e-9);
            let delivered = e.delivered();
            if e.is_external() {
                // The emulator sees the packets its data routes delivered, not the bytes
                // the applications received.
                let wire: u64 = (0..spec.subflows.len())
                    .map(|k| driver.stats.route_bytes[first_route + 2 * k])
                    .sum();
                ft.name.push(spec.name.clone());
                ft.group.push(spec.group.clone());
                ft.algorithm.push(e.algorithm().to_string());
                ft.start_s.push(0.0);
                ft.end_s.push(end);
                ft.delivered_bytes.push(0);
                ft.goodput_bps.push(f64::NAN);
                ft.throughput_bps.push(wire as f64 * 8.0 / end.max(1e-9));
                ft.packets_sent.push(0);
                ft.retransmits.push(0);
                ft.timeouts.push(0);
                ft.loss_events.push(0);
                ft.loss_event_rate.push(f64::NAN);
                ft.drops.push(driver.stats.flow_drops[i]);
                ft.mean_cwnd_bytes.push(f64::NAN);
                ft.mean_srtt_s.push(f64::NAN);
                ft.completion_s.push(f64::NAN);
                continue;
            }
            for (k, (sf, acc)) in spec
                .subflows
                .iter()
                .zip(e.subflows().unwrap_or_default())
                .enumerate()
            {
                let r = acc.last;
                st.flow.push(i as u32);
                st.subflow.push(k as u32);
                st.path.push(topology::path_label(scenario, sf));
                st.acked_bytes.push(r.acked_bytes);
                st.throughput_bps.push(r.acked_bytes as f64 * 8.0 / window);
                st.packets_sent.push(r.packets_sent);
                st.retransmits.push(r.retransmits);
                st.drops.push(driver.stats.route_drops[first_route + 2 * k]);
                st.timeouts.push(r.timeouts);
                st.loss_events.push(r.loss_events);
                st.loss_event_rate
                    .push(ratio(r.loss_events, r.packets_sent));
                st.mean_cwnd_bytes.push(mean(acc.cwnd_sum, acc.samples));
                st.mean_srtt_s.push(mean(acc.srtt_sum, acc.srtt_n));
            }
            let c = e.counters();
            ft.name.push(spec.name.clone());
            ft.group.push(spec.group.clone());
            ft.algorithm.push(e.algorithm().to_string());
            ft.start_s.push(start);
            ft.end_s.push(completion.unwrap_or(stop));
            ft.delivered_bytes.push(delivered);
            ft.goodput_bps.push(delivered as f64 * 8.0 / window);
            ft.throughput_bps.push(delivered as f64 * 8.0 / window);
            ft.packets_sent.push(c.packets_sent);
            ft.retransmits.push(c.retransmits);
            ft.timeouts.push(c.timeouts);
            ft.loss_events.push(c.loss_events);
            ft.loss_event_rate
                .push(ratio(c.loss_events, c.packets_sent));
            ft.drops.push(driver.stats.flow_drops[i]);
            ft.mean_cwnd_bytes.push(e.mean_cwnd_bytes());
            ft.mean_srtt_s.push(e.mean_srtt_s());
            ft.completion_s
                .push(completion.map_or(f64::NAN, |c| c - start));
        }
        let lt = topology::link_table(scenario, &driver.links, end);
        let fairness = topology::fairness(&ft);
        let d = &driver.stats;
        let mut series = SeriesChunk {
            flows: flow_series,
            subflows: subflow_series,
            links: driver.link_series.clone(),
        };
        // The emulator samples everything; keep what the scenario's [series] records.
        scenario.series.restrict(&mut series);
        Results {
            scenario: scenario.name.clone(),
            seed,
            flows: ft,
            subflows: st,
            links: lt,
            flow_series: series.flows,
            subflow_series: series.subflows,
            link_series: series.links,
            fairness,
            stats: RunStats {
                simulated_s: end,
                events: d.events,
                packets_created: d.read,
                packets_delivered: d.written,
                packets_dropped: d.dropped_queue,
                packets_lost_on_wire: d.lost_on_wire,
                packets_in_flight: d.in_links,
                peak_packets: d.peak_packets,
            },
        }
    }
}

/// `events` per packet, 0 for no packets.
fn ratio(events: u64, packets: u64) -> f64 {
    if packets > 0 {
        events as f64 / packets as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_early_stop_of_the_link_thread_gives_its_reason() {
        let e = std::io::Error::other("writing to TUN device pw-1-00-0: No buffer space");
        let m = early_stop_message(1_250_000_000, &Err(e));
        assert_eq!(
            m,
            "the link emulator stopped early, at 1.250 s: writing to TUN device pw-1-00-0: \
             No buffer space"
        );
        assert!(early_stop_message(2_000_000, &Ok(())).ends_with("at 0.002 s, without an error"));
    }
}
