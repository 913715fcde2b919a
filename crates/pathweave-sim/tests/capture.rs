//! Packet captures and the queue log: the files parse as pcapng with an independent reader,
//! hold what the links table says went through each link direction, carry valid IPv4 and
//! TCP checksums and MPTCP's options as RFC 8684 lays them out, come out the same for the
//! same seed, stop cleanly at their byte limit; the queue log balances against the links
//! table; and capture changes nothing the run reports.

mod common;

use common::scenario;
use pathweave_sim::capture::sha256::sha256;
use pathweave_sim::capture::{CaptureSpec, PacketLog, LOG_EVENTS};
use pathweave_sim::{Results, Scenario, Simulation};
use std::path::{Path, PathBuf};

/// Two Reno flows with SACK, a two-subflow LIA connection whose subflows share the
/// bottleneck, and a constant-rate UDP flow; everything stops sending at 2 s, so by 4 s every
/// link has drained.
const MIXED: &str = r#"
duration = "4s"
seed = 7
[tcp]
recovery = "sack"
mss = "1000B"
[[link]]
name = "bottleneck"
rate = "10Mbps"
delay = "10ms"
queue = { type = "droptail", limit = "20pkt" }
[[link]]
name = "access{i}"
count = 5
rate = "100Mbps"
delay = "2ms"
queue = { type = "droptail", limit = "1000pkt" }
[[flow]]
name = "reno{i}"
count = 2
algorithm = "reno"
path = ["access{i}", "bottleneck"]
stop = "2s"
[[flow]]
name = "mp"
algorithm = "lia"
subflows = [ { path = ["access2", "bottleneck"] }, { path = ["access3", "bottleneck"] } ]
stop = "2s"
[[flow]]
name = "udp"
traffic = { type = "cbr", rate = "1Mbps", size = "500B" }
path = ["access4", "bottleneck"]
stop = "2s"
"#;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pw-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Run {
    results: Results,
    log: PacketLog,
    warnings: Vec<String>,
    truncated: Vec<String>,
}

fn run_captured(sc: &Scenario, spec: &CaptureSpec, dir: &Path) -> Run {
    let mut sim = Simulation::new(sc, None);
    sim.start_capture(spec, dir).unwrap();
    let mut log = PacketLog::default();
    let mut warnings = Vec::new();
    let append = |l: PacketLog, log: &mut PacketLog| {
        log.time_s.extend(l.time_s);
        log.link_dir.extend(l.link_dir);
        log.flow.extend(l.flow);
        log.subflow.extend(l.subflow);
        log.sequence.extend(l.sequence);
        log.bytes.extend(l.bytes);
        log.event.extend(l.event);
        log.queue_bytes.extend(l.queue_bytes);
        log.queue_packets.extend(l.queue_packets);
    };
    while !sim.finished() {
        sim.run_until(sim.now() + pathweave_cc::Duration::from_millis(300));
        append(sim.take_packet_log(), &mut log);
        warnings.extend(sim.take_capture_warnings());
    }
    let (summary, last, w) = sim.finish_capture().unwrap();
    append(last, &mut log);
    warnings.extend(w);
    sim.check_conservation().unwrap();
    Run {
        results: sim.results(),
        log,
        warnings,
        truncated: summary
            .files
            .iter()
            .filter(|f| f.truncated)
            .map(|f| f.name.clone())
            .collect(),
    }
}

