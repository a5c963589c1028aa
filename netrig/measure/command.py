"""command: run any command in a node; record its exit code, duration and stdout.

    - command: {node: n1, cmd: "ip route | wc -l", metrics: true}
    - command: {node: n3, cmd: [ss, -tin], name: sockets}

A string runs through `sh -c`; a list runs as is. An exit code outside `ok_codes` (default
[0]) fails the run, with the command's stderr. With `metrics: true`, stdout lines of the form
`NAME VALUE [UNIT]` (or one bare number, stored as `value`) become samples, so a script can
report any number; a name of netrig's own samples (`exit_code`, `duration`) is stored with
the prefix `stdout_` (`duration 2.5 s` is `stdout_duration`), so the two never mix. Braces in a command are parameter expressions: write `{{` and `}}` for
literal ones (awk '{{print $1}}').
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure import (
    KeyPath,
    Measurement,
    MeasureOptions,
    Result,
    Text,
    node_problems,
    register,
    tail,
)
from netrig.model.models import NodeName

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

OUTPUT_KEEP = 65536  # characters of stdout stored
#: the samples netrig itself records for every command; a metric of the same name printed
#: by the command is stored as OWN_PREFIX + name: mixed in, it had doubled N (a script's
#: `duration 2.5 s` beside the 5 ms wall clock gave a median of 1.25 s)
OWN_METRICS = ("exit_code", "duration")
OWN_PREFIX = "stdout_"
# NAME VALUE [UNIT]: a unit is anything but a continuation of the number ("12ms", "45 °C",
# "3 (approx)"), so a decimal comma ("1,5") is no unit, and the line no metric (it had been
# stored as 1, unit ",5")
_METRIC_LINE = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_.]*)[\s:=]+(-?[\d.]+(?:[eE][-+]?\d+)?)"
    r"\s*((?:[^\s\d.,;:]\S*)?)\s*$"
)


class CommandOptions(MeasureOptions):
    node: NodeName = Field(description="node the command runs in")
    cmd: str | list[str] = Field(description="a shell command line, or an argv list")
    ok_codes: list[int] = Field([0], description="exit codes that count as success")
    metrics: bool = Field(False, description="read `NAME VALUE [UNIT]` lines of stdout as samples")

    @field_validator("cmd")
    @classmethod
    def _not_empty(cls, value: str | list[str]) -> str | list[str]:
        if not value or (isinstance(value, str) and not value.strip()):
            raise ValueError("cmd is empty")
        return value

    def argv(self) -> list[str]:
        return ["sh", "-c", self.cmd] if isinstance(self.cmd, str) else [str(a) for a in self.cmd]


@register
class Command(Measurement[CommandOptions]):
    name = "command"
    summary = "any command in a node: exit code, duration, stdout (and numbers it prints)"
    Options = CommandOptions
    summary_metrics = ()  # every number it reports: exit_code, duration, and its own metrics

    def tools(self, options: CommandOptions) -> dict[str, str]:
        """The shell, or the program of an argv list (its package is unknown: no name)."""
        program = options.argv()[0]
        return {program: "dash" if program == "sh" else ""}

    def check(self, options: CommandOptions, plan: Any) -> list[tuple[KeyPath, str]]:
        return node_problems(plan, [(("node",), options.node)])

    def run(self, lab: Lab, options: CommandOptions, timeout: float) -> Result:
        o = options
        start = time.monotonic()
        try:
            done = lab.exec(
                o.node,
                o.argv(),
                capture_output=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                errors="replace",
            )
        except FileNotFoundError:
            raise MeasurementFailed(f"{o.argv()[0]}: command not found in {o.node}") from None
        except subprocess.TimeoutExpired as exc:
            raise MeasurementFailed(
                f"command did not finish within {timeout:g} s", stderr=tail(exc.stderr)
            ) from None
        elapsed = time.monotonic() - start
        samples: list[Sample] = [
            Sample("exit_code", done.returncode, ""),
            Sample("duration", elapsed, "s"),
        ]
        if done.returncode not in o.ok_codes:
            first = next((ln for ln in done.stderr.splitlines() if ln.strip()), "")
            detail = f": {first.strip()}" if first else ""
            raise MeasurementFailed(
                f"command exited with {done.returncode}{detail}", samples, tail(done.stderr)
            )
        if o.metrics:
            try:
                samples += parse_metrics(done.stdout)
            except ValueError as exc:
                raise MeasurementFailed(str(exc), samples) from None
        return [*samples, Text("stdout", done.stdout[-OUTPUT_KEEP:])]


def parse_metrics(stdout: str) -> list[Sample]:
    """`NAME VALUE [UNIT]` lines (or `NAME: VALUE`, `NAME=VALUE`); one bare number → `value`.

    A NAME of OWN_METRICS becomes `stdout_NAME`; ValueError if the output has that name
    too (the two would mix again).
    """
    text = stdout.strip()
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        return [Sample("value", number, "")] if math.isfinite(number) else []
    samples = []
    for line in stdout.splitlines():
        m = _METRIC_LINE.match(line)
        if m:
            try:
                value = float(m.group(2))
            except ValueError:
                continue
            if math.isfinite(value):
                samples.append(Sample(m.group(1), value, m.group(3)))
    printed = {s.metric for s in samples}
    for own in OWN_METRICS:
        if own in printed and OWN_PREFIX + own in printed:
            raise ValueError(
                f"the output has metrics {own!r} and {OWN_PREFIX + own!r}: {own!r} is "
                f"netrig's own sample of a command, so the output's is stored as "
                f"{OWN_PREFIX + own!r}, which the output has too; rename one of them"
            )
    return [
        replace(s, metric=OWN_PREFIX + s.metric) if s.metric in OWN_METRICS else s
        for s in samples
    ]
