"""Parse `fping` output (several targets at once) into per-target RTT and loss samples.

Why one parser for three shapes: fping prints `-C N` (every RTT, `-` for a lost probe),
`-c N` (xmt/rcv/%loss and min/avg/max) and plain alive/unreachable lines, and a plugin may
use any of them. The summaries go to stderr and the per-probe lines (without -q) to stdout, so
both are read; lines of other shapes (per-probe, ICMP errors) are ignored or kept as errors.

Every sample carries the target as its `stream`. A target that never answered gets sent,
received and loss_percent (100) but no RTT. If no target answered at all, or nothing could
be parsed, MeasurementFailed is raised (with those loss samples).

    result = parse_fping(completed.stdout, completed.stderr)
    [t.target for t in result.targets if not t.reachable]    # ['198.18.0.99']

Metric names (per target, t=None): rtt_min, rtt_avg, rtt_max [ms]; rtt_mdev [ms] (-C only,
population deviation like ping's mdev); sent, received [packets]; loss_percent [%];
reachable [1 or 0] (alive/unreachable mode only).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from netrig.base.sample import MeasurementFailed, Sample

_NUMBER = r"\d+(?:\.\d+)?"
_COUNT = re.compile(
    rf"^(?P<target>\S+)\s*: xmt/rcv/%loss = (?P<sent>\d+)/(?P<received>\d+)/(?P<loss>-?{_NUMBER})%"
    rf"(?:, min/avg/max = (?P<min>{_NUMBER})/(?P<avg>{_NUMBER})/(?P<max>{_NUMBER}))?"
)
_VECTOR = re.compile(rf"^(?P<target>\S+)\s*:(?P<rtts>(?:\s+(?:{_NUMBER}|-))+)\s*$")
_ALIVE = re.compile(r"^(?P<target>\S+) is (?P<state>alive|unreachable)\b")
_ICMP_ERROR = re.compile(r"^(?P<what>ICMP .+) from \S+ for ICMP Echo sent to (?P<target>\S+)")
_SEND_ERROR = re.compile(r"^(?P<target>\S+): error while sending ping: (?P<what>.+)$")


@dataclass
class FpingTarget:
    """What fping reported for one target; RTTs in ms, None where it has no value."""

    target: str
    sent: int | None = None
    received: int | None = None
    loss_percent: float | None = None
    rtt_min: float | None = None
    rtt_avg: float | None = None
    rtt_max: float | None = None
    rtt_mdev: float | None = None  # -C only: computed from the listed RTTs
    rtts: tuple[float | None, ...] = ()  # -C only: per probe, None for a lost one
    alive: bool | None = None  # plain mode only
    errors: list[str] = field(default_factory=list)

    @property
    def reachable(self) -> bool:
        """True if at least one probe was answered."""
        if self.received is not None:
            return self.received > 0
        return bool(self.alive)

    def samples(self) -> list[Sample]:
        """This target's values as samples, labelled with the target."""
        values = [
            ("rtt_min", self.rtt_min, "ms"), ("rtt_avg", self.rtt_avg, "ms"),
            ("rtt_max", self.rtt_max, "ms"), ("rtt_mdev", self.rtt_mdev, "ms"),
            ("sent", self.sent, "packets"), ("received", self.received, "packets"),
            ("loss_percent", self.loss_percent, "%"),
        ]
        if self.alive is not None:
            values.append(("reachable", int(self.alive), ""))
        return [Sample(m, v, unit, None, self.target) for m, v, unit in values if v is not None]


@dataclass(frozen=True)
class FpingResult:
    """One fping run over one or more targets, in the order fping reported them."""

    targets: tuple[FpingTarget, ...]
    samples: tuple[Sample, ...]

    def target(self, name: str) -> FpingTarget:
        """The report for one target; KeyError if fping did not report it."""
        for report in self.targets:
            if report.target == name:
                return report
        raise KeyError(name)

    @property
    def unreachable(self) -> tuple[str, ...]:
        """Targets that answered no probe."""
        return tuple(t.target for t in self.targets if not t.reachable)


def _from_vector(report: FpingTarget, text: str) -> None:
    rtts = tuple(None if item == "-" else float(item) for item in text.split())
    answered = [rtt for rtt in rtts if rtt is not None]
    report.rtts = rtts
    report.sent, report.received = len(rtts), len(answered)
    report.loss_percent = 100.0 * (len(rtts) - len(answered)) / len(rtts)
    if answered:
        mean = sum(answered) / len(answered)
        report.rtt_min, report.rtt_max = min(answered), max(answered)
        report.rtt_avg = mean
        report.rtt_mdev = math.sqrt(sum((rtt - mean) ** 2 for rtt in answered) / len(answered))


def _from_count(report: FpingTarget, match: re.Match[str]) -> None:
    report.sent, report.received = int(match["sent"]), int(match["received"])
    report.loss_percent = float(match["loss"])
    if match["min"] is not None:
        report.rtt_min = float(match["min"])
        report.rtt_avg = float(match["avg"])
        report.rtt_max = float(match["max"])


def parse_fping(stdout: str, stderr: str = "") -> FpingResult:
    """Parse one fping run; raise MeasurementFailed if no target answered."""
    reports: dict[str, FpingTarget] = {}
    errors: list[tuple[str, str]] = []
    other: list[str] = []

    def report(target: str) -> FpingTarget:
        return reports.setdefault(target, FpingTarget(target))

    for line in (stdout + "\n" + stderr).splitlines():
        line = line.strip()
        if not line:
            continue
        if match := _COUNT.match(line):
            _from_count(report(match["target"]), match)
        elif match := _VECTOR.match(line):
            _from_vector(report(match["target"]), match["rtts"])
        elif match := _ALIVE.match(line):
            report(match["target"]).alive = match["state"] == "alive"
        elif (match := _ICMP_ERROR.match(line)) or (match := _SEND_ERROR.match(line)):
            errors.append((match["target"], match["what"]))
        elif " : [" not in line:  # not a per-probe line of -c/-C without -q
            other.append(line)

    for target, what in errors:
        if target in reports and what not in reports[target].errors:
            reports[target].errors.append(what)
    if not reports:
        detail = other[-1] if other else "no output"
        raise MeasurementFailed(f"fping reported no target: {detail}")

    targets = tuple(reports.values())
    samples = tuple(sample for t in targets for sample in t.samples())
    if not any(t.reachable for t in targets):
        lost = ", ".join(
            t.target + (f" ({t.errors[0]})" if t.errors else "") for t in targets
        )
        raise MeasurementFailed(f"no reply from any target: {lost}", samples)
    return FpingResult(targets=targets, samples=samples)
