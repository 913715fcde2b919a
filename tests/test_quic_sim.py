"""`transport = "quic"` through the Python layer: the simulator's model of a multipath QUIC
endpoint runs from a scenario file, gives the tables a TCP flow gives, and bad keys are one
line and exit 2."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w

import pathweave

ROOT = Path(__file__).resolve().parent.parent


def _headline_quic(algorithm: str = "lia", seconds: int = 10) -> str:
    doc = tomllib.loads((ROOT / "scenarios" / "headline.toml").read_text(encoding="utf-8"))
    doc["duration"] = f"{seconds}s"
    for f in doc["flow"]:
        if f["name"] == "mp":
            f["algorithm"] = algorithm
            f["transport"] = "quic"
    return tomli_w.dumps(doc)


def test_a_quic_connection_and_a_tcp_flow_share_the_headline() -> None:
    res = pathweave.run(pathweave.parse(_headline_quic(), "headline-quic"), seed=1)
    flows = res.flows.set_index("name")
    # Both paths of the QUIC connection have rows, and both carried data.
    mp = list(res.flows["name"]).index("mp")
    sub = res.subflows[res.subflows["flow"] == mp]
    assert list(sub["subflow"]) == [0, 1]
    assert (sub["acked_bytes"] > 0).all()
    # The bottleneck carries both flows: their goodput cannot exceed its 20 Mbit/s.
    total = flows.loc["mp", "goodput_bps"] + flows.loc["reno", "goodput_bps"]
    assert 0.5 * 20e6 < total <= 20e6
    # The series carry the controller's state: LIA's alpha on every QUIC path sample.
    ss = res.subflow_series
    assert ss[ss["flow"] == mp]["alpha"].notna().any()


def test_the_same_seed_gives_the_same_tables() -> None:
    sc = pathweave.parse(_headline_quic("olia", 5), "headline-quic")
    a, b = pathweave.run(sc, seed=3), pathweave.run(sc, seed=3)
    for name in ("flows", "subflows", "flow_series", "subflow_series"):
        assert getattr(a, name).equals(getattr(b, name)), name


@pytest.mark.parametrize(
    ("flow", "needle"),
    [
        ('name = "q"\npath = ["l"]\ntransport = "sctp"', "transport"),
        (
            'name = "q"\npath = ["l"]\ntraffic = { type = "cbr", rate = "1Mbps" }\n'
            'transport = "quic"',
            "transport",
        ),
        ('name = "q"\npath = ["l"]\ntransport = "quic"\nscheduler = "linux"', "scheduler"),
    ],
)
def test_bad_transport_keys_are_one_line_and_exit_2(tmp_path: Path, flow: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'duration = "1s"\n[[link]]\nname = "l"\nrate = "10Mbps"\ndelay = "5ms"\n'
        f"[[flow]]\n{flow}\n",
        encoding="utf-8",
    )
    r = subprocess.run(
        [sys.executable, "-m", "pathweave", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], r.stderr
