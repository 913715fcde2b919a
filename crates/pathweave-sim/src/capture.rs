//! Packet captures and the per-packet queue log.
//!
//! With capture on, every captured link direction gets a pcapng file,
//! `<link>-<direction>.pcapng` ([`pcapng`]), holding a packet for each one that leaves the
//! link's transmitter (stamped with its transmission end), for each one its queue drops
//! (stamped with the drop time) and for each one lost on the wire; the packets are built
//! from what the simulator knows of them ([`packets`]): addresses per flow and subflow as the
//! emulator gives them, TCP sequence and acknowledgement numbers in bytes, SACK blocks,
//! MPTCP's options, UDP for constant-rate flows, a QUIC short header for QUIC flows. With
//! `events`, the queue log records every enqueue, drop and transmission start (dequeue) at
//! the captured link directions, with the queue left behind, in [`PacketLog`] columns.
//!
//! Nothing here runs when capture is off: the network holds the capture as an `Option`, and
//! the event loop that captures is a loop of its own.

pub mod packets;
pub mod pcapng;
pub mod sha256;

use crate::link::LinkDir;
use crate::net::RouteInfo;
use crate::packet::{unfold, PacketId, PacketPool};
use crate::scenario::{FlowKind, Scenario, Transport};
use packets::{Endpoints, Options, Segment, ACK, PSH, SYN, WINDOW_SHIFT};
use pathweave_cc::Instant;
use pcapng::{PcapngWriter, Written, FLAG_OUTBOUND, LINKTYPE_RAW};
use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// The default snapshot length: every header the capture writes fits (IPv4, TCP with 40
/// bytes of options: 80 bytes).
pub const DEFAULT_SNAPLEN: u32 = 128;
/// The largest snapshot length.
pub const MAX_SNAPLEN: u32 = 65_535;
/// The smallest: an IPv4 header.
pub const MIN_SNAPLEN: u32 = 20;
/// The default byte limit of one capture file.
pub const DEFAULT_MAX_BYTES: u64 = 100_000_000;
/// The default row limit of the queue log.
pub const DEFAULT_MAX_EVENTS: u64 = 100_000_000;
/// The largest row limit of the queue log that may be asked for.
pub const MAX_MAX_EVENTS: u64 = 10_000_000_000;

/// What `[capture]` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureSpec {
    /// The link directions captured (`2·link + reverse`), ascending.
    pub dirs: Vec<u32>,
    /// Bytes of each packet written at most.
    pub snaplen: u32,
    /// Bytes of one file at most.
    pub max_bytes: u64,
    /// Whether the queue log is kept.
    pub events: bool,
    /// Rows of the queue log at most.
    pub max_events: u64,
}

impl CaptureSpec {
    /// Both directions of every link, with the defaults: what `--pcap` without a
    /// `[capture]` table captures.
    pub fn everything(links: usize) -> CaptureSpec {
        CaptureSpec {
            dirs: (0..2 * links as u32).collect(),
            snaplen: DEFAULT_SNAPLEN,
            max_bytes: DEFAULT_MAX_BYTES,
            events: false,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

/// The queue log's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LogEvent {
    /// Accepted into the queue.
    Enqueue = 0,
    /// Dropped on arrival (buffer full, or RED).
    Drop = 1,
    /// Left the queue: its transmission started.
    Dequeue = 2,
}

/// The names of [`LogEvent`] by code, as the log's `event` column holds them.
pub const LOG_EVENTS: [&str; 3] = ["enqueue", "drop", "dequeue"];

/// The queue log, as columns. `link_dir` is `2·link + reverse`; the written table names the
/// link and the direction instead.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketLog {
    /// Simulated time of the event (s).
    pub time_s: Vec<f64>,
    /// The link direction.
    pub link_dir: Vec<u32>,
    /// The flow (index in the scenario).
    pub flow: Vec<u32>,
    /// The subflow of the flow.
    pub subflow: Vec<u32>,
    /// A data segment's subflow sequence number or an ACK's cumulative ACK, in segments; a
    /// datagram's sequence number.
    pub sequence: Vec<u64>,
    /// Size on the wire.
    pub bytes: Vec<u32>,
    /// [`LogEvent`] code.
    pub event: Vec<u8>,
    /// Bytes waiting after the event.
    pub queue_bytes: Vec<u64>,
    /// Packets waiting after the event.
    pub queue_packets: Vec<u32>,
}

impl PacketLog {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.time_s.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.time_s.is_empty()
    }
}

