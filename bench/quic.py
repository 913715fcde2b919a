"""Benchmark: goodput and CPU time per packet of two-path multipath QUIC beside kernel MPTCP.

Four cases, each a bulk transfer over two paths of 500 Mbit/s (1 Gbit/s in all):

* ``veth QUIC lia`` — `pathweave quic serve` and `pathweave quic send --algorithm lia
  --mtu 1472` in two network namespaces joined by two veth pairs, one per path (the sender's
  second path by a source route, `ip rule from ADDR table 11`), each direction of each pair
  shaped by a `tbf` qdisc (500 Mbit/s, burst 125 kB, limit 250 kB: see SHAPER below);
* ``veth MPTCP reno`` — kernel MPTCP on the same namespaces and links: a small sender and
  receiver of this script (IPPROTO_MPTCP sockets), the second subflow from a path-manager
  endpoint (`ip mptcp endpoint add ADDR dev DEV subflow`), kernel Reno on both subflows;
* ``emulated QUIC lia`` — `pathweave emulate` on one flow of two subflows over two emulated
  500 Mbit/s links (2 ms, drop-tail 170 packets, one bandwidth-delay product), `transport =
  "quic"`, 1500-byte packets on the wire;
* ``emulated MPTCP lia`` — the same scenario as a kernel MPTCP connection on pathweave's BPF
  LIA controller where this build loads it and the kernel has BTF (``uncoupled``, kernel
  Reno, elsewhere; the row's name says which).

Per case and run: goodput (acknowledged stream bytes per second for QUIC, bytes received per
second for the veth MPTCP receiver, `flows.goodput_bps` in the emulator), the packets the
sender sent (QUIC: quinn's count of UDP datagrams, `packets_sent`; veth MPTCP: the sender
namespace's TCP OutSegs, which counts each segment of a TSO batch; emulated MPTCP: the
kernel's segments, `packets_sent`), and CPU time per packet:

* ``machine`` — the whole machine's busy CPU time over the transfer, divided by the packets:
  it counts the kernel's softirq work of both stacks, wherever it ran. Busy time is every
  CPU's elapsed time less its idle, iowait and steal time (/proc/stat): the busy fields
  themselves (user + nice + system + irq + softirq) are sampled at the timer tick, and with
  NO_HZ idle a softirq that runs on an otherwise idle CPU, as much packet processing does,
  meets no tick and lands in none of them, while idle time is measured, not sampled. Their
  sum is kept in the JSON output as ``ticked_cpu_s`` (4-45 % lower in these cases);
* ``processes`` — the user + system time of the sender's and receiver's processes over the
  same window (veth), or of the emulator's process (links and both endpoints' threads);
* ``links`` (emulated) — the emulator's link thread alone, over the whole run.

The transfer's window is found by sampling every 50 ms: for the veth cases, the samples over
which the receiving namespace's devices received data (so neither the interpreter's start of
`pathweave quic send` nor its writing of the tables is counted); for the emulated ones, the
samples over which the run's namespaces existed (the BPF controllers' loading before and the
teardown after are left out; building the namespaces, about 0.1 s, is in).

    python bench/quic.py [--quick] [--runs N] [--cases veth-quic,...] [--json OUT]

Each case runs N times (BENCH_QUIC_RUNS, default 3; the runs of the cases interleaved) and
the table gives the median and the range. Needs root, iproute2 (`ip`, `tc`), MPTCP
(`net.mptcp.enabled = 1`) and /dev/net/tun. Everything made here (namespaces, devices and
their qdiscs, processes) is removed on every way out, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RATE_MBPS = 500
# tbf on each veth device, each direction: 500 Mbit/s; a bucket of 125 kB (2 ms of the rate),
# above one 64 kB TSO/GSO batch so that the shaper never splits one, and small enough that
# the rate holds over a few milliseconds; a queue of 250 kB (4 ms of the rate), the bytes of
# the emulated links' 170-packet queues.
SHAPER = f"rate {RATE_MBPS}mbit burst 125000 limit 250000"
# The emulated links: 2 ms each way, so a 4 ms round trip and a bandwidth-delay product of
# 250 kB, 167 packets of 1500 bytes; the drop-tail queue holds one product.
EMU_DELAY = "2ms"
EMU_QUEUE_PKT = 170
MTU = 1472  # QUIC's largest UDP payload: 1500-byte packets on the wire, as TCP's
SERVER = "198.19.0.1"
QUIC_PORT = 4433
MPTCP_PORT = 5201
SAMPLE_S = 0.05
# A sample interval whose receive counters grew by less than this carried no transfer (a
# handshake, the close): 64 kB in 50 ms is 10 Mbit/s.
ACTIVE_BYTES = 65536
CLK_TCK = os.sysconf("SC_CLK_TCK")
PW = [sys.executable, "-m", "pathweave"]
CASES = ("veth-quic", "veth-mptcp", "emulated-quic", "emulated-mptcp")
IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)


class BenchError(RuntimeError):
    """A run that failed: its message is printed, everything made is removed."""


# ---------------------------------------------------------------------------------------------
# Counters


@dataclass
class MachineTimes:
    """One reading of /proc/stat's first line, with the monotonic time it was taken."""

    t: float
    # user + nice + system + irq + softirq, in clock ticks: samples taken at the timer tick.
    ticked: int
    # idle + iowait + steal, in clock ticks: measured, not sampled (NO_HZ idle).
    idle: int
    cpus: int

    def busy_s(self, since: MachineTimes) -> float:
        """CPU seconds the machine was busy since ``since``: every CPU's elapsed time less
        its idle, iowait and steal time. The busy fields are tick samples, and an interrupt
        or softirq that runs on an otherwise idle CPU (much of a network stack's work) runs
        without a tick and lands in none of them; the idle time is measured exactly, so its
        complement counts that work."""
        return (self.t - since.t) * self.cpus - (self.idle - since.idle) / CLK_TCK

    def ticked_s(self, since: MachineTimes) -> float:
        """The busy fields' own sum since ``since``, in CPU seconds."""
        return (self.ticked - since.ticked) / CLK_TCK


