"""Packet captures and the queue log of a simulated or emulated run (see docs/capture.md).

``CaptureWriter`` turns a capture on in a native ``Simulation``, streams the queue log into
``packets.parquet`` while the run goes (the simulator writes the pcapng files itself), prints
the capture's warnings on stderr as they arise, and at the end writes ``capture.json``, which
marks the directory as a complete capture. ``write_capture`` does the same at the end of an
emulated run, whose pcapng files the emulator wrote while it ran. The directory either writes
into is a hidden partial one that the caller renames into place only once the run has
succeeded.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathweave._core import Scenario, Simulation, _CaptureSummary, _Table

CAPTURE_MARKER = "capture.json"
"""The file that marks a complete capture directory (written last)."""
PACKET_LOG = "packets.parquet"
"""The queue log's file name."""
EVENTS = ("enqueue", "drop", "dequeue")
"""The queue log's events, by the code the simulator gives them."""
DIRECTIONS = ("forward", "reverse")

PACKET_LOG_COLUMNS = (
    "time_s",
    "link",
    "direction",
    "flow",
    "subflow",
    "sequence",
    "bytes",
    "event",
    "queue_bytes",
    "queue_packets",
)
"""The queue log's columns, in order (docs/capture.md has the schema)."""


def is_capture_file(name: str) -> bool:
    """Whether ``name`` is a file a capture directory may hold."""
    return name in (CAPTURE_MARKER, PACKET_LOG) or name.endswith(".pcapng")


def _schema() -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    return pa.schema(
        [
            ("time_s", pa.float64()),
            ("link", pa.string()),
            ("direction", pa.string()),
            ("flow", pa.uint32()),
            ("subflow", pa.uint32()),
            ("sequence", pa.uint64()),
            ("bytes", pa.uint32()),
            ("event", pa.string()),
            ("queue_bytes", pa.uint64()),
            ("queue_packets", pa.uint32()),
        ]
    )


def warn(message: str) -> None:
    # A terminal that hung up cannot show the warning; that must not stop the run.
    with contextlib.suppress(OSError):
        print(f"pathweave: warning: {message}", file=sys.stderr)


class CaptureWriter:
    """Captures ``sim`` into ``directory`` (which exists and is empty)."""

    def __init__(self, sim: Simulation, scenario: Scenario, directory: Path) -> None:
        import pyarrow as pa

        self._sim = sim
        self._directory = directory
        self._events = scenario.capture_events
        names = scenario.link_names
        self._dir_link = pa.array([names[d // 2] for d in range(2 * len(names))], pa.string())
        self._dir_direction = pa.array(
            [DIRECTIONS[d % 2] for d in range(2 * len(names))], pa.string()
        )
        self._event_names = pa.array(list(EVENTS), pa.string())
        self._writer: Any = None
        sim.start_capture(directory)
        if self._events:
            import pyarrow.parquet as pq  # type: ignore[import-untyped]

            self._writer = pq.ParquetWriter(directory / PACKET_LOG, _schema())

    def chunk(self) -> None:
        """After each chunk of simulated time: write the queue log's new rows and print
        the warnings raised."""
        self._write(self._sim.take_packet_log())
        for w in self._sim.take_capture_warnings():
            warn(w)

    def _write(self, log: _Table) -> None:
        if self._writer is None:
            return
        table = _log_table(log, self._dir_link, self._dir_direction, self._event_names)
        if table is not None:
            self._writer.write_table(table)

    def finish(self) -> dict[str, Any]:
        """Close the files and write ``capture.json`` (last); returns what it holds."""
        summary = self._sim.finish_capture()
        self._write(summary["log"])
        for w in summary["warnings"]:
            warn(w)
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        return _write_marker(self._directory, summary, self._events)

    def abort(self) -> None:
        """Close what is open after a failure (the caller discards the directory)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None


def _log_table(log: _Table, dir_link: Any, dir_direction: Any, event_names: Any) -> Any:
    """The queue log's rows ``log`` (native columns, ``link_dir`` and ``event`` as codes) as a
    pyarrow table of the file's schema, or None if it has no row."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    def col(name: str) -> Any:
        column = log[name]
        assert isinstance(column, tuple)  # every queue-log column is numeric
        dtype, data = column
        return np.frombuffer(data, dtype=np.dtype(dtype))

    time_s = col("time_s")
    if len(time_s) == 0:
        return None
    link_dir = pa.array(col("link_dir"))
    event = pa.array(col("event"))
    return pa.table(
        {
            "time_s": pa.array(time_s),
            "link": pc.take(dir_link, link_dir),
            "direction": pc.take(dir_direction, link_dir),
            "flow": pa.array(col("flow")),
            "subflow": pa.array(col("subflow")),
            "sequence": pa.array(col("sequence")),
            "bytes": pa.array(col("bytes")),
            "event": pc.take(event_names, event),
            "queue_bytes": pa.array(col("queue_bytes")),
            "queue_packets": pa.array(col("queue_packets")),
        },
        schema=_schema(),
    )


def _write_marker(directory: Path, summary: _CaptureSummary, events: bool) -> dict[str, Any]:
    """Write ``capture.json`` for a finished capture's ``summary``; returns what it holds."""
    info: dict[str, Any] = {
        "files": [dict(f) for f in summary["files"]],
        "packet_log": PACKET_LOG if events else None,
        "packet_log_rows": summary["log_rows"],
        "packet_log_truncated": summary["log_truncated"],
    }
    text = json.dumps(info, indent=2)
    (directory / CAPTURE_MARKER).write_text(text + "\n", encoding="utf-8")
    return info


def write_capture(directory: Path, scenario: Scenario, summary: _CaptureSummary) -> dict[str, Any]:
    """Complete an emulated run's capture in ``directory``, whose pcapng files the emulator
    wrote: print its warnings, write the queue log (``summary["log"]``) to
    ``packets.parquet`` if ``[capture]`` asks for it, and ``capture.json`` last. Returns what
    ``capture.json`` holds."""
    import pyarrow as pa

    for w in summary["warnings"]:
        warn(w)
    events = scenario.capture_events
    if events:
        import pyarrow.parquet as pq

        names = scenario.link_names
        table = _log_table(
            summary["log"],
            pa.array([names[d // 2] for d in range(2 * len(names))], pa.string()),
            pa.array([DIRECTIONS[d % 2] for d in range(2 * len(names))], pa.string()),
            pa.array(list(EVENTS), pa.string()),
        )
        with pq.ParquetWriter(directory / PACKET_LOG, _schema()) as writer:
            if table is not None:
                writer.write_table(table)
    return _write_marker(directory, summary, events)