/// One capture file, as finished.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureFile {
    /// File name in the capture directory.
    pub name: String,
    /// The link.
    pub link: String,
    /// "forward" or "reverse".
    pub direction: String,
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Whether it stopped at `max_bytes`.
    pub truncated: bool,
}

/// What a finished capture wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CaptureSummary {
    /// The files, by link direction.
    pub files: Vec<CaptureFile>,
    /// Rows the queue log recorded.
    pub log_rows: u64,
    /// Whether the queue log stopped at `max_events`.
    pub log_truncated: bool,
}

/// MPTCP state of one subflow direction (RFC 8684): the keys and what follows from them.
#[derive(Clone, Copy, Debug)]
struct Mptcp {
    /// The initiator's and the listener's keys.
    key_client: u64,
    key_server: u64,
    /// Initial data sequence numbers: the low 64 bits of the SHA-256 of each key (§3.1).
    idsn_client: u64,
    idsn_server: u64,
    /// The listener's token: the high 32 bits of the SHA-256 of its key (§3.2).
    token_server: u32,
    nonce_client: u32,
    nonce_server: u32,
    subflow: u16,
}

#[derive(Clone, Copy, Debug)]
enum Proto {
    Tcp { mptcp: Option<Mptcp>, sack: bool },
    Udp,
    Quic { dcid: [u8; 8] },
}

/// How the packets of one route are written.
#[derive(Clone, Copy, Debug)]
struct Template {
    /// This route's direction (client to server for a data route).
    ep: Endpoints,
    proto: Proto,
    /// Whether the route carries data (client to server) or ACKs.
    data: bool,
    /// The global subflow index (routes `2·p` and `2·p + 1`).
    subflow: u32,
    mss: u32,
    /// Header bytes the scenario counts on this route's packets (a data segment's `header`,
    /// an ACK's `ack_size`).
    header: u32,
    isn_client: u32,
    isn_server: u32,
}

/// A packet as the capture reads it.
#[derive(Clone, Copy, Debug, Default)]
struct Fields {
    size: u32,
    seq: u64,
    dsn: u64,
    rwnd: u32,
    nsack: usize,
    sack: [(u64, u64); crate::packet::MAX_SACK_BLOCKS],
}

/// A record held back until the packets transmitted before it have been written.
struct Pending {
    ts: u64,
    orig: u32,
    data: Vec<u8>,
    comment: &'static str,
}

struct DirState {
    file: CaptureFile,
    writer: Option<PcapngWriter<BufWriter<File>>>,
    pending: VecDeque<Pending>,
    /// Global subflow indices whose handshake this file already holds.
    greeted: HashSet<u32>,
}

/// What the network lends the capture to read a packet it holds.
pub(crate) struct NetView<'a> {
    pub hop_route: &'a [u32],
    pub routes: &'a [RouteInfo],
    pub pool: &'a PacketPool,
}

/// A packet as a link direction holds it: the network's eight bytes for it, its size and its
/// tag (hop position, marked if the packet is kept in the pool).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    pub word: u64,
    pub size: u32,
    pub tag: u32,
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropCause {
    Overflow,
    Early,
    Forced,
}

impl DropCause {
    fn comment(self) -> &'static str {
        match self {
            DropCause::Overflow => "dropped: queue overflow",
            DropCause::Early => "dropped: RED early drop",
            DropCause::Forced => "dropped: RED forced drop",
        }
    }
}

const WIRE_LOSS: &str = "dropped: lost on the wire";

