"""pps in real namespaces with the real generators: counts, ECMP spread, failures, verdicts."""

from __future__ import annotations

import itertools
import shutil
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netrig import measure
from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab import netns
from netrig.measure import Text
from netrig.model.load import SpecError
from netrig.results.store import ResultStore
from netrig.rig import Lab
from netrig.rig.prepare import load_experiment_text
from tests.conftest import netrig_cli, new_lab_name, requires_root
from tests.measure.test_plugins_live import leftovers

pytestmark = [requires_root, pytest.mark.root]

DIAMOND = {
    "nodes": [{"name": n} for n in ("src", "r1", "pa", "pb", "r2", "dst")],
    "links": [
        {"a": "src", "b": "r1"},
        {"a": "r1", "b": "pa"},
        {"a": "r1", "b": "pb"},
        {"a": "pa", "b": "r2"},
        {"a": "pb", "b": "r2"},
        {"a": "r2", "b": "dst"},
    ],
}
GENERATORS = [
    "netrig",
    pytest.param(
        "trafgen",
        marks=pytest.mark.skipif(shutil.which("trafgen") is None, reason="no trafgen"),
    ),
]


def diamond(protocol: str) -> Iterator[Lab]:
    lab = Lab.from_spec({"name": new_lab_name("p"), **DIAMOND, "routing": {"protocol": protocol}})
    lab.up()
    yield lab
    lab.down()


@pytest.fixture(scope="module")
def ecmp() -> Iterator[Lab]:
    yield from diamond("ecmp")


@pytest.fixture(scope="module")
def static() -> Iterator[Lab]:
    yield from diamond("static")


def run(lab: Lab, options: dict[str, object]) -> list[Sample | Text]:
    plugin = measure.get("pps")
    opts = plugin.Options.model_validate({"src": "src", "dst": "dst", **options})
    assert plugin.check(opts, lab.plan) == []
    try:
        return plugin.run(lab, opts, plugin.timeout(opts))
    finally:
        assert leftovers(lab) == [], "the generator was left running"


def summary(items: list[Sample | Text]) -> dict[str, float]:
    return {
        s.metric: s.value for s in items if isinstance(s, Sample) and s.t is None and not s.stream
    }


@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("generator", GENERATORS)
def test_the_sink_counts_what_the_generator_sent(ecmp: Lab, generator: str, family: int) -> None:
    """Paced well below what this path forwards, nothing is lost: the sink's count is the
    generator's. netrig_gen sends rate × duration, evenly; trafgen 0.6.8's `-b` sends a
    second's worth in a burst, then waits (benchmarks/forwarding_pps.py measures both)."""
    options = {"generator": generator, "rate": "20kpps", "duration": 0.5, "interval": 0.1}
    items = run(ecmp, {**options, "family": family})
    values = summary(items)
    assert values["rx_packets"] == pytest.approx(values["tx_packets"], rel=0.01)
    assert values["loss_percent"] < 1
    if generator == "netrig":
        assert values["tx_packets"] == pytest.approx(10000, rel=0.01)
        assert values["rx_pps"] == pytest.approx(20000, rel=0.05)
        rates = [s.value for s in items if isinstance(s, Sample) and s.t is not None]
        assert len(rates) >= 3 and all(abs(r / 20000 - 1) < 0.2 for r in rates)


def test_full_speed_gives_a_rate_and_intervals(ecmp: Lab) -> None:
    items = run(ecmp, {"generator": "netrig", "duration": 0.6, "interval": 0.1})
    values = summary(items)
    paced = 20000  # the rate of the test above: full speed must beat it by far
    assert values["tx_pps"] > 5 * paced and values["rx_pps"] > 5 * paced
    assert 0 <= values["loss_percent"] < 100
    intervals = [s for s in items if isinstance(s, Sample) and s.t is not None]
    assert len(intervals) >= 3 and all(s.metric == "rx_pps" and s.value > 0 for s in intervals)
    assert [s.t for s in intervals] == sorted(s.t for s in intervals)


@pytest.mark.parametrize(("lab_fixture", "spread"), [("ecmp", True), ("static", False)])
def test_ecmp_spreads_the_flows_over_both_paths(
    request: pytest.FixtureRequest, lab_fixture: str, spread: bool
) -> None:
    lab: Lab = request.getfixturevalue(lab_fixture)
    items = run(lab, {"generator": "netrig", "rate": "50kpps", "duration": 0.4, "watch": ["r1"]})
    counts = {s.stream: s.value for s in items if isinstance(s, Sample) and s.stream}
    # r1's eth1 leads to pa, eth2 to pb
    via_a, via_b = counts["r1:eth1"], counts["r1:eth2"]
    sent = summary(items)["tx_packets"]
    assert via_a + via_b >= 0.99 * sent
    if spread:  # 256 source ports hashed over two next hops: each path gets a fair share
        assert min(via_a, via_b) > 0.3 * sent
    else:
        assert min(via_a, via_b) < 0.01 * sent


