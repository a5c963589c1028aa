"""iperf3: TCP or UDP throughput between two nodes, or one stream per IP alias of a link.

    - iperf3: {client: n1, server: n9, duration: 10, parallel: 2}
    - iperf3: {client: n1, server: n2, per_alias: true, duration: 10}   # seed 001

The server runs with `-1` (one test, then exit) under `lab.popen`; the client starts only
once the server's port is in LISTEN in the server's namespace (read from /proc, so no probe
connection can confuse the one-off server). The client's `--json` is always parsed: iperf3
exits 0 on many failures. The result is the receiver's view (`throughput`, bit/s).

With `per_alias`, the link between client and server must carry `aliases:`; each alias
address of the server gets its own server (own port), and the client's alias of the same
rank connects to it, all at once. `throughput` is their sum; each alias is also stored
with its server address as the stream; `throughput_wall` is what they carried together
over the wall-clock span (see _alias_samples).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator

from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure import (
    AddressChoice,
    KeyPath,
    Measurement,
    MeasureOptions,
    Result,
    end_group,
    end_process,
    family_of,
    mark_started,
    node_problems,
    not_installed,
    read_spool,
    register,
    spool,
    tail,
    target_address,
    wait_all,
)
from netrig.measure.parse_iperf3 import parse_iperf3
from netrig.model.models import NodeName, Rate, Seconds

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import IfacePlan, LabPlan

LISTEN_TIMEOUT = 5.0  # seconds a server may take to listen
STARTUP_SLACK = 10.0  # timeout beyond the test's own duration
EVENTS_INTERVAL = 0.1  # seconds per interval sample while a timeline of faults runs
PER_ALIAS_SLACK = 0.25  # more timeout per alias stream (per_alias)
LAUNCH_LEAD, LAUNCH_EACH = 0.3, 0.01  # seconds to launch every alias client before the start
# sleep until the common start, run iperf3, then print when it exited (wall clock, ns)
SYNCED = 'sleep "$1"; shift; "$@"; status=$?; date +%s.%N >&2; exit $status'
SUMMED = (
    "throughput",
    "sender_throughput",
    "retransmits",
    "throughput_reverse",
    "lost_packets",
    "packets",
)  # per_alias: totals over the aliases
SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def _size(value: Any) -> int:
    """Bytes, iperf3's way: 262144, '256K', '4M' (K = 1024)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = re.fullmatch(r"\s*(\d+)\s*([kmgKMG]?)[bB]?\s*", str(value))
    if not m:
        raise ValueError(f"{value!r} is not a size; write e.g. 262144, 256K or 4M")
    return int(m.group(1)) * SIZE_UNITS[m.group(2).lower()]


Size = Annotated[int, BeforeValidator(_size), Field(ge=1024, le=1 << 30)]


class Iperf3Options(MeasureOptions):
    client: NodeName = Field(description="node that runs `iperf3 -c` (sends, unless reverse)")
    server: NodeName = Field(description="node that runs `iperf3 -s`")
    protocol: Literal["tcp", "udp"] = Field("tcp", description="tcp or udp (-u)")
    duration: int = Field(10, ge=1, le=86400, description="seconds of traffic (-t)")
    parallel: int = Field(1, ge=1, le=128, description="parallel streams (-P)")
    reverse: bool = Field(False, description="the server sends (-R)")
    bidir: bool = Field(False, description="both directions at once (--bidir)")
    bitrate: Rate | None = Field(
        None, description="target rate (-b), e.g. 1gbit; UDP default 1mbit"
    )
    mss: int | None = Field(None, ge=88, le=65000, description="TCP maximum segment size (-M)")
    window: Size | None = Field(None, description="socket buffer size (-w), e.g. 256K")
    omit: int = Field(0, ge=0, le=600, description="seconds at the start left out (-O)")
    interval: Seconds = Field(1.0, description="seconds per interval sample (-i)")
    congestion: str | None = Field(
        None, pattern=r"^[a-z0-9_]+$", description="TCP congestion control (-C)"
    )
    family: Literal[4, 6] = Field(4, description="IPv4 or IPv6 addresses")
    address: AddressChoice = Field(
        "auto", description="server address: loopback, link (shared with the client), auto"
    )
    port: int = Field(5201, ge=1024, le=65535, description="server port (per_alias: first)")
    per_alias: bool = Field(False, description="one server and one client per IP alias of the link")
    connect_timeout: Seconds = Field(3.0, description="give up connecting after this long")

    @model_validator(mode="after")
    def _consistent(self) -> Iperf3Options:
        if self.reverse and self.bidir:
            raise ValueError("reverse and bidir exclude each other (bidir already sends both ways)")
        if self.mss is not None and self.protocol == "udp":
            raise ValueError("mss applies to TCP only")
        if self.congestion is not None and self.protocol == "udp":
            raise ValueError("congestion applies to TCP only")
        if self.client == self.server:
            raise ValueError(f"client and server are both {self.client!r}; pick two nodes")
        if 0 < self.interval < 0.1:
            raise ValueError("interval: iperf3 reports at most every 0.1 s (0 turns it off)")
        return self


