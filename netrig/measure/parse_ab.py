"""ApacheBench's report as samples: the summary lines, and the percentiles of `-e FILE`.

ab's "Requests per second" counts every completed request, failed ones too; netrig's
`requests_per_s` counts only the successful ones over the time taken. A run with none, or
with more failures than allowed, is a failure, never a zero.

What ab's counters mean (ab.c), and so how each reply is counted once:
- `Complete requests`: replies read to the end, whatever their status or length;
- `Non-2xx responses`: complete replies with another status (`errors_status`);
- `Failed requests` adds up four kinds: Connect (a connection that failed, retried, not
  complete), Exceptions (a socket error while waiting, retried, not complete), Receive (a
  read error, with `-r`: complete) and Length (a complete reply whose length differs from
  the *first* reply's). Length says nothing about a reply being bad: behind a balancer
  whose backends serve different sizes, or when the first reply was a 404, it counts good
  replies, and it counts every non-2xx reply a second time. netrig runs ab with `-l` (no
  Length check); output that has Length anyway is stored as `errors_length`, not an error.
So `errors_failed` = Connect + Receive + Exceptions, `errors` = that + non-2xx, and the
successful replies are complete − non-2xx − Receive.

    samples = parse_ab(stdout, csv_text, stderr, max_errors=0.01)
"""

from __future__ import annotations

import re

from netrig.base.sample import MeasurementFailed, Sample

_FIELDS = {
    "complete": r"^Complete requests:\s+(\d+)",
    "failed": r"^Failed requests:\s+(\d+)",
    "connect": r"^\s+\(Connect: (\d+)",
    "receive": r"^\s+\(Connect: \d+, Receive: (\d+)",
    "length": r"^\s+\(Connect: \d+, Receive: \d+, Length: (\d+)",
    "exceptions": r"^\s+\(Connect: .*Exceptions: (\d+)\)",
    "non2xx": r"^Non-2xx responses:\s+(\d+)",
    "seconds": r"^Time taken for tests:\s+([\d.]+) seconds",
    "kbytes_per_s": r"^Transfer rate:\s+([\d.]+) \[Kbytes/sec\]",
}
PERCENTILES = {50: "latency_p50", 90: "latency_p90", 99: "latency_p99", 100: "latency_max"}


def parse_ab(
    stdout: str, csv_text: str = "", stderr: str = "", max_errors: float = 0.01
) -> list[Sample]:
    """Samples of one ab run, or MeasurementFailed (with what samples there are)."""
    found: dict[str, float] = {}
    for key, pattern in _FIELDS.items():
        m = re.search(pattern, stdout, re.MULTILINE)
        if m:
            found[key] = float(m.group(1))
    if "complete" not in found or "seconds" not in found:
        first = next(
            (ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if is_error(ln)), ""
        )
        raise MeasurementFailed(f"ab reported nothing{': ' + first if first else ''}")
    complete, seconds = found["complete"], found["seconds"]
    non2xx = found.get("non2xx", 0.0)
    connect, receive = found.get("connect", 0.0), found.get("receive", 0.0)
    length, exceptions = found.get("length", 0.0), found.get("exceptions", 0.0)
    if "connect" not in found:  # no breakdown: whatever failed, as one kind
        receive = found.get("failed", 0.0)
    failed = connect + receive + exceptions
    ok = max(complete - non2xx - receive, 0.0)
    errors = failed + non2xx
    attempts = complete + connect + exceptions  # failed connections were tried again
    samples = [
        Sample("requests_per_s", ok / seconds if seconds > 0 else 0.0, "req/s"),
        Sample("requests", complete, ""),
        Sample("errors", errors, ""),
        Sample("errors_failed", failed, ""),
        Sample("errors_status", non2xx, ""),
        *([Sample("errors_length", length, "")] if length else []),
    ]
    if "kbytes_per_s" in found:
        samples.append(Sample("transfer", found["kbytes_per_s"] * 1024, "B/s"))
    samples += _percentiles(csv_text)
    if ok <= 0 or seconds <= 0:  # the counters stay with the failure; a rate of 0 never
        samples = [s for s in samples if s.metric not in ("requests_per_s", "transfer")]
        raise MeasurementFailed(
            f"no successful response ({int(complete)} complete, {int(errors)} failed)", samples
        )
    if errors > max_errors * attempts:
        kinds = (
            (non2xx, "non-2xx replies"),
            (receive, "receive errors"),
            (connect, "connect errors"),
            (exceptions, "socket exceptions"),
        )
        counts = ", ".join(f"{int(n)} {what}" for n, what in kinds if n)
        raise MeasurementFailed(
            f"{int(errors)} of {int(attempts)} requests failed ({counts}), more than "
            f"{max_errors:.2%} allowed (max_errors)",
            samples,
        )
    return samples


def _percentiles(csv_text: str) -> list[Sample]:
    """`-e` CSV: `percent,milliseconds` lines → latency samples in seconds."""
    out = []
    for line in csv_text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) in PERCENTILES:
            try:
                out.append(Sample(PERCENTILES[int(parts[0])], float(parts[1]) / 1000, "s"))
            except ValueError:
                continue
    return out


def is_error(line: str) -> bool:
    low = line.lower()
    return any(w in low for w in ("apr_", "error", "refused", "unreachable", "aborted", "invalid"))
