"""Emulation over real kernel stacks (`pathweave emulate`).

These runs take real time and need root, /dev/net/tun, iproute2 and MPTCP; where any is
missing the tests skip and say which. Durations are kept short: each run costs its scenario's
length in wall time. Every test also checks that nothing of the emulator's is left behind.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import tomli_w

import pathweave
from conftest import steal_s
from pathweave import _core
from pathweave.emulate import EmulatedResult, check, emulate, leftovers
from pathweave.replicas import replicate


def _why_not() -> str | None:
    if sys.platform != "linux":
        return "emulation needs Linux"
    if os.geteuid() != 0:
        return "emulation needs root (CAP_NET_ADMIN for namespaces and TUN devices)"
    if not os.path.exists("/dev/net/tun"):
        return "emulation needs /dev/net/tun"
    if shutil.which("ip") is None:
        return "emulation needs iproute2's ip"
    try:
        if Path("/proc/sys/net/mptcp/enabled").read_text().strip() != "1":
            return "emulation of multipath flows needs net.mptcp.enabled = 1"
    except OSError:
        return "emulation of multipath flows needs a kernel with MPTCP"
    return None


WHY_NOT = _why_not()
if WHY_NOT is not None:
    print(f"test_emulate: skipped: {WHY_NOT}", file=sys.stderr)
needs_root = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


def realtime(test):  # type: ignore[no-untyped-def]
    """A test that emulates in real time: needs root, marked `emulation`."""
    return pytest.mark.emulation(needs_root(test))


def _enter(ns: str) -> list[str]:
    """The command prefix that runs a program inside namespace ``ns`` as ``leftovers`` lists
    it: a path a live process holds it by (``nsenter``), or a name under /run/netns."""
    return ["nsenter", f"--net={ns}"] if ns.startswith("/") else ["ip", "netns", "exec", ns]


def _tun_devices(namespaces: list[str]) -> list[str]:
    """TUN devices of the emulator in the root namespace and in ``namespaces``."""
    found = []
    for ns in [None, *namespaces]:
        cmd = ["ip", "-o", "link", "show"]
        out = subprocess.run(cmd if ns is None else [*_enter(ns), *cmd], capture_output=True)
        found += [line for line in out.stdout.decode().splitlines() if ": pw-" in line]
    return found


def _netns_inode(link: str) -> int | None:
    """The network namespace a /proc link (``net:[4026531840]``) points to, if it does."""
    try:
        m = re.fullmatch(r"net:\[(\d+)\]", os.readlink(link))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _reachable_namespaces() -> set[int]:
    """Every network namespace something can still reach, by inode: a process or a thread
    inside it, a descriptor of it, or a mount of it (nsfs, as this process sees the mounts).
    A namespace nothing reaches is freed by the kernel, its devices with it."""
    found: set[int] = set()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        links = [f"/proc/{pid}/ns/net"]
        for sub, name in (("task", "/ns/net"), ("fd", "")):
            with contextlib.suppress(OSError):  # gone, or a kernel thread's
                links += [f"/proc/{pid}/{sub}/{e}{name}" for e in os.listdir(f"/proc/{pid}/{sub}")]
        found.update(i for i in map(_netns_inode, links) if i is not None)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        m = re.fullmatch(r"net:\[(\d+)\]", line.split()[3])
        if m:
            found.add(int(m.group(1)))
    return found


def _held(pid: int) -> set[int]:
    """The inodes of the namespaces ``leftovers(pid)`` lists (paths and names)."""
    inodes = set()
    for ns in leftovers(pid):
        if ns.startswith("/"):
            ino = _netns_inode(ns)
        else:
            try:
                ino = os.stat(f"/run/netns/{ns}").st_ino
            except OSError:
                ino = None
        if ino is not None:
            inodes.add(ino)
    return inodes


def _namespace_with(pid: int, address: str, timeout: float = 10.0) -> str:
    """The namespace of process ``pid`` (as ``leftovers`` lists it) that has ``address``, as
    soon as it has it: 198.18.0.1 is the first flow's sender, 198.19.0.1 its receiver."""
    deadline = time.monotonic() + timeout
    while True:
        for ns in leftovers(pid):
            cmd = [*_enter(ns), "ip", "-o", "-4", "addr", "show"]
            out = subprocess.run(cmd, capture_output=True, text=True).stdout
            if f" {address}/" in out:
                return ns
        assert time.monotonic() < deadline, f"no namespace of {pid} has {address}"
        time.sleep(0.05)


def tcp_orphans() -> int:
    """TCP sockets the kernel keeps after their last close (all namespaces; /proc/net/sockstat).
    A socket closed gracefully over links that have stopped stays one for minutes, and with
    it its namespace and congestion control."""
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            fields = line.split()
            return int(fields[fields.index("orphan") + 1])
    return 0


@pytest.fixture(autouse=True)
def nothing_left_behind():
    """After every test: no namespace of this process's emulations (their devices live only
    inside them), no socket left as an orphan, no extra thread, no child process. Children
    that were there before the test (a helper a test in another file of the same pytest
    process started, such as multiprocessing's resource tracker) are not the test's."""
    threads = threading.active_count()
    orphans = tcp_orphans()
    children = set(psutil.Process().children())
    yield
    if WHY_NOT is None:
        assert leftovers(os.getpid()) == []
        # The kernel frees an aborted socket within moments (a killed run's too).
        deadline = time.monotonic() + 5.0
        while tcp_orphans() > orphans and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tcp_orphans() <= orphans
    assert threading.active_count() == threads
    assert set(psutil.Process().children()) - children == set()


def _scenario(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _one_link(rate_mbps: float, flow: str, duration: str = "6s", queue: str = "") -> str:
    bdp = max(2, round(rate_mbps * 1e6 * 0.040 / 8 / 1500))
    queue = queue or f'{{ type = "droptail", limit = "{bdp}pkt" }}'
    return f"""
        name = "one-link"
        duration = "{duration}"
        sample_interval = "100ms"
        [tcp]
        mss = "1460B"
        recovery = "sack"
        [[link]]
        name = "l"
        rate = "{rate_mbps}Mbps"
        delay = "20ms"
        queue = {queue}
        {flow}
        """


def _cbr(rate: str) -> str:
    return (
        '[[flow]]\nname = "udp"\npath = ["l"]\n'
        f'traffic = {{ type = "cbr", rate = "{rate}", size = "1500B" }}'
    )


def _steady_goodput(res: EmulatedResult, flow: int, after_s: float) -> float:
    s = res.flow_series
    s = s[(s["flow"] == flow) & (s["time_s"] > after_s)]
    return float(s["rate_bps"].mean())


def decrease_ratios(res: EmulatedResult, flow: int, subflow: int = 0) -> list[float]:
    """Each new ssthresh over the window sampled just before, for the congestion events after
    the first slow start (a finite ssthresh that falls). The end of the first slow start is
    left out: there the window doubles every round trip, so the sample up to one interval
    before the loss can be a fraction of the window the loss cut."""
    ss = res.subflow_series
    mine = ss[(ss["flow"] == flow) & (ss["subflow"] == subflow)]
    th = mine["ssthresh_bytes"].to_numpy()
    cw = mine["cwnd_bytes"].to_numpy()
    return [
        float(th[i] / cw[i - 1])
        for i in range(1, len(th))
        if not math.isnan(th[i]) and not math.isnan(th[i - 1]) and th[i] < th[i - 1]
    ]


@realtime
@pytest.mark.parametrize("rate", [10, 50, 100])
def test_one_tcp_flow_fills_the_link(tmp_path: Path, rate: int) -> None:
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(rate, flow))
    # Judged as the dumbbell is (see DISTURBED_P99_MS): a run with a p99 lateness above 0.3 ms
    # is repeated, and skipped only if the host took the CPU in every run. Within the run's own
    # bound (a tenth of the 20 ms delay) is not enough here: one CI run at 100 Mbit/s with a
    # p99 of 1.3 ms and a p999 of 8.7 ms, while the host took 3.4 % of the CPU, carried 69 %
    # of the link; on a quiet host the p99 is 0.015-0.045 ms.
    res = _emulate_undisturbed(path, f"one flow at {rate} Mbit/s")
    assert res.reliable, res.emulation["unreliable_because"]
    # Payload over the link rate: 1460 of every 1500 bytes on the wire carry data, so a full
    # link gives 97.3 % as goodput; 93 % leaves room for sawtooth dips below the full link.
    goodput = _steady_goodput(res, 0, after_s=2.0)
    print(f"{rate} Mbit/s: steady goodput {goodput / 1e6:.2f} Mbit/s; {res.emulation['lateness']}")
    assert goodput >= 0.93 * rate * 1e6
    assert res.emulation["kernel_algorithms"] == ["reno"]
    # The kernel's view reached the tables: a window and an RTT at least the propagation RTT.
    assert res.flows["mean_cwnd_bytes"][0] > 0
    assert 0.040 <= res.flows["mean_srtt_s"][0] < 0.200
    # The link thread's own account: it wrote no packet it did not read, and used CPU time,
    # but no more than the run's wall time (one thread runs on one CPU at a time).
    e = res.emulation
    assert e["lateness"]["packets"] <= e["packets_read"]
    assert 0 < e["link_thread_cpu_s"] <= res.wall_time_s


