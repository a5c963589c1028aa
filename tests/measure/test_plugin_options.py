"""Measurement plugins: the registry, option models, checks against a plan, argv, tools."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from netrig import measure
from netrig.measure.command import parse_metrics
from netrig.measure.iperf3 import Iperf3Options, alias_pairs, client_argv
from netrig.plan.lab import build_plan
from netrig.plan.model import LabPlan
from netrig.rig.prepare import load_text


def plan(text: str) -> LabPlan:
    return build_plan(load_text(text, "lab.yaml"))


CHAIN = plan("name: c\ntopology: {kind: chain, nodes: 3}\n")
ALIASES = plan("name: a\ntopology: {kind: chain, nodes: 3}\nlinks: [{a: n1, b: n2, aliases: 3}]\n")
BARE = plan("name: b\ntopology: {kind: chain, nodes: 3}\nrouting: {protocol: none}\n")


def test_every_plugin_is_registered_by_name() -> None:
    plugins = measure.load_plugins()
    assert {"iperf3", "ping", "command"} <= set(plugins)
    assert isinstance(measure.get("iperf3"), plugins["iperf3"])
    with pytest.raises(KeyError, match="did you mean 'iperf3'"):
        measure.get("iperf")


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("iperf3", {"client": "n1", "server": "n2", "bogus": 1}, "Extra inputs are not permitted"),
        ("iperf3", {"client": "n1"}, "server"),
        ("iperf3", {"client": "n1", "server": "n1"}, "pick two nodes"),
        ("iperf3", {"client": "n1", "server": "n2", "reverse": True, "bidir": True}, "exclude"),
        ("iperf3", {"client": "n1", "server": "n2", "protocol": "udp", "mss": 1400}, "TCP only"),
        ("iperf3", {"client": "n1", "server": "n2", "protocol": "sctp"}, "'tcp' or 'udp'"),
        ("iperf3", {"client": "n1", "server": "n2", "duration": 0}, "greater than or equal to 1"),
        ("iperf3", {"client": "n1", "server": "n2", "duration": 1.5}, "integer"),
        ("iperf3", {"client": "n1", "server": "n2", "window": "lots"}, "not a size"),
        ("iperf3", {"client": "n1", "server": "n2", "bitrate": "fast"}, "not a rate"),
        ("iperf3", {"client": "n1", "server": "n2", "parallel": 500}, "less than or equal to 128"),
        ("iperf3", {"client": "n1", "server": "n2", "interval": 0.05}, "0.1 s"),
        ("ping", {"src": "n1"}, "both src and dst"),
        ("ping", {"src": "n1", "dst": "n2", "all_pairs": True}, "exactly one"),
        ("ping", {}, "exactly one"),
        ("ping", {"all_pairs": True, "tool": "ping"}, "fping"),
        ("ping", {"pairs": [["n1", "n1"]]}, "same node"),
        ("ping", {"pairs": []}, "empty"),
        ("ping", {"src": "n1", "dst": "n2", "count": 0}, "greater than or equal to 1"),
        ("command", {"node": "n1"}, "cmd"),
        ("command", {"node": "n1", "cmd": "  "}, "cmd is empty"),
        ("command", {"node": "n1", "cmd": "true", "ok_codes": "zero"}, "valid list"),
        ("command", {"node": "n1", "cmd": "true", "name": "a b"}, "pattern"),
    ],
)
def test_bad_options_are_refused(kind: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        measure.get(kind).Options.model_validate(options)


def test_units_in_options_are_parsed() -> None:
    o = Iperf3Options.model_validate(
        {"client": "n1", "server": "n2", "bitrate": "1gbit", "window": "256K", "timeout": "90s"}
    )
    assert (o.bitrate, o.window, o.timeout) == (10**9, 262144, 90.0)


def test_node_references_are_checked_against_the_plan() -> None:
    iperf3 = measure.get("iperf3")
    bad = iperf3.Options.model_validate({"client": "n1", "server": "n4"})
    assert iperf3.check(bad, CHAIN) == [(("server",), "unknown node 'n4'; the lab has n1, n2, n3")]
    ping = measure.get("ping")
    pairs = ping.Options.model_validate({"pairs": [["n1", "n2"], ["n2", "n33"]]})
    assert ping.check(pairs, CHAIN) == [
        (("pairs", 1, 1), "unknown node 'n33' (did you mean 'n3'?); the lab has n1, n2, n3")
    ]
    command = measure.get("command")
    assert command.check(command.Options.model_validate({"node": "n3", "cmd": "true"}), CHAIN) == []


def test_per_alias_needs_a_direct_link_with_aliases() -> None:
    iperf3 = measure.get("iperf3")
    o = iperf3.Options.model_validate({"client": "n1", "server": "n2", "per_alias": True})
    assert "no IPv4 aliases" in iperf3.check(o, CHAIN)[0][1]
    assert iperf3.check(o, ALIASES) == []
    far = iperf3.Options.model_validate({"client": "n1", "server": "n3", "per_alias": True})
    assert "direct link" in iperf3.check(far, ALIASES)[0][1]
    pairs = alias_pairs(ALIASES, "n1", "n2", 4)
    assert len(pairs) == 3
    n1 = [a.split("/")[0] for a in ALIASES.nodes["n1"].ifaces[0].addrs if ":" not in a]
    n2 = [a.split("/")[0] for a in ALIASES.nodes["n2"].iface("eth0").addrs if ":" not in a]
    assert pairs == list(zip(n1[1:], n2[1:], strict=True))  # the link's own address is left out


def test_targets_use_link_addresses_only_without_routing() -> None:
    routed = measure.target_address(CHAIN, "n1", "n2", 4)
    assert routed == CHAIN.addr("n2")  # the loopback
    bare = measure.target_address(BARE, "n1", "n2", 4)
    assert bare == BARE.nodes["n2"].iface("eth0").addrs[0].split("/")[0]
    assert measure.target_address(BARE, "n1", "n3", 4) == BARE.addr("n3")  # no shared link
    with pytest.raises(KeyError, match="share no link"):
        measure.target_address(CHAIN, "n1", "n3", 4, "link")


def test_hosts_on_one_switch_are_targets_on_their_segment_without_routing() -> None:
    """Two hosts on a switch share a segment, not a link: `address: link` refused them
    ('share no link') and auto targeted a loopback nothing routes to."""
    switched = plan(
        "name: s\nnodes: [{name: sw, kind: switch}, {name: a}, {name: b}]\n"
        "links: [{a: a, b: sw}, {a: b, b: sw}]\nrouting: {protocol: none}\n"
        "addressing: {mode: shared-subnet}\n"
    )
    on_segment = switched.nodes["b"].iface("eth0").addrs[0].split("/")[0]
    assert measure.target_address(switched, "a", "b", 4) == on_segment
    assert measure.target_address(switched, "a", "b", 4, "link") == on_segment
    six = measure.target_address(switched, "a", "b", 6, "link")
    assert six == switched.nodes["b"].iface("eth0").addrs[1].split("/")[0]


def test_iperf3_client_argv_reflects_the_options() -> None:
    o = Iperf3Options.model_validate(
        {
            "client": "n1",
            "server": "n2",
            "duration": 2,
            "parallel": 4,
            "reverse": True,
            "bitrate": "100mbit",
            "mss": 1400,
            "window": "1M",
            "omit": 1,
            "congestion": "cubic",
        }
    )
    argv = client_argv(o, "198.18.0.2", 5201)
    assert argv[:3] == ["iperf3", "-c", "198.18.0.2"] and "--json" in argv
    joined = " ".join(argv)
    for part in ("-t 2", "-P 4", "-R", "-b 100000000", "-M 1400", "-w 1048576", "-O 1", "-C cubic"):
        assert part in joined
    udp = client_argv(
        Iperf3Options.model_validate(
            {"client": "n1", "server": "n2", "protocol": "udp", "bidir": True}
        ),
        "x",
        5300,
        bind="y",
    )
    assert "-u" in udp and "--bidir" in udp and udp[udp.index("-B") + 1] == "y"
    assert udp[udp.index("-p") + 1] == "5300"


def test_timeouts_cover_the_measurement() -> None:
    iperf3, ping = measure.get("iperf3"), measure.get("ping")
    o = iperf3.Options.model_validate({"client": "n1", "server": "n2", "duration": 5, "omit": 2})
    assert iperf3.timeout(o) > 7
    assert iperf3.timeout(o.model_copy(update={"timeout": 3.0})) == 3.0
    p = ping.Options.model_validate({"src": "n1", "dst": "n2", "count": 10, "interval": 0.5})
    assert ping.timeout(p) > 5


def test_tools_name_their_debian_packages() -> None:
    ping = measure.get("ping")
    assert ping.tools(ping.Options.model_validate({"src": "n1", "dst": "n2"})) == {
        "ping": "iputils-ping"
    }
    assert ping.tools(ping.Options.model_validate({"all_pairs": True})) == {"fping": "fping"}
    assert measure.get("iperf3").tools(None) == {"iperf3": "iperf3"}


def test_missing_tools_are_found_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert measure.missing_tools({"iperf3": "iperf3"}) == {"iperf3": "iperf3"}


def test_command_metrics_from_stdout() -> None:
    assert [(s.metric, s.value, s.unit) for s in parse_metrics("42\n")] == [("value", 42.0, "")]
    text = "rtt 1.5 ms\nhops: 3\nrate=2e9 bit/s\nnoise here\nnan_metric nan\n"
    assert [(s.metric, s.value, s.unit) for s in parse_metrics(text)] == [
        ("rtt", 1.5, "ms"),
        ("hops", 3.0, ""),
        ("rate", 2e9, "bit/s"),
    ]
    assert parse_metrics("no numbers") == []
    # a decimal comma is no unit: the line is no metric (it had been stored as 1, unit ",5")
    assert [(s.metric, s.value, s.unit) for s in parse_metrics("x 1,5\nloss 50%\nt 45 °C\n")] == [
        ("loss", 50.0, "%"), ("t", 45.0, "°C")
    ]


def test_command_metrics_never_take_netrigs_own_names() -> None:
    """A script's `duration 2.5 s` had been stored as `duration` beside netrig's wall
    clock: N doubled, the median half of each."""
    got = [(s.metric, s.value, s.unit) for s in parse_metrics("duration 2.5 s\nexit_code 7\nv 1\n")]
    assert got == [("stdout_duration", 2.5, "s"), ("stdout_exit_code", 7.0, ""), ("v", 1.0, "")]
    with pytest.raises(ValueError, match=r"'duration' and 'stdout_duration'.*rename one"):
        parse_metrics("duration 1\nstdout_duration 2\n")


def test_per_alias_totals_and_the_wall_clock_aggregate(recorded) -> None:  # type: ignore[no-untyped-def]
    from netrig.measure.iperf3 import _alias_samples
    from netrig.measure.parse_iperf3 import parse_iperf3

    stdout, _ = recorded("iperf3", "tcp-server")  # with the server's (receiver's) intervals
    one = parse_iperf3(stdout)
    pairs = [("c1", "s1"), ("c2", "s2")]
    # the second stream ended 2 s after the first: they overlapped only partly
    outputs = [(stdout, "1000.0\n"), (stdout, "warning: x\n1002.0\n")]
    samples = _alias_samples(pairs, outputs, [])
    total = {s.metric: s.value for s in samples if s.stream is None and s.t is None}
    assert total["streams"] == 2
    assert total["throughput"] == pytest.approx(2 * one.throughput)
    span = 2.0 + one.duration
    assert total["throughput_wall"] == pytest.approx(2 * one.throughput * one.duration / span)
    assert total["start_spread"] == pytest.approx(2.0)
    per = [s for s in samples if s.stream == "s2" and s.metric == "throughput"]
    assert any(s.t is None for s in per) and any(s.t is not None for s in per)


def test_per_alias_fails_when_a_stream_did_not_end(recorded) -> None:  # type: ignore[no-untyped-def]
    from netrig.base.sample import MeasurementFailed
    from netrig.measure.iperf3 import _alias_samples

    stdout, _ = recorded("iperf3", "tcp")
    refused, _ = recorded("iperf3", "error-refused")
    with pytest.raises(MeasurementFailed, match="1 of 2 alias streams failed: s2"):
        _alias_samples([("c1", "s1"), ("c2", "s2")], [(stdout, "5.0\n"), (refused, "6.0\n")], [])
    with pytest.raises(MeasurementFailed, match="did not run to its end"):
        _alias_samples([("c1", "s1")], [(stdout, "")], [])


def test_command_tools_are_its_shell_or_its_program() -> None:
    command = measure.get("command")
    assert command.tools(command.Options.model_validate({"node": "n1", "cmd": "ls | wc"})) == {
        "sh": "dash"
    }
    argv = command.Options.model_validate({"node": "n1", "cmd": ["no-such-tool-x", "-v"]})
    assert command.tools(argv) == {"no-such-tool-x": ""}
    assert measure.missing_tools(command.tools(argv)) == {"no-such-tool-x": ""}
