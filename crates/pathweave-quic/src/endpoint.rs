//! The two ends of a measured transfer: a [`Receiver`] that accepts connections and checks
//! what arrives, and [`send`], which opens one path per local address, runs the connection's
//! coupled controller and sends a sized or timed transfer over one stream.
//!
//! Both run on a single-threaded tokio runtime of their own, created on the calling thread:
//! sockets are made on that thread, so a caller that moved the thread into a network
//! namespace gets sockets in that namespace (the emulator does).
// Real endpoints live in real time: they read the clock (the simulator's core never does).
#![allow(clippy::disallowed_methods)]

use crate::adapter::{Coupled, CoupledFactory};
use crate::cert::{self, Identity};
use crate::socket::PathSockets;
use crate::transfer::{self, Announced, Digester, Pattern, HEADER_LEN, RECEIPT_LEN};
use crate::QuicError;
use pathweave_sim::scenario::Control;
use quinn::{
    ClientConfig, Connection, Endpoint, EndpointConfig, IdleTimeout, ServerConfig, TokioRuntime,
    TransportConfig, VarInt,
};
use quinn_proto::{PathError, PathId, PathStats, PathStatus};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a waiting end looks at its stop flag.
const TICK: Duration = Duration::from_millis(50);
/// How long a sender waits for the receipt once its data is sent and acknowledged.
const RECEIPT_WAIT: Duration = Duration::from_secs(30);

/// Transport settings both ends share.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Largest UDP payload, fixed (no path-MTU discovery); `None` keeps quinn's 1200 bytes.
    pub mtu: Option<u16>,
    /// Paths a connection may have at once (the multipath draft's `initial_max_path_id` + 1).
    pub max_paths: u32,
    /// A connection silent this long is closed.
    pub idle_timeout: Duration,
    /// A path that hears nothing this long is abandoned (its data is resent on the others).
    pub path_idle_timeout: Duration,
    /// Flow-control windows (stream and connection) and the send buffer, bytes: large, so
    /// that congestion control alone limits the rate.
    pub window: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mtu: None,
            max_paths: 8,
            idle_timeout: Duration::from_secs(30),
            path_idle_timeout: Duration::from_secs(10),
            window: 64 << 20,
        }
    }
}

impl Settings {
    /// Checks the values and names the first one out of range.
    pub fn validate(&self) -> Result<(), QuicError> {
        if let Some(m) = self.mtu {
            if !(1200..=65_527).contains(&m) {
                return Err(QuicError::Usage(format!(
                    "--mtu {m}: QUIC needs UDP payloads of at least 1200 bytes (RFC 9000 §14) \
                     and at most 65527"
                )));
            }
        }
        if self.max_paths == 0 || self.max_paths > 64 {
            return Err(QuicError::Usage(format!(
                "{} paths: allowed 1 to 64",
                self.max_paths
            )));
        }
        if self.path_idle_timeout < Duration::from_millis(100)
            || self.idle_timeout < self.path_idle_timeout
        {
            return Err(QuicError::Usage(format!(
                "path idle timeout {:?} must be at least 100 ms and at most the connection's \
                 idle timeout {:?}",
                self.path_idle_timeout, self.idle_timeout
            )));
        }
        Ok(())
    }

    fn transport(
        &self,
        factory: Option<Arc<CoupledFactory>>,
    ) -> Result<TransportConfig, QuicError> {
        let mut t = TransportConfig::default();
        t.max_concurrent_multipath_paths(self.max_paths);
        if let Some(mtu) = self.mtu {
            t.initial_mtu(mtu);
            t.min_mtu(mtu);
            t.mtu_discovery_config(None);
        }
        let idle = IdleTimeout::try_from(self.idle_timeout)
            .map_err(|_| QuicError::Usage("idle timeout too large".to_string()))?;
        t.max_idle_timeout(Some(idle));
        t.default_path_max_idle_timeout(Some(self.path_idle_timeout));
        t.default_path_keep_alive_interval(Some(self.path_idle_timeout / 4));
        let w = VarInt::from_u64(self.window)
            .map_err(|_| QuicError::Usage(format!("window {} too large", self.window)))?;
        t.stream_receive_window(w);
        t.receive_window(w);
        t.send_window(self.window);
        if let Some(f) = factory {
            t.congestion_controller_factory(f);
        }
        Ok(t)
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, QuicError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| QuicError::Io(format!("starting the I/O runtime: {e}")))
}