# ICMP echo: the receiving kernel answers in its softirq, so no process wake-up sits in the
# round trip; the reply's arrival time is the kernel's receive timestamp (SO_TIMESTAMPNS), so
# neither does the client's. What remains is the emulated path, the two kernel stacks and the
# emulator itself.
_PING = """
import socket, struct, sys, time, statistics
SO_TIMESTAMPNS = 35
def checksum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.bind((sys.argv[2], 0))
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
s.settimeout(1)
rtts = []
for seq in range(40):
    body = struct.pack("!BBHHH", 8, 0, 0, 0x7077, seq) + bytes(24)
    packet = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
    sent = time.time_ns()
    s.sendto(packet, (sys.argv[1], 0))
    try:
        while True:
            data, anc, _, _ = s.recvmsg(2048, 64)
            kind, _, _, ident, got = struct.unpack("!BBHHH", data[20:28])
            if kind == 0 and ident == 0x7077 and got == seq:
                break
    except socket.timeout:
        continue
    stamp = next(d for lvl, typ, d in anc if typ == SO_TIMESTAMPNS)
    sec, nsec = struct.unpack("qq", stamp[:16])
    rtts.append((sec * 1_000_000_000 + nsec - sent) / 1e9)
    time.sleep(0.02)
print(statistics.median(rtts), len(rtts))
"""

_WAKER = """
import os, sys, time
for _ in range(40):
    time.sleep(0.02)
    os.write(int(sys.argv[1]), time.monotonic_ns().to_bytes(8, "little"))
"""


