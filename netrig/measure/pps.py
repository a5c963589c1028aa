"""pps: packets per second forwarded through the lab's routers (seed 003, router benchmarks).

    - pps: {src: src, dst: dst, duration: 5}                   # full speed
    - pps: {src: src, dst: dst, rate: 20kpps, duration: 1}     # paced
    - pps: {src: src, dst: dst, watch: [r1]}                   # + r1's per-interface counts

A generator in `src` sends small UDP frames (`frame_size` 64 bytes, the FCS included as
RFC 2544 counts it, so 60 bytes on a veth) to dst's address, from `flows` UDP source ports
so a multipath hash spreads them over equal paths. The frames leave through an AF_PACKET
socket on the interface and next hop src's routing table names, bypassing src's own stack
(and its qdisc where there is nothing to bypass: a veth's noqueue), so everything the CPU
spends after that is forwarding. Where src's interface has a qdisc (a link's `rate:`,
delay or loss), and in runs with `events:` (a `link … rate` event adds one mid-run), the
frames go through it (`qdisc: auto`; `use` or `bypass` to force): a token bucket holds the
generator back as it holds any sender (the socket's buffer fills), so tx_pps and rx_pps
show the link's rate, not `rate` (bypassed, 20 kpps had crossed a 1mbit link).

The sink counts: dst's UDP counters (/proc/net/snmp or snmp6 read inside its namespace,
before, during and after: NoPorts, as nothing listens on `dport`) give the datagrams that
arrived, and nothing else (IPv6 housekeeping right after a lab is built would inflate
interface counters by a few packets). Nor can they tell one flow from another: with
`events:`, when measurements run together, one that sends UDP to dst (another pps, a UDP
iperf3, stage_latency) is refused at validation, and a sink that counts more than was sent
(other UDP: a `command`'s, batmand's or BFD's datagrams) fails the run rather than give a
loss below 0.

Generators (`generator:`):
- `netrig`: netrig_gen (pktgen/netrig_gen.c, built with gcc at first use into
  ~/.cache/netrig): prebuilt frames, sendmmsg batches, PACKET_QDISC_BYPASS (see above), one
  socket per thread, paced by the clock when `rate` is set; it counts frames the first hop
  refused (veth returns ENOBUFS when the next backlog is full; ENETDOWN while src's own link
  is down, e.g. a `link … down` event on it: sending goes on) apart from frames sent.
- `trafgen` (Debian netsniff-ng): the same frames from a trafgen config (TX ring at full
  speed, `-b` pacing when `rate` is set), ended with SIGINT `duration` after it says it
  runs. Not `-n`: trafgen 0.6.8 given `-n` ignores `-b` and sends at full speed.
- `auto` (default): netrig_gen when gcc is there (or it is already built), else trafgen.
  benchmarks/forwarding_pps.py measures both in one run: at full speed they forward about
  the same here; paced, netrig_gen sends exactly rate × duration, evenly, while trafgen's
  `-b` sends a second's worth in one burst, then waits.

Samples: `tx_pps` and `tx_packets` (what the generator says it sent), `rx_pps` and
`rx_packets` (what reached dst; rates over the generator's own sending time),
`loss_percent`, `tx_refused` (netrig_gen), `rx_pps` per `interval` (t: seconds since the
generator was started, so with `events:` on the timeline's clock), and per watched
node `tx_packets` per interface (stream `node:iface`), which shows how ECMP split the flows.

On veth, a frame is forwarded in the softirq of the CPU that sent it, through every hop:
one generator thread uses one CPU for generation and all forwarding; `threads: 2` uses two.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator

from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab import netns
from netrig.measure import (
    AddressChoice,
    KeyPath,
    Measurement,
    MeasureOptions,
    Result,
    end_group,
    mark_started,
    node_problems,
    not_installed,
    read_spool,
    register,
    spool,
    tail,
    target_address,
)
from netrig.measure.parse_pps import (
    GeneratorReport,
    netdev_counters,
    parse_netrig_gen,
    parse_trafgen,
    udp_received,
)
from netrig.model.models import NodeName, Seconds

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import LabPlan

SOURCE = os.path.join(os.path.dirname(__file__), "pktgen", "netrig_gen.c")
TC_H_ROOT = 0xFFFFFFFF  # a root qdisc's parent
FCS = 4  # bytes of a frame's checksum: counted in frame_size, not sent on a veth
STARTUP_SLACK = 15.0  # timeout beyond the duration (gcc at first use, trafgen's set-up)
POLL = 0.01  # seconds between counter reads while traffic flows
SETTLE = 1.0  # at most this long for the last frames to drain into the sink's counters
_RATE_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}


def parse_pps(value: Any) -> float:
    """Packets per second: 20000, '20k', '20kpps', '1.5Mpps'."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*(?:pps)?\s*", str(value))
    if not m:
        raise ValueError(f"{value!r} is not a packet rate; write e.g. 20000, 20kpps or 1.5Mpps")
    return float(m.group(1)) * _RATE_UNITS[m.group(2).lower()]


