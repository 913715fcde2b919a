//! `[[flow]]`: TCP settings, traffic, start and stop times, and the paths of its subflows.

use super::control::CONTROL_PARAMS;
use super::topology::Route;
use super::values::{join, or_also, type_name};
use super::{
    ControlSpec, Hop, LinkSpec, Reader, MAX_HEADER_BYTES, MAX_MIN_RTO, MIN_CBR_INTERVAL, R,
};
use crate::datacenter::Fabric;
use crate::quantity::{clip, SIZE_UNITS};
use crate::tcp::{Period, Recovery, SchedulerKind, TcpConfig, Traffic};
use pathweave_cc::rtt::{RtoConfig, RtoRule};
use pathweave_cc::{Bandwidth, Bytes, Duration, Instant};
use std::collections::HashMap;
use toml::{Table, Value};

/// What a flow is.
// Specs are built once per run and never on the per-packet path, so the size of the TCP
// variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum FlowKind {
    /// A TCP flow.
    Tcp {
        /// Transport settings.
        cfg: TcpSettings,
        /// Congestion control.
        control: ControlSpec,
        /// What the application offers.
        traffic: Traffic,
    },
    /// An unresponsive constant-rate flow.
    Cbr {
        /// Sending rate.
        rate: Bandwidth,
        /// Datagram size on the wire.
        size: u32,
    },
}

/// TCP settings as written (a comparable copy of [`TcpConfig`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpSettings {
    /// Payload bytes per segment.
    pub mss: u32,
    /// Header bytes per data segment.
    pub header: u32,
    /// ACK size on the wire.
    pub ack_size: u32,
    /// Initial window in segments.
    pub initial_window: u32,
    /// Minimum RTO.
    pub min_rto: Duration,
    /// How the RTO follows from the RTT estimates, and whether a fast retransmission restarts
    /// the timer (`rto = "linux"`).
    pub rto: RtoRule,
    /// Delayed-ACK timeout, if any.
    pub delayed_ack: Option<Duration>,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Connection-level receive buffer in bytes, `None` for unlimited.
    pub receive_buffer: Option<u64>,
    /// How a multipath connection spreads new data over its subflows.
    pub scheduler: SchedulerKind,
    /// Limited transmit (RFC 3042).
    pub limited_transmit: bool,
    /// Proportional rate reduction (RFC 6937) in SACK recovery.
    pub prr: bool,
    /// SACK information kept across a retransmission timeout (Linux), with SACK recovery.
    pub keep_sack_on_rto: bool,
    /// Congestion-window validation as Linux does it: a window grows only on ACKs that find
    /// it in use (`tcp_is_cwnd_limited`).
    pub cwnd_validation: bool,
    /// Under `scheduler = "linux"`, whether data is pushed to a subflow as Linux MPTCP pushes
    /// it, in whole page fragments of the application's writes, so that the last segment of a
    /// push is short (`push_fragments`; [`crate::tcp::TcpConfig::push_fragments`]).
    pub push_fragments: bool,
    /// Whether an MPTCP connection's segments carry MPTCP's data-sequence option inside the
    /// segment size ([`MPTCP_DSS_DATA_BYTES`], [`MPTCP_DSS_ACK_BYTES`]). Set on a flow it
    /// says what was asked; a flow that runs as MPTCP ([`FlowSpec::runs_as_mptcp`]) then
    /// holds settings with the option already taken out of `mss` and added to `header` and
    /// `ack_size`.
    pub mptcp_options: bool,
    /// Whether a subflow sends its first data only after its handshake, as Linux does (see
    /// [`crate::topology::handshake_joins`]); without, every subflow sends from its start.
    /// A QUIC flow's paths wait for QUIC's handshake and path validation instead
    /// ([`crate::quic::handshake_joins`]).
    pub handshakes: bool,
    /// How the flow is carried: TCP (the default) or a multipath QUIC connection
    /// ([`crate::quic`]), which reads `mss`, `header`, `initial_window` and `handshakes` of
    /// these settings and `max_ack_delay`, and ignores the rest.
    pub transport: Transport,
    /// QUIC only: the receiver's `max_ack_delay` (RFC 9000 §18.2, 25 ms by default).
    pub max_ack_delay: Duration,
    /// The profile these settings started from (`profile`): it also chooses the coupled
    /// controllers' arithmetic where the flow does not write one.
    pub profile: Profile,
}

/// A named set of TCP settings (`[tcp] profile`, or a flow's `profile`). A profile sets each
/// of its keys as if written in the same table first: a key written beside it wins, and a
/// flow's own keys win over `[tcp]`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// The simulator's defaults ([`TcpSettings::default`]) for the profile's keys.
    #[default]
    Default,
    /// What the Linux kernel does, as far as the simulator models it: limited transmit
    /// (RFC 3042), proportional rate reduction (RFC 6937) and SACK kept across a timeout in
    /// SACK recovery, window growth only while the window is in use (congestion-window
    /// validation), MPTCP's DSS option inside the segment, Linux MPTCP's scheduler and its
    /// pushes of whole page fragments, the handshakes before a subflow's first data, and
    /// `arithmetic = "linux"` for the coupled controllers that have it.
    Linux,
}

