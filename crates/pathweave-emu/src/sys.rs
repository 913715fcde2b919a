//! The system calls the emulator needs, each behind a safe function: TUN devices, network
//! namespaces, child processes that die with the emulator, the monotonic clock, `ppoll` and
//! epoll, MPTCP sockets and the TCP/MPTCP information socket options. This is the only module
//! with `unsafe`; every block states why it holds.
#![allow(unsafe_code)]

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;

/// `IPPROTO_MPTCP` (include/uapi/linux/in.h).
pub(crate) const IPPROTO_MPTCP: libc::c_int = 262;
/// `SOL_MPTCP` (include/linux/socket.h).
const SOL_MPTCP: libc::c_int = 284;
/// `MPTCP_TCPINFO` and `MPTCP_SUBFLOW_ADDRS` (include/uapi/linux/mptcp.h).
const MPTCP_TCPINFO: libc::c_int = 2;
const MPTCP_SUBFLOW_ADDRS: libc::c_int = 3;
/// `_IOW('T', 202, int)`: TUNSETIFF (include/uapi/linux/if_tun.h).
const TUNSETIFF: libc::c_ulong =
    (1 << 30) | ((4 as libc::c_ulong) << 16) | ((b'T' as libc::c_ulong) << 8) | 202;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds of CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`): user and kernel
/// time, including the kernel's work inside its system calls.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the thread CPU clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Let this thread's timed sleeps end within `ns` of their deadline (default slack: 50 µs).
pub(crate) fn set_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// The effective user id.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// CAP_NET_ADMIN's bit in the capability sets: network devices, routes and namespaces'
/// network state.
pub(crate) const CAP_NET_ADMIN: u32 = 12;
/// CAP_SYS_ADMIN's bit: creating a network namespace (`unshare`) and entering one (`setns`).
pub(crate) const CAP_SYS_ADMIN: u32 = 21;

/// Whether the effective capability set (`CapEff` in /proc/self/status) holds bit `cap`.
pub(crate) fn has_cap(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| effective_caps(&s))
        .is_some_and(|caps| caps & (1 << cap) != 0)
}

/// The effective capability set from the text of /proc/PID/status.
fn effective_caps(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// Move the calling thread into a new network namespace and return a descriptor of it
/// (`/proc/thread-self/ns/net`). The thread stays in it: call this on a thread of its own.
/// The namespace lives while the descriptor, a thread inside it or an object made in it (a
/// socket, a TUN descriptor) holds it; nothing is mounted.
pub(crate) fn unshare_netns() -> io::Result<OwnedFd> {
    // SAFETY: unshare takes flags only. CLONE_NEWNET concerns the calling thread alone, which
    // a multi-threaded process may unshare (unlike CLONE_NEWNS or CLONE_NEWUSER).
    check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

/// Move the calling thread into the network namespace `ns` (a descriptor of one, as
/// [`unshare_netns`] returns).
pub(crate) fn enter_netns(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `ns` is an open descriptor for the duration of the call; setns only reads it.
    check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// A command for `program` whose process dies with the thread that starts it (SIGKILL as its
/// parent-death signal: an emulator killed outright takes it along) and, with `netns`, runs
/// inside that network namespace (the command holds the descriptor while it exists). Wait
/// for it on the thread that spawned it: the parent-death signal follows the spawning thread,
/// not the process.
pub(crate) fn command(program: impl AsRef<OsStr>, netns: Option<Arc<OwnedFd>>) -> Command {
    let mut cmd = Command::new(program);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only prctl, getppid
    // and setns, which are async-signal-safe system calls; it allocates and frees nothing (an
    // OS error is a plain code) and touches no lock. The namespace descriptor is open in the
    // child: the closure owns a reference to it, and close-on-exec closes it only at the exec.
    unsafe {
        cmd.pre_exec(move || {
            check(libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ))?;
            // The parent may have died between the fork and the prctl: then no signal comes.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = &netns {
                check(libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET))?;
            }
            Ok(())
        })
    };
    cmd
}

/// Open a TUN device named `name` (no packet-information header) in the calling thread's
/// network namespace; the descriptor is non-blocking.
pub(crate) fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
    // SAFETY: `path` is a valid NUL-terminated string.
    let fd = check(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // struct ifreq: 16 bytes of name, then a union whose first member is `short ifr_flags`.
    let mut ifr = [0u8; 40];
    let bytes = name.as_bytes();
    if bytes.len() >= 16 || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    ifr[..bytes.len()].copy_from_slice(bytes);
    ifr[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
    // SAFETY: TUNSETIFF reads and writes a struct ifreq (40 bytes on 64-bit Linux), which
    // `ifr` provides.
    check(unsafe { libc::ioctl(owned.as_raw_fd(), TUNSETIFF as _, ifr.as_mut_ptr()) })?;
    Ok(owned)
}

/// Read one packet into `buf`; `Ok(None)` when none is waiting.
pub(crate) fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(n as usize))
}

/// Write one packet; `Ok(false)` if the device could not take it now.
pub(crate) fn write_packet(fd: RawFd, buf: &[u8]) -> io::Result<bool> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS)) {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(true)
}

/// Readiness of a set of devices through one epoll instance.
///
/// `ppoll` over every device asks each of them on every call (`tun_chr_poll`, `fdget`,
/// `fput`): with 32 TUN devices that was about half the link thread's CPU time while it polled
/// between packets. epoll keeps a ready list that the devices' wake-ups fill, so a poll costs
/// one system call whatever the number of devices. Level-triggered: a device stays ready
/// while it holds a packet.
pub(crate) struct Poller {
    ep: OwnedFd,
    events: Vec<libc::epoll_event>,
    len: usize,
}

/// A ready device: its index in the set, whether it holds a packet, and whether it reported an
/// error (a TUN device whose interface went away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ready {
    pub index: usize,
    pub readable: bool,
    pub error: bool,
}

impl Poller {
    /// A poller over `fds`, reported by their index.
    pub(crate) fn new(fds: &[RawFd]) -> io::Result<Poller> {
        // SAFETY: plain system call; the result is checked before use.
        let ep = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `ep` is a fresh descriptor that nothing else owns.
        let ep = unsafe { OwnedFd::from_raw_fd(ep) };
        for (i, &fd) in fds.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            // SAFETY: `ep` and `fd` are open descriptors; `ev` is a valid epoll_event that
            // the kernel only reads.
            check(unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        }
        Ok(Poller {
            ep,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().max(1)],
            len: 0,
        })
    }

    /// Wait until a device is readable or `timeout_ns` passes (`Some(0)`: do not wait; `None`:
    /// no timeout), and return how many are ready (see [`Poller::ready`]). A timed wait sleeps
    /// in `ppoll` on the epoll descriptor, whose timeout has nanosecond resolution
    /// (`epoll_wait`'s has milliseconds), then collects the ready list without waiting.
    pub(crate) fn wait(&mut self, timeout_ns: Option<u64>) -> io::Result<usize> {
        self.len = 0;
        if timeout_ns != Some(0) {
            let mut fd = [libc::pollfd {
                fd: self.ep.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            if ppoll(&mut fd, timeout_ns)? == 0 {
                return Ok(0);
            }
        }
        // SAFETY: `events` is a writable array of `events.len()` epoll_events; a zero timeout
        // returns at once.
        let n = unsafe {
            libc::epoll_wait(
                self.ep.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        self.len = n as usize;
        Ok(self.len)
    }

    /// The devices the last [`Poller::wait`] found ready.
    pub(crate) fn ready(&self) -> impl Iterator<Item = Ready> + '_ {
        self.events[..self.len].iter().map(|e| Ready {
            index: e.u64 as usize,
            readable: e.events & (libc::EPOLLIN as u32) != 0,
            error: e.events & (libc::EPOLLERR as u32) != 0,
        })
    }
}

/// `ppoll` on `fds` for at most `timeout_ns` (`None`: no timeout); the ready flags are left in
/// `fds[i].revents`. An interrupted wait counts as a timeout.
fn ppoll(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(|t| libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid array of `fds.len()` pollfds; `tsp` is null or points to a
    // timespec that outlives the call; a null signal mask leaves the mask unchanged.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}

/// A new IPv4 stream socket: MPTCP when `mptcp`, plain TCP otherwise.
pub(crate) fn stream_socket(mptcp: bool) -> io::Result<OwnedFd> {
    let proto = if mptcp {
        IPPROTO_MPTCP
    } else {
        libc::IPPROTO_TCP
    };
    // SAFETY: socket has no memory arguments.
    let fd = check(unsafe {
        libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto)
    })?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn setsockopt_bytes(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &[u8],
) -> io::Result<()> {
    // SAFETY: `value` is valid for reads of its length.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Set an integer socket option.
pub(crate) fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    setsockopt_bytes(fd, level, name, &value.to_ne_bytes())
}

/// With `abort`, make the socket's last close abort the connection (`SO_LINGER` on, 0 s): the
/// kernel frees it at once, sending a reset (MPTCP: a fast close), instead of keeping it as an
/// orphan that sends its remaining data and FIN. Without, the default graceful close.
pub(crate) fn set_linger(fd: RawFd, abort: bool) -> io::Result<()> {
    // struct linger { int l_onoff; int l_linger; }, with l_linger 0.
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&libc::c_int::from(abort).to_ne_bytes());
    setsockopt_bytes(fd, libc::SOL_SOCKET, libc::SO_LINGER, &bytes)
}

/// Choose the socket's congestion control (`TCP_CONGESTION`).
pub(crate) fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    setsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes())
}

fn getsockopt_into(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is valid for writes of `len` bytes and `len` is a valid socklen_t.
    check(unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr().cast(), &mut len) })?;
    Ok(len as usize)
}

/// Size of `struct tcp_info` as of Linux 6.7 (`tcpi_total_rto_time` is its last field).
pub(crate) const TCP_INFO_LEN: usize = 248;

/// `TCP_INFO` of a TCP socket (or of an MPTCP socket's first subflow); the buffer may come
/// back shorter on older kernels.
pub(crate) fn tcp_info(fd: RawFd, buf: &mut [u8; TCP_INFO_LEN]) -> io::Result<usize> {
    getsockopt_into(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf)
}

/// The header of `MPTCP_TCPINFO` and `MPTCP_SUBFLOW_ADDRS` (`struct mptcp_subflow_data`).
const SUBFLOW_DATA_LEN: usize = 16;

/// One `struct mptcp_subflow_addrs`: two `sockaddr_storage` unions.
const SUBFLOW_ADDRS_LEN: usize = 256;

fn subflow_array(
    fd: RawFd,
    name: libc::c_int,
    elem: usize,
    max: usize,
    buf: &mut Vec<u8>,
) -> io::Result<(usize, usize)> {
    buf.clear();
    buf.resize(SUBFLOW_DATA_LEN + elem * max, 0);
    buf[0..4].copy_from_slice(&(SUBFLOW_DATA_LEN as u32).to_ne_bytes());
    buf[12..16].copy_from_slice(&(elem as u32).to_ne_bytes());
    getsockopt_into(fd, SOL_MPTCP, name, buf)?;
    let n = u32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
    let user = u32::from_ne_bytes([buf[12], buf[13], buf[14], buf[15]]) as usize;
    Ok((n.min(max), user))
}

/// Per-subflow `tcp_info` records of an MPTCP socket (`MPTCP_TCPINFO`), each `TCP_INFO_LEN`
/// bytes (zero-padded where the kernel's is shorter), with their local IPv4 addresses from
/// `MPTCP_SUBFLOW_ADDRS`, in the same order.
pub(crate) fn mptcp_subflows(
    fd: RawFd,
    max: usize,
    scratch: &mut Vec<u8>,
) -> io::Result<Vec<([u8; 4], [u8; TCP_INFO_LEN])>> {
    let (n, user) = subflow_array(fd, MPTCP_TCPINFO, TCP_INFO_LEN, max, scratch)?;
    let mut infos = Vec::with_capacity(n);
    for i in 0..n {
        let mut rec = [0u8; TCP_INFO_LEN];
        let at = SUBFLOW_DATA_LEN + i * user.clamp(1, TCP_INFO_LEN);
        let len = user.min(TCP_INFO_LEN);
        if at + len <= scratch.len() {
            rec[..len].copy_from_slice(&scratch[at..at + len]);
        }
        infos.push(rec);
    }
    let (m, user) = subflow_array(fd, MPTCP_SUBFLOW_ADDRS, SUBFLOW_ADDRS_LEN, max, scratch)?;
    let mut out = Vec::with_capacity(n.min(m));
    for (i, info) in infos.into_iter().enumerate().take(m) {
        let at = SUBFLOW_DATA_LEN + i * user.max(1);
        // sockaddr_in: family (2), port (2), address (4).
        let mut addr = [0u8; 4];
        if at + 8 <= scratch.len() {
            addr.copy_from_slice(&scratch[at + 4..at + 8]);
        }
        out.push((addr, info));
    }
    Ok(out)
}

/// The thread id of the caller.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

fn sockaddr_in(addr: [u8; 4], port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(addr),
        },
        sin_zero: [0; 8],
    }
}

/// Bind `fd` to `addr:port` (with `SO_REUSEADDR`).
pub(crate) fn bind(fd: RawFd, addr: [u8; 4], port: u16) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let sa = sockaddr_in(addr, port);
    // SAFETY: `sa` is a valid sockaddr_in of the length passed.
    check(unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Listen on a bound stream socket.
pub(crate) fn listen(fd: RawFd, backlog: i32) -> io::Result<()> {
    // SAFETY: listen has no memory arguments.
    check(unsafe { libc::listen(fd, backlog) })?;
    Ok(())
}

/// Start connecting `fd` to `addr:port` without blocking; completion is seen as writability.
pub(crate) fn connect_start(fd: RawFd, addr: [u8; 4], port: u16) -> io::Result<()> {
    set_nonblocking(fd, true)?;
    let sa = sockaddr_in(addr, port);
    // SAFETY: `sa` is a valid sockaddr_in of the length passed.
    let r = unsafe {
        libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(())
}

/// The pending error of a socket (`SO_ERROR`), e.g. after a non-blocking connect.
pub(crate) fn socket_error(fd: RawFd) -> io::Result<Option<io::Error>> {
    let mut buf = [0u8; 4];
    getsockopt_into(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut buf)?;
    let e = i32::from_ne_bytes(buf);
    Ok((e != 0).then(|| io::Error::from_raw_os_error(e)))
}

/// Switch `O_NONBLOCK` on or off.
pub(crate) fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL take and return plain integers.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    let flags = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) })?;
    Ok(())
}

/// Wait up to `timeout_ns` for `events` on one descriptor; returns the ready events.
pub(crate) fn wait_fd(fd: RawFd, events: i16, timeout_ns: u64) -> io::Result<i16> {
    let mut p = [libc::pollfd {
        fd,
        events,
        revents: 0,
    }];
    ppoll(&mut p, Some(timeout_ns))?;
    Ok(p[0].revents)
}

/// A new IPv4 datagram socket.
pub(crate) fn udp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket has no memory arguments.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Send on a connected stream socket without blocking: the bytes taken, 0 if its buffer is
/// full. A peer that has gone away is an error, never a SIGPIPE.
pub(crate) fn send_some(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    Ok(n as usize)
}

/// Clock ticks per second (`_SC_CLK_TCK`), the unit of the times in `/proc/PID/stat`.
pub(crate) fn clock_ticks() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|&h| h > 0)
}

/// Give the calling thread real-time (SCHED_FIFO) priority `prio`; false if not permitted.
pub(crate) fn set_realtime(prio: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_effective_set_is_read_from_capeff() {
        // A root shell's status lines, and one whose bounding set dropped CAP_SYS_ADMIN.
        let full = "Name:\tbash\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n\
                    CapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n";
        let caps = effective_caps(full).unwrap();
        assert!(caps & (1 << CAP_NET_ADMIN) != 0 && caps & (1 << CAP_SYS_ADMIN) != 0);
        let dropped = full.replace("CapEff:\t000001ffffffffff", "CapEff:\t000001ffffdfffff");
        let caps = effective_caps(&dropped).unwrap();
        assert!(caps & (1 << CAP_NET_ADMIN) != 0 && caps & (1 << CAP_SYS_ADMIN) == 0);
        assert_eq!(effective_caps("Name:\tx\n"), None);
    }

    #[test]
    fn a_child_process_dies_with_the_thread_that_started_it() {
        use std::os::unix::process::ExitStatusExt;
        let mut child =
            std::thread::spawn(|| command("sleep", None).arg("30").spawn().expect("sleep"))
                .join()
                .expect("the spawning thread");
        // The thread has ended: the child got its parent-death signal.
        let t0 = monotonic_ns();
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        assert!(monotonic_ns() - t0 < 5_000_000_000);
    }

    /// A pipe: (read end, write end).
    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a writable array of two descriptors.
        check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })
            .expect("pipe2");
        // SAFETY: both descriptors are fresh and owned by nothing else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn put(fd: &OwnedFd) {
        // SAFETY: one byte from a valid buffer.
        assert_eq!(
            unsafe { libc::write(fd.as_raw_fd(), b"x".as_ptr().cast(), 1) },
            1
        );
    }

    fn take(fd: &OwnedFd) {
        let mut b = [0u8; 1];
        // SAFETY: one byte into a valid buffer.
        assert_eq!(
            unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) },
            1
        );
    }

    #[test]
    fn the_poller_reports_exactly_the_readable_devices_by_index() {
        let pipes: Vec<_> = (0..5).map(|_| pipe()).collect();
        let reads: Vec<RawFd> = pipes.iter().map(|(r, _)| r.as_raw_fd()).collect();
        let mut p = Poller::new(&reads).expect("epoll");
        assert_eq!(p.wait(Some(0)).unwrap(), 0);
        assert_eq!(p.ready().count(), 0);
        put(&pipes[3].1);
        put(&pipes[1].1);
        assert_eq!(p.wait(Some(0)).unwrap(), 2);
        let mut got: Vec<usize> = p.ready().map(|r| r.index).collect();
        got.sort_unstable();
        assert_eq!(got, [1, 3]);
        assert!(p.ready().all(|r| r.readable && !r.error));
        // Level-triggered: a device stays ready until it is read empty.
        assert_eq!(p.wait(Some(0)).unwrap(), 2);
        take(&pipes[3].0);
        assert_eq!(p.wait(Some(0)).unwrap(), 1);
        assert_eq!(p.ready().next().map(|r| r.index), Some(1));
        // A timed wait returns as soon as a device is readable ...
        let t0 = monotonic_ns();
        assert_eq!(p.wait(Some(5_000_000_000)).unwrap(), 1);
        assert!(monotonic_ns() - t0 < 1_000_000_000);
        // ... and otherwise after its timeout, with nothing ready.
        take(&pipes[1].0);
        let t0 = monotonic_ns();
        assert_eq!(p.wait(Some(2_000_000)).unwrap(), 0);
        assert_eq!(p.ready().count(), 0);
        assert!(monotonic_ns() - t0 >= 2_000_000);
    }
}