PacketRate = Annotated[float, BeforeValidator(parse_pps), Field(gt=0, le=1e9)]


class PpsOptions(MeasureOptions):
    src: NodeName = Field(description="node whose generator sends")
    dst: NodeName = Field(description="node whose UDP counters count what arrives (the sink)")
    generator: Literal["auto", "netrig", "trafgen"] = Field(
        "auto", description="netrig (netrig_gen, built with gcc), trafgen (netsniff-ng), auto"
    )
    duration: Seconds = Field(5.0, description="seconds of traffic")
    rate: PacketRate | None = Field(
        None, description="packets/s to send, e.g. 20kpps (default: all)"
    )
    frame_size: int | None = Field(
        None, ge=64, le=1518, description="bytes per frame, FCS included (64; IPv6: 66)"
    )
    flows: int = Field(256, ge=1, le=4096, description="UDP source ports (flows) to cycle over")
    sport: int = Field(10000, ge=1, le=65535, description="first UDP source port")
    dport: int = Field(9, ge=1, le=65535, description="UDP destination port (9: discard)")
    threads: int = Field(1, ge=1, le=64, description="generator threads (trafgen: processes)")
    family: Literal[4, 6] = Field(4, description="IPv4 or IPv6")
    address: AddressChoice = Field("auto", description="dst address: loopback, link or auto")
    interval: Seconds = Field(1.0, description="seconds per rx_pps interval sample (0: none)")
    watch: list[NodeName] = Field([], description="nodes whose per-interface tx counts to store")
    qdisc: Literal["auto", "bypass", "use"] = Field(
        "auto",
        description="src's qdisc: auto (used when src's interface has one, e.g. a link's rate, "
        "delay or loss, and in runs with events), bypass, use",
    )

    @model_validator(mode="after")
    def _consistent(self) -> PpsOptions:
        if self.src == self.dst:
            raise ValueError(f"src and dst are both {self.src!r}; pick two nodes")
        if self.duration <= 0:
            raise ValueError("duration must be more than 0 s")
        if self.sport + self.flows - 1 > 65535:
            raise ValueError(f"sport {self.sport} + {self.flows} flows go beyond port 65535")
        if self.family == 6 and self.frame_bytes < 66:
            raise ValueError("frame_size: IPv6/UDP frames need at least 66 bytes")
        if 0 < self.interval < 0.05:
            raise ValueError("interval: at least 0.05 s (0 turns it off)")
        if self.rate is not None and self.rate * self.duration < 1:
            raise ValueError("rate × duration is less than one packet")
        return self

    @property
    def frame_bytes(self) -> int:
        """frame_size, or the smallest Ethernet frame that holds IP and UDP."""
        return self.frame_size or (64 if self.family == 4 else 66)


