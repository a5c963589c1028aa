"""YAML loading that remembers where every key and value stood, for file:line:col errors,
within bounds (size, values, depth, alias expansion) so a hostile file is answered at once."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from netrig.model.filesize import MAX_FILE_BYTES, READ_BYTES

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
    # the text as written of scalars YAML read as other than a string (`true`, `1.0`, `~`):
    # what a reader that wants strings takes, as containerlab's Go YAML does
    texts: dict[KeyPath, str] = field(default_factory=dict)

    def text(self, path: KeyPath, value: Any) -> str:
        """The value at path as a string: a string itself, else the scalar as written."""
        if isinstance(value, str):
            return value
        return self.texts.get(path, str(value))

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
            m, prefix = Mark(1, 1), ()
        if self.file == FROM_CODE:  # a dict given to the Python API: its lines mean nothing
            return f"{FROM_CODE} at {key_path_text(prefix)}" if prefix else FROM_CODE
        return f"{self.file}:{m.line}:{m.col}"


FROM_CODE = "<dict>"  # the file name of a lab or experiment given as a dict (Python API)


def key_path_text(path: KeyPath) -> str:
    """A path as a reader writes it: topology.nodes, nodes[2].name."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class YamlSyntaxError(ValueError):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


# Bounds that make any file cheap to answer, whatever it holds: a lab or experiment file is a
# few KB, and a topology generator writes the big labs. Aliases count as the values they stand
# for, so a "billion laughs" file (anchors of lists of aliases of anchors…) is refused at the
# first alias that crosses the bound, instead of being expanded.
MAX_VALUES = 100_000
MAX_DEPTH = 64

_STR = "tag:yaml.org,2002:str"
_STANDARD_COLLECTIONS = {None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}
_Parser = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 4x faster


def load(text: str, file: str = "<string>") -> MarkedDoc:
    """Parse text into plain data and marks, within MAX_VALUES values and MAX_DEPTH levels."""
    if len(text) > MAX_FILE_BYTES:
        raise YamlSyntaxError(
            f"{file}:1:1",
            f"file too large ({len(text)} characters; at most {MAX_FILE_BYTES}): a lab or "
            "experiment file is a few KB; use a topology generator for big labs",
        )
    doc = MarkedDoc(None, file, {}, {})
    try:
        data = _Builder(doc).build(yaml.parse(text, Loader=_Parser))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else f"{file}:1:1"
        raise YamlSyntaxError(where, f"YAML syntax error: {exc.problem}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, …)
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise YamlSyntaxError(
            f"{file}:{line}:{col}", f"YAML: character {exc.character!r} is not allowed"
        ) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"{file}:1:1", f"YAML error: {exc}") from None
    doc.data = {} if data is None else data
    return doc


def load_file(path: str) -> MarkedDoc:
    return load(read_text(path), path)


