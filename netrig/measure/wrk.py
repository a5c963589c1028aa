"""wrk: HTTP requests/s and latency against a node's web server or load balancer.

    - wrk: {client: client, server: lb, path: /1k, connections: 50, duration: 5}

`server` is a node; the URL's address is the service's own address when the node runs one
that has it (pen's DSR VIP), else the node's address as for iperf3; the port is the node's
service port (80 without one). wrk keeps connections open (HTTP/1.1 keep-alive) and runs
`threads` event loops. The exact counters come from a Lua `done()` hook (parse_wrk):
`requests_per_s` counts successful (non-4xx/5xx) responses per second; `errors_*` the
socket errors and bad statuses; `latency_p50` … `latency_p999` in seconds. A balancer that
refuses, resets or times out fails the run (with wrk's message), never 0 requests/s.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from netrig.base.sample import MeasurementFailed, Sample
from netrig.lab.build import LabError
from netrig.measure import (
    AddressChoice,
    KeyPath,
    Measurement,
    MeasureOptions,
    Result,
    Text,
    node_problems,
    not_installed,
    register,
    tail,
    target_address,
)
from netrig.measure.parse_wrk import REPORT_LUA, parse_wrk
from netrig.model.models import NodeName, Percent, Seconds

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import LabPlan

SLACK = 10.0  # seconds of timeout beyond the test's own duration


class HttpOptions(MeasureOptions):
    """What wrk and ab share: who asks whom for what, for how long."""

    client: NodeName = Field(description="node that sends the requests")
    server: NodeName = Field(description="node that answers: a web server or a balancer")
    path: str = Field("/", pattern=r"^/\S*$", description="URL path, e.g. /1k")
    port: int | None = Field(
        None, ge=1, le=65535, description="default: the server node's service port, else 80"
    )
    duration: Seconds = Field(10.0, description="seconds of requests")
    max_errors: Percent = Field(
        1.0, description="a run with a larger share of failed requests fails (percent)"
    )
    family: Literal[4, 6] = Field(4, description="IPv4 or IPv6 addresses")
    address: AddressChoice = Field("auto", description="server address: loopback, link, auto")

    @model_validator(mode="after")
    def _two_nodes(self) -> HttpOptions:
        if self.client == self.server:
            raise ValueError(f"client and server are both {self.client!r}; pick two nodes")
        if self.duration < 1:
            raise ValueError("duration: at least 1 s")
        if self.duration != round(self.duration):  # 2.5 had run 2 s without a word
            raise ValueError(f"duration: whole seconds (wrk and ab count no fractions; "
                             f"{self.duration:g} s would run {round(self.duration)} s)")
        return self


def http_check(o: HttpOptions, plan: LabPlan) -> list[tuple[KeyPath, str]]:
    problems = node_problems(plan, [(("client",), o.client), (("server",), o.server)])
    if problems:
        return problems
    try:
        url(plan, o)
    except KeyError as exc:
        return [(("address",), str(exc.args[0]))]
    if o.family == 6 and any(s.address for s in plan.node(o.server).services):
        return [(("family",), f"{o.server} serves on an IPv4 VIP (pen dsr); use family 4")]
    return []


def url(plan: LabPlan, o: HttpOptions) -> str:
    """http://ADDRESS:PORT/PATH for the server node (its service's VIP if it has one)."""
    services = plan.node(o.server).services
    vip = next((s.address for s in services if s.address), None)
    if vip is not None and o.family == 4:
        host = vip
    else:
        host = target_address(plan, o.client, o.server, o.family, o.address)
    port = o.port or (services[0].port if services else 80)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{o.path}"


def run_client(lab: Lab, node: str, argv: list[str], timeout: float, tool: str, pkg: str) -> Any:
    """The tool in the client node, captured; a timeout or a missing tool is a failure."""
    try:
        return lab.exec(
            node,
            argv,
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            errors="replace",
        )
    except FileNotFoundError:
        raise not_installed(tool, pkg) from None
    except subprocess.TimeoutExpired as exc:
        raise MeasurementFailed(
            f"{tool} did not finish within {timeout:g} s", stderr=tail(exc.stderr)
        ) from None