/// One Enhanced Packet Block, as read back.
#[derive(Debug)]
struct Epb {
    ts: u64,
    data: Vec<u8>,
    orig: u32,
    comment: Option<String>,
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// A pcapng reader written from the format's description: a section header with the
/// byte-order magic, one interface of LINKTYPE_RAW with nanosecond timestamps, then packet
/// blocks; every block's trailing length equals its leading one.
fn read_pcapng(path: &Path) -> Vec<Epb> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(
        le32(&b, 0),
        0x0A0D_0D0A,
        "{}: section header first",
        path.display()
    );
    assert_eq!(le32(&b, 8), 0x1A2B_3C4D);
    let mut at = 0;
    let mut out = Vec::new();
    let mut interfaces = 0;
    while at < b.len() {
        assert!(at + 12 <= b.len(), "truncated block");
        let kind = le32(&b, at);
        let len = le32(&b, at + 4) as usize;
        assert!(
            len >= 12 && len % 4 == 0 && at + len <= b.len(),
            "block length {len}"
        );
        assert_eq!(le32(&b, at + len - 4) as usize, len, "trailing length");
        let body = &b[at + 8..at + len - 4];
        // Options: code, length, value padded to 4, until code 0.
        let options = |mut o: usize| {
            let mut found = Vec::new();
            while o + 4 <= body.len() {
                let code = u16::from_le_bytes([body[o], body[o + 1]]);
                let l = u16::from_le_bytes([body[o + 2], body[o + 3]]) as usize;
                if code == 0 {
                    break;
                }
                found.push((code, body[o + 4..o + 4 + l].to_vec()));
                o += 4 + l.div_ceil(4) * 4;
            }
            found
        };
        match kind {
            0x0A0D_0D0A => {}
            1 => {
                interfaces += 1;
                assert_eq!(u16::from_le_bytes([body[0], body[1]]), 101, "LINKTYPE_RAW");
                let opts = options(8);
                assert!(opts.contains(&(9, vec![9])), "if_tsresol = 9 (ns)");
            }
            6 => {
                assert_eq!(interfaces, 1);
                assert_eq!(le32(body, 0), 0);
                let ts = (le32(body, 4) as u64) << 32 | le32(body, 8) as u64;
                let cap = le32(body, 12) as usize;
                let orig = le32(body, 16);
                assert!(cap as u32 <= orig);
                let data = body[20..20 + cap].to_vec();
                let opts = options(20 + cap.div_ceil(4) * 4);
                let comment = opts
                    .iter()
                    .find(|(c, _)| *c == 1)
                    .map(|(_, v)| String::from_utf8(v.clone()).unwrap());
                out.push(Epb {
                    ts,
                    data,
                    orig,
                    comment,
                });
            }
            k => panic!("unexpected block type {k:#x}"),
        }
        at += len;
    }
    out
}

/// RFC 1071's sum, folded and complemented.
fn csum(data: &[u8], mut sum: u64) -> u16 {
    for c in data.chunks(2) {
        sum += (c[0] as u64) << 8 | c.get(1).copied().unwrap_or(0) as u64;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IPv4 header checksum verifies and the total length is the packet's length on the
/// wire; a TCP or UDP checksum verifies over the pseudo-header, the header and a zero payload
/// of the length the IP header gives.
fn check_checksums(p: &Epb) {
    let d = &p.data;
    assert_eq!(d[0], 0x45);
    assert_eq!(csum(&d[..20], 0), 0, "IPv4 header checksum");
    let total = be16(d, 2) as u32;
    assert_eq!(total, p.orig);
    let proto = d[9];
    let seg_len = total - 20;
    let mut pseudo = 0u64;
    for w in [be16(d, 12), be16(d, 14), be16(d, 16), be16(d, 18)] {
        pseudo += w as u64;
    }
    pseudo += proto as u64 + seg_len as u64;
    // The zero payload adds nothing to the sum.
    assert_eq!(
        csum(&d[20..], pseudo),
        0,
        "transport checksum (proto {proto})"
    );
}

fn dir_index(r: &Results, name: &str, direction: &str) -> usize {
    (0..r.links.name.len())
        .find(|&i| r.links.name[i] == name && r.links.direction[i] == direction)
        .unwrap()
}

/// TCP options of a captured TCP packet: (kind, bytes).
fn tcp_options(d: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let off = ((d[32] >> 4) as usize) * 4;
    let opts = &d[40..20 + off];
    let mut out = Vec::new();
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            k => {
                let l = opts[i + 1] as usize;
                out.push((k, opts[i..i + l].to_vec()));
                i += l;
            }
        }
    }
    out
}

fn mptcp(d: &[u8], subtype: u8) -> Option<Vec<u8>> {
    tcp_options(d)
        .into_iter()
        .find(|(k, o)| *k == 30 && o[2] >> 4 == subtype)
        .map(|(_, o)| o)
}