/// A run's capture: the open files, the queue log and what the packets are built from.
pub struct Capture {
    spec: CaptureSpec,
    dirs: Vec<Option<DirState>>,
    templates: Vec<Template>,
    /// Per route: the last subflow and data sequence numbers seen, which the low 32 bits a
    /// link holds unfold against.
    last: Vec<(u64, u64)>,
    log: PacketLog,
    log_rows: u64,
    log_truncated: bool,
    warnings: Vec<String>,
    error: Option<String>,
    scratch: Vec<u8>,
}

/// splitmix64: the capture's numbers (keys, initial sequence numbers, nonces) from the seed.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn derive(seed: u64, what: u64, i: u64) -> u64 {
    mix(mix(seed ^ mix(what)) ^ i)
}

/// A sender address: subflow `p`, counted over all flows' subflows, in 198.18.0.0/16 (as
/// the emulator addresses its paths).
pub fn client_addr(p: usize) -> [u8; 4] {
    let n = p as u32 + 1;
    [198, 18, (n >> 8) as u8, n as u8]
}

/// Flow `i`'s receiver address in 198.19.0.0/16 (as the emulator's).
pub fn server_addr(i: usize) -> [u8; 4] {
    let n = i as u32 + 1;
    [198, 19, (n >> 8) as u8, n as u8]
}

/// The port a receiver listens on (TCP and constant-rate UDP).
pub const SERVER_PORT: u16 = 5201;
/// The port a QUIC receiver listens on.
pub const QUIC_PORT: u16 = 443;
/// Subflow `j`'s sender port is this plus `j`.
pub const CLIENT_PORT_BASE: u16 = 40000;

/// The high 32 bits (token) and low 64 bits (IDSN) of SHA-256 of an MPTCP key (RFC 8684
/// §3.1, §3.2).
pub fn token_and_idsn(key: u64) -> (u32, u64) {
    let h = sha256::sha256(&key.to_be_bytes());
    let token = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let mut low = [0u8; 8];
    low.copy_from_slice(&h[24..32]);
    (token, u64::from_be_bytes(low))
}

/// A file name for a link direction: the link's name with characters other than letters,
/// digits, `.`, `_` and `-` replaced by `_`.
fn file_name(link: &str, reverse: bool) -> String {
    let safe: String = link
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    let dir = if reverse { "reverse" } else { "forward" };
    format!("{safe}-{dir}.pcapng")
}

impl Capture {
    /// Open the files of `spec` in `dir` (which exists) for a run of `scenario` with `seed`.
    pub fn new(
        scenario: &Scenario,
        seed: u64,
        spec: &CaptureSpec,
        dir: &Path,
        n_dirs: usize,
    ) -> std::io::Result<Capture> {
        let templates = templates(scenario, seed);
        let mut dirs: Vec<Option<DirState>> = (0..n_dirs).map(|_| None).collect();
        let mut used = HashSet::new();
        let app = format!("pathweave {} (simulated)", env!("CARGO_PKG_VERSION"));
        for &d in &spec.dirs {
            let (link, reverse) = ((d / 2) as usize, d % 2 == 1);
            let Some(l) = scenario.links.get(link) else {
                continue;
            };
            let mut name = file_name(&l.name, reverse);
            if !used.insert(name.clone()) {
                name = file_name(&format!("{}-{link}", l.name), reverse);
                used.insert(name.clone());
            }
            let direction = if reverse { "reverse" } else { "forward" };
            let out = BufWriter::with_capacity(1 << 16, File::create(dir.join(&name))?);
            let writer = PcapngWriter::new(
                out,
                &app,
                LINKTYPE_RAW,
                spec.snaplen,
                &format!("{}-{direction}", l.name),
                &format!(
                    "simulated link {} ({direction}), stamped at transmission end",
                    l.name
                ),
                spec.max_bytes,
            )?;
            dirs[d as usize] = Some(DirState {
                file: CaptureFile {
                    name,
                    link: l.name.clone(),
                    direction: direction.to_string(),
                    packets: 0,
                    bytes: 0,
                    truncated: false,
                },
                writer: Some(writer),
                pending: VecDeque::new(),
                greeted: HashSet::new(),
            });
        }
        Ok(Capture {
            spec: spec.clone(),
            dirs,
            last: vec![(0, 0); templates.len()],
            templates,
            log: PacketLog::default(),
            log_rows: 0,
            log_truncated: false,
            warnings: Vec::new(),
            error: None,
            scratch: Vec::with_capacity(256),
        })
    }

