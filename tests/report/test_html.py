"""netrig.report.html and `netrig report`: one self-contained file with the experiment, the
host, the tables, the failures, the plots and the comparisons; and it renders in a real
headless browser (Debian's chromium) to a screenshot that is not blank."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image
from shootout_data import HOST, NGINX_REASON

from netrig.report.html import render
from netrig.results.store import ResultStore
from netrig.stats.stored import load

INK = 0.02  # a rendered report has 4-8 % non-white pixels, a blank page none
CHROMIUM_HINT = (
    "Debian's chromium is not installed, so the report cannot be checked in a real browser: "
    "run `apt-get install -y chromium` (setup.sh installs it)"
)


@pytest.fixture
def report(shootout_db: Path) -> str:
    with ResultStore(shootout_db) as store:
        return render(load(store, "shootout"), generated=datetime(2024, 5, 2, tzinfo=UTC))


class Tags(HTMLParser):
    """Every start tag with its attributes; a parse that must not raise."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_report_is_self_contained(report: str) -> None:
    parser = Tags()
    parser.feed(report)
    names = {tag for tag, _ in parser.tags}
    assert not names & {"script", "link", "iframe", "object", "embed"}
    for tag, attrs in parser.tags:
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert value.startswith(("data:image/png;base64,", "#")) or not value, (tag, value)
    assert not re.search(r"url\(|@import|https?://", report)
    images = [attrs["src"] for tag, attrs in parser.tags if tag == "img"]
    assert len(images) >= 3
    for src in images:
        blob = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert blob[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_says_what_on_what_and_what_failed(report: str) -> None:
    # the experiment file, escaped: its <b> is text, not markup
    assert "&lt;b&gt;not bold&lt;/b&gt; &amp; escaped" in report and "<b>" not in report
    assert "concurrency: [1, 10, 100, 1000]" in report
    assert "6.1.0-18-amd64" in report and "Intel(R) Xeon(R) E5-2650" in report
    assert "iperf 3.12 (cJSON 1.7.15)" in report and "ping from iputils 20221126" in report
    assert NGINX_REASON in report
    assert "iperf3: error - unable to connect" in report  # stderr of a failed run
    # the summary table, scaled: pen at concurrency 1000 is about 9.3 Gbit/s
    assert '<th class="num">median (Gbit/s)</th>' in report
    row = re.search(r"<tr><td>1000</td><td>pen</td>(.*?)</tr>", report)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells[0] == "3" and 9.0 < float(cells[1]) < 9.6
    failed = re.search(r'<tr class="failed"><td>1000</td><td>nginx</td>(.*?)</tr>', report)
    assert failed is not None and "—" in failed.group(1)
    # comparisons of each balancer against the first, with ministat's block
    assert "each balancer against balancer=pen" in report
    assert "ministat: iperf3 throughput, concurrency=10" in report
    assert "not compared: concurrency=1000, balancer=nginx: its runs failed" in report
    # N in the columns' order: the point's, then the reference's (it had been reversed)
    nginx = re.search(r'<tr class="failed"><td>concurrency=1000, balancer=nginx</td>'
                      r'<td>concurrency=1000, balancer=pen</td><td class="num">([^<]*)</td>',
                      report)  # fmt: skip
    assert nginx is not None and nginx.group(1) == "0 / 3", nginx
    assert "Made by netrig" in report and "2024-05-02 00:00 UTC" in report


def test_report_of_a_single_point(shootout_db: Path) -> None:
    with ResultStore(shootout_db) as store:
        text = render(load(store, "single"))
    assert "One sweep point: nothing to compare it with." in text
    assert text.count("<img ") == 1  # a box plot of the four runs
    assert "None: every run succeeded." in text


def test_a_sweep_of_listed_points_is_shown_and_compared_point_by_point(tmp_path: Path) -> None:
    """seed000-shapes (`vary:` a list of three points, no grid): the report had fixed
    shape=chain, dropped the ring from its plot and compared nothing."""
    from netrig.base.sample import Sample

    points = [{"shape": "chain", "size": 2, "hops": 1}, {"shape": "ring", "size": 3, "hops": 1},
              {"shape": "chain", "size": 3, "hops": 2}]  # fmt: skip
    with ResultStore(tmp_path / "s.db") as store:
        text = "name: shapes\nvary:\n" + "".join(
            f"  - {{shape: {p['shape']}, size: {p['size']}, hops: {p['hops']}}}\n" for p in points
        )
        eid = store.begin_experiment("shapes", text, {})
        for rep in range(3):
            for k, point in enumerate(reversed(points)):  # stored in any order
                value = (6 + 2 * k + 0.1 * rep) * 1e9
                store.record_run(eid, point, rep, "ok",
                                 {"iperf3": [Sample("throughput", value, "bit/s")]})  # fmt: skip
        text = render(load(store, "shapes"))
    assert "Other parameters fixed" not in text
    assert "each sweep point against the first (shape=chain, size=2, hops=1)" in text
    for label in ("shape=ring, size=3, hops=1", "shape=chain, size=3, hops=2"):
        assert f"<td>{label}</td><td>shape=chain, size=2, hops=1</td>" in text, label
    assert "distribution per sweep point" in text


def _store_points(path: Path, name: str, columns: dict[str, dict[int, list[float]]]) -> None:
    """An experiment `name` with `vary: {k: …}`: per metric, the values of each k (one run
    per repetition, every metric of a run in one record)."""
    from netrig.base.sample import Sample

    ks = sorted({k for per_k in columns.values() for k in per_k})
    with ResultStore(path) as store:
        text = f"name: {name}\nvary:\n  k: [{', '.join(map(str, ks))}]\n"
        eid = store.begin_experiment(name, text, {}, {"command": "command"})
        reps = max(len(v) for per_k in columns.values() for v in per_k.values())
        for rep in range(reps):
            for k in ks:
                samples = [Sample(metric, per_k[k][rep], "") for metric, per_k in columns.items()]
                store.record_run(eid, {"k": k}, rep, "ok", {"command": samples})
        store.finish_experiment(eid, "ok")


def _comparison_row(text: str, metric: str) -> list[str]:
    start = text.index(f"<h3>{metric}</h3>", text.index('id="comparisons"'))
    row = re.search(r"<tr><td>k=3</td><td>k=1</td>(.*?)</tr>", text[start:])
    assert row is not None
    return re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))