impl Profile {
    /// The profiles by name.
    pub const NAMES: &'static [&'static str] = &["default", "linux"];

    /// The keys a profile sets (besides the controllers' `arithmetic`).
    pub const KEYS: &'static [&'static str] = &[
        "limited_transmit",
        "prr",
        "keep_sack_on_rto",
        "cwnd_validation",
        "rto",
        "mptcp_options",
        "scheduler",
        "push_fragments",
        "handshakes",
    ];

    /// `s` with this profile's keys set.
    pub fn apply(self, mut s: TcpSettings) -> TcpSettings {
        let linux = self == Profile::Linux;
        let d = TcpSettings::default();
        s.limited_transmit = if linux { true } else { d.limited_transmit };
        s.prr = if linux { true } else { d.prr };
        s.keep_sack_on_rto = if linux { true } else { d.keep_sack_on_rto };
        s.cwnd_validation = if linux { true } else { d.cwnd_validation };
        s.rto = if linux { RtoRule::Linux } else { d.rto };
        s.mptcp_options = if linux { true } else { d.mptcp_options };
        s.scheduler = if linux {
            SchedulerKind::Linux
        } else {
            d.scheduler
        };
        s.push_fragments = if linux { true } else { d.push_fragments };
        s.handshakes = if linux { true } else { d.handshakes };
        s.profile = self;
        s
    }
}

/// The transport that carries a congestion-controlled flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// TCP (one subflow per path for a multipath connection).
    #[default]
    Tcp,
    /// QUIC with the multipath extension (one QUIC path per subflow), as quinn implements it.
    Quic,
}

/// The keys a QUIC flow refuses: TCP's loss recovery, ACK policy, timer, receive window and
/// MPTCP settings, which QUIC replaces with its own (RFC 9000, RFC 9002). Given in `[tcp]`
/// they are defaults for the TCP flows and a QUIC flow ignores them.
pub const QUIC_REFUSED_KEYS: &[&str] = &[
    "recovery",
    "limited_transmit",
    "prr",
    "keep_sack_on_rto",
    "cwnd_validation",
    "rto",
    "mptcp_options",
    "scheduler",
    "push_fragments",
    "delayed_ack",
    "min_rto",
    "ack_size",
    "receive_buffer",
];

/// Bytes of MPTCP's DSS option on a data segment as Linux sends it: the 4-byte option head,
/// a 4-byte data ACK and the 14-byte mapping (64-bit data sequence number, subflow sequence
/// number, data-level length), 22 bytes padded to the TCP option alignment of 4 (RFC 8684
/// §3.3, Figure 7; a DSS checksum, when negotiated, fills the padding). The segment stays
/// within the path's MTU, so its payload shrinks by this much: with a 1040-byte MTU and no
/// timestamps a Linux subflow's full segments hold 976 bytes (its peer's `rcv_mss`, read
/// with `ss -ti`), a plain TCP segment 1000.
pub const MPTCP_DSS_DATA_BYTES: u32 = 24;

/// Bytes of MPTCP's DSS option on a pure ACK: the 4-byte head and a 4-byte data ACK (RFC 8684
/// §3.3).
pub const MPTCP_DSS_ACK_BYTES: u32 = 8;

impl TcpSettings {
    /// The settings of an MPTCP connection's subflows: with `mptcp_options`, each data
    /// segment gives [`MPTCP_DSS_DATA_BYTES`] of its payload to the option and each ACK
    /// grows by [`MPTCP_DSS_ACK_BYTES`]; without, unchanged. `None` if `mss` leaves no
    /// payload.
    pub fn for_mptcp(&self) -> Option<TcpSettings> {
        if !self.mptcp_options {
            return Some(*self);
        }
        Some(TcpSettings {
            mss: self
                .mss
                .checked_sub(MPTCP_DSS_DATA_BYTES)
                .filter(|&m| m > 0)?,
            header: self.header + MPTCP_DSS_DATA_BYTES,
            ack_size: self.ack_size + MPTCP_DSS_ACK_BYTES,
            ..*self
        })
    }

    /// The transport configuration.
    pub fn config(&self) -> TcpConfig {
        TcpConfig {
            mss: self.mss,
            header: self.header,
            ack_size: self.ack_size,
            initial_window: self.initial_window,
            rto: RtoConfig {
                min_rto: self.min_rto,
                rule: self.rto,
                ..RtoConfig::default()
            },
            delayed_ack: self.delayed_ack,
            recovery: self.recovery,
            dupthresh: 3,
            limited_transmit: self.limited_transmit,
            prr: self.prr,
            keep_sack_on_rto: self.keep_sack_on_rto,
            cwnd_validation: self.cwnd_validation,
            receive_buffer: self
                .receive_buffer
                .map(|b| b.div_ceil(self.mss as u64).clamp(1, u32::MAX as u64 - 1) as u32),
            scheduler: self.scheduler,
            push_fragments: self.push_fragments,
        }
    }
}