/// What the receiving end is told.
#[derive(Clone, Debug)]
pub struct ReceiveOptions {
    /// Address and port to listen on.
    pub listen: SocketAddr,
    /// Transport settings.
    pub settings: Settings,
    /// Stop after this many transfers (`None`: until stopped).
    pub transfers: Option<u64>,
}

/// One finished (or failed) transfer at the receiver.
#[derive(Clone, Debug)]
pub struct Received {
    /// The sender's first address.
    pub peer: SocketAddr,
    /// Bytes of data received.
    pub bytes: u64,
    /// What the sender announced.
    pub announced: Option<Announced>,
    /// SHA-256 of the data, hex.
    pub sha256: String,
    /// The same, as bytes.
    pub digest: [u8; 32],
    /// From the connection's acceptance to the end of the stream.
    pub seconds: f64,
    /// Paths the connection had at its end.
    pub paths: usize,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Counters a receiver keeps for whoever samples it.
#[derive(Debug, Default)]
pub struct ReceiverLive {
    /// Data bytes received over all transfers.
    pub delivered: AtomicU64,
    /// Transfers completed.
    pub transfers: AtomicU64,
}

/// A bound receiving endpoint with its certificate.
pub struct Receiver {
    runtime: tokio::runtime::Runtime,
    endpoint: Endpoint,
    identity: Identity,
    opts: ReceiveOptions,
}

impl Receiver {
    /// Makes a certificate and binds `opts.listen` (on the calling thread's namespace).
    pub fn bind(opts: ReceiveOptions) -> Result<Receiver, QuicError> {
        let socket = std::net::UdpSocket::bind(opts.listen)
            .map_err(|e| QuicError::Usage(format!("--listen {}: cannot bind: {e}", opts.listen)))?;
        Receiver::with_socket(socket, opts)
    }

    /// Makes a certificate and receives on `socket`, bound already (where the caller made it,
    /// in whichever namespace); `opts.listen` is only reported.
    pub fn with_socket(
        socket: std::net::UdpSocket,
        opts: ReceiveOptions,
    ) -> Result<Receiver, QuicError> {
        Receiver::with_identity(socket, opts, Identity::generate()?)
    }

    /// Receives on `socket` presenting `identity`'s certificate (made beforehand, so that a
    /// sender can be told its fingerprint before the receiver starts).
    pub fn with_identity(
        socket: std::net::UdpSocket,
        opts: ReceiveOptions,
        identity: Identity,
    ) -> Result<Receiver, QuicError> {
        opts.settings.validate()?;
        let runtime = runtime()?;
        let mut server = ServerConfig::with_crypto(identity.server_crypto()?);
        server.transport_config(Arc::new(opts.settings.transport(None)?));
        let endpoint = {
            let _g = runtime.enter();
            socket
                .set_nonblocking(true)
                .map_err(|e| QuicError::Io(format!("UDP socket: {e}")))?;
            Endpoint::new_with_abstract_socket(
                EndpointConfig::default(),
                Some(server),
                wrap(socket)?,
                Arc::new(TokioRuntime),
            )
            .map_err(|e| QuicError::Io(format!("--listen {}: {e}", opts.listen)))?
        };
        Ok(Receiver {
            runtime,
            endpoint,
            identity,
            opts,
        })
    }

    /// The address actually bound (the port is chosen when `--listen` gave 0).
    pub fn local_addr(&self) -> Result<SocketAddr, QuicError> {
        self.endpoint
            .local_addr()
            .map_err(|e| QuicError::Io(e.to_string()))
    }

    /// The certificate's SHA-256 fingerprint, hex.
    pub fn fingerprint(&self) -> String {
        self.identity.fingerprint()
    }

    /// The certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        self.identity.pem()
    }

    /// Accepts transfers until `stop` is set or `opts.transfers` have completed; calls
    /// `done` for each.
    pub fn run(
        self,
        live: &Arc<ReceiverLive>,
        stop: &AtomicBool,
        mut done: impl FnMut(&Received),
    ) -> Result<(), QuicError> {
        let Receiver {
            runtime,
            endpoint,
            opts,
            ..
        } = self;
        runtime.block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Received>();
            let mut finished = 0u64;
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if opts.transfers.is_some_and(|n| finished >= n) {
                    break;
                }
                tokio::select! {
                    incoming = endpoint.accept() => {
                        let Some(incoming) = incoming else { break };
                        let tx = tx.clone();
                        let live = Arc::clone(live);
                        tokio::spawn(async move {
                            let r = receive_one(incoming, &live).await;
                            let _ = tx.send(r);
                        });
                    }
                    Some(r) = rx.recv() => {
                        finished += 1;
                        done(&r);
                    }
                    _ = tokio::time::sleep(TICK) => {}
                }
            }
            endpoint.close(VarInt::from_u32(0), b"receiver stopping");
            let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
        });
        Ok(())
    }
}

