"""The ``pathweave`` command.

* ``pathweave run FILE [--out DIR] [--seed N] [--format parquet|csv] [--plot] [--quiet]``
* ``pathweave validate FILE``
* ``pathweave compare FILE --flow NAME [--algorithms A,B,...] [--seed N] [--out DIR]``
* ``pathweave sweep FILE [--jobs N | --dask ADDR] [--out DIR] [--cache DIR] [--force] [--quiet]``
* ``pathweave reproduce [ID ...|all] [--quick] [--jobs N | --dask ADDR] [--out DIR] [--force]``
  and ``pathweave reproduce --list``
* ``pathweave traces list``, ``pathweave traces synth --model M --seconds S --seed N
  [--mean-mbps X] [--out FILE]`` and ``pathweave traces stats FILE`` (see docs/traces.md)
* ``pathweave kernel load | unload | status | bmc-manager [--prefix P]`` (root; see
  docs/kernel.md)
* ``pathweave --version``

Exit codes: 0 success, 1 a failure while running or writing (standard output included), 2
bad input (a bad scenario, a bad sweep, an unknown experiment or bad arguments), 130
interrupted (Ctrl-C, SIGTERM or SIGHUP: what was half written is removed first). A bad
scenario is reported on stderr in one message, with no traceback, before anything is
created. In ``reproduce`` a result outside its tolerance is a result (a "miss" in the table),
not an error: the exit code is 0 once every run completed.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import math
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pathweave import _core, catalog, traces
from pathweave._core import PathweaveError, Scenario, ScenarioError
from pathweave.api import (
    Result,
    check_output_directory,
    load,
    max_scenario_bytes,
    read_scenario_text,
    run,
)
from pathweave.capture import CAPTURE_MARKER
from pathweave.catalog import ENV_SCENARIOS
from pathweave.compare import DEFAULT_ALGORITHMS
from pathweave.emulate import EmulatedResult

if TYPE_CHECKING:
    import pandas as pd

    from pathweave.repro import Experiment, Outcome
    from pathweave.sweep import Plan, Sweep, SweepResult

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
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        code = _main(argv)
        sys.stdout.flush()  # here rather than at exit, where a failure would be a traceback
    except _StdoutFailed as e:
        # As Unix tools do: a reader that went away (`| head`) ends the command quietly.
        if e.error.errno != errno.EPIPE:
            _error(f"cannot write to standard output: {e.error.strerror or e.error}")
        _discard_stdout(stdout)
        return EXIT_FAILURE
    finally:
        sys.stdout = stdout
    return code


def _main(argv: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["kernel"]:
        # Everything after `kernel` belongs to pathweave-kernel, options such as --help too.
        return _kernel_command(given[1:])
    if given[:1] == ["quic"]:
        # Likewise `quic`: pathweave-quic's command line parses the rest.
        return _quic_command(given[1:])
    args = _parser().parse_args(argv)
    try:
        max_scenario_bytes()  # a bad limit is bad input, reported before anything is read
    except PathweaveError as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    try:
        # Commands that run and write: Ctrl-C, SIGTERM and SIGHUP stop them, so what was
        # half made (a partial directory, an emulation's namespaces) is removed.
        with _signals_as_interrupt() if args.interruptible else contextlib.nullcontext():
            code: int = args.command(args)
    except KeyboardInterrupt:
        written = getattr(args, "written", None)  # set by a command once it has written
        _error(
            f"interrupted after writing to {written}"
            if written
            else "interrupted; nothing was written"
        )
        return EXIT_INTERRUPTED
    except PathweaveError as e:
        # A bad scenario is reported where it is loaded; this is the simulator failing.
        _error(str(e))
        return EXIT_FAILURE
    return code


class _StdoutFailed(Exception):
    """Standard output could not be written (a closed pipe, a full disk)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Stdout:
    """Standard output whose write errors are told apart from those of other files."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as e:
            raise _StdoutFailed(e) from e

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise _StdoutFailed(e) from e

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _discard_stdout(stream: TextIO) -> None:
    """Point standard output at the null device, so that the interpreter's last flush of
    what could not be written fails no more."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass  # not a file descriptor (a test's capture): nothing is flushed at exit


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pathweave",
        description="Simulate multipath congestion control scenarios.",
    )
    parser.add_argument("--version", action="version", version=f"pathweave {_core.__version__}")
    parser.set_defaults(interruptible=False)
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
        "--pcap",
        type=Path,
        metavar="DIR",
        help="capture the run into DIR: a pcapng file per link direction and, with [capture] "
        "events = true, the queue log packets.parquet (default with [capture]: "
        "<output>/capture); replaced if it holds an earlier capture",
    )
    run_p.add_argument(
        "--quiet",
        action="store_true",
        help="print neither the progress bar nor the summary, only errors",
    )
    run_p.set_defaults(command=_run, interruptible=True)

    val_p = sub.add_parser(
        "validate",
        help="check a scenario file without running it",
        description="Check a scenario file; exit 0 if valid, 2 if not.",
    )
    val_p.add_argument("file", type=Path, metavar="FILE", help="scenario file (TOML)")
    val_p.set_defaults(command=_validate)

    cmp_p = sub.add_parser(
        "compare",
        help="run a scenario once per algorithm of one flow and compare the shares",
        description="Run a scenario once per congestion-control algorithm of one flow (every "
        "variant is checked before the first run); print the flow's goodput against the mean "
        "of the others and its subflows' throughputs.",
    )
    cmp_p.add_argument("file", type=Path, metavar="FILE", help="scenario file (TOML)")
    cmp_p.add_argument(
        "--flow", required=True, metavar="NAME", help="the [[flow]] whose algorithm varies"
    )
    cmp_p.add_argument(
        "--algorithms",
        default=",".join(DEFAULT_ALGORITHMS),
        metavar="A,B,...",
        help="comma-separated algorithm names (default: %(default)s)",
    )
    cmp_p.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")
    cmp_p.add_argument(
        "--engine",
        default="sim",
        metavar="E[,E]",
        help="sim, emulate or both (sim,emulate: side by side); emulate needs root; with "
        'emulate, the scenario runs with [tcp] profile = "linux" unless it names a profile '
        "(default: sim)",
    )
    cmp_p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="also write compare.csv and compare.png into DIR (replaced if it exists)",
    )
    cmp_p.add_argument("--quiet", action="store_true", help="print only errors")
    cmp_p.set_defaults(command=_compare, interruptible=True)

    emu_p = sub.add_parser(
        "emulate",
        help="run a scenario over real Linux TCP/MPTCP with emulated links (root)",
        description="Run a scenario file in real time over the kernel's TCP, MPTCP and UDP, "
        "each endpoint in a network namespace of its own, every link emulated by the "
        "simulator's own link, queue and loss code; print a summary and write the results "
        "in the schema of `run`. Needs root, /dev/net/tun and (for multipath flows) MPTCP.",
    )
    emu_p.add_argument("file", type=Path, nargs="?", metavar="FILE", help="scenario file (TOML)")
    emu_p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: results/<scenario name>-emulate); replaced if it exists",
    )
    emu_p.add_argument("--seed", type=_seed, metavar="N", help="override the scenario's seed")
    emu_p.add_argument(
        "--format", choices=("parquet", "csv"), default="parquet", help="table file format"
    )
    emu_p.add_argument(
        "--reno-congestion",
        metavar="NAME",
        help="run the scenario's Reno flows and uncoupled subflows on this registered kernel "
        "congestion control instead of reno (e.g. cubic, bbr)",
    )
    emu_p.add_argument(
        "--external",
        action="append",
        default=[],
        metavar="FLOW",
        help="build this flow's namespaces, routes and links but start no application in "
        "them: run your own there with `ip netns exec` (stderr says where); repeatable",
    )
    emu_p.add_argument("--plot", action="store_true", help="also draw run.png in the output")
    emu_p.add_argument(
        "--pcap",
        type=Path,
        metavar="DIR",
        help="capture the packets the links carry into DIR: a pcapng file per link direction "
        "and, with [capture] events = true, the queue log packets.parquet (default with "
        "[capture]: <output>/capture); replaced if it holds an earlier capture",
    )
    emu_p.add_argument("--quiet", action="store_true", help="print only errors")
    emu_p.add_argument(
        "--cleanup",
        action="store_true",
        help="remove the namespaces a killed emulation left behind, then exit",
    )
    emu_p.set_defaults(command=_emulate, interruptible=True)

    sweep_p = sub.add_parser(
        "sweep",
        help="run every point of a scenario's [sweep] table",
        description="Run the grid and seeds of a scenario's [sweep] table, caching every run; "
        "print mean ± 95 % confidence interval per point and write the tables. A file without "
        "[sweep] is a sweep of one point: the scenario is run once.",
    )
    sweep_p.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help="scenario file, usually with a [sweep] table (without one: a single point)",
    )
    sweep_p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="output directory (default: results/sweeps/<scenario name>)",
    )
    _add_engine_options(sweep_p)
    sweep_p.add_argument(
        "--quiet", action="store_true", help="print neither progress nor the summary"
    )
    sweep_p.set_defaults(command=_sweep, interruptible=True)

    repro_p = sub.add_parser(
        "reproduce",
        help="rerun the papers' experiments and compare with the published values",
        description="Run experiments (or 'all'), compare with the published values and write "
        "figures, tables and report.html. Misses are results: the exit code is 0 once the "
        "runs completed.",
    )
    repro_p.add_argument("ids", nargs="*", metavar="ID", help="experiment ids, or 'all'")
    repro_p.add_argument("--list", action="store_true", help="list the experiments and exit")
    repro_p.add_argument(
        "--quick", action="store_true", help="the reduced form: shorter, fewer points and seeds"
    )
    repro_p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        default=Path("results") / "reproduce",
        help="output root: DIR/<id>/, DIR/cache, DIR/report.html (default: results/reproduce)",
    )
    _add_engine_options(repro_p)
    repro_p.add_argument(
        "--quiet", action="store_true", help="print neither progress nor the tables"
    )
    repro_p.set_defaults(command=_reproduce, interruptible=True)

    scen_p = sub.add_parser(
        "scenarios",
        help="list the shipped scenarios, or copy one to edit",
        description="The scenarios shipped with pathweave (the experiments' and the examples). "
        f"${ENV_SCENARIOS}, if set, names another directory to use instead.",
    )
    scen_sub = scen_p.add_subparsers(title="actions", required=True, metavar="ACTION")
    list_p = scen_sub.add_parser("list", help="list the shipped scenarios by name")
    list_p.set_defaults(command=_scenarios_list)
    copy_p = scen_sub.add_parser(
        "copy",
        help="copy a scenario (or a directory of them) into DIR",
        description="Copy the scenario NAME (NAME.toml) or the directory NAME into DIR "
        "(created if missing). Existing files are never overwritten.",
    )
    copy_p.add_argument("name", metavar="NAME", help="a name from 'pathweave scenarios list'")
    copy_p.add_argument("dest", type=Path, metavar="DIR", help="destination directory")
    copy_p.set_defaults(command=_scenarios_copy)

    _add_traces_parser(sub)

    kernel_p = sub.add_parser(
        "kernel",
        help="load, unload or list the BPF congestion controllers (root)",
        description="Run pathweave-kernel: load | unload | status | bmc-manager.",
        add_help=False,
    )
    kernel_p.add_argument("args", nargs=argparse.REMAINDER)
    kernel_p.set_defaults(command=_kernel)

    quic_p = sub.add_parser(
        "quic",
        help="send or receive a transfer over multipath QUIC with a pathweave controller",
        description="Run pathweave-quic: serve | send (pathweave quic --help).",
        add_help=False,
    )
    quic_p.add_argument("args", nargs=argparse.REMAINDER)
    quic_p.set_defaults(command=lambda a: _quic_command(a.args))
    return parser


