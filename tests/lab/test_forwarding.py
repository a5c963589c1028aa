"""IPv4 forwarding is switched on per interface in labs without daemons (no `ip_forward`
write: its /proc/sys lookup costs ~0.1 ms a namespace, more as namespaces accumulate), and
stays as the lab file says: off when its sysctls say so, by `ip_forward` where daemons run."""

from __future__ import annotations

import subprocess

from netrig.lab import build, check
from netrig.rig import Lab
from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import requires_root


def ns_sysctl(ns: str, key: str) -> str:
    path = "/proc/sys/" + key.replace(".", "/")
    return subprocess.run(
        ["ip", "netns", "exec", ns, "cat", path], capture_output=True, text=True, check=True
    ).stdout.strip()


def ping(lab: Lab, src: str, dst: str) -> bool:
    done = subprocess.run(
        ["ip", "netns", "exec", lab.plan.nodes[src].ns, "ping", "-c1", "-W1", lab.addr(dst, 4)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def plan_of(text: str):  # type: ignore[no-untyped-def]
    return plan_lab(load_text(f"name: fw\n{text}", "<test>"))


@requires_root
def test_every_lab_interface_forwards_ipv4_without_ip_forward(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 4}})
    assert lab.check_result is not None and lab.check_result.ok
    for node in lab.plan.nodes.values():
        for iface in node.ifaces:
            assert ns_sysctl(node.ns, f"net.ipv4.conf.{iface.name}.forwarding") == "1"
    assert ping(lab, "n1", "n4")  # across two transit nodes


@requires_root
def test_ipv4_forwarding_off_in_the_file_stays_off(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab(
        {"topology": {"kind": "chain", "nodes": 3}, "sysctls": {"net.ipv4.ip_forward": 0}},
        check=False,
    )
    n2 = lab.plan.nodes["n2"]
    for iface in n2.ifaces:
        assert ns_sysctl(n2.ns, f"net.ipv4.conf.{iface.name}.forwarding") == "0"
    assert ping(lab, "n1", "n2") and not ping(lab, "n1", "n3")
    result = check.verify(lab.plan, "auto", 0.5)
    assert ("n1", "n3", lab.addr("n3", 4)) in result.failed
    assert "n2 does not forward IPv4" in result.describe(limit=50)


@requires_root
def test_a_transit_interface_that_does_not_forward_fails_the_check(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}})
    n2 = lab.plan.nodes["n2"]
    toward_n1 = next(i.name for i in n2.ifaces if i.peer == "n1")
    subprocess.run(
        ["ip", "netns", "exec", n2.ns, "sysctl", "-qw",
         f"net.ipv4.conf.{toward_n1}.forwarding=0"],
        check=True,
    )  # fmt: skip
    assert not ping(lab, "n1", "n3")
    result = check.verify(lab.plan, "auto", 0.5)
    assert ("n1", "n3", lab.addr("n3", 4)) in result.failed


def test_which_sysctls_a_namespace_gets_written() -> None:
    static = dict(build.namespace_sysctls(plan_of("topology: {kind: ring, nodes: 3}\n")))
    assert "net.ipv4.ip_forward" not in static  # per interface instead
    assert static["net.ipv6.conf.all.forwarding"] == "1"  # IPv6 has no per-interface switch
    babel = dict(
        build.namespace_sysctls(
            plan_of("topology: {kind: ring, nodes: 3}\nrouting: {protocol: babel}\n")
        )
    )
    inherited = build._inherited(plan_of("topology: {kind: ring, nodes: 3}\n"))
    if inherited.get("net.ipv4.ip_forward") != "1":  # a daemon may make interfaces of its own
        assert babel["net.ipv4.ip_forward"] == "1"
    wanted = plan_of("topology: {kind: ring, nodes: 3}\n").sysctls
    for key, value in inherited.items():  # what a new namespace copies from the host
        assert key.startswith(("net.ipv4.", "net.ipv6.conf."))
        if key not in build.PER_INTERFACE:
            assert (key in static) == (str(wanted[key]) != value)
    forwarding_off = plan_of(
        "topology: {kind: chain, nodes: 2}\nsysctls: {net.ipv4.ip_forward: 0}\n"
    )
    assert build.ipv4_forwarding(forwarding_off) is False
    assert dict(build.namespace_sysctls(forwarding_off)).get("net.ipv4.ip_forward", "0") == "0"


@requires_root
def test_sysctl_writer_writes_each_namespace_through_a_procfs_no_mount_table_shows() -> None:
    """netns.SysctlWriter: each new namespace gets its own value, across renewals of its
    private procfs, the host's stays, and no proc mount appears anywhere."""
    import os
    import threading

    from netrig.lab import netns

    def proc_mounts() -> int:
        with open("/proc/self/mountinfo") as fh:
            return fh.read().count(" proc ")

    host_value = netns.read_sysctl("net.ipv6.conf.all.hop_limit")
    mounts_before = proc_mounts()
    seen: list[str] = []
    during: list[int] = []

    def work() -> None:
        writer = netns.SysctlWriter()
        writer.RENEW = 2  # renewed twice within five namespaces
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            for i in range(5):
                netns.unshare(netns.CLONE_NEWNET)
                writer.new_namespace()
                writer.write("net.ipv6.conf.all.hop_limit", 40 + i)
                during.append(proc_mounts())
                seen.append(netns.read_sysctl("net.ipv6.conf.all.hop_limit"))
            assert writer._root is not None  # the procfs, not the /proc/sys fallback
        finally:
            writer.close()
            netns.setns(own)
            os.close(own)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == ["40", "41", "42", "43", "44"]
    assert netns.read_sysctl("net.ipv6.conf.all.hop_limit") == host_value
    assert during == [mounts_before] * 5
