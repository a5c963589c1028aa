"""Experiment files: keys, parameters, sweep points, and errors that point at file:line:col."""

from __future__ import annotations

import glob
import os
import textwrap
from pathlib import Path

import pytest

from netrig.model.experiment import MAX_POINTS
from netrig.model.load import SpecError
from netrig.rig.prepare import load_experiment, load_experiment_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PAIR = """\
name: pair-iperf3
topology: {kind: pair}
measure:
  - iperf3: {client: n1, server: n2, duration: 3}
repeat: 3
"""

# DESIGN.md's sketches, BATMAN swapped for static routing until the routing issue lands.
DESIGN_RING = """\
name: batman-ring16
topology: {kind: ring, nodes: 16}
routing: {protocol: static}
measure:
  - iperf3: {client: n1, server: "n{1 + hops}", duration: 10, parallel: 1}
vary:
  hops: [1, 5, 8]
repeat: 5
"""

DESIGN_ALIASES = """\
name: ip-aliases                     # seed 001, throughput vs number of IP aliases
topology: {kind: pair}
vary:
  aliases: [1, 2, 4, 8, 16, 32, 64, 128, 254]
links:
  - {a: n1, b: n2, aliases: "{aliases}"}
measure:
  - iperf3: {client: n1, server: n2, per_alias: true, duration: 10}
"""


