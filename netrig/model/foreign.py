"""Which kind of lab file a path holds (netrig's own, containerlab, Mininet), read as netrig's.

Readers of other tools' files turn them into the data of a netrig lab file, with every path
of that data marked at the line of the other file it came from, so later errors still point
into the file the user wrote. From there on nothing knows where a lab came from.

    doc = lab_doc("fabric.clab.yml")          # a MarkedDoc as if it were a netrig lab file
    doc = lab_doc("topo.py", topo="tree,2")   # Mininet: the file's `topos` entry, with args

What a reader notes and ignores (a containerlab `image`, a package install in `exec`) is a
`Note` warning; the command line prints each once, at its file:line.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from netrig.model import yamlmarks
from netrig.model.filesize import MAX_FILE_BYTES
from netrig.model.problems import Problem, SpecError

Kind = Literal["netrig", "clab", "mininet"]


def kind_of(path: str, data: Any = None) -> Kind:
    """By name first (*.clab.yml, *.py), then by content: containerlab's `topology:` holds
    `nodes:` as a mapping or `links:` as a list; netrig's holds `kind:`."""
    base = os.path.basename(path)
    if base.endswith(".py"):
        return "mininet"
    if base.endswith((".clab.yml", ".clab.yaml")):
        return "clab"
    topo = data.get("topology") if isinstance(data, dict) else None
    if isinstance(topo, dict) and (
        isinstance(topo.get("nodes"), dict) or isinstance(topo.get("links"), list)
    ):
        return "clab"
    return "netrig"


def read_text(path: str) -> str:
    """yamlmarks.read_text (bounded, UTF-8 checked) with its failures as SpecError: a
    Mininet script is not parsed as YAML, so its size is checked here."""
    try:
        text = yamlmarks.read_text(path)
    except OSError as exc:
        raise SpecError([Problem(path, f"cannot read: {exc.strerror}")]) from None
    except yamlmarks.YamlSyntaxError as exc:
        raise SpecError([Problem(exc.where, exc.message)]) from None
    if len(text) > MAX_FILE_BYTES:
        raise SpecError([Problem(path, f"file too large (more than {MAX_FILE_BYTES} characters)")])
    return text


def lab_doc(path: str, *, topo: str | None = None) -> yamlmarks.MarkedDoc:
    """The lab file at PATH as netrig lab data with marks, whatever tool it was written for."""
    if kind_of(path) == "mininet":
        from netrig.model import mininet  # the readers of other tools' files: only for those

        return mininet.lab_doc(path, topo)
    if topo is not None:
        raise SpecError([Problem("--topo", "--topo applies to Mininet topology files (*.py)")])
    text = read_text(path)
    if os.path.basename(path).endswith((".clab.yml", ".clab.yaml")):
        from netrig.model import clab

        return clab.lab_doc(text, path)
    doc = yamlmarks.load(text, path)
    if kind_of(path, doc.data) == "clab":
        from netrig.model import clab

        return clab.lab_doc(text, path)
    return doc


def with_name(doc: yamlmarks.MarkedDoc, name: str | None) -> yamlmarks.MarkedDoc:
    """The lab data under another name (`--name`), checked as a lab name."""
    if name is None or not isinstance(doc.data, dict):
        return doc
    from pydantic import TypeAdapter, ValidationError

    from netrig.model.models import LabName

    try:
        TypeAdapter(LabName).validate_python(name)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise SpecError([Problem("--name", message)]) from None
    return yamlmarks.MarkedDoc({**doc.data, "name": name}, doc.file, doc.value_marks,
                               doc.key_marks)  # fmt: skip