#[test]
fn every_packet_through_a_link_direction_is_in_its_file() {
    let sc = scenario(MIXED);
    let dir = tmp("conservation");
    let spec = CaptureSpec::everything(sc.links.len());
    let run = run_captured(&sc, &spec, &dir);
    let r = &run.results;
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    for i in 0..r.links.name.len() {
        let (name, direction) = (&r.links.name[i], &r.links.direction[i]);
        let packets = read_pcapng(&dir.join(format!("{name}-{direction}.pcapng")));
        let dropped = |what: &str| {
            packets
                .iter()
                .filter(|p| p.comment.as_deref() == Some(what))
                .count() as u64
        };
        let delivered = packets.iter().filter(|p| p.comment.is_none()).count() as u64;
        // Each TCP subflow whose data crosses this direction adds its SYN and third ACK, each
        // whose ACKs cross it its SYN/ACK: two, or one, uncommented packets beyond those the
        // links table counts.
        let mut handshakes = 0;
        let mut p = 0usize;
        for f in &sc.flows {
            for sf in &f.subflows {
                let tcp = matches!(f.kind, pathweave_sim::scenario::FlowKind::Tcp { .. });
                let fwd = sf.path.iter().any(|h| 2 * h.link + h.reverse as usize == i);
                let rev = sf
                    .path
                    .iter()
                    .any(|h| 2 * h.link + !h.reverse as usize == i);
                if tcp && fwd {
                    handshakes += 2;
                }
                if tcp && rev {
                    handshakes += 1;
                }
                p += 1;
            }
        }
        assert!(p == 5);
        assert_eq!(
            delivered,
            r.links.delivered_packets[i] + handshakes,
            "{name} {direction}"
        );
        assert_eq!(
            dropped("dropped: queue overflow"),
            r.links.drops_overflow[i]
        );
        assert_eq!(dropped("dropped: lost on the wire"), r.links.drops_wire[i]);
        let mut last = 0;
        for pk in &packets {
            assert!(pk.ts >= last, "{name} {direction}: timestamps in order");
            last = pk.ts;
            check_checksums(pk);
        }
    }
    // The bottleneck dropped packets, so the file shows drops.
    let b = dir_index(r, "bottleneck", "forward");
    assert!(r.links.drops_overflow[b] > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_queue_log_balances_against_the_links_table() {
    let sc = scenario(MIXED);
    let dir = tmp("log");
    let mut spec = CaptureSpec::everything(sc.links.len());
    spec.events = true;
    let run = run_captured(&sc, &spec, &dir);
    let (r, log) = (&run.results, &run.log);
    assert!(!log.is_empty());
    for i in 0..r.links.name.len() {
        let rows: Vec<usize> = (0..log.len())
            .filter(|&k| log.link_dir[k] as usize == i)
            .collect();
        let count = |e: &str| {
            rows.iter()
                .filter(|&&k| LOG_EVENTS[log.event[k] as usize] == e)
                .count() as u64
        };
        // Every link drained before the end: each packet accepted was transmitted, and
        // reached the far end or was lost on the wire.
        assert_eq!(
            count("dequeue"),
            r.links.delivered_packets[i] + r.links.drops_wire[i]
        );
        assert_eq!(count("enqueue"), count("dequeue"));
        assert_eq!(
            count("drop"),
            r.links.drops_overflow[i] + r.links.drops_early[i] + r.links.drops_forced[i]
        );
        assert_eq!(count("enqueue") + count("drop"), r.links.arrivals[i]);
        // Replaying the rows gives the queue each row reports, in time order.
        let (mut q, mut qb, mut t) = (0i64, 0i64, 0.0f64);
        for &k in &rows {
            assert!(log.time_s[k] >= t, "rows of a link direction in time order");
            t = log.time_s[k];
            match LOG_EVENTS[log.event[k] as usize] {
                "enqueue" => {
                    q += 1;
                    qb += log.bytes[k] as i64;
                }
                "dequeue" => {
                    q -= 1;
                    qb -= log.bytes[k] as i64;
                }
                _ => {}
            }
            assert_eq!(q, log.queue_packets[k] as i64);
            assert_eq!(qb, log.queue_bytes[k] as i64);
        }
        assert_eq!(q, 0, "every queue drained");
    }
    // The drop-tail limit of 20 packets bounds the bottleneck's queue.
    assert!(log.queue_packets.iter().all(|&q| q <= 1000));
    let b = dir_index(r, "bottleneck", "forward") as u32;
    let max_b = (0..log.len())
        .filter(|&k| log.link_dir[k] == b)
        .map(|k| log.queue_packets[k])
        .max()
        .unwrap();
    assert_eq!(max_b, 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mptcp_subflows_carry_rfc_8684_options() {
    let sc = scenario(MIXED);
    let dir = tmp("mptcp");
    let mut spec = CaptureSpec::everything(sc.links.len());
    spec.dirs = vec![0]; // the bottleneck, forward
    run_captured(&sc, &spec, &dir);
    let packets = read_pcapng(&dir.join("bottleneck-forward.pcapng"));
    let tcp: Vec<&Epb> = packets.iter().filter(|p| p.data[9] == 6).collect();
    // The MP_CAPABLE third ACK holds both keys (RFC 8684 Figure 4, length 20).
    let capable: Vec<Vec<u8>> = tcp.iter().filter_map(|p| mptcp(&p.data, 0)).collect();
    assert_eq!(capable.len(), 2, "SYN and third ACK of the first subflow");
    assert_eq!(capable[0][1], 4, "a version 1 SYN carries no key");
    assert_eq!(capable[1][1], 20);
    let key_b = &capable[1][12..20];
    // MP_JOIN on the second subflow's SYN names the listener's token: the high 32 bits of
    // SHA-256 of its key (RFC 8684 §3.2).
    let joins: Vec<Vec<u8>> = tcp.iter().filter_map(|p| mptcp(&p.data, 1)).collect();
    assert_eq!(joins.len(), 2, "SYN and third ACK of the second subflow");
    assert_eq!(joins[0][1], 12);
    assert_eq!(&joins[0][4..8], &sha256(key_b)[..4]);
    assert_eq!(joins[1][1], 24);
    // Data segments carry a DSS mapping whose data-level length is the payload, and the
    // connection's first mapping starts at IDSN + 1, IDSN being the low 64 bits of SHA-256
    // of the initiator's key.
    let key_a = &capable[1][4..12];
    let idsn = u64::from_be_bytes(sha256(key_a)[24..32].try_into().unwrap());
    let mut dsns = Vec::new();
    for p in &tcp {
        let Some(dss) = mptcp(&p.data, 2) else {
            continue;
        };
        if dss[3] & 0x04 == 0 {
            continue;
        }
        assert_eq!(dss[1], 22);
        assert_eq!(dss[3], 0x0d, "A, M and m flags");
        let dsn = u64::from_be_bytes(dss[8..16].try_into().unwrap());
        let len = be16(&dss, 20) as u32;
        let header = 20 + ((p.data[32] >> 4) as u32) * 4;
        assert_eq!(len, p.orig - header);
        dsns.push(dsn);
    }
    assert!(!dsns.is_empty());
    assert_eq!(dsns.iter().min().copied(), Some(idsn.wrapping_add(1)));
    // TCP sequence numbers advance by the payload: the data segments of one subflow, first
    // transmissions in order, step by their own payload length.
    let first_sub: Vec<&&Epb> = tcp
        .iter()
        .filter(|p| be16(&p.data, 20) == 40000 && p.data[12..16] == [198, 18, 0, 3])
        .filter(|p| p.orig > 100)
        .collect();
    let mut steps = 0;
    for w in first_sub.windows(2) {
        let (a, b) = (be32(&w[0].data, 24), be32(&w[1].data, 24));
        let header = 20 + ((w[0].data[32] >> 4) as u32) * 4;
        if b.wrapping_sub(a) == w[0].orig - header {
            steps += 1;
        }
    }
    assert!(
        steps > first_sub.len() / 2,
        "{steps} of {}",
        first_sub.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let sc = scenario(MIXED);
    let spec = CaptureSpec::everything(sc.links.len());
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    run_captured(&sc, &spec, &a);
    run_captured(&sc, &spec, &b);
    let mut names: Vec<_> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names.len(), 12);
    for n in names {
        assert_eq!(
            std::fs::read(a.join(&n)).unwrap(),
            std::fs::read(b.join(&n)).unwrap()
        );
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn a_file_stops_whole_at_its_byte_limit() {
    let sc = scenario(MIXED);
    let dir = tmp("limit");
    let mut spec = CaptureSpec::everything(sc.links.len());
    spec.max_bytes = 4096;
    let run = run_captured(&sc, &spec, &dir);
    assert!(run
        .truncated
        .contains(&"bottleneck-forward.pcapng".to_string()));
    assert!(run
        .warnings
        .iter()
        .any(|w| w.contains("bottleneck-forward.pcapng") && w.contains("max_bytes")));
    let path = dir.join("bottleneck-forward.pcapng");
    assert!(std::fs::metadata(&path).unwrap().len() <= 4096);
    assert!(!read_pcapng(&path).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_changes_no_result() {
    let sc = scenario(MIXED);
    let plain = common::run(&sc, None);
    let dir = tmp("same");
    let mut spec = CaptureSpec::everything(sc.links.len());
    spec.events = true;
    let captured = run_captured(&sc, &spec, &dir);
    // Debug strings, since NaN (an undefined mean) is not equal to itself.
    assert_eq!(format!("{plain:?}"), format!("{:?}", captured.results));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_tables_are_checked() {
    let base = "duration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n\
                [[flow]]\nname = \"f\"\npath = [\"l\"]\n[capture]\n";
    let err = |extra: &str| {
        Scenario::parse(&format!("{base}{extra}"), "x.toml", "x")
            .unwrap_err()
            .to_string()
    };
    assert!(err("links = [\"l\", \"nope\"]").contains("capture.links[1]"));
    assert!(err("directions = \"up\"").contains("capture.directions"));
    assert!(err("snaplen = 0").contains("capture.snaplen"));
    assert!(err("snaplen = 100000").contains("capture.snaplen"));
    assert!(err("max_bytes = \"10B\"").contains("capture.max_bytes"));
    assert!(err("colour = 1").contains("capture"));
    let ok = Scenario::parse(
        &format!("{base}links = [\"l\"]\ndirections = \"reverse\"\nsnaplen = 96\nevents = true"),
        "x.toml",
        "x",
    )
    .unwrap();
    let spec = ok.capture.unwrap();
    assert_eq!((spec.dirs, spec.snaplen, spec.events), (vec![1], 96, true));
}

/// A QUIC flow's packets are UDP datagrams to port 443 of their simulated size whose payload
/// starts with a 1-RTT short header (RFC 9000 §17.3.1): form bit clear, fixed bit set, a
/// 4-byte packet number (length bits 3), after an 8-byte destination connection ID.
#[test]
fn quic_packets_carry_a_short_header() {
    let sc = scenario(
        r#"
duration = "1s"
[[link]]
name = "l"
rate = "10Mbps"
delay = "5ms"
[[flow]]
name = "q"
transport = "quic"
path = ["l"]
"#,
    );
    let dir = tmp("quic");
    let run = run_captured(&sc, &CaptureSpec::everything(1), &dir);
    let all = read_pcapng(&dir.join("l-forward.pcapng"));
    let packets: Vec<&Epb> = all.iter().filter(|p| p.comment.is_none()).collect();
    assert_eq!(packets.len() as u64, run.results.links.delivered_packets[0]);
    for p in &all {
        check_checksums(p);
        let d = &p.data;
        assert_eq!(d[9], 17);
        assert_eq!(be16(d, 22), 443);
        assert_eq!(be16(d, 24) as u32, p.orig - 20);
        assert_eq!(d[28], 0x43);
        assert_eq!(d.len(), 28 + 1 + 8 + 4);
    }
    // The packet numbers of the first transmissions count up from the first.
    let numbers: Vec<u32> = packets.iter().map(|p| be32(&p.data, 37)).collect();
    assert_eq!(numbers[..3], [numbers[0], numbers[0] + 1, numbers[0] + 2]);
    let _ = std::fs::remove_dir_all(&dir);
}