def machine_times() -> MachineTimes:
    t = time.monotonic()
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in lines[0].split()[1:9])
    cpus = sum(1 for line in lines[1:] if line.startswith("cpu"))
    return MachineTimes(t, user + nice + system + irq + softirq, idle + iowait + steal, cpus)


def busy_cpus(seconds: float) -> float:
    """CPUs' worth of busy time over the next ``seconds`` (the machine's other work when this
    benchmark is idle)."""
    a = machine_times()
    time.sleep(seconds)
    b = machine_times()
    return b.busy_s(a) / (b.t - a.t)


def process_ticks(pid: int) -> int | None:
    """user + system time of process ``pid`` (all its threads) in clock ticks, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return int(rest[11]) + int(rest[12])


def rx_bytes(pid: int, prefix: str) -> int | None:
    """Bytes received by the devices named ``prefix…`` in the network namespace of ``pid``."""
    try:
        with open(f"/proc/{pid}/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return None
    total = 0
    for line in lines:
        name, _, counters = line.partition(":")
        if name.strip().startswith(prefix):
            total += int(counters.split()[0])
    return total if lines else None


@dataclass
class Sample:
    machine: MachineTimes
    progress: float | None
    ticks: dict[str, int | None]


@dataclass
class Window:
    """The transfer's span: seconds, machine busy CPU seconds (measured and ticked), each
    process's CPU seconds."""

    seconds: float
    machine_cpu_s: float
    ticked_cpu_s: float
    process_cpu_s: dict[str, float] = field(default_factory=dict)


