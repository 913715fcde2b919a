//! One UDP socket per local address, shown to quinn as one socket with one peer per path.
//!
//! quinn's multipath API opens a path towards a remote address and leaves the local one to
//! the operating system's routing (`Connection::open_path(addr, status)`), so two paths to the
//! same server would leave from the same address. A sender with several addresses wants path
//! `k` to leave from address `k`, as an MPTCP subflow does. [`PathSockets`] does it by
//! translation: path `k`'s socket is bound to local address `k`; quinn addresses path `k` to a
//! stand-in remote address ([`PathSockets::remote`]) that never reaches the wire. A datagram
//! quinn sends to stand-in `k` leaves socket `k` for the real server address; one that arrives
//! on socket `k` is handed to quinn as coming from stand-in `k`. Path 0's stand-in is the
//! server's real address, so the handshake, the certificate check and the server see nothing
//! unusual: the server sees one client address per path.
//!
//! The stand-ins are `192.0.2.k` (TEST-NET-1, RFC 5737, for documentation only) with the
//! server's port, IPv4 like the server (IPv6 servers get `2001:db8::k`, RFC 3849).

use quinn::udp::{RecvMeta, Transmit, UdpSocketState};
use quinn::{AsyncUdpSocket, UdpSender};
use std::fmt;
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// One path's socket, with quinn-udp's state for it (segmentation offload, ECN, packet info),
/// as quinn's own sockets have.
struct PathSocket {
    io: UdpSocket,
    state: UdpSocketState,
}

/// The sockets of one sending endpoint, one per path.
#[derive(Clone)]
pub struct PathSockets {
    server: SocketAddr,
    sockets: Arc<[PathSocket]>,
    /// The socket `poll_recv` tries first, rotated so no path starves another.
    next: usize,
}

impl fmt::Debug for PathSockets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathSockets")
            .field("server", &self.server)
            .field("paths", &self.sockets.len())
            .finish()
    }
}

impl PathSockets {
    /// One socket per local address of `local` (each bound to an ephemeral port), towards
    /// `server`. Must be called inside a tokio runtime.
    pub fn bind(local: &[IpAddr], server: SocketAddr) -> io::Result<PathSockets> {
        if local.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "at least one local address is needed",
            ));
        }
        let mut sockets = Vec::with_capacity(local.len());
        for ip in local {
            let s = std::net::UdpSocket::bind(SocketAddr::new(*ip, 0))?;
            let state = UdpSocketState::new((&s).into())?;
            s.set_nonblocking(true)?;
            sockets.push(PathSocket {
                io: UdpSocket::from_std(s)?,
                state,
            });
        }
        Ok(PathSockets {
            server,
            sockets: sockets.into(),
            next: 0,
        })
    }

    /// The address quinn uses for path `k`: the server's own for path 0, a stand-in otherwise.
    pub fn remote(&self, k: usize) -> SocketAddr {
        stand_in(self.server, k)
    }

    /// Local address of path `k`'s socket.
    pub fn local(&self, k: usize) -> io::Result<SocketAddr> {
        self.sockets[k].io.local_addr()
    }

    /// How many paths (sockets) there are.
    pub fn len(&self) -> usize {
        self.sockets.len()
    }

    /// Whether there are none (never: [`PathSockets::bind`] refuses).
    pub fn is_empty(&self) -> bool {
        self.sockets.is_empty()
    }

    fn path_of(&self, remote: SocketAddr) -> Option<usize> {
        (0..self.sockets.len()).find(|&k| stand_in(self.server, k) == remote)
    }
}

fn stand_in(server: SocketAddr, k: usize) -> SocketAddr {
    if k == 0 {
        return server;
    }
    let ip = match server.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(192, 0, 2, k as u8)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, k as u16)),
    };
    SocketAddr::new(ip, server.port())
}

type Writable = Pin<Box<dyn Future<Output = io::Result<()>> + Send + Sync>>;

/// One task's sender: it waits for its own socket's write readiness with a future of its own,
/// so tasks waiting on the same socket do not overwrite each other's wakers.
struct Sender {
    sockets: PathSockets,
    waiting: Option<(usize, Writable)>,
}

impl fmt::Debug for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PathSockets::Sender")
    }
}

