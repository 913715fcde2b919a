//! Packet captures and the queue log of an emulated run, written off the link thread.
//!
//! The link thread ([`crate::driver`]) hands each captured packet over as it is: the first
//! `snaplen` bytes of the IP packet it read from a TUN device, its full length and its stamp;
//! with `events`, each enqueue, drop and dequeue as a queue-log row. It copies them into a
//! [`Batch`] (two growing vectors, reused), and hands a batch to the writer thread every
//! [`BATCH_BYTES`] bytes, [`BATCH_ROWS`] rows or [`FLUSH_NS`] ns; the writer thread owns the
//! simulator's [`CaptureFiles`] (the same pcapng writer, file names, limits and warnings) and
//! gives the emptied batch back. The link thread thus does no file I/O and, once the batches
//! have grown to their working size, no allocation. If the writer falls behind by more than
//! [`MAX_OUTSTANDING`] batches, the capture stops there with a warning (every file is marked
//! cut short); the run goes on, as with the capture's other limits.
//!
//! Stamps are the link model's: a packet is stamped with the time its transmission ended as
//! the link direction planned it (its arrival at the next hop less the propagation delay), a
//! drop with the time the packet was offered, in ns since the run's epoch, exactly as the
//! simulator stamps its own. The moment the emulator wrote the packet to the next device is
//! later by the measured lateness.

use pathweave_cc::Instant;
use pathweave_sim::capture::{
    CaptureFiles, CaptureSpec, CaptureSummary, Engine, LogEvent, LogRow, PacketLog,
};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

/// Captured bytes a batch holds before it is handed over.
const BATCH_BYTES: usize = 256 * 1024;
/// Queue-log rows a batch holds before it is handed over.
const BATCH_ROWS: usize = 8192;
/// A batch that holds anything is handed over at least this often.
const FLUSH_NS: u64 = 5_000_000;
/// Batches handed over and not yet given back at most; past that the capture stops.
const MAX_OUTSTANDING: usize = 256;
/// Emptied batches kept for reuse at most.
const RESERVE: usize = 4;

/// One packet record of a batch; its bytes are `data[at..at + len]`.
#[derive(Clone, Copy, Debug)]
struct Record {
    dir: u32,
    ts: u64,
    orig: u32,
    at: u32,
    len: u32,
    comment: Option<&'static str>,
    defer: bool,
}

/// What the link thread hands to the writer at once.
#[derive(Debug, Default)]
struct Batch {
    records: Vec<Record>,
    data: Vec<u8>,
    rows: Vec<LogRow>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.records.is_empty() && self.rows.is_empty()
    }

    fn clear(&mut self) {
        self.records.clear();
        self.data.clear();
        self.rows.clear();
    }
}

enum Message {
    Batch(Batch),
    /// The writer fell behind at this time (ns): stop the capture there.
    Overrun(u64),
}

/// What a finished capture wrote, and the queue log's rows.
#[derive(Clone, Debug, Default)]
pub struct CaptureOutput {
    /// The files and the queue log's counts.
    pub summary: CaptureSummary,
    /// The queue log.
    pub log: PacketLog,
    /// Warnings (a file that reached `max_bytes`, the queue log `max_events`, the writer
    /// falling behind).
    pub warnings: Vec<String>,
    /// Per file (as in `summary.files`), the packets that had started transmitting on its
    /// link direction and not reached the far end when the run ended.
    pub in_flight_at_end: Vec<u64>,
}

/// The link thread's side of a capture.
pub(crate) struct Recorder {
    /// Per link direction, whether it is captured.
    dirs: Vec<bool>,
    events: bool,
    snaplen: usize,
    batch: Batch,
    /// Emptied batches, given back by the writer.
    spare: Receiver<Batch>,
    /// Emptied batches ready for use.
    reserve: Vec<Batch>,
    to_writer: Option<Sender<Message>>,
    writer: Option<JoinHandle<CaptureFiles>>,
    outstanding: usize,
    last_flush: u64,
    stopped: bool,
}

