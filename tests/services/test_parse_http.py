"""parse_wrk and parse_ab against real wrk 4.1 and ab 2.3 output recorded in data/ (through a
netrig lab: haproxy and pen in front of nginx, a 404 path, a port nothing listens on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure.parse_ab import parse_ab
from netrig.measure.parse_wrk import parse_wrk

DATA = Path(__file__).resolve().parent / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


def values(samples: list[Sample]) -> dict[str, float]:
    out = {s.metric: s.value for s in samples}
    assert len(out) == len(samples)  # one value per metric
    return out


def test_wrk_counts_and_rate() -> None:
    got = values(parse_wrk(read("wrk-ok.txt")))
    assert got["requests"] == 26296
    assert got["requests_per_s"] == pytest.approx(26296 / 1.007089)
    assert got["transfer"] == pytest.approx(33606288 / 1.007089)
    assert got["errors"] == 0
    assert got["latency_p50"] == pytest.approx(184e-6)
    assert got["latency_p50"] <= got["latency_p90"] <= got["latency_p99"] <= got["latency_max"]


def test_wrk_refused_is_a_failure_with_the_reason() -> None:
    with pytest.raises(MeasurementFailed) as exc:
        parse_wrk(read("wrk-refused.txt"))
    assert "Connection refused" in exc.value.reason


def test_wrk_all_bad_statuses_fail_and_keep_the_counters() -> None:
    with pytest.raises(MeasurementFailed) as exc:
        parse_wrk(read("wrk-404.txt"))
    got = values(list(exc.value.samples))
    assert got["errors_status"] == got["requests"] == 54379
    assert "requests_per_s" not in got and "transfer" not in got  # a failure is never 0 req/s
    assert "no successful response" in exc.value.reason
    # what the count is, in words (it read "(54379 status)")
    assert "(54379 replies with an error status (4xx/5xx))" in exc.value.reason


def test_wrk_error_share_threshold() -> None:
    line = read("wrk-ok.txt").replace('"read":0', '"read":300')
    assert values(parse_wrk(line, max_errors=0.02))["errors_read"] == 300  # 1.1 % < 2 %
    with pytest.raises(MeasurementFailed, match=r"more than 1\.00% allowed"):
        parse_wrk(line, max_errors=0.01)


def test_ab_counts_rate_and_percentiles() -> None:
    got = values(parse_ab(read("ab-ok.txt"), read("ab-ok.csv")))
    assert got["requests"] == 3000
    assert got["errors"] == 0
    taken = float(
        next(ln for ln in read("ab-ok.txt").splitlines() if "Time taken" in ln).split()[4]
    )
    assert got["requests_per_s"] == pytest.approx(3000 / taken)
    assert got["latency_p50"] <= got["latency_p99"] <= got["latency_max"]


def test_ab_non_2xx_is_not_success() -> None:
    with pytest.raises(MeasurementFailed, match="no successful response"):
        parse_ab(read("ab-404.txt"))


def test_ab_refused() -> None:
    with pytest.raises(MeasurementFailed, match="Connection refused"):
        parse_ab(read("ab-refused.txt"))


def test_ab_counts_a_reply_of_another_length_or_status_once() -> None:
    """Recorded without -l behind nginx: web1 /1k of 1024 bytes, web2 of 2048, web3 a 404.
    ab said `Failed requests: 400 (Length: 400)` and `Non-2xx responses: 200`: the 404s
    twice, web2's good replies as failed. Only the 200 non-2xx replies are errors."""
    text = read("ab-mixed-length.txt")
    assert "Length: 400" in text and "Non-2xx responses:      200" in text
    got = values(parse_ab(text, max_errors=0.5))
    assert got["requests"] == 600
    assert got["errors"] == got["errors_status"] == 200
    assert got["errors_failed"] == 0
    assert got["errors_length"] == 400  # kept, as ab counted them, but not as errors
    assert got["requests_per_s"] == pytest.approx(400 / 0.086)
    with pytest.raises(MeasurementFailed, match=r"200 of 600 requests failed \(200 non-2xx"):
        parse_ab(text, max_errors=0.01)


def test_wrk_read_errors_that_outnumber_requests_are_said_to_be_socket_calls() -> None:
    """"35152 errors in 221 requests" had read as a miscount."""
    line = read("wrk-ok.txt").replace('"read":0', '"read":35152').replace(
        '"requests":26296', '"requests":221'
    )
    with pytest.raises(MeasurementFailed) as exc:
        parse_wrk(line)
    assert exc.value.reason.startswith(
        "35152 errors in 221 requests (35152 read errors) (wrk counts each failed socket read "
        "or write), more than"
    ), exc.value.reason