@register
class Pps(Measurement[PpsOptions]):
    name = "pps"
    summary = "packets/s forwarded from a generator (netrig_gen or trafgen) to a sink"
    Options = PpsOptions
    summary_metrics = ("rx_pps", "tx_pps", "loss_percent")

    programs: ClassVar[dict[str, str]] = {"trafgen": "netsniff-ng", "gcc": "gcc"}

    def tools(self, options: PpsOptions) -> dict[str, str]:
        """trafgen, or gcc until netrig_gen is built."""
        if choose_generator(options.generator) == "trafgen":
            return {"trafgen": "netsniff-ng"}
        return {} if os.access(_binary_path(), os.X_OK) else {"gcc": "gcc"}

    def check(self, options: PpsOptions, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        o = options
        refs: list[tuple[KeyPath, str]] = [(("src",), o.src), (("dst",), o.dst)]
        refs += [(("watch", i), node) for i, node in enumerate(o.watch)]
        problems = node_problems(plan, refs)
        if problems:
            return problems
        for key, node in (("src", o.src), ("dst", o.dst)):
            if not plan.node(node).addresses(o.family):
                return [((key,), f"node {node!r} has no IPv{o.family} address (see addressing:)")]
        try:
            target_address(plan, o.src, o.dst, o.family, o.address)
        except KeyError as exc:
            return [(("address",), str(exc.args[0]))]
        shaped = [link for link in plan.links if o.src in (link.a, link.b) and (
            link.rate or link.delay or link.loss)]  # fmt: skip
        if shaped and o.rate is None and o.qdisc != "bypass" and (
            choose_generator(o.generator) == "trafgen"
        ):
            link = shaped[0]
            return [(("generator",), (
                f"trafgen cannot send unpaced through the shaper of {link.a}–{link.b} (it "
                "stops when the queue is full: 'Flushing TX_RING failed'); give pps a rate: "
                "(at most the link's), or generator: netrig"))]  # fmt: skip
        return []

    def udp_arrives(self, options: PpsOptions) -> list[tuple[str, int]]:
        return [(options.dst, options.family)]

    def udp_counted(self, options: PpsOptions) -> tuple[str, int] | None:
        """The sink reads dst's UDP counters, which count every flow alike."""
        return options.dst, options.family

    def during_events(self, options: PpsOptions) -> PpsOptions:
        """Through src's qdisc, unless the file says otherwise: a `link … rate` event on
        src's link puts a token bucket there after the generator has started."""
        if options.qdisc != "auto":
            return options
        return options.model_copy(update={"qdisc": "use"})

    def timeout(self, options: PpsOptions) -> float:
        o = options
        return float(o.timeout or o.duration + STARTUP_SLACK)

    def length(self, options: PpsOptions) -> float:
        return float(options.duration)

    def run(self, lab: Lab, options: PpsOptions, timeout: float) -> Result:
        o = options
        deadline = time.monotonic() + timeout
        generator = choose_generator(o.generator)
        target = target_address(lab.plan, o.src, o.dst, o.family, o.address)
        source = lab.plan.addr(o.src, o.family)
        way = egress(lab, o.src, target)
        qdisc = o.qdisc == "use" or (o.qdisc == "auto" and way.qdisc != "noqueue")
        watched = {node: read_counters(lab, node) for node in o.watch}
        sink = SinkCounter(lab.ns(o.dst), o.family, o.interval)
        with contextlib.ExitStack() as stack:
            if generator == "netrig":
                argv = [netrig_gen_binary(), *netrig_gen_args(o, way, source, target, qdisc)]
            else:
                if shutil.which("trafgen") is None:
                    raise not_installed("trafgen", "netsniff-ng")
                cfg = stack.enter_context(tempfile.NamedTemporaryFile("w", suffix=".cfg"))
                cfg.write(trafgen_config(o, way, source, target))
                cfg.flush()
                argv = trafgen_argv(o, way.ifname, cfg.name, qdisc)
            out, err = stack.enter_context(spool()), stack.enter_context(spool())
            sink.start()
            stack.callback(sink.stop)
            origin, report = _run_generator(lab, o, generator, argv, out, err, deadline)
            sink.ended = time.monotonic()
            sink.settle(deadline)
            output = tail(read_spool(err) + read_spool(out))
        after = {node: read_counters(lab, node) for node in o.watch}
        samples = _samples(o, generator, report, sink, watched, after, origin)
        if sink.received == 0:
            raise MeasurementFailed(f"no packet reached {o.dst} (100% loss)", samples, output)
        if sink.received > report.sent + trafgen_slack(generator, report.sent):
            raise MeasurementFailed(
                f"{o.dst} counted {sink.received} UDP datagrams, {sink.received - report.sent} "
                f"more than the {report.sent} sent: other UDP reached it meanwhile (another "
                "measurement's, a routing daemon's such as batmand's or BFD's), which its UDP "
                "counters cannot tell from these; no loss is given",
                [s for s in samples if s.metric.startswith("tx_") or s.metric == "send_time"],
                output,
            )
        return samples


# ------------------------------------------------------------------ the generators


def trafgen_slack(generator: str, sent: int) -> int:
    """How many more frames the sink may count than the generator says it sent, with no
    other UDP about: none for netrig_gen, whose count is exact (16 paced runs); trafgen's
    fell short by 0.04 % when it sent past a shaper (230 of 548,352; 0.1 % allowed), which had
    failed runs as "other UDP reached it"."""
    return 0 if generator == "netrig" else max(2, sent // 1000)


def choose_generator(choice: str) -> str:
    """`auto` → netrig when it can be built (or was), else trafgen when installed."""
    if choice != "auto":
        return choice
    if shutil.which("gcc") or os.path.exists(_binary_path()):
        return "netrig"
    return "trafgen" if shutil.which("trafgen") else "netrig"


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "netrig")


def _binary_path() -> str:
    with open(SOURCE, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()[:12]
    return os.path.join(_cache_dir(), f"netrig_gen-{digest}")


def netrig_gen_binary() -> str:
    """netrig_gen, compiled from its source at first use (one build per source version; a
    lock keeps parallel runs from building it twice)."""
    path = _binary_path()
    if os.access(path, os.X_OK):
        return path
    gcc = shutil.which("gcc")
    if gcc is None:
        raise not_installed("gcc (to build netrig_gen)", "gcc")
    os.makedirs(_cache_dir(), exist_ok=True)
    with open(os.path.join(_cache_dir(), ".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(path, os.X_OK):
            return path
        tmp = f"{path}.{os.getpid()}.tmp"
        done = subprocess.run(
            [gcc, "-O2", "-Wall", "-pthread", "-o", tmp, SOURCE],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise MeasurementFailed("building netrig_gen with gcc failed", stderr=tail(done.stderr))
        os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class Egress:
    """Where src's frames leave: its interface, its MAC, the next hop's MAC, and the kind
    of the interface's root qdisc (noqueue: none, a veth's own)."""

    ifname: str
    src_mac: str
    dst_mac: str
    qdisc: str = "noqueue"


def egress(lab: Lab, src: str, target: str) -> Egress:
    """The route src's kernel would take to `target`, and the next hop's (permanent) ARP/ND
    entry, read over netlink inside src's namespace."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError

    def work() -> Egress:
        with IPRoute() as ipr:
            try:
                route = next(iter(ipr.route("get", dst=target)))
            except NetlinkError as exc:
                raise MeasurementFailed(f"{src} has no route to {target}: {exc}") from None
            oif = route.get_attr("RTA_OIF")
            via = route.get_attr("RTA_GATEWAY") or target
            link = next(iter(ipr.get_links(oif)))
            ifname, mac = link.get_attr("IFLA_IFNAME"), link.get_attr("IFLA_ADDRESS")
            roots = [q for q in ipr.get_qdiscs(oif) if q["parent"] == TC_H_ROOT]
            qdisc = str(roots[0].get_attr("TCA_KIND")) if roots else "noqueue"
            for neigh in ipr.get_neighbours(ifindex=oif):
                if neigh.get_attr("NDA_DST") == via and neigh.get_attr("NDA_LLADDR"):
                    return Egress(ifname, mac, neigh.get_attr("NDA_LLADDR"), qdisc)
        raise MeasurementFailed(f"{src}: no ARP/ND entry for the next hop {via} on {ifname}")

    return netns.in_netns(lab.ns(src), work)


def netrig_gen_args(
    o: PpsOptions, way: Egress, source: str, target: str, qdisc: bool = False
) -> list[str]:
    argv = [
        "--dev", way.ifname, "--src-mac", way.src_mac, "--dst-mac", way.dst_mac,
        "--src", source, "--dst", target, "--sport", str(o.sport), "--flows", str(o.flows),
        "--dport", str(o.dport), "--size", str(o.frame_bytes - FCS),
        "--duration", f"{o.duration:g}", "--threads", str(o.threads),
    ]  # fmt: skip
    if o.rate is not None:
        argv += ["--rate", f"{o.rate:g}", "--count", str(round(o.rate * o.duration))]
    return argv + (["--qdisc"] if qdisc else [])


def trafgen_config(o: PpsOptions, way: Egress, source: str, target: str) -> str:
    """One packet template; trafgen increments the source port per frame and fixes up the
    UDP checksum itself."""
    header = 14 + (20 if o.family == 4 else 40) + 8
    ip = (
        f"ipv4(saddr={source}, daddr={target}, ttl=64, df)"
        if o.family == 4
        else f"ipv6(saddr={source}, daddr={target}, hl=64)"
    )
    sports = f"dinc({o.sport}, {o.sport + o.flows - 1})" if o.flows > 1 else str(o.sport)
    payload = o.frame_bytes - FCS - header
    fill = f", fill(0x00, {payload})" if payload else ""
    return (
        f"{{ eth(da={way.dst_mac}, sa={way.src_mac}), {ip}, "
        f"udp(sport={sports}, dport={o.dport}){fill} }}\n"
    )


def trafgen_argv(o: PpsOptions, ifname: str, cfg: str, qdisc: bool = False) -> list[str]:
    # --no-sock-mem and -Q: leave the host's socket memory sysctls and IRQ affinities alone
    argv = ["trafgen", "-o", ifname, "-c", cfg, "-P", str(o.threads), "--no-sock-mem", "-Q"]
    if qdisc:  # -q: through the qdisc (trafgen bypasses it by default)
        argv.append("-q")
    if o.rate is not None:  # no -n: trafgen 0.6.8 ignores -b when given -n (full speed)
        argv += ["-b", f"{o.rate:.0f}pps"]
    return argv


def _run_generator(
    lab: Lab,
    o: PpsOptions,
    generator: str,
    argv: list[str],
    out: Any,
    err: Any,
    deadline: float,
) -> tuple[float, GeneratorReport]:
    """Start the generator in src, stop trafgen after `duration` of sending, parse its report.
    Also returns when it was started: t = 0 of the interval samples, the moment the runner
    lines up with a timeline of events (mark_started)."""
    origin = mark_started()
    try:
        proc = lab.popen(
            o.src,
            argv,
            label=f"{lab.name}/{o.src}/pps-{generator}/{time.monotonic_ns()}",
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # trafgen -P forks workers: they go with its group
        )
    except FileNotFoundError:
        raise not_installed(argv[0], "netsniff-ng" if generator == "trafgen" else "gcc") from None
    name = os.path.basename(argv[0]).split("-")[0]
    try:
        interrupt_at = None
        while proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                raise MeasurementFailed(
                    f"{name} did not finish in time", stderr=tail(read_spool(err))
                )
            if generator == "trafgen":
                if interrupt_at is None and b"Running!" in _peek(out):
                    interrupt_at = now + o.duration
                if interrupt_at is not None and now >= interrupt_at:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGINT)
                    interrupt_at = float("inf")
            time.sleep(POLL)
    finally:
        end_group(proc)
    stdout, stderr = read_spool(out), read_spool(err)
    if proc.returncode != 0:
        first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "")
        raise MeasurementFailed(
            f"{name} exited with {proc.returncode}" + (f": {first}" if first else ""),
            stderr=tail(stderr + stdout),
        )
    try:
        report = parse_netrig_gen(stdout) if generator == "netrig" else parse_trafgen(stdout)
    except MeasurementFailed as exc:
        raise MeasurementFailed(exc.reason, stderr=tail(stderr + stdout)) from None
    if report.sent == 0:
        raise MeasurementFailed(f"{name} sent no packet", stderr=tail(stderr + stdout))
    return origin, report


def _peek(fh: Any) -> bytes:
    """The start of a spool the child is still writing, read without moving the file
    offset the child shares with us."""
    fh.flush()
    return os.pread(fh.fileno(), 4096, 0)


# ------------------------------------------------------------------ counting


def _own_counters() -> dict[str, Any]:
    """Counters of the calling thread's namespace (a worker thread inside a node)."""
    with open("/proc/thread-self/net/dev") as fh:
        return netdev_counters(fh.read())


def read_counters(lab: Lab, node: str) -> dict[str, Any]:
    return netns.in_netns(lab.ns(node), _own_counters)


def _udp_total(family: int) -> int:
    """UDP datagrams that reached the calling thread's namespace (see udp_received)."""
    with open("/proc/thread-self/net/" + ("snmp6" if family == 6 else "snmp")) as fh:
        return udp_received(fh.read(), family)


class SinkCounter:
    """UDP datagrams arriving at the sink, read every POLL seconds by a thread inside its
    namespace; keeps (time, total) at interval boundaries from the first arrival on."""

    def __init__(self, ns: str, family: int, interval: float) -> None:
        self.ns, self.family, self.interval = ns, family, interval
        self.first: int | None = None
        self.last: int | None = None
        self.marks: list[tuple[float, int]] = []  # (monotonic, total) at boundaries
        self.ended = float("inf")  # when the generator was seen to exit
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="netrig-pps-sink", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _loop(self) -> None:
        try:
            with netns.entered(self.ns):
                self.first = self.last = _udp_total(self.family)
                previous = (time.monotonic(), self.first)
                self._ready.set()
                while not self._stop.is_set():
                    self._stop.wait(POLL)
                    total, now = _udp_total(self.family), time.monotonic()
                    self.last = total
                    if self.interval and not self.marks and total != self.first:
                        self.marks.append(previous)  # the last reading before traffic
                    if self.marks and now >= self.marks[-1][0] + self.interval:
                        self.marks.append((now, total))
                    previous = (now, total)
        except BaseException as exc:  # reported by start() or stop()
            self._error = exc
            self._ready.set()

    def settle(self, deadline: float) -> None:
        """Wait until the count stops moving: frames still in backlogs arrive after the
        generator exits."""
        end = min(deadline, time.monotonic() + SETTLE)
        seen = self.last
        while time.monotonic() < end:
            time.sleep(5 * POLL)
            if self.last == seen:
                return
            seen = self.last

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def received(self) -> int:
        return (self.last or 0) - (self.first or 0)

    def interval_rates(self, origin: float) -> list[tuple[float, float]]:
        """(t, packets/s) per whole interval from the first arrival to the generator's end
        (a last interval cut short by that end is left out); t in seconds since `origin`
        (monotonic: when the generator was started), not since the first arrival, which
        comes after the generator's start-up and would put every interval early on a
        timeline of events."""
        return [
            (t0 - origin, (n1 - n0) / (t1 - t0))
            for (t0, n0), (t1, n1) in zip(self.marks, self.marks[1:], strict=False)
            if t1 + POLL <= self.ended
        ]


def _samples(
    o: PpsOptions,
    generator: str,
    report: GeneratorReport,
    sink: SinkCounter,
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
    origin: float,
) -> list[Sample | Any]:
    seconds = max(report.seconds, 1e-6)
    received = sink.received
    samples = [
        Sample("tx_packets", report.sent, "packets"),
        Sample("rx_packets", received, "packets"),
        Sample("tx_pps", report.sent / seconds, "packets/s"),
        Sample("rx_pps", received / seconds, "packets/s"),
        # (never below 0: within trafgen_slack, more received than trafgen said it sent)
        Sample("loss_percent", max(0.0, 100.0 * (report.sent - received) / report.sent), "%"),
        Sample("send_time", report.seconds, "s"),
    ]
    if generator == "netrig":
        samples.append(Sample("tx_refused", report.refused, "packets"))
    samples += [Sample("rx_pps", pps, "packets/s", t=t) for t, pps in sink.interval_rates(origin)]
    for node, counters in after.items():
        for ifname, c in counters.items():
            if ifname != "lo" and ifname in before[node]:
                delta = c.tx_packets - before[node][ifname].tx_packets
                samples.append(Sample("tx_packets", delta, "packets", stream=f"{node}:{ifname}"))
    return samples
