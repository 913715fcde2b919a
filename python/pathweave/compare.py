"""Run one scenario once per congestion-control algorithm of one flow and compare the shares.

This is the headline demonstration (``make demo``): one two-subflow connection and one Reno
flow on a shared bottleneck, run with uncoupled Reno, LIA, OLIA and Balia. Uncoupled subflows
take about two shares; the coupled algorithms about one.

    pathweave compare scenarios/headline.toml --flow mp --algorithms uncoupled,lia,olia,balia

Every variant is parsed before the first run, so a bad algorithm name or flow is reported at
once. ``--out DIR`` receives ``compare.csv`` and ``compare.png``; the directory is replaced
only once both are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w
from rich.console import Console
from rich.table import Table

from pathweave import _core
from pathweave._core import Scenario
from pathweave.api import (
    Result,
    _atomic_directory,
    absolute_trace_paths,
    load,
    parse,
    read_scenario_text,
    run,
)

__all__ = [
    "Comparison",
    "compare",
    "engines_table",
    "plot_comparison",
    "print_engines",
    "print_table",
    "variants",
    "write",
]

DEFAULT_ALGORITHMS = ("uncoupled", "lia", "olia", "balia")
# The file whose presence marks a directory as an earlier comparison (safe to replace).
MARKER = "compare.csv"


@dataclass
class Comparison:
    """The runs of one scenario, one per algorithm of the flow under study."""

    flow: str
    """The name of the flow whose algorithm varies."""
    results: dict[str, Result]
    """Result per algorithm, in the order run."""

    def table(self) -> Any:
        """A pandas DataFrame: one row per algorithm with the flow's goodput, the mean goodput
        of the other flows, their ratio, and the flow's subflow throughputs."""
        import pandas as pd

        rows = []
        for alg, res in self.results.items():
            flows = res.flows
            mine = flows["name"] == self.flow
            own = float(flows.loc[mine, "goodput_bps"].sum())
            others = flows.loc[~mine, "goodput_bps"]
            other_mean = float(others.mean()) if len(others) else float("nan")
            index = int(flows.index[mine][0])
            subs = res.subflows[res.subflows["flow"] == index]
            row: dict[str, Any] = {
                "algorithm": alg,
                "flow_goodput_bps": own,
                "others_mean_goodput_bps": other_mean,
                "share_ratio": own / other_mean if other_mean > 0 else float("nan"),
            }
            for k, tput in zip(subs["subflow"], subs["throughput_bps"], strict=True):
                row[f"subflow{k}_throughput_bps"] = float(tput)
            rows.append(row)
        return pd.DataFrame(rows)


def _with_algorithm(doc: dict[str, Any], flow: str, algorithm: str) -> dict[str, Any]:
    """A copy of the scenario document with `flow`'s algorithm set (and the sweep removed)."""
    out = {k: v for k, v in doc.items() if k != "sweep"}
    flows = [dict(f) for f in out.get("flow", [])]
    hits = [f for f in flows if f.get("name") == flow]
    if not hits:
        names = ", ".join(str(f.get("name")) for f in flows)
        raise ValueError(f"no [[flow]] is named {flow!r} (flows: {names})")
    for f in hits:
        if f.get("count", 1) != 1:
            raise ValueError(
                f"[[flow]] {flow!r} is stamped out {f['count']} times (count); compare varies "
                "one flow, so give it a flow without count"
            )
        f["algorithm"] = algorithm
    out["flow"] = flows
    return out


def variants(
    scenario: str | Path,
    flow: str,
    algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
    profile: str | None = None,
) -> dict[str, Scenario]:
    """The scenario once per algorithm for the flow named ``flow``, each checked by the
    simulator's parser. With ``profile``, the variants' ``[tcp]`` gets ``profile = PROFILE``
    unless the scenario names one itself (its own keys still override the profile's, as
    docs/scenarios.md says). Raises ``ValueError`` for an empty or repeated algorithm list or
    an unknown flow, ``ScenarioError`` for an unreadable or bad scenario, a bad algorithm or
    an unknown profile."""
    algorithms = list(algorithms)
    if not algorithms:
        raise ValueError("no algorithms to compare: give at least one, e.g. lia,olia")
    repeated = sorted({a for a in algorithms if algorithms.count(a) > 1})
    if repeated:
        raise ValueError(f"algorithms listed more than once: {', '.join(repeated)}")
    path = Path(scenario)
    load(path)  # the scenario as written must be valid too; reports an unreadable file
    doc = _core.toml_loads(read_scenario_text(path), str(path))
    absolute_trace_paths(doc, path.parent)  # trace files are named relative to the scenario
    if profile is not None:
        doc.setdefault("tcp", {}).setdefault("profile", profile)
    # The label names the variant, so an error says which algorithm it came with.
    return {
        alg: parse(
            tomli_w.dumps(_with_algorithm(doc, flow, alg)),
            f"{path} (flow {flow!r} with algorithm = {alg!r})",
        )
        for alg in algorithms
    }


def compare(
    scenario: str | Path,
    flow: str,
    algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
    seed: int | None = None,
) -> Comparison:
    """Run ``scenario`` once per algorithm in ``algorithms`` for the flow named ``flow``
    (all variants are checked first; see :func:`variants`)."""
    checked = variants(scenario, flow, algorithms)
    return Comparison(flow, {alg: run(sc, seed=seed) for alg, sc in checked.items()})


