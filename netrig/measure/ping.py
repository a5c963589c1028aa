"""ping / fping: round-trip time and loss between chosen pairs of nodes, or all pairs at once.

    - ping: {src: n1, dst: n9, count: 10}
    - ping: {pairs: [[n1, n9], [n2, n10]], tool: fping}
    - ping: {all_pairs: true, count: 3}          # fping from every node to every other
    - ping: {src: n1, dst: n9, count: 1000, interval: 10ms, per_probe: true}

`per_probe: true` (fping) also stores every probe: `rtt` [ms] for an answered one and `lost`
[packets] for one that was not, each with t = its send time (from fping's stamp of its reply
less its RTT; a lost probe's spread between the answered ones around it). That is
the loss series from which a run with `events:` derives outage and reconvergence.

Pairs are measured at the same time: one `ping` per pair, or one `fping` per source node
over all its targets. Each pair's samples carry the stream `SRC>DST`; with several pairs the
summary (no stream) is the mean RTT over pairs, the extremes, and the overall loss. A pair
that got no reply at all makes the measurement fail (its loss counters are kept), since an
RTT of a dead path does not exist and must not be stored as 0; ping sends every probe even
when ICMP errors come back, and the reason names the first (`… 20 sent, 0 received, 100%
loss (Time to live exceeded from 198.18.0.5; 7 errors)`).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure import (
    AddressChoice,
    KeyPath,
    Measurement,
    MeasureOptions,
    Result,
    end_process,
    mark_started,
    node_problems,
    not_installed,
    read_spool,
    register,
    spool,
    started_wall,
    tail,
    target_address,
    wait_all,
)
from netrig.measure.parse_fping import parse_fping
from netrig.measure.parse_ping import parse_ping
from netrig.model.models import NodeName, Seconds

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

PACKAGES = {"ping": "iputils-ping", "fping": "fping"}
SLACK = 5.0  # seconds beyond count × interval before the measurement counts as hung
LINGER = 2  # seconds ping waits for the last replies once every probe is sent


class PingOptions(MeasureOptions):
    src: NodeName | None = Field(None, description="source node of a single pair")
    dst: NodeName | None = Field(None, description="target node of a single pair")
    pairs: list[tuple[NodeName, NodeName]] | None = Field(None, description="[[src, dst], …]")
    all_pairs: bool = Field(False, description="every host to every other host (fping)")
    tool: Literal["ping", "fping"] | None = Field(
        None, description="default: ping; fping for all_pairs"
    )
    count: int = Field(5, ge=1, le=100000, description="echo requests per pair")
    interval: Seconds = Field(0.2, description="seconds between requests of a pair")
    size: int | None = Field(None, ge=0, le=65000, description="payload bytes")
    family: Literal[4, 6] = Field(4, description="IPv4 or IPv6 addresses")
    per_probe: bool = Field(
        False, description="store every probe's RTT or loss with its send time (fping)"
    )
    address: AddressChoice = Field(
        "auto", description="target address: loopback, link (shared with the source), auto"
    )

    @model_validator(mode="after")
    def _one_way_to_choose(self) -> PingOptions:
        single = self.src is not None or self.dst is not None
        chosen = [single, self.pairs is not None, self.all_pairs]
        if sum(chosen) != 1:
            raise ValueError("give exactly one of: src and dst, pairs, all_pairs: true")
        if single and (self.src is None or self.dst is None):
            raise ValueError("a single pair needs both src and dst")
        if self.all_pairs and self.tool == "ping":
            raise ValueError("all_pairs uses fping (one process per node); drop tool: ping")
        if self.per_probe and self.tool == "ping":
            raise ValueError("per_probe uses fping, which keeps its schedule through losses")
        if self.pairs is not None and not self.pairs:
            raise ValueError("pairs is empty")
        for src, dst in self.chosen_pairs([]):
            if src == dst:
                raise ValueError(f"pair {src}>{dst}: source and target are the same node")
        if self.interval < 0.001:
            raise ValueError("interval must be at least 0.001 s")
        return self

    def chosen_pairs(self, hosts: list[str]) -> list[tuple[str, str]]:
        if self.src is not None and self.dst is not None:
            return [(self.src, self.dst)]
        if self.pairs is not None:
            return [tuple(p) for p in self.pairs]  # type: ignore[misc]
        return [(a, b) for a in hosts for b in hosts if a != b]

    def program(self) -> str:
        return self.tool or ("fping" if self.all_pairs or self.per_probe else "ping")


@register
class Ping(Measurement[PingOptions]):
    name = "ping"
    summary = "RTT min/avg/max/mdev and loss (ping or fping), chosen pairs or all pairs"
    Options = PingOptions
    summary_metrics = ("rtt_avg", "rtt_max", "loss_percent")
    pooled_metrics = ("rtt", "lost")  # per_probe's, per pair with `pairs:` or `all_pairs:`

    programs: ClassVar[dict[str, str]] = PACKAGES

    def tools(self, options: PingOptions) -> dict[str, str]:
        program = options.program()
        return {program: PACKAGES[program]}

    def check(self, options: PingOptions, plan: Any) -> list[tuple[KeyPath, str]]:
        o = options
        refs: list[tuple[KeyPath, str]] = []
        if o.src is not None and o.dst is not None:
            refs = [(("src",), o.src), (("dst",), o.dst)]
        elif o.pairs is not None:
            refs = [
                (("pairs", i, j), name) for i, p in enumerate(o.pairs) for j, name in enumerate(p)
            ]
        problems = node_problems(plan, refs)
        if not problems and not any(n.addresses(o.family) for n in plan.hosts()):
            problems.append((("family",), f"the lab has no IPv{o.family} addresses"))
        if not problems and o.address == "link":
            for src, dst in o.chosen_pairs([n.name for n in plan.hosts()]):
                try:
                    target_address(plan, src, dst, o.family, "link")
                except KeyError as exc:
                    problems.append((("address",), str(exc.args[0])))
                    break
        return problems

    def timeout(self, options: PingOptions) -> float:
        o = options
        return float(o.timeout or o.count * o.interval + SLACK)

    def endpoints(self, options: PingOptions) -> list[tuple[str, str]]:
        return [] if options.all_pairs else options.chosen_pairs([])

    def length(self, options: PingOptions) -> float:
        return options.count * options.interval

    def during_events(self, options: PingOptions) -> PingOptions:
        """Every probe on the clock (fping), the loss series outage is derived from, unless
        the file says `per_probe` or `tool: ping`."""
        if "per_probe" in options.model_fields_set or options.tool == "ping":
            return options
        return options.model_copy(update={"per_probe": True})

    def run(self, lab: Lab, options: PingOptions, timeout: float) -> Result:
        o = options
        pairs = o.chosen_pairs([n.name for n in lab.plan.hosts()])
        mark_started()
        if o.program() == "fping":
            per_pair = _fping(lab, o, pairs, timeout)
        else:
            per_pair = _ping(lab, o, pairs, timeout)
        return list(_combine(per_pair, single=len(pairs) == 1 and not o.all_pairs))


def _address(lab: Lab, o: PingOptions, src: str, dst: str) -> str:
    return target_address(lab.plan, src, dst, o.family, o.address)


class _Started:
    """A started ping or fping, its output going to pipes, or to files when it prints a line
    per probe (a pipe would fill up and block it)."""

    def __init__(
        self, lab: Lab, node: str, argv: list[str], program: str, spooled: bool = False
    ) -> None:
        self.files = (spool(), spool()) if spooled else None
        out: Any = self.files[0] if self.files else subprocess.PIPE
        err: Any = self.files[1] if self.files else subprocess.PIPE
        try:
            self.proc: subprocess.Popen[str] = lab.popen(
                node,
                argv,
                label=f"{lab.name}/{node}/{program}/{time.monotonic_ns()}",
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        except FileNotFoundError:
            raise not_installed(program, PACKAGES[program]) from None

    def output(self) -> tuple[str, str]:
        if self.files is None:
            return self.proc.communicate()
        return read_spool(self.files[0]), read_spool(self.files[1])


def _collect(started: list[_Started], timeout: float, program: str) -> list[tuple[str, str]]:
    """Outputs of the processes, or a timeout failure."""
    procs = [s.proc for s in started]
    try:
        if not wait_all(procs, time.monotonic() + timeout):
            raise MeasurementFailed(f"{program} did not finish within {timeout:g} s")
        return [s.output() for s in started]
    finally:
        for p in procs:
            end_process(p)


def _ping(
    lab: Lab, o: PingOptions, pairs: list[tuple[str, str]], timeout: float
) -> dict[tuple[str, str], tuple[list[Sample], str | None, str]]:
    # every probe is sent: no -w deadline, with which iputils ping stops at its first ICMP
    # error (a 20-probe run said "1 sent, 0 received"); -W bounds the wait for the last
    # replies instead (netrig's own timeout still ends a hung one). Not -q: the error lines
    # ("From 198.18.0.5 icmp_seq=1 Time to live exceeded") say why a probe was not answered
    argv = ["ping", "-n", "-c", str(o.count), "-i", f"{o.interval:g}", "-W", str(LINGER)]
    if o.size is not None:
        argv += ["-s", str(o.size)]
    if o.family == 6:
        argv.append("-6")
    procs = [
        _Started(lab, src, [*argv, _address(lab, o, src, dst)], "ping", spooled=True)
        for src, dst in pairs
    ]
    out: dict[tuple[str, str], tuple[list[Sample], str | None, str]] = {}
    for pair, (stdout, stderr) in zip(pairs, _collect(procs, timeout, "ping"), strict=True):
        try:
            out[pair] = (list(parse_ping(stdout, stderr).samples), None, stderr)
        except MeasurementFailed as exc:
            out[pair] = (list(exc.samples), exc.reason, stderr)
    return out


def _fping(
    lab: Lab, o: PingOptions, pairs: list[tuple[str, str]], timeout: float
) -> dict[tuple[str, str], tuple[list[Sample], str | None, str]]:
    by_src: dict[str, list[str]] = defaultdict(list)
    for src, dst in pairs:
        by_src[src].append(dst)
    per_probe_ms = max(int(o.interval * 1000), 1)
    argv = ["fping", "-C", str(o.count), "-p", str(per_probe_ms), "-t", "1000"]
    # per probe: a line per reply, stamped (-D), to place every probe on the clock
    argv += ["-D"] if o.per_probe else ["-q"]
    if o.size is not None:
        argv += ["-b", str(o.size)]
    if o.family == 6:
        argv.append("-6")
    runs = []
    for src, dsts in by_src.items():
        addrs = {_address(lab, o, src, d): d for d in dsts}
        runs.append((src, addrs, _Started(lab, src, [*argv, *addrs], "fping", o.per_probe)))
    outputs = _collect([r[2] for r in runs], timeout, "fping")
    began = started_wall()
    out: dict[tuple[str, str], tuple[list[Sample], str | None, str]] = {}
    for (src, addrs, _), (stdout, stderr) in zip(runs, outputs, strict=True):
        try:
            result = parse_fping(stdout, stderr)
            samples = list(result.samples)
            if o.per_probe:
                sent = _send_times(stdout)
                for t in result.targets:
                    times = probe_times(sent.get(t.target, {}), len(t.rtts), o.interval, began)
                    samples += _per_probe(t.target, t.rtts, [x - began for x in times])
        except MeasurementFailed as exc:
            samples = list(exc.samples)
            if o.per_probe:  # nothing answered: every probe sent was lost
                for s in exc.samples:
                    if s.metric == "sent" and s.stream:
                        count = int(s.value)
                        times = [i * o.interval for i in range(count)]
                        samples += _per_probe(s.stream, (None,) * count, times)
        for addr, dst in addrs.items():
            mine = [s for s in samples if s.stream == addr]
            answered = any(s.metric == "received" and s.value > 0 for s in mine)
            reason = None if answered else f"no reply from {dst} ({addr})"
            out[(src, dst)] = ([replace(s, stream=None) for s in mine], reason, stderr)
    return out


def _per_probe(
    target: str, rtts: tuple[float | None, ...], times: list[float]
) -> list[Sample]:
    """One sample per probe at its send time: its RTT, or a loss (never an RTT of 0)."""
    return [
        Sample("rtt", rtt, "ms", t, target)
        if rtt is not None
        else Sample("lost", 1, "packets", t, target)
        for rtt, t in zip(rtts, times, strict=True)
    ]


_STAMPED = re.compile(r"^\[(\d+\.\d+)\] (\S+) : \[(\d+)\], \d+ bytes, (\d+(?:\.\d+)?) ms")


def _send_times(stdout: str) -> dict[str, dict[int, float]]:
    """Per target, the wall-clock send time of every answered probe, by number, from fping
    -D's stamped replies (reply time − RTT)."""
    sent: dict[str, dict[int, float]] = defaultdict(dict)
    for line in stdout.splitlines():
        m = _STAMPED.match(line)
        if m:
            stamp, target, seq, rtt = float(m[1]), m[2], int(m[3]), float(m[4])
            sent[target][seq] = stamp - rtt / 1000
    return sent


