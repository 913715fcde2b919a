"""Synthetic capacity traces: reproducible, valid Mahimahi files whose mean is the model's
stationary mean; the ``pathweave traces`` command; the shipped traces and the scenario that
uses them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from pathweave import cli, traces

ROOT = Path(__file__).resolve().parent.parent
MARKOV_MODELS = [name for name, m in traces.MODELS.items() if len(m.states) > 1]


def stationary_mean(model: traces.Model) -> float:
    """The long-run mean rate, from the generator matrix Q of the continuous-time chain:
    ``Q[i][j] = jumps[i][j] / hold_i``, ``Q[i][i] = -1 / hold_i``; ``pi Q = 0``, ``sum pi = 1``."""
    n = len(model.states)
    q = np.array(model.jumps, dtype=float) / np.array([[s.mean_hold_s] for s in model.states])
    q -= np.diag(1.0 / np.array([s.mean_hold_s for s in model.states]))
    a = np.vstack([q.T, np.ones(n)])
    b = np.zeros(n + 1)
    b[-1] = 1.0
    pi, *_ = np.linalg.lstsq(a, b, rcond=None)
    assert np.allclose(pi @ q, 0, atol=1e-12)
    return float(pi @ np.array([s.rate_mbps for s in model.states]))


# ---------------------------------------------------------------------------------------------
# The generator


@pytest.mark.parametrize("model", list(traces.MODELS))
def test_the_same_arguments_give_the_same_bytes(model: str) -> None:
    first = traces.synthesize_bytes(model, 20, seed=7)
    assert traces.synthesize_bytes(model, 20, seed=7) == first
    assert traces.synthesize_bytes(model, 20, seed=7, mean_mbps=5) == traces.synthesize_bytes(
        model, 20, seed=7, mean_mbps=5
    )


@pytest.mark.parametrize("model", MARKOV_MODELS)
def test_another_seed_gives_another_trace(model: str) -> None:
    assert traces.synthesize_bytes(model, 20, seed=1) != traces.synthesize_bytes(model, 20, 2)


@pytest.mark.parametrize("model", MARKOV_MODELS)
def test_the_module_stationary_mean_is_the_chains(model: str) -> None:
    m = traces.MODELS[model]
    assert m.mean_mbps() == pytest.approx(stationary_mean(m), rel=1e-9)


@pytest.mark.parametrize("model", MARKOV_MODELS)
def test_a_long_trace_has_the_models_stationary_mean(model: str) -> None:
    # Over an hour the mean of one trace has a standard deviation of 1-2 % (measured over
    # seeds); 5 % is about three of them.
    times = traces.synthesize(model, 3600, seed=11)
    mean_mbps = len(times) * 1500 * 8 / 3600 / 1e6
    assert mean_mbps == pytest.approx(stationary_mean(traces.MODELS[model]), rel=0.05)


def test_mean_mbps_scales_the_model() -> None:
    times = traces.synthesize("wifi", 600, seed=4, mean_mbps=6.0)
    assert len(times) * 12000 / 600 / 1e6 == pytest.approx(6.0, rel=0.05)
    # A constant rate is exact: 12 Mbit/s is one 1500-byte packet per millisecond.
    assert traces.synthesize("constant", 2, seed=0).tolist() == list(range(1, 2001))
    assert len(traces.synthesize("constant", 10, seed=0, mean_mbps=30)) == 25_000


@pytest.mark.parametrize("model", list(traces.MODELS))
def test_a_synthesized_trace_is_a_valid_mahimahi_file(model: str) -> None:
    data = traces.synthesize_bytes(model, 30, seed=5)
    assert data.endswith(b"\n")
    lines = data.decode("ascii").splitlines()
    assert all(line.isdigit() for line in lines)
    values = [int(line) for line in lines]
    assert values == sorted(values)
    assert values[0] >= 1
    assert values[-1] == 30_000  # the period is the requested length
    assert traces.parse_trace(data).tolist() == values


def test_a_model_without_capacity_is_refused() -> None:
    never = traces.Model(
        "dead", "no capacity", (traces.CapacityState("off", 0.0, 1.0),), ((1.0,),), 0.0, 0.0
    )
    with pytest.raises(traces.TraceError, match="model dead has a mean rate of 0"):
        traces.synthesize(never, 0.5, 1, mean_mbps=1.0)


def test_even_a_trace_in_outage_ends_at_its_length() -> None:
    off = traces.Model(
        "off",
        "",
        (traces.CapacityState("off", 0.0, 1000.0), traces.CapacityState("on", 10.0, 0.001)),
        ((0.0, 1.0), (1.0, 0.0)),
        0.0,
        0.0,
    )
    times = traces.synthesize(off, 1, seed=3)
    assert times[-1] == 1000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seconds": 0}, "above 0 and at most 3600"),
        ({"seconds": -1}, "above 0 and at most 3600"),
        ({"seconds": 3600.5}, "above 0 and at most 3600"),
        ({"seconds": float("nan")}, "above 0 and at most 3600"),
        ({"seconds": 0.0001}, "at least 0.001"),
        ({"mean_mbps": 0}, "mean rate must be above 0"),
        ({"mean_mbps": 5000}, "at most 1000 Mbit/s"),
        ({"seconds": 3600, "mean_mbps": 1000}, "more than 30,000,000"),
        ({"model": "5g"}, "unknown model '5g'; the models are: lte, "),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"model": "lte", "seconds": 10, "seed": 1, **kwargs}
    with pytest.raises(traces.TraceError, match=message.replace("(", r"\(")):
        traces.synthesize(**args)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Reading and checking files


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "t.trace: empty file"),
        (b"\n", "t.trace:1: empty line"),
        (b"1\n\n2\n", "t.trace:2: empty line"),
        (b"1\n2\nx\n", "t.trace:3: 'x' is not a time"),
        (b"1\n-2\n", "t.trace:2: '-2' is not a time"),
        (b"1\n2.5\n", "t.trace:2: '2.5' is not a time"),
        (b"1\n 2\n", "t.trace:2: ' 2' is not a time"),
        (b"5\n7\n6\n", "t.trace:3: 6 is less than the line before \\(7\\)"),
        (b"0\n0\n", "t.trace:2: the last time is 0"),
        (b"1234567890123456\n", "t.trace:1: 1234567890123456 is too large"),
        ("\u0661\n".encode(), "t.trace:1: '\u0661' is not a time"),  # an Arabic-Indic 1
    ],
)
def test_a_bad_file_is_reported_with_its_line(data: bytes, message: str) -> None:
    with pytest.raises(traces.TraceError, match=f"^{message}"):
        traces.parse_trace(data, "t.trace")


def test_recorded_traces_in_their_usual_forms_are_read() -> None:
    # As Mahimahi's recordings: starting at 0, repeated times, no final newline, CRLF.
    assert traces.parse_trace(b"0\n0\n3\n3\n8").tolist() == [0, 0, 3, 3, 8]
    assert traces.parse_trace(b"1\r\n2\r\n").tolist() == [1, 2]


def test_stats_count_per_window_over_one_period() -> None:
    # 200 ms: 10 opportunities in the first window, none in the second but the last time.
    times = np.array([0] * 5 + [50] * 5 + [200], dtype=np.int64)
    st = traces.trace_stats(times)
    assert (st.period_ms, st.opportunities) == (200, 11)
    assert st.mean_mbps == pytest.approx(11 * 12000 / 200e3)
    # The time 200 is the start of the next period: 11 in the first window, 0 in the second.
    assert st.max_mbps == pytest.approx(11 * 12000 / 100e3)
    assert st.min_mbps == 0
    assert st.zero_windows == 0.5


# ---------------------------------------------------------------------------------------------
# The command


def test_list_shows_models_and_shipped_traces(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["traces", "list"]) == 0
    out = capsys.readouterr().out
    for name in traces.MODELS:
        assert name in out
    for t in traces.SHIPPED:
        assert t.name in out
    assert "10.5" in out  # lte-drive.trace's mean, in Mbit/s
    assert "120" in out


def test_synth_writes_the_trace_to_standard_output() -> None:
    proc = run_cli("traces", "synth", "--model", "lte", "--seconds", "5", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.encode() == traces.synthesize_bytes("lte", 5, 3)
    assert proc.stderr == ""


def test_synth_out_writes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "w.trace"
    argv = ["traces", "synth", "--model", "wifi", "--seconds", "4", "--seed", "9"]
    assert cli.main([*argv, "--mean-mbps", "10", "--out", str(out)]) == 0
    assert out.read_bytes() == traces.synthesize_bytes("wifi", 4, 9, mean_mbps=10)
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.trace"]
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "5g"], "traces synth: unknown model '5g'"),
        (["--seconds", "0"], "traces synth: seconds must be above 0"),
        (["--seconds", "4000"], "traces synth: seconds must be above 0 and at most 3600"),
        (["--seconds", "ten"], "traces synth: --seconds: not a number: 'ten'"),
        (["--seconds", "inf"], "traces synth: --seconds: not a finite number"),
        (["--mean-mbps", "-3"], "traces synth: the mean rate must be above 0"),
        (["--out", "no/such/dir/x.trace"], "traces synth: --out: no/such/dir is not a directory"),
        (["--out", "."], "traces synth: --out: . is a directory"),
    ],
)
def test_bad_synth_arguments_are_one_line_and_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = {"--model": "lte", "--seconds": "5", "--seed": "1"}
    args.update(dict(zip(extra[::2], extra[1::2], strict=True)))
    argv = ["traces", "synth", *(x for kv in args.items() for x in kv)]
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.err == f"pathweave: {message}" + captured.err.split(message, 1)[1]
    assert captured.err.count("\n") == 1
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.trace"
    out.write_bytes(b"1\n")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(traces.os, "fsync", full_disk)
    argv = ["traces", "synth", "--model", "lte", "--seconds", "5", "--seed", "1", "--out", out]
    assert cli.main(list(map(str, argv))) == cli.EXIT_FAILURE
    assert capsys.readouterr().err == (
        f"pathweave: traces synth: cannot write {out}: No space left on device\n"
    )
    assert out.read_bytes() == b"1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.trace"]


def test_an_interrupted_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(traces.os, "replace", interrupted)
    argv = ["traces", "synth", "--model", "3g", "--seconds", "5", "--seed", "1"]
    assert cli.main([*argv, "--out", str(tmp_path / "y.trace")]) == cli.EXIT_INTERRUPTED
    assert list(tmp_path.iterdir()) == []


def test_stats_checks_and_describes_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "c.trace"
    path.write_bytes(traces.synthesize_bytes("constant", 3, seed=0))
    proc = run_cli("traces", "stats", path)
    assert proc.returncode == 0, proc.stderr
    assert "3 s (3000 ms)" in proc.stdout
    assert "12.000 Mbit/s" in proc.stdout
    assert "3,000" in proc.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"3\n2\n", ":2: 2 is less than the line before (3)"),
        (b"1\nabc\n", ":2: 'abc' is not a time"),
        (b"0\n", ":1: the last time is 0"),
    ],
)
def test_stats_of_a_bad_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "bad.trace"
    path.write_bytes(content)
    assert cli.main(["traces", "stats", str(path)]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"pathweave: traces stats: {path}")
    assert message in err
    assert err.count("\n") == 1


def test_stats_of_a_missing_file_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["traces", "stats", str(tmp_path / "none")]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cannot read" in err
    assert err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# The shipped traces and the scenario that uses them


@pytest.mark.parametrize("shipped", traces.SHIPPED, ids=lambda t: t.name)
def test_a_shipped_trace_is_reproduced_byte_for_byte(shipped: traces.ShippedTrace) -> None:
    path = traces.shipped_path(shipped)
    assert path.stat().st_size < 1_000_000
    data = traces.synthesize_bytes(shipped.model, shipped.seconds, shipped.seed, shipped.mean_mbps)
    assert data == path.read_bytes(), f"{path.name} no longer matches its generator"
    assert (ROOT / "traces" / shipped.name).read_bytes() == data
    # Provenance is kept beside the files (the format has no comments).
    readme = (traces.traces_dir() / "README.md").read_text(encoding="utf-8")
    command = f"--model {shipped.model} --seconds {shipped.seconds:g} --seed {shipped.seed}"
    assert command in readme


def test_the_shipped_traces_are_in_the_package() -> None:
    assert traces.traces_dir().parent == Path(traces.__file__).parent
    names = {p.name for p in traces.traces_dir().glob("*.trace")}
    assert names == {t.name for t in traces.SHIPPED}


WIFI_LTE = ROOT / "scenarios" / "wifi-lte.toml"


def test_the_wifi_lte_scenario_names_shipped_traces() -> None:
    import tomllib

    doc = tomllib.loads(WIFI_LTE.read_text(encoding="utf-8"))
    for link in doc["link"]:
        rate = link["rate"]
        if isinstance(rate, dict):
            assert (WIFI_LTE.parent / rate["trace"]).resolve().is_file()


def test_the_wifi_lte_scenario_is_valid_and_runs(tmp_path: Path) -> None:
    proc = run_cli("validate", WIFI_LTE)
    assert proc.returncode == 0, proc.stderr
    short = tmp_path / "short.toml"
    text = WIFI_LTE.read_text(encoding="utf-8").replace('duration = "120s"', 'duration = "5s"')
    short.write_text(text.replace("../traces/", f"{traces.traces_dir()}/"), encoding="utf-8")
    run = run_cli("run", short, "--out", tmp_path / "out", "--quiet")
    assert run.returncode == 0, run.stderr