    /// Whether link direction `d` is captured.
    #[inline]
    pub(crate) fn captures(&self, d: usize) -> bool {
        matches!(self.dirs.get(d), Some(Some(_)))
    }

    /// Rows of the queue log not yet taken.
    pub fn log_pending(&self) -> usize {
        self.log.len()
    }

    /// Move out the queue log's rows recorded since the last call.
    pub fn take_log(&mut self) -> PacketLog {
        std::mem::take(&mut self.log)
    }

    /// Move out the warnings raised since the last call (files that reached their limit,
    /// the queue log reaching its own).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Read a packet a link holds as `word` and `tag`.
    fn fields(
        &mut self,
        route: usize,
        word: u64,
        tag: u32,
        size: u32,
        net: &NetView<'_>,
    ) -> Fields {
        let mut f = Fields {
            size,
            rwnd: u32::MAX,
            ..Fields::default()
        };
        match crate::net::Net::pooled(word, tag) {
            Some(id) => {
                let p = net.pool.get(PacketId(id.0));
                f.seq = p.seq;
                f.dsn = p.dsn;
                f.rwnd = p.rwnd;
                for (k, b) in p.sack_blocks().enumerate() {
                    f.sack[k] = b;
                    f.nsack = k + 1;
                }
            }
            None => {
                let (s, d) = self.last[route];
                f.seq = unfold(s, word as u32);
                f.dsn = unfold(d, (word >> 32) as u32);
            }
        }
        self.last[route] = (f.seq, f.dsn);
        f
    }

    fn log_row(
        &mut self,
        t: Instant,
        d: usize,
        info: RouteInfo,
        (seq, size): (u64, u32),
        event: LogEvent,
        queue: (u32, u64),
    ) {
        if !self.spec.events || self.log_truncated {
            return;
        }
        if self.log_rows >= self.spec.max_events {
            self.log_truncated = true;
            self.warnings.push(format!(
                "capture: the queue log reached max_events ({} rows) at {:.6} s; later events \
                 are not recorded",
                self.spec.max_events,
                t.as_secs_f64()
            ));
            return;
        }
        self.log_rows += 1;
        let l = &mut self.log;
        l.time_s.push(t.as_secs_f64());
        l.link_dir.push(d as u32);
        l.flow.push(info.flow);
        l.subflow.push(info.sub as u32);
        l.sequence.push(seq);
        l.bytes.push(size);
        l.event.push(event as u8);
        l.queue_bytes.push(queue.1);
        l.queue_packets.push(queue.0);
    }

    /// Log the transmissions that started at link direction `d` by `now` (its dequeues).
    pub(crate) fn advance(
        &mut self,
        d: usize,
        link: &mut LinkDir,
        now: Instant,
        net: &NetView<'_>,
    ) {
        if !self.spec.events {
            link.queue_len(now);
            return;
        }
        let mut started = Vec::new();
        link.advance_logged(now, |start, word, size, tag, q| {
            started.push((start, word, size, tag, q));
        });
        for (start, word, size, tag, q) in started {
            let route = net.hop_route[(tag & !crate::net::Net::POOLED) as usize] as usize;
            let f = self.fields(route, word, tag, size, net);
            let info = net.routes[route];
            self.log_row(start, d, info, (f.seq, size), LogEvent::Dequeue, q);
        }
    }