impl Recorder {
    /// Create the files `spec` asks for in `dir`, for links named `links`, and start the
    /// writer thread.
    pub(crate) fn start(spec: &CaptureSpec, dir: &Path, links: &[&str]) -> std::io::Result<Self> {
        let files = CaptureFiles::create(spec, dir, links, Engine::Emulated)?;
        let dirs = (0..2 * links.len()).map(|d| files.captures(d)).collect();
        let (to_writer, inbox) = channel::<Message>();
        let (give_back, spare) = channel::<Batch>();
        let writer = std::thread::Builder::new()
            .name("pw-emu-capture".to_string())
            .spawn(move || write_batches(files, &inbox, &give_back))?;
        Ok(Recorder {
            dirs,
            events: spec.events,
            snaplen: spec.snaplen as usize,
            batch: Batch::default(),
            spare,
            reserve: Vec::new(),
            to_writer: Some(to_writer),
            writer: Some(writer),
            outstanding: 0,
            last_flush: 0,
            stopped: false,
        })
    }

    /// Whether link direction `d` is captured (and the capture goes on).
    #[inline]
    pub(crate) fn captures(&self, d: usize) -> bool {
        !self.stopped && self.dirs.get(d).copied().unwrap_or(false)
    }

    /// The captured link directions, ascending (the order of the files).
    pub(crate) fn dirs(&self) -> Vec<usize> {
        (0..self.dirs.len()).filter(|&d| self.dirs[d]).collect()
    }

    /// Whether the queue log is kept.
    #[inline]
    pub(crate) fn events(&self) -> bool {
        self.events
    }

    /// A packet of link direction `d`: `packet` as carried, stamped `ts`.
    pub(crate) fn packet(
        &mut self,
        d: usize,
        ts: Instant,
        packet: &[u8],
        comment: Option<&'static str>,
        defer: bool,
    ) {
        if self.stopped {
            return;
        }
        let n = packet.len().min(self.snaplen);
        let b = &mut self.batch;
        b.records.push(Record {
            dir: d as u32,
            ts: ts.0,
            orig: packet.len() as u32,
            at: b.data.len() as u32,
            len: n as u32,
            comment,
            defer,
        });
        b.data.extend_from_slice(&packet[..n]);
        if b.data.len() >= BATCH_BYTES {
            self.hand_over(ts.0);
        }
    }

    /// A row of the queue log.
    pub(crate) fn row(&mut self, row: LogRow) {
        if self.stopped || !self.events {
            return;
        }
        self.batch.rows.push(row);
        if self.batch.rows.len() >= BATCH_ROWS {
            self.hand_over(row.time.0);
        }
    }

    /// Hand the batch over if it holds anything and the last was handed over
    /// [`FLUSH_NS`] ago; `now` in ns since the epoch.
    pub(crate) fn tick(&mut self, now: u64) {
        if now >= self.last_flush + FLUSH_NS && !self.batch.is_empty() {
            self.hand_over(now);
        }
    }

    fn hand_over(&mut self, now: u64) {
        self.last_flush = now;
        while let Ok(b) = self.spare.try_recv() {
            self.outstanding -= 1;
            // A few in reserve are enough; more would only hold memory.
            if self.reserve.len() < RESERVE {
                self.reserve.push(b);
            }
        }
        let Some(tx) = self.to_writer.as_ref() else {
            return;
        };
        if self.outstanding >= MAX_OUTSTANDING {
            // The writer is far behind: stop rather than hold the run's packets in memory.
            self.stopped = true;
            self.batch.clear();
            let _ = tx.send(Message::Overrun(now));
            return;
        }
        let next = match self.reserve.pop() {
            Some(b) => b,
            None => Batch {
                records: Vec::with_capacity(self.batch.records.capacity()),
                data: Vec::with_capacity(BATCH_BYTES + self.snaplen),
                rows: Vec::with_capacity(if self.events { BATCH_ROWS } else { 0 }),
            },
        };
        let full = std::mem::replace(&mut self.batch, next);
        if tx.send(Message::Batch(full)).is_ok() {
            self.outstanding += 1;
        } else {
            self.stopped = true;
        }
    }

