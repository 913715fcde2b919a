"""Packet captures and the queue log through the command line and the API: the files a run
writes, how they balance against the links table, the limits, bad input, atomicity, and
(where tshark is installed) what Wireshark's dissectors make of them."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import pathweave
from conftest import write_scenario

# Two Reno flows, a two-subflow LIA connection sharing the bottleneck and a constant-rate UDP
# flow; everything stops sending at 1.5 s, so every link has drained by the end.
MIXED = textwrap.dedent(
    """
    name = "mixed"
    duration = "3s"
    seed = 3
    [tcp]
    recovery = "sack"
    [[link]]
    name = "bottleneck"
    rate = "10Mbps"
    delay = "10ms"
    queue = { type = "droptail", limit = "20pkt" }
    [[link]]
    name = "access{i}"
    count = 5
    rate = "100Mbps"
    delay = "2ms"
    queue = { type = "droptail", limit = "1000pkt" }
    [[flow]]
    name = "reno{i}"
    count = 2
    algorithm = "reno"
    path = ["access{i}", "bottleneck"]
    stop = "1.5s"
    [[flow]]
    name = "mp"
    algorithm = "lia"
    subflows = [ { path = ["access2", "bottleneck"] }, { path = ["access3", "bottleneck"] } ]
    stop = "1.5s"
    [[flow]]
    name = "udp"
    traffic = { type = "cbr", rate = "1Mbps", size = "500B" }
    path = ["access4", "bottleneck"]
    stop = "1.5s"
    """
)

EVENTS = MIXED + "[capture]\nevents = true\n"


def pathweave_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pathweave", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def read_pcapng(path: Path) -> list[tuple[int, bytes, int, str | None]]:
    """(timestamp ns, captured bytes, original length, comment) of each packet, read with
    the layout of the pcapng specification; every block's lengths must agree."""
    data = path.read_bytes()
    assert struct.unpack_from("<I", data, 0)[0] == 0x0A0D0D0A
    assert struct.unpack_from("<I", data, 8)[0] == 0x1A2B3C4D
    out = []
    at = 0
    while at < len(data):
        kind, length = struct.unpack_from("<II", data, at)
        assert length % 4 == 0
        assert at + length <= len(data)
        assert struct.unpack_from("<I", data, at + length - 4)[0] == length
        if kind == 1:
            assert struct.unpack_from("<H", data, at + 8)[0] == 101  # LINKTYPE_RAW
        elif kind == 6:
            _, hi, lo, cap, orig = struct.unpack_from("<IIIII", data, at + 8)
            packet = data[at + 28 : at + 28 + cap]
            o = at + 28 + (cap + 3) // 4 * 4
            comment = None
            while o < at + length - 4:
                code, olen = struct.unpack_from("<HH", data, o)
                if code == 0:
                    break
                if code == 1:
                    comment = data[o + 4 : o + 4 + olen].decode()
                o += 4 + (olen + 3) // 4 * 4
            out.append((hi << 32 | lo, packet, orig, comment))
        else:
            assert kind == 0x0A0D0D0A
        at += length
    return out


def test_a_run_with_pcap_writes_each_link_direction_and_the_queue_log(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path, EVENTS, "mixed.toml")
    out, pcap = tmp_path / "out", tmp_path / "pcap"
    proc = pathweave_cli("run", scenario, "--out", out, "--pcap", pcap, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert not (out / "capture").exists()  # --pcap chose the directory
    names = sorted(p.name for p in pcap.iterdir())
    assert names == sorted(
        ["capture.json", "packets.parquet"]
        + [
            f"{link}-{d}.pcapng"
            for link in ["bottleneck"] + [f"access{i}" for i in range(5)]
            for d in ("forward", "reverse")
        ]
    )
    links = pd.read_parquet(out / "links.parquet")
    log = pd.read_parquet(pcap / "packets.parquet")
    assert list(log.columns) == [
        "time_s", "link", "direction", "flow", "subflow", "sequence", "bytes", "event",
        "queue_bytes", "queue_packets",
    ]  # fmt: skip
    assert str(log["sequence"].dtype) == "uint64"
    assert str(log["bytes"].dtype) == "uint32"
    for row in links.itertuples():
        rows = log[(log["link"] == row.name) & (log["direction"] == row.direction)]
        count = rows["event"].value_counts()
        # Every link drained: each packet the link accepted was transmitted (dequeued) and
        # delivered or lost on the wire; the rest were dropped on arrival.
        assert count.get("dequeue", 0) == row.delivered_packets + row.drops_wire
        assert count.get("enqueue", 0) == count.get("dequeue", 0)
        assert count.get("drop", 0) == row.drops_overflow + row.drops_early + row.drops_forced
        assert count.get("enqueue", 0) + count.get("drop", 0) == row.arrivals
        if len(rows):
            assert rows["queue_packets"].iloc[-1] == 0
        packets = read_pcapng(pcap / f"{row.name}-{row.direction}.pcapng")
        dropped = sum(1 for p in packets if p[3] == "dropped: queue overflow")
        assert dropped == row.drops_overflow
        assert [p[0] for p in packets] == sorted(p[0] for p in packets)
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["capture"]["packet_log_rows"] == len(log)
    assert manifest["capture"]["packet_log_truncated"] is False
    assert json.loads((pcap / "capture.json").read_text())["packet_log_rows"] == len(log)


def test_a_capture_table_without_pcap_goes_into_the_output(tmp_path: Path) -> None:
    text = MIXED + '[capture]\nlinks = ["bottleneck"]\ndirections = "forward"\n'
    scenario = write_scenario(tmp_path, text, "mixed.toml")
    out = tmp_path / "out"
    proc = pathweave_cli("run", scenario, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "capture").iterdir()) == [
        "bottleneck-forward.pcapng",
        "capture.json",
    ]
    assert "capture: 1 pcapng files" in proc.stdout
    # The results directory with its capture may be replaced by a later run.
    assert pathweave_cli("run", scenario, "--out", out, "--quiet").returncode == 0


