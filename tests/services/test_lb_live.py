"""Load balancers in real namespaces: requests spread over the backends (counted in the
backends' own access logs), DSR replies bypass the balancer (interface counters), and a
balancer that dies gives failed runs with the tool's message, never 0 requests/s."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab import daemons
from netrig.measure import Text, get
from netrig.results.store import ResultStore
from netrig.rig import Lab
from tests.conftest import netrig_cli, new_lab_name, requires_root, requires_tool

pytestmark = [
    requires_root,
    *(requires_tool(t) for t in ("pen", "haproxy", "nginx", "wrk", "ab")),
]
WEBS = ["web1", "web2", "web3"]
BALANCERS = {
    "pen": {"pen": {"backends": WEBS}},
    "haproxy": {"haproxy": {"backends": WEBS}},
    "nginx": {"nginx": {"backends": WEBS}},
    "pen-dsr": {"pen": {"backends": WEBS, "dsr": True}},
}
FILES = {"1k": 1024, "100k": 102400}


def switched(nodes: list[dict]) -> dict:
    """Every node on one switch."""
    return {
        "nodes": [{"name": "sw", "kind": "switch"}, *nodes],
        "links": [{"a": n["name"], "b": "sw"} for n in nodes],
    }


@pytest.fixture(scope="module")
def lb_lab() -> Iterator[Lab]:
    nodes = [
        {"name": "client"},
        *({"name": lb, "services": [svc]} for lb, svc in BALANCERS.items()),
        *({"name": w, "services": [{"nginx": {"files": FILES}}]} for w in WEBS),
    ]
    lab = Lab.from_spec({"name": new_lab_name("lb"), **switched(nodes)})
    lab.up()
    try:
        yield lab
    finally:
        lab.down()


def access_counts(lab: Lab) -> dict[str, int]:
    counts = {}
    for web in WEBS:
        with open(os.path.join(lab.node_dir(web), "access.log")) as fh:
            counts[web] = sum(1 for _ in fh)
    return counts


def measure(lab: Lab, tool: str, **options: object) -> dict[str, float]:
    plugin = get(tool)
    opts = plugin.Options.model_validate({"client": "client", **options})
    return {s.metric: s.value for s in plugin.run(lab, opts, plugin.timeout(opts))}


@pytest.mark.parametrize("lb", list(BALANCERS))
def test_balancer_spreads_requests_over_backends(lb_lab: Lab, lb: str) -> None:
    before = access_counts(lb_lab)
    got = measure(lb_lab, "ab", server=lb, path="/1k", concurrency=10, requests=600, duration=20)
    assert got["requests"] == 600 and got["errors"] == 0
    deadline = time.monotonic() + 2.0
    while True:  # nginx logs a request just after answering it
        spread = {w: n - before[w] for w, n in access_counts(lb_lab).items()}
        if sum(spread.values()) >= 600 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert sum(spread.values()) == 600, spread  # each request served once, by a backend
    assert min(spread.values()) >= 600 * 0.15, spread  # every backend takes a fair share


def iface_bytes(lab: Lab, node: str, counter: str) -> int:
    done = lab.exec(node, ["cat", f"/sys/class/net/eth0/statistics/{counter}"], capture_output=True)
    return int(done.stdout)


@pytest.mark.parametrize("lb", ["pen", "pen-dsr"])
def test_dsr_replies_bypass_the_balancer(lb_lab: Lab, lb: str) -> None:
    lb_out, client_in = (
        iface_bytes(lb_lab, lb, "tx_bytes"),
        iface_bytes(lb_lab, "client", "rx_bytes"),
    )
    got = measure(lb_lab, "wrk", server=lb, path="/100k", connections=8, duration=1)
    assert got["requests"] > 100
    lb_out = iface_bytes(lb_lab, lb, "tx_bytes") - lb_out
    client_in = iface_bytes(lb_lab, "client", "rx_bytes") - client_in
    assert client_in >= got["requests"] * 102400
    if lb == "pen-dsr":  # the balancer forwards only the client's small packets
        assert lb_out * 20 < client_in, (lb_out, client_in)
    else:  # a proxy sends every byte the client receives
        assert lb_out > client_in * 0.95, (lb_out, client_in)


@pytest.mark.parametrize("tool", ["wrk", "ab"])
def test_killed_balancer_fails_its_run_and_is_started_again(
    make_lab: Callable[..., Lab], tool: str
) -> None:
    lab = make_lab(
        switched(
            [
                {"name": "client"},
                {"name": "lb", "services": [{"haproxy": {"backends": ["web1"]}}]},
                {"name": "web1", "services": [{"nginx": {"files": FILES}}]},
            ]
        )
    )
    plugin = get(tool)
    opts = plugin.Options.model_validate(
        {"client": "client", "server": "lb", "path": "/1k", "duration": 2}
    )
    # killed during a run: that run fails, with the balancer's log; it is started afresh
    pid = daemons.running(lab, "lb")["haproxy"]
    killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
    killer.start()
    with pytest.raises(MeasurementFailed) as exc:
        plugin.run(lab, opts, plugin.timeout(opts))
    killer.join()
    assert "lb/haproxy exited" in exc.value.reason
    assert "lb/haproxy exited; last lines of its log" in exc.value.stderr
    assert "started afresh after this failure: lb/haproxy" in exc.value.stderr
    rates = [s.value for s in exc.value.samples if s.metric == "requests_per_s"]
    assert all(rate > 0 for rate in rates), rates  # what it served before the kill, never 0
    # killed between runs: the next run starts it again first and says so
    again_pid = daemons.running(lab, "lb")["haproxy"]
    assert again_pid != pid
    os.kill(again_pid, signal.SIGKILL)
    time.sleep(0.05)
    result = plugin.run(lab, opts, plugin.timeout(opts))
    rate = next(s.value for s in result if isinstance(s, Sample) and s.metric == "requests_per_s")
    assert rate > 0
    notes = {t.name: t.text for t in result if isinstance(t, Text)}
    assert "lb/haproxy" in notes["restarted"]
    assert daemons.running(lab, "lb")["haproxy"] not in (pid, again_pid)
    # stopped on purpose (`netrig node LAB lb stop`): runs fail, nothing starts it behind
    # the user's back
    assert daemons.stop(lab, "lb") == ["lb/haproxy"]
    with pytest.raises(MeasurementFailed, match="refused"):
        plugin.run(lab, opts, plugin.timeout(opts))
    assert "haproxy" not in daemons.running(lab, "lb")


def test_refused_or_silent_server_fails_with_the_reason(lb_lab: Lab) -> None:
    """Nothing on the port: wrk's own words; a VIP that swallows the SYNs (pen in DSR mode
    forwards only its port): a timeout. Never 0 requests/s."""
    plugin = get("wrk")
    refused = plugin.Options.model_validate(
        {"client": "client", "server": "pen", "duration": 1, "port": 81}
    )
    with pytest.raises(MeasurementFailed) as exc:
        plugin.run(lb_lab, refused, plugin.timeout(refused))
    assert "unable to connect" in exc.value.reason and "refused" in exc.value.stderr.lower()
    silent = plugin.Options.model_validate(
        {"client": "client", "server": "pen-dsr", "duration": 1, "port": 81, "timeout": 2}
    )
    with pytest.raises(MeasurementFailed, match="did not finish within 2 s"):
        plugin.run(lb_lab, silent, plugin.timeout(silent))


def test_failed_balancer_is_stored_as_failed_not_zero(tmp_path: Path) -> None:
    """pen in front of a backend that serves nothing: every request fails; `netrig run`
    stores failed runs with the reason and no requests/s sample of 0."""
    name = new_lab_name("lb")
    exp = tmp_path / "lb.yaml"
    exp.write_text(
        f"""name: {name}
