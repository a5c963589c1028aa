"""pps without root: options, checks against a plan, generator command lines and configs,
and the parsers on recorded output (tests/data/pps)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from netrig import measure
from netrig.base.sample import MeasurementFailed
from netrig.measure.parse_pps import (
    netdev_counters,
    parse_netrig_gen,
    parse_trafgen,
    udp_received,
)
from netrig.measure.pps import (
    Egress,
    PpsOptions,
    netrig_gen_args,
    netrig_gen_binary,
    parse_pps,
    trafgen_argv,
    trafgen_config,
    trafgen_slack,
)
from netrig.plan.lab import build_plan
from netrig.rig.prepare import load_text

DATA = Path(__file__).resolve().parent.parent / "data" / "pps"
DIAMOND = build_plan(
    load_text(
        "name: d\nnodes: [{name: s}, {name: r1}, {name: pa}, {name: pb}, {name: r2}, {name: k}]\n"
        "links: [{a: s, b: r1}, {a: r1, b: pa}, {a: r1, b: pb}, {a: pa, b: r2}, {a: pb, b: r2},"
        " {a: r2, b: k}]\n",
        "lab.yaml",
    )
)
V6_ONLY = build_plan(
    load_text("name: v\ntopology: {kind: pair}\naddressing: {ipv4: false}\n", "lab.yaml")
)
WAY = Egress("eth0", "02:00:00:00:00:01", "02:00:00:00:00:02")


def opts(**kw: object) -> PpsOptions:
    return PpsOptions.model_validate({"src": "s", "dst": "k", **kw})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"src": "s", "dst": "s"}, "pick two nodes"),
        ({"src": "s"}, "dst"),
        ({"src": "s", "dst": "k", "rate": "fast"}, "not a packet rate"),
        ({"src": "s", "dst": "k", "rate": 0}, "greater than 0"),
        ({"src": "s", "dst": "k", "frame_size": 32}, "greater than or equal to 64"),
        ({"src": "s", "dst": "k", "family": 6, "frame_size": 64}, "at least 66"),
        ({"src": "s", "dst": "k", "generator": "pktgen"}, "'auto', 'netrig' or 'trafgen'"),
        ({"src": "s", "dst": "k", "sport": 65500, "flows": 100}, "beyond port 65535"),
        ({"src": "s", "dst": "k", "duration": 0}, "more than 0 s"),
        ({"src": "s", "dst": "k", "interval": 0.01}, "0.05 s"),
        ({"src": "s", "dst": "k", "rate": 1, "duration": 0.5}, "less than one packet"),
        ({"src": "s", "dst": "k", "flow": 3}, "Extra inputs are not permitted"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        measure.get("pps").Options.model_validate(options)


def test_rates_take_units() -> None:
    assert [parse_pps(v) for v in (20000, "20k", "20kpps", "1.5Mpps", "2 Gpps")] == [
        20e3,
        20e3,
        20e3,
        1.5e6,
        2e9,
    ]
    assert opts(rate="20kpps", duration="2s").rate == 20000.0


def test_checks_name_nodes_and_addresses() -> None:
    pps = measure.get("pps")
    assert pps.check(opts(watch=["r1", "r2"]), DIAMOND) == []
    assert pps.check(opts(dst="kk"), DIAMOND) == [
        (("dst",), "unknown node 'kk' (did you mean 'k'?); the lab has s, r1, pa, pb, r2, k")
    ]
    assert pps.check(opts(watch=["r1", "r9"]), DIAMOND)[0][0] == ("watch", 1)
    no_v4 = PpsOptions.model_validate({"src": "n1", "dst": "n2"})
    assert pps.check(no_v4, V6_ONLY) == [
        (("src",), "node 'n1' has no IPv4 address (see addressing:)")
    ]
    assert pps.check(no_v4.model_copy(update={"family": 6, "frame_size": 78}), V6_ONLY) == []


def test_tools_name_their_debian_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # netrig_gen not built yet
    pps = measure.get("pps")
    assert pps.tools(opts(generator="trafgen")) == {"trafgen": "netsniff-ng"}
    assert pps.tools(opts(generator="netrig")) == {"gcc": "gcc"}


def test_netrig_gen_arguments() -> None:
    argv = netrig_gen_args(opts(rate="20k", duration=1, flows=8), WAY, "198.18.0.1", "198.18.0.6")
    joined = " ".join(argv)
    for part in (
        "--dev eth0",
        "--dst-mac 02:00:00:00:00:02",
        "--size 60",  # 64-byte frames: the 4-byte FCS is not sent on a veth
        "--flows 8",
        "--rate 20000",
        "--count 20000",
    ):
        assert part in joined
    assert "--rate" not in netrig_gen_args(opts(), WAY, "198.18.0.1", "198.18.0.6")
    assert "--qdisc" not in argv
    assert netrig_gen_args(opts(), WAY, "198.18.0.1", "198.18.0.6", qdisc=True)[-1] == "--qdisc"


def test_a_run_with_events_goes_through_the_qdisc_unless_told() -> None:
    """A `link … rate` event puts a token bucket on src's link mid-run: a generator that
    bypasses the qdisc would not see it."""
    pps = measure.get("pps")
    assert pps.during_events(opts()).qdisc == "use"
    assert pps.during_events(opts(qdisc="bypass")).qdisc == "bypass"


def test_trafgen_config_and_arguments() -> None:
    cfg = trafgen_config(opts(flows=256), WAY, "198.18.0.1", "198.18.0.6")
    assert "eth(da=02:00:00:00:00:02, sa=02:00:00:00:00:01)" in cfg
    assert "ipv4(saddr=198.18.0.1, daddr=198.18.0.6" in cfg
    assert "udp(sport=dinc(10000, 10255), dport=9), fill(0x00, 18)" in cfg  # 14+20+8+18 = 60
    v6 = trafgen_config(opts(family=6, flows=1, frame_size=66), WAY, "2001:2::1", "2001:2::6")
    assert "ipv6(saddr=2001:2::1" in v6 and "udp(sport=10000, dport=9) }" in v6
    argv = trafgen_argv(opts(rate="20k", duration=2, threads=2), "eth0", "/tmp/x.cfg")
    assert argv[:5] == ["trafgen", "-o", "eth0", "-c", "/tmp/x.cfg"]
    assert "--no-sock-mem" in argv and "-Q" in argv  # the host's sysctls and IRQs untouched
    assert " ".join(argv).endswith("-P 2 --no-sock-mem -Q -b 20000pps")
    assert "-q" not in argv and "-q" in trafgen_argv(opts(), "eth0", "/tmp/x.cfg", qdisc=True)


def test_trafgen_summary_with_two_workers() -> None:
    report = parse_trafgen((DATA / "trafgen-2cpus.stdout").read_text())
    assert report.sent == 1095936 == 547584 + 548352
    assert report.seconds == pytest.approx(0.983705)  # the slower worker
    with pytest.raises(MeasurementFailed, match="no summary"):
        parse_trafgen("Running! Hang up with ^C!\n")


def test_netrig_gen_report() -> None:
    report = parse_netrig_gen((DATA / "netrig_gen.stdout").read_text())
    assert (report.sent, report.refused, report.seconds) == (503296, 0, 1.000112)
    with pytest.raises(MeasurementFailed, match="no report"):
        parse_netrig_gen("netrig_gen: usage\n")


def test_sink_counters() -> None:
    dev = netdev_counters((DATA / "netdev.txt").read_text())
    assert set(dev) == {"lo", "eth0"}
    assert (dev["eth0"].rx_packets, dev["eth0"].tx_packets) == (
        503300,
        11,
    )  # 4 more than sent: IPv6 housekeeping
    assert (
        udp_received((DATA / "snmp.txt").read_text(), 4) == 503296
    )  # exactly what netrig_gen sent
    assert udp_received((DATA / "snmp6.txt").read_text(), 6) == 0


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_netrig_gen_is_built_once_at_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = netrig_gen_binary()
    assert path.startswith(str(tmp_path / "netrig")) and os.access(path, os.X_OK)
    built = os.stat(path).st_mtime_ns
    assert netrig_gen_binary() == path and os.stat(path).st_mtime_ns == built  # cached
    bad = subprocess.run([path, "--dev", "eth0"], capture_output=True, text=True)
    assert (
        bad.returncode == 2 and "--src-mac, --dst-mac, --src and --dst are required" in bad.stderr
    )


def test_trafgen_unpaced_through_a_shaper_is_refused_with_what_works() -> None:
    """trafgen without `rate:` on a rate-limited link failed every run ('Flushing TX_RING
    failed: Resource temporarily unavailable') once pps sent through src's qdisc."""
    shaped = build_plan(load_text(
        "name: s\ntopology: {kind: chain, nodes: 3}\nlinks: [{a: n1, b: n2, rate: 10mbit}]\n",
        "lab.yaml"))  # fmt: skip
    pps = measure.get("pps")
    unpaced = PpsOptions.model_validate({"src": "n1", "dst": "n3", "generator": "trafgen"})
    assert pps.check(unpaced, shaped) == [(("generator",), (
        "trafgen cannot send unpaced through the shaper of n1–n2 (it stops when the queue is "
        "full: 'Flushing TX_RING failed'); give pps a rate: (at most the link's), or "
        "generator: netrig"))]  # fmt: skip
    for fine in ({"rate": "5kpps"}, {"qdisc": "bypass"}, {"generator": "netrig"}):
        paced = {"src": "n1", "dst": "n3", "generator": "trafgen", **fine}
        assert pps.check(PpsOptions.model_validate(paced), shaped) == []
    assert pps.check(unpaced.model_copy(update={"src": "n2", "dst": "n3"}), shaped) != []  # n2 too
    assert pps.check(unpaced.model_copy(update={"src": "n3", "dst": "n2"}), shaped) == []


def test_more_received_than_trafgen_said_it_sent_is_tolerated_only_a_little() -> None:
    """trafgen's own count fell short by 230 of 548,352 frames past a shaper, and the run
    had failed as if other UDP had reached the sink; netrig_gen's count is exact."""
    assert trafgen_slack("netrig", 548_352) == 0
    assert trafgen_slack("trafgen", 548_352) == 548 and trafgen_slack("trafgen", 100) == 2