@pytest.mark.parametrize("generator", GENERATORS)
def test_a_failing_generator_is_a_failure_with_its_output(ecmp: Lab, generator: str) -> None:
    """Frames longer than src's MTU: netrig_gen's send fails (EMSGSIZE), trafgen's frames
    never leave; either way the run fails with a reason, never a zero."""
    ecmp.exec("src", ["ip", "link", "set", "eth0", "mtu", "1000"], check=True)
    try:
        with pytest.raises(MeasurementFailed) as failed:
            run(ecmp, {"generator": generator, "duration": 0.3, "frame_size": 1518})
    finally:
        ecmp.exec("src", ["ip", "link", "set", "eth0", "mtu", "1500"], check=True)
    reason = failed.value.reason
    if generator == "netrig":
        assert reason == "netrig_gen exited with 1: netrig_gen: Message too long"
        assert "Message too long" in failed.value.stderr
    else:
        assert reason == "no packet reached dst (100% loss)"
        assert "packets outgoing" in failed.value.stderr


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pps.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.mark.parametrize(
    ("measure_line", "where", "message"),
    [
        ("{src: n1, dst: n4}", "6:22", "pps: unknown node 'n4'"),
        ("{src: n1, dst: n3, rate: fast}", "6:32", "not a packet rate"),
        ("{src: n1, dst: n3, family: 6}", "6:13", "node 'n1' has no IPv6 address"),
    ],
)
def test_bad_input_is_exit_2_at_its_line(
    tmp_path: Path, lab_name: str, measure_line: str, where: str, message: str
) -> None:
    path = write(
        tmp_path,
        f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        addressing: {{ipv6: false}}
        measure:
          - pps:
              {measure_line}
        """,
    )
    out = netrig_cli("run", path, "--db", str(tmp_path / "never.db"))
    assert out.returncode == 2, out.stderr
    assert f"{path}:{where}:" in out.stderr and message in out.stderr
    assert not (tmp_path / "never.db").exists()


def test_ministat_compares_two_stored_rates(tmp_path: Path, lab_name: str) -> None:
    """Two paced rates, 3 runs each, through a chain of 3: ministat sees the difference."""
    path = write(
        tmp_path,
        f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        measure:
          - pps: {{src: n1, dst: n3, generator: netrig, rate: "{{rate}}", duration: 0.3}}
        vary: {{rate: [10000, 20000]}}
        repeat: 3
        """,
    )
    db = str(tmp_path / "r.db")
    out = netrig_cli("run", path, "--db", db, "--quiet")
    assert out.returncode == 0, out.stderr
    stat = netrig_cli(
        "stat", "--experiment", lab_name, "--by", "rate", "--metric", "rx_pps", "--db", db
    )
    assert stat.returncode == 0, stat.stderr
    lines = stat.stdout.splitlines()
    assert "x rate=10000" in lines and "+ rate=20000" in lines
    assert "Difference at 95.0% confidence" in lines
    compare = netrig_cli(
        "compare", f"{lab_name}:rate=10000", f"{lab_name}:rate=20000", "--metric", "rx_pps",
        "--db", db,
    )  # fmt: skip
    assert compare.returncode == 0, compare.stderr
    assert "Difference at 95.0% confidence" in compare.stdout


