"""`events:` and `stop_on_failure:` in experiment files: read, checked per sweep point,
errors at file:line:col before anything is created."""

from __future__ import annotations

import textwrap

import pytest

from netrig.model.load import SpecError
from netrig.rig.prepare import load_experiment_text


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_experiment_text(textwrap.dedent(text), "exp.yaml")
    return [str(p) for p in info.value.problems]


def test_events_follow_the_sweep_and_are_sorted_by_time() -> None:
    exp = load_experiment_text(
        textwrap.dedent(
            """\
            name: cut
            topology: {kind: ring, nodes: 6}
            routing: {protocol: babel}
            measure:
              - iperf3: {client: n1, server: n4, duration: 3, interval: 0.1}
              - ping: {src: n1, dst: n4, count: 300, interval: 10ms, per_probe: true}
            events:
              - "node n{cut} stop @ 2s"
              - "link n{cut}-n{cut + 1} down @ 500ms"
            vary: {cut: [2, 3]}
            """
        )
    )
    assert [[str(e) for e in p.events] for p in exp.points] == [
        ["link n2-n3 down @ 0.5s", "node n2 stop @ 2s"],
        ["link n3-n4 down @ 0.5s", "node n3 stop @ 2s"],
    ]
    assert not exp.stop_on_failure


def test_a_link_that_does_not_exist_and_an_unreadable_event_point_at_their_line() -> None:
    found = problems(
        """\
        name: cut
        topology: {kind: ring, nodes: 6}
        measure:
          - ping: {src: n1, dst: n4}
        events:
          - link n1-n4 down @ 1s
          - link n1-n2 sideways @ 1s
          - link n1-n9 up @ 2s
        """
    )
    assert found[0].startswith("exp.yaml:6:")
    assert "no link between n1 and n4" in found[0] and "n1 is linked to n2, n6" in found[0]
    assert found[1].startswith("exp.yaml:7:") and "cannot read event" in found[1]
    assert found[2].startswith("exp.yaml:8:") and "n9" in found[2]


def test_stopping_a_node_needs_a_routing_daemon() -> None:
    found = problems(
        """\
        name: cut
        topology: {kind: chain, nodes: 3}
        measure:
          - ping: {src: n1, dst: n3}
        events: ["node n2 stop @ 1s"]
        """
    )
    assert len(found) == 1 and found[0].startswith("exp.yaml:5:")
    assert "protocol static runs no daemon" in found[0]


def test_stopping_a_node_of_services_or_cmd_needs_no_routing_daemon() -> None:
    """Its services (or cmd) are daemons that `netrig node LAB N stop|start` stops and
    starts: the events were refused, "protocol static runs no daemon to stop or start"."""
    exp = load_experiment_text(
        textwrap.dedent(
            """\
            name: cut
            nodes:
              - {name: client}
              - {name: web, services: [{nginx: {files: {1k: 1024}}}]}
              - {name: job, cmd: sleep 60}
            links: [{a: client, b: web}, {a: client, b: job}]
            measure:
              - wrk: {client: client, server: web, duration: 5}
            events: [node web stop @ 1s, node job stop @ 1s, node web start @ 3s]
            """
        ),
        "exp.yaml",
    )
    assert [str(e) for e in exp.points[0].events] == [
        "node web stop @ 1s",
        "node job stop @ 1s",
        "node web start @ 3s",
    ]
    found = problems(
        """\
        name: cut
        nodes: [{name: client}, {name: web, services: [nginx]}]
        links: [{a: client, b: web}]
        measure:
          - wrk: {client: client, server: web, duration: 5}
        events: [node client stop @ 1s]
        """
    )
    assert len(found) == 1 and found[0].startswith("exp.yaml:6:")
    assert "node client has no services and no cmd" in found[0]


def test_stop_on_failure_is_a_boolean() -> None:
    found = problems(
        """\
        name: longest
        topology: {kind: chain, nodes: "{n}"}
        measure:
          - ping: {src: n1, dst: "n{n}"}
        vary: {n: [2, 3]}
        stop_on_failure: maybe
        """
    )
    assert found[0].startswith("exp.yaml:6:") and "stop_on_failure" in found[0]


def test_per_probe_is_fping_only() -> None:
    found = problems(
        """\
        name: p
        topology: {kind: pair}
        measure:
          - ping: {src: n1, dst: n2, tool: ping, per_probe: true}
        """
    )
    assert "per_probe uses fping" in found[0]


