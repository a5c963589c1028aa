"""`routing: none`: the check pings every pair the lab connects without routing, hosts on
one switched segment included (it had pinged none of them and said "0 pairs reachable")."""

from __future__ import annotations

import textwrap
from pathlib import Path

from netrig.lab import check
from netrig.rig.prepare import load_text, plan_lab
from tests.conftest import netrig_cli, requires_root

SWITCHED = """\
    name: {name}
    nodes: [{{name: c1}}, {{name: c2}}, {{name: c3}}, {{name: c4}},
            {{name: sw1, kind: switch}}, {{name: sw2, kind: switch}}, {{name: sw3, kind: switch}}]
    links:
      - {{a: c1, b: sw1}}
      - {{a: c2, b: sw1}}
      - {{a: sw1, b: sw2}}
      - {{a: c3, b: sw2}}
      - {{a: c4, b: c1}}
      - {{a: c4, b: sw3}}
    routing: {{protocol: none}}
    addressing: {{mode: {mode}}}
    """


def pairs_of(text: str, mode: str = "auto") -> set[tuple[str, str]]:
    plan = plan_lab(load_text(textwrap.dedent(text)))
    return {(src, dst) for src, dst, _addr in check.check_pairs(plan, mode)}


def test_hosts_on_one_switched_segment_are_neighbours() -> None:
    for mode in ("p2p", "shared-subnet"):
        found = pairs_of(SWITCHED.format(name="nb", mode=mode))
        segment = {(a, b) for a in ("c1", "c2", "c3") for b in ("c1", "c2", "c3") if a != b}
        # c1–c2–c3 share sw1 and sw2; c1–c4 is a wire; c4 is alone on sw3
        assert found == segment | {("c1", "c4"), ("c4", "c1")}, (mode, found)


def test_a_large_segment_is_sampled_as_a_routed_lab_is() -> None:
    leaves = check.AUTO_ALL_PAIRS_MAX + 10
    text = (f"name: big\ntopology: {{kind: star, leaves: {leaves}}}\n"
            "nodes: [{name: n1, kind: switch}]\nrouting: {protocol: none}\n")  # fmt: skip
    sampled = pairs_of(text, "auto")
    assert {src for src, _ in sampled} == {f"n{i}" for i in range(2, leaves + 2)}
    per_source = {src: sum(1 for s, _ in sampled if s == src) for src, _ in sampled}
    assert max(per_source.values()) == check.SAMPLE_TARGETS
    assert len(pairs_of(text, "all")) == leaves * (leaves - 1)


@requires_root
def test_up_pings_the_hosts_of_a_switch_without_routing(tmp_path: Path, lab_name: str) -> None:
    path = tmp_path / "nb.yaml"
    path.write_text(textwrap.dedent(SWITCHED.format(name=lab_name, mode="shared-subnet")))
    up = netrig_cli("up", "-q", str(path))
    try:
        assert up.returncode == 0, up.stderr
        # 8 ordered pairs, IPv4 and IPv6 each
        assert "16 pairs reachable" in up.stdout, up.stdout
    finally:
        netrig_cli("down", lab_name)


@requires_root
def test_a_lab_that_promises_no_pair_does_not_read_as_nothing_reachable(
    tmp_path: Path, lab_name: str
) -> None:
    path = tmp_path / "none.yaml"
    path.write_text(f"name: {lab_name}\ntopology: {{kind: pair}}\nrouting: {{protocol: none}}\n"
                    "addressing: {auto: false}\n")  # fmt: skip
    up = netrig_cli("up", "-q", str(path))
    try:
        assert up.returncode == 0, up.stderr
        assert "0 pairs reachable" not in up.stdout
        assert "no pairs to check: the routing promises none" in up.stdout, up.stdout
    finally:
        netrig_cli("down", lab_name)