def _echoes(namespace: str, to: str, source: str) -> tuple[float, int]:
    """Median round trip (s) of the echoes sent from ``namespace`` to ``to``, and how many
    were answered, once the namespace's devices have come up."""
    time.sleep(0.3)
    out = subprocess.run(
        [*_enter(namespace), sys.executable, "-c", _PING, to, source],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return float(out.stdout.split()[0]), int(out.stdout.split()[1])


def _wake_latency_s() -> float:
    """Median time for an idle process blocked on a pipe to run after another process writes
    to it, with the 20 ms gaps of the echoes: what waking an idle CPU costs on this machine."""
    r, w = os.pipe()
    writer = subprocess.Popen([sys.executable, "-c", _WAKER, str(w)], pass_fds=(w,))
    os.close(w)
    waits = []
    with os.fdopen(r, "rb", buffering=0) as pipe:
        while stamp := pipe.read(8):
            waits.append(time.monotonic_ns() - int.from_bytes(stamp, "little"))
    writer.wait(timeout=10)
    return float(np.median(waits)) / 1e9


def _kernel_echo_rtt_s() -> float:
    """Median round trip of the same echoes between two namespaces joined by a veth pair: the
    kernel stacks' and the client's share of an echo, without any emulator in between."""
    a, b = f"pwtest-{os.getpid()}-a", f"pwtest-{os.getpid()}-b"
    try:
        for cmd in [
            f"netns add {a}",
            f"netns add {b}",
            f"link add pwtest0 netns {a} type veth peer name pwtest1 netns {b}",
            f"-n {a} addr add 198.18.200.1/30 dev pwtest0",
            f"-n {b} addr add 198.18.200.2/30 dev pwtest1",
            f"-n {a} link set pwtest0 up",
            f"-n {b} link set pwtest1 up",
        ]:
            subprocess.run(["ip", *cmd.split()], check=True, capture_output=True)
        return _echoes(a, "198.18.200.2", "198.18.200.1")[0]
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _idle_echoes(tmp_path: Path) -> tuple[float, int, EmulatedResult]:
    """Median round trip and number of ICMP echoes answered across an idle emulated link,
    and the emulated run they crossed."""
    # A flow that starts at the very end leaves the link idle; ICMP echoes between the two
    # namespaces cross the emulated link both ways before it starts.
    flow = '[[flow]]\nname = "idle"\nalgorithm = "reno"\npath = ["l"]\nstart = "4.9s"'
    path = _scenario(tmp_path, _one_link(10, flow, duration="5s"))
    box: dict[str, EmulatedResult] = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", emulate(path)))
    worker.start()
    try:
        sender = _namespace_with(os.getpid(), "198.18.0.1", timeout=3)
        median, answered = _echoes(sender, "198.19.0.1", "198.18.0.1")
    finally:
        worker.join()
    return median, answered, box["r"]


@realtime
def test_an_idle_ping_sees_the_configured_rtt(tmp_path: Path) -> None:
    # A run the emulator itself finds disturbed (a packet held in a device or released later
    # than a tenth of the link's delay: with some 90 packets in the run, p99 is the worst of
    # them) is repeated up to twice, and the last run must be on time unless the host took the
    # CPU during every one (see `kept_time`).
    done = []
    for attempt in (1, 2, 3):
        before = _kernel_echo_rtt_s(), _wake_latency_s()
        (median, answered, res), _, share = _with_host_share(lambda: _idle_echoes(tmp_path))
        done.append((res, share))
        after = _kernel_echo_rtt_s(), _wake_latency_s()
        print(f"attempt {attempt}: unreliable because {res.emulation['unreliable_because']}")
        if res.reliable:
            break
    kept_time(done, "idle ping")
    assert answered >= 30
    # The link model's round trip: 2 x 20 ms of propagation plus 2 x 48 µs of transmission of
    # the 60-byte echo at 10 Mbit/s. Nothing may come back sooner.
    model_rtt = 2 * 0.020 + 2 * 60 * 8 / 10e6
    assert median >= model_rtt
    # What an echo adds to the model, each part measured: the kernel stacks and the client (the
    # same echoes over a veth pair); per crossing of the emulator, one wake-up of its sleeping
    # thread when the packet arrives (not in its own figures: measured as a pipe's wake-up),
    # the time the packet can have waited in the device before it was read (`intake_wait`) and
    # the release's lateness, each at its p90. The first two are measured before and after the
    # run, and the larger kept, so that a machine that changed pace during the run is judged by
    # its slower state.
    stacks, wake = max(before[0], after[0]), max(before[1], after[1])
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"pwtest-{os.getpid()}-" not in namespaces
    e = res.emulation
    emulator = (e["intake_wait"]["p90_ms"] + e["lateness"]["p90_ms"]) / 1e3
    allowed = stacks + 2 * (wake + emulator)
    print(
        f"idle RTT: median {median * 1e3:.3f} ms over {answered} echoes, "
        f"{(median - model_rtt) * 1e3:.3f} ms above the model; allowed {allowed * 1e3:.3f} ms "
        f"(stacks {stacks * 1e3:.3f}, wake-up {wake * 1e3:.3f}, "
        f"intake + lateness p90 {emulator * 1e3:.3f})"
    )
    assert median - model_rtt <= allowed


@realtime
def test_udp_at_120_percent_loses_a_sixth(tmp_path: Path) -> None:
    flow = _cbr("12Mbps")
    res = _emulate_undisturbed(_scenario(tmp_path, _one_link(10, flow, duration="5s")), "UDP")
    fwd = res.links[(res.links["name"] == "l") & (res.links["direction"] == "forward")].iloc[0]
    lost = fwd["drops_overflow"] / fwd["arrivals"]
    sent = int(res.flows["packets_sent"][0])
    print(f"UDP 12 over 10 Mbit/s: {fwd['arrivals']} offered of {sent} sent, loss {lost:.4f}")
    # Conservation at the bottleneck: 10/12 gets through, 1/6 is lost.
    assert abs(lost - 1 / 6) <= 0.02
    assert fwd["arrivals"] >= 0.98 * sent


RED = (
    '{ type = "red", limit = "100pkt", min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, '
    'gentle = true, mean_pkt_size = "1500B" }'
)


@realtime
def test_red_drops_as_the_simulator_does(tmp_path: Path) -> None:
    flow = _cbr("11Mbps")
    path = _scenario(tmp_path, _one_link(10, flow, duration="6s", queue=RED))
    emu = _emulate_undisturbed(path, "RED")
    sim = pathweave.run(path)

    def fwd(r: pathweave.Result) -> tuple[int, int, float]:
        row = r.links[(r.links["name"] == "l") & (r.links["direction"] == "forward")].iloc[0]
        drops = int(row["drops_early"] + row["drops_forced"] + row["drops_overflow"])
        series = r.link_series[(r.link_series["link"] == 0) & (r.link_series["time_s"] > 2)]
        return drops, int(row["arrivals"]), float(series["red_average"].mean())

    (de, ne, qe), (ds, ns, qs) = fwd(emu), fwd(sim)
    pe, ps = de / ne, ds / ns
    half = 1.96 * math.sqrt(ps * (1 - ps) / ns)
    print(f"RED drop fraction: emulated {pe:.4f}, simulated {ps:.4f} ± {half:.4f}")
    print(f"RED average queue (t > 2 s): emulated {qe:.2f}, simulated {qs:.2f} packets")
    assert abs(pe - ps) <= half
    # Same RED code, parameters and load: the average queue RED acts on must agree too.
    assert abs(qe - qs) <= 0.15 * qs


def _two_paths(duration: str, b: str, a_events: str = "", traffic: str = "") -> str:
    """An MPTCP connection over two disjoint links: "a" (10 Mbit/s, 10 ms) and "b" (`b`)."""
    return f"""
        name = "two-paths"
        duration = "{duration}"
        sample_interval = "100ms"
        [tcp]
        mss = "1460B"
        recovery = "sack"
        [[link]]
        name = "a"
        rate = "10Mbps"
        delay = "10ms"
        queue = {{ type = "droptail", limit = "40pkt" }}
        {a_events}
        [[link]]
        name = "b"
        {b}
        queue = {{ type = "droptail", limit = "40pkt" }}
        [[flow]]
        name = "mp"
        algorithm = "uncoupled"
        {traffic}
        subflows = [ {{ path = ["a"] }}, {{ path = ["b"] }} ]
        """


@realtime
def test_mptcp_over_two_disjoint_paths_adds_them_up(tmp_path: Path) -> None:
    text = _two_paths("8s", b='rate = "10Mbps"\ndelay = "15ms"')
    res = _emulate_undisturbed(_scenario(tmp_path, text), "two paths")
    goodput = _steady_goodput(res, 0, after_s=2.0)
    subs = res.subflows
    print(f"MPTCP aggregate {goodput / 1e6:.2f} Mbit/s; subflows {list(subs['throughput_bps'])}")
    assert goodput >= 0.90 * 20e6 * 1460 / 1500
    # Both subflows carried data, each on its own path.
    assert list(subs["path"]) == ["a", "b"]
    assert (subs["throughput_bps"] > 5e6).all()


@realtime
def test_an_outage_does_not_lose_a_byte(tmp_path: Path) -> None:
    text = _two_paths(
        "14s",
        b='rate = "5Mbps"\ndelay = "10ms"',
        a_events='[[link.event]]\nat = "1s"\ndown = "5s"',
        traffic='traffic = { type = "transfer", size = "6MB" }',
    )
    res = emulate(_scenario(tmp_path, text))
    (t,) = res.emulation["transfers"]
    print(f"transfer: {t}; completion {res.flows['completion_s'][0]:.2f} s")
    assert t["complete"]
    assert t["received_bytes"] == t["sent_bytes"] == 6_000_000
    assert t["mismatched_bytes"] == 0
    assert t["sent_fnv1a64"] == t["received_fnv1a64"]
    assert math.isfinite(res.flows["completion_s"][0])


SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _shortened(tmp_path: Path, name: str, seconds: int, **flows: str) -> Path:
    """A copy of a repository scenario run for ``seconds``, with flows' algorithms replaced."""
    doc = tomllib.loads((SCENARIOS / name).read_text(encoding="utf-8"))
    doc["duration"] = f"{seconds}s"
    for f in doc["flow"]:
        if f["name"] in flows:
            f["algorithm"] = flows[f["name"]]
    path = tmp_path / name
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


# The emulator's p99 lateness in this 100 s dumbbell has been 0.04-0.06 ms on a quiet machine
# and 0.12-0.17 ms on a busy one. The emulated total comes out below the simulator's at every
# lateness: 2.6-3.4 % on a quiet machine, 2.5-5.4 % at a p99 of 0.12-0.17 ms, 5.9 % at 0.185 ms
# and 6.9 % at 0.28 ms. The difference lies between the TCPs, not in the emulator's timing:
# moving the emulator's kernel work to the other CPU halved its intake wait and cut its lateness
# without raising the total, and the simulator itself loses only 0.5 % to a quarter of a
# millisecond more round trip. Over 60 s Linux's flows held 4 % less congestion window in all
# than the simulator's at the same smoothed RTT and for as many drops after slow start, and lost
# 30 % more packets in slow start; ns-3 on the same dumbbell, with SACK, also totals 48.5-49.0
# Mbit/s (docs/emulation.md). TOTAL_TOLERANCE covers that measured range up to a p99 of 0.3 ms
# and a run-to-run spread of 1 %. Further above, the host held the emulator and the kernel
# stacks beside it back for part of the run: two runs at 1.2 ms and 3.0 ms, while the hypervisor
# took 8 s and 19 s of CPU from this VM, came out 13 % and 22 % below. A run with a p99 above
# DISTURBED_P99_MS is repeated after a pause, up to DISTURBED_RUNS runs in all, and the least
# late one is asserted; if every run was disturbed and the host took at least HOST_BUSY of the
# CPU time during each, the comparison is skipped as one of the machine, not of the emulator.
TOTAL_TOLERANCE = 0.08
DISTURBED_P99_MS = 0.3
DISTURBED_RUNS = 3
DISTURBED_PAUSE_S = 20.0
# The share of a run's wall time the hypervisor took from this VM (`steal`, both CPUs) above
# which the host, not the emulator, is taken to have made the run late: 0.1-0.3 % in runs on a
# quiet host, 1.3-2 % in dumbbell runs at a p99 of 0.17-0.19 ms, 8-19 % at 1.2-3.0 ms. The
# kernel-controller runs, judged against 0.2 ms, were late at 0.9 %, 1.3 % and 1.5 % in one
# CI run (p99 0.175-0.302 ms, intake wait 0.236-0.476 ms) and on time at 1.1 % in another: a
# p99 bound allows 1 % of packets to be late, and a stolen slice of a CPU makes late every
# packet due in it and the backlog after it, so a share near 1 % sits on the bound whatever
# the emulator does. Half of it lies between the quiet range and every late run seen.
HOST_BUSY = 0.005
# Once this many emulations in a row ended late with the host busy in every run, a further
# late run on a busy host is not repeated (a late run on a quiet host still is), until one
# run is on time or late on a quiet host. The host's busy spells last minutes (one CI run:
# about seven; another: the whole forty minutes of the kernel tests), and every test in such
# a spell otherwise spent its full repeats and pauses on a verdict already known: a skip.
BUSY_STREAK_LIMIT = 2
_busy_streak = 0


def _with_host_share(call: Any) -> tuple[Any, float, float]:
    """``call()``'s result, the CPU seconds the host took from this machine meanwhile (see
    ``conftest.steal_s``) and their share of the call's wall time."""
    steal, t0 = steal_s(), time.monotonic()
    value = call()
    stolen = steal_s() - steal
    return value, stolen, stolen / max(time.monotonic() - t0, 1e-9)


def _host_took_the_run(res: EmulatedResult, share: float) -> bool:
    """Whether the host took enough of this machine's CPU during ``res`` to have made it late:
    at least ``HOST_BUSY`` of its wall time, or at least as much CPU time as the run's p99
    lateness (a stolen slice delays the packets due in it by up to its length; on a quiet host
    the steal counter does not move at all). The stolen time is bounded below by ``share``
    times the emulated duration, which the run's wall time exceeds."""
    stolen_s = share * float(res.stats["simulated_s"])
    return share >= HOST_BUSY or (stolen_s > 0 and stolen_s * 1e3 >= _p99_ms(res))


def _host_busy_throughout(done: list[tuple[EmulatedResult, float]]) -> bool:
    """Whether the host took every run in ``done`` (see ``_host_took_the_run``)."""
    return all(_host_took_the_run(res, share) for res, share in done)


def repeat_while_late(
    run: Any, late: Any, label: str, runs: int, pause_s: float = 0.0
) -> list[tuple[EmulatedResult, float]]:
    """Call ``run`` (an emulation) until ``late`` of its result is false, at most ``runs``
    times with ``pause_s`` between them, and return every run's result with the share of its
    wall time the host took from this machine (the last run last). Each run's lateness,
    reasons for being unreliable and the CPU time the host took are printed. While the host
    has been busy through ``BUSY_STREAK_LIMIT`` calls in a row, a late run on a busy host ends
    the call."""
    global _busy_streak
    done = []
    for attempt in range(1, runs + 1):
        res, stolen, share = _with_host_share(run)
        e = res.emulation
        print(
            f"{label}: run {attempt}, p99 lateness {float(e['lateness']['p99_ms']):.3f} ms; "
            f"unreliable because {e['unreliable_because']}; "
            f"{stolen:.2f} s of CPU taken by the host meanwhile"
        )
        done.append((res, share))
        if not late(res):
            break
        if _busy_streak >= BUSY_STREAK_LIMIT and _host_busy_throughout(done):
            print(f"{label}: the host has been busy through {_busy_streak} emulations; no repeat")
            break
        if attempt < runs:
            time.sleep(pause_s)
    busy = late(done[-1][0]) and _host_busy_throughout(done)
    _busy_streak = _busy_streak + 1 if busy else 0
    return done


def _p99_ms(res: EmulatedResult) -> float:
    return float(res.emulation["lateness"]["p99_ms"])


def _emulate_undisturbed(scenario: Any, label: str) -> EmulatedResult:
    """Emulate ``scenario`` until the emulator's own p99 lateness shows an undisturbed run
    (see ``DISTURBED_P99_MS``), and return the least late run."""
    done = repeat_while_late(
        lambda: emulate(scenario),
        lambda r: _p99_ms(r) > DISTURBED_P99_MS,
        label,
        runs=DISTURBED_RUNS,
        pause_s=DISTURBED_PAUSE_S,
    )
    best, _ = min(done, key=lambda d: _p99_ms(d[0]))
    if _p99_ms(best) > DISTURBED_P99_MS:
        skip_if_host_busy(done, label)
    return best


def skip_if_host_busy(done: list[tuple[EmulatedResult, float]], label: str) -> None:
    """Skip the test if the host took at least ``HOST_BUSY`` of the wall time of every run in
    ``done`` (runs the caller found late): their timing measures the machine, not the
    emulator. A late run on a host that left the CPU alone is for the caller to fail."""
    if _host_busy_throughout(done):
        pytest.skip(
            f"{label}: every one of {len(done)} runs was late (p99 lateness "
            f"{', '.join(f'{_p99_ms(r):.3f}' for r, _ in done)} ms) while the host took "
            f"{', '.join(f'{share:.1%}' for _, share in done)} of the CPU from this machine"
        )


def kept_time(done: list[tuple[EmulatedResult, float]], label: str) -> EmulatedResult:
    """The last run of ``done``, which must be one the emulator kept on time, unless the host
    took the CPU during every run (see ``skip_if_host_busy``)."""
    res = done[-1][0]
    if not res.reliable:
        skip_if_host_busy(done, label)
    assert res.reliable, res.emulation["unreliable_because"]
    return res


def test_a_late_run_is_skipped_only_when_the_host_took_the_cpu_every_time() -> None:
    """`kept_time` on stand-in results: on time passes; late with the host busy in every run
    skips; late with one run the host left alone fails."""
    from types import SimpleNamespace

    def result(p99_ms: float) -> Any:
        late = p99_ms > 0.2
        return SimpleNamespace(
            reliable=not late,
            emulation={"lateness": {"p99_ms": p99_ms}, "unreliable_because": ["late"] * late},
            stats={"simulated_s": 5.0},
        )

    assert kept_time([(result(0.05), 0.5)], "x").reliable
    with pytest.raises(pytest.skip.Exception, match=r"1\.200, 3\.000 ms.*8\.0%, 19\.0%"):
        kept_time([(result(1.2), 0.08), (result(3.0), 0.19)], "x")
    with pytest.raises(AssertionError):
        kept_time([(result(1.2), 0.08), (result(30.0), HOST_BUSY / 2)], "x")
    # Below HOST_BUSY, a run is still the host's when it stole at least its p99 lateness
    # (0.4 % of 5 s = 20 ms against 2.8 ms) and not when it stole nothing or less.
    with pytest.raises(pytest.skip.Exception):
        kept_time([(result(8.6), 0.12), (result(2.8), 0.004)], "x")
    with pytest.raises(AssertionError):
        kept_time([(result(8.6), 0.12), (result(2.8), 0.0)], "x")
    with pytest.raises(AssertionError):
        kept_time([(result(8.6), 0.12), (result(25.0), 0.004)], "x")


def test_a_busy_host_stops_the_repeats_after_a_streak(monkeypatch: pytest.MonkeyPatch) -> None:
    """`repeat_while_late` on stand-in runs: the full repeats while the streak of busy-host
    verdicts is short; one run per call once it is long, except for a late run on a quiet
    host; an on-time run ends the streak."""
    from types import SimpleNamespace

    shares: list[float] = []
    monkeypatch.setattr(sys.modules[__name__], "_busy_streak", 0)
    monkeypatch.setattr(
        sys.modules[__name__], "_with_host_share", lambda call: (call(), 0.0, shares.pop(0))
    )
    # 0.1 s runs: a quiet host's share (HOST_BUSY / 2) steals 0.25 ms, below the late run's
    # p99 of 1 ms, so it stays the emulator's (see `_host_took_the_run`).
    stats = {"simulated_s": 0.1}
    late = SimpleNamespace(
        emulation={"lateness": {"p99_ms": 1.0}, "unreliable_because": ["x"]}, stats=stats
    )
    on_time = SimpleNamespace(
        emulation={"lateness": {"p99_ms": 0.1}, "unreliable_because": []}, stats=stats
    )

    def calls(results: list[Any], host: list[float]) -> int:
        shares[:] = host
        it = iter(results)
        done = repeat_while_late(lambda: next(it), lambda r: r is late, "x", 3)
        return len(done)

    busy = [2 * HOST_BUSY] * 3
    assert [calls([late] * 3, busy) for _ in range(BUSY_STREAK_LIMIT)] == [3] * BUSY_STREAK_LIMIT
    assert calls([late] * 3, busy) == 1
    # A late run on a quiet host before a busy one keeps the repeats (it cannot end in a skip).
    assert calls([late] * 3, [HOST_BUSY / 2, 2 * HOST_BUSY, 2 * HOST_BUSY]) == 3
    assert calls([late] * 3, busy) == 3
    calls([late] * 3, busy)
    # A late run on a quiet host is repeated, and the call's verdict (quiet) ends the streak.
    assert calls([late] * 3, [HOST_BUSY / 2] * 3) == 3
    assert calls([late] * 3, busy) == 3
    for _ in range(BUSY_STREAK_LIMIT - 1):
        calls([late] * 3, busy)
    assert calls([late, on_time], busy[:2]) == 1
    # An on-time run ends the streak, so the next late run is repeated again.
    assert calls([on_time], busy[:1]) == 1
    assert calls([late, on_time], busy[:2]) == 2


@pytest.fixture(scope="module")
def dumbbell() -> tuple[Any, Any, Any, Any]:
    """The whole 100 s dumbbell, emulated as two independent copies in one run, and simulated
    with five seeds (RED's random drops differ by seed). Per flow, each engine's goodput is
    the mean over its samples: a shorter run leaves each flow's goodput too noisy for a
    per-flow comparison (about 8 % standard deviation per flow at 60 s, 6 % at 100 s).
    Returns per-flow goodput and the lowest Jain index, emulated and simulated."""
    path = SCENARIOS / "dumbbell.toml"
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    # Both engines run the same loss recovery, SACK (RFC 6675), and the simulator the parts
    # of it Linux cannot turn off: limited transmit (RFC 3042), proportional rate reduction
    # (RFC 6937) and SACKs kept across a timeout. The file's NewReno is not like for like:
    # Linux's recovery without SACK also runs PRR, which the simulator has only with SACK, and
    # PRR sets how the flows spread by RTT (simulated NewReno 5.09 to 7.03 Mbit/s from flow 0
    # to flow 7, SACK with PRR 5.98 to 6.91).
    doc["tcp"].update(
        {"recovery": "sack", "limited_transmit": True, "prr": True, "keep_sack_on_rto": True}
    )
    sim_sc = pathweave.parse(tomli_w.dumps(doc), "dumbbell.toml (SACK, as Linux runs it)")
    # Not asserted reliable: the 1/3 ms receiver link sets the lateness limit at 0.033 ms,
    # below the emulator's p99 here (0.04-0.17 ms); the figures are printed instead.
    emu = _emulate_undisturbed(
        pathweave.parse(tomli_w.dumps(replicate(doc, 2)), "dumbbell.toml x2"), "dumbbell"
    )
    sims = [pathweave.run(sim_sc, seed=seed) for seed in range(1, 6)]
    gs = sum(r.flows["goodput_bps"].to_numpy() for r in sims) / len(sims)
    js = min(float(r.fairness["jain"][0]) for r in sims)
    copies = [emu.flows["goodput_bps"].to_numpy()[k * 8 : (k + 1) * 8] for k in range(2)]
    ge = sum(copies) / 2
    je = float(emu.fairness["jain"].min())
    print(f"dumbbell: emulated {ge.sum() / 1e6:.2f} Mbit/s (lowest Jain {je:.3f}),")
    print(f"simulated {gs.sum() / 1e6:.2f} Mbit/s (lowest Jain {js:.3f}); per flow")
    print(f"emulated {[(c / 1e6).round(2) for c in copies]}, simulated {(gs / 1e6).round(2)}")
    return ge, je, gs, js


@realtime
def test_the_dumbbell_emulated_agrees_with_the_simulator_in_total(dumbbell: Any) -> None:
    ge, je, gs, js = dumbbell
    assert abs(ge.sum() / gs.sum() - 1) <= TOTAL_TOLERANCE
    assert je >= 0.9
    assert js >= 0.9


@realtime
def test_the_dumbbell_emulated_agrees_with_the_simulator_per_flow(dumbbell: Any) -> None:
    ge, _, gs, _ = dumbbell
    assert (abs(ge / gs - 1) <= 0.20).all(), (ge / gs).round(3)


@realtime
def test_uncoupled_subflows_take_two_shares_on_linux_as_in_the_simulator(tmp_path: Path) -> None:
    path = _shortened(tmp_path, "headline.toml", 30, mp="uncoupled")
    ratios = []
    for res in (_emulate_undisturbed(path, "headline uncoupled"), pathweave.run(path)):
        g = dict(zip(res.flows["name"], res.flows["goodput_bps"], strict=True))
        ratios.append(g["mp"] / g["reno"])
        # Every data packet the bottleneck dropped is one subflow's, in both engines (the
        # access links are far from full, and ACKs travel the other direction).
        bn = res.links[(res.links["name"] == "bottleneck") & (res.links["direction"] == "forward")]
        causes = ["drops_overflow", "drops_early", "drops_forced", "drops_wire"]
        dropped = int(bn[causes].to_numpy().sum())
        subs = res.subflows
        assert dropped > 0
        assert int(subs["drops"].sum()) == dropped
        for i, total in enumerate(res.flows["drops"]):
            assert int(subs[subs["flow"] == i]["drops"].sum()) == int(total)
    print(f"headline, uncoupled, 30 s: mp/reno emulated {ratios[0]:.2f}, simulated {ratios[1]:.2f}")
    assert ratios[0] >= 1.5
    assert abs(ratios[1] / ratios[0] - 1) <= 0.25


@realtime
def test_compare_puts_both_engines_side_by_side(tmp_path: Path) -> None:
    path = _shortened(tmp_path, "headline.toml", 8)
    out = subprocess.run(
        _cli(
            *("compare", str(path), "--flow", "mp", "--algorithms", "uncoupled"),
            *("--engine", "sim,emulate", "--out", str(tmp_path / "cmp")),
        ),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "sim: ratio" in out.stdout
    assert "emulate: ratio" in out.stdout
    import pandas as pd

    table = pd.read_csv(tmp_path / "cmp" / "compare.csv")
    assert list(table["engine"]) == ["sim", "emulate"]
    assert (table["share_ratio"] > 1.2).all()
    # The simulator's row is the scenario under the linux profile (docs/scenarios.md).
    from pathweave.compare import Comparison, variants

    (sc,) = variants(path, "mp", ["uncoupled"], profile="linux").values()
    expected = Comparison("mp", {"uncoupled": pathweave.run(sc)}).table()
    assert table["share_ratio"][0] == pytest.approx(float(expected["share_ratio"][0]), rel=1e-9)


def test_compare_refuses_an_unknown_engine(tmp_path: Path) -> None:
    path = _shortened(tmp_path, "headline.toml", 8)
    out = subprocess.run(
        _cli("compare", str(path), "--flow", "mp", "--engine", "ns3"),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "--engine: 'ns3': give sim, emulate or sim,emulate" in out.stderr


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "pathweave", *args]


def _wait_for_namespaces(pid: int, n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(leftovers(pid)) < n:
        assert time.monotonic() < deadline, "the emulation did not start"
        time.sleep(0.05)
    time.sleep(0.5)


def _wait_for_devices(namespaces: list[str], n: int, timeout: float = 10.0) -> list[str]:
    """The emulator's TUN devices in ``namespaces`` once there are ``n``."""
    deadline = time.monotonic() + timeout
    while len(found := _tun_devices(namespaces)) < n:
        assert time.monotonic() < deadline, f"{len(found)} of {n} TUN devices: {found}"
        time.sleep(0.05)
    return found


@realtime
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_removes_everything(tmp_path: Path, sig: signal.Signals) -> None:
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow, duration="30s"))
    proc = subprocess.Popen(_cli("emulate", str(path), "--out", str(tmp_path / "out")))
    _wait_for_namespaces(proc.pid, 2)
    proc.send_signal(sig)
    assert proc.wait(timeout=10) == 130
    assert not (tmp_path / "out").exists()


@realtime
def test_a_stop_during_setup_ends_it_there(tmp_path: Path) -> None:
    # 64 flows take seconds to set up (two namespaces each); a SIGTERM as the first namespaces
    # appear must not wait for all 128 to be made and configured.
    flow = '[[flow]]\nname = "tcp{i}"\ncount = 64\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow, duration="30s"))
    proc = subprocess.Popen(_cli("emulate", str(path), "--out", str(tmp_path / "out")))
    made: set[int] = set()
    try:
        deadline = time.monotonic() + 30
        while not leftovers(proc.pid):
            assert time.monotonic() < deadline, "the emulation did not start"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        most = 0
        while proc.poll() is None:
            held = _held(proc.pid)
            made |= held
            most = max(most, len(held))
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
        code = proc.wait(timeout=30)
    assert code == 130
    assert most < 128, "setup went on to make all 128 namespaces after the stop"
    assert made
    assert leftovers(proc.pid) == []
    assert not made & _reachable_namespaces()
    assert not (tmp_path / "out").exists()


@realtime
def test_both_ends_run_the_tcp_the_simulator_models(tmp_path: Path) -> None:
    """While a run is on, each of its namespaces holds the settings docs/emulation.md lists:
    20-byte headers (no timestamps), classic loss recovery (no RACK, tail loss probes or
    F-RTO), SACK as the scenario says, and one segment per send."""
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow, duration="4s"))
    proc = subprocess.Popen(_cli("emulate", str(path), "--out", str(tmp_path / "out")))
    try:
        _wait_for_namespaces(proc.pid, 2)
        expected = {
            "net.ipv4.tcp_timestamps": "0",
            "net.ipv4.tcp_recovery": "0",
            "net.ipv4.tcp_early_retrans": "0",
            "net.ipv4.tcp_frto": "0",
            "net.ipv4.tcp_sack": "1",  # recovery = "sack" in `_one_link`
            "net.ipv4.tcp_min_tso_segs": "1",
        }
        for ns in leftovers(proc.pid):
            out = subprocess.run(
                [*_enter(ns), "sysctl", "-n", *expected],
                capture_output=True,
                text=True,
                check=True,
            )
            assert dict(zip(expected, out.stdout.split(), strict=True)) == expected, ns
    finally:
        assert proc.wait(timeout=30) == 0


