//! TCP Veno (Fu & Liew, "TCP Veno", IEEE JSAC 21(2), 2003; Linux `net/ipv4/tcp_veno.c`;
//! `reference/ALGORITHMS.md` §5): Reno whose growth and loss response depend on a
//! Vegas-style estimate of the packets the flow keeps queued,
//!
//! `N = (w/baseRTT − w/RTT)·baseRTT = w·(RTT − baseRTT)/RTT` packets,
//!
//! with `baseRTT` the smallest RTT sample ever and `RTT` the smallest sample of the last round
//! (the data outstanding when the round began, acknowledged).
//!
//! * Congestion avoidance: `N < β` — Reno, one segment per window acknowledged. `N ≥ β` — one
//!   segment per **two** windows acknowledged: as Linux, each time a window's worth of bytes is
//!   acknowledged a flag toggles, and the window grows on every other toggle.
//! * Loss (fast retransmit): `ssthresh = max(⅘·cwnd, 2·MSS)` when `N < β` (a random loss),
//!   `max(½·cwnd, 2·MSS)` otherwise; `cwnd = ssthresh`. The decision uses the `N` of the last
//!   ACK outside recovery; before Veno has an estimate `N` counts as 0 (Linux's zeroed `diff`),
//!   so early losses take the ⅘ branch.
//! * With at most two RTT samples ever, Reno (Linux `cntrtt <= 2`; the kernel's per-round reset
//!   of `cntrtt` is commented out, so Veno stays on from the third sample).
//! * Slow start, byte counting and timeouts are NewReno's ([`NewReno`](crate::cc::NewReno)):
//!   `+min(bytes_acked, L·MSS)` per ACK in slow start; one MSS per window of bytes in congestion
//!   avoidance; on a timeout `ssthresh = max(½·cwnd, 2·MSS)` (held on a repeated one),
//!   `cwnd = 1·MSS`.
//!
//! Where this differs from the reference code, on purpose:
//!
//! * Linux resets `minrtt` on every `cong_avoid` call, so its "RTT" is in effect the latest
//!   ACK's sample although the comment says "the last rtt"; here it is the smallest sample of
//!   the last complete round (a round degenerates to one ACK when the transport reports no
//!   data in flight). Linux computes `diff` in half-packets with integer division; here `N` is
//!   real-valued. Linux also applies Veno's ssthresh on a timeout (`tcp_enter_loss` calls
//!   `.ssthresh`); the brief for this crate, like Fu & Liew, keeps Reno's there. Linux counts
//!   ACKs (`snd_cwnd_cnt`); here acknowledged bytes, as NewReno here does.
//! * ns-3 (`tcp-veno.cc`) resets `m_cntRtt` and `m_minRtt` at the end of every
//!   `IncreaseWindow`, so its "fewer than three samples" test always holds and its increase is
//!   always NewReno's; its `m_diff` is whole packets; the congestive branch alternates per ACK,
//!   not per window; and its ssthresh is `max(2·MSS, ⌊0.8·BytesInFlight⌋)` or NewReno's
//!   `BytesInFlight/2`, from bytes in flight rather than cwnd (ALGORITHMS.md §5, §0.2).
//!
//! Invariants: `cwnd ≥ 1·MSS`; `ssthresh ≥ 2·MSS` once set; no growth while in recovery;
//! `N ≥ 0`.

use crate::cc::multipath::config::{check_range, ConfigError, WindowConfig};
use crate::cc::multipath::subflow::Subflow;
use crate::cc::{Ack, CongestionEvent, Controller, Metrics, PathView, RenoConfig, Rto};
use crate::units::{Bytes, Duration};

/// Veno's default β: 3 packets (Fu & Liew; Linux `beta = 3 << V_PARAM_SHIFT` half-packets).
pub const DEFAULT_BETA: f64 = 3.0;

/// The largest β (and MPVeno β) accepted, in packets.
pub(crate) const MAX_BETA: f64 = 1e6;