    /// A packet was accepted into link direction `d` at `now`; `queue` is what waits after
    /// it, `started` whether its transmission started at once.
    pub(crate) fn on_enqueue(
        &mut self,
        d: usize,
        now: Instant,
        p: Held,
        queue: (u32, u64),
        started: bool,
        net: &NetView<'_>,
    ) {
        if !self.spec.events {
            return;
        }
        let route = net.hop_route[(p.tag & !crate::net::Net::POOLED) as usize] as usize;
        let f = self.fields(route, p.word, p.tag, p.size, net);
        let info = net.routes[route];
        let row = (f.seq, p.size);
        if started {
            let before = (queue.0 + 1, queue.1 + p.size as u64);
            self.log_row(now, d, info, row, LogEvent::Enqueue, before);
            self.log_row(now, d, info, row, LogEvent::Dequeue, queue);
        } else {
            self.log_row(now, d, info, row, LogEvent::Enqueue, queue);
        }
    }

    /// A packet offered to link direction `d` at `now` was dropped.
    pub(crate) fn on_drop(
        &mut self,
        d: usize,
        now: Instant,
        p: Held,
        cause: DropCause,
        queue: (u32, u64),
        net: &NetView<'_>,
    ) {
        let route = net.hop_route[(p.tag & !crate::net::Net::POOLED) as usize] as usize;
        let f = self.fields(route, p.word, p.tag, p.size, net);
        self.log_row(
            now,
            d,
            net.routes[route],
            (f.seq, p.size),
            LogEvent::Drop,
            queue,
        );
        self.record(d, now.0, route, &f, Some(cause.comment()), true);
    }

    /// A packet left link direction `d`'s transmitter at `ts` (and reached the next hop, or
    /// was lost on the wire).
    pub(crate) fn on_egress(
        &mut self,
        d: usize,
        ts: Instant,
        p: Held,
        lost: bool,
        net: &NetView<'_>,
    ) {
        let route = net.hop_route[(p.tag & !crate::net::Net::POOLED) as usize] as usize;
        let f = self.fields(route, p.word, p.tag, p.size, net);
        self.record(d, ts.0, route, &f, lost.then_some(WIRE_LOSS), false);
    }

    /// Write (or, with `defer`, hold back) the packet `f` of `route` at link direction `d`,
    /// after its subflow's handshake if this file has not seen the subflow yet.
    fn record(
        &mut self,
        d: usize,
        ts: u64,
        route: usize,
        f: &Fields,
        comment: Option<&'static str>,
        defer: bool,
    ) {
        let Some(Some(state)) = self.dirs.get_mut(d) else {
            return;
        };
        if state.writer.is_none() {
            return;
        }
        let t = self.templates[route];
        let first = state.greeted.insert(t.subflow);
        let mut out = std::mem::take(&mut self.scratch);
        if first {
            for &hs in handshake(&t) {
                out.clear();
                let orig = write_handshake(&mut out, &t, hs);
                self.emit(d, ts, &out, orig, None, defer);
            }
        }
        out.clear();
        let orig = write_packet(&mut out, &t, f);
        self.emit(d, ts, &out, orig, comment, defer);
        self.scratch = out;
    }

    fn emit(
        &mut self,
        d: usize,
        ts: u64,
        data: &[u8],
        orig: u32,
        comment: Option<&'static str>,
        defer: bool,
    ) {
        let snap = (self.spec.snaplen as usize).min(data.len());
        if defer {
            if let Some(Some(s)) = self.dirs.get_mut(d) {
                s.pending.push_back(Pending {
                    ts,
                    orig,
                    data: data[..snap].to_vec(),
                    comment: comment.unwrap_or(""),
                });
            }
            return;
        }
        self.flush_pending(d, Some(ts));
        self.write(d, ts, &data[..snap], orig, comment);
    }

    /// Write the held-back records of link direction `d` stamped at or before `upto` (all
    /// with `None`).
    fn flush_pending(&mut self, d: usize, upto: Option<u64>) {
        loop {
            let Some(Some(s)) = self.dirs.get_mut(d) else {
                return;
            };
            match s.pending.front() {
                Some(p) if upto.is_none_or(|u| p.ts <= u) => {}
                _ => return,
            }
            let Some(p) = s.pending.pop_front() else {
                return;
            };
            let comment = (!p.comment.is_empty()).then_some(p.comment);
            self.write(d, p.ts, &p.data, p.orig, comment);
        }
    }

