"""Measurement plugins in real namespaces with the real tools: numbers, failures, clean-up."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrig import measure
from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab import netns
from netrig.lab.teardown import pids_in_namespaces
from netrig.measure import Text
from netrig.rig import Lab
from tests.conftest import new_lab_name, requires_root, requires_tool

pytestmark = [requires_root, pytest.mark.root]
VETH_CEILING = 200e9  # bit/s: far above what veth does on any machine


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    """A routed chain of 3 whose n1–n2 link carries 2 aliases on each end."""
    spec = {
        "name": new_lab_name("m"),
        "topology": {"kind": "chain", "nodes": 3},
        "links": [{"a": "n1", "b": "n2", "aliases": 2}],
    }
    lab = Lab.from_spec(spec)
    lab.up()
    yield lab
    lab.down()


@pytest.fixture(scope="module")
def bare() -> Iterator[Lab]:
    """A chain of 3 without routing: n1 cannot reach n3."""
    spec = {
        "name": new_lab_name("m"),
        "topology": {"kind": "chain", "nodes": 3},
        "routing": {"protocol": "none"},
    }
    lab = Lab.from_spec(spec)
    lab.up()
    yield lab
    lab.down()


def run(lab: Lab, kind: str, options: dict[str, object]) -> list[Sample | Text]:
    plugin = measure.get(kind)
    opts = plugin.Options.model_validate(options)
    assert plugin.check(opts, lab.plan) == []
    try:
        return plugin.run(lab, opts, plugin.timeout(opts))
    finally:
        assert leftovers(lab) == [], "the plugin left processes in the lab"


def leftovers(lab: Lab) -> list[int]:
    inodes = {netns.ns_inode(n.ns) for n in lab.plan.nodes.values()}
    return pids_in_namespaces({i for i in inodes if i})


def summary(items: list[Sample | Text], stream: str | None = None) -> dict[str, float]:
    return {
        s.metric: s.value
        for s in items
        if isinstance(s, Sample) and s.t is None and s.stream == stream
    }


@requires_tool("iperf3")
def test_iperf3_tcp_across_two_hops(lab: Lab) -> None:
    items = run(lab, "iperf3", {"client": "n1", "server": "n3", "duration": 1})
    values = summary(items)
    assert 0 < values["throughput"] < VETH_CEILING
    assert {"sender_throughput", "retransmits", "cpu_client", "cpu_server"} <= set(values)
    intervals = [s for s in items if isinstance(s, Sample) and s.t is not None]
    assert intervals and all(s.value > 0 for s in intervals if s.metric == "throughput")


@requires_tool("iperf3")
def test_iperf3_udp_holds_the_target_rate_and_reports_loss(lab: Lab) -> None:
    items = run(
        lab,
        "iperf3",
        {"client": "n1", "server": "n2", "duration": 1, "protocol": "udp", "bitrate": "50mbit"},
    )
    values = summary(items)
    assert 30e6 < values["throughput"] < 60e6
    assert 0 <= values["loss_percent"] <= 100 and "jitter_ms" in values


@requires_tool("iperf3")
def test_iperf3_reverse_parallel_and_bidir(lab: Lab) -> None:
    items = run(
        lab,
        "iperf3",
        {"client": "n1", "server": "n2", "duration": 1, "reverse": True, "parallel": 2},
    )
    assert 0 < summary(items)["throughput"] < VETH_CEILING
    assert summary(items, "1")["throughput"] > 0 and summary(items, "2")["throughput"] > 0
    both = summary(
        run(
            lab,
            "iperf3",
            {"client": "n1", "server": "n2", "duration": 1, "bidir": True, "family": 6},
        )
    )
    assert both["throughput"] > 0 and both["throughput_reverse"] > 0


@requires_tool("iperf3")
def test_iperf3_per_alias_sums_one_stream_per_alias(lab: Lab) -> None:
    items = run(lab, "iperf3", {"client": "n1", "server": "n2", "duration": 1, "per_alias": True})
    values = summary(items)
    assert values["streams"] == 2
    server_aliases = [
        a.split("/")[0] for a in lab.plan.nodes["n2"].iface("eth0").addrs if ":" not in a
    ][1:]
    per_stream = [summary(items, addr)["throughput"] for addr in server_aliases]
    assert all(v > 0 for v in per_stream)
    assert values["throughput"] == pytest.approx(sum(per_stream))
    assert 0 < values["throughput"] < VETH_CEILING


@requires_tool("iperf3")
def test_iperf3_server_that_cannot_listen_fails_with_its_stderr(lab: Lab) -> None:
    blocker = lab.popen(
        "n2", ["iperf3", "-s", "-p", "5299"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 5
        while 5299 not in measure.listening_ports(blocker.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        plugin = measure.get("iperf3")
        opts = plugin.Options.model_validate(
            {"client": "n1", "server": "n2", "duration": 1, "port": 5299}
        )
        with pytest.raises(MeasurementFailed, match="exited") as info:
            plugin.run(lab, opts, plugin.timeout(opts))
        assert "in use" in info.value.stderr
    finally:
        measure.end_process(blocker)


@requires_tool("iperf3")
def test_iperf3_without_a_route_fails_and_leaves_nothing(bare: Lab) -> None:
    plugin = measure.get("iperf3")
    opts = plugin.Options.model_validate({"client": "n1", "server": "n3", "duration": 1})
    with pytest.raises(MeasurementFailed, match=r"unable to connect.*unreachable"):
        plugin.run(bare, opts, plugin.timeout(opts))
    assert leftovers(bare) == []
    # neighbours reach each other on their link addresses
    assert (
        summary(run(bare, "iperf3", {"client": "n1", "server": "n2", "duration": 1}))["throughput"]
        > 0
    )


def test_a_missing_tool_is_a_failed_measurement_naming_the_package(
    lab: Lab, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    plugin = measure.get("iperf3")
    opts = plugin.Options.model_validate({"client": "n1", "server": "n2", "duration": 1})
    with pytest.raises(MeasurementFailed, match="apt-get install iperf3"):
        plugin.run(lab, opts, 5.0)


@requires_tool("ping")
def test_ping_one_pair(lab: Lab) -> None:
    values = summary(run(lab, "ping", {"src": "n1", "dst": "n3", "count": 3, "interval": 0.01}))
    assert values["loss_percent"] == 0 and values["received"] == 3
    assert 0 < values["rtt_min"] <= values["rtt_avg"] <= values["rtt_max"] < 1000


def test_ping_that_meets_icmp_errors_sends_every_probe_and_says_what_came_back() -> None:
    """With a -w deadline iputils ping stops at its first ICMP error: a 20-probe run beyond
    the TTL failed with "1 sent, 0 received" and no word of why."""
    lab = Lab.from_spec(
        {
            "name": new_lab_name("m"),
            "topology": {"kind": "chain", "nodes": 6},
            "sysctls": {"net.ipv4.ip_default_ttl": "4"},  # n6 is 5 hops away: never reached
        }
    )
    try:
        lab.up()
        plugin = measure.get("ping")
        opts = plugin.Options.model_validate(
            {"src": "n1", "dst": "n6", "count": 20, "interval": 0.05}
        )
        with pytest.raises(MeasurementFailed) as info:
            plugin.run(lab, opts, plugin.timeout(opts))
        reason = info.value.reason
        assert reason.startswith("n1>n6: no reply from 198.18.0.6: 20 sent, 0 received, 100% loss")
        assert "(Time to live exceeded from 198.18.0.5" in reason  # n5 drops it
        kept = {s.metric: s.value for s in info.value.samples}
        assert kept["sent"] == 20 and kept["received"] == 0
        # one hop nearer it is answered, every probe
        near = opts.model_copy(update={"dst": "n5"})
        values = summary(plugin.run(lab, near, plugin.timeout(near)))
        assert values["sent"] == values["received"] == 20
        assert leftovers(lab) == []
    finally:
        lab.down()


@requires_tool("fping")
def test_fping_all_pairs_at_once(lab: Lab) -> None:
    items = run(lab, "ping", {"all_pairs": True, "count": 2, "interval": 0.01})
    streams = {s.stream for s in items if isinstance(s, Sample) and s.stream}
    assert streams == {f"{a}>{b}" for a in ("n1", "n2", "n3") for b in ("n1", "n2", "n3") if a != b}
    values = summary(items)
    assert values["loss_percent"] == 0 and values["sent"] == 12 and values["rtt_avg"] > 0


@requires_tool("fping")
def test_fping_chosen_pairs_and_an_unreachable_one(bare: Lab) -> None:
    ok = summary(
        run(
            bare,
            "ping",
            {"pairs": [["n1", "n2"], ["n3", "n2"]], "tool": "fping", "count": 2, "interval": 0.01},
        )
    )
    assert ok["loss_percent"] == 0
    plugin = measure.get("ping")
    opts = plugin.Options.model_validate(
        {"pairs": [["n1", "n2"], ["n1", "n3"]], "count": 2, "interval": 0.01, "tool": "fping"}
    )
    with pytest.raises(MeasurementFailed, match="n1>n3") as info:
        plugin.run(bare, opts, plugin.timeout(opts))
    lost = {s.metric: s.value for s in info.value.samples if s.stream == "n1>n3"}
    assert lost["received"] == 0 and "rtt_avg" not in lost  # a dead path has no RTT, not 0
    assert {s.metric: s.value for s in info.value.samples if s.stream == "n1>n2"}["received"] == 2
    single = plugin.Options.model_validate({"src": "n1", "dst": "n3", "count": 1})
    with pytest.raises(MeasurementFailed, match="unreachable"):
        plugin.run(bare, single, plugin.timeout(single))
    assert leftovers(bare) == []


@requires_tool("fping")
def test_per_probe_rtt_of_all_pairs_is_usable_pooled(lab: Lab, tmp_path: Path) -> None:
    """`all_pairs` with `per_probe`: every probe's rtt is stored per pair (stream n1>n2 …)
    only, and stat, compare and plot had said "has no metric 'rtt'". They pool the pairs."""
    from netrig.cli.cmd_compare import compare_text, stat_text
    from netrig.results.store import ResultStore
    from netrig.stats.stored import collect, load, resolve_metrics

    opts = {"all_pairs": True, "count": 3, "interval": 0.01, "per_probe": True}
    with ResultStore(tmp_path / "ap.db") as store:
        eid = store.begin_experiment("ap", "name: ap\nvary:\n  c: [1, 2]\n", {}, {"ping": "ping"})
        for rep in range(2):
            for c in (1, 2):
                samples = [s for s in run(lab, "ping", opts) if isinstance(s, Sample)]
                assert all(s.stream for s in samples if s.metric == "rtt")
                store.record_run(eid, {"c": c}, rep, "ok", {"ping": samples})
        store.finish_experiment(eid, "ok")
        data = load(store, "ap")
        (rtt,) = resolve_metrics(data, ["rtt"])
        assert rtt.streams == 6 and str(rtt) == "ping rtt (ms), pooled over 6 streams"
        groups = collect(data, rtt)
        assert [len(g.values) for g in groups] == [2 * 6 * 3, 2 * 6 * 3]
        assert all(0 < v < 100 for g in groups for v in g.values)
        text, code = stat_text(store, "ap", metric_names=["rtt"], summary_only=True)
        assert code == 0 and "== ping rtt (ms), pooled over 6 streams, c=1" in text
        text, code = compare_text(store, "ap:c=1", "ap:c=2", ["rtt"])
        assert code == 0 and "Mann-Whitney U" in text
        from netrig.report.plots import PlotRequest, figure, png_bytes

        for kind in ("cdf", "timeseries"):
            png = png_bytes(figure(data, PlotRequest(kind=kind, y="rtt", x="c", intervals=True)))
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
        # the measurement's own summary keeps its stream-less values only
        (avg,) = resolve_metrics(data, ["rtt_avg"])
        assert avg.streams == 0 and [len(g.values) for g in collect(data, avg)] == [2, 2]


def test_command_records_exit_code_duration_stdout_and_metrics(lab: Lab) -> None:
    items = run(
        lab,
        "command",
        {"node": "n2", "cmd": "echo rtt 1.25 ms; ip -o link | wc -l", "metrics": True},
    )
    values = summary(items)
    assert values["exit_code"] == 0 and 0 < values["duration"] < 5 and values["rtt"] == 1.25
    (text,) = [t for t in items if isinstance(t, Text)]
    assert text.name == "stdout" and text.text.splitlines()[0] == "rtt 1.25 ms"
    assert int(text.text.splitlines()[1]) == 3  # lo and the node's two ports, not the host's


def test_command_metrics_named_as_netrigs_own_are_kept_apart(lab: Lab) -> None:
    items = run(
        lab, "command", {"node": "n1", "cmd": "sleep 0.05; echo duration 2.5 s", "metrics": True}
    )
    durations = [s for s in items if isinstance(s, Sample) and s.metric == "duration"]
    assert len(durations) == 1 and 0.05 <= durations[0].value < 2.5
    assert summary(items)["stdout_duration"] == 2.5
    both = measure.get("command").Options.model_validate(
        {"node": "n1", "cmd": "echo duration 1; echo stdout_duration 2", "metrics": True}
    )
    with pytest.raises(MeasurementFailed, match="rename one of them") as info:
        measure.get("command").run(lab, both, 5.0)
    assert {s.metric for s in info.value.samples} == {"exit_code", "duration"}


def test_command_failures(lab: Lab) -> None:
    plugin = measure.get("command")
    bad = plugin.Options.model_validate({"node": "n1", "cmd": "echo oops >&2; exit 3"})
    with pytest.raises(MeasurementFailed, match="exited with 3: oops") as info:
        plugin.run(lab, bad, 5.0)
    assert info.value.stderr.strip() == "oops"
    assert {s.metric: s.value for s in info.value.samples}["exit_code"] == 3
    allowed = plugin.Options.model_validate({"node": "n1", "cmd": "exit 3", "ok_codes": [3]})
    assert summary(plugin.run(lab, allowed, 5.0))["exit_code"] == 3
    slow = plugin.Options.model_validate({"node": "n1", "cmd": ["sleep", "5"]})
    started = time.monotonic()
    with pytest.raises(MeasurementFailed, match=r"within 0\.3 s"):
        plugin.run(lab, slow, 0.3)
    assert time.monotonic() - started < 2
    missing = plugin.Options.model_validate({"node": "n1", "cmd": ["no-such-program-x"]})
    with pytest.raises(MeasurementFailed, match="not found"):
        plugin.run(lab, missing, 5.0)
    assert leftovers(lab) == []
