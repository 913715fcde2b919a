"""Type stub for ``pathweave._core``, the native (Rust) core. Private: use ``pathweave``.

Results cross as plain containers: ``Simulation.results()`` returns a dict of tables, each a
dict from column name to column. A numeric column is a ``(dtype, data)`` tuple, ``data``
being a bytearray of the values, little-endian (``numpy.frombuffer(data, dtype)`` rebuilds
the column without copying); a string column is a ``list[str]``. Column names carry their
unit (``goodput_bps``, ``time_s``).
"""

import os
from typing import Any, Final, NotRequired, TypeAlias, TypedDict, final

__all__ = [
    "EMULATE_LOADS_CONTROLLERS",
    "KERNEL_HAS_BPF",
    "EmulationError",
    "EmulationRefused",
    "PathweaveError",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "__version__",
    "emulate",
    "emulate_check",
    "emulate_cleanup",
    "emulate_leftovers",
    "kernel_main",
    "load_scenario",
    "parse_scenario",
    "quic_main",
    "read_scenario_text",
    "toml_loads",
]

__version__: Final[str]
KERNEL_HAS_BPF: Final[bool]
"""Whether this build holds pathweave's BPF congestion controllers, which ``kernel_main``
loads (built where the BPF toolchain was present)."""

EMULATE_LOADS_CONTROLLERS: Final[bool]
"""Whether this build's emulator loads pathweave's BPF controllers for each run (built with
the BPF toolchain), rather than relying on ones loaded with ``pathweave kernel load``."""

# Stub-only names (private, so stubtest does not look for them at run time).
_NumericColumn: TypeAlias = tuple[str, bytearray]
"""``(dtype, data)``: a numpy dtype string (``"<f8"``, ``"<u8"``, ``"<u4"``) and the values."""
_Column: TypeAlias = _NumericColumn | list[str]
_Table: TypeAlias = dict[str, _Column]

class _Results(TypedDict):
    """What ``Simulation.results()`` returns."""

    scenario: str
    seed: int
    flows: _Table
    subflows: _Table
    links: _Table
    flow_series: _Table
    subflow_series: _Table
    link_series: _Table
    fairness: _Table
    stats: dict[str, int | float]

class _Series(TypedDict):
    """What ``Simulation.take_series()`` returns."""

    flow_series: _Table
    subflow_series: _Table
    link_series: _Table

class PathweaveError(Exception):
    """Base class of every error raised by pathweave."""

class _CaptureFile(TypedDict):
    name: str
    link: str
    direction: str
    packets: int
    bytes: int
    truncated: bool
    in_flight_at_end: NotRequired[int]
    """Emulated runs only: packets on the wire at the end."""

class _CaptureSummary(TypedDict):
    """What ``Simulation.finish_capture()`` (and ``emulate`` with a capture) returns."""

    files: list[_CaptureFile]
    log_rows: int
    log_truncated: bool
    log: _Table
    warnings: list[str]

class ScenarioError(PathweaveError):
    """A scenario could not be read or is invalid; ``str()`` is the full message."""

    file: str | None
    """The file (or label) the scenario came from."""
    field: str | None
    """The field's path, such as ``link[0].rate``; None for unreadable files and bad TOML."""
    value: str | None
    """The bad value as written; None unless a value was given."""
    message: str | None
    """What is wrong and what is allowed."""

class EmulationRefused(PathweaveError):
    """The scenario or the machine cannot be emulated; nothing was created."""

class EmulationError(PathweaveError):
    """An emulated run failed part-way; everything it created has been removed."""

def emulate(
    scenario: Scenario,
    seed: int | None = None,
    max_load_bps: int | None = None,
    reno_congestion: str | None = None,
    external: list[str] = ...,
    capture_dir: str | None = None,
) -> tuple[_Results, dict[str, Any], _CaptureSummary | None]:
    """Emulate in real time; returns the results, the emulator's report and, with
    ``capture_dir``, what the capture wrote there (as ``Simulation.finish_capture``, each
    file with ``in_flight_at_end``)."""

def emulate_check(
    scenario: Scenario,
    max_load_bps: int | None = None,
    reno_congestion: str | None = None,
    external: list[str] = ...,
) -> None:
    """Raise EmulationRefused if the scenario cannot be emulated."""

def emulate_cleanup() -> list[str]:
    """Remove namespaces left by killed emulations; returns their names."""

def emulate_leftovers(pid: int | None = None) -> list[str]:
    """Namespaces of emulations present now, optionally only those of process ``pid``."""

