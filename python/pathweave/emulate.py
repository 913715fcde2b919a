"""Emulation: a scenario over real Linux TCP and MPTCP, with links emulated in real time.

``emulate(scenario)`` takes the same scenario as :func:`pathweave.run`, but every flow is a
kernel socket in a network namespace of its own and every link is the simulator's own link,
queue and loss code driven by the monotonic clock (crate ``pathweave-emu``). It returns an
:class:`EmulatedResult`: the same tables as a simulation, plus ``emulation``, the emulator's
account of its own timing (release lateness percentiles), its drops and, for sized transfers,
the byte-for-byte check of what arrived. Runs take real time: a 20 s scenario takes 20 s.

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), ``/dev/net/tun``, iproute2 and, for multipath
flows, MPTCP (``net.mptcp.enabled = 1``); otherwise ``EmulationRefused`` says what is missing.

Everything a run makes lives only as long as the process that runs it: its network namespaces
are held by the process's file descriptors and threads, not mounted under ``/run/netns``, so
they go (and their TUN devices with them) however the process ends, SIGTERM and SIGKILL
included; its private BPF controllers unregister, and its ``ip`` child processes die with it.
For debugging, ``PATHWEAVE_NAME_NAMESPACES=1`` in the environment also names the namespaces
under ``/run/netns`` while the run lasts (for ``ip netns exec``); the names of a run killed
outright then stay until ``pathweave emulate --cleanup``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from pathweave import _core
from pathweave._core import Scenario
from pathweave.api import Format, Result, _output_directories, load
from pathweave.capture import write_capture

__all__ = ["EmulatedResult", "check", "cleanup", "emulate", "leftovers"]


class EmulatedResult(Result):
    """The results of an emulated run: the tables of :class:`Result`, plus ``emulation``."""

    def __init__(
        self, scenario: Scenario, raw: Any, report: dict[str, Any], wall_time_s: float
    ) -> None:
        super().__init__(scenario, raw, wall_time_s)
        self.emulation: dict[str, Any] = report
        """Timing and drops of the emulator: ``lateness`` (ms percentiles of release time
        minus planned time), ``intake_wait`` (ms percentiles of the longest a packet can have
        waited in its TUN device before the emulator read it), ``lateness_limit_ms``,
        ``emulator_drops``, ``device_drops``, ``reliable`` and ``unreliable_because``,
        ``kernel_algorithms``, ``kernel_arithmetic`` (per flow, ``"linux"`` where a
        pathweave BPF controller ran it, whatever the scenario's ``arithmetic``: the
        controllers have only Linux's), ``transfers``, ``link_thread_cpu_s`` (CPU time of the
        thread that runs the links, user and kernel), ``packets_read``, ``namespaces`` (the names
        of those the run made) and ``namespaces_left`` (those of them still named under
        ``/run/netns`` after its end: with ``PATHWEAVE_NAME_NAMESPACES=1``, a name that could
        not be removed, also warned about on stderr; ``pathweave emulate --cleanup`` removes
        them once this process has ended; always empty without that option)."""

    @property
    def reliable(self) -> bool:
        """Whether the emulator kept to its schedule (p99 lateness and p99 intake wait within
        a tenth of the smallest link delay, no packet dropped for falling behind)."""
        return bool(self.emulation["reliable"])

    def manifest(self, format: Format = "parquet") -> dict[str, Any]:
        m = super().manifest(format)
        m["engine"] = "emulate"
        m["emulation"] = self.emulation
        return m


def emulate(
    scenario: str | os.PathLike[str] | Scenario,
    seed: int | None = None,
    *,
    max_load_bps: int | None = None,
    reno_congestion: str | None = None,
    external: Sequence[str] = (),
    out: str | os.PathLike[str] | None = None,
    format: Format = "parquet",
    plot: bool = False,
    pcap: str | os.PathLike[str] | None = None,
) -> EmulatedResult:
    """Emulate ``scenario`` in real time over the kernel's TCP and MPTCP.

    ``seed`` overrides the scenario's seed (the links' random loss and RED streams).
    ``max_load_bps`` raises or lowers the real-time load limit (default 1 Gbit/s).
    ``reno_congestion`` names a registered kernel congestion control (``cubic``, ``bbr``, …)
    to run what the scenario runs as Reno: single-path Reno flows and uncoupled subflows.
    ``external`` names flows whose applications run outside the emulator: their namespaces,
    routes and links are built and named under ``/run/netns``, one line on stderr per flow
    says where (``pathweave: external flow NAME: sender NS ADDR,… receiver NS ADDR``), and
    nothing is started in them; what still runs there at the end is stopped (docs/emulation.md).
    Raises ``EmulationRefused`` (nothing created) or ``EmulationError`` (run failed, all
    removed); Ctrl-C stops the run, removes what it made and raises KeyboardInterrupt. A signal
    that ends the process (SIGTERM without a handler, SIGKILL) leaves nothing either: the
    namespaces, devices, controllers and child processes go with the process.

    With ``out``, the results are written to that directory as ``Result.write`` writes them
    (in ``format``, with ``run.png`` if ``plot``), atomically, once the run has ended. With
    ``pcap``, the packets the links carry are captured into that directory (docs/capture.md):
    the raw IP packets the kernels sent, one pcapng file per captured link direction, and with
    ``[capture] events = true`` the queue log ``packets.parquet``; without ``pcap``, a
    scenario with ``[capture]`` run with ``out`` is captured into ``out/capture``. As for
    :func:`pathweave.run`, each directory appears only once the run is complete and must be
    absent, empty or hold earlier results (a capture); both are checked before anything is
    built.
    """
    if not isinstance(scenario, Scenario):
        scenario = load(scenario)
    if out is not None and format not in ("parquet", "csv"):
        raise ValueError(f"format must be 'parquet' or 'csv', not {format!r}")
    with ExitStack() as stack:
        tmp, capture_dir = _output_directories(stack, scenario, out, pcap)
        start = time.perf_counter()
        raw, report, capture = _core.emulate(
            scenario,
            seed,
            max_load_bps,
            reno_congestion,
            list(external),
            None if capture_dir is None else str(capture_dir),
        )
        wall = time.perf_counter() - start
        result = EmulatedResult(scenario, raw, _complete(report), wall)
        if capture is not None and capture_dir is not None:
            result.capture = write_capture(capture_dir, scenario, capture)
        if tmp is not None:
            result._write_files(tmp, format, plot=plot, series=True)
    return result


def _complete(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with what the run's record adds: ``namespaces_left``, the run's namespaces
    still named under ``/run/netns`` now that it has returned (the emulator warned about each
    on stderr), and
    ``kernel_arithmetic``, the arithmetic each flow's kernel controller ran."""
    mine = set(report.get("namespaces", []))
    report["namespaces_left"] = [n for n in leftovers(os.getpid()) if n in mine]
    prefix = report.get("controllers_prefix", "")
    report["kernel_arithmetic"] = [
        "linux" if prefix and cc.startswith(prefix + "_") else ""
        for cc in report.get("kernel_algorithms", [])
    ]
    return report


