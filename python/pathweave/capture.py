"""Packet captures and the queue log of a simulated run (see docs/capture.md).

``CaptureWriter`` turns a capture on in a native ``Simulation``, streams the queue log into
``packets.parquet`` while the run goes (the simulator writes the pcapng files itself), prints
the capture's warnings on stderr as they arise, and at the end writes ``capture.json``, which
marks the directory as a complete capture. The directory it writes into is a hidden partial
one that the caller renames into place only once the run has succeeded.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathweave._core import Scenario, Simulation, _Table

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
            return
        link_dir = pa.array(col("link_dir"))
        event = pa.array(col("event"))
        table = pa.table(
            {
                "time_s": pa.array(time_s),
                "link": pc.take(self._dir_link, link_dir),
                "direction": pc.take(self._dir_direction, link_dir),
                "flow": pa.array(col("flow")),
                "subflow": pa.array(col("subflow")),
                "sequence": pa.array(col("sequence")),
                "bytes": pa.array(col("bytes")),
                "event": pc.take(self._event_names, event),
                "queue_bytes": pa.array(col("queue_bytes")),
                "queue_packets": pa.array(col("queue_packets")),
            },
            schema=_schema(),
        )
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
        info: dict[str, Any] = {
            "files": [dict(f) for f in summary["files"]],
            "packet_log": PACKET_LOG if self._events else None,
            "packet_log_rows": summary["log_rows"],
            "packet_log_truncated": summary["log_truncated"],
        }
        text = json.dumps(info, indent=2)
        (self._directory / CAPTURE_MARKER).write_text(text + "\n", encoding="utf-8")
        return info

    def abort(self) -> None:
        """Close what is open after a failure (the caller discards the directory)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