def quic_main(argv: list[str]) -> tuple[int, _Results | None]:
    """Run ``pathweave quic ARGV...`` (serve, send) and return its exit code and, for a
    completed ``send``, its tables in a run's layout; messages go to the process's standard
    output and error."""

def kernel_main(argv: list[str]) -> int:
    """Run ``pathweave kernel ARGV...`` (load, unload, status, bmc-manager, reference-reno)
    and return its exit code; messages go to the process's standard output and error."""

@final
class Scenario:
    """A validated scenario. Immutable; build one with ``load_scenario``/``parse_scenario``."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def seed(self) -> int: ...
    @property
    def sample_interval_s(self) -> float: ...
    @property
    def flow_names(self) -> list[str]: ...
    @property
    def flow_mss_bytes(self) -> list[int | None]:
        """Segment payload size per flow; None for a CBR flow."""
    @property
    def link_names(self) -> list[str]: ...
    @property
    def series_rows_per_sample(self) -> int:
        """The most time-series rows one sample adds (what ``[series]`` records)."""
    @property
    def has_capture(self) -> bool:
        """Whether the scenario has a ``[capture]`` table."""
    @property
    def capture_events(self) -> bool:
        """Whether ``[capture]`` asks for the queue log (``events = true``)."""
    @property
    def source(self) -> str: ...
    @property
    def topology(self) -> dict[str, Any] | None:
        """The generated fabric (type, parameters, hosts, switches, links, notes), or None."""
    @property
    def link_direction_rates_bps(self) -> list[int]:
        """Each link direction's rate at time zero; direction 2k is link k forward."""
    def flow_routes(self, equal_cost: bool = False) -> tuple[list[int], list[int], list[int]]:
        """The congestion-controlled flows' routes, flattened: (flow of each route, route
        starts, link directions); with ``equal_cost``, every equal-cost path of a routed flow."""
    @property
    def trace_files(self) -> list[str]:
        """The trace files its links replay, as resolved when read, sorted, each once."""

def load_scenario(path: str | os.PathLike[str], max_bytes: int | None = None) -> Scenario:
    """Read and validate a scenario file of at most ``max_bytes`` (default 4 MiB); raises
    ScenarioError."""

def read_scenario_text(path: str | os.PathLike[str], max_bytes: int | None = None) -> str:
    """The text of a scenario file: a regular file of at most ``max_bytes`` (default 4 MiB)
    of UTF-8, checked before it is read. Raises ScenarioError naming the file otherwise."""

def parse_scenario(
    text: str, label: str = "<string>", base_dir: str | os.PathLike[str] | None = None
) -> Scenario:
    """Validate scenario text; ``label`` names it in error messages; relative trace paths are
    resolved against ``base_dir`` (default: the current directory). Raises ScenarioError."""

def toml_loads(text: str, label: str = "<string>") -> dict[str, Any]:
    """TOML text as dicts, lists, str, int, float and bool, read by the simulator's own
    parser (TOML 1.1: multi-line inline tables allowed). Raises ScenarioError."""

@final
class Simulation:
    """One run of a scenario, advanced in steps with the interpreter released."""

    def __new__(cls, scenario: Scenario, seed: int | None = None) -> Simulation: ...
    def advance(self, until_s: float) -> None:
        """Run to simulated time ``until_s`` (capped at the end; earlier times do nothing)."""
    @property
    def now_s(self) -> float: ...
    @property
    def end_s(self) -> float: ...
    @property
    def finished(self) -> bool: ...
    @property
    def events(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def scenario(self) -> Scenario: ...
    def results(self) -> _Results:
        """Results at the current time: the tables ``flows``, ``subflows``, ``links``,
        ``flow_series``, ``subflow_series``, ``link_series`` and ``fairness``, plus
        ``scenario``, ``seed`` and ``stats``. The series hold the columns the scenario's
        ``[series]`` records, and the rows sampled since the last ``take_series()``."""
    def take_series(self) -> _Series:
        """Move out the time series sampled since the start or the previous call; later
        ``results()`` hold only rows sampled after it."""
    def start_capture(self, directory: str | os.PathLike[str]) -> None:
        """Capture the run into ``directory`` (which exists) as ``[capture]`` asks."""
    def take_packet_log(self) -> _Table:
        """Move out the queue log's rows recorded since the last call."""
    def take_capture_warnings(self) -> list[str]:
        """The capture's warnings since the last call."""
    def finish_capture(self) -> _CaptureSummary:
        """End the capture and close its files."""
    def check_conservation(self) -> None:
        """Raise PathweaveError if some packet is unaccounted for."""