NAMED = {**os.environ, "PATHWEAVE_NAME_NAMESPACES": "1"}
"""The environment of a run that also names its namespaces under /run/netns."""


@realtime
def test_a_killed_run_that_named_its_namespaces_is_cleaned_up_by_cleanup(tmp_path: Path) -> None:
    """With PATHWEAVE_NAME_NAMESPACES=1 a run mounts its namespaces under /run/netns by name
    while it lasts; killed outright, it leaves those names (and so the namespaces, without
    their TUN devices) for `--cleanup`."""
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow, duration="30s"))
    cmd = _cli("emulate", str(path), "--out", str(tmp_path / "out"))
    proc = subprocess.Popen(cmd, env=NAMED, stderr=subprocess.PIPE, text=True)
    named: list[str] = []
    try:
        _wait_for_namespaces(proc.pid, 2)
        named = leftovers(proc.pid)
        assert all(n.startswith(f"pwemu-{proc.pid:x}-") for n in named), named
        _wait_for_devices(named, 2)  # `ip netns exec` works on them
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        try:
            left = leftovers(proc.pid)
            held = _held(proc.pid)
            assert sorted(left) == sorted(named)  # the names outlive a SIGKILL …
            assert _tun_devices(left) == []  # … but the TUN devices died with the descriptors
            assert all(f"ip netns exec {n}" in err for n in left), err
        finally:
            out = subprocess.run(_cli("emulate", "--cleanup"), capture_output=True, text=True)
    assert out.returncode == 0
    assert all(n in out.stdout for n in left)
    assert leftovers(proc.pid) == []
    assert not held & _reachable_namespaces()


