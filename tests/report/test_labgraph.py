"""`netrig graph`: every node and interface named, roles drawn apart, as any user."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from netrig.plan.lab import build_plan
from netrig.report import labgraph
from netrig.rig.prepare import load_file
from tests.conftest import netrig_cli, new_lab_name, requires_root

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz is not installed")


def plan_of(name: str):  # type: ignore[no-untyped-def]
    return build_plan(load_file(str(EXAMPLES / name)))


@needs_dot
@pytest.mark.parametrize("name", ["clab-frr/frr.clab.yml", "ring16.yaml", "clab-bridge.clab.yml"])
def test_svg_names_every_node_and_interface(name: str) -> None:
    plan = plan_of(name)
    svg = labgraph.render(plan, "svg").decode()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    for node in plan.nodes.values():
        assert f">{node.name}</text>" in svg
        for iface in node.ifaces:
            assert f">{iface.name}</text>" in svg
            for cidr in iface.addrs[:2]:
                assert f">{cidr}</text>" in svg


def test_roles_and_link_labels() -> None:
    plan = plan_of("clab-frr/frr.clab.yml")
    roles = {n.name: labgraph.role(plan, n) for n in plan.nodes.values()}
    assert roles == {"r1": "router", "r2": "router", "h1": "host", "h2": "host"}
    bridge = plan_of("clab-bridge.clab.yml")
    assert labgraph.role(bridge, bridge.nodes["sw"]) == "switch"
    source = labgraph.render(bridge, "dot").decode()
    assert 'h3 -- sw [label="mtu 9000"' in source and "198.51.100.3/24" in source
    assert source.count("shape=box style=filled") == 1  # the one switch


def test_nodes_on_several_machines_are_framed_per_machine() -> None:
    plan = plan_of("ring16.yaml")
    for node in plan.nodes.values():
        node.host = "a" if node.index <= 8 else "b"  # type: ignore[attr-defined]
    source = labgraph.lab_graph(plan).source
    assert "subgraph cluster_a" in source and "subgraph cluster_b" in source
    frame_a = source.split("subgraph cluster_a", 1)[1].split("}", 1)[0]
    assert "n1 [" in frame_a and "n9 [" not in frame_a


@needs_dot
def test_cli_writes_png_and_dot(tmp_path: Path) -> None:
    lab_file = str(EXAMPLES / "clab-bridge.clab.yml")
    out_png, out_dot = tmp_path / "lab.png", tmp_path / "lab.dot"
    png = netrig_cli("graph", lab_file, "-o", str(out_png))
    assert png.returncode == 0, png.stderr
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dot = netrig_cli("graph", lab_file, "-o", str(out_dot))
    assert dot.returncode == 0 and "h1 -- sw" in out_dot.read_text()
    bad = netrig_cli("graph", lab_file, "-o", str(tmp_path / "lab.jpg"))
    assert bad.returncode == 2 and ".svg, .png or .dot" in bad.stderr


@needs_dot
@pytest.mark.skipif(os.geteuid() != 0, reason="root drops to nobody to show none is needed")
def test_planning_and_drawing_need_no_root() -> None:
    """A forked child that became `nobody` reads a containerlab file and draws it."""
    tmp_path = Path(tempfile.mkdtemp(prefix="netrig-graph-"))  # pytest's are root's only
    try:
        _draw_as_nobody(tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _draw_as_nobody(tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    lab_file = tmp_path / "lab.clab.yml"
    shutil.copy(EXAMPLES / "clab-bridge.clab.yml", lab_file)
    lab_file.chmod(0o644)
    out = tmp_path / "lab.svg"
    labgraph.render(build_plan(load_file(str(lab_file))), "svg")  # imports done here: the
    pid = os.fork()  # interpreter's own files may be out of nobody's reach (pyenv in /root)
    if pid == 0:  # the child: no root from here on
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            out.write_bytes(labgraph.render(build_plan(load_file(str(lab_file))), "svg"))
            code = 0
        except BaseException as exc:
            (tmp_path / "error").write_text(repr(exc))
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    error = tmp_path / "error"
    assert os.waitstatus_to_exitcode(status) == 0, error.read_text() if error.exists() else ""
    assert out.stat().st_uid == 65534 and ">sw</text>" in out.read_text()


@requires_root
def test_graph_of_a_running_lab_by_name() -> None:
    name = new_lab_name("gr")
    try:
        up = netrig_cli("up", str(EXAMPLES / "ring16.yaml"), "--name", name, "-q")
        assert up.returncode == 0, up.stderr
        dot = netrig_cli("graph", name)
        assert dot.returncode == 0 and f"graph {name} {{" in dot.stdout
        assert all(f"n{i} [" in dot.stdout for i in range(1, 17))
    finally:
        netrig_cli("down", name)
    missing = netrig_cli("graph", name)
    assert missing.returncode == 2 and "no lab named" in missing.stderr


@needs_dot
def test_the_reports_picture_from_the_stored_file_text() -> None:
    text = (EXAMPLES / "seed000-static.yaml").read_text()
    svg, why = labgraph.experiment_svg(text)
    assert svg is not None and why == ""
    assert svg.startswith("<svg") and ">n16</text>" in svg
    assert "http" not in svg  # the report stays free of URLs
    relative = "lab: elsewhere.clab.yml\nmeasure:\n  - ping: {src: a, dst: b}\n"
    svg, why = labgraph.experiment_svg(relative)
    assert svg is None and "could not be planned again" in why


def test_a_ring_is_drawn_as_a_circle_and_other_shapes_in_tiers() -> None:
    """dot ranks a cycle: a ring of 16 came out as one tall column with an edge back."""
    from netrig.rig.prepare import load_text

    def engine(text: str) -> str:
        return labgraph.layout_engine(build_plan(load_text(text)))

    assert labgraph.lab_graph(plan_of("ring16.yaml")).engine == "circo"
    assert engine("name: c\ntopology: {kind: chain, nodes: 5}\n") == "dot"
    assert engine("name: g\ntopology: {kind: grid, rows: 3, cols: 3}\n") == "dot"
    two_rings = "".join(f"  - {{a: {a}, b: {b}}}\n" for a, b in ["ab", "bc", "ca", "de", "ef", "fd"])
    nodes = "".join(f"  - {{name: {n}}}\n" for n in "abcdef")
    assert engine(f"name: t\nnodes:\n{nodes}links:\n{two_rings}") == "dot"


@needs_dot
def test_the_reports_picture_is_of_the_lab_that_ran_with_its_set_values() -> None:
    """The store keeps the file and the run's `--set` as a trailing comment; the picture
    had been planned from the file alone (200 Mbit/s links where 50mbit ran)."""
    from netrig.model.experiment import load_experiment_model_text
    from netrig.model.overrides import stored_overrides

    text = (
        "name: e\ntopology: {kind: chain, nodes: 3}\n"
        "link_defaults: {rate: '{rate}'}\n"
        "measure:\n  - ping: {src: n1, dst: n3}\n"
        "vary: {rate: [200mbit, 100mbit]}\n"
    )
    stored = load_experiment_model_text(text, "e.yaml", {"rate": "[50mbit]"}, 2).text
    assert stored_overrides(stored) == (text, {"rate": "[50mbit]"}, 2)
    assert stored_overrides(text) == (text, {}, None)
    svg, which = labgraph.experiment_svg(stored)
    assert svg is not None and ">50 Mbit/s</text>" in svg and "200 Mbit/s" not in svg
    assert which == ""  # one point: nothing to say
    svg, which = labgraph.experiment_svg(text)  # as the file says: two labs, the first drawn
    assert svg is not None and ">200 Mbit/s</text>" in svg
    assert which == "the lab of the first sweep point (rate=200mbit)"


@needs_dot
def test_a_links_label_keeps_clear_of_its_ends_labels() -> None:
    """On a link of one rank the middle label ran into the far end's ("200 Mbit/sth0")."""
    import re

    from netrig.rig.prepare import load_text

    plan = build_plan(load_text("name: r\ntopology: {kind: chain, nodes: 3}\n"
                                "link_defaults: {rate: 200mbit}\n"))  # fmt: skip
    svg = labgraph.render(plan, "svg").decode()
    texts = [(float(x), float(y), t) for x, y, t in
             re.findall(r'<text[^>]*x="([\d.-]+)" y="([\d.-]+)"[^>]*>([^<]*)</text>', svg)]  # fmt: skip
    rates = [(x, y) for x, y, t in texts if t == "200 Mbit/s"]
    ends = [(x, y) for x, y, t in texts if t in ("eth0", "eth1")]
    assert len(rates) == 2 and len(ends) == 4
    for rx, ry in rates:  # 9-point text: apart by more than a line, or side by side
        assert all(abs(ry - ey) > 10 or abs(rx - ex) > 60 for ex, ey in ends), (rates, ends)


def test_labels_say_what_differs_and_bridging_nodes_are_switches() -> None:
    """Every link had been labelled "mtu 1500" when link_defaults wrote it; aliases hid a
    link end's IPv6 address behind "…"; `routing: bridge` nodes were drawn as routers."""
    from netrig.rig.prepare import load_text

    plan = build_plan(load_text(
        "name: g\ntopology: {kind: chain, nodes: 3}\nlink_defaults: {mtu: 1500}\n"
        "links:\n  - {a: n1, b: n2, aliases: 2, mtu: 9000}\n"))  # fmt: skip
    source = labgraph.render(plan, "dot").decode()
    assert "mtu 1500" not in source and "mtu 9000" in source
    n1 = plan.nodes["n1"].iface("eth0").addrs
    assert f"{n1[0]}\n{next(a for a in n1 if ':' in a)}\n…" in source
    bridged = build_plan(load_text("name: b\ntopology: {kind: ring, nodes: 4}\n"
                                   "routing: {protocol: bridge}\n"))  # fmt: skip
    assert {labgraph.role(bridged, n) for n in bridged.nodes.values()} == {"switch"}