/// Veno's backlog estimate, in the unit of `window` (Fu & Liew §II.A; the MPVeno paper's
/// Algorithm 1): `N = (Expected − Actual)·baseRTT = (w/baseRTT − w/RTT)·baseRTT`. Zero when
/// either RTT is not positive or `RTT ≤ baseRTT`.
pub fn backlog(window: f64, rtt: f64, base_rtt: f64) -> f64 {
    if !(window.is_finite() && rtt > 0.0 && base_rtt > 0.0 && rtt.is_finite()) {
        return 0.0;
    }
    let expected = window / base_rtt;
    let actual = window / rtt;
    ((expected - actual) * base_rtt).max(0.0)
}

/// Checks a Reno-style window configuration (`mss` 1 to 10^9 bytes, `initial_window` and
/// `abc_limit` 1 to 1000 segments) for the algorithm named `algorithm`.
pub(crate) fn check_reno(algorithm: &'static str, c: &RenoConfig) -> Result<(), ConfigError> {
    let segments = "1 to 1000 segments";
    check_range(
        algorithm,
        "mss",
        c.mss.0 as f64,
        1.0,
        1e9,
        "1 to 10^9 bytes",
    )?;
    let iw = c.initial_window as f64;
    check_range(algorithm, "initial_window", iw, 1.0, 1e3, segments)?;
    check_range(
        algorithm,
        "abc_limit",
        c.abc_limit as f64,
        1.0,
        1e3,
        segments,
    )
}

/// Checks a parameter that must be finite, above zero and at most `hi`.
pub(crate) fn check_positive(
    algorithm: &'static str,
    parameter: &'static str,
    value: f64,
    hi: f64,
    allowed: &'static str,
) -> Result<(), ConfigError> {
    if value > 0.0 {
        check_range(algorithm, parameter, value, 0.0, hi, allowed)
    } else {
        Err(ConfigError::OutOfRange {
            algorithm,
            parameter,
            value,
            allowed,
        })
    }
}

/// The window settings a [`RenoConfig`] stands for, as the shared [`Subflow`] takes them.
pub(crate) fn window_of(c: &RenoConfig) -> WindowConfig {
    WindowConfig::default()
        .initial_window(c.initial_window)
        .abc_limit(c.abc_limit)
}

/// RTT samples grouped into rounds: the smallest sample ever (`baseRTT`) and the smallest of
/// the last complete round. A round ends at the first ACK that covers the data outstanding
/// when it began (Linux Vegas' `beg_snd_nxt`, counted in acknowledged bytes).
#[derive(Clone, Debug, Default)]
pub(crate) struct RttRounds {
    base: Option<Duration>,
    round_min: Option<Duration>,
    last_round_min: Option<Duration>,
    acked: u64,
    round_end: u64,
    samples: u64,
}

impl RttRounds {
    /// An ACK of `bytes` with an optional RTT sample; `in_flight` is what remains outstanding.
    pub(crate) fn on_ack(&mut self, bytes: u64, sample: Option<Duration>, in_flight: u64) {
        if let Some(r) = sample {
            // tcp_veno_pkts_acked: "Never allow zero rtt or baseRTT".
            let r = Duration(r.0.max(1));
            self.base = Some(self.base.map_or(r, |b| b.min(r)));
            self.round_min = Some(self.round_min.map_or(r, |m| m.min(r)));
            self.samples = self.samples.saturating_add(1);
        }
        self.acked = self.acked.saturating_add(bytes);
        if self.acked >= self.round_end {
            if self.round_min.is_some() {
                self.last_round_min = self.round_min;
            }
            self.round_min = None;
            self.round_end = self.acked.saturating_add(in_flight);
        }
    }

    /// The smallest sample of the last complete round (of the first round while it lasts).
    pub(crate) fn rtt(&self) -> Option<Duration> {
        self.last_round_min.or(self.round_min)
    }

    /// The smallest sample ever.
    pub(crate) fn base(&self) -> Option<Duration> {
        self.base
    }

    /// How many samples were taken.
    pub(crate) fn samples(&self) -> u64 {
        self.samples
    }

    /// Sets the state directly (tests put a path into a vector's state).
    #[cfg(test)]
    pub(crate) fn force(&mut self, base: Duration, rtt: Duration) {
        self.base = Some(base);
        self.last_round_min = Some(rtt);
        self.round_min = None;
        self.samples = self.samples.max(3);
    }
}