def probe_times(known: dict[int, float], count: int, interval: float, began: float) -> list[float]:
    """The send time of each of `count` probes: as stamped for an answered one; for a lost
    one, between the answered probes around it, spread evenly by number; before the first
    or after the last answered one, `interval` apart from it. fping does not keep its period
    exactly (probe 100 of a 10 ms series went out at +1034 ms), so number × interval from one
    start drifts by tens of ms within seconds, and outages with it. Nothing answered: from
    `began`, number × interval."""
    seqs = sorted(k for k in known if 0 <= k < count)
    if not seqs:
        return [began + i * interval for i in range(count)]
    times = []
    after = 0  # index into seqs of the first answered probe at or after i
    for i in range(count):
        while after < len(seqs) and seqs[after] < i:
            after += 1
        if after < len(seqs) and seqs[after] == i:
            times.append(known[i])
        elif after == 0:
            times.append(known[seqs[0]] - (seqs[0] - i) * interval)
        elif after == len(seqs):
            times.append(known[seqs[-1]] + (i - seqs[-1]) * interval)
        else:
            lo, hi = seqs[after - 1], seqs[after]
            times.append(known[lo] + (known[hi] - known[lo]) * (i - lo) / (hi - lo))
    return times


def _combine(
    per_pair: dict[tuple[str, str], tuple[list[Sample], str | None, str]], single: bool
) -> list[Sample]:
    """Per-pair samples as streams; overall RTT and loss; failure if any pair got no reply."""
    samples: list[Sample] = []
    avgs, mins, maxs, sent, received = [], [], [], 0.0, 0.0
    failures = []
    for (src, dst), (items, reason, stderr) in per_pair.items():
        stream = None if single else f"{src}>{dst}"
        samples += [replace(s, stream=stream) for s in items]
        values = {s.metric: s.value for s in items if s.t is None}
        sent += values.get("sent", 0.0)
        received += values.get("received", 0.0)
        if reason is not None:
            failures.append((f"{src}>{dst}: {reason}", stderr))
            continue
        avgs.append(values["rtt_avg"])
        mins.append(values["rtt_min"])
        maxs.append(values["rtt_max"])
    if not single and sent:
        samples.append(Sample("loss_percent", 100.0 * (sent - received) / sent, "%"))
        samples += [Sample("sent", sent, "packets"), Sample("received", received, "packets")]
        if avgs:
            samples += [
                Sample("rtt_avg", sum(avgs) / len(avgs), "ms"),
                Sample("rtt_min", min(mins), "ms"),
                Sample("rtt_max", max(maxs), "ms"),
            ]
    if failures:
        more = f" (and {len(failures) - 1} more pairs)" if len(failures) > 1 else ""
        stderr = "\n".join(f"{what}\n{err}".strip() for what, err in failures)
        raise MeasurementFailed(failures[0][0] + more, samples, tail(stderr))
    return samples
