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

pub mod files;
pub mod packets;
pub mod pcapng;
pub mod sha256;

use crate::link::LinkDir;
use crate::net::RouteInfo;
use crate::packet::{unfold, PacketId, PacketPool};
use crate::scenario::{FlowKind, Scenario, Transport};
pub use files::{CaptureFiles, Engine, LogRow};
use packets::{Endpoints, Options, Segment, ACK, PSH, SYN, WINDOW_SHIFT};
use pathweave_cc::Instant;
use std::collections::HashSet;
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
pub enum DropCause {
    /// The buffer was full.
    Overflow,
    /// RED's random early drop.
    Early,
    /// RED's forced drop.
    Forced,
}

impl DropCause {
    /// The comment a capture file gives a packet dropped for this cause.
    pub fn comment(self) -> &'static str {
        match self {
            DropCause::Overflow => "dropped: queue overflow",
            DropCause::Early => "dropped: RED early drop",
            DropCause::Forced => "dropped: RED forced drop",
        }
    }
}

/// The comment a capture file gives a packet lost on the wire.
pub const WIRE_LOSS: &str = "dropped: lost on the wire";

/// A run's capture: the open files, the queue log and what the packets are built from.
pub struct Capture {
    files: CaptureFiles,
    /// Per link direction: the global subflow indices whose handshake its file already
    /// holds.
    greeted: Vec<HashSet<u32>>,
    templates: Vec<Template>,
    /// Per route: the last subflow and data sequence numbers seen, which the low 32 bits a
    /// link holds unfold against.
    last: Vec<(u64, u64)>,
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
        let names: Vec<&str> = scenario.links.iter().map(|l| l.name.as_str()).collect();
        let files = CaptureFiles::create(spec, dir, &names, Engine::Simulated)?;
        Ok(Capture {
            files,
            greeted: (0..n_dirs.max(2 * names.len()))
                .map(|_| HashSet::new())
                .collect(),
            last: vec![(0, 0); templates.len()],
            templates,
            scratch: Vec::with_capacity(256),
        })
    }

    /// Whether link direction `d` is captured.
    #[inline]
    pub(crate) fn captures(&self, d: usize) -> bool {
        self.files.captures(d)
    }

    /// Rows of the queue log not yet taken.
    pub fn log_pending(&self) -> usize {
        self.files.log_pending()
    }

    /// Move out the queue log's rows recorded since the last call.
    pub fn take_log(&mut self) -> PacketLog {
        self.files.take_log()
    }

    /// Move out the warnings raised since the last call (files that reached their limit,
    /// the queue log reaching its own).
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.files.take_warnings()
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
        self.files.log_row(LogRow {
            time: t,
            link_dir: d as u32,
            flow: info.flow,
            subflow: info.sub as u32,
            sequence: seq,
            bytes: size,
            event,
            queue_packets: queue.0,
            queue_bytes: queue.1,
        });
    }

    /// Log the transmissions that started at link direction `d` by `now` (its dequeues).
    pub(crate) fn advance(
        &mut self,
        d: usize,
        link: &mut LinkDir,
        now: Instant,
        net: &NetView<'_>,
    ) {
        if !self.files.spec().events {
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
        if !self.files.spec().events {
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
        if !self.files.writing(d) {
            return;
        }
        let t = self.templates[route];
        let first = self.greeted[d].insert(t.subflow);
        let mut out = std::mem::take(&mut self.scratch);
        if first {
            for &hs in handshake(&t) {
                out.clear();
                let orig = write_handshake(&mut out, &t, hs);
                self.files.emit(d, ts, &out, orig, None, defer);
            }
        }
        out.clear();
        let orig = write_packet(&mut out, &t, f);
        self.files.emit(d, ts, &out, orig, comment, defer);
        self.scratch = out;
    }

    /// Write what is held back and close every file.
    pub fn finish(self) -> Result<CaptureSummary, String> {
        self.files.finish()
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

    /// The emulator's addressing: subflow p's sender at 198.18.(p+1), flow i's receiver at
    /// 198.19.(i+1).
    #[test]
    fn addresses_follow_the_emulator() {
        assert_eq!(client_addr(0), [198, 18, 0, 1]);
        assert_eq!(client_addr(255), [198, 18, 1, 0]);
        assert_eq!(server_addr(2), [198, 19, 0, 3]);
    }
}