@register
class Iperf3(Measurement[Iperf3Options]):
    name = "iperf3"
    summary = "TCP/UDP throughput (iperf3 --json), optionally one stream per IP alias"
    Options = Iperf3Options
    summary_metrics = (
        "throughput",
        "throughput_wall",
        "start_spread",
        "throughput_reverse",
        "loss_percent",
    )

    programs: ClassVar[dict[str, str]] = {"iperf3": "iperf3"}

    def check(self, options: Iperf3Options, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        o = options
        problems = node_problems(plan, [(("client",), o.client), (("server",), o.server)])
        if problems:
            return problems
        if not plan.node(o.client).addresses(o.family) or not plan.node(o.server).addresses(
            o.family
        ):
            return [(("family",), f"the lab has no IPv{o.family} addresses (see addressing:)")]
        try:
            target_address(plan, o.client, o.server, o.family, o.address)
        except KeyError as exc:
            return [(("address",), str(exc.args[0]))]
        if o.per_alias:
            try:
                pairs = alias_pairs(plan, o.client, o.server, o.family)
            except ValueError as exc:
                return [(("per_alias",), str(exc))]
            if o.port + len(pairs) - 1 > 65535:
                return [(("port",), f"{len(pairs)} aliases need ports {o.port}… beyond 65535")]
        return []

    def timeout(self, options: Iperf3Options) -> float:
        o = options
        if o.timeout:
            return float(o.timeout)
        return o.duration + o.omit + o.connect_timeout + STARTUP_SLACK

    def length(self, options: Iperf3Options) -> float:
        return float(options.duration + options.omit)

    def events_timeout(self, options: Iperf3Options) -> float:
        """TCP's retransmission timer doubles while a fault cuts the path, so after an outage
        of T s the next try, and the test's end, may come up to T s after traffic could
        flow again: a babel cut back just before the end of a 12-s test failed "did not
        finish within 25 s". Twice the test's length bounds that for any outage within it."""
        o = options
        if o.timeout or o.protocol == "udp":
            return self.timeout(o)
        return 2 * (o.duration + o.omit) + o.connect_timeout + STARTUP_SLACK

    def udp_arrives(self, options: Iperf3Options) -> list[tuple[str, int]]:
        """UDP: both ends (the data one way, and the server answers the client's first
        datagram with one of its own)."""
        o = options
        return [(o.client, o.family), (o.server, o.family)] if o.protocol == "udp" else []

    def during_events(self, options: Iperf3Options) -> Iperf3Options:
        """An interval sample every 0.1 s (iperf3's finest) unless the file sets `interval`."""
        if "interval" in options.model_fields_set:
            return options
        return options.model_copy(update={"interval": EVENTS_INTERVAL})

    def run(self, lab: Lab, options: Iperf3Options, timeout: float) -> Result:
        o = options
        if o.per_alias:
            return list(_run_per_alias(lab, o, timeout))
        target = target_address(lab.plan, o.client, o.server, o.family, o.address)
        deadline = time.monotonic() + timeout
        # Bound to the target: a UDP server answers from the address it is bound to, and an
        # unbound one would answer a loopback-addressed client from its link address, which
        # the client's connected socket refuses.
        server = _start_servers(lab, o, [(target, o.port)])
        try:
            _wait_listening(lab, o, server, deadline)
            mark_started()
            try:
                done = lab.exec(
                    o.client,
                    client_argv(o, target, o.port),
                    capture_output=True,
                    timeout=max(deadline - time.monotonic(), 1.0),
                )
            except FileNotFoundError:
                raise not_installed("iperf3", "iperf3") from None
            except subprocess.TimeoutExpired as exc:
                raise MeasurementFailed(
                    f"iperf3 client did not finish within {timeout:g} s",
                    stderr=tail(exc.stderr) + _server_errors(server),
                ) from None
            try:
                result = parse_iperf3(done.stdout, done.stderr)
            except MeasurementFailed as exc:
                raise MeasurementFailed(
                    exc.reason, exc.samples, tail(done.stderr) + _server_errors(server)
                ) from None
            _end_servers(server, grace=0.5)
            return list(result.samples)
        finally:
            _end_servers(server)


def client_argv(o: Iperf3Options, target: str, port: int, bind: str | None = None) -> list[str]:
    argv = [
        "iperf3",
        "-c",
        target,
        "-p",
        str(port),
        "-t",
        str(o.duration),
        "--json",
        "-i",
        f"{o.interval:g}",
        "--connect-timeout",
        str(int(o.connect_timeout * 1000)),
        # the server's --json report in the client's: the receiver's intervals of a forward
        # run (netrig.measure.parse_iperf3), which the client itself does not see
        "--get-server-output",
    ]
    if bind:
        argv += ["-B", bind]
    if o.protocol == "udp":
        argv.append("-u")
    if o.bitrate is not None:
        argv += ["-b", str(o.bitrate)]
    if o.parallel > 1:
        argv += ["-P", str(o.parallel)]
    if o.reverse:
        argv.append("-R")
    if o.bidir:
        argv.append("--bidir")
    if o.mss is not None:
        argv += ["-M", str(o.mss)]
    if o.window is not None:
        argv += ["-w", str(o.window)]
    if o.omit:
        argv += ["-O", str(o.omit)]
    if o.congestion:
        argv += ["-C", o.congestion]
    return argv


def alias_pairs(plan: LabPlan, client: str, server: str, family: int) -> list[tuple[str, str]]:
    """(client alias, server alias) of the client–server link, in rank order.

    The first address of each end is the link's own; the ones after it are its aliases.
    """
    ifaces = [i for i in plan.node(server).ifaces if i.peer == client]
    if ifaces:
        srv: IfacePlan = ifaces[0]
        cli = plan.node(client).iface(srv.peer_iface)
    else:  # both on one switch (one subnet): the ports of that segment
        ports = _segment_ports(plan, client, server)
        if ports is None:
            raise ValueError(
                f"per_alias needs a direct link between {client} and {server}, "
                "or both on one switch"
            )
        cli, srv = ports
    s_addrs = [a.split("/")[0] for a in srv.addrs if family_of(a) == family]
    c_addrs = [a.split("/")[0] for a in cli.addrs if family_of(a) == family]
    if len(s_addrs) < 2:
        raise ValueError(
            f"per_alias: the {client}–{server} link has no IPv{family} aliases; "
            "set `aliases: N` on it (links: [{a: …, b: …, aliases: N}])"
        )
    return list(zip(c_addrs[1:], s_addrs[1:], strict=True))


def _segment_ports(plan: LabPlan, client: str, server: str) -> tuple[IfacePlan, IfacePlan] | None:
    """The client's and the server's interfaces on a switched segment they share."""
    for net in plan.networks:
        names = dict(net.members)
        if client in names and server in names:
            try:
                return plan.node(client).iface(names[client]), plan.node(server).iface(
                    names[server]
                )
            except KeyError:  # a bridge port (pure layer-2 labs), not an interface
                return None
    return None


class _Server:
    def __init__(self, proc: subprocess.Popen[Any], port: int, out: Any, err: Any) -> None:
        self.proc, self.port, self.out, self.err = proc, port, out, err

    def errors(self) -> str:
        """What it said went wrong: its stderr, and the error of its --json report."""
        text = read_spool(self.err).strip()
        report = read_spool(self.out)
        try:
            said = json.loads(report).get("error") if report.strip() else None
        except (ValueError, AttributeError):
            said = report.strip()[-500:] or None
        return "\n".join(t for t in (text, f"iperf3: {said}" if said else "") if t)


def _start_servers(lab: Lab, o: Iperf3Options, binds: list[tuple[str, int]]) -> list[_Server]:
    servers: list[_Server] = []
    try:
        for bind, port in binds:
            # --json and the client's interval: its report, which the client asks for,
            # holds the receiver's intervals of a forward run
            argv = ["iperf3", "-s", "-1", "-p", str(port), "-B", bind, "--json",
                    "-i", f"{o.interval:g}"]  # fmt: skip
            out, err = spool(), spool()
            label = f"{lab.name}/{o.server}/iperf3-server/{port}"
            try:
                proc = lab.popen(
                    o.server,
                    argv,
                    label=label,
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                )
            except FileNotFoundError:
                out.close()
                err.close()
                raise not_installed("iperf3", "iperf3") from None
            servers.append(_Server(proc, port, out, err))
    except BaseException:
        _end_servers(servers)
        raise
    return servers


def _wait_listening(lab: Lab, o: Iperf3Options, servers: list[_Server], deadline: float) -> None:
    """Poll until every server's port is in LISTEN inside the server node."""
    limit = min(deadline, time.monotonic() + LISTEN_TIMEOUT + 0.02 * len(servers))
    pending = list(servers)
    while pending:
        for s in list(pending):
            if s.proc.poll() is not None:
                raise MeasurementFailed(
                    f"iperf3 server on {o.server} port {s.port} exited ({s.proc.returncode}) "
                    "before listening",
                    stderr=tail(s.errors()),
                )
            if s.port in lab.listening_ports(o.server, s.proc):
                pending.remove(s)
        if not pending:
            return
        if time.monotonic() > limit:
            raise MeasurementFailed(
                f"iperf3 server on {o.server} port {pending[0].port} did not listen within "
                f"{LISTEN_TIMEOUT:g} s",
                stderr=_server_errors(servers),
            )
        time.sleep(0.005)


def _server_errors(servers: list[_Server]) -> str:
    texts = [s.errors() for s in servers]
    shown = [f"[server port {s.port}] {t}" for s, t in zip(servers, texts, strict=True) if t]
    return ("\n" + tail("\n".join(shown))) if shown else ""


def _end_servers(servers: list[_Server], grace: float = 0.0) -> None:
    """A one-off server exits after its test; give it `grace` seconds, then end it by PID."""
    deadline = time.monotonic() + grace
    for s in servers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            s.proc.wait(max(deadline - time.monotonic(), 0.0))
    for s in servers:
        end_process(s.proc)
        s.out.close()
        s.err.close()


def _run_per_alias(lab: Lab, o: Iperf3Options, timeout: float) -> list[Sample]:
    """All alias streams at once: every client sleeps until one common instant, so starting
    hundreds of processes does not stagger the streams (a process started while earlier
    streams saturate the CPUs waits its turn); each records when it ended."""
    pairs = alias_pairs(lab.plan, o.client, o.server, o.family)
    # hundreds of client/server pairs share the CPUs: each handshake and final exchange of
    # results waits its turn, so the derived timeout grows with the number of aliases
    extra = PER_ALIAS_SLACK * len(pairs) if o.timeout is None else 0.0
    deadline = time.monotonic() + timeout + extra
    servers = _start_servers(lab, o, [(srv, o.port + i) for i, (_, srv) in enumerate(pairs)])
    clients: list[tuple[subprocess.Popen[Any], Any, Any]] = []
    try:
        _wait_listening(lab, o, servers, deadline)
        mark_started()
        go = time.time() + LAUNCH_LEAD + LAUNCH_EACH * len(pairs)  # the common start
        for i, (cli, srv) in enumerate(pairs):
            out, err = spool(), spool()
            argv = client_argv(o, srv, o.port + i, bind=cli)
            wait = f"{max(go - time.time(), 0.0):.3f}"
            proc = lab.popen(
                o.client,
                ["sh", "-c", SYNCED, "sh", wait, *argv],
                label=f"{lab.name}/{o.client}/iperf3-client/{o.port + i}",
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: ended with its iperf3
            )
            clients.append((proc, out, err))
        if not wait_all([c[0] for c in clients], deadline + LAUNCH_LEAD):
            raise MeasurementFailed(
                f"iperf3 clients did not finish within {timeout + extra:g} s ({len(pairs)} aliases)",
                stderr=_server_errors(servers),
            )
        outputs = [(read_spool(out), read_spool(err)) for _, out, err in clients]
        samples = _alias_samples(pairs, outputs, servers)
        _end_servers(servers, grace=0.5)
        return samples
    finally:
        for proc, out, err in clients:
            end_group(proc)
            out.close()
            err.close()
        _end_servers(servers)


def _alias_samples(
    pairs: list[tuple[str, str]],
    outputs: list[tuple[str, str]],
    servers: list[_Server],
) -> list[Sample]:
    """Per alias: its samples, labelled with the server alias. Over all aliases:

    - `throughput`: the sum of the streams' receiver rates (the seed's method);
    - `throughput_wall`: all bits received over the wall-clock span from the first stream's
      start to the last one's end. Streams that start one after another (hundreds of
      clients on a few CPUs) do not all run at once, and then the sum overstates what the
      link carried together; `start_spread` says how far apart the starts were.
    A stream's transfer is taken as the `duration` it measured, ending when it exited.
    """
    results, failures, partial, ended = [], [], [], []
    for (_, srv), (stdout, stderr) in zip(pairs, outputs, strict=True):
        lines = stderr.rstrip().splitlines()
        try:
            ended.append(float(lines[-1]))  # SYNCED's last word: when iperf3 exited
            stderr = "\n".join(lines[:-1])
        except (IndexError, ValueError):
            failures.append(f"{srv}: the client did not run to its end")
            partial.append(stderr)
            continue
        try:
            results.append((srv, parse_iperf3(stdout, stderr)))
        except MeasurementFailed as exc:
            failures.append(f"{srv}: {exc.reason}")
            partial.append(stderr)
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise MeasurementFailed(
            f"{len(failures)} of {len(pairs)} alias streams failed: {failures[0]}{more}",
            stderr=tail("\n".join(failures) + "\n" + "\n".join(partial)) + _server_errors(servers),
        )
    samples = [Sample("streams", len(results), "streams")]
    totals: dict[str, float] = defaultdict(float)
    units: dict[str, str] = {}
    for srv, result in results:
        for s in result.samples:
            if s.stream is not None:
                continue  # parallel streams inside one alias's client: kept in its totals
            if s.t is None and s.metric in SUMMED:
                totals[s.metric] += s.value
                units[s.metric] = s.unit
            samples.append(Sample(s.metric, s.value, s.unit, s.t, srv))
    samples += [Sample(m, v, units[m]) for m, v in totals.items()]
    starts = [end - r.duration for end, (_, r) in zip(ended, results, strict=True)]
    span = max(ended) - min(starts)
    bits = sum(r.throughput * r.duration for _, r in results)
    if span > 0:
        samples.append(Sample("throughput_wall", bits / span, "bit/s"))
    samples.append(Sample("start_spread", max(starts) - min(starts), "s"))
    return samples
