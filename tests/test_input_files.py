"""Scenario and sweep files are read only when they are regular files within the size limit:
a named pipe, a device, a directory or an oversized file is refused at once, by every command
that reads one, with one message that names the file once."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import pathweave
from conftest import SMALL, write_scenario
from pathweave import cli
from pathweave.api import ENV_MAX_SCENARIO_BYTES

COMMANDS = (
    ["validate"],
    ["run", "--quiet"],
    ["sweep", "--quiet"],
    ["compare", "--flow", "reno0", "--quiet"],
)


def _run_within(argv: list[str], seconds: float) -> tuple[int | None, float]:
    """``cli.main(argv)`` in a thread; its exit code (None if it had not returned within
    ``seconds``) and the time it took."""
    result: list[int] = []
    start = time.perf_counter()
    thread = threading.Thread(target=lambda: result.append(cli.main(argv)), daemon=True)
    thread.start()
    thread.join(seconds)
    return (result[0] if result else None), time.perf_counter() - start


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.toml"
    os.mkfifo(path)
    return path


def _directory(tmp_path: Path) -> Path:
    path = tmp_path / "dir.toml"
    path.mkdir()
    return path


def _oversized(tmp_path: Path) -> Path:
    path = tmp_path / "huge.toml"
    with path.open("wb") as f:
        f.truncate(60 * 1024 * 1024)  # sparse: 60 MB by its size, nothing to read first
    return path


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_fifo, "a named pipe, not a regular file"),
        (lambda _: Path("/dev/zero"), "a device, not a regular file"),
        (_directory, "a directory, not a regular file"),
        (_oversized, "62914560 bytes; scenario files are limited to 4194304 bytes"),
    ],
    ids=["fifo", "dev-zero", "directory", "oversized"],
)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_file_that_is_not_a_small_regular_file_is_refused_at_once(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: object,
    why: str,
    command: list[str],
) -> None:
    if not Path("/dev/zero").exists() and "device" in why:
        pytest.skip("no /dev/zero")
    path = make(tmp_path)  # type: ignore[operator]
    code, took = _run_within([command[0], str(path), *command[1:]], 5.0)
    assert code == cli.EXIT_BAD_INPUT
    assert took < 1.0
    err = capsys.readouterr().err
    assert why in err
    assert err.count(str(path)) == 1, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def test_the_limit_can_be_raised_and_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(tmp_path, SMALL)
    size = path.stat().st_size
    monkeypatch.setenv(ENV_MAX_SCENARIO_BYTES, str(size - 1))
    assert cli.main(["validate", str(path)]) == cli.EXIT_BAD_INPUT
    assert f"{size} bytes; scenario files are limited to {size - 1} bytes" in (
        capsys.readouterr().err
    )
    monkeypatch.setenv(ENV_MAX_SCENARIO_BYTES, str(size))
    assert cli.main(["validate", str(path)]) == 0
    monkeypatch.setenv(ENV_MAX_SCENARIO_BYTES, "4MB")
    assert cli.main(["validate", str(path)]) == cli.EXIT_BAD_INPUT
    assert f"{ENV_MAX_SCENARIO_BYTES}='4MB': must be a whole number of bytes" in (
        capsys.readouterr().err
    )


def test_the_api_refuses_the_same_files(tmp_path: Path) -> None:
    with pytest.raises(pathweave.ScenarioError, match="a directory, not a regular file"):
        pathweave.load(_directory(tmp_path))
    with pytest.raises(pathweave.ScenarioError, match="a named pipe, not a regular file"):
        pathweave.load_plan(_fifo(tmp_path))


def test_text_that_is_not_utf8_is_refused_with_its_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    assert cli.main(["validate", str(path)]) == cli.EXIT_BAD_INPUT
    assert "not UTF-8 text (invalid byte at offset 11)" in capsys.readouterr().err