/// Veno's per-path state, shared by [`Veno`] and MPVeno: the RTT rounds, the last backlog and
/// its verdict, and the congestion-avoidance counter and toggle of `tcp_veno_cong_avoid`.
#[derive(Clone, Debug)]
pub(crate) struct VenoState {
    pub(crate) rtts: RttRounds,
    backlog: Option<f64>,
    congestive: bool,
    /// Linux `veno->inc`: whether the next completed window adds a segment (starts at 1).
    inc: bool,
    /// Linux `snd_cwnd_cnt`, in acknowledged bytes.
    ca_acked: u64,
}

impl Default for VenoState {
    fn default() -> Self {
        VenoState {
            rtts: RttRounds::default(),
            backlog: None,
            congestive: false,
            inc: true, // tcp_veno_init: veno->inc = 1
            ca_acked: 0,
        }
    }
}

impl VenoState {
    /// Every ACK (in recovery too, as `pkts_acked` is): the RTT sample and the rounds.
    pub(crate) fn observe(&mut self, ack: &Ack, in_flight: Bytes) {
        self.rtts.on_ack(ack.bytes_acked.0, ack.rtt, in_flight.0);
    }

    /// Recomputes `N` for a window of `cwnd` bytes and compares it with `threshold` packets;
    /// returns whether Veno is active (more than two samples and an RTT to compare).
    pub(crate) fn assess(&mut self, cwnd: u64, mss: u64, threshold: f64) -> bool {
        // tcp_veno_cong_avoid: "if (veno->cntrtt <= 2)" behave as Reno.
        if self.rtts.samples() <= 2 {
            return false;
        }
        let (Some(rtt), Some(base)) = (self.rtts.rtt(), self.rtts.base()) else {
            return false;
        };
        let w = cwnd as f64 / mss.max(1) as f64;
        // N = (w/baseRTT − w/RTT)·baseRTT (Fu & Liew; Linux: diff = 2w − 2w·basertt/minrtt).
        let n = backlog(w, rtt.as_secs_f64(), base.as_secs_f64());
        self.backlog = Some(n);
        // Linux: "if (veno->diff < beta)" is the non-congestive state.
        self.congestive = n >= threshold;
        true
    }

    /// The last backlog estimate, in packets.
    pub(crate) fn backlog(&self) -> Option<f64> {
        self.backlog
    }

    /// Whether the last estimate was at or above the threshold.
    pub(crate) fn congestive(&self) -> bool {
        self.congestive
    }

    /// One congestion-avoidance ACK of `bytes` on a window of `cwnd` bytes, as
    /// `tcp_veno_cong_avoid` (with acknowledged bytes for ACKs): Reno (`tcp_cong_avoid_ai`,
    /// one MSS per window) when inactive or not congestive, else one MSS per two windows.
    pub(crate) fn avoid(&mut self, cwnd: &mut u64, mss: u64, bytes: u64, active: bool) {
        self.ca_acked = self.ca_acked.saturating_add(bytes);
        if self.ca_acked < *cwnd {
            return;
        }
        self.ca_acked -= *cwnd;
        if !active || !self.congestive {
            // "non-congestive state": increase cwnd every rtt.
            *cwnd = cwnd.saturating_add(mss);
        } else if self.inc {
            // "congestive state": increase cwnd every other rtt.
            *cwnd = cwnd.saturating_add(mss);
            self.inc = false;
        } else {
            self.inc = true;
        }
    }

    /// For a real-valued (coupled) increase in the congestive state: whether this ACK's
    /// increase applies. The same toggle as [`VenoState::avoid`]: the increase applies in
    /// every other window of acknowledged bytes, so it is halved on average.
    pub(crate) fn gate(&mut self, cwnd: u64, bytes: u64) -> bool {
        let on = self.inc;
        self.ca_acked = self.ca_acked.saturating_add(bytes);
        if self.ca_acked >= cwnd {
            self.ca_acked -= cwnd;
            self.inc = !self.inc;
        }
        on
    }