def problems(text: str, **kwargs: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_experiment_text(textwrap.dedent(text), "exp.yaml", **kwargs)  # type: ignore[arg-type]
    return [str(p) for p in info.value.problems]


def test_the_issue_example_loads_as_written() -> None:
    exp = load_experiment_text(PAIR, "pair.yaml")
    assert exp.name == "pair-iperf3" and exp.repeat == 3 and len(exp.points) == 1
    (step,) = exp.points[0].steps
    assert (step.name, step.options.client, step.options.server, step.options.duration) == (
        "iperf3",
        "n1",
        "n2",
        3,
    )
    assert exp.tools() == {"iperf3": "iperf3"}
    assert exp.text == PAIR


def test_design_sketch_ring_expands_the_server_per_point() -> None:
    exp = load_experiment_text(DESIGN_RING, "ring.yaml")
    assert [p.values for p in exp.points] == [{"hops": 1}, {"hops": 5}, {"hops": 8}]
    assert [p.steps[0].options.server for p in exp.points] == ["n2", "n6", "n9"]
    # the network is the same for every point: one lab serves them all
    assert len({p.network for p in exp.points}) == 1


def test_design_sketch_aliases_changes_the_network_per_point() -> None:
    exp = load_experiment_text(DESIGN_ALIASES, "aliases.yaml")
    assert len(exp.points) == 9 and len({p.network for p in exp.points}) == 9
    last = exp.points[-1].plan
    assert last.links[0].aliases == 254
    assert len([a for a in last.nodes["n2"].ifaces[0].addrs if ":" not in a]) == 255


def test_params_and_overrides_change_values_and_the_stored_text() -> None:
    text = (
        DESIGN_RING.replace("duration: 10", 'duration: "{duration}"') + "params: {duration: 10}\n"
    )
    exp = load_experiment_text(text, "ring.yaml", {"duration": "1", "hops": "[1, 8]"}, repeat=2)
    assert [p.values for p in exp.points] == [{"hops": 1}, {"hops": 8}]
    assert exp.points[0].steps[0].options.duration == 1 and exp.repeat == 2
    assert exp.text.startswith(text) and "--set duration=1" in exp.text and "--repeat 2" in exp.text
    plain = load_experiment_text(text, "ring.yaml")
    assert plain.text == text and plain.points[0].steps[0].options.duration == 10
    assert problems(text, overrides={"durration": "1"}) == [
        "--set: no parameter 'durration' in exp.yaml; parameters: duration, hops"
    ]


def test_parameters_reach_the_lab_part_topology_and_links() -> None:
    exp = load_experiment_text(
        textwrap.dedent("""\
        name: sizes
        topology: {kind: "{shape}", nodes: "{n}"}
        link_defaults: {mtu: "{1000 + n * 100}"}
        measure:
          - ping: {src: n1, dst: "n{n}"}
        vary:
          - {shape: chain, n: 3}
          - {shape: ring, n: 4}
        """),
        "sizes.yaml",
    )
    kinds = [(len(p.plan.nodes), len(p.plan.links), p.plan.links[0].mtu) for p in exp.points]
    assert kinds == [(3, 2, 1300), (4, 4, 1400)]
    assert exp.points[1].steps[0].options.dst == "n4"


def test_a_server_that_does_not_exist_is_an_error_with_file_line_col() -> None:
    found = problems("""\
        name: nosuch
        topology: {kind: chain, nodes: 3}
        measure:
          - iperf3: {client: n1, server: n7, duration: 1}
        """)
    assert found == ["exp.yaml:4:34: iperf3: unknown node 'n7'; the lab has n1, n2, n3"]


def test_an_error_of_some_sweep_points_names_them() -> None:
    found = problems("""\
        name: sweep
        topology: {kind: ring, nodes: 16}
        measure:
          - iperf3: {client: n1, server: "n{1 + hops}"}
        vary: {hops: [1, 20, 30]}
        """)
    assert found == [
        "exp.yaml:4:34: iperf3: unknown node 'n21' (did you mean 'n2'?); the lab has n1 … n16 "
        "(at hops=20)",
        "exp.yaml:4:34: iperf3: unknown node 'n31' (did you mean 'n3'?); the lab has n1 … n16 "
        "(at hops=30)",
    ]


def test_typos_unknown_tools_and_bad_types_point_at_their_place() -> None:
    found = problems("""\
        name: typos
        topology: {kind: pair}
        measure:
          - iperf3: {client: n1, server: n2, duraton: 1}
          - iperf: {client: n1}
          - ping: {src: n1, dst: n2, count: many}
          - command: {node: n1}
          - iperf3
        repeat: 0
        """)
    assert "exp.yaml:9:9: repeat: Input should be greater than or equal to 1 (got 0)" in found
    found = problems("""\
        name: typos
        topology: {kind: pair}
        measure:
          - iperf3: {client: n1, server: n2, duraton: 1}
          - iperf: {client: n1}
          - ping: {src: n1, dst: n2, count: many}
          - command: {node: n1}
          - iperf3
        """)
    assert found[0] == "exp.yaml:4:38: unknown key 'duraton' (did you mean 'duration'?)"
    assert found[1].startswith("exp.yaml:5:5: unknown measurement 'iperf' (did you mean 'iperf3'?)")
    assert found[2].startswith(
        "exp.yaml:6:37: measure.2.ping.count: Input should be a valid integer"
    )
    assert found[3] == "exp.yaml:7:14: missing key 'cmd'"
    assert found[4].startswith("exp.yaml:8:5: a measurement is one `tool: {options}` mapping")


def test_unknown_top_level_keys_and_missing_measure() -> None:
    assert problems("name: x\ntopology: {kind: pair}\nmesure: []\n") == [
        "exp.yaml:3:1: unknown key 'mesure' (did you mean 'measure'?)"
    ]
    assert problems("name: x\ntopology: {kind: pair}\n")[0].startswith(
        "exp.yaml:1:1: an experiment needs `measure:`"
    )


def test_expression_errors_point_at_the_value() -> None:
    found = problems("""\
        name: evil
        topology: {kind: pair}
        measure:
          - command: {node: n1, cmd: "echo {__import__('os').getcwd()}"}
          - iperf3: {client: n1, server: "n{hop}"}
        vary: {hops: [1]}
        """)
    assert found[0].startswith(
        "exp.yaml:4:30: {__import__('os').getcwd()}: a function call is not allowed"
    )
    assert (
        found[1]
        == "exp.yaml:5:34: unknown parameter 'hop' (did you mean 'hops'?); parameters: hops"
    )


def test_keys_of_the_experiment_part_are_checked() -> None:
    found = problems("""\
        name: keys
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        vary: {"bad name": [1], hops: []}
        order: random
        params: {hops: 1}
        """)
    assert any(p.startswith("exp.yaml:4:7: ") and "must be a word" in p for p in found)
    assert any(p.startswith("exp.yaml:5:8: ") and "sequential" in p for p in found)
    found = problems("""\
        name: keys
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        vary: {hops: [1, 2]}
        params: {hops: 1}
        """)
    assert found == ["exp.yaml:5:10: parameter 'hops' is in vary: too"]
    found = problems("""\
        name: keys
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        vary: [{a: 1}, {b: 2}]
        """)
    assert "every point must set a" in found[0]
    found = problems("""\
        name: keys
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        vary: [{a: 1, b: x}, {a: 2, b: x}, {a: 1, b: x}]
        """)
    assert found == ["exp.yaml:4:7: vary: point 3 is point 1 again (use repeat: for more runs)"]
    # 1 and 1.0 are one point (a plot's axis shows both as 1), as in a mapping's list
    found = problems("""\
        name: keys
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        vary: [{a: 1}, {a: 1.0}]
        """)
    assert found == ["exp.yaml:4:7: vary: point 2 is point 1 again (use repeat: for more runs)"]


def test_a_wrong_run_setting_hides_no_other_mistake() -> None:
    """`repeat: 0` was said alone: the unknown server and the misspelt option came out only
    once it was fixed. Run settings are checked with their defaults, and all is said."""
    found = problems("""\
        name: settings
        topology: {kind: ring, nodes: 4}
        measure:
          - iperf3: {client: n1, server: n9, duration: 1}
          - ping: {src: n1, dst: n2, cont: 3}
        repeat: 0
        order: random
        """)
    assert [p.split(": ")[0] for p in found] == [
        "exp.yaml:6:9", "exp.yaml:7:8", "exp.yaml:4:34", "exp.yaml:5:30"
    ], found
    assert "unknown node 'n9'" in found[2] and "did you mean 'count'" in found[3]
    # alone, a setting's mistake is still an error
    found = problems("""\
        name: settings
        topology: {kind: pair}
        measure: [{ping: {src: n1, dst: n2}}]
        warmup: -1
        """)
    assert len(found) == 1 and found[0].startswith("exp.yaml:4:9: warmup"), found


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ("[1, 1]", "a value twice"),
        ("[1, '1']", "1 and '1', the same value"),
        ("[2, 1, 1.0]", "1 and 1.0, the same value"),
        ("[1, true]", "1 and True, the same value"),
        ("[x, y, x]", "a value twice"),
    ],
)
def test_a_value_swept_twice_is_refused_in_the_file_and_in_set(values: str, said: str) -> None:
    """They were stored as separate points with one label (c=1 three times); --set
    [1,1] was not checked at all."""
    file = f"""\
        name: keys
        topology: {{kind: pair}}
        measure: [{{ping: {{src: n1, dst: n2}}}}]
        vary: {{c: {values}}}
        """
    assert problems(file) == [f"exp.yaml:4:7: vary: c lists {said}"]
    plain = file.replace(values, "[5, 6]")
    assert problems(plain, overrides={"c": values}) == [f"--set: c: {values} lists {said}"]