def test_during_events_series_get_finer_where_the_file_left_the_defaults() -> None:
    text = """\
        name: cut
        topology: {kind: ring, nodes: 6}
        measure:
          - iperf3: {client: n1, server: n4, duration: 3}
          - iperf3: {client: n2, server: n5, duration: 3, interval: 0.5}
          - ping: {src: n1, dst: n4, count: 300, interval: 10ms}
        events: ["link n2-n3 down @ 1s"]
        """
    exp = load_experiment_text(textwrap.dedent(text))
    first, second, ping = (s.options for s in exp.points[0].steps)
    assert first.interval == 0.1 and second.interval == 0.5  # type: ignore[attr-defined]
    assert ping.per_probe and ping.program() == "fping"  # type: ignore[attr-defined]
    assert "fping" in exp.tools()
    calm = load_experiment_text(
        textwrap.dedent(text).replace('events: ["link n2-n3 down @ 1s"]', "")
    )
    assert calm.points[0].steps[0].options.interval == 1.0  # type: ignore[attr-defined]
    assert not calm.points[0].steps[2].options.per_probe  # type: ignore[attr-defined]


def test_a_tcp_test_with_events_may_wait_out_tcp_backoff_after_an_outage() -> None:
    """A cut that heals near a test's end leaves TCP's doubled retransmission timer to run:
    the run had failed "iperf3 client did not finish within 25 s" (babel, ring of 16)."""
    text = """\
        name: cut
        topology: {kind: ring, nodes: 6}
        measure:
          - iperf3: {client: n1, server: n4, duration: 12}
          - iperf3: {client: n2, server: n5, duration: 12, protocol: udp, bitrate: 10mbit}
          - iperf3: {client: n3, server: n6, duration: 12, timeout: 20}
        events: ["link n2-n3 down @ 3s"]
        """
    cut = load_experiment_text(textwrap.dedent(text)).points[0].steps
    calm = load_experiment_text(
        textwrap.dedent(text).replace('events: ["link n2-n3 down @ 3s"]', "")
    ).points[0].steps
    assert calm[0].timeout == 25 and cut[0].timeout == 37  # 2 × 12 + connect 3 + slack 10
    assert cut[1].timeout == calm[1].timeout == 25  # UDP does not back off
    assert cut[2].timeout == calm[2].timeout == 20  # the file's own timeout holds


HYPHENS = """\
    name: hy
    nodes: [{name: a}, {name: a-b}, {name: b-c}, {name: c}]
    links: [{a: a-b, b: c}, {a: a, b: d-e}]
    measure:
      - ping: {src: a-b, dst: c}
    events: ["link a-b-c down @ 0.5s"]
    """


def test_a_link_between_hyphenated_names_is_the_split_that_is_a_link() -> None:
    """`a-b-c` is a–b-c or a-b–c: the one that is a link, not the first split of nodes."""
    text = HYPHENS.replace("d-e", "x").replace("nodes: [", "nodes: [{name: x}, ")
    exp = load_experiment_text(textwrap.dedent(text), "hy.yaml")
    assert exp.points[0].events[0].target == ("a-b", "c")
    both = HYPHENS.replace("{a: a, b: d-e}", "{a: a, b: b-c}")
    (found,) = problems(both)
    assert "may be a–b-c and a-b–c, both links" in found and "rename a node" in found


def test_an_event_after_every_measurement_has_ended_is_refused_at_its_line() -> None:
    """It validated ok, then the run warned "1 event(s) not reached" and stored an ok run
    with no event in it. A measurement of unknown length (a command) lets it pass."""
    text = """\
        name: late
        topology: {kind: pair}
        measure:
          - iperf3: {client: n1, server: n2, duration: 2}
          - ping: {src: n1, dst: n2, count: 300, interval: 10ms}
        events:
          - link n1-n2 down @ 1s
          - link n1-n2 up @ 30s
        """
    assert problems(text) == [
        "exp.yaml:8:5: event 'link n1-n2 up @ 30s' comes after every measurement has ended "
        "(the longest runs 3 s): it would never happen; make it earlier or the measurements "
        "longer"
    ]
    longer = text.replace("duration: 2", "duration: 40")
    assert len(load_experiment_text(textwrap.dedent(longer)).points[0].events) == 2
    unknown = text.replace("- ping:", '- command: {node: n1, cmd: "sleep 40"}\n          - ping:')
    assert len(load_experiment_text(textwrap.dedent(unknown)).points[0].events) == 2


def test_a_measurement_between_nodes_no_link_joins_is_refused() -> None:
    """It validated ok and each run failed "connect: Network is unreachable"."""
    text = """\
        name: iso
        nodes: [{name: n1}, {name: n2}, {name: n3}, {name: side, netns: n3}]
        links: [{a: n1, b: n2}]
        measure:
          - ping: {src: n1, dst: n3}
          - ping: {src: side, dst: n1}
          - iperf3: {client: n2, server: n1}
        """
    assert problems(text) == [
        "exp.yaml:5:11: ping: no link path joins n1 and n3: no traffic can pass between them",
        "exp.yaml:6:11: ping: no link path joins side and n1: no traffic can pass between them",
    ]