def test_the_verdict_is_the_t_tests_when_the_interval_is_unbounded(tmp_path: Path) -> None:
    """A user's v = 1, 3, 2 against 7, 7, 4: Student's t in the row proves +200 % ± 160 %,
    but the reference mean is too close to 0 for Fieller's interval, and the verdict had
    said "no difference proven"."""
    _store_points(tmp_path / "v.db", "h2stat", {"v": {1: [1, 3, 2], 3: [7, 7, 4]}})
    with ResultStore(tmp_path / "v.db") as store:
        text = render(load(store, "h2stat"))
    cells = _comparison_row(text, "command v")
    assert cells[1] == "no bound: the reference is too noisy"
    assert cells[2] == "+200.00% ± 160.27%"
    assert cells[-2] == "increase proven, size unbounded", cells
    assert '<td class="up">increase proven, size unbounded</td>' in text


def test_constant_samples_show_no_spread_and_no_welch(tmp_path: Path) -> None:
    """`echo lat 0.{hops}5 ms`: each point constant. numpy's stddev of [0.35] * 3 is
    6.8e-14 (of [0.15] * 3 exactly 0): the report had shown that as the stddev, and an
    F test "Variances differ" so that Welch's column read "proven" for one point and "—"
    for the other against the same constant reference."""
    lat = {1: [0.15] * 3, 2: [0.25] * 3, 3: [0.35] * 3}
    _store_points(tmp_path / "c.db", "h2chain", {"lat": lat})
    with ResultStore(tmp_path / "c.db") as store:
        text = render(load(store, "h2chain"))
    start = text.index('id="results"')
    results = text[start : text.index("</section>", start)]
    for k in (1, 2, 3):
        row = re.search(rf"<tr><td>{k}</td>(.*?)</tr>", results)
        assert row is not None
        cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
        assert cells[4] == "0", (k, cells)
    for k in (2, 3):
        row = re.search(rf"<tr><td>k={k}</td><td>k=1</td>(.*?)</tr>", text)
        assert row is not None
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
        assert cells[3] == "—" and cells[-2] == "increase", (k, cells)


def _cluster_store(path: Path) -> None:
    """An experiment run with --cluster on hosts w1 and w2, as netrig run stores it."""
    from netrig.base.sample import Sample

    hosts = {
        name: {**HOST, "kernel": f"6.1.0-{n}-amd64", "features": {"veth": "present", "netem": "missing"}}
        for n, name in ((18, "w1"), (19, "w2"))
    }  # fmt: skip
    with ResultStore(path) as store:
        facts = {"cluster": "tcp://198.51.100.1:8786", "hosts": hosts}
        eid = store.begin_experiment("cl", "name: cl\nvary:\n  k: [1, 3]\n", facts)
        for rep in range(3):
            for k in (1, 3):
                host = "w1" if (rep + k) % 2 else "w2"
                samples = {"ping": [Sample("rtt_avg", 0.05 * k + 0.001 * rep, "ms")]}
                store.record_run(eid, {"k": k}, rep, "ok", samples, host=host,
                                 host_facts=hosts[host])  # fmt: skip
        store.record_run(eid, {"k": 3}, 3, "failed", {}, "lab did not come up", host="w2",
                         host_facts=hosts["w2"])  # fmt: skip
        store.finish_experiment(eid, "failed")