def test_a_list_of_points_is_bounded_as_a_mapping_is() -> None:
    points = ", ".join(f"{{a: {i}}}" for i in range(MAX_POINTS + 1))
    found = problems(f"""\
        name: keys
        topology: {{kind: pair}}
        measure: [{{ping: {{src: n1, dst: n2}}}}]
        vary: [{points}]
        """)
    assert found == [f"exp.yaml:4:7: vary: more than {MAX_POINTS} sweep points"]


def test_measurement_names_are_unique_per_run() -> None:
    exp = load_experiment_text(
        textwrap.dedent("""\
        name: twice
        topology: {kind: chain, nodes: 3}
        measure:
          - iperf3: {client: n1, server: n2}
          - iperf3: {client: n1, server: n3}
          - ping: {src: n1, dst: n3, name: rtt}
        """),
        "twice.yaml",
    )
    assert [s.name for s in exp.points[0].steps] == ["iperf3", "iperf3-2", "rtt"]
    found = problems("""\
        name: twice
        topology: {kind: pair}
        measure:
          - ping: {src: n1, dst: n2, name: x}
          - ping: {src: n2, dst: n1, name: x}
        """)
    assert found == ["exp.yaml:5:36: measurement name 'x' is used twice"]
    # `events` is where a run with events stores its derived metrics: a measurement of that
    # name had its samples overwritten
    found = problems("""\
        name: twice
        topology: {kind: pair}
        measure:
          - ping: {src: n1, dst: n2, name: events}
        """)
    assert found == [
        "exp.yaml:4:36: measurement name 'events' is netrig's own: a run with events stores "
        "its derived metrics (outage, reconvergence, …) under it; choose another"
    ]


def test_lab_errors_keep_their_places() -> None:
    found = problems("""\
        name: lab-errors
        topology: {kind: chain, nodes: "{n}"}
        links:
          - {a: n1, b: nine}
        measure: [{ping: {src: n1, dst: n2}}]
        vary: {n: [3]}
        """)
    assert found == ["exp.yaml:4:16: link to unknown node 'nine'"]


@pytest.mark.parametrize(
    "path",
    sorted(p for p in glob.glob(str(EXAMPLES / "*.yaml")) if "ring16.yaml" not in p),
    ids=os.path.basename,
)
def test_examples_validate(path: str) -> None:
    exp = load_experiment(path)
    assert exp.points and all(p.steps for p in exp.points)
    kinds = {s.kind for s in exp.points[0].steps}
    assert "iperf3" in exp.tools() or kinds & {"command", "stage_latency", "pps", "wrk", "ab"}
    assert all(package for package in exp.tools().values())  # each names its Debian package


