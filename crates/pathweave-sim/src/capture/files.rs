//! The files of a capture, shared by the simulator and the emulator: one pcapng file per
//! captured link direction, `<link>-<direction>.pcapng`, the records held back until the
//! packets transmitted before them are written, the limits (`max_bytes` per file,
//! `max_events` rows of the queue log) with their warnings, and the summary of what was
//! written.
//!
//! Invariants: a file holds whole blocks only and never grows past `max_bytes`; once a file
//! reached its limit nothing more is written to it (its held-back records are discarded);
//! records of one link direction are written in the order they are handed over, except that
//! a held-back record ([`CaptureFiles::emit`] with `defer`) waits for the first record
//! stamped at or after it. The engines differ only in what they hand over: the simulator
//! builds its packets from what it knows of them, the emulator hands over the bytes it
//! carries.

use super::pcapng::{PcapngWriter, Written, FLAG_OUTBOUND, LINKTYPE_RAW};
use super::{CaptureFile, CaptureSpec, CaptureSummary, LogEvent, PacketLog};
use pathweave_cc::Instant;
use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// A record held back until the packets transmitted before it have been written.
struct Pending {
    ts: u64,
    orig: u32,
    data: Vec<u8>,
    comment: Option<&'static str>,
}

struct DirFile {
    file: CaptureFile,
    writer: Option<PcapngWriter<BufWriter<File>>>,
    pending: VecDeque<Pending>,
}

/// Which engine writes a capture: it names the files' application and interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The discrete-event simulator: packets built from the model.
    Simulated,
    /// The real-time emulator: the packets the kernels sent.
    Emulated,
}

impl Engine {
    fn word(self) -> &'static str {
        match self {
            Engine::Simulated => "simulated",
            Engine::Emulated => "emulated",
        }
    }

    fn stamp(self) -> &'static str {
        match self {
            Engine::Simulated => "stamped at transmission end",
            Engine::Emulated => "stamped at transmission end as the link model planned it",
        }
    }
}

/// One row of the queue log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogRow {
    /// When the event happened.
    pub time: Instant,
    /// The link direction (`2·link + reverse`).
    pub link_dir: u32,
    /// The flow.
    pub flow: u32,
    /// The subflow of the flow.
    pub subflow: u32,
    /// The packet's sequence number (see [`PacketLog::sequence`]).
    pub sequence: u64,
    /// The packet's size.
    pub bytes: u32,
    /// What happened.
    pub event: LogEvent,
    /// Packets waiting after the event.
    pub queue_packets: u32,
    /// Bytes waiting after the event.
    pub queue_bytes: u64,
}