impl Default for TcpSettings {
    /// ns-2-like defaults: 1000-byte segments, 40-byte headers and ACKs, initial window 2,
    /// minimum RTO 200 ms, an ACK for every segment, NewReno recovery, no limited transmit
    /// (RFC 3042 is on in Linux, ns-3 and ns-2 — `singledup_ 1` — but the reproductions were
    /// validated without it; docs/reproductions.md, "Limited transmit").
    fn default() -> Self {
        TcpSettings {
            mss: 1000,
            header: 40,
            ack_size: 40,
            initial_window: 2,
            min_rto: Duration::from_millis(200),
            rto: RtoRule::Rfc6298,
            delayed_ack: None,
            recovery: Recovery::NewReno,
            receive_buffer: None,
            scheduler: SchedulerKind::MinRtt,
            limited_transmit: false,
            prr: false,
            keep_sack_on_rto: false,
            cwnd_validation: false,
            push_fragments: false,
            mptcp_options: false,
            handshakes: false,
            transport: Transport::Tcp,
            max_ack_delay: crate::quic::DEFAULT_MAX_ACK_DELAY,
            profile: Profile::Default,
        }
    }
}

/// The links read so far, and each one's index by name: paths look their links up here, so
/// a scenario of thousands of links and flows reads in linear time.
#[derive(Clone, Copy)]
pub(super) struct Links<'a> {
    /// In file order.
    pub(super) list: &'a [LinkSpec],
    /// Index in `list` by name.
    pub(super) index: &'a HashMap<String, usize>,
    /// The generated fabric, whose hosts `from` and `to` name.
    pub(super) fabric: Option<&'a Fabric>,
    /// The ECMP hash's seed and this flow's connection index.
    pub(super) route: Route,
}

/// One subflow of a flow: its path and, for multipath connections, when it joins and leaves.
#[derive(Clone, Debug, PartialEq)]
pub struct SubflowSpec {
    /// Links from sender to receiver.
    pub path: Vec<Hop>,
    /// When it joins, if later than the flow's start.
    pub start: Option<Instant>,
    /// When it leaves, if it does.
    pub stop: Option<Instant>,
}

/// A flow.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// Unique name.
    pub name: String,
    /// Group for fairness statistics.
    pub group: String,
    /// TCP or CBR, with its settings.
    pub kind: FlowKind,
    /// The subflows: one for a single-path flow, one per path for a multipath connection.
    pub subflows: Vec<SubflowSpec>,
    /// When it starts.
    pub start: Instant,
    /// When it stops offering new data, if before the end.
    pub stop: Option<Instant>,
    /// The fabric hosts it runs between (`from`, `to`), if routed over a `[topology]`.
    pub hosts: Option<(u32, u32)>,
}

/// Whether a TCP flow with this controller and this many subflows runs as an MPTCP
/// connection on a real stack: a multipath algorithm, or more than one path. Plain Reno, Veno
/// and Westwood on one path are single-path TCP.
fn runs_as_mptcp(control: &ControlSpec, subflows: usize) -> bool {
    subflows > 1 || !matches!(control.name.as_str(), "reno" | "veno" | "westwood")
}

impl FlowSpec {
    /// Whether this flow runs as an MPTCP connection on a real stack (see
    /// [`TcpSettings::mptcp_options`]); a CBR flow never does.
    pub fn runs_as_mptcp(&self) -> bool {
        match &self.kind {
            FlowKind::Tcp { control, .. } => runs_as_mptcp(control, self.subflows.len()),
            FlowKind::Cbr { .. } => false,
        }
    }
}

