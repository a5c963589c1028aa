"""YAML loading that remembers where every key and value stood, for file:line:col errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    col: int  # 1-based


@dataclass
class MarkedDoc:
    """Plain Python data plus the position of each path in it (keys and values)."""

    data: Any
    file: str
    value_marks: dict[KeyPath, Mark]
    key_marks: dict[KeyPath, Mark]

    def where(self, path: KeyPath, *, key: bool = False) -> str:
        """`file:line:col` of the deepest known prefix of path (the key itself if asked)."""
        marks = self.key_marks if key else self.value_marks
        for cut in range(len(path), -1, -1):
            prefix = path[:cut]
            if key and prefix in self.key_marks:
                m = self.key_marks[prefix]
                break
            if prefix in marks:
                m = marks[prefix]
                break
            if prefix in self.value_marks:
                m = self.value_marks[prefix]
                break
        else:
            m = Mark(1, 1)
        return f"{self.file}:{m.line}:{m.col}"


class YamlSyntaxError(ValueError):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def load(text: str, file: str = "<string>") -> MarkedDoc:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        raise YamlSyntaxError(where, f"YAML syntax error: {exc.problem}") from None
    doc = MarkedDoc(None, file, {}, {})
    if node is None:
        doc.data = {}
        return doc
    doc.data = _convert(node, (), doc)
    return doc


def load_file(path: str) -> MarkedDoc:
    with open(path, encoding="utf-8") as fh:
        return load(fh.read(), path)


def _mark(node: yaml.Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


_constructor = yaml.SafeLoader("")


def _convert(node: yaml.Node, path: KeyPath, doc: MarkedDoc) -> Any:
    doc.value_marks[path] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _constructor.construct_object(key_node, deep=True)
            if key in out:
                where = f"{doc.file}:{_mark(key_node).line}:{_mark(key_node).col}"
                raise YamlSyntaxError(where, f"duplicate key {key!r}")
            doc.key_marks[(*path, key)] = _mark(key_node)
            out[key] = _convert(value_node, (*path, key), doc)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*path, i), doc) for i, item in enumerate(node.value)]
    return _constructor.construct_object(node, deep=True)