    fn write(&mut self, d: usize, ts: u64, data: &[u8], orig: u32, comment: Option<&str>) {
        let Some(Some(s)) = self.dirs.get_mut(d) else {
            return;
        };
        let Some(w) = s.writer.as_mut() else {
            return;
        };
        match w.packet(ts, data, orig, FLAG_OUTBOUND, comment) {
            Ok(Written::Yes) | Ok(Written::Stopped) => {}
            Ok(Written::LimitReached) => {
                s.file.truncated = true;
                s.pending.clear();
                self.warnings.push(format!(
                    "capture: {} reached max_bytes ({} bytes) at {:.6} s; later packets of \
                     that link direction are not captured",
                    s.file.name,
                    self.spec.max_bytes,
                    ts as f64 / 1e9
                ));
            }
            Err(e) => {
                s.writer = None;
                if self.error.is_none() {
                    self.error = Some(format!("cannot write {}: {e}", s.file.name));
                }
            }
        }
    }

    /// Write what is held back and close every file.
    pub fn finish(mut self) -> Result<CaptureSummary, String> {
        let mut files = Vec::new();
        for d in 0..self.dirs.len() {
            self.flush_pending(d, None);
            let Some(Some(mut s)) = self.dirs.get_mut(d).map(Option::take) else {
                continue;
            };
            if let Some(w) = s.writer.take() {
                s.file.packets = w.packets();
                s.file.bytes = w.bytes();
                if let Err(e) = w.finish() {
                    if self.error.is_none() {
                        self.error = Some(format!("cannot write {}: {e}", s.file.name));
                    }
                }
            }
            files.push(s.file);
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(CaptureSummary {
            files,
            log_rows: self.log_rows,
            log_truncated: self.log_truncated,
        })
    }
}

/// The templates of every route, in the simulator's order: for each flow, each subflow's
/// data route, then its ACK route.
fn templates(scenario: &Scenario, seed: u64) -> Vec<Template> {
    let mut out = Vec::new();
    let mut p = 0usize;
    for (i, f) in scenario.flows.iter().enumerate() {
        let keys = (derive(seed, 1, i as u64), derive(seed, 2, i as u64));
        let (token_server, idsn_server) = token_and_idsn(keys.1);
        let (_, idsn_client) = token_and_idsn(keys.0);
        for j in 0..f.subflows.len() {
            let (client, server) = (client_addr(p), server_addr(i));
            let cport = CLIENT_PORT_BASE.wrapping_add(j as u16);
            let (proto, mss, header, ack_size, sport_server) = match &f.kind {
                FlowKind::Tcp { cfg, .. } if cfg.transport == Transport::Quic => {
                    let mut dcid = [0u8; 8];
                    dcid.copy_from_slice(&derive(seed, 3, p as u64).to_be_bytes());
                    (Proto::Quic { dcid }, cfg.mss, cfg.header, 0, QUIC_PORT)
                }
                FlowKind::Tcp { cfg, .. } => {
                    let mptcp = f.runs_as_mptcp().then_some(Mptcp {
                        key_client: keys.0,
                        key_server: keys.1,
                        idsn_client,
                        idsn_server,
                        token_server,
                        nonce_client: derive(seed, 4, p as u64) as u32,
                        nonce_server: derive(seed, 5, p as u64) as u32,
                        subflow: j as u16,
                    });
                    let sack = cfg.recovery == crate::tcp::Recovery::Sack;
                    (
                        Proto::Tcp { mptcp, sack },
                        cfg.mss,
                        cfg.header,
                        cfg.ack_size,
                        SERVER_PORT,
                    )
                }
                FlowKind::Cbr { .. } => (Proto::Udp, 0, 28, 0, SERVER_PORT),
            };
            let isn = derive(seed, 6, p as u64);
            let base = Template {
                ep: Endpoints {
                    src: client,
                    dst: server,
                    sport: cport,
                    dport: sport_server,
                },
                proto,
                data: true,
                subflow: p as u32,
                mss,
                header,
                isn_client: isn as u32,
                isn_server: (isn >> 32) as u32,
            };
            out.push(base);
            out.push(Template {
                ep: Endpoints {
                    src: server,
                    dst: client,
                    sport: sport_server,
                    dport: cport,
                },
                data: false,
                header: ack_size,
                ..base
            });
            p += 1;
        }
    }
    out
}

/// The handshake segments that cross a link direction carrying route `t`: the SYN and the
/// third ACK on a data route, the SYN/ACK on an ACK route; none for UDP and QUIC.
fn handshake(t: &Template) -> &'static [Handshake] {
    match (t.proto, t.data) {
        (Proto::Tcp { .. }, true) => &[Handshake::Syn, Handshake::Ack],
        (Proto::Tcp { .. }, false) => &[Handshake::SynAck],
        _ => &[],
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handshake {
    Syn,
    SynAck,
    Ack,
}

fn join_hmacs(m: &Mptcp) -> ([u8; 32], [u8; 32]) {
    // RFC 8684 §3.2: HMAC-A = HMAC(Key=(Key-A+Key-B), Msg=(R-A+R-B)) from the initiator A,
    // HMAC-B = HMAC(Key=(Key-B+Key-A), Msg=(R-B+R-A)) from the listener B.
    let cat = |a: &[u8], b: &[u8]| [a, b].concat();
    let (ka, kb) = (m.key_client.to_be_bytes(), m.key_server.to_be_bytes());
    let (ra, rb) = (m.nonce_client.to_be_bytes(), m.nonce_server.to_be_bytes());
    let a = sha256::hmac_sha256(&cat(&ka, &kb), &cat(&ra, &rb));
    let b = sha256::hmac_sha256(&cat(&kb, &ka), &cat(&rb, &ra));
    (a, b)
}

fn write_handshake(out: &mut Vec<u8>, t: &Template, hs: Handshake) -> u32 {
    let Proto::Tcp { mptcp, sack } = t.proto else {
        return 0;
    };
    let mut o = Options::default();
    let (seq, ack, flags) = match hs {
        Handshake::Syn => (t.isn_client, 0, SYN),
        Handshake::SynAck => (t.isn_server, t.isn_client.wrapping_add(1), SYN | ACK),
        Handshake::Ack => (
            t.isn_client.wrapping_add(1),
            t.isn_server.wrapping_add(1),
            ACK,
        ),
    };
    if hs != Handshake::Ack {
        o.mss(t.mss.min(u16::MAX as u32) as u16);
        o.window_scale(WINDOW_SHIFT);
        if sack {
            o.sack_permitted();
        }
    }
    if let Some(m) = mptcp {
        if m.subflow == 0 {
            match hs {
                Handshake::Syn => o.mp_capable(&[]),
                Handshake::SynAck => o.mp_capable(&[m.key_server]),
                Handshake::Ack => o.mp_capable(&[m.key_client, m.key_server]),
            }
        } else {
            let (a, b) = join_hmacs(&m);
            let id = m.subflow.min(255) as u8;
            match hs {
                Handshake::Syn => o.mp_join_syn(id, m.token_server, m.nonce_client),
                Handshake::SynAck => {
                    let mut h = [0u8; 8];
                    h.copy_from_slice(&b[..8]);
                    o.mp_join_syn_ack(id, h, m.nonce_server)
                }
                Handshake::Ack => o.mp_join_ack(&a[..20]),
            }
        }
    }
    o.align();
    let seg = Segment {
        seq,
        ack,
        flags,
        window: u16::MAX,
        options: o.bytes(),
    };
    packets::tcp_packet(out, &t.ep, &seg, 0)
}

/// Bytes of a sequence number `n` segments past the initial one (32-bit arithmetic is exact:
/// the low 32 bits of `n · mss` depend only on the low 32 bits of `n`).
fn bytes_at(isn: u32, n: u64, mss: u32) -> u32 {
    isn.wrapping_add(1)
        .wrapping_add((n as u32).wrapping_mul(mss))
}

fn write_packet(out: &mut Vec<u8>, t: &Template, f: &Fields) -> u32 {
    match t.proto {
        Proto::Udp => packets::udp_packet(out, &t.ep, &[], f.size),
        Proto::Quic { dcid } => {
            let mut head = Vec::with_capacity(13);
            packets::quic_short_header(&mut head, &dcid, f.seq as u32);
            packets::udp_packet(out, &t.ep, &head, f.size)
        }
        Proto::Tcp { mptcp, .. } => {
            let mut o = Options::default();
            let header_target = t.header.saturating_sub(40) as usize;
            let seg = if t.data {
                // The model's payload: the size less the header bytes it counts.
                let payload = f.size.saturating_sub(t.header);
                if let Some(m) = mptcp {
                    let dsn = m
                        .idsn_client
                        .wrapping_add(1)
                        .wrapping_add(f.dsn.wrapping_mul(t.mss as u64));
                    let ssn = 1u32.wrapping_add((f.seq as u32).wrapping_mul(t.mss));
                    let data_ack = m.idsn_server.wrapping_add(1) as u32;
                    o.dss(
                        data_ack,
                        Some((dsn, ssn, payload.min(u16::MAX as u32) as u16)),
                    );
                }
                o.pad_to(header_target);
                Segment {
                    seq: bytes_at(t.isn_client, f.seq, t.mss),
                    ack: t.isn_server.wrapping_add(1),
                    flags: ACK | PSH,
                    window: 512,
                    options: &[],
                }
            } else {
                if let Some(m) = mptcp {
                    let data_ack = m
                        .idsn_client
                        .wrapping_add(1)
                        .wrapping_add(f.dsn.wrapping_mul(t.mss as u64));
                    o.dss(data_ack as u32, None);
                }
                let blocks: Vec<(u32, u32)> = f.sack[..f.nsack]
                    .iter()
                    .map(|&(s, e)| {
                        (
                            bytes_at(t.isn_client, s, t.mss),
                            bytes_at(t.isn_client, e, t.mss),
                        )
                    })
                    .collect();
                o.sack(&blocks);
                o.pad_to(header_target);
                let window = match f.rwnd {
                    u32::MAX => u16::MAX,
                    w => ((w as u64 * t.mss as u64) >> WINDOW_SHIFT).min(u16::MAX as u64) as u16,
                };
                Segment {
                    seq: t.isn_server.wrapping_add(1),
                    ack: bytes_at(t.isn_client, f.seq, t.mss),
                    flags: ACK,
                    window,
                    options: &[],
                }
            };
            let seg = Segment {
                options: o.bytes(),
                ..seg
            };
            // The payload the model carries behind the headers written (none on an ACK), so
            // that sequence numbers advance by each segment's own payload.
            let payload = match t.data {
                true => f.size.saturating_sub(t.header),
                false => 0,
            };
            packets::tcp_packet(out, &t.ep, &seg, 40 + o.bytes().len() as u32 + payload)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file name keeps the link's name where it is safe in a path.
    #[test]
    fn file_names_follow_the_link() {
        assert_eq!(file_name("bottleneck", false), "bottleneck-forward.pcapng");
        assert_eq!(file_name("a/b c", true), "a_b_c-reverse.pcapng");
    }

    /// The emulator's addressing: subflow p's sender at 198.18.(p+1), flow i's receiver at
    /// 198.19.(i+1).
    #[test]
    fn addresses_follow_the_emulator() {
        assert_eq!(client_addr(0), [198, 18, 0, 1]);
        assert_eq!(client_addr(255), [198, 18, 1, 0]);
        assert_eq!(server_addr(2), [198, 19, 0, 3]);
    }
}
