"""The contract every plugin keeps: a name, an Options model it is generic over, and the
programs it may run (what `netrig doctor` lists and the preflight checks).

    class Iperf3(Measurement[Iperf3Options]):
        name = "iperf3"
        Options = Iperf3Options
        programs = {"iperf3": "iperf3"}
        def run(self, lab, options: Iperf3Options, timeout: float) -> Result: ...

A plugin's methods take its own Options type, so a plugin never casts `Any` back.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

from netrig.base.options import Options

OptionsT = TypeVar("OptionsT", bound=BaseModel)


class NoOptions(Options):
    """The Options of a plugin that takes none."""


class Plugin(Generic[OptionsT]):
    """Base of every plugin kind (measurement, routing protocol, service, firewall engine)."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions
    # every program the plugin may run → the Debian package that provides it
    programs: ClassVar[dict[str, str]] = {}

    def parse_options(self, raw: dict[str, object]) -> OptionsT:
        """The raw options of a file, validated (pydantic's ValidationError if wrong)."""
        return self.Options.model_validate(raw)  # type: ignore[return-value]
