"""What an experiment file needs from the host, worked out from its plan (no root)."""

from __future__ import annotations


def test_an_experiment_s_programs_include_its_labs_own() -> None:
    """`run --dry-run` of seed 002 said "tools: clang", and its results kept clang's version
    only, not the iptables' and nft's that produced the numbers."""
    from netrig.rig.prepare import experiment_programs, load_experiment

    programs = experiment_programs(load_experiment("examples/seed002-firewall-latency.yaml"))
    assert {"clang", "nft", "iptables-legacy-restore"} <= set(programs), programs
    assert programs["nft"] == "nftables"
    bgp = experiment_programs(load_experiment("examples/seed003-multipath-pps.yaml",
                                              {"routing": "bgp"}))  # fmt: skip
    assert "vtysh" in bgp


def test_a_lab_given_as_a_dict_is_told_where_by_its_keys() -> None:
    """Errors in a dict given to the Python API named `<dict>:4:10`, a line of a YAML text
    the user never saw; they now name the keys."""
    import pytest

    from netrig.model.problems import SpecError
    from netrig.rig.prepare import from_spec

    cases = [
        ({"name": "d", "topology": {"kind": "ring", "nodes": 4}, "routing": {"protocol": "x"}},
         "<dict> at routing.protocol: unknown routing protocol 'x'"),
        ({"name": "d", "nodes": [{"name": "a"}, {"name": "b"}], "links": [{"a": "a", "b": "c"}]},
         "<dict> at links[0].b: link to unknown node 'c'"),
        ({"nodes": [{"name": "a"}]}, "<dict>: missing key 'name'"),
    ]  # fmt: skip
    for spec, said in cases:
        with pytest.raises(SpecError) as caught:
            from_spec(spec)
        assert str(caught.value).startswith(said), (spec, str(caught.value))
