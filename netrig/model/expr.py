"""The safe `{expr}` evaluator of experiment files: arithmetic on numbers and parameters.

Parsed with `ast` and only these nodes evaluated, so no code can run:
numbers, parameters, + - * / // % and parentheses. A value that is exactly one `{expr}`
takes the expression's type; `{{` and `}}` are literal braces.

    >>> expand("n{1 + hops}", {"hops": 5})
    'n6'
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from netrig.base.values import render
from netrig.model.yamlmarks import KeyPath

MAX_EXPR = 200  # characters inside one {…}



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
            except (OverflowError, ValueError) as exc:  # an int too large for a float
                raise ExprError(f"{{{text}}}: {exc}") from None
            if isinstance(result, float) and not math.isfinite(result):
                raise ExprError(f"{{{text}}}: the result is not a finite number")
            return result
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](_number(value(node.operand), text))
        raise ExprError(f"{{{text}}}: {_what(node)} is not allowed; only {ALLOWED}")

    return value(tree.body)


_WHOLE = re.compile(r"\{([^{}]*)\}")
_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


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


def names_in(data: Any) -> set[str]:
    """Every parameter name the `{expr}` fields of YAML data refer to (fields that do not
    parse refer to none: substitute says why)."""
    if isinstance(data, dict):
        return set().union(*(names_in(v) for v in data.values()))
    if isinstance(data, list):
        return set().union(*(names_in(v) for v in data))
    if not isinstance(data, str) or "{" not in data:
        return set()
    names: set[str] = set()
    for m in _FIELD.finditer(data):
        if m.group(1) is None or len(m.group(1).strip()) > MAX_EXPR:
            continue  # evaluate refuses it with the reason (a hostile one overflowed ast)
        try:
            tree = ast.parse(m.group(1).strip(), mode="eval")
        except (SyntaxError, RecursionError, MemoryError):
            continue
        names.update(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return names


def substitute(
    data: Any, params: Mapping[str, Any], path: KeyPath, problems: list[tuple[KeyPath, str]]
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