def guarded(lab: Lab, server: str, measure: Callable[[], Result]) -> Result:
    """Run a measurement against the lab's services: a service that crashed in an earlier
    run is started again first (noted in the result as `restarted`); one that exits during
    this run fails it, with its log tail, whatever the client saw; and after a failed run
    the server node's services are started afresh, so an overload that wedged a balancer
    fails the run it happened in, not every later one."""
    services = lab.services
    if not services.planned(lab):
        return measure()
    if not lab.exists() or lab.ledger.lab(lab.name) is None:
        raise MeasurementFailed(f"lab {lab.name} no longer exists (removed from outside the run)")
    try:
        restarted = services.revive(lab)
    except LabError as exc:
        raise MeasurementFailed(f"a service could not be started again: {exc}") from None
    try:
        result = measure()
        died = services.exit_report(lab)
        if died:
            kept = [s for s in result if isinstance(s, Sample)]
            raise MeasurementFailed(f"{died.splitlines()[0]} during the run", kept, died)
    except MeasurementFailed as exc:
        died = services.exit_report(lab)
        if died and died.splitlines()[0] not in exc.reason:
            exc.reason = f"{exc.reason}; {died.splitlines()[0]}"
            exc.stderr = f"{died}\n{exc.stderr}"
        try:
            again = services.restart(lab, server)
        except LabError as err:
            exc.stderr += f"\nrestarting the services of {server} failed: {err}"
        else:
            if again:
                exc.stderr += f"\nstarted afresh after this failure: {', '.join(again)}"
        raise
    if restarted:
        note = f"started again before this run (exited earlier): {', '.join(restarted)}\n"
        result.append(Text("restarted", note))
    return result


class WrkOptions(HttpOptions):
    connections: int = Field(10, ge=1, le=100000, description="open connections (concurrency)")
    threads: int = Field(1, ge=1, le=256, description="wrk threads (event loops)")
    request_timeout: Seconds = Field(2.0, description="a response later than this is an error")

    @model_validator(mode="after")
    def _threads(self) -> WrkOptions:
        if self.threads > self.connections:
            raise ValueError("threads: at most one per connection (wrk refuses more)")
        return self


@register
class Wrk(Measurement[WrkOptions]):
    name = "wrk"
    summary = "HTTP requests/s, latency percentiles and errors (wrk, keep-alive)"
    Options = WrkOptions
    summary_metrics = ("requests_per_s", "latency_p99", "errors")

    programs: ClassVar[dict[str, str]] = {"wrk": "wrk"}

    def check(self, options: WrkOptions, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        return http_check(options, plan)

    def timeout(self, options: WrkOptions) -> float:
        return float(options.timeout or options.duration + options.request_timeout + SLACK)

    def length(self, options: WrkOptions) -> float:
        return float(max(1, round(options.duration)))

    def run(self, lab: Lab, options: WrkOptions, timeout: float) -> Result:
        o = options
        script = os.path.join(lab.node_dir(o.client), "wrk-report.lua")
        with open(script, "w") as fh:
            fh.write(REPORT_LUA)
        argv = [
            "wrk",
            f"--threads={o.threads}",
            f"--connections={o.connections}",
            f"--duration={max(1, round(o.duration))}s",
            f"--timeout={o.request_timeout:g}s",
            f"--script={script}",
            url(lab.plan, o),
        ]
        return guarded(lab, o.server, lambda: self._measure(lab, o, argv, timeout))

    def _measure(self, lab: Lab, o: WrkOptions, argv: list[str], timeout: float) -> Result:
        done = run_client(lab, o.client, argv, timeout, "wrk", "wrk")
        if done.returncode != 0:
            first = next((ln for ln in (done.stderr + done.stdout).splitlines() if ln), "")
            raise MeasurementFailed(
                f"wrk exited with {done.returncode}: {first.strip()}",
                stderr=tail(done.stderr + done.stdout),
            )
        try:
            return list(parse_wrk(done.stdout, done.stderr, o.max_errors / 100))
        except MeasurementFailed as exc:
            exc.stderr = tail(done.stderr + done.stdout)
            raise