    /// Hand over what is left, wait for the writer and close the files.
    pub(crate) fn finish(mut self) -> Result<(CaptureSummary, PacketLog, Vec<String>), String> {
        if !self.batch.is_empty() && !self.stopped {
            let b = std::mem::take(&mut self.batch);
            if let Some(tx) = self.to_writer.as_ref() {
                let _ = tx.send(Message::Batch(b));
            }
        }
        self.to_writer = None;
        let files = self
            .writer
            .take()
            .ok_or_else(|| "the capture writer is gone".to_string())?
            .join()
            .map_err(|_| "the capture writer panicked".to_string())?;
        let mut files = files;
        let log = files.take_log();
        let warnings = files.take_warnings();
        let summary = files.finish()?;
        Ok((summary, log, warnings))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // On a way out without `finish`, the writer ends once its inbox is closed.
        self.to_writer = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// The writer thread: write each batch through `files`, give it back emptied, and return the
/// files once the link thread closes the inbox.
fn write_batches(
    mut files: CaptureFiles,
    inbox: &Receiver<Message>,
    give_back: &Sender<Batch>,
) -> CaptureFiles {
    while let Ok(m) = inbox.recv() {
        match m {
            Message::Batch(mut b) => {
                for r in &b.records {
                    let data = &b.data[r.at as usize..(r.at + r.len) as usize];
                    files.emit(r.dir as usize, r.ts, data, r.orig, r.comment, r.defer);
                }
                for &row in &b.rows {
                    files.log_row(row);
                }
                b.clear();
                let _ = give_back.send(b);
            }
            Message::Overrun(at) => files.stop_all(format!(
                "capture: the capture writer fell behind the link thread at {:.6} s; the \
                 capture stops there (the run goes on)",
                at as f64 / 1e9
            )),
        }
    }
    files
}

/// The sequence number the queue log gives a packet of the emulator: for TCP, the sequence
/// number of a segment on a data route and the acknowledgement number on an ACK route (the
/// simulator's column holds a data segment's sequence number and an ACK's cumulative ACK), in
/// bytes as the header holds them; 0 for anything else (UDP, QUIC, a truncated header).
pub(crate) fn sequence(packet: &[u8], data: bool) -> u64 {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[9] != 6 {
        return 0;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let at = ihl + if data { 4 } else { 8 };
    match packet.get(at..at + 4) {
        Some(b) => u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => 0,
    }
}

/// The queue-log event of an offer: its enqueue, or its drop.
pub(crate) fn offer_event(accepted: bool) -> LogEvent {
    if accepted {
        LogEvent::Enqueue
    } else {
        LogEvent::Drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(seq: u32, ack: u32) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&ack.to_be_bytes());
        p
    }

    #[test]
    fn the_sequence_is_a_data_segments_and_an_acks_acknowledgement() {
        let p = tcp(1000, 77);
        assert_eq!(sequence(&p, true), 1000);
        assert_eq!(sequence(&p, false), 77);
        let mut udp = p.clone();
        udp[9] = 17;
        assert_eq!(sequence(&udp, true), 0);
        assert_eq!(sequence(&p[..30], false), 0);
    }

    #[test]
    fn the_writer_thread_writes_what_the_link_thread_hands_over() {
        let dir = std::env::temp_dir().join(format!("pw-emu-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut spec = CaptureSpec::everything(1);
        spec.events = true;
        spec.snaplen = 24;
        let mut r = Recorder::start(&spec, &dir, &["l"]).unwrap();
        for i in 0..5000u32 {
            let t = Instant(u64::from(i) * 1000);
            r.packet(0, t, &tcp(i, 0), None, false);
            r.row(LogRow {
                time: t,
                link_dir: 0,
                flow: 0,
                subflow: 0,
                sequence: u64::from(i),
                bytes: 40,
                event: LogEvent::Dequeue,
                queue_packets: 0,
                queue_bytes: 0,
            });
            r.tick(t.0);
        }
        let (summary, log, warnings) = r.finish().unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(summary.files[0].packets, 5000);
        assert_eq!(summary.files[1].packets, 0);
        assert_eq!(log.len(), 5000);
        let bytes = std::fs::read(dir.join("l-forward.pcapng")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(bytes.len() as u64, summary.files[0].bytes);
    }
}
