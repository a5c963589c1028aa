"""The experiment file: a lab file plus what to measure, what to vary, how often, in what order.

    name: ring-hops
    topology: {kind: ring, nodes: 16}
    measure:
      - iperf3: {client: n1, server: "n{1 + hops}", duration: "{duration}"}
    vary: {hops: [1, 5, 8]}
    params: {duration: 10}          # constants, overridable: netrig run --set duration=1
    repeat: 3
    order: interleaved              # or sequential (default)
    warmup: 1                       # runs per sweep point, done first and not stored
    cooldown: 2s                    # pause between runs
    events:                         # faults on a timeline, from the start of the measurements
      - "link n{hops}-n{hops + 1} down @ 2s"
    stop_on_failure: true           # end at the first failed run (a sweep for a limit)

Parameters (`vary:` and `params:`) may be used in any value of the file, lab part included,
as `{expr}` inside strings, where expr is arithmetic (+ - * / // % and parentheses) on
numbers and parameters and nothing else: it is parsed with `ast` and only those nodes are
evaluated, so no code can run. A value that is exactly one `{expr}` takes the expression's
type (`nodes: "{2 * n}"` is a number); `{{` and `}}` are literal braces.

With `events:` the measurements of a run start together and each event is checked against
the point's lab (the link or node must exist; `node N stop` needs a routing daemon).

Every sweep point is substituted and validated up front, with the lab loader's models and a
check of each measurement against that point's plan, so a typo or a server that does not
exist is reported as `file:line:col` before anything is created.
"""

from __future__ import annotations

import difflib
import itertools
import keyword
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from netrig.model import foreign, yamlmarks
from netrig.model.expr import names_in, substitute
from netrig.model.filekind import EXPERIMENT_KEYS
from netrig.model.load import Problem, SpecError, _problems
from netrig.model.models import LabSpec, Seconds, Strict
from netrig.model.overrides import override_note
from netrig.model.problems import note
from netrig.model.yamlmarks import KeyPath

Scalar = bool | int | float | str
Vary = dict[str, list[Scalar]] | list[dict[str, Scalar]]
# the experiment's own keys but measure and events, and `lab:` (a path to a lab file)
NOT_SUBSTITUTED = ("lab", *(k for k in EXPERIMENT_KEYS if k not in ("measure", "events")))
MAX_EXPR = 200  # characters inside one {…}
MAX_POINTS = 10000

# ------------------------------------------------------------------ the experiment keys


def _param_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or keyword.iskeyword(name):
        raise ValueError(f"parameter name {name!r} must be a word: letters, digits, '_'")
    return name


# keys of how the runs go, on which no sweep point's lab or measurement depends
RUN_SETTINGS = {"repeat", "order", "warmup", "cooldown", "stop_on_failure"}


class ExperimentKeys(Strict):
    """What an experiment file adds to a lab file."""

    measure: list[Any] = Field(min_length=1, description="measurements, each `- tool: {options}`")
    vary: dict[str, list[Scalar]] | list[dict[str, Scalar]] = Field(
        {}, description="parameter → values (every combination), or a list of points"
    )
    params: dict[str, Scalar] = Field({}, description="constant parameters (netrig run --set)")
    repeat: int = Field(1, ge=1, le=100000, description="runs per sweep point")
    order: Literal["sequential", "interleaved"] = Field(
        "sequential", description="sequential: AAA BBB; interleaved: AB AB AB (cancels drift)"
    )
    warmup: int = Field(0, ge=0, le=1000, description="runs per sweep point done first, not stored")
    cooldown: Seconds = Field(0.0, description="pause between runs")
    events: list[str] = Field(
        [],
        description="faults on a timeline from the start of the measurements, e.g. "
        "`link n3-n4 down @ 2s`; the measurements then run at the same time",
    )
    stop_on_failure: bool = Field(
        False, description="end the experiment at the first failed run (a sweep for a limit)"
    )

    @field_validator("vary", mode="before")
    @classmethod
    def _one_value_each(cls, value: Any) -> Any:
        """A sweep value that is a list or a mapping, said plainly (pydantic's union had
        answered `vary.bk.0.bool: Input should be a valid boolean`, thrice)."""
        cases = value.items() if isinstance(value, dict) else []
        if isinstance(value, list):
            cases = [(k, [v]) for case in value if isinstance(case, dict) for k, v in case.items()]
        for name, values in cases:
            for one in values if isinstance(values, list) else []:
                if isinstance(one, list | dict):
                    raise ValueError(
                        f"vary: {name}: {one!r} is a {type(one).__name__}; a sweep value is one "
                        "number, word or true/false (a list of points, vary: [{a: 1, b: x}, "
                        "…], sets several parameters at once)"
                    )
        return value

    @field_validator("vary")
    @classmethod
    def _vary(cls, value: Vary) -> Vary:
        if isinstance(value, list):
            if not value:
                raise ValueError("vary: the list of points is empty")
            if len(value) > MAX_POINTS:
                raise ValueError(f"vary: more than {MAX_POINTS} sweep points")
            names = list(value[0])
            seen: dict[str, int] = {}
            for i, case in enumerate(value):
                for name in case:
                    _param_name(name)
                if list(case) != names:
                    raise ValueError(
                        f"vary: point {i + 1} sets {', '.join(case) or 'nothing'}; "
                        f"every point must set {', '.join(names)}"
                    )
                # as a mapping's values: a point twice would share its stored runs
                first = seen.setdefault(repr([_same_as(v) for v in case.values()]), i + 1)
                if first != i + 1:
                    raise ValueError(
                        f"vary: point {i + 1} is point {first} again (use repeat: for more runs)"
                    )
            return value
        for name, values in value.items():
            _param_name(name)
            if not values:
                raise ValueError(f"vary: {name} has no values")
            if twice := _listed_twice(values):
                raise ValueError(f"vary: {name} lists {twice}")
        if math.prod(len(v) for v in value.values()) > MAX_POINTS:
            raise ValueError(f"vary: more than {MAX_POINTS} sweep points")
        return value

    @field_validator("params")
    @classmethod
    def _params(cls, value: dict[str, Scalar]) -> dict[str, Scalar]:
        for name in value:
            _param_name(name)
        return value