def test_a_cluster_reports_each_hosts_facts_and_which_host_ran_a_run(tmp_path: Path) -> None:
    """The facts of a --cluster run had been one JSON blob in one row, and the runs tables
    did not say which host ran each run."""
    _cluster_store(tmp_path / "cl.db")
    with ResultStore(tmp_path / "cl.db") as store:
        text = render(load(store, "cl"))
    on_what = text[text.index("<h2>On what</h2>") : text.index("</section>", text.index('id="host"'))]
    assert "<h3>Host w1</h3>" in on_what and "<h3>Host w2</h3>" in on_what
    assert "{&quot;" not in on_what and "<th>hosts</th>" not in on_what
    assert "<th>kernel</th><td>6.1.0-18-amd64</td>" in on_what
    assert "<th>kernel</th><td>6.1.0-19-amd64</td>" in on_what
    assert "<td>netem: missing, veth: present</td>" in on_what
    assert on_what.count(f"<td>{HOST['tool_versions']['iperf3']}</td>") == 2
    assert "<th>cluster</th><td>tcp://198.51.100.1:8786</td>" in on_what
    runs = text[text.index('id="runs"') :]
    assert "<th>point</th><th>host</th><th>repetition</th>" in runs
    assert re.search(r"<td>r\d+</td><td>k=1</td><td>w1</td><td class=\"num\">0</td>", runs)
    failures = text[text.index('id="failures"') : text.index('id="runs"')]
    assert re.search(r"<td>k=3</td><td>w2</td><td class=\"num\">3</td><td>failed</td>", failures)
    # runs on one host: no host column
    _store_points(tmp_path / "one.db", "one", {"v": {1: [1.0, 2.0], 3: [3.0, 4.0]}})
    with ResultStore(tmp_path / "one.db") as store:
        assert "<th>host</th>" not in render(load(store, "one"))


def test_report_writes_numbers_as_the_terminal_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """req/s has no larger unit: the report had written 1.729e+04 where the end-of-run
    table prints 17289."""
    from netrig.base.sample import Sample
    from netrig.cli.cmd_run import print_summary

    with ResultStore(tmp_path / "ab.db") as store:
        eid = store.begin_experiment("ab", "name: ab\nvary:\n  c: [5, 50]\n", {}, {"ab": "ab"})
        for rep, value in enumerate([17289.4, 17102.0, 17420.9]):
            for c in (5, 50):
                samples = [Sample("requests_per_s", value * c / 5, "req/s")]
                store.record_run(eid, {"c": c}, rep, "ok", {"ab": samples})
        text = render(load(store, "ab"))
        print_summary(store, eid, "ab")
    terminal = capsys.readouterr().out
    start = text.index('id="results"')
    results = text[start : text.index("</section>", start)]
    for number in ("17289", "17102", "17421", "172894"):  # medians, minima, maxima
        assert f">{number}<" in results and f" {number} " in terminal, number
    assert "e+0" not in results, results


def test_report_command(shootout_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    cmd = [sys.executable, "-m", "netrig", "report", "shootout", "-o", str(out)]
    done = subprocess.run([*cmd, "--db", str(shootout_db)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "netrig",
            "report",
            "nope",
            "-o",
            str(tmp_path / "x.html"),
            "--db",
            str(shootout_db),
        ],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "no experiment 'nope'" in missing.stderr
    assert not (tmp_path / "x.html").exists()


def screenshot(html: Path, png: Path, size: str = "1200,1600") -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(CHROMIUM_HINT, pytrace=False)
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                f"--window-size={size}",
                html.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=90,
        )
    assert done.returncode == 0 and png.exists(), done.stderr[-2000:]


def test_report_renders_in_headless_chromium(report: str, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    html.write_text(report, encoding="utf-8")
    png = tmp_path / "report.png"
    screenshot(html, png)
    pixels = image.imread(png)[:, :, :3]
    assert pixels.shape[:2] == (1600, 1200)
    ink = (pixels < 0.95).any(axis=2).mean()
    assert ink > INK, f"the screenshot is nearly blank ({ink:.1%} non-white pixels)"
    # the embedded plots rendered: matplotlib's first colour (#1f77b4) fills many pixels,
    # and the page accent (#2456a6) underlines the header
    blue = np.abs(pixels - np.array([0x1F, 0x77, 0xB4]) / 255).max(axis=2) < 0.08
    assert blue.sum() > 300, f"no plot colour in the screenshot ({blue.sum()} pixels)"


def test_blank_page_would_fail_the_check(tmp_path: Path) -> None:
    """The blank-screenshot check can fail: an empty page gives (almost) no ink."""
    html = tmp_path / "empty.html"
    html.write_text("<!DOCTYPE html><html><body></body></html>")
    png = tmp_path / "empty.png"
    screenshot(html, png, "400,300")
    pixels = image.imread(png)[:, :, :3]
    assert (pixels < 0.95).any(axis=2).mean() < INK / 10
