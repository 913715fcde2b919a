"""``report.html``: one self-contained page for every experiment found in a results directory.

Figures are embedded as base64 PNG data URIs and the style sheet is inline, so the page needs
no network and no other file; there is no script. The page is built from each experiment's
``experiment.json`` and ``figures/*.png`` (``pathweave.repro.runner``), so it also shows
experiments run by earlier invocations into the same directory.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pathweave import _core
from pathweave.sweep import write_text_atomic

__all__ = ["find_experiments", "render_report", "write_report"]

REPORT = "report.html"

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1100px; padding: 1.5em; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.3em; margin-top: 2.2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.meta { color: #555; font-size: 0.9em; }
pre.setup { background: #f6f8fa; padding: 0.8em; white-space: pre-wrap; border-radius: 4px; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.match { background: #e3f4e1; color: #1a5e1a; font-weight: 600; }
.miss { background: #fbe3e1; color: #8a1c12; font-weight: 600; }
.badge { display: inline-block; padding: 0 0.5em; border-radius: 3px; font-size: 0.8em;
         background: #eef; color: #335; margin-left: 0.4em; vertical-align: middle; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.85em; }
.failed { color: #8a1c12; }
"""


def find_experiments(out: str | os.PathLike[str]) -> list[Path]:
    """The experiment directories under ``out`` (those with ``experiment.json``), by id."""
    root = Path(out)
    if not root.is_dir():
        return []
    return sorted(p.parent for p in root.glob("*/experiment.json"))


def write_report(out: str | os.PathLike[str], *, ran: Iterable[str] = ()) -> Path:
    """Write ``out/report.html`` atomically for every experiment under ``out``; those whose
    ids are in ``ran`` are marked as run by this invocation. Returns the page's path."""
    root = Path(out)
    path = root / REPORT
    write_text_atomic(path, render_report(find_experiments(root), ran=set(ran)))
    return path


def render_report(directories: Sequence[Path], *, ran: set[str] | None = None) -> str:
    """The HTML page for the experiments in ``directories``."""
    ran = ran or set()
    experiments = [(d, _load(d)) for d in directories]
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>pathweave reproductions</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>pathweave reproductions</h1>",
        f'<p class="meta">pathweave {_e(_core.__version__)} · report written {_e(now)} · '
        f"{len(experiments)} experiment{'s' if len(experiments) != 1 else ''}</p>",
    ]
    if not experiments:
        parts.append("<p>No experiment results were found.</p>")
    else:
        parts.append(_overview(experiments, ran))
        for directory, manifest in experiments:
            parts.append(_section(directory, manifest, manifest.get("id", "") in ran))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _load(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / "experiment.json").read_text("utf-8"))
    return data


def _overview(experiments: list[tuple[Path, dict[str, Any]]], ran: set[str]) -> str:
    rows = []
    for _, m in experiments:
        ident = str(m.get("id", ""))
        misses = int(m.get("misses", 0))
        verdict = "miss" if misses else "match"
        rows.append(
            "<tr>"
            f'<td><a href="#{_e(ident)}">{_e(ident)}</a></td>'
            f"<td>{_e(m.get('title', ''))}</td>"
            f"<td>{_e(m.get('mode', ''))}</td>"
            f'<td class="num">{int(m.get("matches", 0))}</td>'
            f'<td class="num {verdict}">{misses}</td>'
            f'<td class="num">{_seconds(m.get("wall_time_s"))}</td>'
            f"<td>{'this run' if ident in ran else 'earlier run'}</td>"
            "</tr>"
        )
    head = (
        "<tr><th>experiment</th><th>title</th><th>mode</th><th>match</th><th>miss</th>"
        "<th>wall time</th><th>results from</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def _section(directory: Path, m: Mapping[str, Any], this_run: bool) -> str:
    ident = str(m.get("id", directory.name))
    seeds = ", ".join(str(s) for s in m.get("seeds", []))
    failed = m.get("failed", [])
    parts = [
        f'<section id="{_e(ident)}">',
        f'<h2>{_e(m.get("title", ident))} <span class="badge">{_e(ident)}</span>'
        f'<span class="badge">{_e(m.get("mode", ""))}</span></h2>',
        f"<p>{_e(m.get('description', ''))}</p>",
    ]
    if m.get("source"):
        parts.append(f'<p class="meta">Source: {_e(m["source"])}</p>')
    parts.append(f'<pre class="setup">{_e(m.get("setup", ""))}</pre>')
    parts.append(
        f'<p class="meta">pathweave {_e(m.get("pathweave_version", "?"))} · '
        f"seeds {_e(seeds)} · {int(m.get('points', 0))} points, {int(m.get('runs', 0))} runs "
        f"({int(m.get('ran', 0))} run, {int(m.get('cached', 0))} from the cache) · "
        f"wall time {_seconds(m.get('wall_time_s'))} · finished {_e(m.get('finished', ''))}"
        f"{'' if this_run else ' · results from an earlier invocation'}</p>"
    )
    for name in m.get("figures", []):
        png = directory / "figures" / f"{name}.png"
        if not png.is_file():
            parts.append(f'<p class="failed">Figure {_e(name)} is missing ({_e(str(png))}).</p>')
            continue
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        parts.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{_e(ident)}: {_e(name)}">'
            f"<figcaption>{_e(name)} (PDF beside the PNG in {_e(ident)}/figures/)"
            "</figcaption></figure>"
        )
    parts.append(_comparison(m.get("comparison", [])))
    if m.get("not_covered"):
        parts.append(
            f'<p class="meta">{int(m["not_covered"])} published values lie outside the quick '
            "sweep; run without --quick to check them.</p>"
        )
    if failed:
        items = "".join(
            f"<li>point {int(f['point'])}, seed {int(f['seed'])}: {_e(f['error'])}</li>"
            for f in failed
        )
        parts.append(f'<p class="failed">Runs that failed:</p><ul class="failed">{items}</ul>')
    parts.append("</section>")
    return "\n".join(parts)


def _comparison(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "<p>No published values to compare.</p>"
    head = (
        "<tr><th>published value</th><th>point</th><th>ours (mean)</th><th>95 % CI</th>"
        "<th>n</th><th>published</th><th>tolerance</th><th>verdict</th><th>reason</th></tr>"
    )
    body = []
    for r in rows:
        verdict = str(r.get("verdict", ""))
        low, high = _num(r.get("ci_low")), _num(r.get("ci_high"))
        ci = "-" if low == "-" or high == "-" else f"[{low}, {high}]"
        body.append(
            "<tr>"
            f"<td>{_e(r.get('label', ''))}</td>"
            f"<td>{_e(r.get('params', ''))}</td>"
            f'<td class="num">{_num(r.get("ours"))}</td>'
            f'<td class="num">{ci}</td>'
            f'<td class="num">{_e(r.get("n", ""))}</td>'
            f'<td class="num">{_num(r.get("published"))}</td>'
            f"<td>{_e(r.get('tolerance', ''))}</td>"
            f'<td class="{_e(verdict)}">{_e(verdict)}</td>'
            f"<td>{_e(r.get('reason') or '')}</td>"
            "</tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _num(x: Any) -> str:
    if x is None:
        return "-"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return _e(x)
    return "-" if math.isnan(v) else f"{v:.4g}"


def _seconds(x: Any) -> str:
    return "-" if x is None else f"{float(x):.1f} s"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)