def test_the_same_seed_gives_the_same_capture(tmp_path: Path) -> None:
    sc = pathweave.parse(MIXED, "mixed.toml")
    pathweave.run(sc, pcap=tmp_path / "a")
    pathweave.run(sc, pcap=tmp_path / "b")
    for f in sorted((tmp_path / "a").glob("*.pcapng")):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name


def test_a_small_byte_limit_stops_the_file_not_the_run(tmp_path: Path) -> None:
    text = MIXED + '[capture]\nmax_bytes = "2kB"\n'
    scenario = write_scenario(tmp_path, text, "mixed.toml")
    pcap = tmp_path / "pcap"
    proc = pathweave_cli("run", scenario, "--out", tmp_path / "out", "--pcap", pcap, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "bottleneck-forward.pcapng reached max_bytes" in proc.stderr
    path = pcap / "bottleneck-forward.pcapng"
    assert path.stat().st_size <= 2000
    assert read_pcapng(path)  # whole blocks only: still a valid file
    info = json.loads((pcap / "capture.json").read_text())
    truncated = {f["name"] for f in info["files"] if f["truncated"]}
    assert "bottleneck-forward.pcapng" in truncated


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ('links = ["bottleneck", "nowhere"]', "capture.links[1]"),
        ('directions = "sideways"', "capture.directions"),
        ("snaplen = 0", "capture.snaplen"),
        ("snaplen = 1000000", "capture.snaplen"),
        ('max_bytes = "1B"', "capture.max_bytes"),
    ],
)
def test_a_bad_capture_table_is_one_line_and_exit_2(tmp_path: Path, table: str, field: str) -> None:
    scenario = write_scenario(tmp_path, MIXED + f"[capture]\n{table}\n", "mixed.toml")
    proc = pathweave_cli("run", scenario, "--out", tmp_path / "out", "--pcap", tmp_path / "p")
    assert proc.returncode == 2
    assert field in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixed.toml"]


def test_a_pcap_directory_that_cannot_be_written_is_refused_before_running(
    tmp_path: Path,
) -> None:
    scenario = write_scenario(tmp_path, MIXED, "mixed.toml")
    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    for target in (blocker, blocker / "below"):
        proc = pathweave_cli("run", scenario, "--out", tmp_path / "out", "--pcap", target)
        assert proc.returncode == 2
        assert proc.stderr.startswith("pathweave: --pcap: "), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mixed.toml", "taken"]
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    proc = pathweave_cli("run", scenario, "--out", tmp_path / "out", "--pcap", other)
    assert proc.returncode == 2
    assert (other / "notes.txt").read_text() == "keep"


def test_a_failed_run_leaves_no_capture(tmp_path: Path) -> None:
    def fail(_: object) -> None:
        raise RuntimeError("stopped by the test")

    sc = pathweave.parse(EVENTS.replace('duration = "3s"', 'duration = "60s"'), "m.toml")
    with pytest.raises(RuntimeError, match="stopped by the test"):
        pathweave.run(sc, pcap=tmp_path / "pcap", out=tmp_path / "out", on_progress=fail)
    assert list(tmp_path.iterdir()) == []


TSHARK = shutil.which("tshark")