def test_the_seed_examples_hold_the_seeds_cases() -> None:
    ring = load_experiment(str(EXAMPLES / "seed000-static.yaml"))
    assert [p.steps[0].options.server for p in ring.points] == ["n2", "n6", "n9"]
    assert len(ring.points[0].plan.nodes) == 16
    aliases = load_experiment(str(EXAMPLES / "seed001-aliases.yaml"))
    assert [p.values["aliases"] for p in aliases.points][:3] == [1, 2, 4]
    assert aliases.points[-1].values == {"aliases": 254}
    shapes = load_experiment(str(EXAMPLES / "seed000-shapes.yaml"))
    assert [(len(p.plan.nodes), len(p.plan.links)) for p in shapes.points] == [
        (2, 1),
        (3, 3),
        (3, 2),
    ]


def test_a_varied_parameter_no_expression_uses_is_noted() -> None:
    """vary: {colour: [red, blue]} that nothing refers to doubled the runs of one lab and
    measurement set, silently."""
    import warnings

    from netrig.model.problems import Note

    text = textwrap.dedent("""\
        name: unused
        topology: {kind: chain, nodes: "{hops}"}
        measure:
          - ping: {src: n1, dst: "n{1 + hops - 1}"}
        vary: {hops: [2, 3], colour: [red, blue]}
        """)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", Note)
        assert len(load_experiment_text(text, "exp.yaml").points) == 4
    assert [str(w.message) for w in caught if w.category is Note] == [
        "exp.yaml:5:22: vary: colour is in no {expression} of the file, so its points run the "
        "same lab and measurements (repeat: runs a point again)"
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", Note)
        used = text.replace('"n{1 + hops - 1}"}', '"n{hops}", name: "p-{colour}"}')
        assert len(load_experiment_text(used, "exp.yaml").points) == 4
    assert not [w for w in caught if w.category is Note]


def test_a_measurement_refuses_yes_for_a_number_and_takes_it_for_a_switch() -> None:
    """`duration: yes` was a one-second run: YAML's yes is true, and pydantic took it for 1."""
    text = """\
        name: e
        topology: {kind: pair}
        measure:
          - iperf3: {client: n1, server: n2, duration: yes}
        """
    assert problems(text) == [
        "exp.yaml:4:48: true is not a number (YAML reads yes, no, on and off as true and false)"
    ]
    switched = text.replace("duration: yes", "reverse: yes")
    exp = load_experiment_text(textwrap.dedent(switched), "e.yaml")
    assert exp.points[0].steps[0].options.reverse is True


def test_yes_in_a_list_of_numbers_is_refused_too() -> None:
    assert problems("""\
        name: e
        topology: {kind: pair}
        measure:
          - command: {node: n1, cmd: "true", ok_codes: [0, yes]}
        """) == [
        "exp.yaml:4:48: true is not a number (YAML reads yes, no, on and off as true and false)"
    ]


def test_a_sweep_value_that_is_a_list_is_said_plainly() -> None:
    """`vary: {bk: [[web1], [web1, web2]]}` had given pydantic's union errors, thrice."""
    for vary in ("{bk: [[n1], [n1, n2]]}", "[{bk: [n1]}, {bk: [n2]}]"):
        said = problems(f"name: t\ntopology: {{kind: pair}}\nvary: {vary}\n"
                        "measure:\n  - ping: {src: n1, dst: n2}\n")  # fmt: skip
        assert said == ["exp.yaml:3:7: vary: bk: ['n1'] is a list; a sweep value is one number, "
                        "word or true/false (a list of points, vary: [{a: 1, b: x}, …], sets "
                        "several parameters at once)"], said  # fmt: skip


def test_a_lab_file_given_to_run_is_said_to_be_one() -> None:
    """`netrig run mininet-bw.py` had said "YAML syntax error: did not find expected
    <document start>"; a netrig lab file only that it lacked `measure:`."""
    from netrig.model.experiment import load_experiment_model

    with pytest.raises(SpecError) as mininet:
        load_experiment_model("examples/mininet-bw.py")
    assert str(mininet.value) == (
        "examples/mininet-bw.py: a Mininet topology is a lab file (`netrig up` builds it); an "
        "experiment names it with `lab: FILE` beside `measure:`")  # fmt: skip
    with pytest.raises(SpecError) as lab:
        load_experiment_model("examples/ring16.yaml")
    assert str(lab.value).endswith("; this is a lab file (`netrig up` builds it; an experiment "
                                   "names it with `lab: FILE`)")  # fmt: skip