def _same_as(value: Any) -> Any:
    """What a swept value is the same as: a number as a number (1, 1.0 and true are one
    point), other values as they read in a point's label (1 and "1" are one: c=1)."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return ("text", value)
    if isinstance(number, int | float) and math.isfinite(number):
        return ("number", float(number))
    return ("text", str(value))


def _listed_twice(values: Sequence[Any]) -> str | None:
    """'1 and 1.0, the same value' for the first value listed again, else None."""
    seen: dict[Any, Any] = {}
    for i, value in enumerate(values):
        at = seen.setdefault(_same_as(value), i)
        if at != i:
            first = values[at]
            if repr(first) == repr(value):
                return "a value twice"
            return f"{first!r} and {value!r}, the same value"
    return None


def sweep_points(
    vary: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The sweep points of a `vary:`.

    A mapping gives every combination of its values, the first parameter changing slowest;
    a list of mappings gives exactly those points, in that order.

    >>> sweep_points({"hops": [1, 5], "proto": ["tcp", "udp"]})[1]
    {'hops': 1, 'proto': 'udp'}
    >>> sweep_points([{"shape": "ring", "hops": 1}, {"shape": "chain", "hops": 2}])[1]
    {'shape': 'chain', 'hops': 2}
    """
    if not isinstance(vary, Mapping):
        return [dict(case) for case in vary]
    names = list(vary)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*vary.values())]



# ------------------------------------------------------------------ the file, read


@dataclass(kw_only=True)
class ExperimentSettings:
    """What an experiment file says about its runs, as read (the model) and as planned."""

    file: str
    text: str  # what the results store keeps and hashes: the file plus command-line overrides
    repeat: int
    order: str
    warmup: int
    cooldown: float
    vary: Vary
    params: dict[str, Any]
    stop_on_failure: bool = False


@dataclass(kw_only=True)
class ExperimentModel(ExperimentSettings):
    """An experiment file read and its own keys checked; the lab part and the measurements
    are checked per sweep point by the plan (netrig.plan.experiment)."""

    doc: yamlmarks.MarkedDoc

    def points(self) -> list[dict[str, Any]]:
        """The sweep points' values, in order."""
        return sweep_points(self.vary)


@dataclass
class PointModel:
    """One sweep point's file with its `{expr}` substituted: the lab part as a marked
    document (line marks kept), the measurements and events as written."""

    values: dict[str, Any]
    lab: yamlmarks.MarkedDoc
    measure: list[Any]
    events: list[Any]


def load_experiment_model(
    path: str,
    overrides: Mapping[str, str] | None = None,
    repeat: int | None = None,
    name: str | None = None,
    deferred: list[Problem] | None = None,
) -> ExperimentModel:
    """Read an experiment file and check its own keys; SpecError (file:line:col) if wrong
    (`deferred`: see load_experiment_model_text)."""
    if path.endswith(".py"):  # it had been read as YAML: "did not find expected <document start>"
        raise SpecError([Problem(path, "a Mininet topology is a lab file (`netrig up` builds "
                                       "it); an experiment names it with `lab: FILE` beside "
                                       "`measure:`")])  # fmt: skip
    try:
        text = yamlmarks.read_text(path)
    except OSError as exc:
        raise SpecError([Problem(path, f"cannot read: {exc.strerror}")]) from None
    return load_experiment_model_text(text, path, overrides, repeat, name, deferred)