class Sampler:
    """Samples the machine's CPU times, a progress figure and processes' CPU times every
    SAMPLE_S in a thread, for as long as a ``with`` block lasts. ``pids`` may be replaced
    (not changed in place) while it runs, to add a process."""

    def __init__(self, progress: Callable[[], float | None], pids: dict[str, int]) -> None:
        self.progress = progress
        self.pids = pids
        self.samples: list[Sample] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        ticks = {name: process_ticks(pid) for name, pid in self.pids.items()}
        self.samples.append(Sample(machine_times(), self.progress(), ticks))

    def _loop(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(SAMPLE_S)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.sample()

    def window(self, active: Callable[[Sample, Sample], bool]) -> Window:
        """The span from the sample before the first interval that ``active`` accepts to the
        end of the last one."""
        s = self.samples
        hits = [i for i in range(1, len(s)) if active(s[i - 1], s[i])]
        if not hits:
            raise BenchError("no transfer was seen in the samples")
        a, b = s[hits[0] - 1], s[hits[-1]]
        cpu: dict[str, float] = {}
        for name in self.pids:
            # A process not yet started at the window's start has used nothing then; its
            # last reading within the window is its end (it may have ended in the last
            # interval).
            start = a.ticks.get(name, 0)
            end = next(
                (x.ticks[name] for x in reversed(s[: hits[-1] + 1]) if x.ticks.get(name)),
                None,
            )
            if start is not None and end is not None:
                cpu[name] = (end - start) / CLK_TCK
        m, n = b.machine, a.machine
        return Window(m.t - n.t, m.busy_s(n), m.ticked_s(n), cpu)


# ---------------------------------------------------------------------------------------------
# The veth test bed


def _run(command: str) -> str:
    """Run ``command`` (words separated by spaces, none quoted); its output, or BenchError."""
    r = subprocess.run(command.split(), capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"{command}: {(r.stderr or r.stdout).strip()}")
    return r.stdout


class Hosts:
    """Two namespaces, sender and receiver, joined by two shaped veth pairs."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.snd, self.rcv = f"{tag}s", f"{tag}r"
        self.made: list[str] = []

    def dev(self, side: str, k: int) -> str:
        return f"{self.tag}{side}{k}"

    def src(self, k: int) -> str:
        return f"198.18.{10 + k}.1"

    def build(self) -> None:
        snd, rcv = self.snd, self.rcv
        for ns in (snd, rcv):
            _run(f"ip netns add {ns}")
            self.made.append(ns)
        for k in (0, 1):
            a, b = self.dev("a", k), self.dev("b", k)
            _run(f"ip link add {a} netns {snd} type veth peer {b} netns {rcv}")
            _run(f"ip -n {snd} addr add {self.src(k)}/24 dev {a}")
            _run(f"ip -n {rcv} addr add 198.18.{10 + k}.2/24 dev {b}")
            for ns, d in ((snd, a), (rcv, b)):
                _run(f"ip -n {ns} link set {d} up")
                _run(f"tc -n {ns} qdisc add dev {d} root tbf {SHAPER}")
        for ns in (snd, rcv):
            _run(f"ip -n {ns} link set lo up")
            # Kernel Reno for the MPTCP subflows (a namespace has its own default).
            _run(
                f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_congestion_control=reno "
                "net.mptcp.enabled=1"
            )
            _run(f"ip -n {ns} mptcp limits set subflow 2 add_addr_accepted 2")
        _run(f"ip -n {rcv} addr add {SERVER}/32 dev lo")
        # Path 0 by the main table; path 1's source address by a table of its own.
        _run(f"ip -n {snd} route add {SERVER}/32 via 198.18.10.2")
        _run(f"ip -n {snd} route add {SERVER}/32 via 198.18.11.2 table 11")
        _run(f"ip -n {snd} rule add from {self.src(1)} table 11")
        # MPTCP's second subflow leaves from path 1's address and device.
        _run(f"ip -n {snd} mptcp endpoint add {self.src(1)} dev {self.dev('a', 1)} subflow")

    def remove(self) -> list[str]:
        """Delete the namespaces (their devices and qdiscs go with them); returns those left."""
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        names = {line.split()[0] for line in listed.splitlines() if line.strip()}
        return [ns for ns in self.made if ns in names]

    def qdisc_sent(self) -> list[tuple[int, int]]:
        """(bytes, packets) the sender's shapers sent, per path (GSO batches count their
        segments)."""
        out = []
        for k in (0, 1):
            stats = json.loads(_run(f"tc -n {self.snd} -s -j qdisc show dev {self.dev('a', k)}"))
            q = next(q for q in stats if q.get("kind") == "tbf")
            out.append((int(q["bytes"]), int(q["packets"])))
        return out

    def tcp_out_segments(self) -> int:
        text = _run(f"ip netns exec {self.snd} cat /proc/net/snmp")
        tcp = [line.split() for line in text.splitlines() if line.startswith("Tcp:")]
        return int(tcp[1][tcp[0].index("OutSegs")])


class Processes:
    """Child processes, killed (if still running) and reaped on every way out."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, ns: str, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as out:
            p = subprocess.Popen(
                ["ip", "netns", "exec", ns, *argv], stdout=out, stderr=subprocess.STDOUT
            )
        self.procs.append(p)
        return p

    def kill_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs.clear()


