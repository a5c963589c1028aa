"""Hostile and random input: every lab or experiment file is answered, quickly and in little
memory, with exit 0 or exit 2 and file:line messages, never a traceback, nothing created."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netrig.cli.group import _register, cli
from netrig.lab import netns
from netrig.model import yamlmarks

_register()

FUZZ_PREFIX = f"fz{os.getpid() % 10000:04d}"  # the fuzzed labs' names: none may appear
WHERE = re.compile(r"^\S+:\d+(:\d+)?: ", re.MULTILINE)


def billion_laughs(anchors: int = 9, refs: int = 9) -> str:
    """~600 bytes that expand to refs**anchors values if aliases are followed blindly."""
    lines = ["name: laughs", "a0: &a0 [" + ", ".join(["lol"] * refs) + "]"]
    for i in range(1, anchors):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * refs) + "]")
    return "\n".join(lines) + "\n"


HOSTILE = {
    "billion-laughs": billion_laughs(),
    "deep-nesting": "name: deep\nx: " + "[" * 200_000 + "]" * 200_000 + "\n",
    "flat-list-1mb": "name: flat\nlinks: [" + ",".join(["1"] * 330_000) + "]\n",
    "long-string-1mb": "name: " + "x" * 1_000_000 + "\n",
    "many-keys": "name: keys\n" + "".join(f"k{i}: {i}\n" for i in range(90_000)),
    "over-1mb": "name: big\n" + "#" * (1 << 20) + "\n",
    "nul-byte": "name: a\x00b\n",
    "python-tag": "name: !!python/object/apply:os.system [true]\n",
    "bad-timestamp": "name: x\nwhen: 2001-13-45\n",
    "complex-key": "? [a, b]\n: 1\nname: x\n",
    "two-documents": "name: a\n---\nname: b\n",
    # 20,000 minus signs in one {expression}: Python's parser overflowed (a traceback)
    "deep-expression": "name: x\ntopology: {kind: pair}\nmeasure:\n"
    '  - ping: {src: n1, dst: n2, count: "{' + "-" * 20_000 + 'x}"}\nparams: {x: 1}\n',
}


# Runs argv[1:], then prints "PEAK_KB EXIT" as stderr's last line: the child's own peak
# resident memory from wait4, with only this launcher's few MB inherited before exec.
PEAK_LAUNCHER = """
import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\n{usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_file_is_answered_fast_in_little_memory(tmp_path: Path, case: str) -> None:
    """The issue's figures: <= 2 s and <= 200 MB for any file up to 1 MB. The bounds here
    are looser on time (a loaded CI machine), exact on memory (a property of the code)."""
    path = tmp_path / f"{case}.yaml"
    path.write_text(HOSTILE[case], encoding="utf-8")
    started = time.monotonic()
    with open(tmp_path / "out", "w+") as out_fh, open(tmp_path / "err", "w+") as err_fh:
        # A small launcher forks netrig: a child forked straight from pytest would count
        # pytest's own resident memory (inherited before exec) in its peak.
        command = [sys.executable, "-m", "netrig", "validate", str(path)]
        subprocess.run(
            [sys.executable, "-c", PEAK_LAUNCHER, *command],
            stdout=out_fh,
            stderr=err_fh,
            check=True,
        )
    seconds = time.monotonic() - started
    out, err = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    peak_kb, _, exit_code = err.rpartition("\n")[2].partition(" ")
    peak_mb = int(peak_kb) / 1024
    assert int(exit_code) == 2, out + err
    assert "Traceback" not in err
    assert WHERE.search(err), err
    assert seconds < 10, f"{case}: {seconds:.1f} s"
    assert peak_mb < 200, f"{case}: {peak_mb:.0f} MB"


def test_aliases_within_the_bound_still_work() -> None:
    doc = yamlmarks.load("base: &b {rate: 10mbit}\nlinks: [*b, *b]\n", "f.yaml")
    assert doc.data["links"] == [{"rate": "10mbit"}, {"rate": "10mbit"}]
    doc.data["links"][0]["rate"] = "1mbit"  # each alias its own copy, as if written out
    assert doc.data["links"][1]["rate"] == "10mbit"
    assert doc.where(("links", 1, "rate")) == "f.yaml:2:13"  # the second alias


MERGES = """\
base: &b {src: n1, count: 3}
other: &o {interval: 0.1, count: 9}
m1: {<<: *b, dst: n2}
m2: {dst: n3, <<: [*b, *o], count: 5}
m3:
  <<: *b
  src: n9
quoted: {'<<': 1}
"""


def test_yaml_merge_keys_merge_as_pyyaml_merges_them() -> None:
    """`<<: *defaults` (YAML's merge key) was refused as 'YAML tag …merge not supported'.
    Keys written in the mapping win, and of merged mappings the first; a quoted '<<' is a
    plain key."""
    doc = yamlmarks.load(MERGES, "f.yaml")
    assert doc.data == yaml.safe_load(MERGES)
    assert doc.data["m2"] == {"dst": "n3", "count": 5, "src": "n1", "interval": 0.1}
    assert doc.data["m3"] == {"src": "n9", "count": 3}


@pytest.mark.parametrize("value", ["3", "[1]", "*x"])
def test_a_merge_of_what_is_not_a_mapping_is_named_at_its_line(value: str) -> None:
    with pytest.raises(yamlmarks.YamlSyntaxError) as info:
        yamlmarks.load(f"x: &x [1]\na: {{<<: {value}}}\n", "f.yaml")
    assert info.value.where.startswith("f.yaml:2:")
    assert "`<<:` merges a mapping or a list of mappings" in info.value.message


def test_an_experiment_can_share_options_through_a_merge_key() -> None:
    from netrig.rig.prepare import load_experiment_text

    exp = load_experiment_text(
        "name: merged\ntopology: {kind: chain, nodes: 3}\n"
        "measure:\n  - ping: &p {src: n1, dst: n2, count: 2, interval: 0.05}\n"
        "  - ping: {<<: *p, dst: n3}\n",
        "exp.yaml",
    )
    steps = exp.points[0].steps
    assert [(s.options.src, s.options.dst, s.options.count) for s in steps] == [
        ("n1", "n2", 2), ("n1", "n3", 2)
    ]


def test_billion_laughs_names_the_alias_that_crossed_the_bound() -> None:
    with pytest.raises(yamlmarks.YamlSyntaxError) as info:
        yamlmarks.load(billion_laughs(), "f.yaml")
    assert info.value.where.startswith("f.yaml:") and "alias *a" in info.value.message


# ------------------------------------------------------------------ property-based fuzzing

NAMES = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.integers(0, 40),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    NAMES,
    st.sampled_from(["n1", "n2", "n3", "10mbit", "1s", "{n}", "{1 + x}", "198.18.0.1", "::"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(NAMES, SCALARS), inner, max_size=4)
    ),
    max_leaves=12,
)
TOPOLOGY = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.one_of(
            st.sampled_from(
                ["pair", "chain", "ring", "ladder", "star", "grid", "tree", "full-mesh"]
            ),
            SCALARS,
        ),
        "nodes": st.one_of(st.integers(-2, 24), SCALARS),
        "rows": st.integers(-1, 5),
        "cols": st.integers(-1, 5),
        "depth": st.integers(-1, 3),
        "fanout": st.integers(-1, 3),
        "leaves": st.integers(-1, 6),
    },
)
LAB = {
    "topology": st.one_of(TOPOLOGY, VALUES),
    "nodes": st.lists(st.one_of(st.fixed_dictionaries({"name": NAMES}), VALUES), max_size=3),
    "links": st.lists(st.one_of(st.lists(NAMES, max_size=3), VALUES), max_size=3),
    "routing": st.one_of(
        st.fixed_dictionaries(
            {"protocol": st.sampled_from(["static", "ecmp", "ospf", "babel", "bridge", "none"])}
        ),
        VALUES,
    ),
    "addressing": VALUES,
    "check": VALUES,
    "sysctls": VALUES,
    "link_defaults": VALUES,
    "other": VALUES,
}
MEASURE = st.lists(
    st.dictionaries(
        st.sampled_from(["ping", "iperf3", "command", "wrk", "pps", "nope"]),
        st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "src": st.sampled_from(["n1", "n2", "n9"]),
                    "dst": st.sampled_from(["n1", "n2", "n9"]),
                    "client": st.sampled_from(["n1", "n2"]),
                    "server": st.sampled_from(["n1", "n2"]),
                    "node": st.sampled_from(["n1", "n2"]),
                    "cmd": st.text(max_size=8),
                    "duration": SCALARS,
                    "count": SCALARS,
                },
            ),
            VALUES,
        ),
        min_size=1,
        max_size=1,
    ),
    max_size=3,
)
EXPERIMENT = {
    **LAB,
    "measure": st.one_of(MEASURE, VALUES),
    "vary": st.one_of(st.dictionaries(NAMES, st.lists(SCALARS, max_size=3), max_size=2), VALUES),
    "params": st.one_of(st.dictionaries(NAMES, SCALARS, max_size=2), VALUES),
    "repeat": st.one_of(st.integers(-1, 5), SCALARS),
    "order": st.one_of(st.sampled_from(["sequential", "interleaved"]), SCALARS),
    "warmup": SCALARS,
    "cooldown": SCALARS,
    "events": st.one_of(
        st.lists(
            st.sampled_from(
                ["link n1-n2 down @ 1s", "node n2 stop @ 0.5s", "link n1-n2 rate 1mbit @ 2s"]
            )
            | st.text(max_size=20),
            max_size=2,
        ),
        VALUES,
    ),
}