def load_experiment_model_text(
    text: str,
    file: str = "<string>",
    overrides: Mapping[str, str] | None = None,
    repeat: int | None = None,
    name: str | None = None,
    deferred: list[Problem] | None = None,
) -> ExperimentModel:
    """`name` (--name) names the lab instead of the file's `name:`. `deferred`: a list
    that takes the problems of the run settings (repeat:, order:, …), which then do not
    stop the reading; the caller says them with the problems found after."""
    doc = yamlmarks.load(text, file)
    if not isinstance(doc.data, dict):
        raise SpecError(
            [Problem(doc.where(()), "an experiment file is a mapping (name:, measure:, …)")]
        )
    doc = foreign.with_name(doc, name)  # with `lab:`, `name:` renames that file's lab
    _check_top_keys(doc)
    keys_data = {k: doc.data[k] for k in EXPERIMENT_KEYS if k in doc.data}
    try:
        keys = ExperimentKeys.model_validate(keys_data)
    except ValidationError as exc:
        keys = _keys_past_settings(exc, doc, keys_data, deferred)
    vary, params = _apply_overrides(doc, keys, overrides or {})
    _note_unused(doc, vary)
    stored = text if not overrides and repeat is None else text + override_note(overrides, repeat)
    return ExperimentModel(
        file=file,
        text=stored,
        doc=doc,
        repeat=repeat or keys.repeat,
        order=keys.order,
        warmup=keys.warmup,
        cooldown=keys.cooldown,
        vary=vary,
        params=params,
        stop_on_failure=keys.stop_on_failure,
    )

def _keys_past_settings(
    exc: ValidationError,
    doc: yamlmarks.MarkedDoc,
    keys_data: dict[str, Any],
    deferred: list[Problem] | None,
) -> ExperimentKeys:
    """The file's experiment keys despite EXC if only run settings are wrong and the caller
    takes their problems (`deferred`): no sweep point depends on them, so they are checked
    with their defaults and the file's other mistakes are said with them (`repeat: 0` had
    hidden a measurement's). Otherwise SpecError."""
    problems = _problems(exc, doc, ExperimentKeys)
    wrong = {err["loc"][0] for err in exc.errors() if err["loc"]}
    if deferred is not None and wrong and wrong <= RUN_SETTINGS:
        deferred.extend(problems)
        return ExperimentKeys.model_validate({k: v for k, v in keys_data.items() if k not in wrong})
    if "measure" not in doc.data:
        problems = [p for p in problems if "measure" not in p.message] + [
            Problem(
                doc.where(()),
                "an experiment needs `measure:`, a list of measurements "
                "such as `- iperf3: {client: n1, server: n2}`"
                + ("; this is a lab file (`netrig up` builds it; an experiment names it "
                   "with `lab: FILE`)" if not keys_data else ""),
            )
        ]
    raise SpecError(problems) from None



def substitute_point(model: ExperimentModel, values: dict[str, Any]) -> PointModel:
    """One sweep point's file with every `{expr}` substituted; SpecError at file:line."""
    doc = model.doc
    params = {**model.params, **values}
    raw: list[tuple[KeyPath, str]] = []
    data = {
        k: v if k in NOT_SUBSTITUTED else substitute(v, params, (k,), raw)
        for k, v in doc.data.items()
    }
    if raw:
        raise SpecError([Problem(doc.where(path), msg) for path, msg in raw])
    if "lab" in data:
        lab_doc = _lab_file(doc, data)
    else:
        lab_data = {k: v for k, v in data.items() if k not in EXPERIMENT_KEYS}
        lab_doc = yamlmarks.MarkedDoc(lab_data, doc.file, doc.value_marks, doc.key_marks)
    return PointModel(values, lab_doc, data["measure"], data.get("events") or [])


