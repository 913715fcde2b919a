"""`pathweave quic serve | send` over this host's loopback addresses (no privileges needed):
a two-path transfer checked end to end, its tables, and one clear line for each bad input."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

PW = [sys.executable, "-m", "pathweave"]


def _serve(tmp_path: Path, transfers: int = 1) -> tuple[subprocess.Popen[str], int, Path]:
    cert = tmp_path / "receiver.pem"
    proc = subprocess.Popen(
        [
            *PW,
            "quic",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cert-out",
            str(cert),
            "--transfers",
            str(transfers),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(
        r"listening on 127\.0\.0\.1:(\d+) \(UDP\); certificate sha256 ([0-9a-f]{64})", line
    )
    assert m, line + (proc.stderr.read() if proc.stderr else "")
    return proc, int(m.group(1)), cert


def _stop(proc: subprocess.Popen[str]) -> str:
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


def test_a_two_path_olia_transfer_is_checked_and_its_tables_written(tmp_path: Path) -> None:
    proc, port, cert = _serve(tmp_path)
    out = tmp_path / "res"
    r = subprocess.run(
        [
            *PW,
            "quic",
            "send",
            "--to",
            f"127.0.0.1:{port}",
            "--from",
            "127.0.0.1,127.0.0.2",
            "--algorithm",
            "olia",
            "--bytes",
            "6MB",
            "--cert",
            str(cert),
            "--out",
            str(out),
            "--interval",
            "20ms",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    served = _stop(proc)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6000000 bytes" in r.stdout, r.stdout
    assert "matches what was sent" in r.stdout, r.stdout
    # The receiver's own line: the same count and the same hash.
    sent_hash = re.search(r"sha256 ([0-9a-f]{64})", r.stdout)
    assert sent_hash
    assert "received 6000000 bytes" in served
    assert sent_hash.group(1) in served
    flows = pd.read_parquet(out / "flows.parquet")
    subflows = pd.read_parquet(out / "subflows.parquet")
    assert list(flows["delivered_bytes"]) == [6_000_000]
    assert list(flows["algorithm"]) == ["olia"]
    assert list(subflows["subflow"]) == [0, 1]
    # Acknowledged UDP payload covers every data byte (it adds headers; it cannot be less).
    assert subflows["acked_bytes"].sum() >= 6_000_000
    series = pd.read_parquet(out / "subflow_series.parquet")
    assert len(series) > 0
    assert (series["cwnd_bytes"] > 0).all()
    assert (out / "run.json").read_text().count('"engine": "quic"') == 1


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--algorithm", "cubic"], "--algorithm cubic: unknown (allowed: reno"),
        (["--algorithm", "lia", "--from", "127.0.0.1,198.18.255.254"], "198.18.255.254"),
        (["--algorithm", "lia", "--bytes", "0"], "--bytes"),
        (["--algorithm", "bmc", "--arithmetic", "linux"], "--arithmetic"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(extra: list[str], needle: str) -> None:
    args = {
        "--to": "127.0.0.1:9",
        "--from": "127.0.0.1",
        "--bytes": "1MB",
        "--fingerprint": "0" * 64,
    }
    for i in range(0, len(extra), 2):
        args[extra[i]] = extra[i + 1]
    argv = [x for kv in args.items() for x in kv]
    r = subprocess.run([*PW, "quic", "send", *argv], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], r.stderr


def test_a_peer_that_does_not_answer_gives_up_at_the_stated_timeout() -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        r = subprocess.run(
            [
                *PW,
                "quic",
                "send",
                "--to",
                f"127.0.0.1:{port}",
                "--from",
                "127.0.0.1",
                "--algorithm",
                "lia",
                "--bytes",
                "1MB",
                "--fingerprint",
                "0" * 64,
                "--connect-timeout",
                "1s",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"no answer from 127.0.0.1:{port} within 1.0 s" in lines[0]
