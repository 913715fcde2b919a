"""The ``pathweave`` command.

* ``pathweave run FILE [--out DIR] [--seed N] [--format parquet|csv] [--plot] [--quiet]``
* ``pathweave validate FILE``
* ``pathweave --version``

Exit codes: 0 success, 1 a failure while running or writing, 2 bad input (a bad scenario or
bad arguments), 130 interrupted. A bad scenario is reported on stderr in one message, with no
traceback, before anything is created.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pathweave import _core
from pathweave._core import PathweaveError, Scenario, ScenarioError
from pathweave.api import Result, check_output_directory, load, run

__all__ = ["main"]

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# Flow rows shown in the summary; the files hold them all.
_MAX_FLOW_ROWS = 40
# Link directions shown as "busiest links".
_MAX_LINK_ROWS = 6


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.command(args)
    except KeyboardInterrupt:
        _error("interrupted; nothing was written")
        return EXIT_INTERRUPTED
    except PathweaveError as e:
        # A bad scenario is reported where it is loaded; this is the simulator failing.
        _error(str(e))
        return EXIT_FAILURE
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pathweave",
        description="Simulate multipath congestion control scenarios.",
    )
    parser.add_argument("--version", action="version", version=f"pathweave {_core.__version__}")
    sub = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    run_p = sub.add_parser(
        "run",
        help="run a scenario and write its results",
        description="Run a scenario file, print a summary and write the results.",
    )
    run_p.add_argument("file", type=Path, metavar="FILE", help="scenario file (TOML)")
    run_p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: results/<scenario name>); replaced if it exists",
    )
    run_p.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")
    run_p.add_argument(
        "--format",
        choices=("parquet", "csv"),
        default="parquet",
        help="table file format (default: parquet)",
    )
    run_p.add_argument("--plot", action="store_true", help="also draw run.png in the output")
    run_p.add_argument(
        "--quiet",
        action="store_true",
        help="print neither the progress bar nor the summary, only errors",
    )
    run_p.set_defaults(command=_run)

    val_p = sub.add_parser(
        "validate",
        help="check a scenario file without running it",
        description="Check a scenario file; exit 0 if valid, 2 if not.",
    )
    val_p.add_argument("file", type=Path, metavar="FILE", help="scenario file (TOML)")
    val_p.set_defaults(command=_validate)
    return parser


def _seed(text: str) -> int:
    """argparse type for --seed: an integer from 0 to 2**64 - 1."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be from 0 to 2**64 - 1: {text}")
    return value


def _error(message: str) -> None:
    print(f"pathweave: {message}", file=sys.stderr)


def _load(path: Path) -> Scenario | None:
    """The scenario at ``path``, or None after reporting why it is not valid."""
    try:
        return load(path)
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return None


def _validate(args: argparse.Namespace) -> int:
    scenario = _load(args.file)
    if scenario is None:
        return EXIT_BAD_INPUT
    print(
        f"{scenario.source}: ok ({scenario.name}: {len(scenario.link_names)} links, "
        f"{len(scenario.flow_names)} flows, {scenario.duration_s:g} s)"
    )
    return 0


def _default_out(name: str) -> Path:
    """``results/<name>``, with the name made safe as one path component."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip(".") or "unnamed"
    return Path("results") / safe


def _run(args: argparse.Namespace) -> int:
    scenario = _load(args.file)
    if scenario is None:
        return EXIT_BAD_INPUT
    out: Path = args.out if args.out is not None else _default_out(scenario.name)
    try:
        check_output_directory(out)  # before the run, which may be long
    except OSError as e:
        _error(f"--out: {e}")
        return EXIT_BAD_INPUT
    show_progress = not args.quiet and sys.stderr.isatty()
    result = run(scenario, seed=args.seed, progress=show_progress)
    try:
        result.write(out, format=args.format, plot=args.plot)
    except OSError as e:
        _error(f"cannot write results to {out}: {e}")
        return EXIT_FAILURE
    if not args.quiet:
        _summary(result, out, args.format)
    return 0


def _console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        # A pipe or file has no width; wide enough that tables are not squeezed.
        console = Console(highlight=False, width=120)
    return console


def _summary(result: Result, out: Path, fmt: str) -> None:
    console = _console()
    console.print(_flow_table(result))
    console.print(_group_table(result))
    console.print(_link_table(result))
    stats = result.stats
    console.print(
        f"simulated {stats['simulated_s']:g} s in {result.wall_time_s:.2f} s of wall time "
        f"({stats['events']:,} events, {result.events_per_s / 1e6:.2f} M events/s)"
    )
    console.print(Text(f"results ({fmt}) written to {out}"))


def _flow_table(result: Result) -> Table:
    flows = result.flows
    mss = result.scenario.flow_mss_bytes
    table = Table(title=Text(f"{result.scenario_name} (seed {result.seed}): flows"))
    for heading in ("flow", "group"):
        table.add_column(heading)
    for heading in (
        "goodput Mbps",
        "loss-event rate",
        "retransmits",
        "timeouts",
        "mean cwnd pkts",
        "mean srtt ms",
    ):
        table.add_column(heading, justify="right")
    for i, row in enumerate(flows.head(_MAX_FLOW_ROWS).to_dict("records")):
        cwnd = row["mean_cwnd_bytes"] / mss[i] if mss[i] else float("nan")
        table.add_row(
            Text(row["name"]),
            Text(row["group"]),
            f"{row['goodput_bps'] / 1e6:.3f}",
            f"{row['loss_event_rate']:.5f}",
            f"{row['retransmits']:,}",
            f"{row['timeouts']:,}",
            _number(cwnd, ".1f"),
            _number(row["mean_srtt_s"] * 1e3, ".2f"),
        )
    if len(flows) > _MAX_FLOW_ROWS:
        table.caption = f"{len(flows) - _MAX_FLOW_ROWS} more flows in the flows table"
    return table


def _group_table(result: Result) -> Table:
    table = Table(title="groups")
    table.add_column("group")
    for heading in ("flows", "total goodput Mbps", "Jain's index"):
        table.add_column(heading, justify="right")
    for row in result.fairness.to_dict("records"):
        table.add_row(
            Text(row["group"]),
            str(row["flows"]),
            f"{row['total_goodput_bps'] / 1e6:.3f}",
            f"{row['jain']:.4f}",
        )
    return table


def _link_table(result: Result) -> Table:
    """The link directions that look like bottlenecks: those that dropped packets or were
    at least half busy, busiest first (else the single busiest)."""
    links = result.links.copy()
    links["congestive_drops"] = (
        links["drops_overflow"] + links["drops_early"] + links["drops_forced"]
    )
    busy = links[(links["congestive_drops"] > 0) | (links["utilization"] >= 0.5)]
    if busy.empty:
        busy = links.nlargest(1, "utilization")
    busy = busy.sort_values(["utilization", "congestive_drops"], ascending=False, kind="stable")
    table = Table(title="busiest links")
    table.add_column("link")
    table.add_column("direction")
    for heading in ("utilisation", "drops", "wire losses"):
        table.add_column(heading, justify="right")
    for row in busy.head(_MAX_LINK_ROWS).to_dict("records"):
        table.add_row(
            Text(row["name"]),
            row["direction"],
            f"{row['utilization']:.1%}",
            f"{row['congestive_drops']:,}",
            f"{row['drops_wire']:,}",
        )
    return table


def _number(x: float, spec: str) -> str:
    return "-" if x != x else format(x, spec)  # NaN (no window, no RTT sample) shows as a dash