def _tshark(*args: str | Path) -> str:
    """tshark's standard output for ``args``; the test fails if it exits non-zero."""
    assert TSHARK is not None
    proc = subprocess.run(
        [TSHARK, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def conversations(capture_file: Path, proto: str = "tcp") -> dict[str, int]:
    """Frames per conversation of ``capture_file`` (`tshark -z conv,PROTO`), keyed by the
    address of its pathweave sender (198.18.x.y); every conversation is one way here."""
    frames: dict[str, int] = {}
    for line in _tshark("-r", capture_file, "-q", "-z", f"conv,{proto}").splitlines():
        m = re.match(r"(198\.18\.\d+\.\d+):\d+\s+<->\s+\S+\s+\d+\s+\d+\s+\S+\s+(\d+)", line)
        if m:
            assert m.group(1) not in frames, f"{m.group(1)}: two conversations"
            frames[m.group(1)] = int(m.group(2))
    return frames


# The scenarios whose captures Wireshark checks, cut to 3 s: the headline (constant-rate links,
# one shared bottleneck) and wifi-lte (two trace-driven links, one subflow and one Reno flow
# on each). Trace paths are made absolute so the copy runs from anywhere.
CHECKED = ("headline", "wifi-lte")


def _short(name: str) -> pathweave.Scenario:
    text = Path(f"scenarios/{name}.toml").read_text()
    text = re.sub(r'(?m)^duration = "[^"]*"$', 'duration = "3s"', text)
    text = text.replace('"../traces/', f'"{Path("traces").resolve()}/')
    return pathweave.parse(text, f"{name}.toml")


@pytest.fixture(scope="module", params=CHECKED)
def capture(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, pathweave.Result]:
    """A 3 s run of one of ``CHECKED`` captured with the defaults, and its result."""
    if TSHARK is None:
        pytest.skip("tshark is not installed (make setup installs it as root with apt)")
    pcap = tmp_path_factory.mktemp(request.param) / "pcap"
    return pcap, pathweave.run(_short(request.param), pcap=pcap)


def test_wireshark_finds_no_malformed_packet(capture: tuple[Path, pathweave.Result]) -> None:
    files = sorted(capture[0].glob("*.pcapng"))
    assert files
    for f in files:
        report = _tshark("-r", f, "-q", "-z", "expert")
        assert "Malformed" not in report, f"{f.name}: {report}"
        # Warnings (segments lost upstream, out of order) and notes (retransmissions) are
        # what a lossy link shows; an error would be a packet Wireshark finds wrong.
        assert "Errors (" not in report, f"{f.name}: {report}"


def test_wireshark_counts_each_subflows_packets_as_the_subflows_table_does(
    capture: tuple[Path, pathweave.Result],
) -> None:
    """`tshark -z conv,tcp` on the forward file of each subflow's last link: one conversation
    per subflow, keyed by the sender's address (198.18.0.p for the p-th subflow over all
    flows, from 1), holding every data packet the subflow sent that reached that link's
    egress or was dropped there, plus the two forward packets of the handshake the capture
    adds (SYN, third ACK). So frames = packets_sent + 2 less those still upstream when the
    run ended: at most the last link's queue (its limit in packets) and what the access link
    was carrying (under 2 % of the packets here)."""
    pcap, res = capture
    limits = {
        link["name"]: int(str(link["queue"]["limit"]).removesuffix("pkt"))
        for link in tomllib.loads(Path(f"scenarios/{res.scenario.name}.toml").read_text())["link"]
    }
    frames: dict[str, int] = {}
    for last in sorted({path.split(">")[-1] for path in res.subflows["path"]}):
        found = conversations(pcap / f"{last}-forward.pcapng")
        assert not set(found) & set(frames), f"{found} and {frames}: a sender on two last links"
        frames |= found
    sent = res.subflows["packets_sent"].tolist()
    assert len(frames) == len(sent), (frames, sent)
    for p, (n, path) in enumerate(zip(sent, res.subflows["path"], strict=True)):
        got = frames[f"198.18.0.{p + 1}"]
        assert n > 100, (p, n)
        assert 0 <= n + 2 - got <= limits[path.split(">")[-1]] + 0.02 * n, (p, n, got)


def test_wireshark_ties_the_two_subflows_into_one_mptcp_connection(
    capture: tuple[Path, pathweave.Result], tmp_path: Path
) -> None:
    """The forward files of the links the connection's subflows cross last, merged into one
    (by `mergecap`, in time order, when the subflows end on different links): every packet
    with MPTCP options is in one MPTCP stream, and the stream is made of two subflows."""
    pcap, res = capture
    mp = res.subflows[res.subflows["flow"] == 0]
    assert len(mp) == 2
    files = [
        pcap / f"{last}-forward.pcapng" for last in sorted({p.split(">")[-1] for p in mp["path"]})
    ]
    if len(files) > 1:
        if shutil.which("mergecap") is None:
            pytest.skip("mergecap (installed with tshark) is missing")
        merged = tmp_path / "merged.pcapng"
        subprocess.run(["mergecap", "-w", merged, *files], check=True, capture_output=True)
        files = [merged]
    fields = _tshark(
        "-r", files[0], "-Y", "mptcp",
        "-T", "fields", "-e", "mptcp.stream", "-e", "tcp.srcport", "-e", "ip.src",
    )  # fmt: skip
    # A version-1 SYN carries no key yet, so Wireshark gives it no MPTCP stream.
    rows = [line.split("\t") for line in fields.splitlines() if line.split("\t")[0]]
    assert {r[0] for r in rows} == {"0"}, "one MPTCP connection"
    assert len({(r[1], r[2]) for r in rows}) == 2, "over two subflows"
