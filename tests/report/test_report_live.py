"""End to end on a real experiment: `netrig run` in namespaces, then compare, stat, plot and
report on what it stored, and the report in headless chromium."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from matplotlib import image
from test_html import INK, screenshot

from tests.conftest import netrig_cli, requires_root, requires_tool

pytestmark = [requires_root, pytest.mark.root, requires_tool("iperf3")]


def test_run_then_compare_stat_plot_report(tmp_path: Path, lab_name: str) -> None:
    # TTL 1: nothing crosses a router, so every run at hops=2 fails for a real reason
    spec = tmp_path / "e2e.yaml"
    spec.write_text(
        textwrap.dedent(
            f"""\
            name: {lab_name}
            topology: {{kind: chain, nodes: 3}}
            link_defaults: {{rate: "{{rate}}"}}
            sysctls: {{net.ipv4.ip_default_ttl: 1}}
            check: {{reachability: none}}
            measure:
              - iperf3: {{client: n1, server: "n{{1 + hops}}", duration: 1}}
            vary:
              hops: [1, 2]
              rate: [100mbit, 300mbit]
            repeat: 3
            """
        )
    )
    db = str(tmp_path / "e2e.db")
    run = netrig_cli("run", str(spec), "--db", db, "-q", timeout=240)
    assert run.returncode == 1, run.stdout + run.stderr  # the hops=2 runs failed
    assert "6 of 12 runs failed" in run.stderr

    compare = netrig_cli(
        "compare",
        f"{lab_name}:hops=1,rate=100mbit",
        f"{lab_name}:hops=1,rate=300mbit",
        "--metric",
        "throughput",
        "--db",
        db,
        timeout=60,
    )
    assert compare.returncode == 0, compare.stderr
    assert "Difference at 95.0% confidence\n" in compare.stdout
    relative = compare.stdout.split("Relative difference: ")[1]
    assert 150 < float(relative.split("%")[0]) < 250  # 300 vs 100 mbit: about +200 %
    assert relative.split(": ")[1].startswith("a real increase")

    stat = netrig_cli(
        "stat",
        "--experiment",
        f"{lab_name}:hops=1",
        "--by",
        "rate",
        "--metric",
        "throughput",
        "--db",
        db,
        timeout=60,
    )
    assert stat.returncode == 0, stat.stderr
    assert "x rate=100mbit\n+ rate=300mbit\n" in stat.stdout

    failed = netrig_cli("compare", f"{lab_name}:hops=1", f"{lab_name}:hops=2", "--db", db)
    assert failed.returncode == 1 and "+ 6 failed run(s), not counted:" in failed.stdout

    png = tmp_path / "hops.png"
    plot = netrig_cli(
        "plot", lab_name, "--x", "hops", "--group", "rate", "-o", str(png), "--db", db
    )
    assert plot.returncode == 0, plot.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    html = tmp_path / "report.html"
    report = netrig_cli("report", lab_name, "-o", str(html), "--db", db, timeout=120)
    assert report.returncode == 0, report.stderr
    text = html.read_text()
    assert "iperf3" in text and "net.ipv4.ip_default_ttl: 1" in text
    assert text.count('<tr class="failed">') >= 6
    shot = tmp_path / "report.png"
    screenshot(html, shot)
    assert (image.imread(shot)[:, :, :3] < 0.95).any(axis=2).mean() > INK
