"""The options of the `ospf` plugin, whichever suite runs it (BIRD 2, or FRR with
`daemon: frr`): one model, so a file switches suites by one key."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from netrig.routing._frr import FrrOptions


class OspfOptions(FrrOptions):
    daemon: Literal["bird", "frr"] = Field(  # type: ignore[assignment]
        "bird", description="the routing suite: bird (BIRD 2) or frr (ospfd + ospf6d)"
    )
    area: int = Field(0, ge=0, le=4294967295, description="the one area every interface is in")
    hello: int = Field(
        10, ge=1, le=65535, description="seconds between hellos (default 10; with daemon: frr 1)"
    )
    dead: int | None = Field(
        None, ge=1, le=65535, description="seconds without hello before a neighbour is down"
    )
    ecmp: bool = Field(True, description="install equal-cost paths as multipath routes")
    debug: bool = Field(False, description="log OSPF events and packets (verbose)")

    @field_validator("bfd", "bfd_interval", "bfd_multiplier")
    @classmethod
    def _bfd_needs_frr(cls, value: Any, info: ValidationInfo) -> Any:
        """BFD's options with BIRD, at their own line: BIRD runs without BFD here, so
        `bfd_interval: 50` had been accepted and meant nothing. Their defaults are fine
        (`bfd: false`; a plan's options, read again, hold every default)."""
        default = cls.model_fields[str(info.field_name)].default
        if info.data.get("daemon", "bird") == "bird" and value != default:
            raise ValueError(f"{info.field_name} needs daemon: frr (netrig runs BIRD without BFD)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _frr_hello(cls, data: Any) -> Any:
        """FRR's OSPF has the lab timers of netrig's other FRR plugins: failures seen in
        4 s, adjacencies up in about a second (a 10 s hello takes 10-20 s)."""
        if isinstance(data, dict) and data.get("daemon") == "frr" and "hello" not in data:
            return {**data, "hello": 1}
        return data

    @model_validator(mode="after")
    def _dead_after_hello(self) -> OspfOptions:
        if self.dead is not None and self.dead <= self.hello:
            raise ValueError(f"dead ({self.dead} s) must be longer than hello ({self.hello} s)")
        return self
