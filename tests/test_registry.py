"""The plugin registries: every module of a package registers itself, names are looked up
with a suggestion for a typo."""

from __future__ import annotations

import pytest

from netrig import firewall, measure, routing, services


def test_each_package_finds_all_its_plugins_without_a_list() -> None:
    assert {"iperf3", "ping", "command", "convergence", "pps", "wrk", "ab"} <= set(
        measure.load_plugins()
    )
    assert {"static", "ecmp", "bridge", "none", "batman", "babel", "ospf", "bgp", "isis"} == set(
        routing.load_plugins()
    )
    assert {"iptables", "nftables", "xdp"} == set(firewall.load_plugins())
    assert {"nginx", "haproxy", "pen", "frr"} == set(services.load_plugins())


def test_an_unknown_name_gets_a_suggestion_and_the_known_names() -> None:
    with pytest.raises(
        KeyError, match=r"unknown measurement 'iperf' \(did you mean 'iperf3'\?\); known: ab, "
    ):
        measure.get("iperf")
    with pytest.raises(KeyError, match=r"unknown service 'ngnix' \(did you mean 'nginx'\?\)"):
        services.get("ngnix")


def test_a_name_imports_its_own_module_only() -> None:
    """Looking a plugin up by name loads its module, not its siblings (their models and the
    programs they import); an unknown name loads them all, to list them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from netrig import routing\n"
        "assert routing.registry.get('babel').name == 'babel'\n"
        "mods = {m for m in sys.modules if m.startswith('netrig.routing.')}\n"
        "assert mods == {'netrig.routing.babel', 'netrig.routing._daemon'}, mods\n"
        "assert routing.registry.get('no-such') is None\n"
        "assert 'netrig.routing.ospf' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("package", [routing, services, firewall, measure])
def test_every_plugin_lives_in_the_module_named_after_it(package: object) -> None:
    """What lets `get(name)` import one module: a plugin registered from a module of another
    name (two plugins in one file) would make every lookup of it import the whole package."""
    registry = package.registry  # type: ignore[attr-defined]
    plugins = registry.load()
    assert plugins
    misplaced = {
        name: cls.__module__
        for name, cls in plugins.items()
        if cls.__module__ != f"{registry.package}.{name}"
    }
    assert misplaced == {}