impl Reader<'_> {
    pub(super) fn tcp_settings(&self, t: &Table, path: &str, mut s: TcpSettings) -> R<TcpSettings> {
        // First, so that every key written beside it overrides it.
        if let Some(v) = t.get("profile") {
            let f = join(path, "profile");
            let profile = match self.string(&f, v)? {
                "default" => Profile::Default,
                "linux" => Profile::Linux,
                _ => {
                    return Err(self.invalid(
                        &f,
                        v,
                        format!(
                            "unknown profile (allowed: {}; docs/scenarios.md lists what each sets)",
                            Profile::NAMES
                                .iter()
                                .map(|n| format!("\"{n}\""))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
            };
            s = profile.apply(s);
        }
        if let Some(v) = t.get("mss") {
            s.mss = self.small_size(&join(path, "mss"), v, 65_000)?;
        }
        if let Some(v) = t.get("header") {
            s.header = self.header(&join(path, "header"), v)?;
        }
        if let Some(v) = t.get("ack_size") {
            s.ack_size = self.small_size(&join(path, "ack_size"), v, 65_000)?;
        }
        if let Some(v) = t.get("initial_window") {
            s.initial_window = self.whole(&join(path, "initial_window"), v, 1, 1000)? as u32;
        }
        if let Some(v) = t.get("min_rto") {
            let f = join(path, "min_rto");
            s.min_rto = self.positive_time(&f, v)?;
            if s.min_rto > MAX_MIN_RTO {
                return Err(self.invalid(
                    &f,
                    v,
                    "must be at most 60s, the RTO's upper bound (RFC 6298 (2.5))",
                ));
            }
        }
        if let Some(v) = t.get("delayed_ack") {
            let f = join(path, "delayed_ack");
            s.delayed_ack = match v {
                Value::Boolean(false) => None,
                Value::Boolean(true) => Some(Duration::from_millis(100)),
                _ => Some(self.positive_time(&f, v).map_err(|e| {
                    or_also(
                        e,
                        "true (acknowledge every second packet, 100 ms timer) or false",
                    )
                })?),
            };
        }
        if let Some(v) = t.get("receive_buffer") {
            let f = join(path, "receive_buffer");
            s.receive_buffer = match v {
                Value::Boolean(false) => None,
                _ => Some(
                    self.size(&f, v)
                        .map_err(|e| or_also(e, "false (unlimited)"))?,
                ),
            };
        }
        if let Some(v) = t.get("scheduler") {
            let f = join(path, "scheduler");
            s.scheduler = match self.string(&f, v)? {
                "minrtt" => SchedulerKind::MinRtt,
                "roundrobin" => SchedulerKind::RoundRobin,
                "linux" => SchedulerKind::Linux,
                _ => {
                    return Err(self.invalid(
                        &f,
                        v,
                        "allowed: \"minrtt\", \"roundrobin\", \"linux\"",
                    ))
                }
            };
        }
        if let Some(v) = t.get("limited_transmit") {
            s.limited_transmit = self.boolean(&join(path, "limited_transmit"), v)?;
        }
        if let Some(v) = t.get("recovery") {
            let f = join(path, "recovery");
            s.recovery = match self.string(&f, v)? {
                "reno" => Recovery::Reno,
                "newreno" => Recovery::NewReno,
                "sack" => Recovery::Sack,
                _ => return Err(self.invalid(&f, v, "allowed: \"reno\", \"newreno\", \"sack\"")),
            };
        }
        if let Some(v) = t.get("prr") {
            s.prr = self.boolean(&join(path, "prr"), v)?;
        }
        if let Some(v) = t.get("mptcp_options") {
            s.mptcp_options = self.boolean(&join(path, "mptcp_options"), v)?;
        }
        if let Some(v) = t.get("keep_sack_on_rto") {
            s.keep_sack_on_rto = self.boolean(&join(path, "keep_sack_on_rto"), v)?;
        }
        if let Some(v) = t.get("handshakes") {
            s.handshakes = self.boolean(&join(path, "handshakes"), v)?;
        }
        if let Some(v) = t.get("rto") {
            let f = join(path, "rto");
            s.rto = match self.string(&f, v)? {
                "rfc6298" => RtoRule::Rfc6298,
                "linux" => RtoRule::Linux,
                _ => return Err(self.invalid(&f, v, "allowed: \"rfc6298\", \"linux\"")),
            };
        }
        if let Some(v) = t.get("cwnd_validation") {
            s.cwnd_validation = self.boolean(&join(path, "cwnd_validation"), v)?;
        }
        if let Some(v) = t.get("push_fragments") {
            s.push_fragments = self.boolean(&join(path, "push_fragments"), v)?;
        }
        // Pushes of page fragments are Linux MPTCP's scheduler's own; written beside another
        // scheduler they are an error, set by the linux profile (whose scheduler a written one
        // replaced) they do nothing.
        if s.push_fragments
            && s.scheduler != SchedulerKind::Linux
            && t.contains_key("push_fragments")
        {
            let v = t
                .get("push_fragments")
                .cloned()
                .unwrap_or(Value::Boolean(true));
            return Err(self.invalid(
                &join(path, "push_fragments"),
                &v,
                "push_fragments = true needs scheduler = \"linux\" (the pushes are Linux \
                 MPTCP's sending side)",
            ));
        }
        // PRR replaces RFC 6675's `cwnd − pipe` rule, and only SACK recovery has SACKs to
        // keep across a timeout; the other recoveries have neither. Set by the linux profile
        // rather than written, they are not an error: they act under SACK recovery only.
        for (on, key, what) in [
            (
                s.prr,
                "prr",
                "proportional rate reduction works on the SACK scoreboard's pipe",
            ),
            (
                s.keep_sack_on_rto,
                "keep_sack_on_rto",
                "only SACK recovery keeps a scoreboard of what the receiver holds",
            ),
        ] {
            let from_profile = s.profile == Profile::Linux && !t.contains_key(key);
            if on && s.recovery != Recovery::Sack && !from_profile {
                let field_key = if t.contains_key(key) { key } else { "recovery" };
                let f = join(path, field_key);
                let v = t.get(field_key).cloned().unwrap_or(Value::Boolean(true));
                return Err(self.invalid(
                    &f,
                    &v,
                    format!("{key} = true needs recovery = \"sack\" ({what})"),
                ));
            }
        }
        // The receive buffer is kept in segments of mss, a u32; either key may be the one
        // written here (the other may come from [tcp]).
        if let Some(b) = s.receive_buffer {
            let segments = b.div_ceil(s.mss as u64);
            if segments >= u32::MAX as u64 {
                let key = if t.contains_key("receive_buffer") {
                    "receive_buffer"
                } else {
                    "mss"
                };
                let v = t.get(key).cloned().unwrap_or(Value::Integer(0));
                return Err(self.invalid(
                    &join(path, key),
                    &v,
                    format!(
                        "receive_buffer is {segments} segments of mss = {}B (at most {}); \
                         give a smaller receive_buffer or a larger mss",
                        s.mss,
                        u32::MAX - 1
                    ),
                ));
            }
        }
        Ok(s)
    }

    /// A QUIC flow's settings: `tcp` (the `[tcp]` defaults) with the flow's own `mss`,
    /// `header`, `initial_window` and `handshakes`, and `max_ack_delay`. TCP's recovery, ACK,
    /// timer, window and MPTCP keys are refused on the flow (QUIC has its own, RFC 9000 and
    /// RFC 9002); inherited from `[tcp]` they are ignored.
    fn quic_settings(&self, t: &Table, path: &str, tcp: &TcpSettings) -> R<TcpSettings> {
        for key in QUIC_REFUSED_KEYS {
            if let Some(v) = t.get(*key) {
                return Err(self.invalid(
                    &join(path, key),
                    v,
                    format!(
                        "{key} is a TCP setting and this flow has transport = \"quic\", whose \
                         loss recovery (RFC 9002), acknowledgements and flow control (RFC 9000) \
                         are its own; remove {key}, or give transport = \"tcp\""
                    ),
                ));
            }
        }
        let mut own = Table::new();
        for key in ["mss", "header", "initial_window", "handshakes", "profile"] {
            if let Some(v) = t.get(key) {
                own.insert(key.to_string(), v.clone());
            }
        }
        let mut s = self.tcp_settings(&own, path, *tcp)?;
        s.transport = Transport::Quic;
        if let Some(v) = t.get("max_ack_delay") {
            let f = join(path, "max_ack_delay");
            let d = self.time(&f, v)?;
            if d >= crate::quic::MAX_ACK_DELAY_LIMIT {
                return Err(self.invalid(
                    &f,
                    v,
                    "must be below 16384 ms (2^14 ms, RFC 9000 §18.2)",
                ));
            }
            s.max_ack_delay = d;
        }
        let wire = s.mss + s.header;
        let least = crate::quic::DATA_WIRE_OVERHEAD + 1;
        if wire < least {
            let key = if t.contains_key("mss") {
                "mss"
            } else {
                "header"
            };
            let v = t.get(key).cloned().unwrap_or(Value::Integer(0));
            return Err(self.invalid(
                &join(path, key),
                &v,
                format!(
                    "a QUIC packet as large as the TCP segment (mss + header = {wire}B) must hold \
                     {}B of IPv4, UDP and QUIC overhead and at least one byte of data; give \
                     mss + header of at least {least}B",
                    crate::quic::DATA_WIRE_OVERHEAD
                ),
            ));
        }
        Ok(s)
    }

    /// `cfg` with MPTCP's option bytes taken into the segments, or an error naming `mss`.
    fn mptcp_settings(&self, t: &Table, path: &str, cfg: &TcpSettings) -> R<TcpSettings> {
        cfg.for_mptcp().ok_or_else(|| {
            let key = if t.contains_key("mss") {
                "mss"
            } else {
                "mptcp_options"
            };
            let v = t.get(key).cloned().unwrap_or(Value::Boolean(true));
            self.invalid(
                &join(path, key),
                &v,
                format!(
                    "mss = {}B leaves no payload beside MPTCP's {MPTCP_DSS_DATA_BYTES}-byte DSS \
                     option (mptcp_options = true); give mss of at least {}B",
                    cfg.mss,
                    MPTCP_DSS_DATA_BYTES + 1
                ),
            )
        })
    }

    /// `header`: the TCP/IP header bytes of a data segment, from 0B to [`MAX_HEADER_BYTES`].
    fn header(&self, field: &str, v: &Value) -> R<u32> {
        let b = self.quantity(field, v, SIZE_UNITS, "a header size such as \"40B\"")?;
        let b = b.round();
        if !(0.0..=MAX_HEADER_BYTES as f64).contains(&b) {
            return Err(self.invalid(
                field,
                v,
                format!("a header must be from 0B to {MAX_HEADER_BYTES}B"),
            ));
        }
        Ok(b as u32)
    }

    fn traffic(&self, v: &Value, path: &str) -> R<Traffic> {
        if let Value::String(s) = v {
            return match s.as_str() {
                "bulk" => Ok(Traffic::Bulk),
                _ => Err(self.invalid(
                    path,
                    v,
                    "allowed: \"bulk\", or a table with type = \"transfer\", \"onoff\" or \"cbr\"",
                )),
            };
        }
        let t = self.table(path, v)?;
        let kind = match t.get("type") {
            Some(k) => self.string(&join(path, "type"), k)?,
            None => {
                return Err(self.missing(
                    &join(path, "type"),
                    "give type = \"bulk\", \"transfer\", \"onoff\" or \"cbr\"",
                ))
            }
        };
        match kind {
            "bulk" => {
                self.check_keys(t, path, &["type"])?;
                Ok(Traffic::Bulk)
            }
            "transfer" => {
                self.check_keys(t, path, &["type", "size"])?;
                match t.get("size") {
                    Some(v) => Ok(Traffic::Transfer(self.size(&join(path, "size"), v)?)),
                    None => {
                        Err(self
                            .missing(&join(path, "size"), "give the transfer size, e.g. \"1MB\""))
                    }
                }
            }
            "onoff" => {
                self.check_keys(t, path, &["type", "on", "off", "exponential"])?;
                let exponential = match t.get("exponential") {
                    Some(v) => self.boolean(&join(path, "exponential"), v)?,
                    None => false,
                };
                let period = |k: &str| -> R<Period> {
                    match t.get(k) {
                        Some(v) => Ok(Period {
                            mean: self.positive_time(&join(path, k), v)?,
                            exponential,
                        }),
                        None => {
                            Err(self.missing(&join(path, k), "give the period length, e.g. \"1s\""))
                        }
                    }
                };
                Ok(Traffic::OnOff {
                    on: period("on")?,
                    off: period("off")?,
                })
            }
            _ => Err(self.invalid(
                &join(path, "type"),
                &Value::String(kind.into()),
                "allowed: \"bulk\", \"transfer\", \"onoff\", \"cbr\"",
            )),
        }
    }

    pub(super) fn flow(
        &self,
        t: &Table,
        path: &str,
        links: Links<'_>,
        tcp: &TcpSettings,
        group_default: &str,
        duration: Duration,
    ) -> R<FlowSpec> {
        let mut keys = vec![
            "name",
            "group",
            "algorithm",
            "arithmetic",
            "counting",
            "maximum",
            "beta",
            "gamma",
            "weight",
            "a",
            "b",
            "weights",
            "rate_hints",
            "flowshares",
            "k",
            "period",
            "proportion_manager",
            "tolerance",
            "decrease",
            "slow_start",
            "path",
            "subflows",
            "from",
            "to",
            "start",
            "stop",
            "traffic",
            "transport",
            "max_ack_delay",
        ];
        keys.extend_from_slice(TCP_KEYS);
        self.check_keys(t, path, &keys)?;
        let name = match t.get("name") {
            Some(v) => self.name(&join(path, "name"), v)?,
            None => return Err(self.missing(&join(path, "name"), "every flow needs a unique name")),
        };
        let group = match t.get("group") {
            Some(v) => self.name(&join(path, "group"), v)?,
            None if group_default.is_empty() => name.clone(),
            None => group_default.to_string(),
        };
        let start = match t.get("start") {
            Some(v) => self.time(&join(path, "start"), v)?,
            None => Duration::ZERO,
        };
        if start >= duration {
            let v = t.get("start").cloned().unwrap_or(Value::Integer(0));
            return Err(self.invalid(
                &join(path, "start"),
                &v,
                "starts at or after the end of the simulation",
            ));
        }
        let stop = match t.get("stop") {
            Some(v) => {
                let s = self.time(&join(path, "stop"), v)?;
                if s <= start {
                    return Err(self.invalid(&join(path, "stop"), v, "must be after start"));
                }
                Some(Instant(s.as_nanos()))
            }
            None => None,
        };
        let hosts = self.flow_hosts(t, path, links.fabric)?;
        let subflows = match (hosts, links.fabric) {
            (Some(h), Some(fabric)) => self.routed_subflows(t, path, fabric, h, links.route)?,
            _ => self.subflows(t, path, links, start, stop, duration)?,
        };
        let transport = match t.get("transport") {
            Some(v) => {
                let f = join(path, "transport");
                Some(match self.string(&f, v)? {
                    "tcp" => Transport::Tcp,
                    "quic" => Transport::Quic,
                    _ => return Err(self.invalid(&f, v, "allowed: \"tcp\", \"quic\"")),
                })
            }
            None => None,
        };
        let traffic_v = t.get("traffic");
        let is_cbr = traffic_v
            .and_then(Value::as_table)
            .and_then(|tt| tt.get("type"))
            .and_then(Value::as_str)
            == Some("cbr");
        let kind = if is_cbr {
            let tp = join(path, "traffic");
            let tt = self.table(&tp, traffic_v.unwrap_or(&Value::Boolean(false)))?;
            self.check_keys(tt, &tp, &["type", "rate", "size"])?;
            for key in ["transport", "max_ack_delay"] {
                if let Some(v) = t.get(key) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        format!(
                            "{key}: transport applies to TCP-like flows (congestion-controlled \
                             traffic); a cbr flow sends unresponsive UDP datagrams at a fixed \
                             rate; remove {key}"
                        ),
                    ));
                }
            }
            if let Some(v) = t.get("algorithm") {
                return Err(self.invalid(
                    &join(path, "algorithm"),
                    v,
                    "a cbr flow is not congestion-controlled; remove algorithm",
                ));
            }
            if let Some(v) = t.get("arithmetic").or(t.get("counting")) {
                return Err(self.invalid(
                    &join(path, "arithmetic"),
                    v,
                    "a cbr flow is not congestion-controlled; remove arithmetic and counting",
                ));
            }
            for (key, _) in CONTROL_PARAMS {
                if let Some(v) = t.get(*key) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        "a cbr flow is not congestion-controlled; remove controller parameters",
                    ));
                }
            }
            for key in TCP_KEYS {
                if let Some(v) = t.get(*key) {
                    return Err(self.invalid(
                        &join(path, key),
                        v,
                        format!(
                            "{key} is a TCP setting and a cbr flow sends UDP datagrams; remove \
                             it (the datagram size is traffic.size)"
                        ),
                    ));
                }
            }
            let rate = match tt.get("rate") {
                Some(v) => self.rate(&join(&tp, "rate"), v)?,
                None => {
                    return Err(
                        self.missing(&join(&tp, "rate"), "give the sending rate, e.g. \"10Mbps\"")
                    )
                }
            };
            let size = match tt.get("size") {
                Some(v) => self.small_size(&join(&tp, "size"), v, 65_535)?,
                None => 1000,
            };
            let interval = rate.transmission_time(Bytes(size as u64));
            if interval.is_none_or(|d| d < MIN_CBR_INTERVAL) {
                let v = tt.get("rate").cloned().unwrap_or(Value::Boolean(false));
                return Err(self.invalid(
                    &join(&tp, "rate"),
                    &v,
                    format!(
                        "sends a {size}B datagram every {} ns; the interval must be at least \
                         {} ns (it is rounded up to whole nanoseconds), so at this size the \
                         rate may be at most {}Mbps",
                        interval.map_or(0, |d| d.as_nanos()),
                        MIN_CBR_INTERVAL.as_nanos(),
                        size as u64 * 8 * 1000 / MIN_CBR_INTERVAL.as_nanos()
                    ),
                ));
            }
            if subflows.len() > 1 {
                return Err(self.invalid(
                    &join(path, "subflows"),
                    t.get("subflows").unwrap_or(&Value::Boolean(false)),
                    "a cbr flow has a single path; give path = [...] instead",
                ));
            }
            FlowKind::Cbr { rate, size }
        } else if transport == Some(Transport::Quic) {
            let cfg = self.quic_settings(t, path, tcp)?;
            // The controller counts in QUIC's max_datagram_size, the largest UDP payload
            // (RFC 9002 §7). `[tcp]`'s profile describes the kernel's TCP, not a QUIC stack:
            // a QUIC flow takes the profile's arithmetic only from a profile of its own.
            let profile = if t.contains_key("profile") {
                cfg.profile
            } else {
                Profile::Default
            };
            let udp = TcpSettings {
                mss: crate::quic::max_udp_payload(cfg.mss, cfg.header),
                profile,
                ..cfg
            };
            let control = self.control(t, path, &udp)?;
            self.check_bmc_period(t, path, &control, &subflows, links.list)?;
            self.check_bmc_lists(t, path, &control, subflows.len())?;
            let traffic = match traffic_v {
                Some(v) => self.traffic(v, &join(path, "traffic"))?,
                None => Traffic::Bulk,
            };
            FlowKind::Tcp {
                cfg,
                control,
                traffic,
            }
        } else {
            if let Some(v) = t.get("max_ack_delay") {
                return Err(self.invalid(
                    &join(path, "max_ack_delay"),
                    v,
                    "max_ack_delay is a QUIC setting (RFC 9000 §18.2); it needs transport = \"quic\"",
                ));
            }
            let mut cfg = self.tcp_settings(t, path, *tcp)?;
            let mut control = self.control(t, path, &cfg)?;
            if cfg.scheduler == SchedulerKind::Linux && !runs_as_mptcp(&control, subflows.len()) {
                // A plain TCP connection has no MPTCP level to queue data ahead of it.
                cfg.scheduler = SchedulerKind::MinRtt;
            }
            if cfg.mptcp_options && runs_as_mptcp(&control, subflows.len()) {
                // The controller counts in segments of the subflows' payload.
                cfg = self.mptcp_settings(t, path, &cfg)?;
                control = self.control(t, path, &cfg)?;
            }
            self.check_bmc_period(t, path, &control, &subflows, links.list)?;
            self.check_bmc_lists(t, path, &control, subflows.len())?;
            let traffic = match traffic_v {
                Some(v) => self.traffic(v, &join(path, "traffic"))?,
                None => Traffic::Bulk,
            };
            FlowKind::Tcp {
                cfg,
                control,
                traffic,
            }
        };
        Ok(FlowSpec {
            name,
            group,
            kind,
            subflows,
            start: Instant(start.as_nanos()),
            stop,
            hosts,
        })
    }

    /// `path = [...]` for one subflow, or `subflows = [{ path = [...], start, stop }, …]`.
    pub(super) fn subflows(
        &self,
        t: &Table,
        path: &str,
        links: Links<'_>,
        flow_start: Duration,
        flow_stop: Option<Instant>,
        duration: Duration,
    ) -> R<Vec<SubflowSpec>> {
        match (t.get("path"), t.get("subflows")) {
            (Some(v), None) => Ok(vec![SubflowSpec {
                path: self.path(v, &join(path, "path"), links)?,
                start: None,
                stop: None,
            }]),
            (None, Some(Value::Array(items))) if !items.is_empty() => {
                let mut out = Vec::with_capacity(items.len());
                for (k, item) in items.iter().enumerate() {
                    let sp = format!("{path}.subflows[{k}]");
                    let st = self.table(&sp, item)?;
                    self.check_keys(st, &sp, &["path", "start", "stop"])?;
                    let hops = match st.get("path") {
                        Some(v) => self.path(v, &join(&sp, "path"), links)?,
                        None => return Err(self.missing(&join(&sp, "path"), "give the subflow's links")),
                    };
                    let start = match st.get("start") {
                        Some(v) => {
                            let s = self.time(&join(&sp, "start"), v)?;
                            if s >= duration {
                                return Err(self.invalid(&join(&sp, "start"), v, "starts at or after the end of the simulation"));
                            }
                            if let Some(fs) = flow_stop.filter(|fs| s.as_nanos() >= fs.0) {
                                return Err(self.invalid(
                                    &join(&sp, "start"),
                                    v,
                                    format!(
                                        "starts at or after the flow stops ({path}.stop = {} s); \
                                         a subflow must join before its flow stops",
                                        fs.0 as f64 / 1e9
                                    ),
                                ));
                            }
                            Some(Instant(s.max(flow_start).as_nanos()))
                        }
                        None => None,
                    };
                    let stop = match st.get("stop") {
                        Some(v) => {
                            let s = Instant(self.time(&join(&sp, "stop"), v)?.as_nanos());
                            if s <= start.unwrap_or(Instant(flow_start.as_nanos())) {
                                return Err(self.invalid(&join(&sp, "stop"), v, "must be after the subflow starts"));
                            }
                            Some(flow_stop.map_or(s, |f| s.min(f)))
                        }
                        None => None,
                    };
                    out.push(SubflowSpec { path: hops, start, stop });
                }
                if out.len() > 64 {
                    return Err(self.invalid(&join(path, "subflows"), t.get("subflows").unwrap_or(&Value::Boolean(false)), "at most 64 subflows"));
                }
                Ok(out)
            }
            (None, Some(v)) => Err(self.invalid(
                &join(path, "subflows"),
                v,
                "expected a non-empty list of tables such as [{ path = [\"a\"] }, { path = [\"b\"] }] \
                 (a number of subflows goes with from/to, hosts of a [topology])",
            )),
            (Some(v), Some(_)) => Err(self.invalid(
                &join(path, "path"),
                v,
                "give either path (one path) or subflows (several), not both",
            )),
            (None, None) => Err(self.missing(
                &join(path, "path"),
                "give the links from sender to receiver, e.g. path = [\"access\", \"core\"], or subflows = [...], or from/to (hosts of a [topology])",
            )),
        }
    }

    /// A path's hops, each link looked up by name.
    pub(super) fn path(&self, v: &Value, field: &str, links: Links<'_>) -> R<Vec<Hop>> {
        let Value::Array(items) = v else {
            return Err(self.invalid(
                field,
                v,
                format!("expected a list of link names, found {}", type_name(v)),
            ));
        };
        if items.is_empty() {
            return Err(self.invalid(field, v, "a path needs at least one link"));
        }
        let mut hops = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            let f = format!("{field}[{k}]");
            let s = self.string(&f, item)?;
            let (reverse, name) = match s.strip_prefix('~') {
                Some(n) => (true, n),
                None => (false, s),
            };
            let Some(&link) = links.index.get(name) else {
                let known: Vec<String> =
                    links.list.iter().take(12).map(|l| clip(&l.name)).collect();
                let more = if links.list.len() > 12 { ", …" } else { "" };
                return Err(self.invalid(
                    &f,
                    item,
                    format!(
                        "no link is called '{}' (links: {}{more})",
                        clip(name),
                        known.join(", ")
                    ),
                ));
            };
            if let Some(j) = hops.iter().position(|h: &Hop| h.link == link) {
                return Err(self.invalid(
                    &f,
                    item,
                    format!(
                        "link '{}' is already on this path ({field}[{j}]); a path crosses \
                         each link at most once, in either direction",
                        clip(name)
                    ),
                ));
            }
            hops.push(Hop { link, reverse });
        }
        Ok(hops)
    }
}

/// The TCP settings a flow (or the `[tcp]` table) may give.
pub const TCP_KEYS: &[&str] = &[
    "profile",
    "receive_buffer",
    "scheduler",
    "mss",
    "header",
    "ack_size",
    "initial_window",
    "min_rto",
    "rto",
    "delayed_ack",
    "recovery",
    "limited_transmit",
    "prr",
    "keep_sack_on_rto",
    "cwnd_validation",
    "push_fragments",
    "mptcp_options",
    "handshakes",
];