fn wrap(socket: std::net::UdpSocket) -> Result<Box<dyn quinn::AsyncUdpSocket>, QuicError> {
    use quinn::Runtime;
    TokioRuntime
        .wrap_udp_socket(socket)
        .map_err(|e| QuicError::Io(format!("UDP socket: {e}")))
}

async fn receive_one(incoming: quinn::Incoming, live: &ReceiverLive) -> Received {
    let peer = incoming.remote_address();
    let start = Instant::now();
    let mut out = Received {
        peer,
        bytes: 0,
        announced: None,
        sha256: String::new(),
        digest: [0; 32],
        seconds: 0.0,
        paths: 0,
        error: None,
    };
    let conn = match incoming.accept() {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("refused: {e}"));
            return out;
        }
    };
    let conn = match conn.await {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("handshake: {e}"));
            return out;
        }
    };
    let r = async {
        let (mut send, mut recv) = conn.accept_bi().await.map_err(|e| e.to_string())?;
        let mut h = [0u8; HEADER_LEN];
        recv.read_exact(&mut h).await.map_err(|e| e.to_string())?;
        let announced = transfer::parse_header(&h)?;
        out.announced = Some(announced);
        let mut digest = Digester::default();
        while let Some(chunk) = recv
            .read_chunk(transfer::CHUNK)
            .await
            .map_err(|e| e.to_string())?
        {
            digest.update(&chunk.bytes);
            live.delivered
                .fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
        }
        let (n, hash) = digest.finish();
        out.bytes = n;
        out.sha256 = cert::hex(&hash);
        out.digest = hash;
        out.seconds = start.elapsed().as_secs_f64();
        out.paths = count_paths(&conn);
        send.write_all(&transfer::receipt(n, &hash))
            .await
            .map_err(|e| e.to_string())?;
        send.finish().map_err(|e| e.to_string())?;
        if let Announced::Sized(want) = announced {
            if want != n {
                return Err(format!("announced {want} bytes, received {n}"));
            }
        }
        Ok::<(), String>(())
    }
    .await;
    if let Err(e) = r {
        out.error = Some(e);
    }
    live.transfers.fetch_add(1, Ordering::Relaxed);
    // The sender closes once it has the receipt.
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
    out
}

/// Paths of `conn` that quinn still reports.
fn count_paths(conn: &Connection) -> usize {
    (0..64u32)
        .filter(|&i| conn.path_stats(PathId::from(i)).is_some())
        .count()
}

/// How much a sender sends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    /// Exactly this many bytes.
    Bytes(u64),
    /// For this long.
    Duration(Duration),
}

/// What the sending end is told.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// The receiver.
    pub to: SocketAddr,
    /// One local address per path, path 0 first.
    pub from: Vec<IpAddr>,
    /// The congestion controller's name, for reports.
    pub algorithm: String,
    /// The controller's configuration (as a scenario flow's).
    pub control: Control,
    /// The receiver's certificate fingerprint (64 hex digits).
    pub fingerprint: String,
    /// How much to send.
    pub amount: Amount,
    /// Transport settings.
    pub settings: Settings,
    /// How long to wait for the handshake and for each path to open.
    pub connect_timeout: Duration,
    /// Seed of the data pattern.
    pub seed: u64,
    /// Paths (indices in `from`, never 0) not opened with the connection: each opens when
    /// asked through [`SenderLive::change_path`].
    pub deferred: Vec<usize>,
}

/// One path of a live connection as the sender sees it.
#[derive(Clone, Debug)]
pub struct LivePath {
    /// Index in `from`.
    pub index: usize,
    /// quinn's path id.
    pub id: PathId,
    /// The controller's slot.
    pub slot: Option<u32>,
}

/// The connection, its controller and its paths, once the handshake is done.
type LiveConnection = (Connection, Arc<Coupled>, Vec<LivePath>);

