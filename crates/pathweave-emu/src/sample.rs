//! Sampling the kernel's view of each connection into the simulator's time-series tables.
//!
//! Single-path flows read `TCP_INFO`; MPTCP connections read `MPTCP_TCPINFO` and
//! `MPTCP_SUBFLOW_ADDRS`, and each subflow is matched to its scenario path by its local
//! address. A flow's loss-recovery counters come from its sender namespace's TCP MIB
//! (`/proc/<tid>/net/netstat`): every namespace holds one flow's sender, so those are the flow's.

use crate::apps::FlowState;
use crate::sys::{self, TCP_INFO_LEN};
use pathweave_sim::results::{FlowSeries, SubflowSeries};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The `tcp_info` fields pathweave reads (offsets in `struct tcp_info`, linux/tcp.h).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct TcpInfo {
    pub snd_mss: u32,
    pub rtt_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub data_segs_out: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_ne_bytes([s[0], s[1]]))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
    })
}

impl TcpInfo {
    /// Decode the first `len` bytes of a `struct tcp_info`.
    pub(crate) fn parse(b: &[u8]) -> TcpInfo {
        TcpInfo {
            snd_mss: u32_at(b, 16),
            rtt_us: u32_at(b, 68),
            snd_ssthresh: u32_at(b, 76),
            snd_cwnd: u32_at(b, 80),
            total_retrans: u32_at(b, 100),
            bytes_acked: u64_at(b, 120),
            data_segs_out: u32_at(b, 156),
            total_rto: u16_at(b, 240),
            total_rto_recoveries: u16_at(b, 242),
        }
    }
    fn cwnd_bytes(&self) -> f64 {
        self.snd_cwnd as f64 * self.snd_mss as f64
    }
    /// ssthresh in bytes; NaN while the kernel's is "infinite" (TCP_INFINITE_SSTHRESH).
    fn ssthresh_bytes(&self) -> f64 {
        if self.snd_ssthresh >= 0x7fff_ffff {
            f64::NAN
        } else {
            self.snd_ssthresh as f64 * self.snd_mss as f64
        }
    }
    fn srtt_s(&self) -> f64 {
        if self.rtt_us == 0 {
            f64::NAN
        } else {
            self.rtt_us as f64 * 1e-6
        }
    }
}

/// Running figures of one subflow.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SubflowAcc {
    pub last: TcpInfo,
    pub seen: bool,
    last_acked: u64,
    pub cwnd_sum: f64,
    pub srtt_sum: f64,
    pub srtt_n: u64,
    pub samples: u64,
    /// ssthresh reductions seen between samples.
    pub reductions: u64,
    last_ssthresh: Option<u32>,
}

/// One flow as the sampler sees it.
pub(crate) struct Probe {
    pub state: Arc<FlowState>,
    pub tcp: bool,
    pub mptcp: bool,
    /// Local address of each scenario subflow.
    pub addrs: Vec<[u8; 4]>,
    pub subs: Vec<SubflowAcc>,
    /// BMC's weight D and last T_wr per subflow, from the run's proportion manager (NaN for
    /// other algorithms).
    pub weights: Vec<f64>,
    pub scores: Vec<f64>,
    last_delivered: u64,
    /// Time-averaged connection-wide figures.
    pub cwnd_sum: f64,
    pub cwnd_n: u64,
    /// The namespace's loss-recovery counters at the last reading.
    pub netstat: Netstat,
}

impl Probe {
    pub(crate) fn new(state: Arc<FlowState>, tcp: bool, mptcp: bool, addrs: Vec<[u8; 4]>) -> Probe {
        let n = addrs.len();
        Probe {
            state,
            tcp,
            mptcp,
            addrs,
            subs: vec![SubflowAcc::default(); n],
            weights: vec![f64::NAN; n],
            scores: vec![f64::NAN; n],
            last_delivered: 0,
            cwnd_sum: 0.0,
            cwnd_n: 0,
            netstat: Netstat::default(),
        }
    }

    /// The current per-subflow `tcp_info` of the sender's socket, by scenario subflow index.
    fn read(&self, scratch: &mut Vec<u8>) -> Vec<(usize, TcpInfo)> {
        let sock = self.state.socket.lock().ok().and_then(|s| s.clone());
        let Some(sock) = sock else {
            return Vec::new();
        };
        let fd = sock.as_raw_fd();
        if self.mptcp {
            match sys::mptcp_subflows(fd, crate::MAX_SUBFLOWS * 2, scratch) {
                Ok(list) => list
                    .into_iter()
                    .filter_map(|(addr, raw)| {
                        let k = self.addrs.iter().position(|a| *a == addr)?;
                        Some((k, TcpInfo::parse(&raw)))
                    })
                    .collect(),
                Err(_) => Vec::new(),
            }
        } else {
            let mut raw = [0u8; TCP_INFO_LEN];
            match sys::tcp_info(fd, &mut raw) {
                Ok(len) => vec![(0, TcpInfo::parse(&raw[..len]))],
                Err(_) => Vec::new(),
            }
        }
    }