def _lab_file(doc: yamlmarks.MarkedDoc, data: dict[str, Any]) -> yamlmarks.MarkedDoc:
    """`lab: path`: the lab comes from that file (netrig, containerlab or Mininet, relative
    to the experiment file); the experiment's `name:` (if any) names it."""
    import os

    where = doc.where(("lab",))
    if not isinstance(data["lab"], str) or not data["lab"]:
        raise SpecError([Problem(where, "lab: a path to a lab file, e.g. lab: fabric.clab.yml")])
    extra = [k for k in data if k not in (*EXPERIMENT_KEYS, "lab", "name", "topo")]
    if extra:
        raise SpecError(
            [
                Problem(
                    doc.where((extra[0],), key=True),
                    f"{extra[0]!r} belongs in the lab file; with `lab:` the lab comes from it",
                )
            ]
        )
    path = os.path.join(os.path.dirname(os.path.abspath(doc.file)), data["lab"])
    topo = data.get("topo")
    topo_at = doc.where(("topo",)) if "topo" in data else where
    if topo is not None and (not isinstance(topo, str) or not topo):
        raise SpecError([Problem(topo_at, "topo: a Mininet file's topology, NAME[,ARGS] as "
                                          "--topo takes it, e.g. topo: \"tree,2\"")])  # fmt: skip
    try:
        lab_doc = foreign.lab_doc(path, topo=topo)
    except SpecError as exc:
        # said in the experiment's words: `topo:` beside `lab:`, not `up`'s --topo option
        if exc.problems and exc.problems[0].where in (path, "--topo"):
            first = exc.problems[0]
            message = first.message.replace("--topo NAME", "`topo: NAME` beside `lab:`")
            message = message.replace("--topo", "`topo:`")
            at = topo_at if first.where == "--topo" else where
            raise SpecError([Problem(at, f"lab {path}: {message}")]) from None
        raise
    return foreign.with_name(lab_doc, data.get("name"))


def _check_top_keys(doc: yamlmarks.MarkedDoc) -> None:
    known = [*LabSpec.model_fields, *EXPERIMENT_KEYS, "lab", "topo"]
    problems = []
    for key in doc.data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = (
                f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"
            )
            problems.append(Problem(doc.where((key,), key=True), f"unknown key {key!r}{hint}"))
    if "topo" in doc.data and "lab" not in doc.data:
        problems.append(Problem(doc.where(("topo",), key=True), "topo: picks the topology of a "
                                "Mininet file named by `lab: FILE.py`; this file has no `lab:`"))
    if problems:
        raise SpecError(problems)


def _note_unused(doc: yamlmarks.MarkedDoc, vary: Vary) -> None:
    """A varied parameter no `{expr}` of the file refers to multiplies the runs of one lab
    and measurement set: noted (a file with `lab:` is left alone: its lab file may)."""
    if "lab" in doc.data:
        return
    used = names_in({k: v for k, v in doc.data.items() if k not in NOT_SUBSTITUTED})
    for name in vary[0] if isinstance(vary, list) else vary:
        if name not in used:
            path: KeyPath = ("vary", 0, name) if isinstance(vary, list) else ("vary", name)
            note(
                doc.where(path, key=True),
                f"vary: {name} is in no {{expression}} of the file, so its points run the "
                "same lab and measurements (repeat: runs a point again)",
            )


def _apply_overrides(
    doc: yamlmarks.MarkedDoc, keys: ExperimentKeys, overrides: Mapping[str, str]
) -> tuple[Vary, dict[str, Any]]:
    """`--set NAME=VALUE`: replaces a constant, or the list of values of a varied parameter."""
    import yaml

    vary: Vary = (
        [dict(c) for c in keys.vary]
        if isinstance(keys.vary, list)
        else {k: list(v) for k, v in keys.vary.items()}
    )
    params = dict(keys.params)
    varied = set(vary[0]) if isinstance(vary, list) else set(vary)
    problems = [
        Problem(doc.where(("params", name), key=True), f"parameter {name!r} is in vary: too")
        for name in params
        if name in varied
    ]
    for name, raw in overrides.items():
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yamlmarks.CONSTRUCT_ERRORS:
            value = raw  # not YAML, or YAML PyYAML cannot build (2001-02-30): the text
        if name in params:
            if isinstance(value, list | dict):
                problems.append(
                    Problem("--set", f"{name}: a constant takes one value, not {raw!r}")
                )
            params[name] = value
        elif name in varied and isinstance(vary, list):
            problems.append(
                Problem("--set", f"{name}: vary: is a list of points here; edit the file")
            )
        elif isinstance(vary, dict) and name in vary:
            values = value if isinstance(value, list) else [value]
            if not values or any(isinstance(v, list | dict) for v in values):
                problems.append(
                    Problem("--set", f"{name}: give a value or a list [a, b], not {raw!r}")
                )
            elif twice := _listed_twice(values):  # as in the file: they would share runs
                problems.append(Problem("--set", f"{name}: {raw} lists {twice}"))
            vary[name] = values
        else:
            known = ", ".join([*params, *sorted(varied)]) or "none"
            problems.append(
                Problem("--set", f"no parameter {name!r} in {doc.file}; parameters: {known}")
            )
    if problems:
        raise SpecError(problems)
    return vary, params