def check(
    scenario: Scenario,
    max_load_bps: int | None = None,
    reno_congestion: str | None = None,
    external: Sequence[str] = (),
) -> None:
    """Raise ``EmulationRefused`` if ``scenario`` cannot be emulated (too large, an algorithm
    the kernel lacks, a TCP setting the kernel cannot run as written, a ``reno_congestion``
    the kernel has not registered); checks the scenario only, not the machine."""
    _core.emulate_check(scenario, max_load_bps, reno_congestion, list(external))


def cleanup() -> list[str]:
    """Remove the namespaces that killed emulations left mounted under ``/run/netns`` with the
    ``pwemu-`` prefix: runs that named theirs (``PATHWEAVE_NAME_NAMESPACES=1``) or earlier
    versions, which named them all. A running emulation's are kept (its process id is in their
    names). Returns their names."""
    return list(_core.emulate_cleanup())


def leftovers(pid: int | None = None) -> list[str]:
    """Namespaces of emulations present now.

    Without ``pid``: those mounted under ``/run/netns`` with the ``pwemu-`` prefix (see
    :func:`cleanup`), by name. With ``pid``: those of them process ``pid`` made, by name, then
    the network namespaces the live process ``pid`` holds besides its own and the initial one
    (a run's, while it lasts), each once as a path, ``/proc/<pid>/fd/<n>`` (or
    ``/proc/<pid>/task/<tid>/ns/net`` for one only a thread is in), for ``nsenter --net=PATH``.
    A name works with ``ip netns exec NAME``. Empty for a process that has ended and named
    nothing."""
    return list(_core.emulate_leftovers(pid))