    /// Restarts the congestion-avoidance counter (after a loss or a timeout, or when a path
    /// moves between the coupled and the one-path rule).
    pub(crate) fn restart_count(&mut self) {
        self.ca_acked = 0;
    }

    /// `tcp_veno_ssthresh` in bytes: `max(⅘·cwnd, 2·MSS)` if not congestive ("random loss"),
    /// else `max(½·cwnd, 2·MSS)` ("congestive loss").
    pub(crate) fn loss_ssthresh(&self, cwnd: u64, mss: u64) -> u64 {
        let floor = mss.saturating_mul(2);
        if self.congestive {
            (cwnd / 2).max(floor)
        } else {
            ((cwnd as u128 * 4 / 5) as u64).max(floor)
        }
    }
}

/// Veno's parameters: NewReno's window settings and β.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VenoConfig {
    reno: RenoConfig,
    beta: f64,
}

impl VenoConfig {
    /// Veno with NewReno's window settings `reno` and β = 3 packets.
    pub fn new(reno: RenoConfig) -> Self {
        VenoConfig {
            reno,
            beta: DEFAULT_BETA,
        }
    }
    /// The backlog threshold β in packets (above 0, at most 10^6).
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }
    /// β in force.
    pub fn beta_value(&self) -> f64 {
        self.beta
    }
    /// The window settings.
    pub fn reno(&self) -> &RenoConfig {
        &self.reno
    }
    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_reno("veno", &self.reno)?;
        check_positive(
            "veno",
            "beta",
            self.beta,
            MAX_BETA,
            "above 0 and at most 10^6 packets",
        )
    }
    /// A controller in slow start with the initial window.
    pub fn build(&self) -> Result<Veno, ConfigError> {
        self.validate()?;
        Ok(Veno {
            cfg: *self,
            sf: Subflow::new(self.reno.mss, &window_of(&self.reno)),
            veno: VenoState::default(),
        })
    }
}

/// TCP Veno's congestion window.
#[derive(Clone, Debug)]
pub struct Veno {
    cfg: VenoConfig,
    sf: Subflow,
    veno: VenoState,
}

impl Veno {
    /// The configuration this controller was built from.
    pub fn config(&self) -> &VenoConfig {
        &self.cfg
    }
}

impl Controller for Veno {
    fn on_ack(&mut self, ack: &Ack, path: &PathView) {
        self.veno.observe(ack, path.in_flight);
        if ack.in_recovery {
            return; // RFC 5681 §3.2: no growth during fast recovery
        }
        self.sf.in_recovery = false;
        if !ack.cwnd_limited {
            return; // a window not in use does not grow (Linux: tcp_is_cwnd_limited)
        }
        let active = self.veno.assess(self.sf.cwnd, self.sf.mss, self.cfg.beta);
        let bytes = ack.bytes_acked.0;
        if self.sf.in_slow_start() {
            // tcp_veno_cong_avoid: "Slow start." tcp_slow_start, with RFC 3465's L here.
            self.sf.slow_start(bytes, self.cfg.reno.abc_limit);
            return;
        }
        let mss = self.sf.mss;
        self.veno.avoid(&mut self.sf.cwnd, mss, bytes, active);
    }

    fn on_congestion_event(&mut self, _ev: &CongestionEvent, _path: &PathView) {
        let ss = self.veno.loss_ssthresh(self.sf.cwnd, self.sf.mss);
        self.sf.enter_recovery(ss);
        self.veno.restart_count();
    }

    fn on_recovery_end(&mut self, _now: crate::units::Instant, _path: &PathView) {
        self.sf.in_recovery = false;
    }

    fn on_rto(&mut self, rto: &Rto, _path: &PathView) {
        // As NewReno: RFC 5681 §3.1 halving, held on a repeated timeout; one segment.
        let ss = (!rto.repeated).then(|| self.sf.reno_ssthresh());
        self.sf.timeout(ss);
        self.veno.restart_count();
    }

    fn window(&self) -> Bytes {
        Bytes(self.sf.cwnd)
    }

    fn ssthresh(&self) -> Option<Bytes> {
        self.sf.metrics().ssthresh
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            backlog: self.veno.backlog(),
            ..self.sf.metrics()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