nodes:
  - {{name: client}}
  - {{name: lb, services: [{{pen: {{backends: [web1]}}}}]}}
  - {{name: web1}}
links: [{{a: client, b: lb}}, {{a: lb, b: web1}}]
measure:
  - wrk: {{client: client, server: lb, duration: 1, connections: "{{c}}"}}
vary: {{c: [1, 4]}}
"""
    )
    db = tmp_path / "r.db"
    done = netrig_cli("run", str(exp), "--db", str(db))
    assert done.returncode == 1, done.stdout + done.stderr  # failed runs: exit 1
    store = ResultStore(str(db))
    runs = store.runs(store.experiments()[-1].id)
    assert [r.status for r in runs] == ["failed", "failed"]
    assert all("no successful response" in (r.reason or "") for r in runs)
    for run in runs:
        kept = {s.metric: s.value for _m, s in store.samples(run.id)}
        assert "requests_per_s" not in kept and "transfer" not in kept, kept  # never 0 req/s
        assert kept.get("requests", 0) == 0 or kept["errors"] > 0
    store.close()


@requires_tool("vtysh")
def test_a_web_server_on_a_node_of_an_frr_routed_lab_serves(make_lab) -> None:  # type: ignore[no-untyped-def]
    """FRR gives each node a private /run, which hid the node's directory under the host's
    /run: nginx could not open its nginx.conf there and `up` failed."""
    lab = make_lab({
        "topology": {"kind": "pair"},
        "nodes": [{"name": "n2", "services": [{"nginx": {"files": {"1k": 1024}}}]}],
        "routing": {"protocol": "bgp"},
    })  # fmt: skip
    got = lab.exec("n1", ["curl", "-s", "-o", "/dev/null", "-w", "%{size_download}",
                          f"http://{lab.addr('n2')}/1k"], capture_output=True)  # fmt: skip
    assert got.returncode == 0 and got.stdout == "1024", got.stdout + got.stderr
    conf = os.path.join(lab.node_dir("n2"), "nginx.conf")
    seen = lab.exec("n2", ["cat", conf], capture_output=True)  # at its path, in the node too
    assert seen.returncode == 0 and "root " in seen.stdout, seen.stderr
    assert os.listdir(lab.private_run_dir("n2"))  # and the node's /run is still its own


def test_ab_counts_each_failed_reply_once(make_lab: Callable[..., Lab]) -> None:
    """Behind nginx, web1 serves /1k as 1024 bytes, web2 as 2048, web3 not at all (404): ab
    counted each 404 twice (Length and Non-2xx) and web2's replies as failed. Now errors are
    the 404s exactly, as web3's access log counts them, and the rest are successes."""
    sized = [("web1", {"1k": 1024}), ("web2", {"1k": 2048}), ("web3", {"other": 1024})]
    lab = make_lab(
        switched(
            [
                {"name": "client"},
                {"name": "lb", "services": [{"nginx": {"backends": [w for w, _f in sized]}}]},
                *({"name": w, "services": [{"nginx": {"files": f}}]} for w, f in sized),
            ]
        )
    )
    got = measure(lab, "ab", server="lb", path="/1k", requests=600, duration=20, max_errors=50)
    deadline = time.monotonic() + 2.0
    while True:  # nginx logs a request just after answering it
        logged = {}
        for web, _files in sized:
            with open(os.path.join(lab.node_dir(web), "access.log")) as fh:
                logged[web] = [line.split('"')[2].split()[0] for line in fh]
        if sum(map(len, logged.values())) >= 600 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert set(logged["web3"]) == {"404"} and set(logged["web1"] + logged["web2"]) == {"200"}
    assert got["requests"] == 600
    assert got["errors"] == got["errors_status"] == len(logged["web3"]) > 100
    assert got["errors_failed"] == 0
    assert "errors_length" not in got  # ab runs with -l: no length is a failure
    assert got["requests_per_s"] > 0
    # with the default 1 % allowed, a third of 404s fails the run, saying what failed
    with pytest.raises(MeasurementFailed, match=r"non-2xx replies\), more than 1\.00%"):
        measure(lab, "ab", server="lb", path="/1k", requests=300, duration=20)