/// A file name for a link direction: the link's name with characters other than letters,
/// digits, `.`, `_` and `-` replaced by `_`.
pub(crate) fn file_name(link: &str, reverse: bool) -> String {
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

/// The open files of a capture and its queue log.
pub struct CaptureFiles {
    spec: CaptureSpec,
    dirs: Vec<Option<DirFile>>,
    log: PacketLog,
    log_rows: u64,
    log_truncated: bool,
    warnings: Vec<String>,
    error: Option<String>,
}

impl CaptureFiles {
    /// Create the files `spec` asks for in `dir` (which exists), for links named `links`
    /// (link direction `d` is link `d / 2`, reverse if odd), written by `engine`.
    pub fn create(
        spec: &CaptureSpec,
        dir: &Path,
        links: &[&str],
        engine: Engine,
    ) -> std::io::Result<CaptureFiles> {
        let mut dirs: Vec<Option<DirFile>> = (0..2 * links.len()).map(|_| None).collect();
        let mut used = HashSet::new();
        let app = format!(
            "pathweave {} ({})",
            env!("CARGO_PKG_VERSION"),
            engine.word()
        );
        for &d in &spec.dirs {
            let (link, reverse) = ((d / 2) as usize, d % 2 == 1);
            let Some(&l) = links.get(link) else {
                continue;
            };
            let mut name = file_name(l, reverse);
            if !used.insert(name.clone()) {
                name = file_name(&format!("{l}-{link}"), reverse);
                used.insert(name.clone());
            }
            let direction = if reverse { "reverse" } else { "forward" };
            let out = BufWriter::with_capacity(1 << 16, File::create(dir.join(&name))?);
            let writer = PcapngWriter::new(
                out,
                &app,
                LINKTYPE_RAW,
                spec.snaplen,
                &format!("{l}-{direction}"),
                &format!(
                    "{} link {l} ({direction}), {}",
                    engine.word(),
                    engine.stamp()
                ),
                spec.max_bytes,
            )?;
            dirs[d as usize] = Some(DirFile {
                file: CaptureFile {
                    name,
                    link: l.to_string(),
                    direction: direction.to_string(),
                    packets: 0,
                    bytes: 0,
                    truncated: false,
                },
                writer: Some(writer),
                pending: VecDeque::new(),
            });
        }
        Ok(CaptureFiles {
            spec: spec.clone(),
            dirs,
            log: PacketLog::default(),
            log_rows: 0,
            log_truncated: false,
            warnings: Vec::new(),
            error: None,
        })
    }

    /// What the capture was asked for.
    pub fn spec(&self) -> &CaptureSpec {
        &self.spec
    }

    /// Whether link direction `d` is captured.
    #[inline]
    pub fn captures(&self, d: usize) -> bool {
        matches!(self.dirs.get(d), Some(Some(_)))
    }

    /// Whether link direction `d` is captured and its file can still be written to (it did
    /// not fail; it may have reached its limit).
    pub fn writing(&self, d: usize) -> bool {
        matches!(self.dirs.get(d), Some(Some(s)) if s.writer.is_some())
    }

    /// Hand over the packet `data` (cut here to the snapshot length), `orig` bytes on the
    /// wire, stamped `ts` ns, at link direction `d`, with an optional comment. With `defer`
    /// it is held back until a record stamped at or after it is written (or the end);
    /// otherwise the held-back records stamped at or before `ts` are written first.
    pub fn emit(
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
                let p = Pending {
                    ts,
                    orig,
                    data: data[..snap].to_vec(),
                    comment,
                };
                // In stamp order, equal stamps in the order handed over. The simulator's are
                // handed over in order; the emulator's may not be (a link direction offered
                // packets both at the clock reading and at planned hand-over times).
                match s.pending.back() {
                    Some(last) if last.ts > ts => {
                        let at = s.pending.partition_point(|q| q.ts <= ts);
                        s.pending.insert(at, p);
                    }
                    _ => s.pending.push_back(p),
                }
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
            self.write(d, p.ts, &p.data, p.orig, p.comment);
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

    /// Whether the queue log takes rows: it was asked for and has not reached its limit.
    #[inline]
    pub fn logging(&self) -> bool {
        self.spec.events && !self.log_truncated
    }

    /// Add a row to the queue log, unless it is off or has reached `max_events` (the first
    /// row past it raises a warning).
    pub fn log_row(&mut self, r: LogRow) {
        if !self.logging() {
            return;
        }
        if self.log_rows >= self.spec.max_events {
            self.log_truncated = true;
            self.warnings.push(format!(
                "capture: the queue log reached max_events ({} rows) at {:.6} s; later events \
                 are not recorded",
                self.spec.max_events,
                r.time.as_secs_f64()
            ));
            return;
        }
        self.log_rows += 1;
        let l = &mut self.log;
        l.time_s.push(r.time.as_secs_f64());
        l.link_dir.push(r.link_dir);
        l.flow.push(r.flow);
        l.subflow.push(r.subflow);
        l.sequence.push(r.sequence);
        l.bytes.push(r.bytes);
        l.event.push(r.event as u8);
        l.queue_bytes.push(r.queue_bytes);
        l.queue_packets.push(r.queue_packets);
    }

    /// Stop the whole capture where it is: every file that is still written is marked cut
    /// short and gets nothing more, the queue log takes no more rows, and `why` becomes a
    /// warning. For an engine that cannot hand everything over (the emulator's writer fell
    /// behind).
    pub fn stop_all(&mut self, why: String) {
        for s in self.dirs.iter_mut().flatten() {
            if let Some(w) = s.writer.as_ref() {
                if !w.stopped() {
                    s.file.truncated = true;
                }
            }
            s.pending.clear();
            if let Some(w) = s.writer.take() {
                s.file.packets = w.packets();
                s.file.bytes = w.bytes();
                if let Err(e) = w.finish() {
                    if self.error.is_none() {
                        self.error = Some(format!("cannot write {}: {e}", s.file.name));
                    }
                }
            }
        }
        if self.spec.events {
            self.log_truncated = true;
        }
        self.warnings.push(why);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file name keeps the link's name where it is safe in a path.
    #[test]
    fn file_names_follow_the_link() {
        assert_eq!(file_name("bottleneck", false), "bottleneck-forward.pcapng");
        assert_eq!(file_name("a/b c", true), "a_b_c-reverse.pcapng");
    }

    /// Held-back records are written in stamp order before the first record stamped after
    /// them, and stopping the capture marks the files cut short.
    #[test]
    fn held_back_records_wait_for_later_ones_and_a_stop_cuts_every_file() {
        let dir = std::env::temp_dir().join(format!("pw-capture-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = CaptureSpec::everything(1);
        let mut f = CaptureFiles::create(&spec, &dir, &["l"], Engine::Emulated).unwrap();
        assert!(f.captures(0) && f.captures(1) && !f.captures(2));
        let drop = Some("dropped: queue overflow");
        f.emit(0, 50, &[0x45; 40], 40, drop, true);
        f.emit(0, 40, &[0x45; 40], 40, drop, true);
        f.emit(0, 10, &[0x45; 40], 40, None, false);
        f.emit(0, 60, &[0x45; 40], 40, None, false);
        f.stop_all("stopped".to_string());
        f.emit(0, 70, &[0x45; 40], 40, None, false);
        let s = f.finish().unwrap();
        let b = std::fs::read(dir.join("l-forward.pcapng")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(s.files[0].packets, 4);
        assert!(s.files.iter().all(|f| f.truncated));
        // The packet blocks' timestamps (low halves), in file order.
        let le = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let (mut at, mut stamps) = (0, Vec::new());
        while at < b.len() {
            if le(at) == 6 {
                stamps.push(le(at + 16));
            }
            at += le(at + 4) as usize;
        }
        assert_eq!(stamps, [10, 40, 50, 60]);
    }
}
