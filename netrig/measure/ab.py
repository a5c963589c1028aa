"""ab: ApacheBench requests/s, as seed 004 ran it (`ab -c 20 -n 10000 URL`).

    - ab: {client: client, server: lb, path: /1k, concurrency: 20, duration: 5}

One new TCP connection per request unless `keepalive: true` (-k), so it also measures how
fast a balancer accepts connections. Stops after `duration` seconds (-t) or `requests`
requests (-n), whichever comes first. ab aborts on a receive error (unless `keep_going`),
which netrig stores as a failed run with ab's message. Samples as wrk's (see wrk.py);
latency percentiles come from ab's `-e` file. `-l`: a reply is not failed for a length
other than the first reply's (backends may serve different sizes; a 404 is counted once,
as non-2xx: parse_ab).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from netrig.base.sample import MeasurementFailed
from netrig.measure import KeyPath, Measurement, Result, register, tail
from netrig.measure.parse_ab import is_error, parse_ab
from netrig.measure.wrk import SLACK, HttpOptions, guarded, http_check, run_client, url
from netrig.model.models import Seconds

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import LabPlan

MAX_REQUESTS = 50_000_000  # -n when only a duration is given


class AbOptions(HttpOptions):
    concurrency: int = Field(10, ge=1, le=20000, description="requests at a time (-c)")
    requests: int | None = Field(None, ge=1, le=MAX_REQUESTS, description="stop after N (-n)")
    keepalive: bool = Field(False, description="HTTP keep-alive (-k)")
    keep_going: bool = Field(False, description="do not abort on receive errors (-r)")
    request_timeout: Seconds = Field(30.0, description="a response later than this fails (-s)")


@register
class Ab(Measurement[AbOptions]):
    name = "ab"
    summary = "HTTP requests/s and latency percentiles (ApacheBench), a connection per request"
    Options = AbOptions
    summary_metrics = ("requests_per_s", "latency_p99", "errors")

    programs: ClassVar[dict[str, str]] = {"ab": "apache2-utils"}

    def check(self, options: AbOptions, plan: LabPlan) -> list[tuple[KeyPath, str]]:
        return http_check(options, plan)

    def timeout(self, options: AbOptions) -> float:
        return float(options.timeout or options.duration + options.request_timeout + SLACK)

    def length(self, options: AbOptions) -> float | None:
        if options.requests is not None:  # it may stop sooner, after that many
            return None
        return float(max(1, round(options.duration)))

    def run(self, lab: Lab, options: AbOptions, timeout: float) -> Result:
        o = options
        csv_path = os.path.join(lab.node_dir(o.client), "ab-percentiles.csv")
        if os.path.exists(csv_path):
            os.unlink(csv_path)
        argv = [
            "ab",
            "-q",
            "-l",
            "-c",
            str(o.concurrency),
            "-t",
            f"{max(1, round(o.duration))}",
            "-n",
            str(o.requests or MAX_REQUESTS),
            "-s",
            f"{max(1, round(o.request_timeout))}",
            "-e",
            csv_path,
            *(["-k"] if o.keepalive else []),
            *(["-r"] if o.keep_going else []),
            url(lab.plan, o),
        ]
        return guarded(lab, o.server, lambda: self._measure(lab, o, argv, csv_path, timeout))

    def _measure(
        self, lab: Lab, o: AbOptions, argv: list[str], csv_path: str, timeout: float
    ) -> Result:
        done = run_client(lab, o.client, argv, timeout, "ab", "apache2-utils")
        output = tail(done.stderr + done.stdout)
        if done.returncode != 0:
            lines = [ln.strip() for ln in (done.stderr + "\n" + done.stdout).splitlines()]
            why = next((ln for ln in lines if is_error(ln)), "") or next(
                (ln for ln in reversed(lines) if ln), ""
            )
            raise MeasurementFailed(f"ab exited with {done.returncode}: {why}", stderr=output)
        try:
            with open(csv_path) as fh:
                csv_text = fh.read()
        except OSError:
            csv_text = ""
        try:
            return list(parse_ab(done.stdout, csv_text, done.stderr, o.max_errors / 100))
        except MeasurementFailed as exc:
            exc.stderr = output
            raise
