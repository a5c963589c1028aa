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