impl UdpSender for Sender {
    fn poll_send(
        self: Pin<&mut Self>,
        transmit: &Transmit<'_>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(k) = this.sockets.path_of(transmit.destination) else {
            // Not a path of ours: drop it as the network would.
            return Poll::Ready(Ok(()));
        };
        let real = Transmit {
            destination: this.sockets.server,
            ecn: transmit.ecn,
            contents: transmit.contents,
            segment_size: transmit.segment_size,
            src_ip: None,
        };
        loop {
            if let Some((_, fut)) = this.waiting.as_mut() {
                let r = std::task::ready!(fut.as_mut().poll(cx));
                this.waiting = None;
                r?;
            }
            let p = &this.sockets.sockets[k];
            match p
                .io
                .try_io(Interest::WRITABLE, || p.state.send((&p.io).into(), &real))
            {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let sockets = Arc::clone(&this.sockets.sockets);
                    this.waiting =
                        Some((k, Box::pin(async move { sockets[k].io.writable().await })));
                }
                // The network's answer to one datagram is not the connection's: an unreachable
                // route or a refused port loses this datagram, as a drop would.
                Err(e) if transient(&e) => return Poll::Ready(Ok(())),
                r => return Poll::Ready(r),
            }
        }
    }

    fn max_transmit_segments(&self) -> NonZeroUsize {
        self.sockets.max_gso()
    }
}

impl PathSockets {
    /// Segments one send may carry on every path (generic segmentation offload).
    fn max_gso(&self) -> NonZeroUsize {
        self.sockets
            .iter()
            .map(|p| p.state.max_gso_segments())
            .min()
            .unwrap_or(NonZeroUsize::MIN)
    }
}

/// Errors that lose one datagram and leave the socket usable.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc_errno::ENETUNREACH)
            | Some(libc_errno::EHOSTUNREACH)
            | Some(libc_errno::ECONNREFUSED)
            | Some(libc_errno::ENOBUFS)
            | Some(libc_errno::EPERM)
    )
}

/// The few errno values [`transient`] needs (Linux numbering).
mod libc_errno {
    pub(super) const EPERM: i32 = 1;
    pub(super) const ENOBUFS: i32 = 105;
    pub(super) const ECONNREFUSED: i32 = 111;
    pub(super) const ENETUNREACH: i32 = 101;
    pub(super) const EHOSTUNREACH: i32 = 113;
}

impl AsyncUdpSocket for PathSockets {
    fn create_sender(&self) -> Pin<Box<dyn UdpSender>> {
        Box::pin(Sender {
            sockets: self.clone(),
            waiting: None,
        })
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let n = self.sockets.len();
        for i in 0..n {
            let k = (self.next + i) % n;
            let p = &self.sockets[k];
            loop {
                match p.io.poll_recv_ready(cx) {
                    Poll::Pending => break,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Ready(Ok(())) => {}
                }
                match p.io.try_io(Interest::READABLE, || {
                    p.state.recv((&p.io).into(), bufs, meta)
                }) {
                    Ok(got) => {
                        self.next = (k + 1) % n;
                        // Only the server talks to a sender: what arrives on socket k is path
                        // k's, from its stand-in.
                        for m in meta.iter_mut().take(got) {
                            m.addr = stand_in(self.server, k);
                        }
                        return Poll::Ready(Ok(got));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) if transient(&e) => continue,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        }
        Poll::Pending
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sockets[0].io.local_addr()
    }

    fn max_receive_segments(&self) -> NonZeroUsize {
        self.sockets
            .iter()
            .map(|p| p.state.gro_segments())
            .min()
            .unwrap_or(NonZeroUsize::MIN)
    }

    fn may_fragment(&self) -> bool {
        self.sockets.iter().any(|p| p.state.may_fragment())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_distinct_and_path_zero_is_the_server() {
        let server: SocketAddr = "198.19.0.1:4433".parse().unwrap();
        assert_eq!(stand_in(server, 0), server);
        let all: Vec<_> = (0..8).map(|k| stand_in(server, k)).collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
            assert_eq!(a.port(), 4433);
        }
        let v6: SocketAddr = "[2001:db8::1]:1".parse().unwrap();
        assert!(stand_in(v6, 2).is_ipv6());
    }
}