def read_text(path: str) -> str:
    """A file's text (enough of it for `load` to say it is too big), or YamlSyntaxError at
    the line of the first byte that is not UTF-8."""
    limit = READ_BYTES
    with open(path, "rb") as fh:
        data = fh.read(limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(data) == limit and exc.start >= limit - 3:  # a character cut by the limit
            return data[: exc.start].decode("utf-8")
        line = data.count(b"\n", 0, exc.start) + 1
        raise YamlSyntaxError(
            f"{path}:{line}", f"not a text file (UTF-8): byte {data[exc.start]:#04x} here"
        ) from None


# what PyYAML raises for text it cannot build: besides YAMLError, its constructors fail on
# odd text in other ways (!!bool 'maybe': KeyError; a date 2001-02-30: ValueError)
CONSTRUCT_ERRORS = (
    yaml.YAMLError,
    ValueError,
    OverflowError,
    TypeError,
    LookupError,
    AttributeError,
)


def _mark(mark: Any) -> Mark:
    return Mark(mark.line + 1, mark.column + 1)


_constructor = yaml.SafeLoader("")


class _Frame:
    """An open mapping or sequence while its events arrive."""

    __slots__ = ("anchor", "container", "key", "key_mark", "merged", "path", "size")

    def __init__(self, container: Any, path: KeyPath, anchor: str | None) -> None:
        self.container = container
        self.path = path
        self.anchor = anchor
        self.key: Any = _NO_KEY
        self.key_mark: Mark | None = None
        self.size = 1  # values in this subtree, itself included
        self.merged: list[dict[Any, Any]] = []  # `<<:` mappings, first taking precedence


_NO_KEY = object()
_MERGE = object()  # the key `<<`: the mappings its value names are merged into this one
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Builder:
    """Plain data from the parser's events, iteratively (no recursion to exhaust), with the
    position of every path, a budget of values that aliases draw from too, and a depth bound."""

    def __init__(self, doc: MarkedDoc) -> None:
        self.doc = doc
        self.values = 0
        self.anchors: dict[str, tuple[Any, int]] = {}  # anchor → (value, values it holds)
        self.stack: list[_Frame] = []
        self.root: Any = None
        self.documents = 0

    def where(self, mark: Any) -> str:
        m = _mark(mark)
        return f"{self.doc.file}:{m.line}:{m.col}"

    def build(self, events: Any) -> Any:
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                self.documents += 1
                if self.documents > 1:
                    raise YamlSyntaxError(
                        self.where(event.start_mark), "one YAML document per file (found a `---`)"
                    )
            elif isinstance(event, yaml.ScalarEvent):
                value = self.scalar(event)
                if not isinstance(value, str):
                    at = self.path(event)
                    if at is not None:
                        self.doc.texts[at] = event.value
                self.add(value, 1, event, event.anchor)
            elif isinstance(event, yaml.AliasEvent):
                self.alias(event)
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                self.open(event)
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                frame = self.stack.pop()
                for merged in frame.merged:  # keys written in the mapping itself win
                    for key, value in merged.items():
                        frame.container.setdefault(key, value)
                if frame.anchor is not None:
                    self.anchors[frame.anchor] = (frame.container, frame.size)
                self.attach(frame.container, frame.size, event)
        return self.root

    def count(self, n: int, event: Any, what: str) -> None:
        self.values += n
        if self.values > MAX_VALUES:
            raise YamlSyntaxError(
                self.where(event.start_mark), f"{what}: more than {MAX_VALUES} values in the file"
            )

    def path(self, event: Any) -> KeyPath | None:
        """The path a value starting now gets (None: it is a mapping key)."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.container, list):
            return (*top.path, len(top.container))
        if top.key is _MERGE:
            return (*top.path, "<<")
        return None if top.key is _NO_KEY else (*top.path, top.key)

    def open(self, event: Any) -> None:
        if event.tag not in _STANDARD_COLLECTIONS:
            raise YamlSyntaxError(
                self.where(event.start_mark), f"YAML tag {event.tag} not supported"
            )
        path = self.path(event)
        if path is None:
            raise YamlSyntaxError(
                self.where(event.start_mark), "a mapping key must be a plain value"
            )
        if len(self.stack) >= MAX_DEPTH:
            raise YamlSyntaxError(
                self.where(event.start_mark), f"nested more than {MAX_DEPTH} levels deep"
            )
        self.count(1, event, "too many values")
        self.doc.value_marks[path] = _mark(event.start_mark)
        container: Any = {} if isinstance(event, yaml.MappingStartEvent) else []
        self.stack.append(_Frame(container, path, event.anchor))

    def scalar(self, event: yaml.ScalarEvent) -> Any:
        self.count(1, event, "too many values")
        tag = event.tag
        if tag is None or tag == "!":
            tag = _constructor.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _STR:
            return event.value
        if tag == _MERGE_TAG and self.stack and isinstance(self.stack[-1].container, dict):
            return _MERGE
        construct = _constructor.yaml_constructors.get(tag)
        if construct is None or tag.endswith((":map", ":seq", ":omap", ":pairs", ":set")):
            raise YamlSyntaxError(self.where(event.start_mark), f"YAML tag {tag} not supported")
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return construct(_constructor, node)
        except CONSTRUCT_ERRORS as exc:
            raise YamlSyntaxError(
                self.where(event.start_mark), f"not a valid {tag.rsplit(':', 1)[-1]}: {exc}"
            ) from None

    def alias(self, event: yaml.AliasEvent) -> None:
        if event.anchor not in self.anchors:
            raise YamlSyntaxError(
                self.where(event.start_mark), f"alias *{event.anchor} names no anchor before it"
            )
        value, size = self.anchors[event.anchor]
        self.count(size, event, f"alias *{event.anchor} expands the file")
        if size > 1:
            value = copy.deepcopy(value)  # each use its own copy, as if written out
        self.add(value, size, event, None)

    def add(self, value: Any, size: int, event: Any, anchor: str | None) -> None:
        if anchor is not None:
            self.anchors[anchor] = (value, size)
        path = self.path(event)
        if path is not None:
            self.doc.value_marks[path] = _mark(event.start_mark)
        self.attach(value, size, event)

    def attach(self, value: Any, size: int, event: Any) -> None:
        """Put a finished value into the open container (or make it the document)."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if isinstance(top.container, list):
            top.container.append(value)
        elif top.key is _MERGE:  # `<<: *a` or `<<: [*a, *b]`: YAML's merge key
            merged = value if isinstance(value, list) else [value]
            if not merged or not all(isinstance(m, dict) for m in merged):
                raise YamlSyntaxError(
                    self.where(event.start_mark),
                    "`<<:` merges a mapping or a list of mappings (e.g. `<<: *defaults`)",
                )
            top.merged.extend(merged)
            top.key = _NO_KEY
        elif top.key is _NO_KEY:
            if isinstance(value, dict | list):
                raise YamlSyntaxError(
                    self.where(event.start_mark), "a mapping key must be a plain value"
                )
            if value in top.container:
                raise YamlSyntaxError(self.where(event.start_mark), f"duplicate key {value!r}")
            top.key, top.key_mark = value, _mark(event.start_mark)
            self.doc.key_marks[(*top.path, value)] = top.key_mark
        else:
            top.container[top.key] = value
            top.key = _NO_KEY
