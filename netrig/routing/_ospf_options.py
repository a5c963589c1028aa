"""The options of the `ospf` plugin, whichever suite runs it (BIRD 2, or FRR with
`daemon: frr`): one model, so a file switches suites by one key."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

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
        if self.daemon == "bird" and self.bfd:
            raise ValueError("bfd needs daemon: frr (netrig runs BIRD without BFD)")
        return self
