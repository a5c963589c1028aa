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

import ast
import dataclasses
import difflib
import itertools
import keyword
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from netrig import measure
from netrig.lab import faults
from netrig.model import foreign, yamlmarks
from netrig.model.load import Problem, SpecError, _problems, load_doc
from netrig.model.models import LabSpec, Seconds, Strict
from netrig.plan.build import build_plan
from netrig.plan.model import LabPlan
from netrig.plan.runs import sweep_points

Path = tuple[str | int, ...]
Scalar = bool | int | float | str
Vary = dict[str, list[Scalar]] | list[dict[str, Scalar]]
EXPERIMENT_KEYS = (
    "measure",
    "events",
    "vary",
    "params",
    "repeat",
    "order",
    "warmup",
    "cooldown",
    "stop_on_failure",
)
NOT_SUBSTITUTED = ("lab", "vary", "params", "repeat", "order", "warmup", "cooldown", "stop_on_failure")
MAX_EXPR = 200  # characters inside one {…}
MAX_POINTS = 10000

# ------------------------------------------------------------------ safe expressions


class ExprError(ValueError):
    """An expression that is not allowed, does not parse, or cannot be evaluated."""


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_SYMBOLS = {
    ast.Pow: "** (power)",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Invert: "~",
    ast.Not: "not",
}
_NAMES = {
    ast.Call: "a function call",
    ast.Attribute: "attribute access (.)",
    ast.Subscript: "indexing ([…])",
    ast.Compare: "a comparison",
    ast.BoolOp: "and/or",
    ast.Lambda: "lambda",
    ast.IfExp: "if/else",
    ast.NamedExpr: ":=",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.JoinedStr: "an f-string",
    ast.Starred: "*",
    ast.ListComp: "a comprehension",
    ast.GeneratorExp: "a generator",
    ast.DictComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.Await: "await",
    ast.Yield: "yield",
}
ALLOWED = "numbers, parameters, + - * / // % and parentheses"


