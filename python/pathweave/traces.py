"""Synthetic link-capacity traces in Mahimahi's format, and the traces shipped with pathweave.

A trace file holds one integer per line: a time in milliseconds, non-decreasing, at which one
delivery opportunity for one 1500-byte packet occurs (a time repeated k times is k
opportunities in that millisecond). The trace repeats when it ends; its period is its last
time, which must be above 0. This is the format of Mahimahi's ``mm-link`` (its ``traces/README``
and ``src/frontend/link_queue.cc``), so recorded cellular traces and these synthetic ones are
interchangeable. Mahimahi's ``mm-link`` counts each opportunity as 1504 bytes (a 1500-byte IP
packet and the 4-byte header of its TUN device); rates here count the 1500-byte IP packet.

The generator is a fit to summary statistics, not a replay of any recording. Its capacity is a
Markov-modulated process:

* a continuous-time Markov chain over a few capacity states (for LTE: outage, low, medium,
  high), each with a rate and an exponentially distributed holding time; on leaving state
  ``i`` the chain moves to ``j`` with probability ``jumps[i][j]``;
* within a state, a multiplicative variation ``exp(X)``: ``X`` is a Gaussian AR(1) process
  sampled every ``block_ms`` milliseconds, with standard deviation ``sigma``, correlation
  time ``corr_ms`` and mean ``-sigma**2 / 2``, so that ``E[exp(X)] = 1`` and the variation
  leaves the mean unchanged;
* the chain and the variation start in their stationary distributions, so the expected
  capacity is the same at every instant: ``sum_i pi_i * rate_i``, with ``pi`` the stationary
  distribution of the chain (``Model.mean_mbps``).

Capacity becomes opportunities through a fractional credit: millisecond ``k`` adds
``c(k) * 1 ms / (1500 * 8 bit)`` packets of credit, and each whole packet of credit is one
opportunity, stamped at the end of that millisecond (time ``k + 1``). The credit starts at a
uniformly drawn phase, so the expected number of opportunities in a millisecond is exactly
its expected capacity divided by the packet size. A credit adds no randomness of its own: the
variation comes from the capacity process alone (a Poisson draw per millisecond would add
shot noise at the 1 ms scale that no state of the model explains). The last millisecond of a
trace always carries at least one opportunity (one is added if the credit gave none), so the
period is exactly the requested length.

Credit is kept in integer units of 2**-20 packet, so the result does not depend on the
rounding of floating-point sums. Randomness comes from numpy's ``Generator`` with ``PCG64``,
seeded with the given seed; the same arguments give byte-identical output with the same numpy
release (numpy keeps ``Generator`` streams stable across releases in practice, not by
promise; ``tests/test_traces.py`` checks the shipped traces against the installed numpy).

Sources of the parameters, numbers only (``docs/traces.md`` has the full list):

* K. Winstein, A. Sivaraman, H. Balakrishnan, "Stochastic Forecasts Achieve High Throughput
  and Low Delay over Cellular Networks", USENIX NSDI 2013 (Sprout): the LTE and 3G traces
  Mahimahi ships were recorded for it. Read from Mahimahi's ``Verizon-LTE-short.down``
  (140 s): about 5 Mbit/s on average, stretches of several seconds near 10-12 Mbit/s, and
  gaps of 10-60 ms without any opportunity.
* OpenSignal, "State of Mobile Networks: USA" (February 2016): average US 4G download
  9.9 Mbit/s; (August 2016): T-Mobile 16.3 and Verizon 15.9 Mbit/s average LTE download.
* OpenSignal, "The State of Wifi vs Mobile Network Experience as 5G Arrives" (November
  2018): average smartphone Wi-Fi downloads by country, e.g. Australia 21.6 Mbit/s and
  Singapore 72.8 Mbit/s; in the USA Wi-Fi averaged 25 Mbit/s more than mobile.
* J. Sommers, P. Barford, "Cell vs. WiFi: On the Performance of Metro Area Mobile
  Connections", ACM IMC 2012: Wi-Fi gave higher and more consistent throughput than cellular
  access.
* Novarum, cellular data measurements in North American cities (2008): 3G downlink averages
  of 473-559 kbit/s across AT&T, Sprint and Verizon, none above 1000 kbit/s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "BYTES_PER_OPPORTUNITY",
    "MAX_MEAN_MBPS",
    "MAX_OPPORTUNITIES",
    "MAX_SECONDS",
    "MODELS",
    "PERCENTILES",
    "SHIPPED",
    "CapacityState",
    "Model",
    "ShippedTrace",
    "TraceError",
    "TraceStats",
    "format_trace",
    "parse_trace",
    "read_trace",
    "shipped_path",
    "synthesize",
    "synthesize_bytes",
    "trace_stats",
    "traces_dir",
    "write_trace",
]

BYTES_PER_OPPORTUNITY: Final = 1500
"""Bytes one opportunity carries: one MTU-sized IP packet (Mahimahi's ``traces/README``)."""

MAX_SECONDS: Final = 3600.0
"""The longest trace ``synthesize`` makes, in seconds."""

MAX_MEAN_MBPS: Final = 1000.0
"""The highest mean rate ``synthesize`` accepts, in Mbit/s."""

MAX_OPPORTUNITIES: Final = 30_000_000
"""The most opportunities (lines) a synthesized trace may be expected to hold."""

_BITS_PER_OPPORTUNITY = BYTES_PER_OPPORTUNITY * 8
# Credit is counted in integer units of 2**-20 packet (see the module's docstring).
_CREDIT_UNIT = 1 << 20
# Larger values are refused when a trace is read: ~31,700 years in milliseconds.
_MAX_TIMESTAMP_DIGITS = 15


class TraceError(ValueError):
    """A bad trace file or bad generator arguments; ``str()`` says what and where, in one
    line (``FILE:LINE: ...`` for a file)."""


@dataclass(frozen=True)
class CapacityState:
    """One state of a model's Markov chain."""

    name: str
    rate_mbps: float
    """Capacity in the state, before the within-state variation (whose mean is 1)."""
    mean_hold_s: float
    """Mean of the exponential holding time; ``math.inf`` for a model of one state."""


@dataclass(frozen=True)
class Model:
    """A Markov-modulated capacity model (see the module's docstring)."""

    name: str
    description: str
    states: tuple[CapacityState, ...]
    jumps: tuple[tuple[float, ...], ...]
    """``jumps[i][j]``: probability that the chain moves to ``j`` when it leaves ``i``
    (zero diagonal, rows summing to 1; ``((1.0,),)`` for a model of one state)."""
    sigma: float
    """Standard deviation of the log of the within-state variation (0: none)."""
    corr_ms: float
    """Correlation time of the within-state variation, in milliseconds."""
    block_ms: int = 10
    """The within-state variation is constant over blocks of this many milliseconds."""

    def __post_init__(self) -> None:
        n = len(self.states)
        if n == 0 or len(self.jumps) != n or any(len(row) != n for row in self.jumps):
            raise ValueError(f"model {self.name}: jumps must be a square matrix over the states")
        for i, row in enumerate(self.jumps):
            if abs(sum(row) - 1.0) > 1e-9 or min(row) < 0 or (n > 1 and row[i] != 0):
                raise ValueError(f"model {self.name}: row {i} of jumps is not a distribution")
        if n > 1 and not all(0 < s.mean_hold_s < math.inf for s in self.states):
            raise ValueError(f"model {self.name}: holding times must be positive and finite")
        if any(s.rate_mbps < 0 for s in self.states) or self.sigma < 0 or self.block_ms < 1:
            raise ValueError(f"model {self.name}: negative rate, sigma or block")

    def stationary(self) -> tuple[float, ...]:
        """The share of time the chain spends in each state in the long run.

        With ``nu`` the stationary distribution of the jump chain (``nu = nu @ jumps``), the
        share of state ``i`` is proportional to ``nu_i * mean_hold_i``."""
        n = len(self.states)
        if n == 1:
            return (1.0,)
        p = np.array(self.jumps, dtype=np.float64)
        # Solve nu (P - I) = 0 with sum(nu) = 1: replace one equation by the normalisation.
        a = (p - np.eye(n)).T
        a[-1, :] = 1.0
        b = np.zeros(n)
        b[-1] = 1.0
        nu = np.linalg.solve(a, b)
        share = nu * np.array([s.mean_hold_s for s in self.states])
        return tuple(float(x) for x in share / share.sum())

    def mean_mbps(self) -> float:
        """The stationary mean capacity, in Mbit/s: ``sum_i pi_i * rate_i``."""
        return float(
            sum(p * s.rate_mbps for p, s in zip(self.stationary(), self.states, strict=True))
        )

    def scaled(self, mean_mbps: float) -> Model:
        """The same model with every rate multiplied so that its mean is ``mean_mbps``."""
        factor = mean_mbps / self.mean_mbps()
        states = tuple(
            CapacityState(s.name, s.rate_mbps * factor, s.mean_hold_s) for s in self.states
        )
        return dataclasses.replace(self, states=states)


def _model(
    name: str,
    description: str,
    states: Sequence[tuple[str, float, float]],
    jumps: Sequence[Sequence[float]],
    sigma: float,
    corr_ms: float,
) -> Model:
    return Model(
        name,
        description,
        tuple(CapacityState(*s) for s in states),
        tuple(tuple(row) for row in jumps),
        sigma,
        corr_ms,
    )


# The parameters are chosen, not estimated: each model's stationary mean sits in the range of
# the sources above, its outages and within-state variation at the time scales the Sprout
# traces show (gaps of tens of milliseconds, rate changes within 10-100 ms, states lasting
# seconds). docs/traces.md gives each model's mean and time in each state.
MODELS: Final[dict[str, Model]] = {
    m.name: m
    for m in (
        _model(
            "lte",
            "LTE downlink in a moving car: seconds-long states, frequent short outages",
            # (state, Mbit/s, mean holding time in s)
            [("outage", 0.0, 0.2), ("low", 3.0, 1.0), ("medium", 9.0, 2.0), ("high", 18.0, 1.5)],
            [
                [0.0, 0.70, 0.30, 0.00],
                [0.30, 0.0, 0.60, 0.10],
                [0.10, 0.45, 0.0, 0.45],
                [0.05, 0.15, 0.80, 0.0],
            ],
            sigma=0.45,
            corr_ms=40.0,
        ),
        _model(
            "lte-walk",
            "LTE downlink for a pedestrian: longer states, rare short outages",
            [("outage", 0.0, 0.15), ("low", 3.0, 3.0), ("medium", 9.0, 5.0), ("high", 18.0, 4.0)],
            [
                [0.0, 0.60, 0.40, 0.00],
                [0.05, 0.0, 0.85, 0.10],
                [0.02, 0.40, 0.0, 0.58],
                [0.01, 0.09, 0.90, 0.0],
            ],
            sigma=0.35,
            corr_ms=60.0,
        ),
        _model(
            "wifi",
            "802.11n/ac Wi-Fi in a shared office: contention levels, brief interference fades",
            [
                ("fade", 1.0, 0.05),
                ("congested", 8.0, 0.8),
                ("busy", 20.0, 1.5),
                ("idle", 35.0, 2.5),
            ],
            [
                [0.0, 0.20, 0.50, 0.30],
                [0.10, 0.0, 0.80, 0.10],
                [0.10, 0.30, 0.0, 0.60],
                [0.15, 0.05, 0.80, 0.0],
            ],
            sigma=0.25,
            corr_ms=20.0,
        ),
        _model(
            "3g",
            "3G (HSPA/EV-DO) downlink while moving: sub-Mbit/s rates, outages",
            [("outage", 0.0, 0.5), ("low", 0.25, 2.0), ("medium", 0.6, 3.0), ("high", 1.0, 2.0)],
            [
                [0.0, 0.70, 0.30, 0.00],
                [0.15, 0.0, 0.75, 0.10],
                [0.05, 0.45, 0.0, 0.50],
                [0.02, 0.18, 0.80, 0.0],
            ],
            sigma=0.35,
            corr_ms=80.0,
        ),
        _model(
            "constant",
            "a constant rate (default 12 Mbit/s: one opportunity per millisecond)",
            [("constant", 12.0, math.inf)],
            [[1.0]],
            sigma=0.0,
            corr_ms=0.0,
        ),
    )
}
"""The models by name."""


@dataclass(frozen=True)
class ShippedTrace:
    """A trace file shipped with pathweave, and the arguments that made it."""

    name: str
    """The file's name in ``traces_dir()``."""
    model: str
    seconds: float
    seed: int
    mean_mbps: float | None
    description: str


SHIPPED: Final[tuple[ShippedTrace, ...]] = (
    ShippedTrace("lte-drive.trace", "lte", 120, 1, None, "LTE downlink while driving (model lte)"),
    ShippedTrace(
        "lte-walk.trace", "lte-walk", 120, 2, None, "LTE downlink while walking (model lte-walk)"
    ),
    ShippedTrace("wifi-office.trace", "wifi", 60, 3, None, "Wi-Fi in a shared office (model wifi)"),
)
"""The shipped traces; regenerating each with its arguments gives the file byte for byte."""


def traces_dir() -> Path:
    """The directory of the shipped traces (``traces/`` at the repository's root links here)."""
    return Path(__file__).resolve().parent / "traces"


def shipped_path(trace: ShippedTrace) -> Path:
    """The file of a shipped trace."""
    return traces_dir() / trace.name


def _check_args(model: str | Model, seconds: float, mean_mbps: float | None) -> Model:
    if isinstance(model, str):
        if model not in MODELS:
            raise TraceError(f"unknown model {model!r}; the models are: {', '.join(MODELS)}")
        model = MODELS[model]
    if not 0 < seconds <= MAX_SECONDS:
        raise TraceError(f"seconds must be above 0 and at most {MAX_SECONDS:g}: {seconds}")
    if round(seconds * 1000) < 1:
        raise TraceError(f"seconds must be at least 0.001 (one millisecond): {seconds}")
    if model.mean_mbps() <= 0:
        raise TraceError(f"model {model.name} has a mean rate of 0")
    if mean_mbps is not None:
        if not 0 < mean_mbps <= MAX_MEAN_MBPS:
            raise TraceError(
                f"the mean rate must be above 0 and at most {MAX_MEAN_MBPS:g} Mbit/s: {mean_mbps}"
            )
        model = model.scaled(mean_mbps)
    expected = model.mean_mbps() * 1e6 * seconds / _BITS_PER_OPPORTUNITY
    if expected > MAX_OPPORTUNITIES:
        raise TraceError(
            f"{seconds:g} s at {model.mean_mbps():g} Mbit/s is about {expected:,.0f} "
            f"opportunities, more than {MAX_OPPORTUNITIES:,}: shorten the trace or lower the rate"
        )
    return model


def synthesize(
    model: str | Model, seconds: float, seed: int, mean_mbps: float | None = None
) -> npt.NDArray[np.int64]:
    """The opportunity times (ms, non-decreasing, last = the length) of a synthetic trace.

    ``model`` is a name from ``MODELS`` or a ``Model``; ``seconds`` (above 0, at most
    ``MAX_SECONDS``) is rounded to the millisecond; ``mean_mbps`` scales every rate of the
    model so that its stationary mean is that many Mbit/s. Raises ``TraceError`` for bad
    arguments."""
    chosen = _check_args(model, seconds, mean_mbps)
    if not 0 <= seed < 2**63:
        raise TraceError(f"the seed must be from 0 to 2**63 - 1: {seed}")
    total_ms = round(seconds * 1000)
    chain_seed, noise_seed, phase_seed = np.random.SeedSequence(seed).spawn(3)
    rates = np.array([s.rate_mbps for s in chosen.states])[_states(chosen, total_ms, chain_seed)]
    capacity = rates * _variation(chosen, total_ms, noise_seed)
    # Packets of credit per millisecond: Mbit/s * 1e6 bit/s * 1e-3 s / bits per packet.
    credit = np.rint(capacity * (1e3 / _BITS_PER_OPPORTUNITY) * _CREDIT_UNIT).astype(np.int64)
    phase = int(np.random.Generator(np.random.PCG64(phase_seed)).integers(_CREDIT_UNIT))
    whole = (phase + np.cumsum(credit)) // _CREDIT_UNIT
    counts = np.diff(whole, prepend=0)
    if counts[-1] == 0:
        counts[-1] = 1  # the period is the last time: end the trace at its length
    return np.repeat(np.arange(1, total_ms + 1, dtype=np.int64), counts)


def _states(model: Model, total_ms: int, seed: np.random.SeedSequence) -> npt.NDArray[np.intp]:
    """The chain's state in each millisecond (sampled at its midpoint)."""
    n = len(model.states)
    if n == 1:
        return np.zeros(total_ms, dtype=np.intp)
    rng = np.random.Generator(np.random.PCG64(seed))
    cumulative = [np.cumsum(row) for row in model.jumps]
    state = int(np.searchsorted(np.cumsum(model.stationary()), rng.random(), side="right"))
    state = min(state, n - 1)
    visited = [state]
    ends = []  # the time (ms) each visit ends
    t = 0.0
    while True:
        # Memoryless holding times: the first visit's rest is distributed as a whole one.
        t += rng.exponential(model.states[state].mean_hold_s * 1000.0)
        ends.append(t)
        if t >= total_ms:
            break
        state = min(int(np.searchsorted(cumulative[state], rng.random(), side="right")), n - 1)
        visited.append(state)
    midpoints = np.arange(total_ms, dtype=np.float64) + 0.5
    return np.array(visited, dtype=np.intp)[np.searchsorted(ends, midpoints, side="right")]


def _variation(
    model: Model, total_ms: int, seed: np.random.SeedSequence
) -> npt.NDArray[np.float64]:
    """The within-state variation ``exp(X)`` in each millisecond (mean 1)."""
    if model.sigma == 0:
        return np.ones(total_ms)
    rng = np.random.Generator(np.random.PCG64(seed))
    blocks = -(-total_ms // model.block_ms)
    rho = math.exp(-model.block_ms / model.corr_ms) if model.corr_ms > 0 else 0.0
    innovation = model.sigma * math.sqrt(1.0 - rho * rho)
    z = rng.standard_normal(blocks).tolist()
    x = [0.0] * blocks
    prev = model.sigma * z[0]  # deviation from the mean, started in the stationary law
    x[0] = prev
    for k in range(1, blocks):
        prev = rho * prev + innovation * z[k]
        x[k] = prev
    factor = np.exp(np.array(x) - model.sigma**2 / 2.0)
    return np.repeat(factor, model.block_ms)[:total_ms]


def format_trace(times: npt.NDArray[np.int64]) -> bytes:
    """The Mahimahi file of the opportunity times ``times`` (one per line)."""
    ms, counts = np.unique(times, return_counts=True)
    return "".join(f"{t}\n" * c for t, c in zip(ms.tolist(), counts.tolist(), strict=True)).encode(
        "ascii"
    )


def synthesize_bytes(
    model: str | Model, seconds: float, seed: int, mean_mbps: float | None = None
) -> bytes:
    """``format_trace(synthesize(...))``: the file's bytes."""
    return format_trace(synthesize(model, seconds, seed, mean_mbps))


def write_trace(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: into a temporary file beside it, then renamed over
    it, so that ``path`` is either as it was or complete. The temporary file is removed on
    any failure (and on KeyboardInterrupt)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _line_lengths(text: bytes) -> npt.NDArray[np.intp]:
    """The length of each line of ``text`` (LF line ends; a final one is optional)."""
    ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord("\n"))
    if not text.endswith(b"\n"):
        ends = np.append(ends, len(text))
    return np.diff(ends, prepend=-1) - 1


def parse_trace(data: bytes, name: str = "<trace>") -> npt.NDArray[np.int64]:
    """The opportunity times of a Mahimahi trace, checked: at least one line, each a
    non-negative integer (ASCII digits; a final newline and CRLF line ends are accepted),
    non-decreasing, the last above 0. Raises ``TraceError`` naming ``name`` and the line."""
    if not data:
        raise TraceError(f"{name}: empty file: a trace needs at least one line")
    text = data.replace(b"\r\n", b"\n")
    lengths = _line_lengths(text)
    if (
        text.translate(None, b"0123456789\n")
        or lengths.min() < 1
        or lengths.max() > _MAX_TIMESTAMP_DIGITS
    ):
        _raise_first_bad_line(data, name)
    # Lines of 1-15 ASCII digits, which numpy's text reader parses.
    times = np.fromstring(text, dtype=np.int64, sep="\n")
    if len(times) != len(lengths):
        _raise_first_bad_line(data, name)
    drops = np.flatnonzero(np.diff(times) < 0)
    if drops.size:
        i = int(drops[0]) + 1
        raise TraceError(
            f"{name}:{i + 1}: {times[i]} is less than the line before ({times[i - 1]}): "
            "times must not decrease"
        )
    if times[-1] == 0:
        raise TraceError(
            f"{name}:{len(times)}: the last time is 0: a trace must last more than 0 ms"
        )
    return times


def _raise_first_bad_line(data: bytes, name: str) -> None:
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix(b"\r")
        if number == len(lines) and line == b"" and number > 1:
            break  # the final newline
        if line == b"":
            raise TraceError(f"{name}:{number}: empty line: every line must hold one time")
        if not line.isdigit() or not line.isascii():
            shown = line[:40].decode("utf-8", "replace")
            raise TraceError(
                f"{name}:{number}: {shown!r} is not a time: each line must be one "
                "non-negative integer (milliseconds)"
            )
        if len(line) > _MAX_TIMESTAMP_DIGITS:
            raise TraceError(
                f"{name}:{number}: {line[:40].decode()} is too large (at most "
                f"{_MAX_TIMESTAMP_DIGITS} digits)"
            )
    raise TraceError(f"{name}: not a Mahimahi trace")  # not reached: some line is bad


def read_trace(path: str | os.PathLike[str]) -> npt.NDArray[np.int64]:
    """``parse_trace`` of the file at ``path``; an unreadable file is a ``TraceError`` too."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None
    return parse_trace(data, str(path))


@dataclass(frozen=True)
class TraceStats:
    """What a trace offers, with rates in Mbit/s of 1500-byte packets."""

    opportunities: int
    period_ms: int
    mean_mbps: float
    """Over the whole period: opportunities * 1500 B * 8 / period."""
    window_ms: int
    percentiles: dict[int, float]
    """Capacity per window, at the 5th, 25th, 50th, 75th and 95th percentiles."""
    min_mbps: float
    max_mbps: float
    zero_windows: float
    """Share of windows without any opportunity."""


PERCENTILES: Final = (5, 25, 50, 75, 95)


def trace_stats(times: npt.NDArray[np.int64], window_ms: int = 100) -> TraceStats:
    """Capacity statistics of a checked trace, per window of ``window_ms`` ms over one
    period. Times are taken modulo the period (a time equal to the period is the start of
    the next repetition); a shorter last window counts by its own length."""
    period = int(times[-1])
    phase = times % period
    windows = -(-period // window_ms)
    counts = np.bincount(phase // window_ms, minlength=windows).astype(np.float64)
    lengths = np.full(windows, float(window_ms))
    lengths[-1] = period - (windows - 1) * window_ms
    mbps = counts * _BITS_PER_OPPORTUNITY / (lengths * 1e3)
    return TraceStats(
        opportunities=len(times),
        period_ms=period,
        mean_mbps=len(times) * _BITS_PER_OPPORTUNITY / (period * 1e3),
        window_ms=window_ms,
        percentiles={p: float(np.percentile(mbps, p)) for p in PERCENTILES},
        min_mbps=float(mbps.min()),
        max_mbps=float(mbps.max()),
        zero_windows=float(np.mean(counts == 0)),
    )