def _add_traces_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    traces_p = sub.add_parser(
        "traces",
        help="make, list and check link-capacity traces (Mahimahi's format)",
        description="Link-capacity traces in Mahimahi's format, for a [[link]]'s "
        "rate = { trace = FILE }: synthesize one from a model, list the models and the shipped "
        "traces, or check a file and print its statistics.",
    )
    actions = traces_p.add_subparsers(title="actions", required=True, metavar="ACTION")
    list_p = actions.add_parser("list", help="list the models and the shipped traces")
    list_p.set_defaults(command=_traces_list)
    synth_p = actions.add_parser(
        "synth",
        help="write a synthetic trace",
        description="Write a synthetic trace of a Markov-modulated capacity model to standard "
        "output or FILE. The same arguments give the same bytes.",
    )
    synth_p.add_argument(
        "--model", required=True, metavar="M", help=f"the model: {', '.join(traces.MODELS)}"
    )
    # Numbers are checked by the command, so that a bad one is reported in one line.
    synth_p.add_argument(
        "--seconds",
        required=True,
        metavar="S",
        help=f"length of the trace (above 0, at most {traces.MAX_SECONDS:g}; to the millisecond)",
    )
    synth_p.add_argument("--seed", required=True, type=_seed, metavar="N", help="random seed")
    synth_p.add_argument(
        "--mean-mbps",
        metavar="X",
        help="scale the model's rates so that its mean is X Mbit/s (default: the model's)",
    )
    synth_p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write FILE (atomically: complete or not at all) instead of standard output",
    )
    synth_p.set_defaults(command=_traces_synth, interruptible=True)
    stats_p = actions.add_parser(
        "stats",
        help="check a trace file and print its capacity statistics",
        description="Check a Mahimahi trace (exit 2 with the line if it is not one) and print "
        "its period and its capacity per 100 ms window.",
    )
    stats_p.add_argument("file", type=Path, metavar="FILE", help="trace file")
    stats_p.set_defaults(command=_traces_stats)