def _what(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        kind = {str: "a string literal", bool: "true/false", type(None): "None"}.get(
            type(node.value), f"the literal {node.value!r}"
        )
        return kind
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return _SYMBOLS.get(type(node.op), type(node.op).__name__)
    return _NAMES.get(type(node), type(node).__name__)


def _number(value: Any, expr: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExprError(f"{{{expr}}}: arithmetic needs numbers, not {value!r}")
    return value


def evaluate(expr: str, params: Mapping[str, Any]) -> Any:
    """The value of one expression (the text between braces), or ExprError.

    >>> evaluate("1 + hops", {"hops": 5})
    6
    """
    text = expr.strip()
    if not text:
        raise ExprError("empty {} expression; write {{ and }} for literal braces")
    if len(text) > MAX_EXPR:
        raise ExprError(f"expression longer than {MAX_EXPR} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ExprError(
            f"{{{text}}} is not an expression netrig understands; allowed: {ALLOWED}"
        ) from None

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in params:
                close = difflib.get_close_matches(node.id, list(params), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                known = ", ".join(sorted(params)) or "none (define them under vary: or params:)"
                raise ExprError(f"unknown parameter {node.id!r}{hint}; parameters: {known}")
            return params[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = _number(value(node.left), text), _number(value(node.right), text)
            try:
                result = _BINARY[type(node.op)](left, right)
            except ZeroDivisionError:
                raise ExprError(f"{{{text}}}: division by zero") from None
            if isinstance(result, float) and not math.isfinite(result):
                raise ExprError(f"{{{text}}}: the result is not a finite number")
            return result
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](_number(value(node.operand), text))
        raise ExprError(f"{{{text}}}: {_what(node)} is not allowed; only {ALLOWED}")

    return value(tree.body)


_WHOLE = re.compile(r"\{([^{}]*)\}")
_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


def render(value: Any) -> str:
    """A parameter's value as it reads inside a string: 8.0 → '8', True → 'true'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expand(text: str, params: Mapping[str, Any]) -> Any:
    """Substitute the `{expr}` fields of one string; a string that is one field becomes its value.

    >>> expand("n{1 + hops}", {"hops": 5}), expand("{2 * n}", {"n": 4})
    ('n6', 8)
    """
    whole = _WHOLE.fullmatch(text)
    if whole:
        return evaluate(whole.group(1), params)
    if "{" not in text and "}" not in text:
        return text
    out, pos = [], 0
    for m in _FIELD.finditer(text):
        out.append(text[pos : m.start()])
        token = m.group(0)
        if token in ("{{", "}}"):
            out.append(token[0])
        elif m.group(1) is not None:
            out.append(render(evaluate(m.group(1), params)))
        else:
            raise ExprError(
                f"unmatched {token!r} in {text!r}; write {token}{token} for a literal brace"
            )
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def substitute(
    data: Any, params: Mapping[str, Any], path: Path, problems: list[tuple[Path, str]]
) -> Any:
    """A copy of YAML data with every string expanded; problems collected with their paths."""
    if isinstance(data, str):
        try:
            return expand(data, params)
        except ExprError as exc:
            problems.append((path, str(exc)))
            return data
    if isinstance(data, dict):
        return {k: substitute(v, params, (*path, k), problems) for k, v in data.items()}
    if isinstance(data, list):
        return [substitute(v, params, (*path, i), problems) for i, v in enumerate(data)]
    return data


# ------------------------------------------------------------------ the experiment keys


def _param_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or keyword.iskeyword(name):
        raise ValueError(f"parameter name {name!r} must be a word: letters, digits, '_'")
    return name


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

    @field_validator("vary")
    @classmethod
    def _vary(cls, value: Vary) -> Vary:
        if isinstance(value, list):
            if not value:
                raise ValueError("vary: the list of points is empty")
            names = list(value[0])
            for i, case in enumerate(value):
                for name in case:
                    _param_name(name)
                if list(case) != names:
                    raise ValueError(
                        f"vary: point {i + 1} sets {', '.join(case) or 'nothing'}; "
                        f"every point must set {', '.join(names)}"
                    )
            return value
        for name, values in value.items():
            _param_name(name)
            if not values:
                raise ValueError(f"vary: {name} has no values")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"vary: {name} lists a value twice")
        if math.prod(len(v) for v in value.values()) > MAX_POINTS:
            raise ValueError(f"vary: more than {MAX_POINTS} sweep points")
        return value

    @field_validator("params")
    @classmethod
    def _params(cls, value: dict[str, Scalar]) -> dict[str, Scalar]:
        for name in value:
            _param_name(name)
        return value


# ------------------------------------------------------------------ the loaded experiment


@dataclass(frozen=True)
class MeasureStep:
    """One measurement of a run: its unique name, its plugin and validated options."""

    name: str
    kind: str
    plugin: measure.Measurement
    options: measure.MeasureOptions
    timeout: float


@dataclass
class SweepPoint:
    """One combination of the `vary:` values, with the lab and measurements it stands for."""

    values: dict[str, Any]
    plan: LabPlan
    steps: list[MeasureStep]
    network: str  # the plan as JSON: equal between two points → one lab serves both
    events: list[faults.Event] = field(default_factory=list)

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={render(v)}" for k, v in self.values.items()) or "-"


@dataclass
class Experiment:
    name: str
    file: str
    text: str  # what the results store keeps and hashes: the file plus command-line overrides
    repeat: int
    order: str
    warmup: int
    cooldown: float
    vary: Vary
    params: dict[str, Any]
    points: list[SweepPoint] = field(default_factory=list)
    stop_on_failure: bool = False

    def tools(self) -> dict[str, str]:
        """Every program the measurements need → its Debian package."""
        out: dict[str, str] = {}
        for point in self.points:
            for step in point.steps:
                out.update(step.plugin.tools(step.options))
        return out


def load_experiment(
    path: str,
    overrides: Mapping[str, str] | None = None,
    repeat: int | None = None,
    name: str | None = None,
) -> Experiment:
    """Read and validate an experiment file; SpecError (file:line:col problems) if it is wrong."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise SpecError([Problem(path, f"cannot read: {exc.strerror}")]) from None
    return load_experiment_text(text, path, overrides, repeat, name)


def load_experiment_text(
    text: str,
    file: str = "<string>",
    overrides: Mapping[str, str] | None = None,
    repeat: int | None = None,
    name: str | None = None,
) -> Experiment:
    """`name` (--name) names the lab instead of the file's `name:`."""
    doc = yamlmarks.load(text, file)
    if not isinstance(doc.data, dict):
        raise SpecError(
            [Problem(doc.where(()), "an experiment file is a mapping (name:, measure:, …)")]
        )
    _check_top_keys(doc)
    keys_data = {k: doc.data[k] for k in EXPERIMENT_KEYS if k in doc.data}
    try:
        keys = ExperimentKeys.model_validate(keys_data)
    except ValidationError as exc:
        problems = _problems(exc, doc, ExperimentKeys)
        if "measure" not in doc.data:
            problems = [p for p in problems if "measure" not in p.message] + [
                Problem(
                    doc.where(()),
                    "an experiment needs `measure:`, a list of measurements "
                    "such as `- iperf3: {client: n1, server: n2}`",
                )
            ]
        raise SpecError(problems) from None
    vary, params = _apply_overrides(doc, keys, overrides or {})
    stored = text if not overrides and repeat is None else text + _override_note(overrides, repeat)
    exp = Experiment(
        name="",
        file=file,
        text=stored,
        repeat=repeat or keys.repeat,
        order=keys.order,
        warmup=keys.warmup,
        cooldown=keys.cooldown,
        vary=vary,
        params=params,
        stop_on_failure=keys.stop_on_failure,
    )
    _build_points(exp, doc, name)
    exp.name = exp.points[0].plan.name
    return exp


def _check_top_keys(doc: yamlmarks.MarkedDoc) -> None:
    known = [*LabSpec.model_fields, *EXPERIMENT_KEYS, "lab"]
    problems = []
    for key in doc.data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = (
                f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(known)}"
            )
            problems.append(Problem(doc.where((key,), key=True), f"unknown key {key!r}{hint}"))
    if problems:
        raise SpecError(problems)


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
        except yaml.YAMLError:
            value = raw
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
            vary[name] = values
        else:
            known = ", ".join([*params, *sorted(varied)]) or "none"
            problems.append(
                Problem("--set", f"no parameter {name!r} in {doc.file}; parameters: {known}")
            )
    if problems:
        raise SpecError(problems)
    return vary, params


def _override_note(overrides: Mapping[str, str] | None, repeat: int | None) -> str:
    parts = [f"--set {k}={v}" for k, v in (overrides or {}).items()]
    if repeat is not None:
        parts.append(f"--repeat {repeat}")
    return "\n# netrig run " + " ".join(parts) + "\n"


def _build_points(exp: Experiment, doc: yamlmarks.MarkedDoc, name: str | None = None) -> None:
    combos = sweep_points(exp.vary)
    found: dict[tuple[str, str], list[str]] = {}
    for values in combos:
        try:
            exp.points.append(_point(doc, values, {**exp.params, **values}, name))
        except SpecError as exc:
            label = ", ".join(f"{k}={render(v)}" for k, v in values.items())
            for p in exc.problems:
                found.setdefault((p.where, p.message), []).append(label)
    if found:
        problems = []
        for (where, message), labels in found.items():
            if len(combos) > 1 and len(labels) < len(combos):
                shown = "; ".join(labels[:3]) + (" …" if len(labels) > 3 else "")
                message = f"{message} (at {shown})"
            problems.append(Problem(where, message))
        raise SpecError(problems)


def _point(
    doc: yamlmarks.MarkedDoc,
    values: dict[str, Any],
    params: dict[str, Any],
    name: str | None = None,
) -> SweepPoint:
    """Substitute one sweep point, validate its lab and measurements, plan its lab."""
    raw: list[tuple[Path, str]] = []
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
    plan = build_plan(load_doc(foreign.with_name(lab_doc, name)))
    steps = _steps(doc, data["measure"], plan)
    events = _events(doc, data.get("events") or [], plan)
    if events:
        steps = [dataclasses.replace(s, options=s.plugin.during_events(s.options)) for s in steps]
    return SweepPoint(values, plan, steps, plan.to_json(with_routes=True), events)


def _lab_file(doc: yamlmarks.MarkedDoc, data: dict[str, Any]) -> yamlmarks.MarkedDoc:
    """`lab: path`: the lab comes from that file (netrig, containerlab or Mininet, relative
    to the experiment file); the experiment's `name:` (if any) names it."""
    import os

    where = doc.where(("lab",))
    if not isinstance(data["lab"], str) or not data["lab"]:
        raise SpecError([Problem(where, "lab: a path to a lab file, e.g. lab: fabric.clab.yml")])
    extra = [k for k in data if k not in (*EXPERIMENT_KEYS, "lab", "name")]
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
    try:
        lab_doc = foreign.lab_doc(path)
    except SpecError as exc:
        if exc.problems and exc.problems[0].where == path:  # unreadable: say where it was named
            raise SpecError([Problem(where, exc.problems[0].message)]) from None
        raise
    return foreign.with_name(lab_doc, data.get("name"))


def _events(doc: yamlmarks.MarkedDoc, texts: list[Any], plan: LabPlan) -> list[faults.Event]:
    """Each event read and checked against the point's lab: the link or node must exist, and
    stopping a node needs a routing daemon to stop."""
    from netrig import routing
    from netrig.lab.build import LabError
    from netrig.plan.model import UnknownName

    problems, events = [], []
    has_daemons = routing.load_plugins()[plan.protocol].runs_daemons()
    for i, text in enumerate(texts):
        where = doc.where(("events", i))
        try:
            (event,) = faults.check_events(plan, [faults.parse_event(str(text))])
        except (ValueError, LabError, UnknownName) as exc:
            problems.append(Problem(where, f"event: {exc}"))
            continue
        if event.kind.startswith("node") and not has_daemons:
            problems.append(
                Problem(
                    where,
                    f"event {text!r}: protocol {plan.protocol} runs no daemon to stop or start "
                    "(use batman, babel or ospf, or a link event)",
                )
            )
            continue
        events.append(event)
    if problems:
        raise SpecError(problems)
    return sorted(events, key=lambda e: e.at)


def _steps(doc: yamlmarks.MarkedDoc, items: list[Any], plan: LabPlan) -> list[MeasureStep]:
    plugins = measure.load_plugins()
    problems: list[Problem] = []
    steps: list[MeasureStep] = []
    names: set[str] = set()
    for i, item in enumerate(items):
        where = doc.where(("measure", i))
        if not isinstance(item, dict) or len(item) != 1:
            problems.append(
                Problem(
                    where,
                    "a measurement is one `tool: {options}` mapping, "
                    f"e.g. `- iperf3: {{client: n1, server: n2}}`; tools: "
                    f"{', '.join(sorted(plugins))}",
                )
            )
            continue
        ((kind, raw_options),) = item.items()
        try:
            plugin = measure.get(str(kind))
        except KeyError as exc:
            problems.append(Problem(doc.where(("measure", i, kind), key=True), exc.args[0]))
            continue
        prefix: Path = ("measure", i, kind)
        if raw_options is None:
            raw_options = {}
        if not isinstance(raw_options, dict):
            problems.append(
                Problem(doc.where(prefix), f"{kind}: options are a mapping {{key: value}}")
            )
            continue
        try:
            options = plugin.Options.model_validate(raw_options)
        except ValidationError as exc:
            problems += _problems(exc, doc, plugin.Options, prefix=prefix)
            continue
        for path, message in plugin.check(options, plan):
            problems.append(Problem(doc.where((*prefix, *path)), f"{kind}: {message}"))
        name = options.name or plugin.name
        if name in names:
            if options.name:
                problems.append(
                    Problem(
                        doc.where((*prefix, "name")), f"measurement name {name!r} is used twice"
                    )
                )
                continue
            name = next(f"{name}-{n}" for n in itertools.count(2) if f"{name}-{n}" not in names)
        names.add(name)
        steps.append(MeasureStep(name, plugin.name, plugin, options, plugin.timeout(options)))
    if problems:
        raise SpecError(problems)
    return steps