VALID_LAB = {"topology": {"kind": "chain", "nodes": 3}}
VALID_EXPERIMENT = {**VALID_LAB, "measure": [{"ping": {"src": "n1", "dst": "n3"}}], "repeat": 2}


@st.composite
def yaml_file(draw: st.DrawFn, keys: dict[str, st.SearchStrategy], valid: dict) -> str:  # type: ignore[type-arg]
    """A file as a user (or a careless editor) might write it: a valid file with a few keys
    given any values (or a whole file of them), then perhaps cut, or a character put in, or
    a line doubled."""
    name = draw(st.one_of(NAMES.map(lambda n: FUZZ_PREFIX + n), SCALARS))
    data: dict[str, object] = {"name": name, **(valid if draw(st.booleans()) else {})}
    chosen = draw(st.lists(st.sampled_from(sorted(keys)), max_size=3, unique=True))
    for key in chosen:
        data[key] = draw(keys[key])
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    mutation = draw(st.sampled_from(["none", "none", "cut", "insert", "double"]))
    at = draw(st.integers(0, max(len(text) - 1, 0)))
    if mutation == "cut":
        text = text[:at]
    elif mutation == "insert":
        text = text[:at] + draw(st.sampled_from(list("\t:{}[]&*!|>'\"%@`#-?,\x00\x85"))) + text[at:]
    elif mutation == "double":
        lines = text.splitlines(keepends=True)
        line = lines[at % len(lines)] if lines else ""
        text += line
    return text


def _answered(result, path: Path) -> None:  # type: ignore[no-untyped-def]
    out = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback for\n{path.read_text()}") from result.exception
    assert result.exit_code in (0, 2), out
    assert "Traceback" not in out
    if result.exit_code == 2:
        assert WHERE.search(out), f"no file:line in {out!r} for\n{path.read_text()}"


FUZZ = settings(
    max_examples=int(os.environ.get("NETRIG_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@FUZZ
@given(text=yaml_file(LAB, VALID_LAB))
def test_fuzzed_lab_file_is_valid_or_named_at_file_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["validate", str(path)])
    _answered(result, path)
    assert not [ns for ns in netns.list_names() if ns.startswith(FUZZ_PREFIX)]


@FUZZ
@given(text=yaml_file(EXPERIMENT, VALID_EXPERIMENT))
def test_fuzzed_experiment_file_is_valid_or_named_at_file_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    db = tmp_path / "never.db"
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run", "--db", str(db)])
    _answered(result, path)
    assert not db.exists()  # --dry-run creates nothing
    assert not [ns for ns in netns.list_names() if ns.startswith(FUZZ_PREFIX)]