/// What a running sender shares with whoever samples it or changes its paths.
#[derive(Debug, Default)]
pub struct SenderLive {
    /// Data bytes handed to the stream.
    pub written: AtomicU64,
    conn: Mutex<Option<LiveConnection>>,
    /// Path changes asked for and not yet made: (index in `from`, join).
    changes: Mutex<Vec<(usize, bool)>>,
    changed: tokio::sync::Notify,
}

/// One path at one instant.
#[derive(Clone, Debug)]
pub struct PathSample {
    /// The path.
    pub path: LivePath,
    /// quinn's counters, `None` once the path is gone.
    pub stats: Option<PathStats>,
    /// The controller's state of the path.
    pub snapshot: Option<crate::PathSnapshot>,
}

impl SenderLive {
    /// A sample of every path opened so far (empty before the handshake).
    pub fn sample(&self) -> Vec<PathSample> {
        let g = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let Some((conn, coupled, paths)) = g.as_ref() else {
            return Vec::new();
        };
        paths
            .iter()
            .map(|p| PathSample {
                path: p.clone(),
                stats: conn.path_stats(p.id),
                snapshot: p.slot.and_then(|s| coupled.snapshot(s)),
            })
            .collect()
    }

    /// Ask the running sender to open path `k` (`join`) or to close it. Taken in order, once
    /// the connection is up; a path that is already so is left alone. Path 0 carries the
    /// connection's first packets and is not closed.
    pub fn change_path(&self, k: usize, join: bool) {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((k, join));
        self.changed.notify_one();
    }

    fn take_changes(&self) -> Vec<(usize, bool)> {
        std::mem::take(&mut *self.changes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The id of the open path with index `k`, if any.
    fn open_id(&self, k: usize) -> Option<PathId> {
        let g = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let (conn, _, paths) = g.as_ref()?;
        paths
            .iter()
            .rev()
            .find(|p| p.index == k)
            .filter(|p| conn.path(p.id).is_some())
            .map(|p| p.id)
    }

    fn add_path(&self, p: LivePath) {
        let mut g = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, paths)) = g.as_mut() {
            paths.push(p);
        }
    }
}

/// What one transfer did.
#[derive(Clone, Debug)]
pub struct SendReport {
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Bytes the receiver reports.
    pub received_bytes: u64,
    /// SHA-256 of the data sent, hex.
    pub sent_sha256: String,
    /// SHA-256 the receiver reports, hex.
    pub received_sha256: String,
    /// From the first byte written to the receipt.
    pub seconds: f64,
    /// The last sample of each path.
    pub paths: Vec<PathSample>,
}

impl SendReport {
    /// Whether the receiver got exactly what was sent.
    pub fn intact(&self) -> bool {
        self.sent_bytes == self.received_bytes && self.sent_sha256 == self.received_sha256
    }
}

/// Sends one transfer; `live` is filled for samplers as the connection comes up.
pub fn send(
    opts: &SendOptions,
    live: &Arc<SenderLive>,
    stop: &AtomicBool,
) -> Result<SendReport, QuicError> {
    opts.settings.validate()?;
    if opts.from.is_empty() {
        return Err(QuicError::Usage(
            "--from: at least one local address is needed".to_string(),
        ));
    }
    if let Some(a) = opts.from.iter().find(|a| a.is_ipv4() != opts.to.is_ipv4()) {
        return Err(QuicError::Usage(format!(
            "--from {a}: not the address family of --to {}",
            opts.to
        )));
    }
    if let Some(k) = opts
        .deferred
        .iter()
        .find(|&&k| k == 0 || k >= opts.from.len())
    {
        return Err(QuicError::Usage(format!(
            "deferred path {k}: allowed 1 to {} (path 0 opens the connection)",
            opts.from.len().saturating_sub(1)
        )));
    }
    if opts.from.len() as u32 > opts.settings.max_paths {
        return Err(QuicError::Usage(format!(
            "{} --from addresses: at most {} paths",
            opts.from.len(),
            opts.settings.max_paths
        )));
    }
    let cc = opts
        .control
        .build()
        .map_err(|e| QuicError::Usage(format!("--algorithm {}: {e}", opts.algorithm)))?;
    let runtime = runtime()?;
    runtime.block_on(send_async(opts, cc, live, stop))
}

