"""wrk's result as samples: the Lua `done()` hook prints one JSON line, parsed here.

wrk's own text report rounds (43.61k) and names no socket error it did not see; the hook
(`REPORT_LUA`, passed with `-s`) prints the exact counters. A run with no successful
response, or with more errors than allowed, is a failure, never 0 requests/s.

    samples = parse_wrk(stdout, stderr, max_errors=0.01)
"""

from __future__ import annotations

import json

from netrig.base.sample import MeasurementFailed, Sample

MARK = "NETRIG-WRK "
REPORT_LUA = """-- written by netrig: the exact counters of a wrk run, as one JSON line
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '%s{"duration_us":%d,"requests":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"mean_us":%.3f,"max_us":%d,"p50_us":%d,"p90_us":%d,' ..
    '"p99_us":%d,"p999_us":%d}\\n',
    "MARK", summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency.mean, latency.max, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency:percentile(99.9)))
end
""".replace('"MARK"', json.dumps(MARK))
ERROR_KINDS = ("connect", "read", "write", "timeout", "status")
ERROR_WORDS = {  # as a failure's reason says them: `19314 status` meant non-2xx/3xx replies
    "connect": "connect errors",
    "read": "read errors",
    "write": "write errors",
    "timeout": "timeouts",
    "status": "replies with an error status (4xx/5xx)",
}


def parse_wrk(stdout: str, stderr: str = "", max_errors: float = 0.01) -> list[Sample]:
    """Samples of one wrk run, or MeasurementFailed (with what samples there are)."""
    line = next((ln for ln in stdout.splitlines() if ln.startswith(MARK)), None)
    if line is None:
        first = _first_error(stdout, stderr)
        raise MeasurementFailed(f"wrk reported nothing{': ' + first if first else ''}")
    try:
        data = json.loads(line[len(MARK) :])
    except json.JSONDecodeError:
        raise MeasurementFailed(f"wrk's report is not JSON: {line[:200]!r}") from None
    seconds = data["duration_us"] / 1e6
    if seconds <= 0:
        raise MeasurementFailed("wrk ran for no time")
    ok = data["requests"] - data["status"]
    errors = sum(data[k] for k in ERROR_KINDS)
    samples = [
        Sample("requests", data["requests"], ""),
        Sample("errors", errors, ""),
        *(Sample(f"errors_{k}", data[k], "") for k in ERROR_KINDS),
    ]
    if ok > 0:  # rates only of a run that served something: a failure is never 0 req/s
        samples += [
            Sample("requests_per_s", ok / seconds, "req/s"),
            Sample("transfer", data["bytes"] / seconds, "B/s"),
            Sample("latency_mean", data["mean_us"] / 1e6, "s"),
            Sample("latency_max", data["max_us"] / 1e6, "s"),
            Sample("latency_p50", data["p50_us"] / 1e6, "s"),
            Sample("latency_p90", data["p90_us"] / 1e6, "s"),
            Sample("latency_p99", data["p99_us"] / 1e6, "s"),
            Sample("latency_p999", data["p999_us"] / 1e6, "s"),
        ]
    counts = ", ".join(f"{data[k]} {ERROR_WORDS[k]}" for k in ERROR_KINDS if data[k])
    if ok <= 0:
        first = _first_error(stdout, stderr)
        detail = f" ({counts})" if counts else ""
        raise MeasurementFailed(
            f"no successful response in {seconds:.3g} s{detail}{': ' + first if first else ''}",
            samples,
        )
    attempts = data["requests"] + data["connect"]
    if errors > max_errors * attempts:
        # wrk counts each failed socket read or write, so errors may outnumber requests
        # ("35152 errors in 221 requests" had read as a miscount)
        why = " (wrk counts each failed socket read or write)" if errors > attempts else ""
        raise MeasurementFailed(
            f"{errors} errors in {attempts} requests ({counts}){why}, more than "
            f"{max_errors:.2%} allowed (max_errors)",
            samples,
        )
    return samples


def _first_error(stdout: str, stderr: str) -> str:
    """wrk's complaint (`unable to connect to …`), from whichever stream has it."""
    for text in (stderr, stdout):
        for ln in text.splitlines():
            low = ln.lower()
            if any(w in low for w in ("unable", "error", "refused", "invalid", "usage")):
                return ln.strip()
    return ""