@pytest.mark.parametrize("tool", ["wrk", "ab"])
@pytest.mark.parametrize("lb", ["pen", "haproxy", "nginx"])
def test_family_6_reaches_balancer_and_backends(lb_lab: Lab, lb: str, tool: str) -> None:
    """The lab has IPv6: each balancer (and each web server behind it) listens on it too;
    they listened on 0.0.0.0 only and every `family: 6` run was refused."""
    before = access_counts(lb_lab)
    got = measure(lb_lab, tool, server=lb, path="/1k", family=6, duration=1)
    assert got["requests"] > 50 and got["errors"] == 0
    served = sum(access_counts(lb_lab).values()) - sum(before.values())
    assert served >= got["requests"] * 0.9  # through the balancer, to the backends
    direct = measure(lb_lab, tool, server="web1", path="/1k", family=6, duration=1)
    assert direct["requests"] > 50 and direct["errors"] == 0


def test_node_events_stop_and_start_a_backends_services(tmp_path: Path) -> None:
    """`node web2 stop|start` on a timeline: refused before ("protocol static runs no daemon
    to stop or start") though `netrig node LAB web2 stop` works; now the run stops web2's
    nginx at 1 s and starts it at 3 s while wrk goes through the balancer, and a probe in
    web2 sees it answer, then refuse, then answer again."""
    name = new_lab_name("lb")
    exp = tmp_path / "events.yaml"
    probe = (
        "for i in $(seq 50); do curl -s -o /dev/null -w '%{{http_code}}\\n' --max-time 0.5 "
        "http://127.0.0.1/1k; sleep 0.1; done"
    )
    exp.write_text(
        f"""name: {name}
nodes:
  - {{name: sw, kind: switch}}
  - {{name: client}}
  - {{name: lb, services: [{{haproxy: {{backends: [web1, web2]}}}}]}}
  - {{name: web1, services: [{{nginx: {{files: {{1k: 1024}}}}}}]}}
  - {{name: web2, services: [{{nginx: {{files: {{1k: 1024}}}}}}]}}
links: [{{a: client, b: sw}}, {{a: lb, b: sw}}, {{a: web1, b: sw}}, {{a: web2, b: sw}}]
measure:
  - wrk: {{client: client, server: lb, path: /1k, duration: 5, max_errors: 50}}
  - command: {{node: web2, name: probe, cmd: "{probe}"}}
events: [node web2 stop @ 1s, node web2 start @ 3s]
"""
    )
    db = tmp_path / "r.db"
    done = netrig_cli("run", str(exp), "--db", str(db), "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    store = ResultStore(str(db))
    (run,) = store.runs(store.experiments()[-1].id)
    outputs = {(m, key): text for m, key, text in store.outputs(run.id)}
    samples = {(m, s.metric): s.value for m, s in store.samples(run.id) if s.t is None}
    store.close()
    assert run.status == "ok", run.reason
    timeline = outputs[("events", "timeline")]
    assert "node web2 stop @ 1s" in timeline and "node web2 start @ 3s" in timeline
    assert "FAILED" not in timeline, timeline
    codes = "".join("+" if c == "200" else "-" for c in outputs[("probe", "stdout")].split())
    assert re.fullmatch(r"\++-+\++", codes), codes  # served, stopped, served again
    assert samples[("wrk", "requests")] > 1000


def test_a_service_that_died_with_an_empty_log_is_said_so(make_lab) -> None:  # type: ignore[no-untyped-def]
    """The report had ended on a dangling "last lines of its log:"."""
    from netrig import services

    lab = make_lab({"topology": {"kind": "pair"},
                    "nodes": [{"name": "n2", "services": [{"nginx": {}}]}]})  # fmt: skip
    os.kill(daemons.running(lab, "n2")["nginx"], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while "nginx" in daemons.running(lab, "n2") and time.monotonic() < deadline:
        time.sleep(0.02)
    Path(lab.node_dir("n2"), "nginx.log").write_text("")
    assert services.exit_report(lab) == "n2/nginx exited (its log is empty)\n"