async fn send_async(
    opts: &SendOptions,
    cc: pathweave_cc::AnyMultipathController,
    live: &Arc<SenderLive>,
    stop: &AtomicBool,
) -> Result<SendReport, QuicError> {
    let sockets = PathSockets::bind(&opts.from, opts.to).map_err(|e| {
        let which = opts
            .from
            .iter()
            .find(|a| std::net::UdpSocket::bind(SocketAddr::new(**a, 0)).is_err())
            .map_or_else(|| "--from".to_string(), |a| format!("--from {a}"));
        QuicError::Usage(format!(
            "{which}: cannot bind ({e}); is it an address of this host?"
        ))
    })?;
    let coupled = Coupled::new(cc, quinn_now());
    let factory = CoupledFactory::new(Arc::clone(&coupled));
    let endpoint = Endpoint::new_with_abstract_socket(
        EndpointConfig::default(),
        None,
        Box::new(sockets.clone()),
        Arc::new(TokioRuntime),
    )
    .map_err(|e| QuicError::Io(format!("sender endpoint: {e}")))?;
    let mut client = ClientConfig::new(cert::client_crypto(&opts.fingerprint)?);
    client.transport_config(Arc::new(opts.settings.transport(Some(factory))?));
    let result = async {
        let connecting = endpoint
            .connect_with(client, sockets.remote(0), cert::SERVER_NAME)
            .map_err(|e| QuicError::Connection(format!("connecting to {}: {e}", opts.to)))?;
        let conn = wait(stop, opts.connect_timeout, connecting)
            .await
            .map_err(|e| {
                e.timeout_says(format!(
                    "no answer from {} within {:.1} s (is `pathweave quic serve` running there, \
                 and is the route up?)",
                    opts.to,
                    opts.connect_timeout.as_secs_f64()
                ))
            })?
            .map_err(|e| QuicError::Connection(format!("connecting to {}: {e}", opts.to)))?;
        let slot0 = conn
            .congestion_state(PathId::ZERO)
            .and_then(Coupled::slot_of);
        *live.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some((
            conn.clone(),
            Arc::clone(&coupled),
            vec![LivePath {
                index: 0,
                id: PathId::ZERO,
                slot: slot0,
            }],
        ));
        for k in (1..sockets.len()).filter(|k| !opts.deferred.contains(k)) {
            let id = open_path(&conn, &sockets, k, opts, stop).await?;
            let slot = conn.congestion_state(id).and_then(Coupled::slot_of);
            live.add_path(LivePath { index: k, id, slot });
        }
        // Path changes run beside the transfer; the first that fails ends it.
        let r = tokio::select! {
            r = transfer_on(&conn, opts, live, stop) => r,
            Err(e) = change_paths(&conn, &sockets, opts, live, stop) => Err(e),
        };
        let paths = live.sample();
        conn.close(VarInt::from_u32(0), b"done");
        r.map(
            |(sent, sent_hash, received, received_hash, seconds)| SendReport {
                sent_bytes: sent,
                received_bytes: received,
                sent_sha256: sent_hash,
                received_sha256: received_hash,
                seconds,
                paths,
            },
        )
    }
    .await;
    endpoint.close(VarInt::from_u32(0), b"sender done");
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    result
}

/// quinn's clock: the runtime's `now`.
fn quinn_now() -> Instant {
    use quinn::Runtime;
    TokioRuntime.now()
}

/// Why waiting ended early.
enum Waited {
    Stopped,
    TimedOut,
}

impl Waited {
    fn timeout_says(self, msg: String) -> QuicError {
        match self {
            Waited::Stopped => QuicError::Stopped,
            Waited::TimedOut => QuicError::Timeout(msg),
        }
    }
}

/// Awaits `fut` for at most `limit`, giving up early when `stop` is set.
async fn wait<F: std::future::Future>(
    stop: &AtomicBool,
    limit: Duration,
    fut: F,
) -> Result<F::Output, Waited> {
    let deadline = tokio::time::Instant::now() + limit;
    tokio::pin!(fut);
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Waited::Stopped);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(Waited::TimedOut);
        }
        let tick = (deadline - now).min(TICK);
        if let Ok(v) = tokio::time::timeout(tick, &mut fut).await {
            return Ok(v);
        }
    }
}

