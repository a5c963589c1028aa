"""The rig: brings a plan up with the lab core and the plugins (the public `Lab` API)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netrig.rig.lab import Lab

__all__ = ["Lab"]


def __getattr__(name: str) -> Any:
    """`Lab` imported on first use: `from netrig.rig import prepare` (what `netrig validate`
    needs) does not load the lab core."""
    if name == "Lab":
        from netrig.rig.lab import Lab

        return Lab
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