def engines_table(comparisons: dict[str, Comparison]) -> Any:
    """The tables of one comparison run by several engines (``sim``, ``emulate``), stacked,
    with an ``engine`` column first."""
    import pandas as pd

    frames = []
    for engine, c in comparisons.items():
        df = c.table()
        df.insert(0, "engine", engine)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def write(c: Comparison, out: Path, engines: dict[str, Comparison] | None = None) -> None:
    """Write ``compare.csv`` and ``compare.png`` into ``out``, replacing it only when both are
    complete. Raises ``OSError`` if ``out`` holds something other than earlier comparisons.
    With ``engines`` (more than one), ``compare.csv`` holds every engine's rows."""
    with _atomic_directory(out, marker=MARKER) as tmp:
        table = engines_table(engines) if engines and len(engines) > 1 else c.table()
        table.to_csv(tmp / MARKER, index=False)
        plot_comparison(c, tmp / "compare.png")


def plot_comparison(c: Comparison, png: Path) -> None:
    """Goodput per algorithm: the studied flow's bar stacked by subflow, beside each other
    flow; the dashed line marks an equal share of the flows' total."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    algs = list(c.results)
    first = c.results[algs[0]]
    others = [n for n in first.flows["name"] if n != c.flow]
    width = 0.8 / (1 + len(others))
    colours = [plt.get_cmap("tab10")(k) for k in range(10)]
    for i, alg in enumerate(algs):
        res = c.results[alg]
        index = int(res.flows.index[res.flows["name"] == c.flow][0])
        subs = res.subflows[res.subflows["flow"] == index]
        bottom = 0.0
        for k, (sub, tput) in enumerate(zip(subs["subflow"], subs["throughput_bps"], strict=True)):
            ax.bar(
                i,
                tput / 1e6,
                width,
                bottom=bottom,
                color=colours[k % 10],
                alpha=0.85,
                label=f"{c.flow} subflow {sub}" if i == 0 else None,
            )
            bottom += tput / 1e6
        for j, name in enumerate(others):
            g = float(res.flows.loc[res.flows["name"] == name, "goodput_bps"].iloc[0])
            ax.bar(
                i + (j + 1) * width,
                g / 1e6,
                width,
                color="0.55",
                hatch="//" if j % 2 else None,
                label=name if i == 0 else None,
            )
        fair = float(res.flows["goodput_bps"].sum()) / len(res.flows) / 1e6
        ax.hlines(fair, i - width / 2, i + len(others) * width + width / 2, colors="k", ls="--")
    ax.set_xticks([i + len(others) * width / 2 for i in range(len(algs))], algs)
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_title(f"{c.flow} vs the other flows (dashed: equal share)")
    ax.legend(fontsize=8)
    drawn = 0
    for alg in algs:
        res = c.results[alg]
        index = int(res.flows.index[res.flows["name"] == c.flow][0])
        s = res.flow_series[res.flow_series["flow"] == index]
        if "cwnd_bytes" not in s.columns or s.empty:  # left out by the scenario's [series]
            continue
        bx.plot(s["time_s"], s["cwnd_bytes"] / 1000.0, lw=0.8, label=alg)
        drawn += 1
    bx.set_xlabel("time (s)")
    bx.set_ylabel(f"{c.flow} total cwnd (kB)")
    bx.set_title("window of the multipath flow")
    if drawn:
        bx.legend(fontsize=8)
    else:
        bx.text(
            0.5,
            0.5,
            f"not recorded: {c.flow}'s cwnd_bytes is not in the time series (see [series])",
            ha="center",
            va="center",
            transform=bx.transAxes,
            fontsize=8,
        )
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def print_table(c: Comparison, console: Console) -> None:
    """The comparison as a rich table."""
    df = c.table()
    t = Table(title=f"{c.flow}: goodput by algorithm")
    t.add_column("algorithm")
    t.add_column(f"{c.flow} Mbps", justify="right")
    t.add_column("others Mbps (mean)", justify="right")
    t.add_column("ratio", justify="right")
    subs = [col for col in df.columns if col.startswith("subflow")]
    for col in subs:
        t.add_column(col.removesuffix("_throughput_bps") + " Mbps", justify="right")
    for _, row in df.iterrows():
        t.add_row(
            str(row["algorithm"]),
            f"{row['flow_goodput_bps'] / 1e6:.2f}",
            f"{row['others_mean_goodput_bps'] / 1e6:.2f}",
            f"{row['share_ratio']:.2f}",
            *(f"{row[col] / 1e6:.2f}" for col in subs),
        )
    console.print(t)


def print_engines(comparisons: dict[str, Comparison], console: Console) -> None:
    """One row per algorithm, each engine's goodput and share ratio side by side."""
    first = next(iter(comparisons.values()))
    tables = {e: c.table().set_index("algorithm") for e, c in comparisons.items()}
    t = Table(title=f"{first.flow}: goodput by algorithm and engine")
    t.add_column("algorithm")
    for e in comparisons:
        t.add_column(f"{e}: {first.flow} Mbps", justify="right")
        t.add_column(f"{e}: others Mbps", justify="right")
        t.add_column(f"{e}: ratio", justify="right")
    for alg in first.results:
        cells = []
        for e in comparisons:
            row = tables[e].loc[alg]
            cells += [
                f"{row['flow_goodput_bps'] / 1e6:.2f}",
                f"{row['others_mean_goodput_bps'] / 1e6:.2f}",
                f"{row['share_ratio']:.2f}",
            ]
        t.add_row(alg, *cells)
    console.print(t)