def wait_exited(p: subprocess.Popen[bytes], deadline: float, what: str, log: Path) -> None:
    """Wait until ``p`` has exited, without reaping it (its /proc entry keeps its CPU times
    for the last samples); BenchError, with its output, if it failed or took too long."""
    while (info := os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)) is None:
        if time.monotonic() > deadline:
            raise BenchError(f"{what} did not finish in time")
        time.sleep(0.02)
    if info.si_code != os.CLD_EXITED or info.si_status != 0:
        raise BenchError(f"{what} failed: {log.read_text(errors='replace').strip()}")


def wait_for_text(log: Path, text: str, p: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 20
    while text not in log.read_text(errors="replace"):
        if p.poll() is not None or time.monotonic() > deadline:
            raise BenchError(f"{what} did not start: {log.read_text(errors='replace').strip()}")
        time.sleep(0.02)


def transfer_active(prev: Sample, cur: Sample) -> bool:
    return (
        prev.progress is not None
        and cur.progress is not None
        and cur.progress - prev.progress >= ACTIVE_BYTES
    )


@dataclass
class Transfer:
    """What one veth transfer left: its window and each path's shaper counters."""

    window: Window
    path_bytes: list[int]
    wire_packets: int


def veth_transfer(
    hosts: Hosts,
    procs: Processes,
    receiver: tuple[list[str], Path, str],
    sender: tuple[list[str], Path],
    seconds: float,
) -> Transfer:
    """Start the receiver (command, log, the text it prints once it listens) in the receiving
    namespace, then the sender (command, log) in the sending one; wait for both to end."""
    rcv_argv, rcv_log, ready = receiver
    snd_argv, snd_log = sender
    rcv = procs.start(hosts.rcv, rcv_argv, rcv_log)
    wait_for_text(rcv_log, ready, rcv, "the receiver")
    before = hosts.qdisc_sent()
    with Sampler(lambda: rx_bytes(rcv.pid, hosts.tag), {"receiver": rcv.pid}) as sampler:
        snd = procs.start(hosts.snd, snd_argv, snd_log)
        sampler.pids = {**sampler.pids, "sender": snd.pid}
        deadline = time.monotonic() + seconds + 60
        wait_exited(snd, deadline, "the sender", snd_log)
        wait_exited(rcv, deadline, "the receiver", rcv_log)
    snd.wait()
    rcv.wait()
    after = hosts.qdisc_sent()
    return Transfer(
        sampler.window(transfer_active),
        [a[0] - b[0] for a, b in zip(after, before, strict=True)],
        sum(a[1] - b[1] for a, b in zip(after, before, strict=True)),
    )


def veth_quic(hosts: Hosts, procs: Processes, seconds: float, tmp: Path) -> dict[str, Any]:
    cert, out = tmp / "receiver.pem", tmp / "quic-out"
    cert.unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    serve = f"quic serve --listen {SERVER}:{QUIC_PORT} --transfers 1 --cert-out"
    send = (
        f"quic send --from {hosts.src(0)},{hosts.src(1)} --to {SERVER}:{QUIC_PORT} "
        f"--algorithm lia --duration {seconds}s --mtu {MTU} --cert"
    )
    send_log = tmp / "send.log"
    t = veth_transfer(
        hosts,
        procs,
        ([*PW, *serve.split(), str(cert)], tmp / "serve.log", "listening on"),
        ([*PW, *send.split(), str(cert), "--out", str(out)], send_log),
        seconds,
    )
    if "matches what was sent" not in send_log.read_text(errors="replace"):
        raise BenchError(f"pathweave quic send: {send_log.read_text(errors='replace').strip()}")
    import pandas as pd

    flows = pd.read_parquet(out / "flows.parquet")
    return result(
        goodput_bps=float(flows["goodput_bps"][0]),
        packets=int(flows["packets_sent"][0]),
        window=t.window,
        paths=t.path_bytes,
        extra={"wire_packets": t.wire_packets},
    )


def veth_mptcp(hosts: Hosts, procs: Processes, seconds: float, tmp: Path) -> dict[str, Any]:
    me = [sys.executable, str(Path(__file__).resolve())]
    rcv_log = tmp / "mptcp-receiver.log"
    segments = hosts.tcp_out_segments()
    t = veth_transfer(
        hosts,
        procs,
        ([*me, "--mptcp-receiver", SERVER], rcv_log, "listening"),
        ([*me, "--mptcp-sender", f"{hosts.src(0)},{SERVER},{seconds}"], tmp / "mptcp-sender.log"),
        seconds,
    )
    got = json.loads(rcv_log.read_text().splitlines()[-1])
    return result(
        goodput_bps=8 * got["bytes"] / got["seconds"],
        packets=hosts.tcp_out_segments() - segments,
        window=t.window,
        paths=t.path_bytes,
        extra={"wire_packets": t.wire_packets},
    )


def mptcp_receiver(listen: str) -> int:
    """Accept one MPTCP connection, read it to its end, print bytes and seconds (JSON)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((listen, MPTCP_PORT))
    s.listen(1)
    print("listening", flush=True)
    conn, _ = s.accept()
    start = time.monotonic()
    buf = bytearray(1 << 20)
    n = 0
    while k := conn.recv_into(buf):
        n += k
    seconds = time.monotonic() - start
    conn.close()
    print(json.dumps({"bytes": n, "seconds": seconds}), flush=True)
    return 0


def mptcp_sender(spec: str) -> int:
    """``SRC,DST,SECONDS``: send from SRC to DST over MPTCP on kernel Reno for SECONDS."""
    src, dst, secs = spec.split(",")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    with contextlib.suppress(OSError):  # the namespace's default is reno too
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
    s.bind((src, 0))
    s.connect((dst, MPTCP_PORT))
    block = memoryview(os.urandom(1 << 20))
    end = time.monotonic() + float(secs)
    sent = 0
    while time.monotonic() < end:
        s.sendall(block)
        sent += len(block)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the receiver's close: everything arrived
    s.close()
    print(json.dumps({"bytes": sent}), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The emulator


def scenario_text(transport: str, algorithm: str, seconds: float) -> str:
    quic = 'transport = "quic"' if transport == "quic" else ""
    return f"""
name = "bench-quic-{transport}"
duration = "{seconds}s"
sample_interval = "500ms"
[tcp]
mss = "1460B"
header = "40B"
[[link]]
name = "p{{i}}"
count = 2
rate = "{RATE_MBPS}Mbps"
delay = "{EMU_DELAY}"
queue = {{ type = "droptail", limit = "{EMU_QUEUE_PKT}pkt" }}
[[flow]]
name = "mp"
algorithm = "{algorithm}"
{quic}
subflows = [ {{ path = ["p0"] }}, {{ path = ["p1"] }} ]
"""


def emulated_mptcp_algorithm(choice: str) -> str:
    """``lia`` where this build loads the BPF controllers and the kernel has BTF, otherwise
    ``uncoupled`` (kernel Reno on each subflow)."""
    if choice != "auto":
        return choice
    from pathweave import _core

    loads = bool(getattr(_core, "EMULATE_LOADS_CONTROLLERS", False))
    return "lia" if loads and Path("/sys/kernel/btf/vmlinux").exists() else "uncoupled"


def emulated(transport: str, algorithm: str, seconds: float, tmp: Path) -> dict[str, Any]:
    from pathweave.emulate import emulate, leftovers

    path = tmp / f"emulated-{transport}.toml"
    path.write_text(scenario_text(transport, algorithm, seconds))
    me = os.getpid()
    with Sampler(lambda: float(len(leftovers(me))), {"emulator": me}) as sampler:
        res = emulate(path)
    e = res.emulation

    def running(prev: Sample, cur: Sample) -> bool:
        return bool(cur.progress)

    packets = int(res.flows["packets_sent"][0])
    return result(
        goodput_bps=float(res.flows["goodput_bps"][0]),
        packets=packets,
        window=sampler.window(running),
        paths=[int(x) for x in res.subflows["acked_bytes"]],
        extra={
            "links_us_per_packet": 1e6 * e["link_thread_cpu_s"] / max(1, packets),
            "reliable": bool(e["reliable"]),
            "p99_lateness_ms": e["lateness"]["p99_ms"],
            "kernel_algorithm": e["kernel_algorithms"][0],
            "emulator_wall_s": e["wall_s"],
        },
    )


def result(
    goodput_bps: float,
    packets: int,
    window: Window,
    paths: list[int],
    extra: dict[str, Any],
) -> dict[str, Any]:
    if packets <= 0:
        raise BenchError("no packets were counted")
    return {
        "goodput_mbps": goodput_bps / 1e6,
        "packets": packets,
        "window_s": window.seconds,
        "packets_per_s": packets / window.seconds,
        "machine_cpu_s": window.machine_cpu_s,
        "machine_us_per_packet": 1e6 * window.machine_cpu_s / packets,
        "ticked_cpu_s": window.ticked_cpu_s,
        "ticked_us_per_packet": 1e6 * window.ticked_cpu_s / packets,
        "process_cpu_s": window.process_cpu_s,
        "processes_us_per_packet": 1e6 * sum(window.process_cpu_s.values()) / packets,
        "path_bytes": paths,
        **extra,
    }


# ---------------------------------------------------------------------------------------------
# The table


def spread(values: list[float], fmt: str) -> str:
    """Median and range: ``m (lo-hi)``, or ``m`` alone for one run."""
    m = format(statistics.median(values), fmt)
    if len(values) == 1:
        return m
    return f"{m} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def table(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = [
        f"{'case':<22}  {'runs':>4}  {'goodput Mbit/s':>18}  {'kpkt/s':>14}  "
        f"{'machine µs/pkt':>18}  {'processes µs/pkt':>18}  {'links µs/pkt':>12}  "
        f"{'path 0/1 %':>10}  {'real time':>9}"
    ]
    for case, runs in rows.items():
        if not runs:
            continue
        share = statistics.median(
            100 * r["path_bytes"][0] / max(1, sum(r["path_bytes"])) for r in runs
        )
        links = [r["links_us_per_packet"] for r in runs if "links_us_per_packet" in r]
        rt = [r["reliable"] for r in runs if "reliable" in r]
        lines.append(
            f"{case:<22}  {len(runs):>4}  "
            f"{spread([r['goodput_mbps'] for r in runs], '.0f'):>18}  "
            f"{spread([r['packets_per_s'] / 1e3 for r in runs], '.0f'):>14}  "
            f"{spread([r['machine_us_per_packet'] for r in runs], '.2f'):>18}  "
            f"{spread([r['processes_us_per_packet'] for r in runs], '.2f'):>18}  "
            f"{f'{statistics.median(links):.2f}' if links else '-':>12}  "
            f"{f'{share:.0f}/{100 - share:.0f}':>10}  "
            f"{f'{sum(rt)}/{len(rt)}' if rt else '-':>9}"
        )
    return lines


# ---------------------------------------------------------------------------------------------


def why_not() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux (network namespaces, tc, TUN devices)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"needs iproute2 ({tool} is not on PATH)"
    try:
        enabled = Path("/proc/sys/net/mptcp/enabled").read_text().strip()
    except OSError:
        return "needs MPTCP (the kernel has no /proc/sys/net/mptcp)"
    if enabled != "1":
        return "needs MPTCP enabled (sysctl -w net.mptcp.enabled=1)"
    if not Path("/dev/net/tun").exists():
        return "needs /dev/net/tun (pathweave emulate)"
    return None


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """SIGTERM ends the benchmark as Ctrl-C does: through every ``finally``."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs{f' ({model})' if model else ''}, Linux {platform.release()}"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 s transfers instead of 10 s")
    ap.add_argument(
        "--runs",
        type=int,
        default=int(os.environ.get("BENCH_QUIC_RUNS", "3")),
        help="runs per case (default BENCH_QUIC_RUNS or 3)",
    )
    ap.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}"
    )
    ap.add_argument(
        "--emulated-mptcp",
        choices=["auto", "lia", "uncoupled"],
        default="auto",
        help="the emulated MPTCP case's algorithm (auto: lia where the BPF controllers load)",
    )
    ap.add_argument("--json", type=Path, metavar="OUT")
    ap.add_argument("--mptcp-receiver", metavar="ADDR", help=argparse.SUPPRESS)
    ap.add_argument("--mptcp-sender", metavar="SRC,DST,SECONDS", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mptcp_receiver:
        return mptcp_receiver(args.mptcp_receiver)
    if args.mptcp_sender:
        return mptcp_sender(args.mptcp_sender)

    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown or not cases or args.runs < 1:
        ap.error(f"--cases takes some of {','.join(CASES)}; --runs at least 1")
    why = why_not()
    if why is not None:
        print(f"bench/quic.py: {why}", file=sys.stderr)
        return 2
    from pathweave._core import PathweaveError

    seconds = 3.0 if args.quick else 10.0
    emu_algo = emulated_mptcp_algorithm(args.emulated_mptcp)
    names = {
        "veth-quic": "veth QUIC lia",
        "veth-mptcp": "veth MPTCP reno",
        "emulated-quic": "emulated QUIC lia",
        "emulated-mptcp": f"emulated MPTCP {'lia' if emu_algo == 'lia' else 'reno'}",
    }
    print(
        f"# {time.strftime('%Y-%m-%d')} {platform.node()}: {machine()}; "
        f"two paths of {RATE_MBPS} Mbit/s, {seconds:g} s transfers, {args.runs} run(s) per case"
    )
    print(
        "# CPU figures on a shared virtual machine carry noise (other tenants, steal, "
        "frequency): compare medians, mind the ranges"
    )
    baseline = busy_cpus(2.0)
    print(
        f"# before the runs the machine was busy {baseline:.2f} CPUs' worth "
        f"(its other work, counted in the machine figures)"
        + ("; it is not idle: expect inflated machine figures" if baseline > 0.1 else ""),
        flush=True,
    )
    rows: dict[str, list[dict[str, Any]]] = {names[c]: [] for c in cases}
    pauses: list[float] = []
    hosts = Hosts(f"pwqb{os.getpid()}")
    procs = Processes()
    failed = 0
    try:
        with sigterm_as_exit(), tempfile.TemporaryDirectory(prefix="pwqb") as tmpdir:
            tmp = Path(tmpdir)
            if any(c.startswith("veth") for c in cases):
                hosts.build()
            for run in range(args.runs):
                for case in cases:
                    if case == "veth-quic":
                        r = veth_quic(hosts, procs, seconds, tmp)
                    elif case == "veth-mptcp":
                        r = veth_mptcp(hosts, procs, seconds, tmp)
                    elif case == "emulated-quic":
                        r = emulated("quic", "lia", seconds, tmp)
                    else:
                        r = emulated("tcp", emu_algo, seconds, tmp)
                    r["run"] = run
                    rows[names[case]].append(r)
                    print(
                        f"#   run {run + 1}/{args.runs} {names[case]}: "
                        f"{r['goodput_mbps']:.0f} Mbit/s, "
                        f"{r['machine_us_per_packet']:.2f} µs/pkt (machine)",
                        flush=True,
                    )
                    time.sleep(0.5)
                    pauses.append(busy_cpus(1.0))
    except (BenchError, PathweaveError) as e:
        print(f"bench/quic.py: {e}", file=sys.stderr)
        failed = 1
    except KeyboardInterrupt:
        print("bench/quic.py: interrupted; removing what it made", file=sys.stderr)
        failed = 130
    finally:
        procs.kill_all()
        left = hosts.remove()
        if left:
            print(f"bench/quic.py: namespaces not removed: {', '.join(left)}", file=sys.stderr)
    if failed:
        return failed
    for line in table(rows):
        print(line)
    for note in (
        "packets: the sender's; QUIC datagrams (quinn's packets_sent), MPTCP segments (veth: "
        "the sender's TCP OutSegs; emulated: packets_sent)",
        "machine: CPU time of the whole machine (elapsed less idle, iowait and steal) over the "
        "transfer, per packet",
        "processes: user + system time of sender and receiver (veth) or of the emulator's "
        "process, links and endpoints (emulated), over the same window, per packet",
        "links: the emulator's link thread over the run, per packet; real time: emulated runs "
        "the emulator reports reliable (p99 lateness and intake wait within a tenth of the "
        "link delay, nothing dropped for falling behind)",
    ):
        print(f"# {note}")
    print(
        f"# between runs the machine was busy {statistics.median(pauses):.2f} CPUs' worth "
        f"(median; at most {max(pauses):.2f}) with this benchmark idle"
    )
    if args.json:
        doc = {"machine": machine(), "baseline_cpus": baseline, "pause_cpus": pauses}
        args.json.write_text(json.dumps({**doc, "cases": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