/// Opens path `k`, retrying while the peer has not yet issued connection IDs for it.
async fn open_path(
    conn: &Connection,
    sockets: &PathSockets,
    k: usize,
    opts: &SendOptions,
    stop: &AtomicBool,
) -> Result<PathId, QuicError> {
    let deadline = Instant::now() + opts.connect_timeout;
    let from = opts.from[k];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let attempt = conn.open_path(sockets.remote(k), PathStatus::Available);
        let r = wait(stop, left, attempt).await.map_err(|e| {
            e.timeout_says(format!(
                "path {k} from {from}: not open within {:.1} s",
                opts.connect_timeout.as_secs_f64()
            ))
        })?;
        match r {
            Ok(path) => return Ok(path.id()),
            Err(PathError::RemoteCidsExhausted) if Instant::now() < deadline => {
                tokio::time::sleep(TICK).await;
            }
            Err(PathError::MultipathNotNegotiated) => {
                return Err(QuicError::Connection(format!(
                    "path {k} from {from}: the receiver did not agree to multipath QUIC"
                )))
            }
            Err(e) => return Err(QuicError::Connection(format!("path {k} from {from}: {e}"))),
        }
    }
}

/// Makes the path changes asked through [`SenderLive::change_path`] as they come; returns
/// only with the first that fails (or when `stop` is set).
async fn change_paths(
    conn: &Connection,
    sockets: &PathSockets,
    opts: &SendOptions,
    live: &SenderLive,
    stop: &AtomicBool,
) -> Result<(), QuicError> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(QuicError::Stopped);
        }
        for (k, join) in live.take_changes() {
            if k == 0 || k >= sockets.len() {
                continue;
            }
            match (join, live.open_id(k)) {
                (true, None) => {
                    let id = open_path(conn, sockets, k, opts, stop).await?;
                    let slot = conn.congestion_state(id).and_then(Coupled::slot_of);
                    live.add_path(LivePath { index: k, id, slot });
                }
                (false, Some(id)) => {
                    if let Some(path) = conn.path(id) {
                        // Closing waits for the peer; the path leaves the controller when
                        // quinn drops its state. An error means it is closing already.
                        let _ = path.close();
                    }
                }
                _ => {}
            }
        }
        let _ = tokio::time::timeout(TICK, live.changed.notified()).await;
    }
}

type Outcome = (u64, String, u64, String, f64);

async fn transfer_on(
    conn: &Connection,
    opts: &SendOptions,
    live: &SenderLive,
    stop: &AtomicBool,
) -> Result<Outcome, QuicError> {
    let io = |e: &dyn std::fmt::Display| QuicError::Connection(format!("transfer: {e}"));
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| io(&e))?;
    let announced = match opts.amount {
        Amount::Bytes(n) => Announced::Sized(n),
        Amount::Duration(_) => Announced::Open,
    };
    send.write_all(&transfer::header(announced))
        .await
        .map_err(|e| io(&e))?;
    let start = Instant::now();
    let mut pattern = Pattern::new(opts.seed);
    let mut digest = Digester::default();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(QuicError::Stopped);
        }
        let want = match opts.amount {
            Amount::Bytes(n) => {
                let left = n - digest.bytes();
                if left == 0 {
                    break;
                }
                left.min(transfer::CHUNK as u64) as usize
            }
            Amount::Duration(d) => {
                if start.elapsed() >= d {
                    break;
                }
                transfer::CHUNK
            }
        };
        let block = &pattern.next_block()[..want];
        // A write blocks while the connection's send buffer is full; look at the stop flag
        // meanwhile.
        wait(stop, Duration::from_secs(3600), send.write_all(block))
            .await
            .map_err(|_| QuicError::Stopped)?
            .map_err(|e| io(&e))?;
        digest.update(block);
        live.written.fetch_add(want as u64, Ordering::Relaxed);
    }
    send.finish().map_err(|e| io(&e))?;
    let mut r = [0u8; RECEIPT_LEN];
    wait(stop, RECEIPT_WAIT, recv.read_exact(&mut r))
        .await
        .map_err(|e| {
            e.timeout_says(format!(
                "no receipt from the receiver within {} s of the end of the data",
                RECEIPT_WAIT.as_secs()
            ))
        })?
        .map_err(|e| io(&e))?;
    let seconds = start.elapsed().as_secs_f64();
    let (got, got_hash) = transfer::parse_receipt(&r).map_err(QuicError::Connection)?;
    let (sent, hash) = digest.finish();
    Ok((sent, cert::hex(&hash), got, cert::hex(&got_hash), seconds))
}