def _option_number(option: str, text: str) -> float:
    """``text`` as a finite number, or a ``TraceError`` naming ``option``."""
    try:
        value = float(text)
    except ValueError:
        raise traces.TraceError(f"{option}: not a number: {text!r}") from None
    if not math.isfinite(value):
        raise traces.TraceError(f"{option}: not a finite number: {text!r}")
    return value


def _traces_list(args: argparse.Namespace) -> int:
    console = _console()
    models = Table(title="trace models")
    models.add_column("model")
    models.add_column("mean (Mbit/s)", justify="right")
    models.add_column("description")
    for name, model in traces.MODELS.items():
        models.add_row(Text(name), f"{model.mean_mbps():.3g}", Text(model.description))
    console.print(models)
    shipped = Table(title=f"shipped traces in {traces.traces_dir()}")
    shipped.add_column("file")
    shipped.add_column("mean (Mbit/s)", justify="right")
    shipped.add_column("duration (s)", justify="right")
    shipped.add_column("description")
    for t in traces.SHIPPED:
        try:
            stats = traces.trace_stats(traces.read_trace(traces.shipped_path(t)))
        except traces.TraceError as e:
            _error(f"traces list: {e}")
            return EXIT_FAILURE
        shipped.add_row(
            Text(t.name),
            f"{stats.mean_mbps:.3g}",
            f"{stats.period_ms / 1000:g}",
            Text(t.description),
        )
    console.print(shipped)
    return 0


def _traces_synth(args: argparse.Namespace) -> int:
    out: Path | None = args.out
    if out is not None:
        problem = _trace_out_problem(out)
        if problem:
            _error(f"traces synth: --out: {problem}")
            return EXIT_BAD_INPUT
    try:
        seconds = _option_number("--seconds", args.seconds)
        mean = None if args.mean_mbps is None else _option_number("--mean-mbps", args.mean_mbps)
        data = traces.synthesize_bytes(args.model, seconds, args.seed, mean)
    except traces.TraceError as e:
        _error(f"traces synth: {e}")
        return EXIT_BAD_INPUT
    if out is None:
        sys.stdout.write(data.decode("ascii"))
        return 0
    try:
        traces.write_trace(out, data)
    except OSError as e:
        _error(f"traces synth: cannot write {out}: {e.strerror or e}")
        return EXIT_FAILURE
    return 0


def _trace_out_problem(out: Path) -> str | None:
    """Why ``out`` cannot be the trace's file, or None."""
    parent = out.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if out.is_dir():
        return f"{out} is a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    return None


def _traces_stats(args: argparse.Namespace) -> int:
    try:
        stats = traces.trace_stats(traces.read_trace(args.file))
    except traces.TraceError as e:
        _error(f"traces stats: {e}")
        return EXIT_BAD_INPUT
    table = Table(title=Text(f"{args.file}: capacity per {stats.window_ms} ms window"))
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_row("period", f"{stats.period_ms / 1000:g} s ({stats.period_ms} ms)")
    table.add_row("opportunities (1500 B)", f"{stats.opportunities:,}")
    table.add_row("mean", f"{stats.mean_mbps:.3f} Mbit/s")
    for p, value in stats.percentiles.items():
        table.add_row(f"p{p}", f"{value:.3f} Mbit/s")
    table.add_row("min", f"{stats.min_mbps:.3f} Mbit/s")
    table.add_row("max", f"{stats.max_mbps:.3f} Mbit/s")
    table.add_row("windows without capacity", f"{stats.zero_windows:.1%}")
    _console().print(table)
    return 0


