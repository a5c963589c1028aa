"""The parameter expressions of experiment files: arithmetic only, nothing that runs code."""

from __future__ import annotations

import re

import pytest

from netrig.model.expr import ExprError, evaluate, expand, render, substitute


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("1 + hops", 6),
        ("hops * 2 - 1", 9),
        ("(hops + 1) * (hops - 1)", 24),
        ("hops / 2", 2.5),
        ("hops // 2", 2),
        ("hops % 3", 2),
        ("-hops", -5),
        ("+hops", 5),
        ("2.5 * 2", 5.0),
        ("  hops  ", 5),
    ],
)
def test_arithmetic_on_numbers_and_parameters(expr: str, value: float) -> None:
    assert evaluate(expr, {"hops": 5}) == value


@pytest.mark.parametrize(
    ("expr", "what"),
    [
        ("__import__('os').system('true')", "function call"),
        ("__import__", "unknown parameter '__import__'"),
        ("hops.real", "attribute access"),
        ("(1).__class__", "attribute access"),
        ("open('/etc/passwd')", "function call"),
        ("[1, 2][0]", "indexing"),
        ("hops ** 100", "power"),
        ("hops if 1 else 2", "if/else"),
        ("lambda: 1", "lambda"),
        ("'a' + 'b'", "string literal"),
        ("hops == 5", "comparison"),
        ("hops and 1", "and/or"),
        ("True", "true/false"),
        ("hops << 2", "<<"),
        ("(x := 1)", ":="),
        ("[c for c in 'ab']", "comprehension"),
    ],
)
def test_everything_else_is_refused_by_name(expr: str, what: str) -> None:
    with pytest.raises(ExprError, match=re.escape(what)):
        evaluate(expr, {"hops": 5})


def test_refused_calls_never_run() -> None:
    called = []
    with pytest.raises(ExprError):
        evaluate("f()", {"f": lambda: called.append(1)})
    assert called == []


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("hop + 1", "unknown parameter 'hop' (did you mean 'hops'?)"),
        ("hops / 0", "division by zero"),
        ("hops % 0", "division by zero"),
        ("1 +", "not an expression"),
        ("", "empty"),
        ("1e308 * 10", "not a finite number"),
        ("name + 1", "arithmetic needs numbers"),
        ("1" + " + 1" * 120, "longer than"),
    ],
)
def test_errors_say_what_is_wrong(expr: str, message: str) -> None:
    with pytest.raises(ExprError, match=re.escape(message)):
        evaluate(expr, {"hops": 5, "name": "ring"})


def test_a_string_that_is_one_field_takes_the_value_s_type() -> None:
    params = {"hops": 5, "shape": "ring", "fast": True, "rate": 1.5}
    assert expand("{1 + hops}", params) == 6
    assert expand("{shape}", params) == "ring"
    assert expand("{fast}", params) is True
    assert expand("{rate * 2}", params) == 3.0


def test_fields_inside_strings_are_rendered() -> None:
    params = {"hops": 5, "half": 4.0, "fast": True}
    assert expand("n{1 + hops}", params) == "n6"
    assert expand("n{half}", params) == "n4"  # an integral float reads as an int
    assert expand("{hops}-{hops * 2} {fast}", params) == "5-10 true"
    assert expand("awk '{{print $1}}' x{hops}", params) == "awk '{print $1}' x5"
    assert expand("no fields", params) == "no fields"
    assert render(2.5) == "2.5"


@pytest.mark.parametrize("text", ["a { b", "a } b", "{x"])
def test_unmatched_braces_are_errors(text: str) -> None:
    with pytest.raises(ExprError, match=r"literal brace|unmatched"):
        expand(text, {"x": 1})


def test_substitute_walks_mappings_and_lists_and_reports_paths() -> None:
    problems: list[tuple[tuple[str | int, ...], str]] = []
    data = {"a": ["n{hops}", {"b": "{hops * 2}"}], "c": 3, "d": "{nope}"}
    out = substitute(data, {"hops": 2}, (), problems)
    assert out == {"a": ["n2", {"b": 4}], "c": 3, "d": "{nope}"}
    assert [p[0] for p in problems] == [("d",)]
    assert "unknown parameter 'nope'" in problems[0][1]