    /// Take one sample at `t` seconds over an interval of `dt` seconds.
    pub(crate) fn sample(
        &mut self,
        flow: u32,
        t: f64,
        dt: f64,
        fs: &mut FlowSeries,
        ss: &mut SubflowSeries,
        scratch: &mut Vec<u8>,
    ) {
        let delivered = self.state.delivered.load(Ordering::Relaxed);
        let rate = delivered.saturating_sub(self.last_delivered) as f64 * 8.0 / dt;
        self.last_delivered = delivered;
        let (mut cwnd, mut ssthresh, mut srtt) = (f64::NAN, f64::NAN, f64::NAN);
        if self.tcp {
            let infos = self.read(scratch);
            if !infos.is_empty() {
                (cwnd, ssthresh, srtt) = (0.0, 0.0, f64::INFINITY);
            }
            for (k, info) in infos {
                let acc = &mut self.subs[k];
                let sub_rate = info.bytes_acked.saturating_sub(acc.last_acked) as f64 * 8.0 / dt;
                acc.last_acked = info.bytes_acked;
                if let Some(prev) = acc.last_ssthresh {
                    if info.snd_ssthresh < prev {
                        acc.reductions += 1;
                    }
                }
                if info.snd_ssthresh < 0x7fff_ffff {
                    acc.last_ssthresh = Some(info.snd_ssthresh);
                }
                acc.last = info;
                acc.seen = true;
                acc.samples += 1;
                acc.cwnd_sum += info.cwnd_bytes();
                if !info.srtt_s().is_nan() {
                    acc.srtt_sum += info.srtt_s();
                    acc.srtt_n += 1;
                }
                cwnd += info.cwnd_bytes();
                ssthresh += info.ssthresh_bytes();
                srtt = srtt.min(info.srtt_s());
                ss.time_s.push(t);
                ss.flow.push(flow);
                ss.subflow.push(k as u32);
                ss.cwnd_bytes.push(info.cwnd_bytes());
                ss.ssthresh_bytes.push(info.ssthresh_bytes());
                ss.srtt_s.push(info.srtt_s());
                ss.rate_bps.push(sub_rate);
                ss.weight.push(self.weights[k]);
                ss.score.push(self.scores[k]);
                // Controller state the kernel does not expose.
                for col in [
                    &mut ss.alpha,
                    &mut ss.epsilon,
                    &mut ss.backlog_packets,
                    &mut ss.bandwidth_estimate_bps,
                ] {
                    col.push(f64::NAN);
                }
            }
            if cwnd.is_finite() {
                self.cwnd_sum += cwnd;
                self.cwnd_n += 1;
            }
            if !srtt.is_finite() {
                srtt = f64::NAN;
            }
            self.read_netstat();
        }
        fs.time_s.push(t);
        fs.flow.push(flow);
        fs.cwnd_bytes.push(cwnd);
        fs.ssthresh_bytes.push(ssthresh);
        fs.srtt_s.push(srtt);
        fs.rate_bps.push(rate);
    }

    /// Refresh the loss-recovery counters from the sender's namespace.
    pub(crate) fn read_netstat(&mut self) {
        let tid = self.state.sender_tid.load(Ordering::Relaxed);
        if tid > 0 {
            if let Some(n) = Netstat::read(tid) {
                self.netstat = n;
            }
        }
    }
}

/// The TCP MIB counters of one namespace that count loss recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Netstat {
    /// Fast recoveries without SACK (`TCPRenoRecovery`).
    pub reno_recovery: u64,
    /// Fast recoveries with SACK (`TCPSackRecovery`).
    pub sack_recovery: u64,
    /// Retransmission timeouts (`TCPTimeouts`).
    pub timeouts: u64,
}

impl Netstat {
    fn read(tid: i32) -> Option<Netstat> {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/net/netstat")).ok()?;
        Some(Netstat::parse(&text))
    }

    /// Parse `/proc/net/netstat`: pairs of lines, names then values, per protocol prefix.
    pub(crate) fn parse(text: &str) -> Netstat {
        let mut n = Netstat::default();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.chunks(2) {
            let [names, values] = pair else { continue };
            if !names.starts_with("TcpExt:") {
                continue;
            }
            for (k, v) in names
                .split_whitespace()
                .zip(values.split_whitespace())
                .skip(1)
            {
                let v: u64 = v.parse().unwrap_or(0);
                match k {
                    "TCPRenoRecovery" => n.reno_recovery = v,
                    "TCPSackRecovery" => n.sack_recovery = v,
                    "TCPTimeouts" => n.timeouts = v,
                    _ => {}
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netstat_counters_are_found_by_name() {
        let text = "TcpExt: SyncookiesSent TCPRenoRecovery TCPSackRecovery TCPTimeouts\n\
                    TcpExt: 0 3 4 5\n\
                    IpExt: InNoRoutes TCPTimeouts\n\
                    IpExt: 9 9\n";
        let n = Netstat::parse(text);
        assert_eq!(
            n,
            Netstat {
                reno_recovery: 3,
                sack_recovery: 4,
                timeouts: 5
            }
        );
    }

    #[test]
    fn tcp_info_fields_at_their_uapi_offsets() {
        // Offsets from struct tcp_info in include/uapi/linux/tcp.h: 8 bytes of u8 fields,
        // then u32 rto, ato, snd_mss (16), …, rtt (68), rttvar, snd_ssthresh (76),
        // snd_cwnd (80), …, total_retrans (100), u64 pacing_rate (104), max_pacing_rate,
        // bytes_acked (120), …, data_segs_out (156), …, total_rto (u16, 240).
        let mut b = [0u8; TCP_INFO_LEN];
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[68..72].copy_from_slice(&20_500u32.to_ne_bytes());
        b[76..80].copy_from_slice(&0x7fff_ffffu32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[120..128].copy_from_slice(&123_456u64.to_ne_bytes());
        b[240..242].copy_from_slice(&2u16.to_ne_bytes());
        let i = TcpInfo::parse(&b);
        assert_eq!(i.cwnd_bytes(), 14_480.0);
        assert!(i.ssthresh_bytes().is_nan());
        assert!((i.srtt_s() - 0.0205).abs() < 1e-12);
        assert_eq!(i.bytes_acked, 123_456);
        assert_eq!(i.total_rto, 2);
        // A short (older kernel) record reads the missing fields as zero.
        assert_eq!(TcpInfo::parse(&b[..104]).bytes_acked, 0);
    }
}