@realtime
def test_cleanup_tells_a_running_emulation_from_a_reused_process_id(tmp_path: Path) -> None:
    """A namespace named after a process that started before it is a running emulation's and
    is kept; one named after a process that started after it was made is a dead run's whose
    process id was given again, and goes."""
    running = f"pwemu-{os.getpid():x}-zz-0s"  # this test process started long before
    pid_file = Path("/proc/sys/kernel/ns_last_pid")
    later: subprocess.Popen[bytes] | None = None
    reused = None
    try:
        subprocess.run(["ip", "netns", "add", running], check=True)
        # The process id the next process will get, if nothing else takes it first.
        for _ in range(20):
            want = int(pid_file.read_text()) + 1000
            reused = f"pwemu-{want:x}-zz-0s"
            subprocess.run(["ip", "netns", "add", reused], check=True)
            time.sleep(3.5)  # beyond the two seconds allowed for the start time's rounding
            pid_file.write_text(str(want - 1))
            later = subprocess.Popen(["sleep", "60"])
            if later.pid == want:
                break
            later.kill()
            later.wait()
            subprocess.run(["ip", "netns", "delete", reused], check=True)
            later = reused = None
        assert later is not None, "could not place a process id"
        assert reused is not None
        out = subprocess.run(_cli("emulate", "--cleanup"), capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert reused in out.stdout
        assert running not in out.stdout
        assert "kept 1 namespace(s) of running emulations" in out.stdout
        assert leftovers(later.pid) == []
        assert leftovers(os.getpid()) == [running]
    finally:
        if later is not None:
            later.kill()
            later.wait()
        for ns in (running, reused):
            if ns is not None:
                subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


@realtime
def test_a_namespace_that_cannot_be_deleted_is_reported(tmp_path: Path) -> None:
    """A run that names its namespaces and an `ip` that fails every `netns delete`: the run
    still writes its results, but warns on stderr naming each namespace left and `--cleanup`,
    and run.json lists them in `namespaces_left` instead of passing them for removed."""
    real_ip = shutil.which("ip")
    assert real_ip is not None
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ip").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = netns ] && [ "$2" = delete ]; then\n'
        '  echo "Cannot remove namespace file: injected failure" >&2; exit 1\n'
        "fi\n"
        f'exec {real_ip} "$@"\n'
    )
    (fake / "ip").chmod(0o755)
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow, duration="2s"))
    env = {**NAMED, "PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen(
        _cli("emulate", str(path), "--out", str(tmp_path / "out")),
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, err = proc.communicate(timeout=60)
        left = leftovers(proc.pid)
        assert proc.returncode == 0, err
        assert len(left) == 2, left
        manifest = json.loads((tmp_path / "out" / "run.json").read_text())
        emulation = manifest["emulation"]
        assert sorted(emulation["namespaces_left"]) == left
        assert sorted(emulation["namespaces"]) == left
        assert "warning" in err
        assert all(n in err for n in left), err
        assert "injected failure" in err
        assert "pathweave emulate --cleanup" in err
    finally:
        out = subprocess.run(_cli("emulate", "--cleanup"), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert leftovers(proc.pid) == []


def _registered() -> set[str]:
    text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    return set(text.split())


BPFTOOL = shutil.which("bpftool") or "/usr/sbin/bpftool"


def _struct_ops_names() -> set[str]:
    """Names of the congestion controls BPF struct_ops maps hold, registered or not: a map
    stays, with its programs, while anything refers to it."""
    out = subprocess.run([BPFTOOL, "struct_ops", "dump", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    names = set()
    for item in json.loads(out.stdout or "[]"):
        ops = item.get("bpf_struct_ops_tcp_congestion_ops")
        if ops is not None:
            names.add(ops["data"]["name"])
    return names


@realtime
def test_a_killed_coupled_run_leaves_no_controller_registered(tmp_path: Path) -> None:
    """A run's private BPF controllers go with its process, SIGKILL included: the sockets set
    their congestion control themselves, every MPTCP subflow takes its connection's, and no
    namespace defaults to the run's controller (which would hold it registered for as long as
    the namespace lives). The namespaces go too."""
    if not _core.EMULATE_LOADS_CONTROLLERS:
        pytest.skip("this build of the extension has no BPF controllers")
    if not Path("/sys/kernel/btf/vmlinux").exists():
        pytest.skip("the kernel has no BTF (/sys/kernel/btf/vmlinux)")
    if not os.access(BPFTOOL, os.X_OK):
        pytest.skip("needs bpftool to see the BPF struct_ops maps")
    before = _registered()
    text = _two_paths("30s", b='rate = "10Mbps"\ndelay = "10ms"').replace(
        'algorithm = "uncoupled"', 'algorithm = "lia"'
    )
    assert 'algorithm = "lia"' in text
    path = _scenario(tmp_path, text)
    proc = subprocess.Popen(_cli("emulate", str(path), "--out", str(tmp_path / "out")))
    try:
        _wait_for_namespaces(proc.pid, 2)
        sender = _namespace_with(proc.pid, "198.18.0.1")
        held = _held(proc.pid)
        assert len(held) == 2
        # A run's controllers are e<run number in base 36>_lia and so on.
        ours = {c for c in _registered() - before if re.fullmatch(r"e[0-9a-z]+_[a-z]+", c)}
        assert {c.rsplit("_", 1)[1] for c in ours} >= {"lia", "bmc"}, ours
        lia = next(c for c in ours if c.endswith("_lia"))
        assert ours <= _struct_ops_names()
        # Both subflows run the run's controller, set by the connection itself.
        deadline = time.monotonic() + 10.0
        while True:
            ss = subprocess.run(
                [*_enter(sender), "ss", "-tin", "state", "established"],
                capture_output=True,
                text=True,
            ).stdout
            if ss.count(f" {lia} ") >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ss.count(f" {lia} ") == 2, ss
        default = subprocess.run(
            [*_enter(sender), "sysctl", "-n", "net.ipv4.tcp_congestion_control"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5.0
        while (_registered() | _struct_ops_names()) & ours and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _registered() & ours, "the killed run's controllers are still registered"
        assert not _struct_ops_names() & ours, (
            f"the killed run's controllers are still loaded (its sender namespace defaults "
            f"to {default})"
        )
        assert default not in ours, default
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert leftovers(proc.pid) == []
    assert not held & _reachable_namespaces(), "the killed run's namespaces outlived it"


_EMULATE_IN_PYTHON = """
import sys
from pathweave.emulate import emulate
emulate(sys.argv[1])
"""


@realtime
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_python_program_ended_by_a_signal_leaves_nothing(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """A Python program running `emulate()` on the headline scenario, ended by a signal it
    does not handle (SIGTERM's default action ends it without unwinding, as SIGKILL does):
    its namespaces, their TUN devices, its BPF controllers and its child processes all go
    with it."""
    text = (SCENARIOS / "headline.toml").read_text()
    assert 'duration = "100s"' in text
    assert 'algorithm = "lia"' in text
    text = text.replace('duration = "100s"', 'duration = "30s"')
    loads = _core.EMULATE_LOADS_CONTROLLERS
    if not loads:  # LIA would need controllers loaded beforehand
        text = text.replace('algorithm = "lia"', 'algorithm = "uncoupled"')
    path = tmp_path / "headline.toml"
    path.write_text(text)
    before = _registered()
    proc = subprocess.Popen([sys.executable, "-c", _EMULATE_IN_PYTHON, str(path)])
    children: set[psutil.Process] = set()
    held: set[int] = set()
    devices: list[str] = []
    ours: set[str] = set()
    try:
        # Two flows, four namespaces; the multipath flow has two TUN devices at either end.
        deadline = time.monotonic() + 30
        while len(leftovers(proc.pid)) < 4:
            assert proc.poll() is None, "the emulation ended early"
            assert time.monotonic() < deadline, "the emulation did not start"
            children |= set(psutil.Process(proc.pid).children(recursive=True))
            time.sleep(0.02)
        devices = _wait_for_devices(leftovers(proc.pid), 6)
        held = _held(proc.pid)
        assert len(held) == 4, leftovers(proc.pid)
        if loads:
            # A run's controllers are e<run number in base 36>_lia and so on.
            ours = {c for c in _registered() - before if re.fullmatch(r"e[0-9a-z]+_[a-z]+", c)}
            assert any(c.endswith("_lia") for c in ours), ours
        # The multipath flow's connection is up: its receiver has accepted it.
        receiver = _namespace_with(proc.pid, "198.19.0.1")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cmd = [*_enter(receiver), "ss", "-Htn", "state", "established"]
            if subprocess.run(cmd, capture_output=True, text=True).stdout.strip():
                break
            time.sleep(0.1)
        children |= set(psutil.Process(proc.pid).children(recursive=True))
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == -sig
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    # No process, thread, descriptor or mount reaches a namespace of the run any more: the
    # kernel frees them, and their devices with them.
    assert leftovers(proc.pid) == []
    assert not held & _reachable_namespaces(), "a namespace of the run outlived it"
    # None of its devices in the root namespace either (each flow numbers its own: pw-<run>-0
    # and pw-<run>-1 for the multipath flow, pw-<run>-0 for the Reno flow).
    names = {line.split(":")[1].strip() for line in devices}
    assert names == {f"pw-{proc.pid:x}-00-0", f"pw-{proc.pid:x}-00-1"}, names
    root = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert not [n for n in names if f": {n}" in root], root
    # Its controllers unregister once the last socket using them has gone.
    t0 = time.monotonic()
    while _registered() & ours and time.monotonic() < t0 + 30.0:
        time.sleep(0.05)
    print(
        f"controllers unregistered {time.monotonic() - t0:.3f} s after the end; "
        f"{Path('/proc/net/sockstat').read_text()}"
    )
    assert not _registered() & ours, "the run's controllers are still registered"
    # Its child processes (`ip`, short-lived) died with it.
    assert not [c for c in children if c.is_running()]


@realtime
def test_reno_flows_can_run_on_another_kernel_congestion_control(tmp_path: Path) -> None:
    """`reno_congestion="cubic"` runs a Reno flow on the kernel's CUBIC, which cuts its window
    to 0.7 of what it was on loss (RFC 9438 §4.6: beta_cubic = 0.7) where Reno halves it."""
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    res = emulate(_scenario(tmp_path, _one_link(10, flow, "12s")), reno_congestion="cubic")
    assert res.emulation["kernel_algorithms"] == ["cubic"]
    ratios = decrease_ratios(res, 0)
    print(f"cubic: new ssthresh over the window before, {np.round(ratios, 2)}")
    assert ratios, "no congestion event after slow start in 12 s"
    assert 0.6 <= float(np.median(ratios)) <= 0.8, ratios


def test_an_unregistered_reno_congestion_is_refused(tmp_path: Path) -> None:
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow))
    out = subprocess.run(
        _cli("emulate", str(path), "--reno-congestion", "nosuchcc", "--out", str(tmp_path / "o")),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert '"nosuchcc" given to run Reno flows is not registered' in out.stderr
    assert "; registered: " in out.stderr
    assert "reno" in out.stderr.split("; registered: ")[1]
    assert not (tmp_path / "o").exists()


def test_an_algorithm_without_a_kernel_controller_is_refused(tmp_path: Path) -> None:
    flow = '[[flow]]\nname = "v"\nalgorithm = "veno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow))
    out = subprocess.run(_cli("emulate", str(path)), capture_output=True, text=True)
    assert out.returncode == 2
    assert 'algorithm "veno" cannot be emulated' in out.stderr
    assert "this build runs: reno, uncoupled" in out.stderr


@pytest.mark.parametrize(
    ("tcp", "named", "allowed"),
    [
        ('header = "60B"', 'header = "60B"', 'header = "40B" only'),
        ('ack_size = "100B"', 'ack_size = "100B"', 'ack_size = "40B" only'),
        ('delayed_ack = "40ms"', 'delayed_ack = "40ms"', "ACK-every-segment only"),
        ('recovery = "reno"', 'recovery = "reno"', '"newreno" (SACK off) or "sack"'),
        ('min_rto = "500us"', 'min_rto = "0.5ms"', 'at least "1ms"'),
    ],
)
def test_settings_the_kernel_cannot_run_are_refused(
    tmp_path: Path, tcp: str, named: str, allowed: str
) -> None:
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    text = _one_link(10, flow)
    key = tcp.split(" = ")[0]
    if re.search(rf"^\s*{key} = ", text, flags=re.MULTILINE):
        text = re.sub(rf"^(\s*){key} = .*$", rf"\g<1>{tcp}", text, count=1, flags=re.MULTILINE)
    else:
        text = re.sub(r"^(\s*)\[tcp\]$", rf"\g<0>\n\g<1>{tcp}", text, count=1, flags=re.MULTILINE)
    path = _scenario(tmp_path, text)
    out = subprocess.run(
        _cli("emulate", str(path), "--out", str(tmp_path / "o")), capture_output=True, text=True
    )
    assert out.returncode == 2, out.stderr
    assert f"flow tcp: {named} cannot be emulated" in out.stderr
    assert allowed in out.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("algorithm", "key", "value", "runs"),
    [
        ("lia", "arithmetic", "spec", '"linux"'),
        ("olia", "counting", "per-packet", '"per-ack-event"'),
        ("fully-coupled", "counting", "per-ack-event", '"per-packet"'),
    ],
)
def test_an_arithmetic_the_kernel_lacks_is_refused_as_written(
    tmp_path: Path, algorithm: str, key: str, value: str, runs: str
) -> None:
    """Written out, what an unset key does in the simulator but the kernel cannot (unset, the
    kernel runs its own arithmetic). Scenarios parsed from text, as `compare` makes its
    variants, are checked as files are."""
    text = _two_paths("5s", b='rate = "10Mbps"\ndelay = "10ms"').replace(
        'algorithm = "uncoupled"', f'algorithm = "{algorithm}"\n{key} = "{value}"'
    )
    path = _scenario(tmp_path, text)
    for scenario in (pathweave.load(path), pathweave.parse(text, "variant")):
        with pytest.raises(_core.EmulationRefused, match=f'flow mp: {key} = "{value}" cannot be'):
            check(scenario)
    out = subprocess.run(
        _cli("emulate", str(path), "--out", str(tmp_path / "o")), capture_output=True, text=True
    )
    assert out.returncode == 2, out.stderr
    assert f'{key} = "{value}" cannot be emulated' in out.stderr
    assert f"the emulator runs {key} = {runs}" in out.stderr
    assert not (tmp_path / "o").exists()
    # Unset, the same flow passes this check (the kernel runs its own arithmetic); a build
    # without the BPF controllers refuses the algorithm itself, for another reason.
    refusal = ""
    try:
        check(pathweave.parse(text.replace(f'{key} = "{value}"', ""), "unset"))
    except _core.EmulationRefused as e:
        refusal = str(e)
    assert f"{key} = " not in refusal


def test_the_repository_scenarios_pass_the_emulators_check() -> None:
    """The settings the emulator refuses are none of those the repository's scenarios use."""
    names = [
        "dumbbell.toml",
        "headline.toml",
        *(f"kernel/{p.name}" for p in SCENARIOS.glob("kernel/*.toml")),
    ]
    refused = []
    for name in names:
        try:
            check(pathweave.load(SCENARIOS / name))
        except _core.EmulationRefused as e:
            refused.append(str(e))
    # A machine without the coupled controllers refuses their algorithms, and nothing else.
    assert [m for m in refused if "cannot be loaded" not in m and "is not loaded" not in m] == []


def test_a_scenario_too_large_for_real_time_is_refused(tmp_path: Path) -> None:
    flow = '[[flow]]\nname = "tcp{i}"\ncount = 3\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(500, flow))
    out = subprocess.run(_cli("emulate", str(path)), capture_output=True, text=True)
    assert out.returncode == 2
    assert "1500.0 Mbit/s in total" in out.stderr
    assert "at most 1000.0 Mbit/s" in out.stderr
    many = '[[flow]]\nname = "tcp{i}"\ncount = 65\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(1, many), "many.toml")
    out = subprocess.run(_cli("emulate", str(path)), capture_output=True, text=True)
    assert out.returncode == 2
    assert "65 flows; the emulator holds at most 64 flows" in out.stderr


def test_emulation_without_root_is_refused_naming_the_capability(tmp_path: Path) -> None:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to drop root")
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    # A directory the unprivileged user can read and write.
    shared = Path(tempfile.mkdtemp(prefix="pw-noroot-"))
    try:
        shared.chmod(0o777)
        path = _scenario(shared, _one_link(10, flow))
        path.chmod(0o644)
        cmd = _cli("emulate", str(path), "--out", str(shared / "out"))
        if os.geteuid() == 0:
            drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            probe = subprocess.run([*drop, sys.executable, "-c", "import pathweave"])
            if probe.returncode != 0:
                pytest.skip("the installed package is not readable by an unprivileged user")
            cmd = [*drop, *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        shutil.rmtree(shared)
    assert out.returncode == 2, out.stderr
    assert "needs root" in out.stderr
    assert "CAP_NET_ADMIN" in out.stderr


def test_emulation_without_cap_sys_admin_is_refused_naming_it(tmp_path: Path) -> None:
    """Root whose bounding set lacks CAP_SYS_ADMIN (some containers) cannot create or enter
    network namespaces: refused before anything is made, naming the capability, exit code 2."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to drop a capability")
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow))
    drop = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"]
    cmd = [*drop, *_cli("emulate", str(path), "--out", str(tmp_path / "out"))]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert "lacks CAP_SYS_ADMIN" in out.stderr, out.stderr
    assert not (tmp_path / "out").exists()


def _emulate_unshared(tmp_path: Path, text: str, unshare: str, setup: str) -> str:
    """Run `pathweave emulate` in a new namespace (`unshare` flag) after shell `setup`; it must
    be refused (exit 2) without writing anything. Returns its stderr."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux)")
    path = _scenario(tmp_path, text)
    cmd = " ".join(_cli("emulate", str(path), "--out", str(tmp_path / "out")))
    out = subprocess.run(
        ["unshare", unshare, "sh", "-c", f"{setup} && {cmd}"], capture_output=True, text=True
    )
    assert out.returncode == 2, out.stderr
    assert not (tmp_path / "out").exists()
    return out.stderr


@needs_root
def test_mptcp_disabled_is_refused_naming_the_sysctl(tmp_path: Path) -> None:
    # net.mptcp.enabled is per network namespace: run the command in a fresh one with it off.
    text = _two_paths("5s", b='rate = "10Mbps"\ndelay = "10ms"')
    err = _emulate_unshared(tmp_path, text, "--net", "sysctl -qw net.mptcp.enabled=0")
    assert "MPTCP is disabled" in err
    assert "net.mptcp.enabled" in err


@needs_root
def test_a_missing_tun_device_is_refused(tmp_path: Path) -> None:
    # A private mount namespace whose /dev/net is empty.
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    err = _emulate_unshared(
        tmp_path, _one_link(10, flow), "--mount", "mount -t tmpfs none /dev/net"
    )
    assert "/dev/net/tun is missing" in err


def test_refusals_raise_before_anything_is_made(tmp_path: Path) -> None:
    flow = '[[flow]]\nname = "v"\nalgorithm = "westwood"\npath = ["l"]'
    with pytest.raises(_core.EmulationRefused, match="westwood"):
        emulate(_scenario(tmp_path, _one_link(10, flow)))


# Packet captures of emulated runs (docs/capture.md): the packets the kernels sent, as the
# links carried them.


def test_a_bad_pcap_directory_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    """Checked before the machine and the namespaces: one line, exit 2, nothing written."""
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    path = _scenario(tmp_path, _one_link(10, flow))
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    for target in (blocker, blocker / "below"):
        cmd = _cli("emulate", str(path), "--out", str(tmp_path / "out"), "--pcap", str(target))
        out = subprocess.run(cmd, capture_output=True, text=True)
        assert out.returncode == 2, out.stderr
        assert out.stderr.startswith("pathweave: --pcap: "), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "taken"]
    assert leftovers(os.getpid()) == []


@pytest.fixture(scope="module")
def emulated_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The headline scenario, 6 s, emulated with `--pcap` and the queue log: the results
    directory, the capture directory and the command's stdout."""
    if WHY_NOT is not None:
        pytest.skip(WHY_NOT)
    base = tmp_path_factory.mktemp("emulated-capture")
    doc = tomllib.loads((SCENARIOS / "headline.toml").read_text(encoding="utf-8"))
    doc["duration"] = "6s"
    doc["capture"] = {"events": True}
    path = base / "headline.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    out, pcap = base / "out", base / "pcap"
    proc = subprocess.run(
        _cli("emulate", str(path), "--out", str(out), "--pcap", str(pcap)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (out / "capture").exists()  # --pcap chose the directory
    return out, pcap, proc.stdout


@realtime
def test_an_emulated_capture_has_a_file_per_link_direction_and_the_queue_log(
    emulated_capture: tuple[Path, Path, str],
) -> None:
    out, pcap, stdout = emulated_capture
    names = sorted(p.name for p in pcap.iterdir())
    links = ["bottleneck", "access0", "access1", "access2"]
    expected = [f"{link}-{d}.pcapng" for link in links for d in ("forward", "reverse")]
    assert names == sorted(["capture.json", "packets.parquet", *expected])
    assert "capture: 8 pcapng files" in stdout
    manifest = json.loads((out / "run.json").read_text())
    info = json.loads((pcap / "capture.json").read_text())
    assert manifest["capture"]["packet_log_rows"] == info["packet_log_rows"] > 0
    assert manifest["capture"]["truncated_files"] == []


@realtime
def test_the_emulated_queue_log_balances_against_the_links_table(
    emulated_capture: tuple[Path, Path, str],
) -> None:
    """Per link direction, as in the simulator: enqueues and drops are the arrivals, drops
    the queue's drops, dequeues the packets delivered or lost on the wire plus those still
    on the wire at the end; the file holds each delivered packet once, uncommented, and each
    drop with its cause."""
    import pandas as pd

    from test_capture import read_pcapng

    out, pcap, _ = emulated_capture
    links = pd.read_parquet(out / "links.parquet")
    log = pd.read_parquet(pcap / "packets.parquet")
    assert str(log["sequence"].dtype) == "uint64"
    in_flight = {
        (f["link"], f["direction"]): f["in_flight_at_end"]
        for f in json.loads((pcap / "capture.json").read_text())["files"]
    }
    for row in links.itertuples():
        rows = log[(log["link"] == row.name) & (log["direction"] == row.direction)]
        count = rows["event"].value_counts()
        drops = row.drops_overflow + row.drops_early + row.drops_forced
        assert count.get("enqueue", 0) + count.get("drop", 0) == row.arrivals, row.name
        assert count.get("drop", 0) == drops
        assert count.get("dequeue", 0) == (
            row.delivered_packets + row.drops_wire + in_flight[(row.name, row.direction)]
        ), (row.name, row.direction)
        packets = read_pcapng(pcap / f"{row.name}-{row.direction}.pcapng")
        comments = [p[3] for p in packets]
        assert comments.count(None) == row.delivered_packets
        assert comments.count("dropped: lost on the wire") == row.drops_wire
        assert sum(1 for c in comments if c and c.startswith("dropped: RED")) == (
            row.drops_early + row.drops_forced
        )
        assert comments.count("dropped: queue overflow") == row.drops_overflow
        assert [p[0] for p in packets] == sorted(p[0] for p in packets)
        # Real packets, as carried: IPv4 from the run's addresses, full length kept.
        assert all(p[1][0] >> 4 == 4 and p[2] >= len(p[1]) for p in packets)
    bottleneck = log[(log["link"] == "bottleneck") & (log["direction"] == "forward")]
    assert set(bottleneck["flow"]) == {0, 1}
    assert set(bottleneck[bottleneck["flow"] == 0]["subflow"]) == {0, 1}
    assert (bottleneck["sequence"] > 0).mean() > 0.99  # TCP sequence numbers, parsed


@realtime
def test_wireshark_reads_the_emulated_capture_and_ties_the_kernels_subflows(
    emulated_capture: tuple[Path, Path, str],
) -> None:
    from test_capture import TSHARK, conversations
    from test_capture import _tshark as run

    if TSHARK is None:
        pytest.skip("tshark is not installed (make setup installs it as root with apt)")
    _, pcap, _ = emulated_capture
    for f in sorted(pcap.glob("*.pcapng")):
        report = run("-r", f, "-q", "-z", "expert")
        assert "Malformed" not in report, f"{f.name}: {report}"
    fields = run(
        "-r", pcap / "bottleneck-forward.pcapng", "-Y", "mptcp",
        "-T", "fields", "-e", "mptcp.stream", "-e", "tcp.srcport", "-e", "ip.src",
    )  # fmt: skip
    rows = [line.split("\t") for line in fields.splitlines() if line.split("\t")[0]]
    assert {r[0] for r in rows} == {"0"}, "one MPTCP connection"
    assert len({(r[1], r[2]) for r in rows}) == 2, "over two subflows"
    # As for the simulator's capture (test_capture.py): one TCP conversation per subflow on
    # the bottleneck, from the subflow's own address, with the packets the kernel counted as
    # sent less those the end of the run caught upstream (at most the bottleneck's queue of
    # 100 packets and 2 % more), plus the handshake's two.
    import pandas as pd

    frames = conversations(pcap / "bottleneck-forward.pcapng")
    sent = pd.read_parquet(emulated_capture[0] / "subflows.parquet")["packets_sent"].tolist()
    assert len(frames) == len(sent) == 3, (frames, sent)
    for p, n in enumerate(sent):
        got = frames[f"198.18.0.{p + 1}"]
        assert n > 1000, (p, n)
        assert 0 <= n + 2 - got <= 100 + 0.02 * n, (p, n, got)


@realtime
def test_a_capture_table_without_pcap_goes_into_the_emulated_output(tmp_path: Path) -> None:
    flow = '[[flow]]\nname = "tcp"\nalgorithm = "reno"\npath = ["l"]'
    text = _one_link(10, flow, duration="3s")
    text += '[capture]\nlinks = ["l"]\ndirections = "forward"\n'
    path = _scenario(tmp_path, text)
    out = tmp_path / "out"
    proc = subprocess.run(
        _cli("emulate", str(path), "--out", str(out)), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "capture").iterdir()) == [
        "capture.json",
        "l-forward.pcapng",
    ]
    assert "capture: 1 pcapng files" in proc.stdout
    (info,) = json.loads((out / "capture" / "capture.json").read_text())["files"]
    assert info["packets"] > 1000
    assert json.loads((out / "run.json").read_text())["capture"]["files"] == ["l-forward.pcapng"]


@realtime
def test_an_emulated_capture_of_udp_and_quic_reads_as_udp_and_quic(tmp_path: Path) -> None:
    """A constant-rate UDP flow and a QUIC flow over one link, 4 s, captured with the queue
    log: Wireshark finds no malformed packet and no error; each flow is one UDP conversation
    from its own address (198.18.0.1 the UDP flow, 198.18.0.2 the QUIC one) whose frames are
    the packets the flow sent less those the run's end caught in the queue, on the wire or
    not yet read (at most the queue and twice the link's bandwidth-delay product); every
    packet of the QUIC conversation dissects as QUIC; the queue log has sequence 0 for both
    (no TCP header) and the QUIC flow's acknowledgements on the reverse direction."""
    import pandas as pd

    from test_capture import TSHARK, conversations
    from test_capture import _tshark as run

    if TSHARK is None:
        pytest.skip("tshark is not installed (make setup installs it as root with apt)")
    flows = (
        '[[flow]]\nname = "udp"\npath = ["l"]\n'
        'traffic = { type = "cbr", rate = "5Mbps", size = "1200B" }\n'
        '[[flow]]\nname = "quic"\nalgorithm = "reno"\ntransport = "quic"\npath = ["l"]\n'
        "[capture]\nevents = true\n"
    )
    queue = '{ type = "droptail", limit = "60pkt" }'
    path = _scenario(tmp_path, _one_link(20, flows, duration="4s", queue=queue))
    out, pcap = tmp_path / "out", tmp_path / "pcap"
    proc = subprocess.run(
        _cli("emulate", str(path), "--out", str(out), "--pcap", str(pcap)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr

    for f in sorted(pcap.glob("*.pcapng")):
        report = run("-r", f, "-q", "-z", "expert")
        assert "Malformed" not in report, f"{f.name}: {report}"
        assert "Errors (" not in report, f"{f.name}: {report}"
    forward = pcap / "l-forward.pcapng"
    frames = conversations(forward, "udp")
    assert sorted(frames) == ["198.18.0.1", "198.18.0.2"], frames
    sent = pd.read_parquet(out / "flows.parquet")["packets_sent"].tolist()
    bdp_packets = 20e6 * 0.020 / 8 / 1200
    for flow, address in enumerate(("198.18.0.1", "198.18.0.2")):
        missing = sent[flow] - frames[address]
        assert 0 <= missing <= 60 + 2 * bdp_packets, (flow, sent[flow], frames[address])
    quic = run("-r", forward, "-Y", "quic && ip.src == 198.18.0.2", "-T", "fields", "-e", "ip.src")
    assert len(quic.splitlines()) == frames["198.18.0.2"]
    log = pd.read_parquet(pcap / "packets.parquet")
    assert set(log["flow"]) == {0, 1}
    assert (log["sequence"] == 0).all()
    reverse = log[log["direction"] == "reverse"]
    assert set(reverse["flow"]) == {1}, "only QUIC acknowledges"