def _kernel(args: argparse.Namespace) -> int:
    return _kernel_command(args.args)


def _kernel_command(argv: list[str]) -> int:
    """``pathweave kernel ARGV...``: Ctrl-C, SIGTERM and SIGHUP end a long command
    (bmc-manager) as they would the standalone binary, with exit code 130 and no traceback."""
    from pathweave import kernel

    try:
        with _signals_as_interrupt():
            return kernel.run(argv)
    except KeyboardInterrupt:
        print("pathweave kernel: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _quic_command(argv: list[str]) -> int:
    """``pathweave quic ARGV...``: Ctrl-C, SIGTERM and SIGHUP end it with exit code 130."""
    from pathweave import quic

    try:
        with _signals_as_interrupt():
            return quic.run(argv)
    except KeyboardInterrupt:
        print("pathweave quic: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--jobs",
        type=_jobs,
        metavar="N",
        help="local worker processes (default: one per CPU; 1 runs in this process)",
    )
    where.add_argument(
        "--dask",
        metavar="ADDR",
        help="run on the Dask cluster whose scheduler is at ADDR (e.g. tcp://host:8786)",
    )
    p.add_argument("--cache", type=Path, metavar="DIR", help="run cache (default: <out>/cache)")
    p.add_argument("--force", action="store_true", help="rerun points found in the cache")


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _seed(text: str) -> int:
    """argparse type for --seed: an integer from 0 to 2**63 - 1, the largest TOML integer, so
    that a run's seed can always be written into its scenario file."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(
            f"must be from 0 to 2**63 - 1 (the largest TOML integer, as in a scenario's seed): "
            f"{text}"
        )
    return value


def _error(message: str) -> None:
    # A terminal that hung up cannot show the message; that must not become a traceback.
    with contextlib.suppress(OSError):
        print(f"pathweave: {message}", file=sys.stderr)


def _load(path: Path) -> Scenario | None:
    """The scenario at ``path``, or None after reporting why it is not valid."""
    try:
        return load(path)
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return None


def _load_one(args: argparse.Namespace, command: str) -> Scenario | None:
    """The scenario of ``args.file`` for a command that runs it once, or None after reporting
    why not. A ``[sweep]`` table is checked as ``validate`` checks it, and noted: the command
    runs the scenario as written, not the sweep."""
    scenario = _load(args.file)
    if scenario is None or not _sweep_ok(args, command):
        return None
    return scenario


def _sweep_ok(args: argparse.Namespace, command: str) -> bool:
    """False after reporting a bad ``[sweep]`` table in ``args.file``; notes a good one."""
    if not _has_sweep(args.file):
        return True
    plan = _load_plan(args.file)
    if plan is None:
        return False
    if not args.quiet:
        _error(
            f"note: {args.file} has a [sweep] table ({len(plan.points)} points x "
            f"{len(plan.seeds)} seeds); {command} runs the scenario as written, "
            f"`pathweave sweep {args.file}` runs the sweep"
        )
    return True


def _validate(args: argparse.Namespace) -> int:
    if _has_sweep(args.file):
        # Every point of the sweep is checked, so a bad grid value is found before a run.
        plan = _load_plan(args.file)
        if plan is None:
            return EXIT_BAD_INPUT
        first = plan.points[0].scenario
        print(
            f"{args.file}: ok ({first.name}: sweep of {len(plan.points)} points x "
            f"{len(plan.seeds)} seeds)"
        )
        return 0
    scenario = _load(args.file)
    if scenario is None:
        return EXIT_BAD_INPUT
    print(
        f"{scenario.source}: ok ({scenario.name}: {len(scenario.link_names)} links, "
        f"{len(scenario.flow_names)} flows, {scenario.duration_s:g} s)"
    )
    topology = scenario.topology
    if topology is not None:
        print(
            f"topology: {_topology_label(topology)}: {topology['hosts']} hosts, "
            f"{topology['switches']} switches, {topology['links']} links"
        )
        for note in topology["notes"]:
            _error(f"note: {note}")
    return 0


def _topology_label(topology: dict[str, Any]) -> str:
    """``fat-tree k=4``, ``vl2 da=4 di=4 hosts_per_tor=20``, ``bcube n=4 k=1``."""
    params = [k for k in ("k", "da", "di", "hosts_per_tor", "n") if k in topology]
    if topology["type"] == "bcube":
        params = ["n", "k"]
    return " ".join([str(topology["type"]), *(f"{k}={topology[k]}" for k in params)])


def _default_out(name: str) -> Path:
    """``results/<name>``, with the name made safe as one path component."""
    return Path("results") / _safe(name)


def _run(args: argparse.Namespace) -> int:
    scenario = _load_one(args, "run")
    if scenario is None:
        return EXIT_BAD_INPUT
    out: Path = args.out if args.out is not None else _default_out(scenario.name)
    try:
        check_output_directory(out)  # before the run, which may be long
    except OSError as e:
        _error(f"--out: {e}")
        return EXIT_BAD_INPUT
    if args.pcap is not None:
        try:
            check_output_directory(args.pcap, marker=CAPTURE_MARKER)
        except OSError as e:
            _error(f"--pcap: {e}")
            return EXIT_BAD_INPUT
    show_progress = not args.quiet and sys.stderr.isatty()
    try:
        # The time series go to their files while the run goes, so memory stays flat.
        result = run(
            scenario,
            seed=args.seed,
            progress=show_progress,
            out=out,
            format=args.format,
            plot=args.plot,
            pcap=args.pcap,
        )
    except OSError as e:
        _error(f"cannot write results to {out}: {e}")
        return EXIT_FAILURE
    args.written = out
    if not args.quiet:
        _summary(result, out, args.format)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from pathweave import compare as cmp

    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    bad = [e for e in engines if e not in ENGINES] or (
        ["(repeated)"] if len(set(engines)) != len(engines) else []
    )
    if not engines or bad:
        _error(f"--engine: {args.engine!r}: give sim, emulate or sim,emulate")
        return EXIT_BAD_INPUT
    # Beside the kernel, the simulator does what Linux does (docs/scenarios.md, "The linux
    # profile"); the emulator runs the kernels' own stacks whatever the profile says.
    profile = "linux" if "emulate" in engines else None
    try:
        checked = cmp.variants(args.file, args.flow, algorithms, profile=profile)
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, OSError) as e:
        _error(f"compare: {e}")
        return EXIT_BAD_INPUT
    if not _sweep_ok(args, "compare"):
        return EXIT_BAD_INPUT
    if args.out is not None:
        try:
            check_output_directory(args.out, cmp.MARKER)  # before the runs
        except OSError as e:
            _error(f"--out: {e}")
            return EXIT_BAD_INPUT
    if "emulate" in engines:
        from pathweave.emulate import check

        try:
            for sc in checked.values():
                check(sc)
        except _core.EmulationRefused as e:
            _error(f"emulate: {e}")
            return EXIT_BAD_INPUT
    show_progress = not args.quiet and sys.stderr.isatty()
    comparisons = {}
    for engine in engines:
        if engine == "sim":
            results = {
                alg: run(sc, seed=args.seed, progress=show_progress) for alg, sc in checked.items()
            }
        else:
            from pathweave.emulate import emulate

            results = {alg: emulate(sc, seed=args.seed) for alg, sc in checked.items()}
        comparisons[engine] = cmp.Comparison(args.flow, results)
    comparison = comparisons[engines[0]]
    console = _console()
    if not args.quiet:
        if len(comparisons) > 1:
            cmp.print_engines(comparisons, console)
        else:
            cmp.print_table(comparison, console)
    if args.out is not None:
        try:
            cmp.write(comparison, args.out, engines=comparisons)
        except OSError as e:
            _error(f"cannot write the comparison to {args.out}: {e}")
            return EXIT_FAILURE
        args.written = args.out
        if not args.quiet:
            console.print(Text(f"wrote {args.out / cmp.MARKER} and {args.out / 'compare.png'}"))
    return 0


ENGINES = ("sim", "emulate")


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like Ctrl-C so that what the command made is removed (an
    emulation's namespaces, a partial results directory) before the exit."""


# The signals that stop a command: Ctrl-C, `kill` and a closed terminal.
_STOP_SIGNALS = tuple(
    getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)
)
# How soon a signal that arrived during an import is delivered again.
_REDELIVER_S = 0.05