@pytest.mark.parametrize(
    ("generator", "message"),
    [
        ("trafgen", "trafgen is not installed; install it with: apt-get install netsniff-ng"),
        ("netrig", "gcc is not installed; install it with: apt-get install gcc"),
    ],
)
def test_a_missing_generator_names_its_package_before_anything_exists(
    tmp_path: Path, lab_name: str, monkeypatch: pytest.MonkeyPatch, generator: str, message: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # netrig_gen not built yet
    with pytest.raises(SpecError, match=message):
        load_experiment_text(
            f"name: {lab_name}\ntopology: {{kind: chain, nodes: 3}}\n"
            f"measure: [{{pps: {{src: n1, dst: n3, generator: {generator}}}}}]\n"
        )
    assert [ns for ns in netns.list_names() if ns.startswith(lab_name + "-")] == []


def pps_during(
    tmp_path: Path, lab_name: str, events: str, duration: int = 3
) -> list[tuple[str, Sample]]:
    """The stored samples of one run of a chain of 3: netrig_gen paced at 10 kpps from n1
    to n3 for `duration` s, with `events` (a YAML list; the run must succeed)."""
    path = write(
        tmp_path,
        f"""\
        name: {lab_name}
        topology: {{kind: chain, nodes: 3}}
        measure:
          - pps: {{src: n1, dst: n3, generator: netrig, duration: {duration}, rate: 10kpps, interval: 0.1}}
        events: {events}
        """,
    )
    db = str(tmp_path / "r.db")
    done = netrig_cli("run", path, "--db", db, "--quiet", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    with ResultStore(db) as store:
        ((run,),) = [store.runs(e.id) for e in store.experiments()]
        assert run.status == "ok", run.reason
        return list(store.samples(run.id))


def test_interval_rates_are_on_the_timeline_of_events(tmp_path: Path, lab_name: str) -> None:
    """A cut on the path stops the sink's count when the cut happens: t of the per-interval
    rx_pps counts from the generator's start (the runner's mark), not from the first frame
    to arrive, which had put the drop 0.05–0.25 s before the event."""
    samples = pps_during(tmp_path, lab_name, "[link n2-n3 down @ 1s, link n2-n3 up @ 2s]")
    at = {s.stream: s.value for m, s in samples if m == "events" and s.metric == "event_at"}
    down, up = at["link n2-n3 down @ 1s"], at["link n2-n3 up @ 2s"]
    rates = sorted((s.t, s.value) for m, s in samples if m == "pps" and s.t is not None)
    intervals = [(t0, t1, r) for (t0, r), (t1, _) in itertools.pairwise(rates)]

    def edge(after: float, falling: bool) -> float:
        """When the rate crossed over, from the share of the paced rate in the interval
        that holds the edge."""
        for t0, t1, r in intervals:
            if t1 > after - 0.2 and (r < 8000 if falling else r > 1000):
                share = r / 10000 if falling else 1 - r / 10000
                return t0 + share * (t1 - t0)
        raise AssertionError(f"no edge after {after}: {intervals}")

    # (an interval shy of the paced rate before the cut, as a busy machine gives, moves
    # the edge found early: 8000, and 60 ms, leave room for one)
    assert edge(down, falling=True) == pytest.approx(down, abs=0.06), intervals
    assert all(r == 0 for t0, t1, r in intervals if down + 0.05 < t0 and t1 < up - 0.05)
    assert edge(up, falling=False) == pytest.approx(up, abs=0.06), intervals


def test_netrig_gen_sends_on_through_a_cut_of_its_own_link(tmp_path: Path, lab_name: str) -> None:
    """`link n1-n2 down` on the sender's link: its sends fail with ENETDOWN for that second,
    which had ended netrig_gen ("Network is down") and failed the run. They are refused
    frames now, and the frames due after `up` go out and arrive."""
    cut = "[link n1-n2 down @ 1s, link n1-n2 up @ 2s]"
    samples = [s for m, s in pps_during(tmp_path, lab_name, cut) if m == "pps"]
    values = {s.metric: s.value for s in samples if s.t is None and not s.stream}
    assert values["tx_packets"] + values["tx_refused"] == pytest.approx(30000, rel=0.01)
    assert values["tx_refused"] == pytest.approx(10000, rel=0.1)  # the second it was down
    assert values["rx_packets"] == pytest.approx(values["tx_packets"], rel=0.01)
    rates = sorted((s.t, s.value) for s in samples if s.t is not None)
    assert all(r == 0 for t, r in rates if 1.1 < t < 1.85), rates
    back = [r for t, r in rates if 2.2 < t < 2.8]  # (one interval may fall short on a busy machine)
    assert back and sorted(back)[len(back) // 2] > 9000 and min(back) > 5000, rates


@pytest.mark.parametrize("generator", GENERATORS)
def test_a_rate_on_the_senders_own_link_holds_the_generator_back(
    make_lab: Callable[..., Lab], generator: str
) -> None:
    """`rate: 1mbit` on n1-n2 is a token bucket on n1's interface, which the generators'
    qdisc bypass skipped: 20 kpps arrived, as if there were no limit (iperf3: 0.99 Mbit/s).
    Through the qdisc, what arrives is what 1 Mbit/s carries: 60-byte frames, ~2.1 kpps
    (and the bucket's first 16 KiB at once)."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3},
                    "links": [{"a": "n1", "b": "n2", "rate": "1mbit"}]})  # fmt: skip
    plugin = measure.get("pps")

    def measured(qdisc: str) -> dict[str, float]:
        opts = plugin.Options.model_validate({"src": "n1", "dst": "n3", "generator": generator,
                                              "rate": "20kpps", "duration": 1, "qdisc": qdisc})  # fmt: skip
        return summary(plugin.run(lab, opts, plugin.timeout(opts)))

    shaped = measured("auto")
    assert 1500 < shaped["rx_pps"] < 2800, shaped
    assert shaped["loss_percent"] < 1 and shaped["tx_pps"] < 2800, shaped  # held back, not lost
    assert measured("bypass")["rx_pps"] > 15000  # what it did before, still there if asked


def test_a_rate_event_on_the_senders_link_slows_what_arrives(tmp_path: Path, lab_name: str) -> None:
    samples = pps_during(tmp_path, lab_name, "[link n1-n2 rate 1mbit @ 1s]", duration=2)
    rates = sorted((s.t, s.value) for m, s in samples if m == "pps" and s.t is not None)
    before = [r for t, r in rates if 0.2 < t < 0.85]
    after = [r for t, r in rates if 1.2 < t < 1.85]
    assert before and sorted(before)[len(before) // 2] > 9000 and min(before) > 5000, rates
    assert after and sum(after) / len(after) < 3000, rates


STAR_EVENTS = """\
    name: {name}
    topology: {{kind: star, leaves: 4}}
    measure:
      - pps: {{src: n2, dst: n4, duration: 2, rate: 10kpps}}
      - {other}
    events: [link n1-n5 down @ 1s]
    """


@pytest.mark.parametrize(
    ("other", "refused"),
    [
        ("pps: {src: n3, dst: n4, duration: 2, rate: 5kpps}", "each counts every UDP datagram"),
        ("iperf3: {client: n3, server: n4, protocol: udp, duration: 2}", "pps counts every"),
        ("iperf3: {client: n4, server: n3, protocol: udp, duration: 2}", "pps counts every"),
        ("stage_latency: {sender: n3, receiver: n4}", "pps counts every"),
        ("pps: {src: n3, dst: n4, duration: 2, family: 6}", None),  # snmp6, not snmp
        ("pps: {src: n3, dst: n5, duration: 2}", None),
        ("iperf3: {client: n3, server: n4, duration: 2}", None),  # TCP
    ],
)
def test_measurements_run_together_may_not_send_udp_to_a_pps_sink(
    tmp_path: Path, other: str, refused: str | None
) -> None:
    """With events: measurements run at once, and pps's sink counts dst's whole UDP: two pps
    into n4 (10 and 5 kpps) each counted 15 kpps, loss -50 % and -200 %. Refused at the
    later one's line; without events they run one after the other and stay valid."""
    path = write(tmp_path, STAR_EVENTS.format(name="star", other=other))
    done = netrig_cli("validate", path)
    if refused is None:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2, done.stdout
    assert f"{path}:5:5: " in done.stderr and refused in done.stderr, done.stderr
    assert "(a loss below 0)" in done.stderr
    calm = STAR_EVENTS.format(name="star", other=other).replace("events: [link n1-n5 down @ 1s]", "")
    path = write(tmp_path, calm)
    assert netrig_cli("validate", path).returncode == 0


def test_a_sink_that_counts_more_than_was_sent_fails_instead_of_a_negative_loss(
    make_lab: Callable[..., Lab],
) -> None:
    """Other UDP reaching dst while pps counts (here 3000 datagrams from n2 to port 9): its
    UDP counters cannot tell them from pps's, and the loss had come out below 0."""
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}})
    plugin = measure.get("pps")
    opts = plugin.Options.model_validate(
        {"src": "n1", "dst": "n3", "generator": "netrig", "rate": "5kpps", "duration": 1}
    )
    blast = (
        "import socket, time\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "time.sleep(0.2)\n"
        f"for _ in range(3000): s.sendto(b'x', ({lab.addr('n3')!r}, 9))\n"
    )
    other = threading.Thread(target=lambda: lab.exec("n2", [sys.executable, "-c", blast]))
    other.start()
    try:
        with pytest.raises(MeasurementFailed) as failed:
            plugin.run(lab, opts, plugin.timeout(opts))
    finally:
        other.join()
    assert "3000 more than the 5000 sent" in failed.value.reason, failed.value.reason
    metrics = {s.metric for s in failed.value.samples if isinstance(s, Sample)}
    assert "tx_packets" in metrics and not metrics & {"loss_percent", "rx_pps", "rx_packets"}
