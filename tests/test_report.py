"""``report.html``: self-contained, escaped, atomic, and every figure loads in a real browser
(headless Chromium, skipped when it is not installed: ``apt-get install -y chromium``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

import pathweave
from conftest import run_cli
from pathweave.report import find_experiments, render_report, write_report
from pathweave.repro import new_figure


def _fake_experiment(out: Path, ident: str, figures: list[str], verdicts: list[str]) -> Path:
    """An experiment directory as the runner writes it, made by hand."""
    directory = out / ident
    (directory / "figures").mkdir(parents=True)
    for n, name in enumerate(figures):
        fig = new_figure(figsize=(3 + n, 2))
        fig.subplots().plot([0, 1, 2], [n, 2 * n, n])
        fig.savefig(directory / "figures" / f"{name}.png", dpi=50)
    comparison = [
        {
            "label": f"value {k} <b>",
            "metric": "m",
            "point": k,
            "params": f"x = {k}",
            "ours": 1.0 + k,
            "ci_low": 0.5,
            "ci_high": float("nan") if k else 1.5,
            "ci_half_width": 0.5,
            "n": 3,
            "published": 1.0,
            "tolerance": "± 10 %",
            "verdict": verdict,
            "reason": "a <known> cause" if verdict == "miss" else "",
        }
        for k, verdict in enumerate(verdicts)
    ]
    manifest = {
        "id": ident,
        "title": f"Title of {ident} <script>alert(1)</script>",
        "description": "What & why",
        "source": "a paper",
        "setup": "line one\nline <two>",
        "mode": "full",
        "seeds": [1, 2, 3],
        "points": len(verdicts),
        "runs": 3 * len(verdicts),
        "ran": 2,
        "cached": 3 * len(verdicts) - 2,
        "failed": [{"point": 0, "seed": 2, "error": "PathweaveError: <boom>"}],
        "pathweave_version": pathweave.__version__,
        "finished": "2026-01-01T00:00:00+00:00",
        "wall_time_s": 12.34,
        "figures": figures,
        "comparison": comparison,
        "matches": verdicts.count("match"),
        "misses": verdicts.count("miss"),
        "not_covered": 2,
    }
    (directory / "experiment.json").write_text(json.dumps(manifest))
    return directory


def test_report_is_self_contained_escaped_and_atomic(tmp_path: Path) -> None:
    _fake_experiment(tmp_path, "beta", ["one", "two"], ["match", "miss"])
    _fake_experiment(tmp_path, "alpha", ["only"], ["match"])
    (tmp_path / "cache").mkdir()  # not an experiment
    assert [p.name for p in find_experiments(tmp_path)] == ["alpha", "beta"]
    page_path = write_report(tmp_path, ran=["beta"])
    assert page_path == tmp_path / "report.html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alpha", "beta", "cache", "report.html"]
    page = page_path.read_text()
    assert page.count('<img src="data:image/png;base64,') == 3
    # Nothing to fetch: no external URL and no script at all.
    assert not re.search(r"(src|href)=\"(?!data:|#)", page)
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "value 1 &lt;b&gt;" in page
    assert "a &lt;known&gt; cause" in page
    assert "line one\nline &lt;two&gt;" in page
    assert "PathweaveError: &lt;boom&gt;" in page
    # Verdicts are coloured; the sections come in id order; provenance is stated.
    assert page.count('<td class="match">match</td>') == 2
    assert page.count('<td class="miss">miss</td>') == 1
    assert page.index('id="alpha"') < page.index('id="beta"')
    assert "results from an earlier invocation" in page  # alpha
    assert f"pathweave {pathweave.__version__}" in page
    assert "seeds 1, 2, 3" in page
    assert "wall time 12.3 s" in page
    assert "2 published values lie outside the quick sweep" in page
    assert "[0.5, 1.5]" in page  # the interval; a NaN bound shows as a dash


def test_report_of_an_empty_directory(tmp_path: Path) -> None:
    assert "No experiment results were found." in render_report([])
    write_report(tmp_path / "new")
    assert "0 experiments" in (tmp_path / "new" / "report.html").read_text()


def test_a_missing_figure_is_reported(tmp_path: Path) -> None:
    directory = _fake_experiment(tmp_path, "gamma", ["present", "gone"], ["match"])
    (directory / "figures" / "gone.png").unlink()
    page = render_report(find_experiments(tmp_path))
    assert page.count("data:image/png;base64,") == 1
    assert "Figure gone is missing" in page


# --- in a browser ---------------------------------------------------------------------------

# Marks every image with its natural size once loaded (or "error"), then the body as checked.
_PROBE = """
<script>
for (const img of document.images) {
  const mark = () => img.setAttribute("data-natural-width", String(img.naturalWidth));
  if (img.complete) { mark(); }
  else {
    img.addEventListener("load", mark);
    img.addEventListener("error", () => img.setAttribute("data-natural-width", "error"));
  }
}
document.body.setAttribute("data-probed", "yes");
</script>
"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str | None]] = []
        self.body: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))
        elif tag == "body":
            self.body = dict(attrs)


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results directory from a real (quick) reproduction plus a hand-made experiment."""
    root = tmp_path_factory.mktemp("reproduce")
    proc = run_cli("reproduce", "reno-square-root", "--quick", "--out", root, "--quiet")
    assert proc.returncode == 0, proc.stderr
    _fake_experiment(root, "fake", ["a", "b"], ["match", "miss"])
    write_report(root)
    return root


def test_report_opens_in_chromium_and_every_figure_loads(reproduced: Path) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install -y chromium)")
    page = (reproduced / "report.html").read_text()
    expected = page.count("<img ")
    assert expected == 3  # reno-square-root's figure and the two hand-made ones
    probed = reproduced / "probed.html"
    probed.write_text(page.replace("</body>", _PROBE + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                probed.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parser = _Images()
    parser.feed(proc.stdout)
    assert parser.body.get("data-probed") == "yes", proc.stdout[:500]
    assert len(parser.images) == expected
    for img in parser.images:
        width = img.get("data-natural-width")
        assert width is not None, img.get("alt")
        assert width.isdigit(), (img.get("alt"), width)
        assert int(width) > 100, (img.get("alt"), width)
    alts = [img.get("alt") for img in parser.images]
    assert alts == ["fake: a", "fake: b", "reno-square-root: goodput-vs-loss"]
