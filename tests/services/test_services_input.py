"""Bad `services:` input: one message at file:line:col, exit 2, nothing created."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from netrig.lab import netns
from netrig.plan.model import LabPlan
from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import netrig_cli, new_lab_name

GOOD = """name: {name}
nodes:
  - {{name: client}}
  - {{name: lb, services: [{{pen: {{backends: [web1, web2], dsr: true}}}}]}}
  - {{name: web1, services: [{{nginx: {{files: {{1k: 1024}}}}}}]}}
  - {{name: web2, services: [nginx]}}
  - {{name: sw, kind: switch}}
links: [{{a: client, b: sw}}, {{a: lb, b: sw}}, {{a: web1, b: sw}}, {{a: web2, b: sw}}]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


def validate(path: Path, **kwargs: object) -> tuple[int, str]:
    done = netrig_cli("validate", str(path), **kwargs)
    return done.returncode, done.stdout + done.stderr


def test_good_file_plans_services_and_a_vip() -> None:
    plan = plan_lab(load_text(GOOD.format(name="svc")))
    lb = plan.node("lb").services[0]
    assert (lb.kind, lb.port, lb.options["dsr"]) == ("pen", 80, True)
    assert lb.address is not None
    assert all(lb.address not in n.addresses(4) for n in plan.nodes.values())
    assert plan.node("web2").services[0].kind == "nginx"
    again = LabPlan.from_json(plan.to_json())  # what `netrig exec`/`down` read back
    assert again.node("lb").services == plan.node("lb").services


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("{pen: {backends", "{pem: {backends", 4, "unknown service 'pem' (did you mean 'pen'?)"),
        ("[web1, web2], dsr", "[web1, web9], dsr", 4, "backend 'web9' is not a node of the lab"),
        ("[web1, web2], dsr", "[web1, sw], dsr", 4, "backend 'sw' is a switch"),
        ("dsr: true", "dsr: true, colour: red", 4, "unknown key 'colour'"),
        ("{1k: 1024}", "{1k: lots}", 5, "'lots' is not a size"),
        ("files: {1k: 1024}", "files: {1k: 1}, backends: [web2]", 5, "exclude each other"),
        ("[nginx]", "[nginx, nginx]", 6, "runs nginx twice"),
        (
            "[nginx]",
            "[nginx, {haproxy: {backends: [web1]}}]",
            6,
            "haproxy: port 80 is also nginx's on node web2; one of them could not listen",
        ),
    ],
)
def test_bad_service_is_reported_at_its_line(
    tmp_path: Path, old: str, new: str, line: int, message: str
) -> None:
    text = GOOD.format(name="svc")
    assert old in text
    code, out = validate(write(tmp_path, text.replace(old, new, 1)))
    assert code == 2, out
    assert re.search(rf"lab\.yaml:{line}:\d+: .*{re.escape(message)}", out), out


def test_dsr_needs_backends_on_the_balancers_subnet(tmp_path: Path) -> None:
    text = GOOD.format(name="svc").replace("{a: web2, b: sw}", "{a: web2, b: web1}")
    code, out = validate(write(tmp_path, text))
    assert code == 2
    assert re.search(r"lab\.yaml:4:\d+: .*dsr: backend 'web2' shares no subnet with lb", out), out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to try `netrig up`")
def test_missing_program_names_the_package_and_creates_nothing(tmp_path: Path) -> None:
    name = new_lab_name("lb")
    path = write(tmp_path, GOOD.format(name=name))
    env = {**os.environ, "PATH": str(tmp_path)}  # no pen, no nginx
    done = netrig_cli("up", str(path), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "apt-get install -y pen" in done.stderr
    assert "apt-get install -y nginx" in done.stderr
    assert re.search(r"lab\.yaml:4:\d+: service pen needs pen", done.stderr)
    assert not [ns for ns in netns.list_names() if ns.startswith(name + "-")]


def test_wrk_to_a_dsr_vip_needs_ipv4(tmp_path: Path) -> None:
    text = GOOD.format(name="svc") + (
        "measure:\n  - wrk: {client: client, server: lb, family: 6}\n"
        "  - wrk: {client: client, server: lb, path: nope}\n"
    )
    done = netrig_cli("run", str(write(tmp_path, text)), "--dry-run")
    assert done.returncode == 2
    assert re.search(r"lab\.yaml:10:\d+: .*serves on an IPv4 VIP", done.stderr), done.stderr
    assert re.search(r"lab\.yaml:11:\d+: .*path", done.stderr), done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to try `netrig up`")
def test_two_services_on_one_port_are_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    """`up` built the lab and failed there, haproxy's "cannot bind socket (Address already
    in use)", exit 1; a `port:` of its own is fine."""
    name = new_lab_name("lb")
    both = "[{nginx: {files: {1k: 1024}}}, {haproxy: {backends: [web2], port: 80}}]"
    text = GOOD.format(name=name).replace("[{nginx: {files: {1k: 1024}}}]", both)
    done = netrig_cli("up", str(write(tmp_path, text)))
    assert done.returncode == 2, done.stdout + done.stderr
    found = re.findall(r"lab\.yaml:5:(\d+): (.*)", done.stderr)
    assert len(found) == 1, done.stderr  # one message, at the second service's port
    col, message = found[0]
    assert int(col) == text.splitlines()[4].index("port: 80") + len("port: ") + 1
    assert message == (
        "haproxy: port 80 is also nginx's on node web1; one of them could not listen "
        "there: set another `port:` on one"
    )
    assert not [ns for ns in netns.list_names() if ns.startswith(name + "-")]
    code, out = validate(write(tmp_path, text.replace("port: 80", "port: 8080")))
    assert code == 0, out


def test_backend_without_a_service_on_its_port_is_noted(tmp_path: Path) -> None:
    """A backend nothing of the file serves on (the client; a backend_port no web server
    uses) is noted at its place in `backends`: the node may run its own server (`cmd:`),
    so it is not refused; one with a `cmd:` is not noted. DSR's backends serve on the VIP's
    port (80), not backend_port."""
    code, out = validate(write(tmp_path, GOOD.format(name="svc")))
    assert code == 0 and "note:" not in out, out
    text = GOOD.format(name="svc").replace(
        "{pen: {backends: [web1, web2], dsr: true}}",
        "{haproxy: {backends: [web1, client, web2], backend_port: 8080}}",
    )
    text = text.replace(
        "{name: web2, services: [nginx]}", "{name: web2, services: [{nginx: {port: 8080}}]}"
    )
    code, out = validate(write(tmp_path, text))
    assert code == 0, out
    notes = re.findall(
        r"lab\.yaml:4:\d+: note: haproxy: backend (\w+) runs no service on port 8080", out
    )
    assert notes == ["web1", "client"], out
    served = text.replace("{name: client}", "{name: client, cmd: python3 -m http.server 8080}")
    code, out = validate(write(tmp_path, served))
    assert code == 0 and re.findall(r"note: .* backend (\w+)", out) == ["web1"], out


@pytest.mark.parametrize("tool", ["wrk", "ab"])
def test_a_duration_of_a_fraction_of_a_second_is_refused(tmp_path: Path, tool: str) -> None:
    """`duration: 2.5` had run 2 s, and the events check then spoke of 2 s."""
    text = GOOD.format(name="svc") + f"measure:\n  - {tool}: {{client: client, server: web1, duration: 2.5}}\n"
    code, said = validate(write(tmp_path, text), env={**os.environ, "NETRIG_PLAN_CACHE": "off"})
    assert code == 2 and re.search(r"lab\.yaml:10:\d+: duration: whole seconds .* would run 2 s", said), said