def _importing(frame: FrameType | None) -> bool:
    """Whether ``frame`` or a caller of it is the import machinery at work."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def _signals_as_interrupt() -> Iterator[None]:
    """Stop the command with KeyboardInterrupt on any of ``_STOP_SIGNALS``.

    An exception raised while a module is being imported can be lost: importlib runs some of
    its own code in weak-reference callbacks, whose exceptions Python only prints as
    "ignored", and the run then goes on as if nothing had been pressed. The run's first
    chunks import pandas and pyarrow, so this was seen. A signal that arrives during an
    import is therefore sent again a moment later, until it lands outside one.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals (and may set their handlers)
        return
    main = threading.main_thread().ident
    assert main is not None

    def handler(signum: int, frame: FrameType | None) -> None:
        if _importing(frame):
            again = threading.Timer(_REDELIVER_S, signal.pthread_kill, (main, signum))
            again.daemon = True
            again.start()
            return
        raise KeyboardInterrupt() if signum == signal.SIGINT else _Terminated()

    previous = {s: signal.signal(s, handler) for s in _STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _emulate(args: argparse.Namespace) -> int:
    from pathweave import emulate as emu

    if args.cleanup:
        try:
            removed = emu.cleanup()
        except PathweaveError as e:
            root = "" if os.geteuid() == 0 else " (deleting network namespaces needs root)"
            _error(f"emulate --cleanup: {e}{root}")
            return EXIT_FAILURE
        if not args.quiet:
            print(f"removed {len(removed)} namespace(s)" + "".join(f"\n  {n}" for n in removed))
            kept = emu.leftovers()  # those of emulations still running
            if kept:
                print(f"kept {len(kept)} namespace(s) of running emulations")
        return 0
    if args.file is None:
        _error("emulate: give a scenario FILE (or --cleanup)")
        return EXIT_BAD_INPUT
    scenario = _load_one(args, "emulate")
    if scenario is None:
        return EXIT_BAD_INPUT
    out: Path = args.out if args.out is not None else _default_out(scenario.name + "-emulate")
    # Every check before the run, which makes namespaces and takes real time.
    try:
        check_output_directory(out)
    except OSError as e:
        _error(f"--out: {e}")
        return EXIT_BAD_INPUT
    if args.pcap is not None:
        try:
            check_output_directory(args.pcap, marker=CAPTURE_MARKER)
        except OSError as e:
            _error(f"--pcap: {e}")
            return EXIT_BAD_INPUT
    try:
        emu.check(scenario, reno_congestion=args.reno_congestion, external=args.external)
    except _core.EmulationRefused as e:
        _error(f"emulate: {e}")
        return EXIT_BAD_INPUT
    if not args.quiet and sys.stderr.isatty():
        print(
            f"emulating {scenario.name}: {scenario.duration_s:g} s of real time",
            file=sys.stderr,
        )
    try:
        # The results (and a capture) are written as the run ends, each directory atomically.
        result = emu.emulate(
            scenario,
            seed=args.seed,
            reno_congestion=args.reno_congestion,
            external=args.external,
            out=out,
            format=args.format,
            plot=args.plot,
            pcap=args.pcap,
        )
    except _core.EmulationRefused as e:
        _error(f"emulate: {e}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _error("emulation interrupted; its namespaces and devices were removed, nothing written")
        return EXIT_INTERRUPTED
    except OSError as e:
        _error(f"cannot write results to {out}: {e}")
        return EXIT_FAILURE
    args.written = out
    if not args.quiet:
        _summary(result, out, args.format)
        _emulation_summary(result.emulation)
    return 0


def _emulation_summary(report: dict[str, object]) -> None:
    console = _console()
    lat = report["lateness"]
    assert isinstance(lat, dict)
    console.print(
        f"emulator lateness: p50 {lat['p50_ms']:.3f} ms, p99 {lat['p99_ms']:.3f} ms, "
        f"max {lat['max_ms']:.3f} ms over {lat['packets']:,} packets "
        f"(limit {report['lateness_limit_ms']:.3f} ms); "
        f"emulator drops {report['emulator_drops']}, device drops {report['device_drops']}"
    )
    wait = report["intake_wait"]
    assert isinstance(wait, dict)
    console.print(
        f"intake wait (time in a TUN device before the emulator read it, at most): "
        f"p50 {wait['p50_ms']:.3f} ms, p99 {wait['p99_ms']:.3f} ms, max {wait['max_ms']:.3f} ms"
    )
    cpu = float(report["link_thread_cpu_s"])  # type: ignore[arg-type]
    read = int(report["packets_read"])  # type: ignore[call-overload]
    console.print(
        f"link thread CPU: {cpu:.2f} s for {read:,} packets read"
        + (f" ({1e6 * cpu / read:.1f} us per packet)" if read else "")
    )
    prefix = report.get("controllers_prefix")
    if prefix:
        algorithms = report["kernel_algorithms"]
        assert isinstance(algorithms, list)
        used = sorted({a for a in algorithms if str(a).startswith(f"{prefix}_")})
        console.print(
            f"kernel controllers: {', '.join(used)} (loaded for this run, gone with it); "
            f"BMC weights written: {report['weight_updates']}"
        )
    if report["reliable"]:
        console.print("timing: reliable")
    else:
        reasons = report["unreliable_because"]
        assert isinstance(reasons, list)
        console.print(Text("timing: UNRELIABLE: " + "; ".join(str(r) for r in reasons)))


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
    if isinstance(result, EmulatedResult):
        console.print(
            f"emulated {stats['simulated_s']:g} s in real time "
            f"({stats['packets_delivered']:,} packets carried through the links)"
        )
    else:
        if result.scenario.topology is not None:
            from pathweave.datacenter import SUMMARY_PATH_LIMIT, equal_cost_routes

            routes = equal_cost_routes(result.scenario)
            if routes <= SUMMARY_PATH_LIMIT:
                console.print(_reference_table(result))
            else:
                console.print(
                    f"flow-level reference not computed: {routes:,} equal-cost routes "
                    f"(the summary computes it up to {SUMMARY_PATH_LIMIT:,}); "
                    "pathweave.datacenter.reference(scenario) computes it on request"
                )
        console.print(
            f"simulated {stats['simulated_s']:g} s in {result.wall_time_s:.2f} s of wall time "
            f"({stats['events']:,} events, {result.events_per_s / 1e6:.2f} M events/s)"
        )
    console.print(Text(f"results ({fmt}) written to {out}"))
    capture = getattr(result, "capture", None)
    if capture is not None:
        files = capture["files"]
        packets = sum(f["packets"] for f in files)
        log = capture["packet_log_rows"]
        console.print(
            Text(
                f"capture: {len(files)} pcapng files, {packets:,} packets"
                + (f", {log:,} queue-log rows" if capture["packet_log"] else "")
            )
        )


def _reference_table(result: Result) -> Table:
    """Packet-level goodput beside the flow-level max-min references (pathweave.datacenter)
    of the same flows: total, mean and least per flow."""
    from pathweave.datacenter import reference

    ref = reference(result.scenario)
    goodput = result.flows.set_index("name")["goodput_bps"].reindex(ref.flows).to_numpy()
    table = Table(
        title="flow-level reference (max-min fair, every flow long-running)",
        caption=(
            f"goodput / multipath optimum: {goodput.sum() / ref.multipath_bps.sum():.1%}"
            if ref.multipath_bps.sum() > 0
            else None
        ),
    )
    table.add_column("rates of the flows")
    for heading in ("total Mbps", "mean Mbps", "least Mbps"):
        table.add_column(heading, justify="right")
    for label, x in (
        ("packet-level goodput", goodput),
        ("single path (first subflow's)", ref.single_path_bps),
        ("hashed subflows", ref.subflows_bps),
        ("multipath optimum (all equal-cost paths)", ref.multipath_bps),
    ):
        if len(x):
            table.add_row(
                label, f"{x.sum() / 1e6:.3f}", f"{x.mean() / 1e6:.3f}", f"{x.min() / 1e6:.3f}"
            )
    return table


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


# --- sweep and reproduce ----------------------------------------------------------------------


def _has_sweep(path: Path) -> bool:
    """Whether the file parses as TOML with a top-level ``[sweep]`` table."""
    try:
        return "sweep" in _core.toml_loads(read_scenario_text(path), str(path))
    except ScenarioError:
        return False  # the ordinary loader reports what is wrong


def _load_plan(path: Path) -> Plan | None:
    """The sweep plan of ``path``, or None after reporting why it is not valid."""
    from pathweave.sweep import SweepError, load_plan

    try:
        return load_plan(path)
    except (ScenarioError, SweepError) as e:
        print(e, file=sys.stderr)
        return None


def _cache_ready(cache: Path, given: bool) -> bool:
    """Create the run cache before any run; report and return False if it cannot be."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        _error(f"{'--cache' if given else '--out'}: cannot create the cache {cache}: {e}")
        return False
    return True


def _sweep(args: argparse.Namespace) -> int:
    from pathweave.sweep import run_sweep, write_sweep

    plan = _load_plan(args.file)
    if plan is None:
        return EXIT_BAD_INPUT
    name = plan.points[0].scenario.name
    out: Path = args.out if args.out is not None else Path("results") / "sweeps" / _safe(name)
    problem = _sweep_out_problem(out)
    if problem:
        _error(f"--out: {problem}")
        return EXIT_BAD_INPUT
    cache: Path = args.cache if args.cache is not None else out / "cache"
    if not _cache_ready(cache, args.cache is not None):
        return EXIT_BAD_INPUT
    try:
        result = run_sweep(
            plan,
            cache,
            jobs=args.jobs,
            dask=args.dask,
            force=args.force,
            progress=not args.quiet and sys.stderr.isatty(),
            description=name,
        )
    except KeyboardInterrupt:
        _interrupted(cache, plan)
        return EXIT_INTERRUPTED
    except OSError as e:
        _error(f"cannot write to the cache {cache}: {e}")
        return EXIT_FAILURE
    try:
        summary = write_sweep(result, out)
    except KeyboardInterrupt:
        _error(
            f"interrupted while writing the results into {out}; the runs are kept in {cache}; "
            "rerun the same command to write them"
        )
        return EXIT_INTERRUPTED
    except OSError as e:
        _error(f"cannot write results to {out}: {e}")
        return EXIT_FAILURE
    args.written = out
    if not args.quiet:
        console = _console()
        console.print(_sweep_table(name, plan, summary))
        console.print(
            f"{len(plan.points)} points x {len(plan.seeds)} seeds: {result.ran} runs simulated, "
            f"{result.cached} from the cache, in {result.wall_time_s:.1f} s of wall time"
        )
        console.print(Text(f"results written to {out}"))
    return _report_failures(result)


def _sweep_out_problem(out: Path) -> str | None:
    """Why ``out`` may not receive a sweep's results, or None: it must be absent, empty, or
    hold an earlier sweep (``sweep.json``) or only a cache."""
    if out.is_symlink() and not out.exists():
        return (
            f"{out} is a symbolic link to {os.readlink(out)}, which does not exist; create "
            "that directory or give another"
        )
    if not out.exists():
        return None
    if not out.is_dir():
        return f"{out} exists and is not a directory"
    names = {p.name for p in out.iterdir()}
    if not names or "sweep.json" in names or names == {"cache"}:
        return None
    return (
        f"{out} exists and does not hold a sweep's results (no sweep.json); choose another "
        "directory or remove it"
    )


def _reproduce_out_problem(out: Path, known: set[str]) -> str | None:
    """Why ``out`` may not receive reproductions, or None: it must be absent, empty, or hold
    earlier ones (``report.html``, or only the cache and experiments' directories)."""
    from pathweave.report import REPORT

    if not out.exists():
        return None
    if not out.is_dir():
        return f"{out} exists and is not a directory"
    names = {p.name for p in out.iterdir()}
    if not names or REPORT in names or names <= {"cache", *known}:
        return None
    return (
        f"{out} exists and does not hold reproductions (no {REPORT}); choose another "
        "directory or remove it"
    )


def _sweep_table(name: str, plan: Plan, summary: pd.DataFrame) -> Table:
    from pathweave.sweep import param_columns, show_value

    # A parameter named like a column of the tables is held as `sweep:<name>`.
    params = param_columns(summary, plan)
    table = Table(title=Text(f"{name}: mean ± 95 % CI per point"))
    table.add_column("point", justify="right")
    for p in plan.param_names:
        table.add_column(p)
    table.add_column("group")
    for heading in ("n", "goodput Mbps", "Jain's index", "loss-event rate", "timeouts"):
        table.add_column(heading, justify="right")
    for row in summary.head(_MAX_FLOW_ROWS).to_dict("records"):
        table.add_row(
            str(row["point"]),
            *(Text(row[p] if isinstance(row[p], str) else show_value(row[p])) for p in params),
            Text(str(row["group"])),
            str(row["n"]),
            _pm(row["total_goodput_bps_mean"] / 1e6, row["total_goodput_bps_ci"] / 1e6, ".3f"),
            _pm(row["jain_mean"], row["jain_ci"], ".4f"),
            _pm(row["loss_event_rate_mean"], row["loss_event_rate_ci"], ".5f"),
            _pm(row["timeouts_mean"], row["timeouts_ci"], ".1f"),
        )
    if len(summary) > _MAX_FLOW_ROWS:
        table.caption = f"{len(summary) - _MAX_FLOW_ROWS} more rows in summary.csv"
    return table


def _pm(mean: float, half: float, spec: str) -> str:
    if mean != mean:
        return "-"
    return format(mean, spec) if half != half else f"{mean:{spec}} ± {half:{spec}}"


def _reproduce(args: argparse.Namespace) -> int:
    from pathweave import repro
    from pathweave.report import write_report
    from pathweave.repro.runner import check_target
    from pathweave.sweep import SweepError

    try:
        known = {e.id: e for e in repro.experiments()}
    except repro.ExperimentError as e:
        _error(str(e))
        return EXIT_FAILURE
    if args.list:
        _experiment_list(list(known.values()))
        return 0
    if not args.ids:
        _error("reproduce: name experiments (or 'all'), or use --list to see them")
        return EXIT_BAD_INPUT
    unknown = [i for i in args.ids if i != "all" and i not in known]
    if unknown:
        _error(
            f"unknown experiment {unknown[0]!r}; known experiments: "
            f"{', '.join(sorted(known)) or 'none'} (or 'all')"
        )
        return EXIT_BAD_INPUT
    ids = list(known) if "all" in args.ids else list(dict.fromkeys(args.ids))
    out: Path = args.out
    problem = _reproduce_out_problem(out, set(known))
    if problem:
        _error(f"--out: {problem}")
        return EXIT_BAD_INPUT
    for i in ids:
        try:
            check_target(out / i)
        except OSError as e:
            _error(f"--out: {e}")
            return EXIT_BAD_INPUT
    cache: Path = args.cache if args.cache is not None else out / "cache"
    if not _cache_ready(cache, args.cache is not None):
        return EXIT_BAD_INPUT
    console = _console()
    outcomes: list[repro.Outcome] = []
    failures = 0
    for i in ids:
        try:
            outcome = repro.run_experiment(
                known[i],
                out,
                quick=args.quick,
                cache_dir=cache,
                jobs=args.jobs,
                dask=args.dask,
                force=args.force,
                progress=not args.quiet and sys.stderr.isatty(),
            )
        except KeyboardInterrupt:
            _error(
                f"interrupted during {i}; finished runs are kept in {cache}; rerun the same "
                "command to resume"
            )
            return EXIT_INTERRUPTED
        except repro.ExperimentError as e:
            _error(str(e))  # names the experiment itself
            return EXIT_FAILURE
        except (ScenarioError, SweepError) as e:
            _error(f"{i}: {e}")
            return EXIT_FAILURE
        except OSError as e:
            _error(f"{i}: cannot write the results or the cache: {e}")
            return EXIT_FAILURE
        outcomes.append(outcome)
        args.written = out
        failures += len(outcome.result.failures)
        if not args.quiet:
            console.print(_comparison_table(outcome))
    try:
        report = write_report(out, ran=ids)
    except KeyboardInterrupt:
        _error(
            f"interrupted while writing the report; the experiments' results are in {out}; "
            "rerun the same command to write it"
        )
        return EXIT_INTERRUPTED
    except OSError as e:
        _error(f"cannot write the report into {out}: {e}")
        return EXIT_FAILURE
    if not args.quiet:
        for o in outcomes:
            console.print(
                f"{o.experiment.id}: {o.matches} match, {o.misses} miss"
                + (f", {o.not_covered} not in the quick sweep" if o.not_covered else "")
                + f" ({o.result.ran} runs, {o.result.cached} from the cache, "
                f"{o.wall_time_s:.1f} s) → {o.directory}"
            )
        console.print(Text(f"report: {report}"))
    for o in outcomes:
        for f in o.result.failures:
            _error(f"{o.experiment.id}: point {f.task.point.index} seed {f.task.seed}: {f.message}")
    return EXIT_FAILURE if failures else 0


def _scenarios_list(args: argparse.Namespace) -> int:
    found = catalog.scenarios()
    if not found:
        where = catalog.scenarios_dir()
        chosen = os.environ.get(ENV_SCENARIOS)
        why = f" (chosen by ${ENV_SCENARIOS}={chosen})" if chosen else ""
        state = "" if where.is_dir() else ": no such directory"
        _error(f"no scenario files in {where}{why}{state}")
        return EXIT_BAD_INPUT
    table = Table(title=f"scenarios in {catalog.scenarios_dir()}")
    table.add_column("name")
    table.add_column("description")
    for s in found:
        table.add_row(Text(s.name), Text(s.summary))
    _console().print(table)
    return 0


def _scenarios_copy(args: argparse.Namespace) -> int:
    try:
        written = catalog.copy_scenario(args.name, args.dest)
    except catalog.CatalogError as e:
        _error(f"scenarios copy: {e}")
        return EXIT_BAD_INPUT
    except OSError as e:
        _error(f"scenarios copy: cannot write into {args.dest}: {e}")
        return EXIT_BAD_INPUT
    for path in written:
        print(path)
    return 0


def _experiment_list(experiments: list[Experiment]) -> None:
    table = Table(title="experiments")
    table.add_column("id")
    table.add_column("title")
    table.add_column("runs (full)", justify="right")
    table.add_column("runs (--quick)", justify="right")
    for e in experiments:
        table.add_row(Text(e.id), Text(e.title), _size(e, e.sweep), _size(e, e.quick))
    _console().print(table)


def _size(e: Experiment, sweep: Sweep) -> str:
    points = len(e.scenarios) * len(sweep.combinations())
    seeds = len(sweep.seed_list())
    return f"{points} x {seeds}"


def _comparison_table(outcome: Outcome) -> Table:
    table = Table(title=Text(f"{outcome.experiment.id}: ours against the published values"))
    table.add_column("published value")
    table.add_column("ours (95 % CI)", justify="right")
    table.add_column("published", justify="right")
    table.add_column("tolerance")
    table.add_column("verdict")
    table.add_column("reason")
    for row in outcome.comparison.to_dict("records"):
        style = "green" if row["verdict"] == "match" else "red"
        table.add_row(
            Text(f"{row['label']}"),
            _pm(row["ours"], row["ci_half_width"], ".4g"),
            format(row["published"], ".4g"),
            row["tolerance"],
            Text(row["verdict"], style=style),
            Text(str(row["reason"] or "")),
        )
    if outcome.not_covered:
        table.caption = f"{outcome.not_covered} published values are outside the quick sweep"
    return table


def _report_failures(result: SweepResult) -> int:
    for f in result.failures:
        point = f.task.point
        _error(f"point {point.index} ({point.describe()}) seed {f.task.seed}: {f.message}")
    return EXIT_FAILURE if result.failures else 0


def _interrupted(cache: Path, plan: Plan) -> None:
    done = sum((cache / t.key / "run.json").is_file() for t in plan.tasks)
    _error(
        f"interrupted; {done} of {len(plan.tasks)} runs are kept in {cache}; rerun the same "
        "command to resume"
    )


def _safe(name: str) -> str:
    """``name`` as one path component. A name that had to change gets a short hash of itself,
    so that two names changed alike ("my run", "my:run", "my_run") do not share a default
    results directory and replace each other's results."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip(".") or "unnamed"
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
